//! Durable storage of questions: the [`Store`] trait the engine talks to,
//! and its two implementations — [`SqliteStore`], the embedded default
//! (reads on a pool of sqlx connections, every write on one writer thread
//! that commits the writes waiting together: group commit, one fsync each
//! time, none answered before its commit is durable), and [`PgStore`] on
//! PostgreSQL.
//!
//! The store owns persistence and the rules that must hold across processes:
//! a question is written before it is sent; a resolution is a compare-and-set
//! from `pending` (the first valid answer wins, whichever process sees it);
//! one pending question per agent session; progress saved by compare-and-set;
//! caps on pending questions. Each rule is a statement the database enforces
//! (a partial unique index, an `UPDATE … WHERE status = 'pending'`), so it
//! holds between processes on one database too. It does not render, read
//! replies or talk to platforms, and it never reads the clock: timestamps
//! come from the engine.

mod callbacks;
mod failures;
mod postgres;
mod readiness;
mod record;
mod row;
mod schema;
mod sqlite;
mod steps;
mod surfaces;

pub use callbacks::{CallbackAttempt, CallbackStatus, DueCallback, NewCallback};
pub use failures::{WriteFailure, WriteFailures};
pub use postgres::PgStore;
pub use record::{QuestionRecord, QuestionStatus, Resolution, Step, StepKind, Surface, SurfaceState, Timestamp};
pub use sqlite::SqliteStore;
pub use steps::StepWrite;
pub use surfaces::SurfaceWrite;

use std::path::PathBuf;

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
    /// No question has this id.
    #[error("no question has the id {0}")]
    UnknownQuestion(QuestionId),
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The database cannot take writes now, for the reason it gives (a full
    /// disk, a lock held by another process past the busy timeout, an I/O
    /// error, the store closed).
    #[error("the database cannot save now: {0}")]
    Unavailable(String),
    /// Migrations failed.
    #[error("database migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A newer askgate migrated the database past what this one may run
    /// against: the setting `schema.oldest_compatible` names a migration
    /// this askgate does not know. Nothing was changed.
    #[error(
        "the database schema is at migration {schema}, newer than this askgate knows ({known}), and no longer \
         compatible with it (an askgate that knows migration {needed} or later is needed): upgrade this askgate, \
         or restore the backup taken before the upgrade (what was written since is lost)"
    )]
    SchemaTooNew {
        /// The newest migration applied to the database.
        schema: i64,
        /// The newest migration this askgate knows.
        known: i64,
        /// The oldest migration an askgate must know to run against it.
        needed: i64,
    },
    /// A migration applied to the database differs from this askgate's
    /// migration of the same number (their checksums): one of them was
    /// edited after it was applied. Nothing was changed.
    #[error(
        "database migration failed: migration {version} applied to this database differs from this askgate's \
         migration {version} (it was edited after it was applied, by whoever built one of them); run the \
         askgate that applied it, or restore a backup taken before it ran"
    )]
    MigrationEdited {
        /// The migration.
        version: i64,
    },
    /// The database was migrated by another line of askgate migrations than
    /// this askgate's (a development build's, say): it has a migration this
    /// askgate does not know that is not newer than all it knows, or lacks
    /// one it knows under newer ones. Nothing was changed.
    #[error(
        "the database has migration {unknown} applied, which this askgate does not know{}: it was migrated by \
         an askgate with other migrations than this one's; run that askgate, or restore a backup taken before it ran",
        .missing.map(|missing| format!(", and lacks migration {missing}, which it does")).unwrap_or_default()
    )]
    SchemaDiverged {
        /// An applied migration this askgate does not know.
        unknown: i64,
        /// A migration this askgate knows that is not applied.
        missing: Option<i64>,
    },
    /// The database file was deleted or replaced by another file while the
    /// store had it open: what would be written now would go to a file
    /// nobody will read again, so nothing is written until a restart.
    #[error(
        "the database file {} was deleted or replaced while askgate was running; nothing is saved until askgate is restarted",
        .0.display()
    )]
    FileReplaced(PathBuf),
    /// The database file was changed in place by another program while the
    /// store had it open (a backup or another database copied over it, a
    /// truncation): what would be written now would break the file that is
    /// there, so nothing is written until a restart.
    #[error(
        "the database file {} was changed by another program while askgate was running ({reason}); nothing is saved until askgate is restarted",
        .path.display()
    )]
    FileChanged {
        /// The file.
        path: PathBuf,
        /// What gave the change away ("it was truncated to 0 bytes").
        reason: String,
    },
    /// A cap on pending questions was reached ([`InsertRules`]).
    #[error("{scope} already has {limit} pending questions, the most allowed")]
    TooManyPending {
        /// Whose cap.
        scope: PendingScope,
        /// The cap.
        limit: u32,
    },
    /// The idempotency key was used before, for another request
    /// ([`InsertRules::idempotency`]).
    #[error("idempotency key already used for question {question} with another request")]
    KeyReused {
        /// The question the key belongs to.
        question: QuestionId,
    },
}

