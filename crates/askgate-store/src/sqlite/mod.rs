//! The embedded default [`Store`]: one SQLite file in WAL mode.
//!
//! - `mod.rs` (here): the store, its reads on a pool of sqlx connections,
//!   and the hand-over of each write;
//! - [`reads`]: the read of one question by id, on the caller's thread;
//! - [`writer`]: the one writer thread and its group commit;
//! - [`writes`]: each write's SQL, run inside the writer's transaction;
//! - [`health`]: whether the file is still askgate's (replaced at its path,
//!   or changed in place: [`header`]), and the count of commits.
//!
//! Every rule of the trait is one SQL statement or one write of the writer:
//! the one-pending-question rule is a partial unique index, a resolution is
//! an `UPDATE … WHERE status = 'pending'`. Queries are built at run time, so
//! the crate builds without a database; the schema is in
//! `migrations/sqlite`, applied on open after the upgrade policy of
//! `crate::schema` let this askgate run against it.

mod callbacks;
mod header;
mod health;
mod reads;
mod writer;
mod writes;

use std::path::Path;
use std::sync::Arc;

use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::{Delivery, MessageRef};
use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection as _, SqliteConnection};

use self::health::Health;
use self::reads::Readers;
use self::writer::{BUSY_TIMEOUT, Writer};
use self::writes::NewQuestion;
use crate::readiness::{Readiness, Verdict};
use crate::row::{QuestionRow, decode_all, decode_id, encode, question_columns};
use crate::schema;
use crate::steps::{OwnedStep, StepWrite};
use crate::surfaces::SurfaceWrite;
use crate::{
    EventKey, ForEvent, InsertRules, Inserted, PendingDeadline, ProgressSaved, Pruned, QuestionRecord, Resolution,
    Store, StoreError, Timestamp,
};

/// A [`SurfaceWrite`] that owns its values, to cross to the writer thread.
enum Owned {
    Delivered(Delivery),
    Failed(String),
    Finished,
}

/// Connections for reading. WAL lets readers run beside the one writer.
const MAX_READERS: u32 = 4;

/// A `SELECT` of every column a [`QuestionRow`] needs, followed by the rest
/// of the statement. A macro so that the whole statement stays a `&'static
/// str`, which sqlx requires of SQL text.
macro_rules! select_questions {
    ($rest:literal) => {
        concat!("SELECT ", question_columns!(), " FROM questions ", $rest)
    };
}

/// A page of pending questions of the recipients `$which` selects (by
/// `?1`), oldest first, after question `?2` (from the start when it is none
/// or gone), at most `?3`.
macro_rules! pending_after {
    ($which:literal) => {
        concat!(
            "SELECT ",
            question_columns!(),
            " FROM questions WHERE ",
            $which,
            " AND status = 'pending' AND (?2 IS NULL \
             OR NOT EXISTS (SELECT 1 FROM questions WHERE id = ?2) \
             OR (created_at, rowid) > (SELECT created_at, rowid FROM questions WHERE id = ?2)) \
             ORDER BY created_at, rowid LIMIT ?3"
        )
    };
}

/// [`Store`] on a SQLite file.
///
/// Cloning is cheap and shares the connections. Reads run on a pool of
/// sqlx connections, except the read of one question by id, made on the
/// caller's thread (`reads.rs`); every write goes to one writer thread
/// (`writer.rs`), which commits the writes waiting together in one
/// transaction (group commit) and answers each once its commit is durable.
///
/// A write that fails for a reason other than a rule (a full disk, a lock
/// held past the busy timeout, an I/O error) makes [`Store::ping`] not
/// ready until a write succeeds (the rule: `readiness.rs`), and the writer
/// opens a fresh connection for the next one. A database file deleted,
/// replaced or overwritten in place while the store has it open refuses
/// every write until a restart (`health.rs`).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    readers: Arc<Readers>,
    writer: Arc<Writer>,
    health: Arc<Health>,
    readiness: Arc<Readiness>,
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file and its directory when
    /// missing, and brings the schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(sqlx::Error::Io)?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // Readers never write; the writer sets FULL for itself
            // (writer::open says why), and so does the migration.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let mut migrating = SqliteConnection::connect_with(&options).await?;
        // The upgrade policy (`crate::schema`) first: an older askgate
        // runs on a file a newer one migrated only while it is compatible.
        schema::migrate(&mut migrating, sqlx::migrate!("./migrations/sqlite")).await?;
        let identity = identify(&mut migrating).await;
        migrating.close().await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_READERS)
            .connect_with(options)
            .await?;
        let health = Arc::new(Health::open(path, identity)?);
        let readiness = Arc::new(Readiness::default());
        let writer = Writer::start(path, health.clone(), readiness.clone())?;
        Ok(Self {
            pool,
            readers: Arc::new(Readers::new(path)),
            writer: Arc::new(writer),
            health,
            readiness,
        })
    }

    /// How many write transactions this store has committed since it was
    /// opened: each is one fsync of the log (`synchronous = FULL`), however
    /// many writes it held, so the service benchmark divides it by the
    /// cycles it ran.
    pub fn commits(&self) -> u64 {
        self.health.commits()
    }

    /// Finishes the writes sent so far and closes every connection, waiting
    /// for them. Dropping the store closes them too, but in the background.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }
}

