//! The inbound conformance suite against the testkit's own test double: a
//! correct adapter passes it whether its platform redelivers or not, and an
//! adapter that acknowledges an event before the engine stored it fails it.
//! Likewise the nudge suite: a double that nudges passes it, one whose
//! `Channel::nudge` is the trait's default (sends nothing) fails it.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use askgate_testkit::conformance::{DoubleSettings, TestDouble};
use askgate_testkit::conformance::{inbound, nudges};

const EVERY_SCENARIO: [&str; 12] = inbound::EVERY_SCENARIO;

#[tokio::test]
async fn a_double_that_redelivers_passes_every_scenario() {
    let double = TestDouble::new(DoubleSettings::default());
    assert_eq!(inbound::run(&double).await, EVERY_SCENARIO);
    assert_eq!(double.unacknowledged(), 0, "every event was acknowledged in the end");
}

#[tokio::test]
async fn a_double_that_never_redelivers_and_has_a_first_response_budget_passes_every_scenario() {
    let double = TestDouble::new(DoubleSettings {
        redelivers: false,
        first_response_within: Some(Duration::from_millis(2500)),
        acknowledge_before_handle: false,
        nudges: true,
    });
    assert_eq!(inbound::run(&double).await, EVERY_SCENARIO);
    // Only the slow store took longer than the budget.
    assert_eq!(double.deferred(), 1);
}

#[tokio::test]
#[should_panic(
    expected = "an event whose effect was not stored MUST NOT be acknowledged: it was never delivered again"
)]
async fn a_double_that_acknowledges_before_handle_returned_fails_the_suite() {
    let broken = TestDouble::new(DoubleSettings {
        acknowledge_before_handle: true,
        ..DoubleSettings::default()
    });
    inbound::run(&broken).await;
}

const EVERY_NUDGE: [&str; 5] = nudges::EVERY_NUDGE;

#[tokio::test]
async fn a_double_that_nudges_passes_every_nudge_scenario() {
    let double = TestDouble::new(DoubleSettings::default());
    assert_eq!(nudges::run(&double).await, EVERY_NUDGE);
}

#[tokio::test]
#[should_panic(expected = "a nudge MUST be exactly one new message")]
async fn a_double_whose_nudge_sends_nothing_fails_the_nudge_suite() {
    let broken = TestDouble::new(DoubleSettings {
        nudges: false,
        ..DoubleSettings::default()
    });
    nudges::run(&broken).await;
}
