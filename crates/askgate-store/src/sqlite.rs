//! The embedded default [`Store`]: one SQLite file in WAL mode.
//!
//! Every rule of the trait is one SQL statement, or one `BEGIN IMMEDIATE`
//! transaction when a method needs several: the one-pending-question rule is
//! a partial unique index, a resolution is an `UPDATE … WHERE status =
//! 'pending'`. Queries are built at run time (`query`, `query_as`), so the
//! crate builds without a database; the schema is in `migrations/sqlite`.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_core::answer::Answers;
use askgate_core::channel::{Delivery, MessageRef};
use askgate_core::{AskRequest, Locale, QuestionId};
use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection as _, Sqlite, SqliteConnection};

use crate::{
    IdempotencyKey, InsertRules, Inserted, PendingDeadline, PendingScope, QuestionRecord, QuestionStatus, Resolution,
    Store, StoreError, Timestamp,
};

/// Connections for reading. WAL lets readers run beside the one writer.
const MAX_READERS: u32 = 4;

/// How long a statement waits for another connection's write lock before it
/// fails with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Starts a write transaction that takes the write lock at once. A deferred
/// transaction that reads and then writes can fail with `SQLITE_BUSY` without
/// waiting when another connection wrote in between; an immediate one waits
/// for the lock under the busy timeout instead.
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// A `SELECT` of every column a [`QuestionRow`] needs, followed by the rest
/// of the statement. A macro so that the whole statement stays a `&'static
/// str`, which sqlx requires of SQL text.
macro_rules! select_questions {
    ($rest:literal) => {
        concat!(
            "SELECT id, status, agent, session_id, run_id, recipient, channel, conversation, locale, request, \
             created_at, expires_at, delivery, progress, resolution FROM questions ",
            $rest
        )
    };
}

/// [`Store`] on a SQLite file.
///
/// Cloning is cheap and shares the connection pools. Writes go through a
/// pool of one connection, so that concurrent writers queue in order on it
/// rather than in SQLite's busy handler, which sleeps and retries (measured:
/// 32 answers in flight were slower than answering one at a time).
///
/// A write that fails for a reason other than a rule (a full disk, a lock
/// held past the busy timeout, an I/O error) closes the writer connection
/// instead of returning it to the pool, and the next write opens a fresh
/// one. After `SQLITE_FULL` or an I/O error, SQLite may roll the transaction
/// back by itself; sqlx's connection then still counts it as open, and every
/// later `BEGIN` on it fails ("attempted to call `begin_with` at non-zero
/// transaction depth") until the process restarts. The failure is kept for
/// [`Store::ping`] until a write succeeds.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    writer: SqlitePool,
    health: Arc<Health>,
}

/// What readiness needs beyond a query that answers.
#[derive(Debug)]
struct Health {
    /// The database file, and its identity when opened.
    path: PathBuf,
    opened: Option<FileIdentity>,
    /// Why the last write failed, until one succeeds.
    failed_write: Mutex<Option<String>>,
}

/// A file's identity: the same path holding another file (deleted and
/// recreated, or replaced by a restore) has another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The identity of the file at `path`; `None` when there is none.
    #[cfg(unix)]
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }

    /// Elsewhere only whether the file is still there.
    #[cfg(not(unix))]
    fn of(path: &Path) -> Option<Self> {
        path.exists().then_some(Self { device: 0, inode: 0 })
    }
}

impl Health {
    /// Refuses when the file at the path is not the file opened.
    fn check_file(&self) -> Result<(), StoreError> {
        if self.opened.is_some() && FileIdentity::of(&self.path) != self.opened {
            return Err(StoreError::FileReplaced(self.path.clone()));
        }
        Ok(())
    }