impl schema::Migrating for SqliteConnection {
    async fn oldest_compatible(&mut self) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(schema::OLDEST_COMPATIBLE)
            .fetch_optional(self)
            .await
    }
}

#[async_trait]
impl Store for SqliteStore {
    /// [`writes::write_surface`] on the writer thread.
    async fn write_surface(
        &self,
        id: &QuestionId,
        channel: &str,
        write: SurfaceWrite<'_>,
    ) -> Result<Option<QuestionRecord>, StoreError> {
        let (id, channel) = (id.clone(), channel.to_owned());
        let write = match write {
            SurfaceWrite::Delivered(delivery) => Owned::Delivered(delivery.clone()),
            SurfaceWrite::Failed(reason) => Owned::Failed(reason.to_owned()),
            SurfaceWrite::Finished => Owned::Finished,
        };
        self.writer
            .write(move |conn| {
                let write = match &write {
                    Owned::Delivered(delivery) => SurfaceWrite::Delivered(delivery),
                    Owned::Failed(reason) => SurfaceWrite::Failed(reason),
                    Owned::Finished => SurfaceWrite::Finished,
                };
                writes::write_surface(conn, &id, &channel, &write)
            })
            .await
    }

    /// [`writes::take_step`] on the writer thread.
    async fn take_step(&self, id: &QuestionId, write: StepWrite<'_>) -> Result<Option<QuestionRecord>, StoreError> {
        let id = id.clone();
        let write = OwnedStep::from(write);
        self.writer
            .write(move |conn| writes::take_step(conn, &id, &write.as_write()))
            .await
    }

