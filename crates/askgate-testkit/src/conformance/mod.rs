//! The adapter conformance suite: the rules of `docs/adapter-spec.md` that
//! can be checked from outside, run by every adapter against its own fake
//! platform, like a compliance suite every component runs.
//!
//! | module | checks |
//! | --- | --- |
//! | [`outbound`] | what is sent and how it is edited: buttons and tokens, text parts, Answer…, escaping and mentions, editing, refusals, resuming (§1–§3) |
//! | [`inbound`] | what a person does: taps, typed replies, Other…, Answer… forms, strangers, redeliveries, a slow or failing store, always against the real engine (§4) |

pub mod inbound;
pub mod outbound;

pub use outbound::{PlatformUnderTest, Shown, run};