    fn failed_write(&self) -> Option<String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // One Option replaced whole: consistent even if a holder panicked.
        self.failed_write.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
            // FULL, not WAL's usual NORMAL: with NORMAL a commit is durable only
            // after the next checkpoint, and a power loss can undo it. An answer
            // the person saw acknowledged ("Answer submitted") must be on disk,
            // so every commit syncs the WAL.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&writer).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_READERS)
            .connect_with(options)
            .await?;
        let health = Health {
            path: path.to_owned(),
            opened: FileIdentity::of(path),
            failed_write: Mutex::new(None),
        };
        Ok(Self {
            pool,
            writer,
            health: Arc::new(health),
        })
    }

    /// The writer connection, once the file is checked to be the one opened.
    async fn writer(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        if let Err(error) = self.health.check_file() {
            *self.health.lock() = Some(error.to_string());
            return Err(error);
        }
        match self.writer.acquire().await {
            Ok(conn) => Ok(conn),
            Err(error) => {
                *self.health.lock() = Some(error.to_string());
                Err(error.into())
            }
        }
    }

    /// What a write on `conn` came to: a success clears the failure kept
    /// for readiness; a failure other than a broken rule keeps its reason
    /// and closes the connection (see [`SqliteStore`]).
    fn settle<T>(&self, mut conn: PoolConnection<Sqlite>, result: Result<T, StoreError>) -> Result<T, StoreError> {
        match &result {
            Ok(_) => *self.health.lock() = None,
            Err(error) if error.is_unavailable() => {
                tracing::warn!(%error, "a write failed; its connection is replaced");
                *self.health.lock() = Some(error.to_string());
                conn.close_on_drop();
            }
            Err(_) => {}
        }
        result
    }

    /// Closes every connection, waiting for them to finish. Dropping the
    /// store closes them too, but in the background.
    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }
}

#[async_trait]
impl Store for SqliteStore {
    /// Stores the record as given. The engine inserts pending questions; a
    /// record that has ended already is stored too (its `resolved_at` column
    /// is its resolution's time), and neither the session rule nor the caps
    /// apply to it.
    async fn insert_with(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        let mut conn = self.writer().await?;
        let result = insert_in(&mut conn, question, rules).await;
        self.settle(conn, result)
    }

    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
        let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = ?"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.map(QuestionRow::decode).transpose()
    }

    /// Whatever the question's status: a question can end while it is being
    /// delivered (cancelled, expired), and its messages are still to be
    /// edited into their summary. An unknown id is
    /// `StoreError::Database(sqlx::Error::RowNotFound)`.
    ///
    /// A message already indexed under another question is moved to this one:
    /// the newest delivery is what the platform shows.
    async fn set_delivery(&self, id: &QuestionId, delivery: &Delivery) -> Result<bool, StoreError> {
        let mut conn = self.writer().await?;
        let result = set_delivery_in(&mut conn, id, delivery).await;
        self.settle(conn, result)
    }

    /// An unknown id is `StoreError::Database(sqlx::Error::RowNotFound)`.
    async fn attach_message(&self, id: &QuestionId, message: &MessageRef) -> Result<(), StoreError> {
        let mut conn = self.writer().await?;
        let result = async {
            let mut tx = conn.begin_with(BEGIN_WRITE).await?;
            if !index_message(&mut tx, id, message).await? {
                return Err(sqlx::Error::RowNotFound.into());
            }
            tx.commit().await?;
            Ok(())
        }
        .await;
        self.settle(conn, result)
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
        // rowid breaks a tie in created_at: the later insert is the newer.
        let id: Option<String> = sqlx::query_scalar(
            "SELECT id FROM questions WHERE channel = ? AND conversation = ? AND status = 'pending' \
             ORDER BY created_at DESC, rowid DESC LIMIT 1",
        )
        .bind(channel)
        .bind(conversation)
        .fetch_optional(&self.pool)
        .await?;
        id.as_deref().map(decode_id).transpose()
    }

    async fn save_progress(&self, id: &QuestionId, progress: &Answers) -> Result<bool, StoreError> {
        let json = encode(progress)?;
        let mut conn = self.writer().await?;
        let result = sqlx::query("UPDATE questions SET progress = ? WHERE id = ? AND status = 'pending'")
            .bind(json)
            .bind(id.as_str())
            .execute(&mut *conn)
            .await
            .map(|updated| updated.rows_affected() == 1)
            .map_err(StoreError::from);
        self.settle(conn, result)
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
        let mut conn = self.writer().await?;
        let result = resolve_in(&mut conn, id, resolution).await;
        self.settle(conn, result)
    }

    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE finished = 0 AND status NOT IN ('pending', 'delivery_failed') AND delivery IS NOT NULL \
             ORDER BY created_at, rowid"
        ))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn mark_finished(&self, id: &QuestionId) -> Result<(), StoreError> {
        let mut conn = self.writer().await?;
        let result = sqlx::query("UPDATE questions SET finished = 1 WHERE id = ?")
            .bind(id.as_str())
            .execute(&mut *conn)
            .await
            .map(drop)
            .map_err(StoreError::from);
        self.settle(conn, result)
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
        // A delivery is stored complete unless it says `"complete": false`.
        let (at, id) = after.map_or((i64::MIN, String::new()), |(at, id)| (*at, id.to_string()));
        let rows: Vec<(Timestamp, String, bool)> = sqlx::query_as(
            "SELECT expires_at, id, delivery IS NOT NULL AND coalesce(json_extract(delivery, '$.complete'), 1) = 1              FROM questions WHERE status = 'pending' AND (expires_at, id) > (?, ?)              ORDER BY expires_at, id LIMIT ?",
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
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM questions WHERE status = 'pending'")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn undelivered_since(&self, channel: &str, since: Timestamp) -> Result<bool, StoreError> {
        // `questions_status_expires` narrows to pending rows; only those of
        // the last moments are looked at.
        let found: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM questions WHERE status = 'pending' AND channel = ? \
             AND delivery IS NULL AND created_at > ?)",
        )
        .bind(channel)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(found)
    }

    async fn pending_for_recipient(&self, recipient: &str) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE recipient = ? AND status = 'pending' ORDER BY created_at, rowid"
        ))
        .bind(recipient)
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn recent_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE recipient = ? ORDER BY created_at DESC, rowid DESC LIMIT ?"
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

    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let mut conn = self.writer().await?;
        let result = sqlx::query("INSERT OR IGNORE INTO inbound_events (channel, event_id) VALUES (?, ?)")
            .bind(channel)
            .bind(event_id)
            .execute(&mut *conn)
            .await
            .map(|inserted| inserted.rows_affected() == 1)
            .map_err(StoreError::from);
        self.settle(conn, result)
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

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(value)
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut conn = self.writer().await?;
        let result = set_setting_in(&mut conn, key, value).await;
        self.settle(conn, result)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.health.check_file()?;
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        if let Some(reason) = self.health.failed_write() {
            // Writes failed last time: try one now, so that readiness comes
            // back as soon as writes work again, with no restart.
            let mut conn = self.writer().await?;
            let result = set_setting_in(&mut conn, "readiness_probe", &reason).await;
            self.settle(conn, result)?;
        }
        Ok(())
    }
}

