//! [`MatrixRuntime`]: a Matrix channel as askgate's binary runs it —
//! `whoami` to check the session, then the sync loop.

use std::sync::Arc;

use askgate_adapter::config::{CheckError, Problem};
use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, InboundSink};
use async_trait::async_trait;

use crate::{MatrixChannel, sync};

/// A running Matrix channel.
#[derive(Debug)]
pub struct MatrixRuntime {
    channel: Arc<MatrixChannel>,
}

impl MatrixRuntime {
    /// The runtime of `channel`.
    pub fn new(channel: Arc<MatrixChannel>) -> Self {
        Self { channel }
    }
}

#[async_trait]
impl ChannelRuntime for MatrixRuntime {
    fn name(&self) -> &str {
        self.channel.name()
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, CheckError> {
        self.channel.check().await.map_err(|error| {
            Problem::from_check(
                format!("channels.{}.{}", self.name(), self.channel.settings().login.key()),
                "the Matrix homeserver",
                "whoami",
                &error,
                "log the bot in again and set its new access token, or check its password (docs/channels/matrix.md).",
            )
        })
    }

    async fn run(self: Arc<Self>, sink: Arc<dyn InboundSink>, shutdown: Shutdown) {
        sync::run(self.channel.clone(), sink, shutdown.wait()).await;
    }
}
