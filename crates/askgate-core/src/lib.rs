//! The `ask_user` contract, pure: what a question looks like and what a reply
//! means, with no I/O, no HTTP and no platform crates.
//!
//! | module | owns |
//! | --- | --- |
//! | [`validate`] | agent input → [`AskRequest`], every problem with its code and JSON path (spec §2) |
//! | [`request`] | the normalized request and its limits |
//! | [`answer`] | answers, and the [`ToolResult`] the agent gets (spec §3) |
//! | [`render`] | [`Capabilities`] and the one function that picks a [`Presentation`] (spec §4) |
//! | [`form`] | the form Answer… opens (one field per question) and its submitted values |
//! | [`layout`] | the readable text layout, button message text, summaries (spec §4, §7) |
//! | [`chrome`] | everything askgate itself writes, in `en` and `zh-CN` |
//! | [`guidance`] | the model guidance every published tool description carries |
//! | [`reply`] | reading typed replies, over several replies too (spec §5) |
//! | [`token`] | question ids and the opaque button tokens (spec §6) |
//! | [`channel`] | the [`Channel`] and [`InboundSink`] traits, normalized inbound events |
//! | [`backoff`] | the one retry policy: the pause before each retry against a platform or the store |
//! | [`when`] | time zones, quiet hours, durations and reminder points of the configuration, deadlines in a person's local time |
//! | [`text`] | normalization, and [`Limit`]s counted in a platform's [`Unit`] and cut without splitting a character, shared by all of the above |
//!
//! This crate must not touch the network, the clock, storage or a platform
//! SDK: the engine and the adapters do, and they depend on it, never the
//! other way round.

pub mod answer;
pub mod backoff;
pub mod channel;
pub mod chrome;
pub mod form;
pub mod guidance;
pub mod layout;
pub mod render;
pub mod reply;
pub mod request;
pub mod text;
pub mod token;
pub mod validate;
pub mod when;

pub use answer::{AnswerItem, AnswerValues, Answers, ToolResult};
pub use channel::{
    Channel, ChannelError, Delivery, DeliveryError, InboundError, InboundEvent, InboundKind, InboundSink, Outgoing,
    Reaction,
};
pub use chrome::{Locale, Place};
pub use form::{Form, FormField, FormValue};
pub use layout::Summary;
pub use render::{Capabilities, Presentation, render, render_by};
pub use reply::{ReplyOutcome, ReplyReader, read_reply};
pub use request::{AskRequest, Question, QuestionOption};
pub use text::{Limit, Unit};
pub use token::{ButtonAction, ButtonToken, QuestionId};
pub use validate::{ErrorCode, ValidationError, ValidationErrors, validate, validate_json, validate_with_max_timeout};