/// [`Store::set_delivery`] on the writer connection.
async fn set_delivery_in(
    conn: &mut SqliteConnection,
    id: &QuestionId,
    delivery: &Delivery,
) -> Result<bool, StoreError> {
    let json = encode(delivery)?;
    let mut tx = conn.begin_with(BEGIN_WRITE).await?;
    // The question's conversation becomes the one it was delivered to:
    // taps and replies come from there (a DM has an id of its own).
    let status: Option<String> = sqlx::query_scalar(
        "UPDATE questions SET delivery = ?, conversation = COALESCE(?, conversation) WHERE id = ? RETURNING status",
    )
    .bind(json)
    .bind(delivery.conversation())
    .bind(id.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(status) = status else {
        return Err(sqlx::Error::RowNotFound.into());
    };
    for message in &delivery.messages {
        index_message(&mut tx, id, message).await?;
    }
    tx.commit().await?;
    Ok(status == QuestionStatus::Pending.as_str())
}

/// [`Store::resolve`] on the writer connection.
async fn resolve_in(
    conn: &mut SqliteConnection,
    id: &QuestionId,
    resolution: &Resolution,
) -> Result<Option<QuestionRecord>, StoreError> {
    let json = encode(resolution)?;
    let mut tx = conn.begin_with(BEGIN_WRITE).await?;
    // The compare-and-set: only the first resolution finds it pending,
    // and a person's only while the question is not yet due.
    let by_person = matches!(resolution.status, QuestionStatus::Answered | QuestionStatus::Skipped);
    let updated = sqlx::query(
        "UPDATE questions SET status = ?, resolution = ?, resolved_at = ? \
         WHERE id = ? AND status = 'pending' AND (? = 0 OR expires_at > ?)",
    )
    .bind(resolution.status.as_str())
    .bind(json)
    .bind(resolution.at)
    .bind(id.as_str())
    .bind(by_person)
    .bind(resolution.at)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Ok(None);
    }
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = ?"))
        .bind(id.as_str())
        .fetch_one(&mut *tx)
        .await?;
    // A row that cannot be read back must not half-resolve the question:
    // the error rolls the update back with the transaction.
    let record = row.decode()?;
    tx.commit().await?;
    Ok(Some(record))
}

