//! [`DiscordRuntime`]: a Discord channel as askgate's binary runs it —
//! `GET /users/@me` to check the token, in gateway mode
//! `GET /applications/@me` to learn whether the Message Content intent is
//! granted ([`message_content`]), then the gateway, or the interactions
//! endpoint mounted in askgate's server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use askgate_adapter::Driver;
use askgate_adapter::config::{CheckError, Problem};
use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, InboundSink};
use async_trait::async_trait;
use axum::Router;
use serde::Deserialize;
use serenity::model::application::ApplicationFlags;
use tracing::warn;

use crate::DiscordChannel;
use crate::gateway::{self, GatewaySettings};
use crate::http::{self, Ed25519};

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

/// What the gateway does about the Message Content intent, from the admin's
/// `message_content` key and the application's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageContent {
    /// Granted (and not turned off): the gateway asks for it, and typed
    /// replies arrive.
    On,
    /// Turned off by the admin (`message_content = false`).
    Off,
    /// Not set by the admin, and the application may not use the intent:
    /// askgate runs without it, without typed replies.
    NotGranted,
    /// Set to `true` by the admin, but the application may not use the
    /// intent: Discord would close the gateway with 4014. A configuration
    /// problem.
    Refused,
}

impl MessageContent {
    /// Whether the gateway asks for the intent (and typed replies arrive).
    pub fn asked(self) -> bool {
        self == Self::On
    }
}

/// Whether an application with these `flags` may use the Message Content
/// intent: `GATEWAY_MESSAGE_CONTENT` (`1 << 18`, a verified app) or
/// `GATEWAY_MESSAGE_CONTENT_LIMITED` (`1 << 19`, the switch under Bot →
/// Privileged Gateway Intents of an app in fewer than 100 servers).
pub fn message_content_granted(flags: u64) -> bool {
    let granted = ApplicationFlags::GATEWAY_MESSAGE_CONTENT | ApplicationFlags::GATEWAY_MESSAGE_CONTENT_LIMITED;
    flags & granted.bits() != 0
}

/// Decides the intent from the admin's `message_content` (`None` when the
/// key is not set) and the application's `flags`.
pub fn message_content(configured: Option<bool>, flags: u64) -> MessageContent {
    match (configured, message_content_granted(flags)) {
        (Some(false), _) => MessageContent::Off,
        (_, true) => MessageContent::On,
        (None, false) => MessageContent::NotGranted,
        (Some(true), false) => MessageContent::Refused,
    }
}

/// How to enable the intent, for logs and `check-config`.
const ENABLE_MESSAGE_CONTENT: &str =
    "enable Message Content Intent in the Developer Portal (your application → Bot → Privileged Gateway Intents)";

/// A running Discord channel.
#[derive(Debug)]
pub struct DiscordRuntime {
    name: String,
    /// The channel; [`ChannelRuntime::check`] turns its typed replies off
    /// when the intent turns out not to be granted (the engine may hold it
    /// already: `serve` does not wait for Discord).
    channel: Arc<DiscordChannel>,
    mode: Mode,
    /// Whether the gateway asks for the Message Content intent, as `check`
    /// decided (the configured value until then).
    message_content: AtomicBool,
}

impl DiscordRuntime {
    /// The runtime of `channel` in `mode`.
    pub fn new(channel: Arc<DiscordChannel>, mode: Mode) -> Self {
        let message_content = match &mode {
            Mode::Gateway(settings) => settings.message_content.unwrap_or(true),
            Mode::Interactions { .. } => false,
        };
        Self {
            name: channel.name().to_owned(),
            channel,
            mode,
            message_content: AtomicBool::new(message_content),
        }
    }

    /// The channel.
    pub fn discord(&self) -> &Arc<DiscordChannel> {
        &self.channel
    }

    fn path(&self) -> String {
        format!("/discord/{}", self.name())
    }

