//! Readiness that follows the real writes, for both stores.
//!
//! A query that answers says little about writes: a disk with room for a
//! small write but not for a question's insert answers every read and every
//! small probe, while every create fails. So [`crate::Store::ping`] follows
//! the writes the store is asked to make (the "real" writes), by this rule:
//!
//! 1. A real write that fails because the database cannot take it (an error
//!    [`StoreError::is_unavailable`] says so: what agents are answered `503
//!    store_unavailable` for) makes the store not ready, with that write's
//!    reason.
//! 2. A real write that succeeds makes it ready again.
//! 3. While a failure stands and no real write has failed since the previous
//!    ping (none came: a load balancer took the instance out, or it is
//!    quiet), the ping tries a write of its own, as large as a large
//!    question ([`PROBE_BYTES`]); it is ready again if that commits and no
//!    real write failed meanwhile. A ping never probes when a real write
//!    failed since the previous ping: while real writes keep failing, a
//!    probe that happens to fit cannot say ready.
//!
//! A write refused by a rule (a busy session, a cap, an unknown question)
//! says nothing either way.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::{StoreError, WriteFailure, WriteFailures};

/// The size of the probe's value: larger than the largest question askgate
/// stores (three questions of 300 characters with four options each, in
/// 4-byte characters, come to about 20 KiB with their indexes), so that a
/// disk with room for the probe has room for a real write.
pub(crate) const PROBE_BYTES: u32 = 64 * 1024;

/// The setting the probe writes (the same row each time).
pub(crate) const PROBE_KEY: &str = "readiness_probe";

/// What a ping found before any probe.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// No failure stands.
    Ready,
    /// A real write failed since the previous ping: not ready, no probe.
    NotReady(StoreError),
    /// A failure stands but no real write failed since the previous ping:
    /// probe, then report through [`Readiness::probed`].
    Probe(Ticket),
}

/// The count of real failures when a probe began: a real write that fails
/// while the probe runs keeps the store not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

/// The state of the rule, shared by every clone of a store.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the latest real write failed, while none has succeeded since.
    failed: Option<String>,
    /// Whether a real write failed since the previous ping.
    failed_since_ping: bool,
    /// Real writes failed so far, by reason (metrics read them; their total
    /// is a probe's ticket).
    failures: WriteFailures,
}

impl Readiness {
    /// Notes the outcome of a real write: success (rule 2), a failure of
    /// the database (rule 1), or a rule's refusal (nothing).
    pub(crate) fn note<T>(&self, outcome: &Result<T, StoreError>) {
        match outcome {
            Ok(_) => self.wrote(),
            Err(error) if error.is_unavailable() => self.failed(error),
            Err(_) => {}
        }
    }

    /// A real write succeeded.
    pub(crate) fn wrote(&self) {
        self.lock().failed = None;
    }

    /// A real write failed because the database could not take it.
    pub(crate) fn failed(&self, error: &StoreError) {
        let reason = match error {
            // Its own words, without "the database cannot save now" twice.
            StoreError::Unavailable(reason) => reason.clone(),
            other => other.to_string(),
        };
        let mut state = self.lock();
        state.failed = Some(reason);
        state.failed_since_ping = true;
        state.failures.add(WriteFailure::of(error));
    }

    /// The real writes failed so far, by reason ([`crate::Store::write_failures`]).
    pub(crate) fn failures(&self) -> WriteFailures {
        self.lock().failures
    }

    /// What a ping says before probing (rules 1 and 3); starts the next
    /// "since the previous ping".
    pub(crate) fn verdict(&self) -> Verdict {
        let mut state = self.lock();
        let failed_since_ping = std::mem::take(&mut state.failed_since_ping);
        match &state.failed {
            None => Verdict::Ready,
            Some(reason) if failed_since_ping => Verdict::NotReady(not_ready(reason)),
            Some(_) => Verdict::Probe(Ticket(state.failures.total())),
        }
    }

    /// What a ping says after its probe's `outcome`.
    pub(crate) fn probed(&self, ticket: Ticket, outcome: Result<(), StoreError>) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.failures.total() != ticket.0 {
            // A real write failed while the probe ran: it outweighs it.
            let reason = state.failed.clone().unwrap_or_default();
            return Err(not_ready(&reason));
        }
        match outcome {
            Ok(()) => {
                state.failed = None;
                Ok(())
            }
            Err(error) => Err(StoreError::Unavailable(format!(
                "a write failed and none has succeeded since; a test write failed too: {error}"
            ))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update leaves the state whole: usable after a panic elsewhere.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn not_ready(reason: &str) -> StoreError {
    StoreError::Unavailable(format!("the last write failed, and none has succeeded since: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> StoreError {
        StoreError::Unavailable("database or disk is full".to_owned())
    }

    fn reason(verdict: Verdict) -> String {
        match verdict {
            Verdict::NotReady(error) => error.to_string(),
            other => panic!("expected not ready, got {other:?}"),
        }
    }

    #[test]
    fn a_failed_write_makes_it_not_ready_until_a_write_succeeds() {
        let readiness = Readiness::default();
        assert!(matches!(readiness.verdict(), Verdict::Ready));
        readiness.note::<()>(&Err(full()));
        assert!(reason(readiness.verdict()).contains("database or disk is full"));
        readiness.note(&Ok(()));
        assert!(matches!(readiness.verdict(), Verdict::Ready));
    }

    #[test]
    fn a_refusal_by_a_rule_changes_nothing() {
        let readiness = Readiness::default();
        readiness.note::<()>(&Err(StoreError::Corrupt("a row".to_owned())));
        assert!(matches!(readiness.verdict(), Verdict::Ready));
        assert_eq!(readiness.failures(), WriteFailures::default());
    }

    #[test]
    fn each_failed_write_is_counted_by_its_reason() {
        let readiness = Readiness::default();
        readiness.note::<()>(&Err(full()));
        readiness.note::<()>(&Err(full()));
        readiness.failed(&StoreError::Unavailable("database is locked".to_owned()));
        readiness.note(&Ok(()));
        let failures = readiness.failures();
        assert_eq!(failures.count(WriteFailure::Full), 2);
        assert_eq!(failures.count(WriteFailure::Locked), 1);
        assert_eq!(failures.count(WriteFailure::Other), 0);
    }

    #[test]
    fn no_probe_while_real_writes_keep_failing() {
        let readiness = Readiness::default();
        for _ in 0..3 {
            readiness.note::<()>(&Err(full()));
            assert!(matches!(readiness.verdict(), Verdict::NotReady(_)));
        }
        // None failed since the previous ping: now a probe may speak.
        let Verdict::Probe(ticket) = readiness.verdict() else {
            panic!("a probe once no write failed since the previous ping")
        };
        assert!(readiness.probed(ticket, Err(full())).is_err());
        let Verdict::Probe(ticket) = readiness.verdict() else {
            panic!("still probing")
        };
        readiness
            .probed(ticket, Ok(()))
            .expect("ready after the probe committed");
        assert!(matches!(readiness.verdict(), Verdict::Ready));
    }

    #[test]
    fn a_real_failure_during_a_probe_outweighs_it() {
        let readiness = Readiness::default();
        readiness.note::<()>(&Err(full()));
        let _ = readiness.verdict();
        let Verdict::Probe(ticket) = readiness.verdict() else {
            panic!("a probe")
        };
        readiness.note::<()>(&Err(full()));
        assert!(readiness.probed(ticket, Ok(())).is_err());
        assert!(matches!(readiness.verdict(), Verdict::NotReady(_)));
    }
}
