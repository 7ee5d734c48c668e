//! [`DiscordRuntime`]: a Discord channel as askgate's binary runs it —
//! `GET /users/@me` to check the token, then the gateway, or the
//! interactions endpoint mounted in askgate's server.

use std::sync::Arc;

use askgate_adapter::Driver;
use askgate_adapter::config::Problem;
use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, InboundSink};
use async_trait::async_trait;
use axum::Router;
use serde::Deserialize;

use crate::DiscordChannel;
use crate::gateway::{self, GatewaySettings};
use crate::interactions::{self, Ed25519};

/// How events reach askgate.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The gateway WebSocket (no public URL needed).
    Gateway(GatewaySettings),
    /// Discord POSTs interactions to askgate's server.
    Interactions {
        /// The application's public key, hex.
        public_key: String,
    },
}

/// A running Discord channel.
#[derive(Debug)]
pub struct DiscordRuntime {
    channel: Arc<DiscordChannel>,
    mode: Mode,
}

impl DiscordRuntime {
    /// The runtime of `channel` in `mode`.
    pub fn new(channel: Arc<DiscordChannel>, mode: Mode) -> Self {
        Self { channel, mode }
    }

    fn path(&self) -> String {
        format!("/discord/{}", self.name())
    }
}

#[derive(Deserialize)]
struct CurrentUser {
    username: String,
}

#[async_trait]
impl ChannelRuntime for DiscordRuntime {
    fn name(&self) -> &str {
        self.channel.name()
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, Problem> {
        let me: CurrentUser = self.channel.rest().get("/users/@me").await.map_err(|error| {
            let key = format!("channels.{}.token", self.name());
            let fix = "reset the bot token in the Developer Portal (Bot → Reset Token).";
            Problem::from_check(key, "Discord", "GET /users/@me", &error, fix)
        })?;
        let mode = match self.mode {
            Mode::Gateway(_) => "gateway",
            Mode::Interactions { .. } => "interactions endpoint",
        };
        Ok(format!("bot @{}, {mode}", me.username))
    }

    fn routes(&self, sink: Arc<dyn InboundSink>) -> Option<Router> {
        let Mode::Interactions { public_key } = &self.mode else {
            return None;
        };
        // Checked when the configuration was read.
        let verifier = Ed25519::new(public_key)?;
        let driver = Driver::new(self.channel.clone(), sink);
        Some(interactions::router(&self.path(), driver, verifier))
    }

    async fn run(self: Arc<Self>, sink: Arc<dyn InboundSink>, shutdown: Shutdown) {
        if let Mode::Gateway(settings) = &self.mode {
            let driver = Driver::new(self.channel.clone(), sink);
            gateway::run(settings.clone(), driver, shutdown).await;
        }
    }
}
