//! [`PgStore`]: the store of `mod.rs` ([`Pg`]), each write's outcome noted
//! for readiness on the way out (`crate::readiness` has the rule), and
//! [`Store::ping`] following the writes. Reads pass through untouched.

use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::MessageRef;
use async_trait::async_trait;

use super::{Pg, PgStore};
use crate::readiness::{PROBE_BYTES, PROBE_KEY, Verdict};
use crate::steps::StepWrite;
use crate::surfaces::SurfaceWrite;
use crate::{
    Change, EventKey, ForEvent, InsertRules, Inserted, PendingDeadline, ProgressSaved, Pruned, QuestionRecord,
    Resolution, Store, StoreError, Timestamp,
};

impl PgStore {
    /// A write's `outcome`, noted for readiness.
    fn noted<T>(&self, outcome: Result<T, StoreError>) -> Result<T, StoreError> {
        self.readiness.note(&outcome);
        outcome
    }
}

impl Pg {
    /// Readiness's probe: the [`PROBE_KEY`] setting rewritten with
    /// [`PROBE_BYTES`] of random text (md5 of random numbers: text that
    /// TOAST cannot squeeze to nothing), so that it needs the room of a
    /// large row.
    async fn probe(&self) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO settings (key, value) \
             SELECT $1, string_agg(md5(random()::text), '') FROM generate_series(1, $2 / 32) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(PROBE_KEY)
        .bind(i64::from(PROBE_BYTES))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[async_trait]
impl Store for PgStore {
    async fn insert_with(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        self.noted(self.inner.insert_with(question, rules).await)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn write_surface(
        &self,
        id: &QuestionId,
        channel: &str,
        write: SurfaceWrite<'_>,
    ) -> Result<Option<QuestionRecord>, StoreError> {
        self.noted(self.inner.write_surface(id, channel, write).await)
    }

    async fn take_step(&self, id: &QuestionId, write: StepWrite<'_>) -> Result<Option<QuestionRecord>, StoreError> {
        self.noted(self.inner.take_step(id, write).await)
    }

    async fn steps_due(&self, now: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.steps_due(now, limit).await
    }

    async fn attach_message(&self, id: &QuestionId, channel: &str, message: &MessageRef) -> Result<(), StoreError> {
        self.noted(self.inner.attach_message(id, channel, message).await)
    }

    async fn question_for_message(
        &self,
        channel: &str,
        message: &MessageRef,
    ) -> Result<Option<QuestionId>, StoreError> {
        self.inner.question_for_message(channel, message).await
    }

    async fn newest_pending_in_conversation(
        &self,
        channel: &str,
        conversation: &str,
    ) -> Result<Option<QuestionId>, StoreError> {
        self.inner.newest_pending_in_conversation(channel, conversation).await
    }

    async fn save_progress(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
    ) -> Result<ProgressSaved, StoreError> {
        self.noted(self.inner.save_progress(id, read, progress).await)
    }

    async fn resolve(&self, id: &QuestionId, resolution: &Resolution) -> Result<Option<QuestionRecord>, StoreError> {
        self.noted(self.inner.resolve(id, resolution).await)
    }

    async fn resolve_for_event(
        &self,
        id: &QuestionId,
        resolution: &Resolution,
        event: EventKey<'_>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, StoreError> {
        self.noted(self.inner.resolve_for_event(id, resolution, event).await)
    }

    async fn save_progress_for_event(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
        event: EventKey<'_>,
    ) -> Result<ForEvent<ProgressSaved>, StoreError> {
        self.noted(self.inner.save_progress_for_event(id, read, progress, event).await)
    }

    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.unfinished().await
    }

    async fn pending(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.pending().await
    }

    async fn pending_deadlines(
        &self,
        after: Option<&(Timestamp, QuestionId)>,
        limit: u32,
    ) -> Result<Vec<PendingDeadline>, StoreError> {
        self.inner.pending_deadlines(after, limit).await
    }

    async fn count_pending(&self) -> Result<u64, StoreError> {
        self.inner.count_pending().await
    }

    async fn undelivered(&self, created_before: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.undelivered(created_before, limit).await
    }

    async fn undelivered_since(&self, channel: &str, since: Timestamp) -> Result<bool, StoreError> {
        self.inner.undelivered_since(channel, since).await
    }

    async fn pending_for_recipients(
        &self,
        recipients: &[String],
        after: Option<&QuestionId>,
        limit: u32,
    ) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.pending_for_recipients(recipients, after, limit).await
    }

    async fn count_pending_for_recipient(&self, recipient: &str) -> Result<u64, StoreError> {
        self.inner.count_pending_for_recipient(recipient).await
    }

    async fn ended_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.ended_for_recipient(recipient, limit).await
    }

    async fn pending_in_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.pending_in_run(agent, run_id).await
    }

    async fn ended_among(&self, ids: &[QuestionId]) -> Result<Vec<QuestionRecord>, StoreError> {
        self.inner.ended_among(ids).await
    }

    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        self.noted(self.inner.record_event(channel, event_id).await)
    }

    async fn event_seen(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        self.inner.event_seen(channel, event_id).await
    }

    async fn prune(&self, ended_before: Timestamp, limit: u32) -> Result<Pruned, StoreError> {
        self.noted(self.inner.prune(ended_before, limit).await)
    }

    async fn expire_due(&self, resolution: &Resolution, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        self.noted(self.inner.expire_due(resolution, limit).await)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        self.inner.changes()
    }

    async fn try_lease(&self, name: &str, owner: &str, now: Timestamp, until: Timestamp) -> Result<bool, StoreError> {
        self.noted(self.inner.try_lease(name, owner, now, until).await)
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<(), StoreError> {
        self.noted(self.inner.release_lease(name, owner).await)
    }

    async fn set_setting_leased(
        &self,
        key: &str,
        value: &str,
        lease: &str,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.noted(self.inner.set_setting_leased(key, value, lease, owner, now).await)
    }

    async fn callbacks_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<crate::DueCallback>, StoreError> {
        self.noted(self.inner.callbacks_due(now, lease_until, limit).await)
    }

    async fn record_callback(
        &self,
        id: &QuestionId,
        attempt: &crate::CallbackAttempt,
        next: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.noted(self.inner.record_callback(id, attempt, next).await)
    }

    async fn callback_attempts(&self, id: &QuestionId) -> Result<Option<Vec<crate::CallbackAttempt>>, StoreError> {
        self.inner.callback_attempts(id).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.setting(key).await
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.noted(self.inner.set_setting(key, value).await)
    }

    async fn insert_setting(&self, key: &str, value: &str) -> Result<bool, StoreError> {
        self.noted(self.inner.insert_setting(key, value).await)
    }

    /// The database answers and is a primary ([`Pg`]'s ping), and the rule
    /// of `crate::readiness`, whose probe is [`Pg::probe`].
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await?;
        match self.readiness.verdict() {
            Verdict::Ready => Ok(()),
            Verdict::NotReady(error) => Err(error),
            Verdict::Probe(ticket) => {
                let outcome = self.inner.probe().await;
                self.readiness.probed(ticket, outcome)
            }
        }
    }

    fn write_failures(&self) -> crate::WriteFailures {
        self.readiness.failures()
    }
}
