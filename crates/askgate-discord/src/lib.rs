//! askgate's Discord adapter, on serenity.
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | `type = "discord"`: the channel's keys (token, mode, public key, API URL, Message Content) and recipients' (`user_id`, or `channel_id` + `thread_id` + `answerers`) |
//! | [`channel`] | [`DiscordChannel`]: capabilities, sending prompts (components, no pings, a nonce) in each channel's turn, editing them into summaries, opening DMs |
//! | [`render`] | what a message says and shows, pure functions of core's decisions: a message's body, a prompt's button rows, a finished message's content, a nudge's mentions |
//! | [`decode`] | interactions and messages → askgate's normalized [`askgate_core::InboundEvent`]s |
//! | [`react`] | the shared driver's [`askgate_adapter::Inbound`]; the engine's reactions as interaction responses (ephemeral notices, modals, deferrals, follow-ups) and replies |
//! | [`runtime`] | [`DiscordRuntime`]: `GET /users/@me`, in gateway mode the Message Content intent from `GET /applications/@me`, then the gateway or the interactions endpoint |
//! | [`gateway`] | the gateway connection (serenity's client: heartbeats, resuming; a replayed interaction answered once) |
//! | [`http`] | the HTTP way in: the interactions endpoint in askgate's server, every request's Ed25519 signature verified |
//! | [`rest`] | the REST calls askgate makes, with Discord's errors and 429 delays kept |
//! | [`markup`] | escaping agent text for Discord's markdown |
//! | [`limits`] | Discord's limits on what askgate sends, in code points, and the length Discord counts after escaping |
//!
//! The adapter declares what Discord can show and translates; it never
//! decides how a prompt looks (`askgate_core::render`) or what a reply means
//! (the engine). It depends on askgate-core, askgate-adapter and serenity
//! only (`docs/adapter-spec.md`; `docs/channels/discord.md`).

pub mod channel;
pub mod config;
pub mod decode;
pub mod gateway;
pub mod http;
pub mod limits;
pub mod markup;
pub mod react;
pub mod render;
pub mod rest;
pub mod runtime;

pub use channel::DiscordChannel;
pub use config::{Discord, DiscordSettings};
pub use runtime::DiscordRuntime;
