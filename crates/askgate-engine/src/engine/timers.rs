//! The timer loop: deadlines expired as they pass, the sweep on a shared
//! store, reminders and escalations and result callbacks as they fall
//! due, and what other replicas changed.

use std::collections::{BTreeSet, HashMap};
use std::sync::PoisonError;

use super::{EXPIRY_RETRY_MAX, Engine, REDELIVER_AFTER, SWEEP_BATCH, SWEEP_EVERY};
use askgate_core::QuestionId;
use askgate_core::backoff::backoff;
use askgate_store::{QuestionStatus, Timestamp};
use tracing::{info, warn};

use crate::clock::millis;

impl Engine {
    /// Expires questions as their deadlines pass, until `shutdown` completes.
    /// One task serves every question: the deadlines are an ordered set.
    ///
    /// On a store shared with other processes (PostgreSQL) it also follows
    /// their changes ([`Store::changes`]): a question another replica asked
    /// gets a timer here too, and one that ended there wakes the agents
    /// waiting here and the live views; and every [`SWEEP_EVERY`] it expires
    /// whatever is due ([`Store::expire_due`]), so that no question outlives
    /// its deadline because the process that knew of it is gone, and reads
    /// again the questions waited on here ([`Store::ended_among`]), so that
    /// no wait outlives an answer whose notification never came.
    pub async fn run_timers(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Failed attempts to store each expiry (a locked database, a full
        // disk): the deadline is put back a little later, until it is stored.
        let mut failures: HashMap<QuestionId, u32> = HashMap::new();
        let mut feed = self.inner.store.changes();
        let shared = feed.is_some();
        let sweep = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(sweep);
        // Reminders and escalations are taken by whichever process finds
        // them due first, on every store: their times are in the store.
        let steps = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(steps);
        // Result callbacks likewise: the due attempts are in the store.
        let callbacks = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(callbacks);
        loop {
            let next = self.lock_deadlines().first().cloned();
            tokio::select! {
                () = &mut shutdown => return,
                () = self.inner.deadline_added.notified() => {}
                changes = crate::elsewhere::next_changes(feed.as_mut()) => match changes {
                    Some(changes) => self.changed_elsewhere(changes).await,
                    None => feed = None,
                },
                () = &mut sweep, if shared => {
                    self.sweep().await;
                    sweep.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = &mut callbacks => {
                    self.send_due_callbacks().await;
                    callbacks.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = &mut steps => {
                    self.take_due_steps().await;
                    steps.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = self.sleep_until_deadline(next.as_ref().map(|(at, _)| *at)) => {
                    if let Some((at, id)) = next {
                        self.lock_deadlines().remove(&(at, id.clone()));
                        match self.expire(&id).await {
                            Ok(()) => {
                                failures.remove(&id);
                            }
                            Err(error) => {
                                let attempt = failures.entry(id.clone()).or_insert(0);
                                let pause = backoff(*attempt).min(EXPIRY_RETRY_MAX);
                                *attempt += 1;
                                warn!(question = %id, %error, retry_in = ?pause, "could not expire a question; trying again");
                                let retry_at = self.inner.clock.after(pause);
                                self.lock_deadlines().insert((retry_at, id));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Expires every question that is due, whoever asked it, in batches;
    /// then delivers the prompts that their asking replica has left
    /// undelivered for [`REDELIVER_AFTER`] (it died, most likely): one
    /// replica each, the one that takes the question's `deliver:<id>` lease.
    pub(super) async fn sweep(&self) {
        self.expire_due().await;
        self.catch_up_waits().await;
        let now = self.inner.clock.now();
        let asked_before = now.saturating_sub(millis(REDELIVER_AFTER));
        let left = match self.inner.store.undelivered(asked_before, SWEEP_BATCH).await {
            Ok(left) => left,
            Err(error) => {
                warn!(%error, "could not look for prompts left undelivered; trying again at the next sweep");
                return;
            }
        };
        for record in left {
            let lease = format!("deliver:{}", record.id);
            let until = now.saturating_add(millis(REDELIVER_AFTER));
            // An owner of this attempt's own: the lease is taken only when
            // free, never renewed, so that this replica's next sweep does
            // not deliver again while this delivery is on its way.
            let attempt = format!("sweep-{}", ulid::Ulid::new().to_string().to_lowercase());
            match self.inner.store.try_lease(&lease, &attempt, now, until).await {
                Ok(true) => {
                    info!(question = %record.id, "delivering a prompt its replica left undelivered");
                    self.spawn_deliveries_holding(&record, &attempt);
                }
                Ok(false) => {}
                Err(error) => warn!(question = %record.id, %error, "could not take a prompt's delivery over"),
            }
        }
    }

    /// Expires every question that is due, whoever asked it, in batches.
    pub(super) async fn expire_due(&self) {
        loop {
            let resolution = self.resolution(QuestionStatus::Expired, Some("expired"));
            match self.inner.store.expire_due(&resolution, SWEEP_BATCH).await {
                Ok(expired) => {
                    for record in &expired {
                        self.ended(record);
                    }
                    if expired.len() < SWEEP_BATCH as usize {
                        return;
                    }
                }
                Err(error) => {
                    warn!(%error, "could not expire the questions that are due; trying again at the next sweep");
                    return;
                }
            }
        }
    }

    pub(super) async fn sleep_until_deadline(&self, at: Option<Timestamp>) {
        match at {
            Some(at) => self.inner.clock.sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    pub(crate) fn add_deadline(&self, at: Timestamp, id: QuestionId) {
        self.lock_deadlines().insert((at, id));
        self.inner.deadline_added.notify_one();
    }

    pub(crate) fn lock_deadlines(&self) -> std::sync::MutexGuard<'_, BTreeSet<(Timestamp, QuestionId)>> {
        // The set stays consistent even if a holder panicked: every update is one insert or remove.
        self.inner.deadlines.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
