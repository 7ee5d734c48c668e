//! [`ChannelRuntime`]: everything the binary does with a configured channel,
//! so that `askgate serve` wires every adapter with one loop and names none.

use std::sync::Arc;

use askgate_core::channel::{Channel, ChannelError, InboundSink};
use async_trait::async_trait;
use axum::Router;
use tokio::sync::watch;

use crate::config::CheckError;

/// A running channel: its [`Channel`] for the engine, and its inbound side.
#[async_trait]
pub trait ChannelRuntime: Send + Sync + 'static {
    /// The channel's configured name.
    fn name(&self) -> &str;

    /// The channel, as the engine delivers through it: the same one before
    /// and after [`ChannelRuntime::check`], which may be called any time
    /// later (`serve` does not wait for a platform out of reach).
    fn channel(&self) -> Arc<dyn Channel>;

    /// Checks the credentials with the platform (Telegram `getMe`, Discord
    /// `GET /users/@me`, Slack `auth.test`) and says what was found, for the
    /// person who started askgate (`bot @askgate_bot, polling`). A failure
    /// carries a [`crate::Problem`] with the key to fix and how, and says
    /// whether the platform was out of reach (worth trying again) or refused;
    /// it never contains a secret. May be called again after a failure.
    async fn check(&self) -> Result<String, CheckError>;

    /// Routes to mount in askgate's HTTP server (webhooks), taking events
    /// into `sink`; `None` when the channel takes none over HTTP.
    fn routes(&self, _sink: Arc<dyn InboundSink>) -> Option<Router> {
        None
    }

    /// Tells the platform where askgate's routes are, once the server
    /// listens at `base` (the public URL, no trailing slash): `setWebhook`.
    async fn register(&self, _base: &str) -> Result<(), ChannelError> {
        Ok(())
    }

    /// Takes events from a long-lived connection (polling, a gateway, a
    /// socket) into `sink` until `shutdown`; returns at once when the
    /// channel has none.
    async fn run(self: Arc<Self>, _sink: Arc<dyn InboundSink>, _shutdown: Shutdown) {}
}

/// The signal to stop: completes once askgate is shutting down. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// A signal that fires when `true` is sent on the channel (or it closes).
    pub fn new(receiver: watch::Receiver<bool>) -> Self {
        Self(receiver)
    }

    /// Waits until askgate is shutting down.
    pub async fn wait(mut self) {
        // A closed sender means the process is going away: stop too.
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}