    async fn steps_due(&self, now: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE status = 'pending' AND next_step_at IS NOT NULL AND next_step_at <= ? \
             ORDER BY next_step_at LIMIT ?"
        ))
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    /// Stores the record as given. The engine inserts pending questions; a
    /// record that has ended already is stored too (its `resolved_at` column
    /// is its resolution's time), and neither the session rule nor the caps
    /// apply to it.
    async fn insert_with(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        let new = NewQuestion {
            request: encode(&question.request)?,
            surfaces: encode(&question.surfaces)?,
            progress: encode(&question.progress)?,
            resolution: question.resolution.as_ref().map(encode).transpose()?,
            steps: encode(&question.steps)?,
            record: question.clone(),
        };
        let rules = rules.clone();
        self.writer.write(move |conn| writes::insert(conn, &new, &rules)).await
    }

    /// On the caller's thread ([`reads`]), or on the pool when that read
    /// could not be made.
    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
        if let Ok(row) = self.readers.question(id) {
            return row.map(QuestionRow::decode).transpose();
        }
        let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = ?"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.map(QuestionRow::decode).transpose()
    }

    /// An unknown id is [`StoreError::UnknownQuestion`].
    async fn attach_message(&self, id: &QuestionId, channel: &str, message: &MessageRef) -> Result<(), StoreError> {
        let (id, channel, message) = (id.clone(), channel.to_owned(), message.clone());
        self.writer
            .write(move |conn| writes::attach_message(conn, &id, &channel, &message))
            .await
    }

    async fn question_for_message(
        &self,
        channel: &str,
        message: &MessageRef,
    ) -> Result<Option<QuestionId>, StoreError> {
        let id: Option<String> = sqlx::query_scalar(
            "SELECT question_id FROM messages WHERE channel = ? AND conversation = ? AND message = ?",
        )
        .bind(channel)
        .bind(message.conversation.as_str())
        .bind(message.message.as_str())
        .fetch_optional(&self.pool)
        .await?;
        id.as_deref().map(decode_id).transpose()
    }

    async fn newest_pending_in_conversation(
        &self,
        channel: &str,
        conversation: &str,
    ) -> Result<Option<QuestionId>, StoreError> {
        // The conversation's messages (their primary key's range), each
        // question's row by its key; rowid breaks a tie in created_at: the
        // later insert is the newer.
        let id: Option<String> = sqlx::query_scalar(
            "SELECT q.id FROM messages m JOIN questions q ON q.id = m.question_id \
             WHERE m.channel = ? AND m.conversation = ? AND q.status = 'pending' \
             ORDER BY q.created_at DESC, q.rowid DESC LIMIT 1",
        )
        .bind(channel)
        .bind(conversation)
        .fetch_optional(&self.pool)
        .await?;
        id.as_deref().map(decode_id).transpose()
    }

    async fn save_progress(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
    ) -> Result<ProgressSaved, StoreError> {
        let (read, json) = (read.clone(), encode(progress)?);
        let id = id.clone();
        self.writer
            .write(move |conn| writes::save_progress(conn, &id, &read, &json))
            .await
    }

    /// A resolution whose status is `pending` is a bug in the caller: it
    /// fails a debug assertion, and in a release build it changes nothing
    /// and returns `None` (logged as an error), as if the question had ended
    /// already. It is not an error value because no caller could handle one
    /// better than fixing the call; the question stays pending and its
    /// timer still ends it.
    async fn resolve(&self, id: &QuestionId, resolution: &Resolution) -> Result<Option<QuestionRecord>, StoreError> {
        debug_assert!(
            resolution.status.is_final(),
            "question {id} resolved with status pending"
        );
        if !resolution.status.is_final() {
            tracing::error!(question = %id, "refused a resolution whose status is pending");
            return Ok(None);
        }
        let json = encode(resolution)?;
        let (id, status, at) = (id.clone(), resolution.status, resolution.at);
        self.writer
            .write(move |conn| writes::resolve(conn, &id, status, &json, at))
            .await
    }

    async fn resolve_for_event(
        &self,
        id: &QuestionId,
        resolution: &Resolution,
        event: EventKey<'_>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, StoreError> {
        if !resolution.status.is_final() {
            return self.resolve(id, resolution).await.map(ForEvent::Applied);
        }
        let json = encode(resolution)?;
        let (id, status, at) = (id.clone(), resolution.status, resolution.at);
        let (channel, event_id) = (event.channel.to_owned(), event.event_id.to_owned());
        self.writer
            .write(move |conn| {
                if !writes::record_event(conn, &channel, &event_id)? {
                    return Ok(ForEvent::Seen);
                }
                writes::resolve(conn, &id, status, &json, at).map(ForEvent::Applied)
            })
            .await
    }

    async fn save_progress_for_event(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
        event: EventKey<'_>,
    ) -> Result<ForEvent<ProgressSaved>, StoreError> {
        let (read, json) = (read.clone(), encode(progress)?);
        let id = id.clone();
        let (channel, event_id) = (event.channel.to_owned(), event.event_id.to_owned());
        self.writer
            .write(move |conn| {
                if !writes::record_event(conn, &channel, &event_id)? {
                    return Ok(ForEvent::Seen);
                }
                let saved = writes::save_progress(conn, &id, &read, &json)?;
                if saved != ProgressSaved::Saved {
                    // Not applied: the event stays unseen (the caller reads
                    // again and applies it anew, or it changes nothing).
                    writes::forget_event(conn, &channel, &event_id)?;
                }
                Ok(ForEvent::Applied(saved))
            })
            .await
    }

    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE finished = 0 AND status NOT IN ('pending', 'delivery_failed') ORDER BY created_at, rowid"
        ))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn pending(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows =
            sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE status = 'pending' ORDER BY created_at, rowid"))
                .fetch_all(&self.pool)
                .await?;
        decode_all(rows)
    }

    async fn pending_deadlines(
        &self,
        after: Option<&(Timestamp, QuestionId)>,
        limit: u32,
    ) -> Result<Vec<PendingDeadline>, StoreError> {
        // `questions_status_expires` (status, expires_at) serves both the
        // filter and the order; the row value resumes after the last page.
        // Delivered: no surface is still being sent to.
        let (at, id) = after.map_or((i64::MIN, String::new()), |(at, id)| (*at, id.to_string()));
        let rows: Vec<(Timestamp, String, bool)> = sqlx::query_as(
            "SELECT expires_at, id, NOT EXISTS (SELECT 1 FROM json_each(surfaces) \
             WHERE json_extract(value, '$.state') = 'sending') \
             FROM questions WHERE status = 'pending' AND (expires_at, id) > (?, ?) \
             ORDER BY expires_at, id LIMIT ?",
        )
        .bind(at)
        .bind(id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(expires_at, id, delivered)| {
                let id = QuestionId::parse(&id)
                    .map_err(|_| StoreError::Corrupt(format!("question {id:?}: its id is not a question id")))?;
                Ok(PendingDeadline {
                    expires_at,
                    id,
                    delivered,
                })
            })
            .collect()
    }

    async fn count_pending(&self) -> Result<u64, StoreError> {
        let count: i64 = // Kept by triggers (migration 0004): a row per agent, not a row per question.
        sqlx::query_scalar("SELECT coalesce(sum(pending), 0) FROM pending_counts WHERE scope = 'agent'")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn undelivered(&self, created_before: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE status = 'pending' AND created_at < ? \
             AND EXISTS (SELECT 1 FROM json_each(surfaces) WHERE json_extract(value, '$.state') = 'sending') \
             ORDER BY created_at, rowid LIMIT ?"
        ))
        .bind(created_before)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn undelivered_since(&self, channel: &str, since: Timestamp) -> Result<bool, StoreError> {
        // `questions_status_expires` narrows to pending rows; only those of
        // the last moments are looked at.
        let found: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM questions, json_each(questions.surfaces) AS s \
             WHERE status = 'pending' AND created_at > ?2 AND json_extract(s.value, '$.channel') = ?1 \
             AND json_extract(s.value, '$.state') = 'sending' AND json_extract(s.value, '$.delivery') IS NULL)",
        )
        .bind(channel)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(found)
    }

    async fn pending_for_recipients(
        &self,
        recipients: &[String],
        after: Option<&QuestionId>,
        limit: u32,
    ) -> Result<Vec<QuestionRecord>, StoreError> {
        // `questions_pending_recipient_created` serves the filter and the
        // order for one recipient (the common page: a person in no group);
        // for several, SQLite reads each one's range and sorts what it read.
        // The row value resumes after the last question shown.
        let (sql, which) = match recipients {
            [recipient] => (pending_after!("recipient = ?1"), recipient.clone()),
            // The names as one JSON array: SQLite binds no lists.
            _ => (
                pending_after!("recipient IN (SELECT value FROM json_each(?1))"),
                serde_json::to_string(recipients).map_err(|error| sqlx::Error::Encode(Box::new(error)))?,
            ),
        };
        let rows = sqlx::query_as::<_, QuestionRow>(sql)
            .bind(which)
            .bind(after.map(QuestionId::as_str))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        decode_all(rows)
    }

    async fn count_pending_for_recipient(&self, recipient: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT pending FROM pending_counts WHERE scope = 'recipient' AND who = ?")
            .bind(recipient)
            .fetch_optional(&self.pool)
            .await?
            .unwrap_or(0);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn ended_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        // `questions_ended_recipient` (recipient, resolved_at) of ended rows:
        // however many are pending, the latest ended are one index range.
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE recipient = ? AND status <> 'pending' ORDER BY resolved_at DESC, rowid DESC LIMIT ?"
        ))
        .bind(recipient)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn pending_in_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE agent = ? AND run_id = ? AND status = 'pending' ORDER BY created_at, rowid"
        ))
        .bind(agent)
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn ended_among(&self, ids: &[QuestionId]) -> Result<Vec<QuestionRecord>, StoreError> {
        // The ids as one JSON array: SQLite binds no lists.
        let ids = serde_json::to_string(&ids.iter().map(QuestionId::as_str).collect::<Vec<_>>())
            .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE status <> 'pending' AND id IN (SELECT value FROM json_each(?))"
        ))
        .bind(ids)
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let (channel, event_id) = (channel.to_owned(), event_id.to_owned());
        self.writer
            .write(move |conn| writes::record_event(conn, &channel, &event_id))
            .await
    }

    async fn event_seen(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let seen: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM inbound_events WHERE channel = ? AND event_id = ?)")
                .bind(channel)
                .bind(event_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(seen)
    }

    async fn prune(&self, ended_before: Timestamp, limit: u32) -> Result<Pruned, StoreError> {
        self.writer
            .write(move |conn| writes::prune(conn, ended_before, limit))
            .await
    }

    /// Nothing due is the common case: a read on the pool says so without
    /// a turn of the writer thread.
    async fn expire_due(&self, resolution: &Resolution, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let due: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM questions WHERE status = 'pending' AND expires_at <= ?)")
                .bind(resolution.at)
                .fetch_one(&self.pool)
                .await?;
        if !due {
            return Ok(Vec::new());
        }
        let json = encode(resolution)?;
        let (status, at) = (resolution.status, resolution.at);
        self.writer
            .write(move |conn| writes::expire_due(conn, status, &json, at, limit))
            .await
    }

    async fn try_lease(&self, name: &str, owner: &str, now: Timestamp, until: Timestamp) -> Result<bool, StoreError> {
        let (name, owner) = (name.to_owned(), owner.to_owned());
        self.writer
            .write(move |conn| writes::try_lease(conn, &name, &owner, now, until))
            .await
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<(), StoreError> {
        let (name, owner) = (name.to_owned(), owner.to_owned());
        self.writer
            .write(move |conn| writes::release_lease(conn, &name, &owner))
            .await
    }

    async fn set_setting_leased(
        &self,
        key: &str,
        value: &str,
        lease: &str,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let (key, value, lease, owner) = (key.to_owned(), value.to_owned(), lease.to_owned(), owner.to_owned());
        self.writer
            .write(move |conn| writes::set_setting_leased(conn, &key, &value, &lease, &owner, now))
            .await
    }

    async fn callbacks_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<crate::DueCallback>, StoreError> {
        self.writer
            .write(move |conn| callbacks::due(conn, now, lease_until, limit))
            .await
    }

    async fn record_callback(
        &self,
        id: &QuestionId,
        attempt: &crate::CallbackAttempt,
        next: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let (id, attempt) = (id.clone(), attempt.clone());
        self.writer
            .write(move |conn| callbacks::record(conn, &id, &attempt, next))
            .await
    }

    async fn callback_attempts(&self, id: &QuestionId) -> Result<Option<Vec<crate::CallbackAttempt>>, StoreError> {
        let attempts: Option<String> = sqlx::query_scalar("SELECT attempts FROM callbacks WHERE question_id = ?")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        Ok(attempts.as_deref().map(crate::callbacks::decode_attempts))
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(value)
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.writer
            .write(move |conn| writes::set_setting(conn, &key, &value))
            .await
    }

    async fn insert_setting(&self, key: &str, value: &str) -> Result<bool, StoreError> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.writer
            .write(move |conn| writes::insert_setting(conn, &key, &value))
            .await
    }

    /// The file is still askgate's (read off the runtime: a change is
    /// confirmed by a second read), the pool answers, and the rule of
    /// `readiness.rs`, whose probe is [`writes::probe`].
    async fn ping(&self) -> Result<(), StoreError> {
        let health = self.health.clone();
        tokio::task::spawn_blocking(move || health.check())
            .await
            .map_err(|error| StoreError::Unavailable(format!("the file check did not finish: {error}")))?
            .map_err(|refusal| refusal.error())?;
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        match self.readiness.verdict() {
            Verdict::Ready => Ok(()),
            Verdict::NotReady(error) => Err(error),
            Verdict::Probe(ticket) => {
                let outcome = self.writer.probe(writes::probe).await;
                self.readiness.probed(ticket, outcome)
            }
        }
    }

    fn write_failures(&self) -> crate::WriteFailures {
        self.readiness.failures()
    }
}

