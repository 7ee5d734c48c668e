//! [`TelegramRuntime`]: a Telegram channel as askgate's binary runs it —
//! `getMe` to check the token, then long polling, or the webhook route and
//! `setWebhook`.

use std::sync::Arc;

use askgate_adapter::config::{CheckError, Problem, Secret};
use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, ChannelError, InboundSink};
use async_trait::async_trait;
use axum::Router;

use crate::{TelegramChannel, http, polling};

/// A running Telegram channel.
#[derive(Debug)]
pub struct TelegramRuntime {
    channel: Arc<TelegramChannel>,
    /// Webhook mode's secrets, the first the one Telegram is told to send
    /// (any is accepted: the others are older ones, while the secret is
    /// rotated); empty in polling mode.
    webhook_secrets: Vec<Secret>,
}

impl TelegramRuntime {
    /// The runtime of `channel`, taking updates by webhook when secrets are
    /// given and by long polling otherwise.
    pub fn new(channel: Arc<TelegramChannel>, webhook_secrets: Vec<Secret>) -> Self {
        Self {
            channel,
            webhook_secrets,
        }
    }

    fn path(&self) -> String {
        format!("/telegram/{}", self.name())
    }
}

#[async_trait]
impl ChannelRuntime for TelegramRuntime {
    fn name(&self) -> &str {
        self.channel.name()
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, CheckError> {
        let username = self.channel.check().await.map_err(|error| {
            let key = format!("channels.{}.token", self.name());
            Problem::from_check(
                key,
                "Telegram",
                "getMe",
                &error,
                "check the token with BotFather (/token).",
            )
        })?;
        let mode = if self.webhook_secrets.is_empty() {
            "polling"
        } else {
            "webhook"
        };
        Ok(format!("bot @{username}, {mode}"))
    }

    fn routes(&self, sink: Arc<dyn InboundSink>) -> Option<Router> {
        if self.webhook_secrets.is_empty() {
            return None;
        }
        let secrets: Vec<&str> = self.webhook_secrets.iter().map(Secret::expose).collect();
        Some(http::router(&self.path(), self.channel.clone(), sink, &secrets))
    }

    async fn register(&self, base: &str) -> Result<(), ChannelError> {
        // Telegram sends one secret: the first, the newest.
        let Some(secret) = self.webhook_secrets.first() else {
            return Ok(());
        };
        let url = reqwest::Url::parse(&format!("{base}{}", self.path())).map_err(|_| ChannelError::Rejected {
            reason: format!("\"{base}\" does not make a webhook URL"),
        })?;
        http::register(&self.channel, url, secret.expose()).await
    }

    async fn run(self: Arc<Self>, sink: Arc<dyn InboundSink>, shutdown: Shutdown) {
        if self.webhook_secrets.is_empty() {
            polling::run(self.channel.clone(), sink, shutdown.wait()).await;
        }
    }
}
