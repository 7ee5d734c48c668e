//! The shared [`Store`] on PostgreSQL, for several replicas on one database.
//!
//! - `mod.rs` (here): the store, its connection and migrations, its reads
//!   and its one-statement writes;
//! - [`batch`]: group commit, the inserts, resolutions and reads by id that
//!   arrive together run as one statement each;
//! - [`by_id`]: the statements that find questions by id, written so that
//!   every plan PostgreSQL keeps for them uses the primary key;
//! - [`insert`]: the insert with its rules (idempotency key, caps, the
//!   session rule), the one write that needs a transaction and retries;
//! - [`check`]: what `check-config` and start-up say of a URL and of a
//!   connection that failed;
//! - [`feed`]: the change feed (`LISTEN`/`NOTIFY`) that tells a store what
//!   the other replicas changed;
//! - [`ready`]: readiness that follows the writes (`crate::readiness`),
//!   around the store of this file.
//!
//! Every rule of the trait holds across processes because the database
//! enforces it: the one-pending-question rule is a partial unique index, a
//! resolution an `UPDATE … WHERE status = 'pending'`, saving progress an
//! `UPDATE … WHERE progress = <what was read>` (PostgreSQL re-checks the
//! condition on the newest row after waiting for a concurrent writer, so two
//! replicas never both win), a cap advisory locks and the striped counts of
//! `pending_counts` (`insert.rs`). Queries are built at run time, so the crate builds
//! without a database; the schema is in `migrations/postgres`, applied on
//! open under sqlx's advisory lock, so replicas starting together migrate
//! once, after the upgrade policy of `crate::schema` let this askgate run
//! against it.

mod batch;
mod by_id;
mod callbacks;
mod check;
mod feed;
mod insert;
mod notify;
mod ready;

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::MessageRef;
use async_trait::async_trait;
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};

use crate::row::{QuestionRow, decode_all, decode_expired, decode_id, encode, question_columns};
use crate::schema;
use crate::steps::{self, StepWrite};
use crate::surfaces::{self, SurfaceWrite};
use crate::{
    Change, EventKey, ForEvent, InsertRules, Inserted, PendingDeadline, ProgressSaved, Pruned, QuestionRecord,
    QuestionStatus, Resolution, Store, StoreError, Timestamp,
};

/// A `SELECT` of every column a [`QuestionRow`] needs, then the rest of the
/// statement (a macro: sqlx wants SQL text as a `&'static str`).
macro_rules! select_questions {
    ($rest:literal) => {
        concat!("SELECT ", $crate::row::question_columns!(), " FROM questions ", $rest)
    };
}
pub(crate) use select_questions;

/// How long a query waits for a free connection of the pool before the
/// store reports itself unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The channel the stores on `schema` notify their changes on and listen
/// to ([`notify`], [`feed`]).
fn channel(schema: &str) -> String {
    format!("askgate:{schema}")
}

/// The longest pause between attempts on a connection of the store's own
/// (the change feed's, the notifier's).
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The pause after `failures` failures in a row on a connection of the
/// store's own ([`feed`], [`notify`]): 100 ms, doubling, at most
/// [`RETRY_MAX`].
fn pause(failures: u32) -> Duration {
    Duration::from_millis(100 * 2_u64.pow(failures.min(6))).min(RETRY_MAX)
}

/// [`Store`] on a PostgreSQL database, shared by every replica.
///
/// Cloning is cheap and shares the pool. Readiness follows the writes, as
/// on SQLite: a write the database failed (a full disk, a lost connection)
/// makes [`Store::ping`] not ready until one succeeds ([`ready`]).
#[derive(Debug, Clone)]
pub struct PgStore {
    inner: Pg,
    readiness: Arc<crate::readiness::Readiness>,
}

/// The store itself; [`PgStore`] adds readiness around it.
#[derive(Debug, Clone)]
struct Pg {
    pool: PgPool,
    feed: Arc<feed::Feed>,
    notifier: Arc<notify::Notifier>,
    batches: Arc<batch::Batches>,
}

