//! What every askgate channel adapter shares, written once.
//!
//! | module | owns |
//! | --- | --- |
//! | [`runtime`] | [`ChannelRuntime`] (check, routes, register, run) and [`Shutdown`]: how the binary wires any adapter |
//! | [`connect`] | [`connect::bring_up`]: a channel checked and its webhook registered, tried again with the backoff while its platform is out of reach; its [`ChannelState`] |
//! | [`config`] | [`AdapterKind`]: each adapter reads its own configuration keys; secrets, problems with key and fix, `${ENV}` |
//! | [`driver`] | the inbound driver: decode → engine → react → acknowledge, or keep the event for redelivery |
//! | [`introduce`] | the recipient block a conversation that is no recipient's is told when it writes to the bot |
//! | [`webhook`] | webhook routes authenticated by a pluggable [`webhook::Verifier`] before anything is decoded |
//! | [`lines`] | [`SendLines`]: each conversation's messages in order, without holding up others; rate limits waited out |
//! | [`deliver`] | delivering a prompt part by part, resumable, with partial progress on failure |
//! | [`finish`] | a finished prompt's text and summary laid out within the message's limit, counted after escaping |
//! | [`mention`] | `@names` in sent text defused with a word joiner, where a platform finds mentions in plain text |
//! | [`nudge`] | a nudge's mentions, each once and checked, and its outcome logged alike on every platform |
//! | [`backoff`] | the one retry policy, re-exported from `askgate-core` (the engine's too) |
//! | [`cause`] | a platform out of reach described by what happened (`Connection refused`), not only "error sending request"; outside error text cut to one short line |
//! | [`read`] | a platform's answer read within [`read::MAX_ANSWER_BYTES`] |
//! | [`relay`] | a loopback relay that reads a platform's answers within a bound, for platform crates that read whole answers with a client of their own |
//!
//! An adapter crate depends on `askgate-core`, this crate and its platform
//! crate only. This crate knows no platform, no engine and no store: it
//! talks to the engine through [`askgate_core::InboundSink`].

/// The one retry policy, kept in `askgate-core` beside [`askgate_core::ChannelError`]
/// (the engine uses it too); re-exported so adapters name it from here.
pub use askgate_core::backoff;
pub mod cause;
pub mod config;
pub mod connect;
pub mod deliver;
pub mod driver;
pub mod finish;
pub mod introduce;
pub mod lines;
pub mod mention;
pub mod nudge;
pub mod read;
pub mod relay;
pub mod runtime;
pub mod webhook;

pub use config::{
    AdapterKind, Address, ChannelSettings, CheckError, ConfigCheck, Problem, Problems, Secret, ServerContext,
};
pub use connect::{ChannelState, StateReport};
pub use driver::{Driver, Inbound, Taken};
pub use introduce::Introduction;
pub use lines::SendLines;
pub use runtime::{ChannelRuntime, Shutdown};
