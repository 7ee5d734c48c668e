//! What other processes on a shared store changed, as this engine follows
//! it ([`askgate_store::Store::changes`]): timers kept for questions asked
//! elsewhere, waits here ended by answers given elsewhere, live views told.
//!
//! Changes are taken in batches (whatever the feed holds when the timer
//! task gets to it), and the questions that ended for agents waiting here
//! are read in one statement per batch ([`askgate_store::Store::ended_among`]):
//! under load one read serves many answers instead of one read each in a
//! queue. A batch that names one such question reads it by id instead,
//! with this process's other reads by id (see `end_wait_told`). The batch read,
//! every sweep, catches up with changes whose notification never came (a
//! writer killed between its commit and its notification).

use std::collections::HashSet;

use askgate_core::QuestionId;
use askgate_store::{Change, QuestionRecord};
use tokio::sync::broadcast;
use tracing::warn;

use crate::Engine;
use crate::engine::Update;

/// The most changes taken in one batch.
const BATCH: usize = 256;

/// The most questions one read asks for.
const READ_BATCH: usize = 100;

/// The next changes of a feed: the first to come and whatever else it holds
/// then (at most [`BATCH`]); `None` once it is closed; never, without one.
pub(crate) async fn next_changes(feed: Option<&mut broadcast::Receiver<Change>>) -> Option<Vec<Change>> {
    use broadcast::error::{RecvError, TryRecvError};
    let Some(feed) = feed else {
        return std::future::pending().await;
    };
    let first = match feed.recv().await {
        Ok(change) => change,
        // Fell behind: what was dropped is not known.
        Err(RecvError::Lagged(_)) => Change::Missed,
        Err(RecvError::Closed) => return None,
    };
    let mut changes = vec![first];
    while changes.len() < BATCH {
        match feed.try_recv() {
            Ok(change) => changes.push(change),
            Err(TryRecvError::Lagged(_)) => changes.push(Change::Missed),
            Err(TryRecvError::Empty | TryRecvError::Closed) => break,
        }
    }
    Some(changes)
}

impl Engine {
    /// What other processes changed ([`Change`]): a question asked there
    /// gets a timer here too (whichever replica's timer fires first expires
    /// it, the others find it ended); one ended there wakes the agents
    /// waiting here with the ended record (the process that ended it edits
    /// the message). Live views hear of both. After [`Change::Missed`] the
    /// questions with agents waiting here are read again, and live views
    /// are told to re-read what they show.
    pub(crate) async fn changed_elsewhere(&self, changes: Vec<Change>) {
        // The notification says enough for the timers; a question is read
        // only for agents waiting on it here, or for live views.
        let watched = self.inner.changes.receiver_count() > 0;
        let mut ended_waits: Vec<QuestionId> = Vec::new();
        let mut for_views: Vec<QuestionId> = Vec::new();
        let mut missed = false;
        for change in changes {
            match change {
                Change::Question(question) => {
                    // Changed elsewhere: a wait from now on reads it (before
                    // `is_waited`, which a wait that took it already passes).
                    self.forget_fresh(&question.id);
                    if question.status.is_final() {
                        self.lock_deadlines()
                            .remove(&(question.expires_at, question.id.clone()));
                        if self.is_waited(&question.id) {
                            ended_waits.push(question.id.clone());
                        }
                    } else {
                        self.add_deadline(question.expires_at, question.id.clone());
                    }
                    if watched {
                        for_views.push(question.id);
                    }
                }
                Change::Missed => {
                    missed = true;
                    self.forget_all_fresh();
                }
                _ => {}
            }
        }
        let mut told = if missed {
            let _ = self.inner.changes.send(Update::Missed);
            self.end_waits(&self.waited()).await
        } else if let [id] = ended_waits.as_slice() {
            self.end_wait_told(id).await
        } else {
            self.end_waits(&ended_waits).await
        };
        // Live views hear of every change (once each), pending ones too.
        // The reads go out together, so that the store runs them as one
        // statement (its reads by id are batched): one at a time, a busy
        // feed outran them and lagged.
        let mut seen = HashSet::new();
        for_views.retain(|id| !told.contains(id) && seen.insert(id.clone()));
        let reads = futures_util::future::join_all(for_views.iter().map(|id| self.get(id))).await;
        for (id, read) in for_views.iter().zip(reads) {
            let record = match read {
                Ok(Some(record)) => record,
                // Pruned meanwhile: nothing to tell.
                Ok(None) => continue,
                Err(error) => {
                    warn!(question = %id, %error, "could not read a question another replica changed");
                    continue;
                }
            };
            if record.status.is_final() {
                self.end_wait(record, &mut told);
            } else {
                self.add_deadline(record.expires_at, record.id.clone());
                self.publish(record);
            }
        }
    }

    /// Ends the waits on questions that ended elsewhere without this
    /// process hearing of it: another replica was killed between its commit
    /// and its notification. One read of every question waited on here (a
    /// sweep's).
    pub(crate) async fn catch_up_waits(&self) {
        let waited = self.waited();
        self.end_waits(&waited).await;
    }

    /// Wakes the agents waiting on `id`, the one question a batch of
    /// notifications said ended: read by id, a read that joins this
    /// process's other reads by id in one statement (the store batches
    /// them), where [`Engine::end_waits`]'s read is a statement of its own.
    /// It began as a round trip saved (that read was then planned at every
    /// call, two round trips); once it was one round trip too, reading
    /// through `end_waits` again was slower, two replicas at 32 in flight
    /// 0.73–0.74 of one against 0.79–0.81 (the replicas bench, two
    /// alternating pairs). Under load a batch names several, and one read of
    /// them all costs less than a read of each (reading each by id took two
    /// replicas at 32 in flight from 0.80–0.84 of one to 0.70–0.75, in two
    /// runs of three). Found pending (put back) or gone, it is left to the
    /// sweep's re-read. The ids told.
    async fn end_wait_told(&self, id: &QuestionId) -> HashSet<QuestionId> {
        let mut told = HashSet::new();
        match self.get(id).await {
            Ok(Some(record)) if record.status.is_final() => self.end_wait(record, &mut told),
            Ok(_) => {}
            Err(error) => {
                warn!(question = %id, %error, "could not read a question another replica ended; trying again at the next sweep");
            }
        }
        told
    }

    /// Wakes the agents waiting on `record`, which ended, and tells views.
    fn end_wait(&self, record: QuestionRecord, told: &mut HashSet<QuestionId>) {
        self.lock_deadlines().remove(&(record.expires_at, record.id.clone()));
        self.wake_waiters(&record.id, Some(&record));
        told.insert(record.id.clone());
        self.publish(record);
    }

    /// Reads which of `ids` have ended, in reads of [`READ_BATCH`], and wakes
    /// the agents waiting on them with the ended record: the ids told.
    async fn end_waits(&self, ids: &[QuestionId]) -> HashSet<QuestionId> {
        let mut told = HashSet::new();
        for ids in ids.chunks(READ_BATCH) {
            let ended: Vec<QuestionRecord> = match self.inner.store.ended_among(ids).await {
                Ok(ended) => ended,
                Err(error) => {
                    warn!(%error, "could not read the questions waited on here; trying again at the next sweep");
                    break;
                }
            };
            for record in ended {
                self.end_wait(record, &mut told);
            }
        }
        told
    }
}