impl PgStore {
    /// The pool's size a replica opens with unless told otherwise (`[store]
    /// max_connections`): one connection listens for the other replicas'
    /// changes ([`feed`]), the others run the statements, batched
    /// ([`batch`]), so that a few connections carry any number of callers.
    /// Fewer server processes on the database's cores, and each batch
    /// fuller: on 2 cores, the replicas benchmark measured 5 connections a
    /// replica against 10 in six alternating pairs of full runs: two
    /// replicas at 32 in flight at 0.82–1.00 of one replica's cycles/s
    /// against 0.78–0.86, the higher ratio in every pair (at 256, within
    /// the runs' spread), and PostgreSQL's CPU time a cycle lower (one
    /// replica at 32 in flight: 292–356 µs against 364–423 µs in the last
    /// three pairs). PostgreSQL's own rule of thumb (2 × cores + disks)
    /// gives 5 on such a machine. Several replicas on one database add
    /// theirs up: 5 each keeps twenty replicas under the server's default
    /// 100 connections.
    pub const DEFAULT_CONNECTIONS: u32 = 5;

    /// The fewest connections a store opens with, whatever it is told: the
    /// change feed holds one for as long as the store is open, and the
    /// statements need another (with one, every statement waited for the
    /// feed's connection until the pool's timeout, 5 s, and failed).
    pub const MIN_CONNECTIONS: u32 = 2;

    /// Connects to the database at `url` (`postgres://user:password@host/db`;
    /// `sslmode=require` for TLS) with a pool of at most `connections`
    /// connections (at least [`PgStore::MIN_CONNECTIONS`]; the notifier
    /// keeps one more of its own, [`notify`]), and brings the schema up to
    /// date.
    pub async fn open(url: &str, connections: u32) -> Result<Self, StoreError> {
        Self::connect_with(PgConnectOptions::from_str(url)?, connections).await
    }

    /// Like [`PgStore::open`], with options built in code (a test's own
    /// schema, say, through its `search_path`).
    pub async fn connect_with(options: PgConnectOptions, connections: u32) -> Result<Self, StoreError> {
        // A name of this store's own: the change feed tells its own
        // changes from other replicas' by it.
        let me = format!("askgate-{}", ulid::Ulid::new().to_string().to_lowercase());
        let options = options.application_name(&me);
        // One connection first, for an error that says what is wrong (a
        // pool would retry until its timeout and say only that). It
        // migrates under sqlx's advisory lock: replicas that start together
        // apply the migrations once, the others wait and find them done,
        // and an older replica on a schema a newer one migrated runs or is
        // refused by the upgrade policy (`crate::schema`). Closing it
        // releases the lock however the migration ended.
        let mut first = PgConnection::connect_with(&options)
            .await
            .map_err(|error| check::explain(&options, &error))?;
        let connections = connections.max(Self::MIN_CONNECTIONS);
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
        // The pool's first connections and the change feed's open while
        // the schema is checked: none of them reads a table before the
        // migration is done, and each connection is a TLS handshake, which
        // start-up had waited for one after the other (about 90 ms each
        // with sqlx 0.9.0, which left Nagle's algorithm on and so waited
        // on delayed ACKs; 3-4 ms to a local server with 0.9.1).
        let (migrated, schema, listener, warm) = tokio::join!(
            schema::migrate(&mut first, sqlx::migrate!("./migrations/postgres")),
            sqlx::query_scalar::<_, String>("SELECT current_schema()").fetch_one(&pool),
            sqlx::postgres::PgListener::connect_with(&pool),
            // A second connection for the queries start-up runs at once
            // (the feed holds one of its own), when the pool has room.
            async {
                if connections >= 3 {
                    Some(pool.acquire().await)
                } else {
                    None
                }
            },
        );
        first.close().await.ok();
        migrated?;
        drop(warm);
        let schema = schema?;
        let feed = Arc::new(feed::Feed::start(listener?, &schema, me.clone()).await?);
        let notifier = Arc::new(notify::Notifier::start(&pool, &schema, me));
        let batches = Arc::new(batch::Batches::start(&pool, Arc::clone(&notifier)));
        Ok(Self {
            inner: Pg {
                pool,
                feed,
                notifier,
                batches,
            },
            readiness: Arc::default(),
        })
    }

    /// Closes every connection, waiting for them.
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }
}

impl schema::Migrating for PgConnection {
    async fn oldest_compatible(&mut self) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(schema::OLDEST_COMPATIBLE)
            .fetch_optional(self)
            .await
    }
}

