//! The inbound half of the conformance suite: a person on any platform acts
//! on questions the real engine asked through the adapter, with the real
//! SQLite store behind it, and the suite checks what they see and what the
//! waiting agent gets (`docs/adapter-spec.md` §4).
//!
//! A platform's test implements [`PersonPlatform`] over its adapter and fake
//! (what a person does there, and what they then see) and calls [`run`]. The
//! suite starts a [`Person`]: a fresh store in a temporary directory, an
//! [`Engine`](askgate_engine::Engine) with the platform's channel and recipients, its timers, and
//! between the adapter and the engine a [`Sink`] that the scenarios make slow
//! or failing, as a loaded or broken store would be. [`run`] runs every
//! scenario that applies to the platform and returns their names, so that
//! each test asserts exactly which ran. Which apply follows from the
//! adapter's own declarations — its channel's [`Capabilities`](askgate_core::Capabilities) (typed
//! replies, Other…, forms) and its inbound side's
//! [`askgate_adapter::Inbound::redelivers`] — so that no adapter skips a
//! scenario its declarations promise; [`Features`] holds only what no
//! declaration says. A scenario panics with the rule it found broken.
//!
//! | module | holds |
//! | --- | --- |
//! | `person.rs` | what a platform's test implements ([`PersonPlatform`]) and the harness around it: the person, the engine and store, the sink between adapter and engine |
//! | `scenarios.rs` | the scenarios, each one rule of §4 |

mod person;
mod scenarios;

pub use person::{
    Asked, Features, GROUP, Handled, PATIENCE, PERSON, Person, PersonPlatform, SLOW_STORE, Seen, Sink, Who, recipient,
};
pub(crate) use person::{SINGLE, answered, submitted};
pub use scenarios::*;

use crate::conformance::link::link_in_the_direct_conversation_answers_with_the_persons_own_link;
use crate::conformance::scenario;
use crate::conformance::strangers::a_stranger_in_the_direct_conversation_is_refused_and_changes_nothing;

/// Every scenario [`run`] knows, in the order it runs them: what a platform
/// that declares everything (typed replies, Other…, forms, groups,
/// strangers, the sink) runs, and what its test asserts ran.
pub const EVERY_SCENARIO: [&str; 12] = [
    "a_tap_on_an_option_answers_the_waiting_agent",
    "typed_replies_answer_over_several_messages",
    "answer_opens_a_form_whose_submission_answers",
    "other_opens_a_free_text_input_whose_words_answer",
    "a_stranger_is_refused_and_changes_nothing",
    "a_stranger_in_the_direct_conversation_is_refused_and_changes_nothing",
    "a_second_tap_is_told_the_question_was_already_answered",
    "skip_gives_the_agent_no_answer",
    "a_slow_store_still_applies_the_tap_once",
    "a_failing_store_loses_no_answer",
    "a_stranger_who_writes_is_told_the_recipient_block",
    "link_in_the_direct_conversation_answers_with_the_persons_own_link",
];

/// [`EVERY_SCENARIO`] without `left_out`, for a platform whose declarations
/// leave those out (each named so that the test says why); panics on a
/// name that is no scenario, so that a typo cannot pass.
#[must_use]
pub fn every_scenario_but(left_out: &[&str]) -> Vec<&'static str> {
    for name in left_out {
        assert!(EVERY_SCENARIO.contains(name), "{name:?} is no inbound scenario");
    }
    EVERY_SCENARIO
        .into_iter()
        .filter(|name| !left_out.contains(name))
        .collect()
}

/// Every scenario that applies to `platform`, in order, with one engine
/// and store for them all; returns the names of those that ran.
pub async fn run(platform: &dyn PersonPlatform) -> Vec<&'static str> {
    let person = Person::start(platform).await;
    let features = person.features();
    let mut ran = Vec::new();
    scenario!(ran, person; true, a_tap_on_an_option_answers_the_waiting_agent);
    scenario!(ran, person; person.typed_replies(), typed_replies_answer_over_several_messages);
    scenario!(ran, person; person.forms(), answer_opens_a_form_whose_submission_answers);
    scenario!(ran, person; person.free_text(), other_opens_a_free_text_input_whose_words_answer);
    scenario!(ran, person; features.strangers, a_stranger_is_refused_and_changes_nothing);
    // Without groups, the scenario above asks the person already.
    scenario!(ran, person;
        features.strangers && features.groups && features.sink,
        a_stranger_in_the_direct_conversation_is_refused_and_changes_nothing
    );
    scenario!(ran, person; true, a_second_tap_is_told_the_question_was_already_answered);
    scenario!(ran, person; true, skip_gives_the_agent_no_answer);
    scenario!(ran, person; features.sink, a_slow_store_still_applies_the_tap_once);
    scenario!(ran, person; features.sink, a_failing_store_loses_no_answer);
    scenario!(ran, person; person.typed_replies() && features.sink, a_stranger_who_writes_is_told_the_recipient_block);
    scenario!(ran, person; person.typed_replies(), link_in_the_direct_conversation_answers_with_the_persons_own_link);
    ran
}