/// [`Store::set_setting`] on the writer connection.
async fn set_setting_in(conn: &mut SqliteConnection, key: &str, value: &str) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .bind(key)
    .bind(value)
    .execute(conn)
    .await?;
    Ok(())
}

/// [`Store::insert_with`] on the writer connection, in one transaction:
/// the idempotency key, the caps, then the row (and the key's row).
async fn insert_in(
    conn: &mut SqliteConnection,
    question: &QuestionRecord,
    rules: &InsertRules,
) -> Result<Inserted, StoreError> {
    let id = &question.id;
    let request = encode(&question.request)?;
    let delivery = question.delivery.as_ref().map(encode).transpose()?;
    let progress = encode(&question.progress)?;
    let resolution = question.resolution.as_ref().map(encode).transpose()?;
    let resolved_at = question.resolution.as_ref().map(|resolution| resolution.at);
    let pending = question.status == QuestionStatus::Pending;

    let mut tx = conn.begin_with(BEGIN_WRITE).await?;
    if let Some(key) = &rules.idempotency
        && let Some(existing) = keyed(&mut tx, &question.agent, key).await?
    {
        return Ok(Inserted::Existing(Box::new(existing)));
    }
    if pending {
        let agent = PendingScope::Agent(question.agent.clone());
        check_cap(&mut tx, agent, rules.max_pending_per_agent).await?;
        let recipient = PendingScope::Recipient(question.recipient.clone());
        check_cap(&mut tx, recipient, rules.max_pending_per_recipient).await?;
    }
    let inserted = sqlx::query(
        "INSERT INTO questions (id, status, agent, session_id, run_id, recipient, channel, conversation, \
         locale, request, created_at, expires_at, delivery, progress, resolution, resolved_at, finished) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(id.as_str())
    .bind(question.status.as_str())
    .bind(question.agent.as_str())
    .bind(question.session_id.as_deref())
    .bind(question.run_id.as_deref())
    .bind(question.recipient.as_str())
    .bind(question.channel.as_str())
    .bind(question.conversation.as_str())
    .bind(question.locale.as_str())
    .bind(request)
    .bind(question.created_at)
    .bind(question.expires_at)
    .bind(delivery)
    .bind(progress)
    .bind(resolution)
    .bind(resolved_at)
    .bind(rules.nothing_to_edit)
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(_) => {}
        Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
            // The failed statement was undone but the transaction still
            // holds the write lock, so what conflicted is still there.
            return Err(conflict(&mut tx, question, sqlx::Error::Database(error)).await?);
        }
        Err(error) => return Err(error.into()),
    }
    if let Some(key) = &rules.idempotency {
        sqlx::query("INSERT INTO idempotency_keys (agent, key, fingerprint, question_id) VALUES (?, ?, ?, ?)")
            .bind(question.agent.as_str())
            .bind(key.key.as_str())
            .bind(key.fingerprint.as_str())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(Inserted::New)
}

/// The question an agent's idempotency key was first used for, when it was
/// used with the same request; [`StoreError::KeyReused`] when with another.
async fn keyed(
    conn: &mut SqliteConnection,
    agent: &str,
    key: &IdempotencyKey,
) -> Result<Option<QuestionRecord>, StoreError> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT question_id, fingerprint FROM idempotency_keys WHERE agent = ? AND key = ?")
            .bind(agent)
            .bind(key.key.as_str())
            .fetch_optional(&mut *conn)
            .await?;
    let Some((question, fingerprint)) = row else {
        return Ok(None);
    };
    let question = decode_id(&question)?;
    if fingerprint != key.fingerprint {
        return Err(StoreError::KeyReused { question });
    }
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = ?"))
        .bind(question.as_str())
        .fetch_one(&mut *conn)
        .await?;
    row.decode().map(Some)
}

/// Refuses when `scope` has `limit` pending questions already.
async fn check_cap(conn: &mut SqliteConnection, scope: PendingScope, limit: Option<u32>) -> Result<(), StoreError> {
    let Some(limit) = limit else {
        return Ok(());
    };
    let (sql, who) = match &scope {
        PendingScope::Agent(agent) => (
            "SELECT COUNT(*) FROM questions WHERE agent = ? AND status = 'pending'",
            agent,
        ),
        PendingScope::Recipient(recipient) => (
            "SELECT COUNT(*) FROM questions WHERE recipient = ? AND status = 'pending'",
            recipient,
        ),
    };
    let count: i64 = sqlx::query_scalar(sql).bind(who.as_str()).fetch_one(&mut *conn).await?;
    if count >= i64::from(limit) {
        return Err(StoreError::TooManyPending { scope, limit });
    }
    Ok(())
}

