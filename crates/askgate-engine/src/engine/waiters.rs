//! Agents waiting for an answer: one wake-up per question, woken by the
//! resolution that ends it (with the ended record, so an answer costs no
//! second read).

use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use askgate_core::QuestionId;
use askgate_store::QuestionRecord;
use tokio::sync::Notify;

use super::{Engine, EngineError};

/// The agents waiting for one question: woken when it ends, with the ended
/// record when the resolution that woke them had it.
#[derive(Default)]
pub(super) struct Waiter {
    pub(super) woken: Notify,
    pub(super) ended: OnceLock<QuestionRecord>,
}

impl Engine {
    /// The question with this id.
    pub async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, EngineError> {
        Ok(self.inner.store.get(id).await?)
    }

    /// The question once it has ended, or as it is after `max` has passed.
    pub async fn wait(&self, id: &QuestionId, max: Duration) -> Result<QuestionRecord, EngineError> {
        self.wait_if(id, max, |_| true).await
    }

    /// [`Engine::wait`] for a question that `agent` asked: another's is
    /// [`EngineError::NotFound`]. One store read where a check before the
    /// wait would take two.
    pub async fn wait_for_agent(
        &self,
        agent: &str,
        id: &QuestionId,
        max: Duration,
    ) -> Result<QuestionRecord, EngineError> {
        self.wait_if(id, max, |record| record.agent == agent).await
    }

    /// Waits for a question whose first read passes `check` (else
    /// `NotFound`). The question is read once; the resolution that wakes the
    /// wait hands over the ended record, so an answer costs no second read.
    pub(super) async fn wait_if(
        &self,
        id: &QuestionId,
        max: Duration,
        check: impl Fn(&QuestionRecord) -> bool,
    ) -> Result<QuestionRecord, EngineError> {
        let waiter = self.waiter(id);
        let deadline = self.inner.clock.sleep(max);
        tokio::pin!(deadline);
        let mut first = true;
        loop {
            // Registered before the store is read, so that a resolution in
            // between is not missed.
            let notified = waiter.woken.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(ended) = waiter.ended.get() {
                return Ok(ended.clone());
            }
            // A question just asked here, as written, unless it ended or
            // changed since (`fresh`): its first read, without the store.
            let kept = if first && !max.is_zero() {
                self.inner.fresh.take(id)
            } else {
                None
            };
            let found = match kept {
                Some(record) => Some(record),
                None => self.get(id).await?,
            }
            .filter(|record| !first || check(record));
            let Some(record) = found else {
                // An unknown id, or another agent's question: nobody may
                // wait here, so the entry made above must not stay behind.
                self.forget_waiter(id, &waiter);
                return Err(EngineError::NotFound);
            };
            first = false;
            if record.status.is_final() {
                // Nobody waits on an ended question beyond this read: drop its entry.
                self.wake_waiters(id, None);
                return Ok(record);
            }
            if max.is_zero() {
                return Ok(record);
            }
            tokio::select! {
                () = &mut notified => {
                    if let Some(ended) = waiter.ended.get() {
                        return Ok(ended.clone());
                    }
                }
                () = &mut deadline => return self.get(id).await?.ok_or(EngineError::NotFound),
            }
        }
    }

    pub(super) fn waiter(&self, id: &QuestionId) -> Arc<Waiter> {
        let mut waiters = self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        waiters.entry(id.clone()).or_default().clone()
    }

    /// Drops `id`'s entry if `waiter` is it and nobody else holds it (the
    /// map and `waiter` are its only two holders, checked under the lock
    /// every new waiter takes).
    pub(super) fn forget_waiter(&self, id: &QuestionId, waiter: &Arc<Waiter>) {
        let mut waiters = self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if waiters
            .get(id)
            .is_some_and(|entry| Arc::ptr_eq(entry, waiter) && Arc::strong_count(waiter) == 2)
        {
            waiters.remove(id);
        }
    }

    /// How many questions have agents waiting on them.
    pub fn waiting(&self) -> usize {
        self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Wakes the agents waiting for `id`, handing them the ended record when
    /// the caller has it; it has ended, so none will wait again.
    /// Whether an agent waits on `id` here.
    pub(crate) fn is_waited(&self, id: &QuestionId) -> bool {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// Drops the record of a question just asked here (`fresh`): another
    /// process changed it.
    pub(crate) fn forget_fresh(&self, id: &QuestionId) {
        self.inner.fresh.forget(id);
    }

    /// Drops every record of questions just asked here: the change feed
    /// missed changes.
    pub(crate) fn forget_all_fresh(&self) {
        self.inner.fresh.forget_all();
    }

    /// The questions agents wait on here.
    pub(crate) fn waited(&self) -> Vec<QuestionId> {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    pub(crate) fn wake_waiters(&self, id: &QuestionId, ended: Option<&QuestionRecord>) {
        // It ended: a wait from now on reads it.
        self.inner.fresh.forget(id);
        let waiter = self
            .inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if let Some(waiter) = waiter {
            if let Some(ended) = ended {
                // Set once: an entry is removed by the first wake.
                let _ = waiter.ended.set(ended.clone());
            }
            waiter.woken.notify_waiters();
        }
    }
}
