//! askgate's Telegram adapter, on teloxide.
//!
//! | module | owns |
//! | --- | --- |
//! | [`channel`] | [`TelegramChannel`]: capabilities, sending prompts (inline keyboard or text) within Telegram's rate limits, editing them into summaries |
//! | [`turns`] | each chat's messages sent one at a time and in order, without holding up other chats |
//! | [`decode`] | Telegram `Update`s → askgate's normalized [`askgate_core::InboundEvent`]s |
//! | [`react`] | showing the engine's [`askgate_core::Reaction`] the Telegram way (callback answers at once; replies and force-replies queued for their chat's turn) |
//! | [`polling`] | long polling with the update offset saved only after each update's effect is stored |
//! | [`webhook`] | the webhook route in askgate's own HTTP server, its secret checked on every request, and `setWebhook` |
//! | [`markup`] | escaping agent text for Telegram HTML, and defusing `@mentions` |
//! | [`error`] | Telegram errors → [`askgate_core::ChannelError`], with the token never in a message |
//!
//! The adapter declares what Telegram can show and translates; it never
//! decides how a prompt looks (`askgate_core::render`) or what a reply means
//! (the engine, through `askgate_core::reply`). It depends on askgate-core
//! and teloxide only (`docs/adapter-spec.md`).

pub mod channel;
pub mod decode;
pub mod error;
pub mod markup;
pub mod polling;
pub mod react;
mod turns;
pub mod webhook;

pub use channel::TelegramChannel;
pub use decode::{Ack, Decoded, decode};
