//! The adapter conformance suite: the rules of `docs/adapter-spec.md` that
//! can be checked from outside, run by every adapter against its own fake
//! platform, like a compliance suite every component runs.
//!
//! | module | checks |
//! | --- | --- |
//! | [`outbound`] | what is sent and how it is edited: buttons and tokens, text parts, Answer…, escaping and mentions, editing, refusals, resuming (§1–§3) |
//! | [`inbound`] | what a person does: taps, typed replies, Other…, Answer… forms, strangers, redeliveries, a slow or failing store, always against the real engine (§4) |
//! | [`strangers`] | a stranger in the person's own direct conversation (§4.1, §4.8), a scenario of [`inbound`] |
//! | [`link`] | `/link` in the person's direct conversation answered with their own page link (§4.11), a scenario of [`inbound`] |
//! | [`edges`] | prompts at the contract's edges on every platform: delivered, answered and summarized with every request valid by the platform's published spec (§1.6) |
//! | [`nudges`] | a reminder, an escalation's word and a note sent with `Channel::nudge` under a prompt the engine delivered: one message, a reply in the same thread, mentioning exactly its people, its text as written within the limit (§2.10) |
//! | [`introduce`] | the recipient block told to a conversation that is no recipient's configures that very conversation (§4.10) |
//! | [`double`] | a small in-memory platform and adapter the inbound suite runs against, with a switch that breaks its acknowledgement |

pub mod double;
pub mod edges;
pub mod inbound;
pub mod introduce;
pub mod link;
pub mod nudges;
pub mod outbound;
pub mod strangers;

pub use double::{DoubleSettings, TestDouble};
pub use inbound::{Features, PersonPlatform, Seen, Who};
pub use outbound::{PlatformUnderTest, Shown, run};

/// In a suite's `run`: runs the scenario `$name` against `$person` when
/// `$applies`, and records its name in `$ran`, so that each test asserts
/// exactly which scenarios ran.
macro_rules! scenario {
    ($ran:ident, $person:ident; $applies:expr, $name:ident) => {
        if $applies {
            $name(&$person).await;
            $ran.push(stringify!($name));
        }
    };
}
pub(crate) use scenario;