/// What an insert that broke a unique constraint collided with, read inside
/// the insert's transaction: the id, or the session's pending question.
/// Anything else is the database's own error, returned as it was.
async fn conflict(
    conn: &mut SqliteConnection,
    question: &QuestionRecord,
    error: sqlx::Error,
) -> Result<StoreError, StoreError> {
    let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM questions WHERE id = ?")
        .bind(question.id.as_str())
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_some() {
        return Ok(StoreError::Duplicate(question.id.clone()));
    }
    if let Some(session) = &question.session_id {
        let pending: Option<String> = sqlx::query_scalar(
            "SELECT id FROM questions WHERE agent = ? AND session_id = ? AND status = 'pending' LIMIT 1",
        )
        .bind(question.agent.as_str())
        .bind(session.as_str())
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(pending) = pending {
            return Ok(StoreError::SessionBusy {
                session: session.clone(),
                pending: decode_id(&pending)?,
            });
        }
    }
    Ok(StoreError::Database(error))
}

/// Indexes one message under a question, on the question's channel. False
/// when there is no such question.
async fn index_message(conn: &mut SqliteConnection, id: &QuestionId, message: &MessageRef) -> Result<bool, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO messages (channel, conversation, message, question_id) \
         SELECT channel, ?, ?, id FROM questions WHERE id = ? \
         ON CONFLICT (channel, conversation, message) DO UPDATE SET question_id = excluded.question_id",
    )
    .bind(message.conversation.as_str())
    .bind(message.message.as_str())
    .bind(id.as_str())
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() > 0)
}

/// A value as its JSON column holds it.
fn encode<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| sqlx::Error::Encode(Box::new(error)).into())
}

/// A JSON column read back; `what` names the column for the error.
fn decode_json<T: DeserializeOwned>(id: &str, what: &str, json: &str) -> Result<T, StoreError> {
    serde_json::from_str(json).map_err(|error| StoreError::Corrupt(format!("question {id}: column {what}: {error}")))
}

/// A question id read back from a column.
fn decode_id(id: &str) -> Result<QuestionId, StoreError> {
    QuestionId::parse(id).map_err(|error| StoreError::Corrupt(format!("question id {id:?}: {error}")))
}

fn decode_all(rows: Vec<QuestionRow>) -> Result<Vec<QuestionRecord>, StoreError> {
    rows.into_iter().map(QuestionRow::decode).collect()
}

/// A `questions` row as the database has it, before its text is checked.
#[derive(sqlx::FromRow)]
struct QuestionRow {
    id: String,
    status: String,
    agent: String,
    session_id: Option<String>,
    run_id: Option<String>,
    recipient: String,
    channel: String,
    conversation: String,
    locale: String,
    request: String,
    created_at: i64,
    expires_at: i64,
    delivery: Option<String>,
    progress: String,
    resolution: Option<String>,
}

impl QuestionRow {
    /// The record, or [`StoreError::Corrupt`] naming the question and the
    /// column that could not be read.
    fn decode(self) -> Result<QuestionRecord, StoreError> {
        let id = decode_id(&self.id)?;
        let raw = self.id.as_str();
        let status = QuestionStatus::from_str(&self.status)
            .map_err(|error| StoreError::Corrupt(format!("question {raw}: column status: {error}")))?;
        let locale = Locale::from_str(&self.locale)
            .map_err(|error| StoreError::Corrupt(format!("question {raw}: column locale: {error}")))?;
        let request: AskRequest = decode_json(raw, "request", &self.request)?;
        let delivery = self
            .delivery
            .as_deref()
            .map(|json| decode_json(raw, "delivery", json))
            .transpose()?;
        let progress = decode_json(raw, "progress", &self.progress)?;
        let resolution = self
            .resolution
            .as_deref()
            .map(|json| decode_json(raw, "resolution", json))
            .transpose()?;
        Ok(QuestionRecord {
            id,
            status,
            agent: self.agent,
            session_id: self.session_id,
            run_id: self.run_id,
            recipient: self.recipient,
            channel: self.channel,
            conversation: self.conversation,
            locale,
            request,
            created_at: self.created_at,
            expires_at: self.expires_at,
            delivery,
            progress,
            resolution,
        })
    }
}
