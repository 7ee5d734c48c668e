//! A fake's state and the requests it has recorded, and waiting on them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use super::lock;

/// A fake's state behind a lock, with the tasks waiting on it woken whenever
/// something is recorded (a request, a push attempt).
#[derive(Debug, Default)]
pub struct Recorder<S> {
    state: Mutex<S>,
    recorded: Notify,
}

impl<S> Recorder<S> {
    /// A recorder holding this state.
    pub fn new(state: S) -> Self {
        Self {
            state: Mutex::new(state),
            recorded: Notify::new(),
        }
    }

    /// The state, to read or to change without waking anyone.
    pub fn lock(&self) -> MutexGuard<'_, S> {
        lock(&self.state)
    }

    /// Changes the state, then wakes the waiters (after the lock is released,
    /// so that they find it free).
    pub fn record<R>(&self, change: impl FnOnce(&mut S) -> R) -> R {
        let result = change(&mut self.lock());
        self.recorded.notify_waiters();
        result
    }

    /// Wakes the waiters, after a change made through [`Recorder::lock`].
    pub fn notify(&self) {
        self.recorded.notify_waiters();
    }

    /// Waits until `check` finds what it looks for in the state, checking
    /// again after every [`Recorder::record`]. After `timeout`, the error is
    /// what `timed_out` makes of the state then, e.g. the requests so far for
    /// the test's failure message.
    pub async fn wait<T, E>(
        &self,
        timeout: Duration,
        check: impl Fn(&S) -> Option<T>,
        timed_out: impl FnOnce(&S) -> E,
    ) -> Result<T, E> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Created before the check, so that nothing recorded after it is missed.
            let recorded = self.recorded.notified();
            if let Some(found) = check(&self.lock()) {
                return Ok(found);
            }
            if tokio::time::timeout_at(deadline, recorded).await.is_err() {
                let state = self.lock();
                if let Some(found) = check(&state) {
                    return Ok(found);
                }
                return Err(timed_out(&state));
            }
        }
    }
}

/// The requests a fake received, in order, and the failures queued for the
/// next ones by key: whatever names a request for the platform (a method
/// name, a route).
#[derive(Debug, Clone)]
pub struct Requests<C, F> {
    calls: Vec<C>,
    failures: HashMap<String, VecDeque<F>>,
}

impl<C, F> Default for Requests<C, F> {
    fn default() -> Self {
        Self {
            calls: Vec::new(),
            failures: HashMap::new(),
        }
    }
}

impl<C, F> Requests<C, F> {
    /// Makes the next request with this key fail this way. Failures for one
    /// key queue up and are used one a request, in order.
    pub fn fail_next(&mut self, key: &str, failure: F) {
        self.failures.entry(key.to_owned()).or_default().push_back(failure);
    }

    /// Records a request, and takes the failure queued for its key, if any.
    pub fn record(&mut self, call: C, key: &str) -> Option<F> {
        self.calls.push(call);
        self.failures.get_mut(key).and_then(VecDeque::pop_front)
    }

    /// Every request so far, in order, the failed ones included.
    pub fn calls(&self) -> &[C] {
        &self.calls
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::{Recorder, Requests};

    #[test]
    fn a_queued_failure_is_used_once_by_the_next_request_with_its_key() {
        let mut requests: Requests<&str, &str> = Requests::default();
        requests.fail_next("send", "429");
        requests.fail_next("send", "500");

        assert_eq!(requests.record("get 1", "get"), None, "another key is not affected");
        assert_eq!(requests.record("send 1", "send"), Some("429"));
        assert_eq!(
            requests.record("send 2", "send"),
            Some("500"),
            "queued failures are used in order"
        );
        assert_eq!(requests.record("send 3", "send"), None, "each failure is used once");
        assert_eq!(requests.calls(), ["get 1", "send 1", "send 2", "send 3"]);
    }

    #[tokio::test]
    async fn a_wait_ends_when_a_record_makes_the_condition_hold() {
        let recorder = Arc::new(Recorder::new(Vec::<u32>::new()));
        let writer = {
            let recorder = Arc::clone(&recorder);
            tokio::spawn(async move {
                for n in 1..=3 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    recorder.record(|numbers| numbers.push(n));
                }
            })
        };

        let started = Instant::now();
        let found = recorder
            .wait(
                Duration::from_secs(5),
                |numbers| (numbers.len() >= 3).then(|| numbers.clone()),
                Vec::clone,
            )
            .await;
        assert_eq!(found, Ok(vec![1, 2, 3]));
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "woken by the record, not the timeout"
        );
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_wait_that_runs_out_reports_the_state_then() {
        let recorder = Recorder::new(vec![7_u32]);
        let started = Instant::now();
        let found = recorder
            .wait(
                Duration::from_millis(50),
                |numbers| numbers.contains(&8).then_some(()),
                |numbers| format!("only {numbers:?}"),
            )
            .await;
        assert_eq!(found, Err("only [7]".to_owned()));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }

    #[tokio::test]
    async fn a_condition_that_already_holds_needs_no_record() {
        let recorder = Recorder::new(5_u32);
        let found = recorder
            .wait(Duration::from_secs(5), |n| Some(*n), |_| "timed out")
            .await;
        assert_eq!(found, Ok(5));
    }
}