impl StoreError {
    /// Whether the error says the database cannot take writes now (a full
    /// disk, a lock held too long, an I/O error, a replaced file) rather than
    /// that the request broke a rule or the stored data is unreadable: the
    /// person or agent may try again once it recovers.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Database(sqlx::Error::RowNotFound) => false,
            Self::Database(_) | Self::Unavailable(_) | Self::FileReplaced(_) | Self::FileChanged { .. } => true,
            _ => false,
        }
    }
}

/// Whose cap on pending questions was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PendingScope {
    /// The asking agent (token) has that many pending.
    Agent(String),
    /// The recipient has that many pending.
    Recipient(String),
}

impl std::fmt::Display for PendingScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Agent(name) => write!(f, "agent \"{name}\""),
            Self::Recipient(name) => write!(f, "recipient \"{name}\""),
        }
    }
}

/// What an insert checks besides the session rule, and what it writes
/// beside the question in the same transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InsertRules {
    /// The agent's idempotency key for this request and a fingerprint of the
    /// request: the same key with the same fingerprint finds the question
    /// stored the first time ([`Inserted::Existing`]); with another
    /// fingerprint it is [`StoreError::KeyReused`]. Keys are the agent's own:
    /// two agents may use the same key.
    pub idempotency: Option<IdempotencyKey>,
    /// At most this many pending questions per agent.
    pub max_pending_per_agent: Option<u32>,
    /// At most this many pending questions per recipient.
    pub max_pending_per_recipient: Option<u32>,
    /// The question's result callback, recorded with it; armed at once
    /// when the question is stored already ended.
    pub callback: Option<NewCallback>,
}

/// An agent's idempotency key and what it was sent with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The key as the agent sent it.
    pub key: String,
    /// A fingerprint of the request the key came with.
    pub fingerprint: String,
}

/// What [`Store::insert_with`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    /// The question was stored.
    New,
    /// The idempotency key was seen before with the same request: this is
    /// the question stored then (any status), and nothing was written.
    Existing(Box<QuestionRecord>),
}

/// A pending question as its timer needs it: what start-up keeps in memory
/// instead of the whole record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingDeadline {
    /// When it expires.
    pub expires_at: Timestamp,
    /// The question.
    pub id: QuestionId,
    /// Whether its prompt was delivered in full (or given up on) on every
    /// surface; if not, start-up reads the whole record and delivers the rest.
    pub delivered: bool,
}

/// What [`Store::save_progress`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProgressSaved {
    /// The progress is saved.
    Saved,
    /// The question is no longer pending (or does not exist): nothing saved.
    Ended,
    /// Another reply saved progress since it was read: nothing saved.
    Changed,
}

/// An inbound platform event (a tap, a reply), recorded as seen in the same
/// transaction as the change it makes ([`Store::resolve_for_event`],
/// [`Store::save_progress_for_event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKey<'a> {
    /// The channel it came through.
    pub channel: &'a str,
    /// The platform's id of the event.
    pub event_id: &'a str,
}

/// What a write on behalf of an inbound event did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForEvent<T> {
    /// The event was new: this is what the write did.
    Applied(T),
    /// The event was recorded already (another delivery of it was applied):
    /// nothing changed.
    Seen,
}

/// What one [`Store::prune`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Ended questions.
    pub questions: u64,
    /// Inbound events.
    pub events: u64,
}

/// A change the store learned of from another process on the same database
/// ([`Store::changes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// This question was stored, or its status, progress or delivery changed.
    Question(Changed),
    /// The feed was interrupted (its connection was lost and made again):
    /// changes in between are not known, and whoever depends on them reads
    /// again.
    Missed,
}

/// A question another process changed, as its notification tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The question.
    pub id: QuestionId,
    /// Its status after the change.
    pub status: QuestionStatus,
    /// Its deadline.
    pub expires_at: Timestamp,
}

