//! askgate's Telegram adapter, on teloxide.
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | `type = "telegram"`: the channel's keys (token, mode, secret, API URL) and recipients' (`chat_id`, `topic`, `answerers`) |
//! | [`channel`] | [`TelegramChannel`]: capabilities, sending prompts (inline keyboard or text) in each chat's turn within Telegram's rate limits, editing them into summaries |
//! | [`render`] | what a message says and shows, pure functions of core's decisions: a prompt's keyboard and first text, a finished message's HTML, a nudge's mentions |
//! | [`decode`] | Telegram `Update`s → askgate's normalized [`askgate_core::InboundEvent`]s |
//! | [`react`] | the shared driver's [`askgate_adapter::Inbound`]; showing the engine's [`askgate_core::Reaction`] the Telegram way (callback answers at once; replies and force-replies queued for their chat's turn) |
//! | [`runtime`] | [`TelegramRuntime`]: `getMe`, then polling or the webhook, as the binary runs any channel |
//! | [`polling`] | long polling with the update offset saved only after each update's effect is stored |
//! | [`http`] | the HTTP way in: the webhook route in askgate's own HTTP server, its secret checked on every request, and `setWebhook` |
//! | [`markup`] | escaping agent text for Telegram HTML, and defusing `@mentions` |
//! | [`limits`] | Telegram's limits on what askgate sends, each in Telegram's unit, and the length Telegram counts after parsing |
//! | [`error`] | Telegram errors → [`askgate_core::ChannelError`], with the token never in a message |
//! | `relay` | the loopback relay the bot's calls go through, so that each of Telegram's answers is read within a bound |
//!
//! The adapter declares what Telegram can show and translates; it never
//! decides how a prompt looks (`askgate_core::render`) or what a reply means
//! (the engine, through `askgate_core::reply`). It depends on askgate-core,
//! askgate-adapter (the send lines, the inbound driver, the webhook route,
//! the runtime and configuration traits) and teloxide only
//! (`docs/adapter-spec.md`).

pub mod channel;
pub mod config;
pub mod decode;
pub mod error;
pub mod http;
pub mod limits;
pub mod markup;
pub mod polling;
pub mod react;
mod relay;
pub mod render;
pub mod runtime;

pub use channel::TelegramChannel;
pub use config::{Telegram, TelegramSettings};
pub use decode::{Ack, Decoded, decode};
pub use runtime::TelegramRuntime;