/// The database's identity: a random number in the header's
/// `user_version`, set once, that another database copied over the file
/// would not have ([`header`]). Set under the write lock, so that two
/// processes creating the file at once keep one. On failure (a full disk at
/// start) the database keeps what it has and askgate starts all the same.
async fn identify(conn: &mut SqliteConnection) -> u32 {
    async fn set_once(conn: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
        sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
        let current: i64 = sqlx::query_scalar("PRAGMA user_version").fetch_one(&mut *conn).await?;
        let identity = if current == 0 {
            // 31 bits, never 0: `PRAGMA user_version` takes a signed 32-bit value.
            let fresh: i64 = sqlx::query_scalar("SELECT (random() & 2147483647) | 1")
                .fetch_one(&mut *conn)
                .await?;
            // An integer askgate made: nothing to escape.
            sqlx::query(AssertSqlSafe(format!("PRAGMA user_version = {fresh}")))
                .execute(&mut *conn)
                .await?;
            fresh
        } else {
            current
        };
        sqlx::query("COMMIT").execute(&mut *conn).await?;
        Ok(identity)
    }
    let identity = match set_once(conn).await {
        Ok(identity) => identity,
        Err(error) => {
            tracing::warn!(%error, "the database's identity could not be set; a copy over the file is noticed less surely");
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            sqlx::query_scalar("PRAGMA user_version")
                .fetch_one(&mut *conn)
                .await
                .unwrap_or(0)
        }
    };
    // The header's four bytes, as `Header` reads them.
    i32::try_from(identity).map_or(0, |identity| u32::from_be_bytes(identity.to_be_bytes()))
}