    /// Reads the application's flags and settles the intent: the channel's
    /// typed replies and what the gateway asks for. What it says is added to
    /// the check's summary.
    async fn settle_message_content(&self, configured: Option<bool>) -> Result<Option<String>, CheckError> {
        let channel = &self.channel;
        let name = channel.name().to_owned();
        let application: CurrentApplication = channel.rest().get("/applications/@me").await.map_err(|error| {
            let key = format!("channels.{name}.token");
            let fix = "reset the bot token in the Developer Portal (Bot → Reset Token).";
            Problem::from_check(key, "Discord", "GET /applications/@me", &error, fix)
        })?;
        let decided = message_content(configured, application.flags.unwrap_or(0));
        let said = match decided {
            MessageContent::On => None,
            MessageContent::Off => Some("without typed replies (message_content = false)".to_owned()),
            MessageContent::NotGranted => {
                warn!(
                    channel = %name,
                    "the Message Content intent is not enabled for this Discord application, so typed replies \
                     cannot arrive: text prompts carry Answer… and Skip instead; to take typed replies, {ENABLE_MESSAGE_CONTENT}"
                );
                Some(format!(
                    "without typed replies: the Message Content intent is not enabled for this application, so text \
                     prompts carry Answer… and Skip; to take typed replies, {ENABLE_MESSAGE_CONTENT}"
                ))
            }
            MessageContent::Refused => {
                return Err(CheckError::Refused(Problem {
                    key: format!("channels.{name}.message_content"),
                    what: "message_content = true, but the Message Content intent is not enabled for this Discord \
                           application (GET /applications/@me), so Discord would refuse the gateway connection (4014)."
                        .to_owned(),
                    fix: format!(
                        "{ENABLE_MESSAGE_CONTENT}; or remove message_content (askgate then runs without typed replies) \
                         or set it to false."
                    ),
                }));
            }
        };
        let asked = decided.asked();
        self.message_content.store(asked, Ordering::SeqCst);
        channel.set_typed_replies(asked);
        Ok(said)
    }
}

#[derive(Deserialize)]
struct CurrentUser {
    username: String,
}

/// The part of `GET /applications/@me` askgate reads.
#[derive(Deserialize)]
struct CurrentApplication {
    flags: Option<u64>,
}

#[async_trait]
impl ChannelRuntime for DiscordRuntime {
    fn name(&self) -> &str {
        &self.name
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, CheckError> {
        let me: CurrentUser = self.channel.rest().get("/users/@me").await.map_err(|error| {
            let key = format!("channels.{}.token", self.name());
            let fix = "reset the bot token in the Developer Portal (Bot → Reset Token).";
            Problem::from_check(key, "Discord", "GET /users/@me", &error, fix)
        })?;
        let (mode, said) = match &self.mode {
            Mode::Gateway(settings) => ("gateway", self.settle_message_content(settings.message_content).await?),
            Mode::Interactions { .. } => ("interactions endpoint", None),
        };
        Ok(match said {
            Some(said) => format!("bot @{}, {mode}, {said}", me.username),
            None => format!("bot @{}, {mode}", me.username),
        })
    }

    fn routes(&self, sink: Arc<dyn InboundSink>) -> Option<Router> {
        let Mode::Interactions { public_key } = &self.mode else {
            return None;
        };
        // Checked when the configuration was read.
        let verifier = Ed25519::new(public_key)?;
        let driver = Driver::new(self.channel.clone(), sink);
        Some(http::router(&self.path(), driver, verifier))
    }

    async fn run(self: Arc<Self>, sink: Arc<dyn InboundSink>, shutdown: Shutdown) {
        if let Mode::Gateway(settings) = &self.mode {
            let driver = Driver::new(self.channel.clone(), sink);
            let message_content = self.message_content.load(Ordering::SeqCst);
            gateway::run(settings.clone(), message_content, driver, shutdown).await;
        }
    }
}