/// Persistence of questions, as the engine needs it.
///
/// Every method is one transaction; none is allowed to leave a question half
/// written. Implementations must be safe to share between tasks.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Stores a new pending question. Fails with [`StoreError::SessionBusy`]
    /// when the same agent session (`agent`, `session_id`) has a pending one.
    async fn insert(&self, question: &QuestionRecord) -> Result<(), StoreError> {
        match self.insert_with(question, &InsertRules::default()).await? {
            Inserted::New => Ok(()),
            Inserted::Existing(existing) => Err(StoreError::Duplicate(existing.id)),
        }
    }

    /// Like [`Store::insert`], in one transaction with the checks of
    /// `rules`: the idempotency key first (a retry finds its question even
    /// when a cap is reached since), then the caps
    /// ([`StoreError::TooManyPending`]), then the session rule.
    async fn insert_with(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError>;

    /// Takes a step of the question's plan ([`StepWrite`]) in one write
    /// that only one caller wins, across processes: the question as written,
    /// or `None` when nothing was taken (taken before, the question ended,
    /// no such question or step).
    async fn take_step(&self, id: &QuestionId, write: StepWrite<'_>) -> Result<Option<QuestionRecord>, StoreError>;

    /// Pending questions with a step of their plan due at `now` or before,
    /// the longest due first, at most `limit`.
    async fn steps_due(&self, now: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Callbacks due at `now` or before and not leased, the longest due
    /// first, at most `limit`, each leased until `lease_until` in the same
    /// write: across processes, one caller takes each.
    async fn callbacks_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<DueCallback>, StoreError>;

    /// Appends `attempt` to `id`'s callback and lifts its lease; `next`: when
    /// the next attempt is due (`None`: none, delivery is over).
    async fn record_callback(
        &self,
        id: &QuestionId,
        attempt: &CallbackAttempt,
        next: Option<Timestamp>,
    ) -> Result<(), StoreError>;

    /// `id`'s callback attempts; `None` when it has no callback.
    async fn callback_attempts(&self, id: &QuestionId) -> Result<Option<Vec<CallbackAttempt>>, StoreError>;

    /// The question with this id.
    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError>;

    /// Records where a question was delivered on its surface on `channel`
    /// (a complete or a partial [`Delivery`]: the surface is
    /// [`SurfaceState::Delivered`] or still [`SurfaceState::Sending`]),
    /// makes the conversation of its first message the surface's
    /// conversation, and indexes each delivered message so that replies to
    /// it find the question. Returns whether the question was still pending
    /// then: if so, whoever ends it later sees the delivery and edits the
    /// message; if not, it ended while the prompt was on its way, and the
    /// caller must.
    async fn set_delivery(&self, id: &QuestionId, channel: &str, delivery: &Delivery) -> Result<bool, StoreError> {
        let record = self
            .write_surface(id, channel, SurfaceWrite::Delivered(delivery))
            .await?;
        let record = record.ok_or_else(|| StoreError::UnknownQuestion(id.clone()))?;
        Ok(record.status == QuestionStatus::Pending)
    }

    /// Records that the question's surface on `channel` could not be
    /// delivered to, for `reason` ([`SurfaceState::Failed`]); the question
    /// as it is then (`None` when there is none), so that the caller sees
    /// whether every surface has failed. Two surfaces failing at once are
    /// serialized: the second sees the first.
    async fn surface_failed(
        &self,
        id: &QuestionId,
        channel: &str,
        reason: &str,
    ) -> Result<Option<QuestionRecord>, StoreError> {
        self.write_surface(id, channel, SurfaceWrite::Failed(reason)).await
    }

    /// One write to the question's surface on `channel`, in one transaction
    /// that holds the question (two surfaces written at once are written one
    /// after the other, the second seeing the first), with an index entry
    /// per message of a delivery. The question as it is after, or `None`
    /// when there is no such question; a surface the question does not have
    /// is [`StoreError::Corrupt`]. [`Store::set_delivery`],
    /// [`Store::surface_failed`] and [`Store::mark_finished`] are made of it.
    async fn write_surface(
        &self,
        id: &QuestionId,
        channel: &str,
        write: SurfaceWrite<'_>,
    ) -> Result<Option<QuestionRecord>, StoreError>;

    /// Indexes one more message as belonging to a question on `channel`
    /// (a force-reply).
    async fn attach_message(&self, id: &QuestionId, channel: &str, message: &MessageRef) -> Result<(), StoreError>;

    /// The question a message on `channel` belongs to.
    async fn question_for_message(&self, channel: &str, message: &MessageRef)
    -> Result<Option<QuestionId>, StoreError>;

    /// The newest pending question with a message in `conversation` on
    /// `channel`.
    async fn newest_pending_in_conversation(
        &self,
        channel: &str,
        conversation: &str,
    ) -> Result<Option<QuestionId>, StoreError>;

    /// Saves the partial answers of a pending multi-question prompt, if its
    /// progress is still `read` (what the caller read and built `progress`
    /// from): a compare-and-set, so that two partial replies read at once
    /// never lose one of them. The caller reads again and retries on
    /// [`ProgressSaved::Changed`].
    async fn save_progress(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
    ) -> Result<ProgressSaved, StoreError>;

    /// Resolves a pending question. Returns the updated record when this call
    /// resolved it, `None` when it was no longer pending: the first
    /// resolution wins and later ones change nothing. A person's resolution
    /// (answered, skipped) also needs the question not yet due
    /// (`expires_at > resolution.at`): an answer that comes after the
    /// deadline, before the timer fired, is `None` too. A question whose
    /// row cannot be read back stays pending and the call fails
    /// ([`StoreError::Corrupt`]): SQLite rolls the write back; PostgreSQL,
    /// whose resolution is one statement committed on its own, puts the
    /// row back as it was with a second one (the only exception to one
    /// transaction a method, for a row written outside askgate).
    async fn resolve(&self, id: &QuestionId, resolution: &Resolution) -> Result<Option<QuestionRecord>, StoreError>;

    /// [`Store::resolve`] on behalf of an inbound event, which is recorded as
    /// seen in the same transaction: two deliveries of one event (a
    /// platform's retry while the first is in flight, to two replicas) can
    /// never both apply; the second is [`ForEvent::Seen`]. The event is
    /// recorded whether or not the question was still pending (either way
    /// it was handled), and not when the write fails.
    async fn resolve_for_event(
        &self,
        id: &QuestionId,
        resolution: &Resolution,
        event: EventKey<'_>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, StoreError>;

    /// [`Store::save_progress`] on behalf of an inbound event, recorded as
    /// seen in the same transaction only when the progress is saved: after
    /// [`ProgressSaved::Changed`] the caller reads again and applies the same
    /// event anew.
    async fn save_progress_for_event(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
        event: EventKey<'_>,
    ) -> Result<ForEvent<ProgressSaved>, StoreError>;

    /// Ended questions with a delivered surface whose messages are not yet
    /// edited into the summary ([`Surface::to_edit`]: the process stopped in
    /// between), oldest first.
    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Records that an ended question's messages on `channel` now show its
    /// summary.
    async fn mark_finished(&self, id: &QuestionId, channel: &str) -> Result<(), StoreError> {
        self.write_surface(id, channel, SurfaceWrite::Finished).await.map(drop)
    }

    /// Every pending question, oldest first.
    async fn pending(&self) -> Result<Vec<QuestionRecord>, StoreError>;

    /// At most `limit` pending questions in deadline order (then by id),
    /// after `after` (exclusive): start-up walks them in bounded pages, and
    /// keeps only what timers need.
    async fn pending_deadlines(
        &self,
        after: Option<&(Timestamp, QuestionId)>,
        limit: u32,
    ) -> Result<Vec<PendingDeadline>, StoreError>;

    /// How many questions are pending.
    async fn count_pending(&self) -> Result<u64, StoreError>;

    /// At most `limit` pending questions asked before `created_before` with
    /// a surface still [`SurfaceState::Sending`] (no delivery recorded, or a
    /// partial one), oldest first: on a shared store, prompts whose asking
    /// replica died before it could deliver them.
    async fn undelivered(&self, created_before: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Whether a question with a surface on `channel` asked after `since` is
    /// pending with no delivery recorded there yet (its prompt may be on its
    /// way).
    async fn undelivered_since(&self, channel: &str, since: Timestamp) -> Result<bool, StoreError>;

    /// At most `limit` pending questions addressed to any of `recipients`
    /// (a person's page: theirs and their groups'), oldest first, after the
    /// question `after` (exclusive) when given: a page shows the first ones
    /// and asks for more after the last it has. A question `after` that no
    /// longer exists starts from the beginning. The order is the store's
    /// own (creation, then insertion), so that paging after any question
    /// lists every one once, however many were asked in one millisecond.
    async fn pending_for_recipients(
        &self,
        recipients: &[String],
        after: Option<&QuestionId>,
        limit: u32,
    ) -> Result<Vec<QuestionRecord>, StoreError>;

    /// How many questions addressed to `recipient` are pending.
    async fn count_pending_for_recipient(&self, recipient: &str) -> Result<u64, StoreError>;

    /// The questions addressed to `recipient` that have ended, the latest
    /// to end first, at most `limit`.
    async fn ended_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Pending questions of one agent run, oldest first.
    async fn pending_in_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Of the questions `ids`, those that have ended (in no order): how a
    /// replica catches up with a change whose notification it never heard
    /// (the writer was killed between its commit and its notification).
    async fn ended_among(&self, ids: &[QuestionId]) -> Result<Vec<QuestionRecord>, StoreError>;

    /// Remembers an inbound platform event; true the first time it is seen,
    /// false for a redelivery.
    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError>;

    /// Whether an inbound platform event was recorded already (checked
    /// before applying it; [`Store::record_event`] follows once it is applied).
    async fn event_seen(&self, channel: &str, event_id: &str) -> Result<bool, StoreError>;

    /// Deletes up to `limit` questions that ended before `ended_before`
    /// (with their message index and idempotency keys), and up to `limit`
    /// inbound events received before it. Pending questions are never
    /// deleted. Returns how many rows went: called again until it returns
    /// less than `limit`, it empties what is due in bounded steps.
    async fn prune(&self, ended_before: Timestamp, limit: u32) -> Result<Pruned, StoreError>;

    /// Expires, in one statement, up to `limit` pending questions due at
    /// `resolution.at` (`expires_at <= at`), in deadline order, skipping
    /// any another process is ending at that moment; the records it expired.
    /// Every process runs it, so a question expires on time when the
    /// process that asked is gone. A row that cannot be read back is
    /// expired all the same and left out of the answer (logged).
    async fn expire_due(&self, resolution: &Resolution, limit: u32) -> Result<Vec<QuestionRecord>, StoreError>;

    /// The changes that other processes make to the same database, as they
    /// commit (never this store's own). `None` when no other process shares
    /// the database (SQLite: one process per file).
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        None
    }

    /// Takes the lease `name` for `owner` until `until`, or keeps it: true
    /// when `owner` holds it now. Taken when it is free, past its `until` at
    /// `now`, or `owner`'s already (a renewal); held by another, it is
    /// false and nothing changes. Times are the callers' clocks, so replicas
    /// need clocks that agree to well within a lease's length.
    async fn try_lease(&self, name: &str, owner: &str, now: Timestamp, until: Timestamp) -> Result<bool, StoreError>;

    /// Gives the lease `name` up, if `owner` holds it, so that another may
    /// take it at once.
    async fn release_lease(&self, name: &str, owner: &str) -> Result<(), StoreError>;

    /// [`Store::set_setting`] only while `owner` holds the lease `lease`
    /// (not past its end at `now`), in one statement: a replica that lost a
    /// platform connection's lease cannot move its cursor back over the new
    /// holder's. Whether it was set.
    async fn set_setting_leased(
        &self,
        key: &str,
        value: &str,
        lease: &str,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// A small named value askgate keeps (generated secrets, a polling offset).
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Sets a named value.
    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// Sets a named value unless it is set already; true when this call set
    /// it. Two processes generating the same secret at once keep one: each
    /// offers its own, and both read back the one that was kept.
    async fn insert_setting(&self, key: &str, value: &str) -> Result<bool, StoreError>;

    /// Whether the store can take writes (readiness): the database answers,
    /// its file is still the one opened (SQLite), and readiness follows the
    /// writes the store was asked to make: a write that failed because the
    /// database could not take it ([`StoreError::is_unavailable`]) makes the
    /// store not ready, with its reason, until a write succeeds. A ping that
    /// finds no write failed since the previous ping tries a 64 KiB write of
    /// its own then, so that readiness comes back once the cause is gone
    /// when no writes come; while writes keep failing it never does (the
    /// whole rule: `readiness.rs`).
    async fn ping(&self) -> Result<(), StoreError>;

    /// How many of the writes that [`Store::ping`] follows failed since the
    /// store was opened, by reason (for metrics; none for a store that does
    /// not count them).
    fn write_failures(&self) -> WriteFailures {
        WriteFailures::default()
    }
}