/// The question, its row held (`FOR UPDATE`) until `tx` ends: a write to
/// its JSON columns (surfaces, steps) reads, changes and writes them back
/// with no other write in between.
async fn locked(
    tx: &mut Transaction<'static, Postgres>,
    id: &QuestionId,
) -> Result<Option<QuestionRecord>, StoreError> {
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = $1 FOR UPDATE"))
        .bind(id.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    row.map(QuestionRow::decode).transpose()
}

#[async_trait]
impl Store for Pg {
    /// A write to the question's surface on `channel` ([`SurfaceWrite`]),
    /// and for a delivery an index entry per message, in one transaction
    /// that holds the question's row (`FOR UPDATE`): two surfaces written at
    /// once are written one after the other, the second seeing the first.
    /// The question as it is after, or `None` when there is no such question.
    async fn write_surface(
        &self,
        id: &QuestionId,
        channel: &str,
        write: SurfaceWrite<'_>,
    ) -> Result<Option<QuestionRecord>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let Some(mut record) = locked(&mut tx, id).await? else {
            return Ok(None);
        };
        surfaces::apply(id, &mut record.surfaces, channel, &write)?;
        // The channel the messages are on: `channel` names the surface,
        // which for an escalated one is `channel@recipient`.
        let on = record
            .surface_by_key(channel)
            .map_or_else(|| channel.to_owned(), |surface| surface.channel.clone());
        sqlx::query("UPDATE questions SET surfaces = $1, finished = $2 WHERE id = $3")
            .bind(encode(&record.surfaces)?)
            .bind(surfaces::all_finished(&record.surfaces))
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        if let SurfaceWrite::Delivered(delivery) = write {
            for message in &delivery.messages {
                index_message(&mut tx, id, &on, message).await?;
            }
        }
        tx.commit().await?;
        self.notifier.changed_record(&record);
        Ok(Some(record))
    }

    /// Takes a step of the question's plan in one transaction that holds
    /// its row (`FOR UPDATE`): of two replicas taking the same step, the
    /// second sees it taken.
    async fn take_step(&self, id: &QuestionId, write: StepWrite<'_>) -> Result<Option<QuestionRecord>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let Some(mut record) = locked(&mut tx, id).await? else {
            return Ok(None);
        };
        if !steps::apply(&mut record, &write) {
            return Ok(None);
        }
        sqlx::query("UPDATE questions SET steps = $1, next_step_at = $2, surfaces = $3, finished = $4 WHERE id = $5")
            .bind(encode(&record.steps)?)
            .bind(record.next_step_at())
            .bind(encode(&record.surfaces)?)
            .bind(surfaces::all_finished(&record.surfaces))
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.notifier.changed_record(&record);
        Ok(Some(record))
    }

    async fn steps_due(&self, now: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE status = 'pending' AND next_step_at IS NOT NULL AND next_step_at <= $1 \
             ORDER BY next_step_at LIMIT $2"
        ))
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    /// Stores the record as given, as [`crate::SqliteStore`] does: an ended
    /// record is stored too, and neither the session rule nor the caps apply
    /// to it.
    async fn insert_with(&self, question: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        let inserted = if batch::batched(question, rules) {
            self.batches.insert(question, rules).await?
        } else {
            insert::insert(&self.pool, question, rules).await?
        };
        if inserted == Inserted::New {
            // Told by each caller, not by the batch as resolutions are: a
            // pending question's notification waits for others anyway
            // ([`notify`]), so a batch's arrive together without it.
            self.notifier.changed_record(question);
        }
        Ok(inserted)
    }

    /// In a batch with the reads that arrive with it ([`batch`]).
    async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
        self.batches.get(id).await
    }

    async fn attach_message(&self, id: &QuestionId, channel: &str, message: &MessageRef) -> Result<(), StoreError> {
        let mut conn = self.pool.acquire().await?;
        if index_message(&mut conn, id, channel, message).await? {
            Ok(())
        } else {
            Err(StoreError::UnknownQuestion(id.clone()))
        }
    }

    async fn question_for_message(
        &self,
        channel: &str,
        message: &MessageRef,
    ) -> Result<Option<QuestionId>, StoreError> {
        let id: Option<String> = sqlx::query_scalar(
            "SELECT question_id FROM messages WHERE channel = $1 AND conversation = $2 AND message = $3",
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
        let id = by_id::newest_pending_in(&self.pool, channel, conversation).await?;
        id.as_deref().map(decode_id).transpose()
    }

    /// One statement ([`progress_cas`]).
    async fn save_progress(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
    ) -> Result<ProgressSaved, StoreError> {
        let mut conn = self.pool.acquire().await?;
        if let Some(expires_at) = progress_cas(&mut conn, id, read, progress).await? {
            self.notifier.changed(id.as_str(), QuestionStatus::Pending, expires_at);
            return Ok(ProgressSaved::Saved);
        }
        not_saved(&mut conn, id).await
    }

    /// A resolution whose status is `pending` is refused as in the SQLite
    /// store (a debug assertion; `None` in a release build).
    async fn resolve(&self, id: &QuestionId, resolution: &Resolution) -> Result<Option<QuestionRecord>, StoreError> {
        debug_assert!(
            resolution.status.is_final(),
            "question {id} resolved with status pending"
        );
        if !resolution.status.is_final() {
            tracing::error!(question = %id, "refused a resolution whose status is pending");
            return Ok(None);
        }
        // In a batch with the resolutions that arrive with it, one
        // statement committed on its own; a row that cannot be read back is
        // undone, not left half resolved; the other replicas told by the
        // batch, of all its resolutions at once ([`batch`]).
        self.batches.resolve(id, resolution).await
    }

    /// One transaction: the event's row first (a second delivery waits on
    /// the first's uncommitted row, then finds it and changes nothing), then
    /// the resolution.
    async fn resolve_for_event(
        &self,
        id: &QuestionId,
        resolution: &Resolution,
        event: EventKey<'_>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, StoreError> {
        if !resolution.status.is_final() {
            return self.resolve(id, resolution).await.map(ForEvent::Applied);
        }
        let mut tx = self.pool.begin().await?;
        if !record_event_in(&mut tx, event).await? {
            return Ok(ForEvent::Seen);
        }
        // Read back before the commit: a row that cannot be rolls it back.
        let resolved = by_id::resolve_row(&mut *tx, id, resolution)
            .await?
            .map(QuestionRow::decode)
            .transpose()?;
        tx.commit().await?;
        if let Some(record) = &resolved {
            self.notifier.changed_record(record);
        }
        Ok(ForEvent::Applied(resolved))
    }

    async fn save_progress_for_event(
        &self,
        id: &QuestionId,
        read: &Answers,
        progress: &Answers,
        event: EventKey<'_>,
    ) -> Result<ForEvent<ProgressSaved>, StoreError> {
        let mut tx = self.pool.begin().await?;
        if !record_event_in(&mut tx, event).await? {
            return Ok(ForEvent::Seen);
        }
        if let Some(expires_at) = progress_cas(&mut tx, id, read, progress).await? {
            tx.commit().await?;
            self.notifier.changed(id.as_str(), QuestionStatus::Pending, expires_at);
            return Ok(ForEvent::Applied(ProgressSaved::Saved));
        }
        // Not applied: the event stays unseen.
        tx.rollback().await?;
        let mut conn = self.pool.acquire().await?;
        not_saved(&mut conn, id).await.map(ForEvent::Applied)
    }

    async fn unfinished(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE NOT finished AND status NOT IN ('pending', 'delivery_failed') ORDER BY created_at, seq"
        ))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn pending(&self) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows =
            sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE status = 'pending' ORDER BY created_at, seq"))
                .fetch_all(&self.pool)
                .await?;
        decode_all(rows)
    }

    async fn pending_deadlines(
        &self,
        after: Option<&(Timestamp, QuestionId)>,
        limit: u32,
    ) -> Result<Vec<PendingDeadline>, StoreError> {
        // `questions_pending_expires` (expires_at, id) of pending rows serves
        // the filter and the order. Delivered: no surface is still being
        // sent to. Parsing every row's `surfaces` as jsonb was most of a
        // start on 100,000 pending (about 3 µs a row), and nearly all of
        // them are delivered: a surface still sending has the JSON string
        // `"sending"` in its text (serde_json and migration 0005's
        // json_build_object escape no letters), so a text without it is
        // delivered, and only one with it (a state, or a message or reason
        // that happens to say so) is parsed for the exact answer (`CASE`:
        // PostgreSQL evaluates its branches in order, only the one taken).
        let (at, id) = after.map_or((i64::MIN, String::new()), |(at, id)| (*at, id.to_string()));
        let rows: Vec<(Timestamp, String, bool)> = sqlx::query_as(
            "SELECT expires_at, id, \
             CASE WHEN strpos(surfaces, '\"sending\"') = 0 THEN TRUE \
             ELSE NOT (surfaces::jsonb @> '[{\"state\": \"sending\"}]') END \
             FROM questions WHERE status = 'pending' AND (expires_at, id) > ($1, $2) \
             ORDER BY expires_at, id LIMIT $3",
        )
        .bind(at)
        .bind(id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(expires_at, id, delivered)| {
                Ok(PendingDeadline {
                    expires_at,
                    id: decode_id(&id)?,
                    delivered,
                })
            })
            .collect()
    }

    async fn count_pending(&self) -> Result<u64, StoreError> {
        // Kept by the trigger of `pending_counts`: rows (stripes) per agent.
        let count: i64 =
            sqlx::query_scalar("SELECT coalesce(sum(pending), 0)::BIGINT FROM pending_counts WHERE scope = 'agent'")
                .fetch_one(&self.pool)
                .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn undelivered(&self, created_before: Timestamp, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE status = 'pending' AND created_at < $1 \
             AND surfaces::jsonb @> '[{\"state\": \"sending\"}]' \
             ORDER BY created_at, seq LIMIT $2"
        ))
        .bind(created_before)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn undelivered_since(&self, channel: &str, since: Timestamp) -> Result<bool, StoreError> {
        let found: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM questions WHERE status = 'pending' AND created_at > $2 \
             AND EXISTS (SELECT 1 FROM jsonb_array_elements(surfaces::jsonb) AS s \
             WHERE s ->> 'channel' = $1 AND s ->> 'state' = 'sending' AND NOT (s ? 'delivery')))",
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
        // Each recipient's first `limit` from its own range of
        // `questions_pending_recipient_created`, in order, then merged:
        // `recipient = ANY($1) … ORDER BY created_at, seq` read and sorted
        // every pending question of every recipient (PostgreSQL before 17
        // keeps no index order across an array), 65 ms a page at 100,000
        // pending. The row value resumes after the last question shown, or
        // from the start when that question is gone.
        let rows = sqlx::query_as::<_, QuestionRow>(concat!(
            "SELECT ",
            question_columns!(),
            " FROM (SELECT DISTINCT unnest($1::TEXT[]) AS who) AS r CROSS JOIN LATERAL ( \
                 SELECT ",
            question_columns!(),
            ", seq FROM questions WHERE recipient = r.who AND status = 'pending' AND ($2::TEXT IS NULL \
                 OR NOT EXISTS (SELECT 1 FROM questions WHERE id = $2) \
                 OR (created_at, seq) > (SELECT created_at, seq FROM questions WHERE id = $2)) \
                 ORDER BY created_at, seq LIMIT $3) AS q \
             ORDER BY created_at, seq LIMIT $3"
        ))
        .bind(recipients)
        .bind(after.map(QuestionId::as_str))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn count_pending_for_recipient(&self, recipient: &str) -> Result<u64, StoreError> {
        // The sum of the recipient's stripes (migration 0008).
        let count: i64 = sqlx::query_scalar(
            "SELECT coalesce(sum(pending), 0)::BIGINT FROM pending_counts WHERE scope = 'recipient' AND who = $1",
        )
        .bind(recipient)
        .fetch_one(&self.pool)
        .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn ended_for_recipient(&self, recipient: &str, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE recipient = $1 AND status <> 'pending' ORDER BY resolved_at DESC, seq DESC LIMIT $2"
        ))
        .bind(recipient)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn pending_in_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(select_questions!(
            "WHERE agent = $1 AND run_id = $2 AND status = 'pending' ORDER BY created_at, seq"
        ))
        .bind(agent)
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        decode_all(rows)
    }

    async fn ended_among(&self, ids: &[QuestionId]) -> Result<Vec<QuestionRecord>, StoreError> {
        // Each once: the statement reads an id as often as it is named.
        let mut ids: Vec<&str> = ids.iter().map(QuestionId::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        decode_all(by_id::ended_rows(&self.pool, &ids).await?)
    }

    async fn record_event(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO inbound_events (channel, event_id) VALUES ($1, $2) \
             ON CONFLICT (channel, event_id) DO NOTHING",
        )
        .bind(channel)
        .bind(event_id)
        .execute(&self.pool)
        .await?;
        Ok(inserted.rows_affected() == 1)
    }

    async fn event_seen(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let seen: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM inbound_events WHERE channel = $1 AND event_id = $2)")
                .bind(channel)
                .bind(event_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(seen)
    }

    /// Rows another replica is pruning at the same moment are skipped
    /// (`SKIP LOCKED`), so replicas pruning together neither wait for each
    /// other nor delete a row twice.
    async fn prune(&self, ended_before: Timestamp, limit: u32) -> Result<Pruned, StoreError> {
        let limit = i64::from(limit);
        // Both planned at every call (unnamed statements): a plan kept from
        // a table of a few pages joins the rows to delete to a scan of the
        // whole table, whatever it has grown to since (`by_id`). Pruning
        // runs now and then and affords the planning.
        let questions = sqlx::query(
            "DELETE FROM questions WHERE id IN (SELECT id FROM questions \
             WHERE status <> 'pending' AND resolved_at < $1 ORDER BY resolved_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
        )
        .bind(ended_before)
        .bind(limit)
        .persistent(false)
        .execute(&self.pool)
        .await?;
        let events = sqlx::query(
            "DELETE FROM inbound_events WHERE ctid IN (SELECT ctid FROM inbound_events \
             WHERE received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
        )
        .bind(ended_before)
        .bind(limit)
        .persistent(false)
        .execute(&self.pool)
        .await?;
        // Leases past their end long ago (a prompt's `deliver:<id>`).
        sqlx::query("DELETE FROM leases WHERE until < $1")
            .bind(ended_before)
            .execute(&self.pool)
            .await?;
        Ok(Pruned {
            questions: questions.rows_affected(),
            events: events.rows_affected(),
        })
    }

    /// `SKIP LOCKED`: replicas sweeping at the same moment each take other
    /// rows, and a row a replica is resolving (an answer arriving) is left
    /// to it.
    async fn expire_due(&self, resolution: &Resolution, limit: u32) -> Result<Vec<QuestionRecord>, StoreError> {
        let rows = sqlx::query_as::<_, QuestionRow>(concat!(
            "UPDATE questions SET status = $1, resolution = $2, resolved_at = $3 \
             WHERE id IN (SELECT id FROM questions WHERE status = 'pending' AND expires_at <= $3 \
             ORDER BY expires_at LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING ",
            question_columns!()
        ))
        .bind(resolution.status.as_str())
        .bind(encode(resolution)?)
        .bind(resolution.at)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        let expired = decode_expired(rows);
        // One statement's changes: told together.
        self.notifier.changed_together(expired.iter().map(notify::about));
        Ok(expired)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Change>> {
        Some(self.feed.subscribe())
    }

    /// One upsert whose update applies only to the owner's own or an
    /// expired lease; two replicas taking a free lease at once: the row
    /// lock makes one wait, and it then finds the lease held.
    async fn try_lease(&self, name: &str, owner: &str, now: Timestamp, until: Timestamp) -> Result<bool, StoreError> {
        let taken = sqlx::query(
            "INSERT INTO leases (name, owner, until) VALUES ($1, $2, $4) \
             ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until \
             WHERE leases.owner = excluded.owner OR leases.until <= $3",
        )
        .bind(name)
        .bind(owner)
        .bind(now)
        .bind(until)
        .execute(&self.pool)
        .await?;
        Ok(taken.rows_affected() == 1)
    }

    async fn release_lease(&self, name: &str, owner: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM leases WHERE name = $1 AND owner = $2")
            .bind(name)
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn set_setting_leased(
        &self,
        key: &str,
        value: &str,
        lease: &str,
        owner: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let set = sqlx::query(
            "INSERT INTO settings (key, value) SELECT $1, $2 \
             WHERE EXISTS (SELECT 1 FROM leases WHERE name = $3 AND owner = $4 AND until > $5) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .bind(lease)
        .bind(owner)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(set.rows_affected() == 1)
    }

    async fn callbacks_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<crate::DueCallback>, StoreError> {
        callbacks::due(&self.pool, now, lease_until, limit).await
    }

    async fn record_callback(
        &self,
        id: &QuestionId,
        attempt: &crate::CallbackAttempt,
        next: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        callbacks::record(&self.pool, id, attempt, next).await
    }

    async fn callback_attempts(&self, id: &QuestionId) -> Result<Option<Vec<crate::CallbackAttempt>>, StoreError> {
        callbacks::attempts(&self.pool, id).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(value)
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn insert_setting(&self, key: &str, value: &str) -> Result<bool, StoreError> {
        let inserted = sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
            .bind(key)
            .bind(value)
            .execute(&self.pool)
            .await?;
        Ok(inserted.rows_affected() == 1)
    }

    /// The database answers, and it is a primary: a standby (a failover
    /// pointed the URL at the wrong server) answers reads but refuses every
    /// write. A full disk shows in the next write's error instead.
    async fn ping(&self) -> Result<(), StoreError> {
        let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(&self.pool)
            .await?;
        if standby {
            return Err(StoreError::Unavailable(
                "the database is a read-only standby (in recovery)".to_owned(),
            ));
        }
        Ok(())
    }
}

/// The question, read alone.
async fn get_alone(pool: &PgPool, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = $1"))
        .bind(id.as_str())
        .fetch_optional(pool)
        .await?;
    row.map(QuestionRow::decode).transpose()
}

/// Saves `progress` if the question is pending and its progress is still
/// `read` ([`by_id::save_progress_row`]); the question's deadline when it
/// did (for the notification).
async fn progress_cas(
    conn: &mut sqlx::PgConnection,
    id: &QuestionId,
    read: &Answers,
    progress: &Answers,
) -> Result<Option<Timestamp>, StoreError> {
    Ok(by_id::save_progress_row(conn, id, &encode(read)?, &encode(progress)?).await?)
}

/// Why [`progress_cas`] saved nothing: the progress changed (still pending),
/// or the question ended (or is gone).
async fn not_saved(conn: &mut sqlx::PgConnection, id: &QuestionId) -> Result<ProgressSaved, StoreError> {
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM questions WHERE id = $1")
        .bind(id.as_str())
        .fetch_optional(conn)
        .await?;
    Ok(match status {
        Some(status) if status == QuestionStatus::Pending.as_str() => ProgressSaved::Changed,
        _ => ProgressSaved::Ended,
    })
}

/// Records an inbound event in a transaction; false when it was recorded
/// already.
async fn record_event_in(conn: &mut sqlx::PgConnection, event: EventKey<'_>) -> Result<bool, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO inbound_events (channel, event_id) VALUES ($1, $2) ON CONFLICT (channel, event_id) DO NOTHING",
    )
    .bind(event.channel)
    .bind(event.event_id)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Indexes one message under a question, on the question's channel; a
/// message indexed under another question moves to this one. False when
/// there is no such question.
async fn index_message(
    conn: &mut sqlx::PgConnection,
    id: &QuestionId,
    channel: &str,
    message: &MessageRef,
) -> Result<bool, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO messages (channel, conversation, message, question_id) \
         SELECT $4, $1, $2, id FROM questions WHERE id = $3 \
         ON CONFLICT (channel, conversation, message) DO UPDATE SET question_id = excluded.question_id",
    )
    .bind(message.conversation.as_str())
    .bind(message.message.as_str())
    .bind(id.as_str())
    .bind(channel)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() > 0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{RETRY_MAX, pause};

    /// 100 ms after the first failure, doubling, never more than
    /// [`RETRY_MAX`] however many failures in a row.
    #[test]
    fn the_pause_doubles_up_to_its_bound() {
        assert_eq!(pause(0), Duration::from_millis(100));
        assert_eq!(pause(1), Duration::from_millis(200));
        assert_eq!(pause(5), Duration::from_millis(3_200));
        assert_eq!(pause(6), RETRY_MAX);
        assert_eq!(pause(u32::MAX), RETRY_MAX);
    }
}
