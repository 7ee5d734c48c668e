//! Durable storage of questions: the [`Store`] trait the engine talks to, and
//! its SQLite implementation ([`SqliteStore`], the embedded default).
//!
//! The store owns persistence and the rules that must hold across processes:
//! a question is written before it is sent; a resolution is a compare-and-set
//! from `pending` (the first valid answer wins, whichever replica sees it);
//! one pending question per agent session. It does not render, read replies
//! or talk to platforms.
//!
//! A PostgreSQL implementation shared by several replicas implements the same
//! trait: every rule above is a single SQL statement (a partial unique index,
//! an `UPDATE … WHERE status = 'pending'`), so it holds across processes too.
//! Cross-replica wake-ups (LISTEN/NOTIFY) will be added beside the trait then.

mod record;
mod sqlite;

pub use record::{QuestionRecord, QuestionStatus, Resolution, Timestamp};
pub use sqlite::SqliteStore;

use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::{Delivery, MessageRef};
use async_trait::async_trait;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The agent session already has a pending question (spec §2).
    #[error("session {session} already has a pending question ({pending})")]
    SessionBusy {
        /// The session.
        session: String,
        /// The question that is pending there.
        pending: QuestionId,
    },
    /// A question with this id exists already.
    #[error("question {0} exists already")]
    Duplicate(QuestionId),
    /// A stored value could not be read back (a corrupt or foreign row).
    #[error("stored data could not be read: {0}")]
    Corrupt(String),
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("database migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
}

/// Persistence of questions, as the engine needs it.
///
/// Every method is one transaction; none is allowed to leave a question half
/// written. Implementations must be safe to share between tasks.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Stores a new pending question. Fails with [`StoreError::SessionBusy`]
    /// when the same agent session (`agent`, `session_id`) has a pending one.
    async fn insert(&self, question: &QuestionRecord) -> Result<(), StoreError>;

    /// The question with this id.
    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError>;

    /// Records where a question was delivered (a complete or a partial
    /// [`Delivery`]), makes the conversation of its first message the
    /// question's conversation, and indexes each delivered message so that
    /// replies to it find the question. Returns whether the question was
    /// still pending then: if so, whoever ends it later sees the delivery and
    /// edits the message; if not, it ended while the prompt was on its way,
    /// and the caller must.
    async fn set_delivery(&self, id: &QuestionId, delivery: &Delivery) -> Result<bool, StoreError>;

    /// Indexes one more message as belonging to a question (a force-reply).
    async fn attach_message(&self, id: &QuestionId, message: &MessageRef) -> Result<(), StoreError>;

    /// The question a message on `channel` belongs to.
    async fn question_for_message(&self, channel: &str, message: &MessageRef)
    -> Result<Option<QuestionId>, StoreError>;

    /// The newest pending question delivered to `conversation` on `channel`.
    async fn newest_pending_in_conversation(
        &self,
        channel: &str,
        conversation: &str,
    ) -> Result<Option<QuestionId>, StoreError>;

    /// Saves the partial answers of a pending multi-question prompt. Returns
    /// false (and changes nothing) when the question is no longer pending.
    async fn save_progress(&self, id: &QuestionId, progress: &Answers) -> Result<bool, StoreError>;

    /// Resolves a pending question. Returns the updated record when this call
    /// resolved it, `None` when it was no longer pending: the first
    /// resolution wins and later ones change nothing. A person's resolution
    /// (answered, skipped) also needs the question not yet due
    /// (`expires_at > resolution.at`): an answer that comes after the
    /// deadline, before the timer fired, is `None` too.
    async fn resolve(&self, id: &QuestionId, resolution: &Resolution) -> Result<Option<QuestionRecord>, StoreError>;

    /// Ended, delivered questions whose message is not yet edited into its
    /// summary (the process stopped in between), oldest first.
    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Records that an ended question's message now shows its summary.
    async fn mark_finished(&self, id: &QuestionId) -> Result<(), StoreError>;

    /// Every pending question, oldest first (timers on start).
    async fn pending(&self) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Pending questions addressed to `recipient`, oldest first.
    async fn pending_for_recipient(&self, recipient: &str) -> Result<Vec<QuestionRecord>, StoreError>;

    /// The newest questions addressed to `recipient`, any status, newest first.
    async fn recent_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Pending questions of one agent run, oldest first.
    async fn pending_in_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Remembers an inbound platform event; true the first time it is seen,
    /// false for a redelivery.
    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError>;

    /// Whether an inbound platform event was recorded already (checked
    /// before applying it; [`Store::record_event`] follows once it is applied).
    async fn event_seen(&self, channel: &str, event_id: &str) -> Result<bool, StoreError>;

    /// A small named value askgate keeps (generated secrets, a polling offset).
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Sets a named value.
    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// Whether the database answers (readiness).
    async fn ping(&self) -> Result<(), StoreError>;
}
