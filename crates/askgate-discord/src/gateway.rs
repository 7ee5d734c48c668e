//! Gateway mode: a serenity client holds the WebSocket to Discord (Hello,
//! Identify, heartbeats, resuming after a drop) and hands each
//! `INTERACTION_CREATE` and `MESSAGE_CREATE` to the shared driver.
//!
//! serenity runs each event's handler on a task of its own, so a slow store
//! for one person's click holds up no one else's.
//!
//! A resume may replay dispatches the connection had already delivered
//! (Discord sends everything after the `seq` it was given). The engine
//! applies an event once whatever comes again, by its id; an interaction
//! that comes again is also not answered again, since Discord takes one
//! first response and refuses a second (`40060`).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use askgate_adapter::backoff::backoff;
use askgate_adapter::{Driver, Shutdown};
use async_trait::async_trait;
use serenity::all::{Context, EventHandler, GatewayIntents, Interaction, Message, Ready};
use serenity::client::ClientBuilder;
use serenity::http::HttpBuilder;
use tracing::{debug, error, info, warn};

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
    /// The admin's `message_content` key: `None` when not set, and then the
    /// application's flags decide ([`crate::runtime::message_content`]).
    pub message_content: Option<bool>,
}

/// How many interaction ids a gateway connection remembers: more than can
/// arrive in the 3 s an interaction's first response takes, or in a replay.
const REMEMBERED_INTERACTIONS: usize = 4096;

struct Handler {
    driver: Driver<DiscordChannel>,
    /// The interactions taken so far, newest last; the oldest are forgotten.
    taken: Arc<Mutex<Taken>>,
}

/// Interaction ids already taken, bounded.
#[derive(Debug, Default)]
struct Taken {
    ids: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Taken {
    /// Remembers `id`; false if it was taken before.
    fn first_time(&mut self, id: u64) -> bool {
        if !self.ids.insert(id) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > REMEMBERED_INTERACTIONS
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        true
    }
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        info!(channel = askgate_core::Channel::name(self.driver.inbound().as_ref()), bot = %ready.user.name, "connected to the Discord gateway");
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        let id = interaction.id().get();
        if !self.taken.lock().unwrap_or_else(PoisonError::into_inner).first_time(id) {
            debug!(
                channel = askgate_core::Channel::name(self.driver.inbound().as_ref()),
                event = id,
                "a Discord interaction came again (replayed after a resume); it was answered when it first came"
            );
            return;
        }
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
/// pause) whenever serenity gives up on it; asks for the Message Content
/// intent if `message_content` (as the runtime's check decided).
pub async fn run(settings: GatewaySettings, message_content: bool, driver: Driver<DiscordChannel>, shutdown: Shutdown) {
    let name = askgate_core::Channel::name(driver.inbound().as_ref()).to_owned();
    let shutdown = shutdown.wait();
    tokio::pin!(shutdown);
    let mut failures = 0;
    // Shared by every client the loop starts: a replay can follow a reconnect.
    let taken = Arc::new(Mutex::new(Taken::default()));
    loop {
        let mut http = HttpBuilder::new(&settings.token);
        if settings.api_url.trim_end_matches('/') != DISCORD_API {
            // serenity's rate limiter would bypass the proxy (docs/architecture.md); the
            // gateway's few REST calls need none.
            http = http
                .proxy(settings.api_url.trim_end_matches('/'))
                .ratelimiter_disabled(true);
        }
        let handler = Handler {
            driver: driver.clone(),
            taken: Arc::clone(&taken),
        };
        let client = ClientBuilder::new_with_http(http.build(), intents(message_content))
            .event_handler(handler)
            .await;
        let mut client = match client {
            Ok(client) => client,
            Err(error) => {
                let error = askgate_adapter::cause::bounded(&error.to_string());
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
                    Err(error) => {
                        // serenity's words may carry Discord's (or a proxy's): one short line.
                        let error = askgate_adapter::cause::bounded(&error.to_string());
                        warn!(channel = %name, %error, ?pause, "the Discord gateway failed; connecting again");
                    }
                }
                tokio::select! {
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{REMEMBERED_INTERACTIONS, Taken};

    /// An id is taken once; the memory is bounded, the oldest forgotten first.
    #[test]
    fn an_interaction_is_taken_once_and_the_memory_is_bounded() {
        let mut taken = Taken::default();
        assert!(taken.first_time(1));
        assert!(!taken.first_time(1));
        for id in 2..=u64::try_from(REMEMBERED_INTERACTIONS).unwrap_or(u64::MAX) + 1 {
            assert!(taken.first_time(id));
        }
        assert_eq!(taken.ids.len(), REMEMBERED_INTERACTIONS);
        assert!(taken.first_time(1), "the oldest was forgotten");
        assert!(!taken.first_time(3), "a newer one is still remembered");
    }
}
