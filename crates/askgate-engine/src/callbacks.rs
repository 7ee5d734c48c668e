//! Result callbacks: when a question ends, its result is sent to the URL
//! its agent configured, by a [`CallbackSender`] the binary gives (the
//! engine does no HTTP). The callback is stored with the question, in the
//! insert's transaction, and armed in the write that ends it; every process's
//! sweep takes the due attempts under a lease ([`Store::callbacks_due`]), so
//! one process sends each, across restarts and replicas; each attempt is
//! recorded, a 2xx ends delivery, and failures are tried again with backoff
//! until [`CALLBACK_WINDOW`] after the end.
//!
//! [`Store::callbacks_due`]: askgate_store::Store::callbacks_due

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use askgate_core::QuestionId;
use askgate_store::{CallbackAttempt, CallbackStatus, DueCallback, NewCallback, QuestionRecord};
use async_trait::async_trait;
use tracing::{info, warn};

use crate::{Engine, NewQuestion};

/// How long after a question ends its callback is tried: a receiver down
/// for a day still gets it.
pub const CALLBACK_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How long a sweep holds the attempts it took: past it (the process died
/// sending) another sweep takes them. Twice the longest a send may take
/// (the binary's sender gives up after 15 s).
pub const CALLBACK_LEASE: Duration = Duration::from_secs(30);

/// The most callbacks one sweep takes.
const CALLBACK_BATCH: u32 = 20;

/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(10 * 60);

/// What sends one callback attempt (the binary's HTTP client, signed).
#[async_trait]
pub trait CallbackSender: Send + Sync + 'static {
    /// sends `question`'s result for `agent` to `url`, as the delivery
    /// `webhook_id` (the same on every attempt): the receiver's HTTP status
    /// when it answered, or why it did not.
    async fn send(&self, agent: &str, url: &str, webhook_id: &str, question: &QuestionRecord) -> Result<u16, String>;
}

/// The callbacks an engine sends: by whom, and each agent's URL.
#[derive(Clone)]
pub(crate) struct Callbacks {
    pub(crate) sender: Arc<dyn CallbackSender>,
    /// Each agent's `callback_url`, by agent name.
    pub(crate) urls: HashMap<String, String>,
}

/// The `webhook-id` of `id`'s callback: one delivery per question, the same
/// on every attempt, so that a receiver drops a repeat.
pub fn webhook_id(id: &QuestionId) -> String {
    format!("msg_{id}")
}

/// The pause before the attempt after `attempts` failed ones: the adapter's
/// backoff (0.5 s doubling to 32 s), then doubling on to [`MAX_PAUSE`].
pub(crate) fn pause_after(attempts: u32) -> Duration {
    let early = askgate_core::backoff::backoff(attempts.saturating_sub(1));
    if attempts <= 7 {
        return early;
    }
    (early * 2_u32.saturating_pow(attempts - 7)).min(MAX_PAUSE)
}

impl Engine {
    /// Sets the sender of result callbacks and each agent's URL.
    #[must_use]
    pub fn with_callbacks(self, sender: Arc<dyn CallbackSender>, urls: HashMap<String, String>) -> Self {
        *self
            .inner
            .callbacks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Callbacks { sender, urls });
        self
    }

    fn callbacks(&self) -> Option<Callbacks> {
        self.inner
            .callbacks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `id`'s callback attempts so far; `None` when its result is sent
    /// nowhere.
    pub async fn callback_attempts(&self, id: &QuestionId) -> Result<Option<Vec<CallbackAttempt>>, crate::EngineError> {
        Ok(self.inner.store.callback_attempts(id).await?)
    }

    /// The callback `new` is stored with: its own URL, else its agent's,
    /// if either.
    pub(crate) fn callback_for(&self, new: &NewQuestion) -> Option<NewCallback> {
        // The agent's URL is looked up under the lock: every ask comes here,
        // and cloning the whole map of URLs for one of them is not needed.
        let url = new.callback_url.clone().or_else(|| {
            self.inner
                .callbacks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()?
                .urls
                .get(&new.agent)
                .cloned()
        })?;
        Some(NewCallback {
            url,
            window_ms: i64::try_from(CALLBACK_WINDOW.as_millis()).unwrap_or(i64::MAX),
        })
    }

    /// Sends the callback attempts due now (the sweep's, each second).
    pub(crate) async fn send_due_callbacks(&self) {
        let Some(callbacks) = self.callbacks() else {
            return;
        };
        let now = self.inner.clock.now();
        let lease = now + i64::try_from(CALLBACK_LEASE.as_millis()).unwrap_or(i64::MAX);
        let due = match self.inner.store.callbacks_due(now, lease, CALLBACK_BATCH).await {
            Ok(due) => due,
            Err(error) => {
                warn!(channel = "callback", %error, "could not look for callbacks due; trying again at the next sweep");
                return;
            }
        };
        for callback in due {
            let (engine, sender) = (self.clone(), callbacks.sender.clone());
            // Each attempt on its own: a slow receiver holds up no other.
            tokio::spawn(async move { engine.attempt(sender.as_ref(), callback).await });
        }
    }

    async fn attempt(&self, sender: &dyn CallbackSender, callback: DueCallback) {
        let record = match self.inner.store.get(&callback.question_id).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(error) => {
                // The lease runs out and the next sweep tries again.
                warn!(channel = "callback", question = %callback.question_id, %error, "could not read the question of a callback");
                return;
            }
        };
        let number = u32::try_from(callback.attempts.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        let id = webhook_id(&record.id);
        let sent = sender.send(&record.agent, &callback.url, &id, &record).await;
        let at = self.inner.clock.now();
        let (status, http_status, next) = match sent {
            Ok(code) if (200..300).contains(&code) => (CallbackStatus::Delivered, Some(code), None),
            failed => {
                let next = at + i64::try_from(pause_after(number).as_millis()).unwrap_or(i64::MAX);
                let http_status = failed.as_ref().ok().copied();
                let reason = match &failed {
                    Ok(code) => format!("HTTP {code}"),
                    Err(reason) => reason.clone(),
                };
                if next > callback.until {
                    warn!(channel = "callback", question = %record.id, attempt = number, %reason, "the callback failed and its time is over: giving up");
                    (CallbackStatus::GaveUp, http_status, None)
                } else {
                    info!(channel = "callback", question = %record.id, attempt = number, %reason, "the callback failed; trying again");
                    (CallbackStatus::Failed, http_status, Some(next))
                }
            }
        };
        let attempt = CallbackAttempt {
            attempt: number,
            status,
            http_status,
            at,
        };
        if let Err(error) = self.inner.store.record_callback(&record.id, &attempt, next).await {
            // Not recorded: the lease runs out and it is sent again, which
            // the receiver drops by its webhook-id if this one arrived.
            warn!(channel = "callback", question = %record.id, %error, "could not record a callback attempt");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_from_half_a_second_to_ten_minutes() {
        assert_eq!(pause_after(1), Duration::from_millis(500));
        assert_eq!(pause_after(2), Duration::from_secs(1));
        assert_eq!(pause_after(7), Duration::from_secs(32));
        assert_eq!(pause_after(8), Duration::from_secs(64));
        assert_eq!(pause_after(20), MAX_PAUSE);
    }
}
