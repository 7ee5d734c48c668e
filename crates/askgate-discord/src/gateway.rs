//! Gateway mode: a serenity client holds the WebSocket to Discord (Hello,
//! Identify, heartbeats, resuming after a drop) and hands each
//! `INTERACTION_CREATE` and `MESSAGE_CREATE` to the shared driver.
//!
//! serenity runs each event's handler on a task of its own, so a slow store
//! for one person's click holds up no one else's.

use std::sync::Arc;

use askgate_adapter::backoff::backoff;
use askgate_adapter::{Driver, Shutdown};
use async_trait::async_trait;
use serenity::all::{Context, EventHandler, GatewayIntents, Interaction, Message, Ready};
use serenity::client::ClientBuilder;
use serenity::http::HttpBuilder;
use tracing::{error, info, warn};

use crate::DiscordChannel;
use crate::decode::Update;
use crate::react::Responder;
use crate::rest::DISCORD_API;

/// What the gateway needs besides the channel.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// The bot token.
    pub token: String,
    /// Discord's base URL (or a fake's).
    pub api_url: String,
    /// Whether the Message Content intent is granted: typed replies.
    pub message_content: bool,
}

struct Handler {
    driver: Driver<DiscordChannel>,
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        info!(channel = askgate_core::Channel::name(self.driver.inbound().as_ref()), bot = %ready.user.name, "connected to the Discord gateway");
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        let responder = Responder::over_rest(&interaction, self.driver.inbound().rest().clone());
        let update = Update::Interaction {
            interaction: Box::new(interaction),
            responder,
        };
        // Discord never delivers an interaction again: the driver has shown
        // any failure to the person already.
        let _ = self.driver.take(&update).await;
    }

    async fn message(&self, _ctx: Context, message: Message) {
        let _ = self.driver.take(&Update::Message(Box::new(message))).await;
    }
}

/// The intents askgate asks for: DMs and guild messages (replies), and their
/// content where granted.
pub fn intents(message_content: bool) -> GatewayIntents {
    let intents = GatewayIntents::DIRECT_MESSAGES | GatewayIntents::GUILD_MESSAGES;
    if message_content {
        intents | GatewayIntents::MESSAGE_CONTENT
    } else {
        intents
    }
}

/// Holds the gateway connection until `shutdown`, starting it again (after a
/// pause) whenever serenity gives up on it.
pub async fn run(settings: GatewaySettings, driver: Driver<DiscordChannel>, shutdown: Shutdown) {
    let name = askgate_core::Channel::name(driver.inbound().as_ref()).to_owned();
    let shutdown = shutdown.wait();
    tokio::pin!(shutdown);
    let mut failures = 0;
    loop {
        let mut http = HttpBuilder::new(&settings.token);
        if settings.api_url.trim_end_matches('/') != DISCORD_API {
            // serenity's rate limiter would bypass the proxy (docs/architecture.md); the
            // gateway's few REST calls need none.
            http = http
                .proxy(settings.api_url.trim_end_matches('/'))
                .ratelimiter_disabled(true);
        }
        let handler = Handler { driver: driver.clone() };
        let client = ClientBuilder::new_with_http(http.build(), intents(settings.message_content))
            .event_handler(handler)
            .await;
        let mut client = match client {
            Ok(client) => client,
            Err(error) => {
                warn!(channel = %name, %error, "could not set up the Discord gateway client");
                failures += 1;
                tokio::select! {
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(backoff(failures)) => continue,
                }
            }
        };
        let manager = Arc::clone(&client.shard_manager);
        tokio::select! {
            () = &mut shutdown => {
                manager.shutdown_all().await;
                return;
            }
            ended = client.start() => {
                failures += 1;
                let pause = backoff(failures);
                match ended {
                    Ok(()) => warn!(channel = %name, ?pause, "the Discord gateway connection ended; connecting again"),
                    // Close code 4014: the Message Content intent is not enabled
                    // for this bot. Retrying cannot help; say how to fix it.
                    Err(serenity::Error::Gateway(serenity::gateway::GatewayError::DisallowedGatewayIntents)) => error!(
                        channel = %name,
                        ?pause,
                        "Discord refused the Message Content intent: enable it in the Developer Portal \
                         (Bot → Privileged Gateway Intents), or set message_content = false for this channel"
                    ),
                    Err(error) => warn!(channel = %name, %error, ?pause, "the Discord gateway failed; connecting again"),
                }
                tokio::select! {
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
}
