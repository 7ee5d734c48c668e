//! askgate's Matrix adapter, on matrix-sdk.
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | `type = "matrix"`: the channel's keys (homeserver, user id, access token, device id) and recipients' (`user_id` or `room_id`, `thread`, `answerers`) |
//! | [`channel`] | [`MatrixChannel`]: capabilities, sending prompts (a poll or text) in each room's turn, direct rooms opened or reused, ending polls and editing prompts into summaries |
//! | [`render`] | what an event says and shows, pure functions of core's decisions: a prompt's poll, a text part, a finished prompt, a nudge's mentions, always plain text with `m.mentions` |
//! | [`decode`] | timeline events (messages, replies, thread messages, poll responses) → askgate's normalized [`askgate_core::InboundEvent`]s |
//! | [`react`] | the shared driver's [`askgate_adapter::Inbound`]; the engine's [`askgate_core::Reaction`] shown the Matrix way (a reply, in the thread where there is one) |
//! | [`runtime`] | [`MatrixRuntime`]: `whoami`, then the sync loop, as the binary runs any channel |
//! | [`relay`] | the loopback relay matrix-sdk reaches the homeserver through, so that each answer is read within a bound (2 MiB, a `/sync` 32 MiB) |
//! | `session` | the client built and signed in: a configured access token, or a password login made once and kept in the channel's folder |
//! | [`sync`] | the sync loop: invitations accepted, each event taken by the shared driver, the sync token saved only after a batch's effects are stored |
//! | [`markup`] | agent text made inert: `@room` and user ids defused (no HTML is ever sent) |
//! | [`limits`] | Matrix's limits on what askgate sends, in the unit the homeserver counts |
//! | [`error`] | matrix-sdk's errors → [`askgate_core::ChannelError`], with the access token never in a message |
//!
//! The adapter declares what Matrix can show and translates; it never
//! decides how a prompt looks (`askgate_core::render`) or what a reply means
//! (the engine, through `askgate_core::reply`). It depends on askgate-core,
//! askgate-adapter and matrix-sdk only (`docs/adapter-spec.md`).
//!
//! Every event askgate sends is plain text (`body` without
//! `formatted_body`) with `m.mentions` naming exactly whom it notifies
//! (nobody but a nudge's people), so neither agent text nor a person's words
//! can carry markup or a mention. Encrypted rooms work as any other:
//! matrix-sdk encrypts and decrypts, its keys kept in SQLite under
//! askgate's data directory (`channels/<name>`).

pub mod channel;
pub mod config;
pub mod decode;
pub mod error;
pub mod limits;
pub mod markup;
pub mod react;
pub mod relay;
pub mod render;
pub mod runtime;
mod session;
pub mod sync;

pub use channel::MatrixChannel;
pub use config::{Login, Matrix, MatrixSettings};
pub use runtime::MatrixRuntime;
