//! [`crate::Store::insert_with`] on PostgreSQL: one statement, in one round
//! trip, checks the idempotency key, makes sure there is room under the
//! caps, and inserts the row (and the key's row, and the callback's), as
//! data-modifying `WITH` queries of one `INSERT`, committed on its own.
//!
//! The caps: `askgate_pending_room` (migration 0008) takes a shared advisory
//! lock per capped scope and reads its count, kept in stripes that
//! concurrent writers rarely share, in a snapshot taken after the lock. Far
//! from the cap (the count plus `max_connections`, more inserts than could be
//! under way at once, still within it) the insert goes ahead; near it, the
//! statement inserts nothing and says so, and is made again in exact mode,
//! under exclusive locks, where the count is exact. So caps hold exactly
//! across replicas while inserts far from them never wait for each other.
//!
//! Two replicas inserting at once can collide on a unique index: the same
//! idempotency key (both saw none), the same agent session (both saw it
//! free), or the same id. The statement then fails as a whole and the
//! collision is named: a question that holds the id is
//! [`StoreError::Duplicate`], a session's pending question
//! [`StoreError::SessionBusy`]; a collision whose cause has gone by the time
//! it is looked at (the key's first insert committed, the session's
//! question ended) is tried again, a bounded number of times.

use sqlx::postgres::PgPool;

use super::select_questions;
use crate::row::{QuestionRow, decode_id, encode};
use crate::{IdempotencyKey, InsertRules, Inserted, PendingScope, QuestionRecord, QuestionStatus, StoreError};

/// Attempts after a collision whose cause was gone when looked at.
const ATTEMPTS: usize = 4;

/// The insert: `$1`–`$17` the question's columns, `$18`–`$21` the caps
/// (`askgate_pending_room`'s arguments after the names), `$22`–`$23` the
/// idempotency key and fingerprint, `$24`–`$26` the callback's URL, window
/// and due time. Answers one row: whether it inserted, the room the caps
/// left, and the question an existing key names, with its fingerprint.
const INSERT: &str = "\
    WITH room AS (SELECT askgate_pending_room($3, $6, $18, $19, $20) AS room), \
    existing AS ( \
        SELECT question_id, fingerprint FROM idempotency_keys \
        WHERE $21 AND agent = $3 AND key = $22::text), \
    inserted AS ( \
        INSERT INTO questions (id, status, agent, session_id, run_id, recipient, surfaces, \
            locale, request, created_at, expires_at, progress, resolution, resolved_at, finished, \
            steps, next_step_at) \
        SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17 \
        FROM room WHERE room.room = 'ok' AND NOT EXISTS (SELECT 1 FROM existing) \
        RETURNING id), \
    keyed AS ( \
        INSERT INTO idempotency_keys (agent, key, fingerprint, question_id) \
        SELECT $3, $22::text, $23::text, id FROM inserted WHERE $21), \
    hooked AS ( \
        INSERT INTO callbacks (question_id, url, window_ms, due_at, until) \
        SELECT id, $24::text, $25::bigint, $26::bigint, $26::bigint + $25::bigint \
        FROM inserted WHERE $24::text IS NOT NULL) \
    SELECT EXISTS (SELECT 1 FROM inserted), room.room, \
        (SELECT question_id FROM existing), (SELECT fingerprint FROM existing) \
    FROM room";

/// What one statement did.
enum Attempt {
    /// Inserted, or found by its key.
    Done(Inserted),
    /// Near a cap: to be made again in exact mode.
    Near,
    /// A unique index refused the row: its name.
    Collided(String),
}

pub(super) async fn insert(
    pool: &PgPool,
    question: &QuestionRecord,
    rules: &InsertRules,
) -> Result<Inserted, StoreError> {
    let columns = Columns::of(question)?;
    let mut last = String::new();
    let mut exact = false;
    let mut attempts = 0;
    while attempts < ATTEMPTS {
        match attempt(pool, question, &columns, rules, exact).await? {
            Attempt::Done(inserted) => return Ok(inserted),
            // Once per insert: the exact mode never says `near`.
            Attempt::Near => exact = true,
            Attempt::Collided(constraint) => {
                if let Some(error) = collision(pool, question, &constraint).await? {
                    return Err(error);
                }
                last = constraint;
                attempts += 1;
            }
        }
    }
    Err(StoreError::Unavailable(format!(
        "the insert of question {} kept colliding on {last} with other writes",
        question.id
    )))
}

/// The question's JSON columns, encoded once for every attempt (and for a
/// batch's row, `super::batch`).
pub(super) struct Columns {
    pub(super) request: String,
    pub(super) surfaces: String,
    pub(super) progress: String,
    pub(super) resolution: Option<String>,
    pub(super) steps: String,
}

impl Columns {
    pub(super) fn of(question: &QuestionRecord) -> Result<Self, StoreError> {
        Ok(Self {
            request: encode(&question.request)?,
            surfaces: encode(&question.surfaces)?,
            progress: encode(&question.progress)?,
            resolution: question.resolution.as_ref().map(encode).transpose()?,
            steps: encode(&question.steps)?,
        })
    }
}

async fn attempt(
    pool: &PgPool,
    question: &QuestionRecord,
    columns: &Columns,
    rules: &InsertRules,
    exact: bool,
) -> Result<Attempt, StoreError> {
    // A question stored pending counts under the caps; one stored ended
    // (not made by askgate itself) does not.
    let pending = question.status == QuestionStatus::Pending;
    let limit = |limit: Option<u32>| limit.filter(|_| pending).map(i64::from);
    let resolved_at = question.resolution.as_ref().map(|resolution| resolution.at);
    let callback = rules.callback.as_ref();
    let row: Result<(bool, String, Option<String>, Option<String>), sqlx::Error> = sqlx::query_as(INSERT)
        .bind(question.id.as_str())
        .bind(question.status.as_str())
        .bind(&question.agent)
        .bind(&question.session_id)
        .bind(&question.run_id)
        .bind(&question.recipient)
        .bind(&columns.surfaces)
        .bind(question.locale.as_str())
        .bind(&columns.request)
        .bind(question.created_at)
        .bind(question.expires_at)
        .bind(&columns.progress)
        .bind(&columns.resolution)
        .bind(resolved_at)
        .bind(crate::surfaces::all_finished(&question.surfaces))
        .bind(&columns.steps)
        .bind(question.next_step_at())
        .bind(limit(rules.max_pending_per_agent))
        .bind(limit(rules.max_pending_per_recipient))
        .bind(exact)
        .bind(rules.idempotency.is_some())
        .bind(rules.idempotency.as_ref().map(|key| key.key.as_str()))
        .bind(rules.idempotency.as_ref().map(|key| key.fingerprint.as_str()))
        .bind(callback.map(|callback| callback.url.as_str()))
        .bind(callback.map(|callback| callback.window_ms))
        // A question stored already ended has its callback due at once
        // (the trigger arms only those that end later).
        .bind(resolved_at.filter(|_| !pending))
        .fetch_one(pool)
        .await;
    if let Some(constraint) = unique_violation(&row) {
        return Ok(Attempt::Collided(constraint));
    }
    let (inserted, room, existing, fingerprint) = row?;
    // The key first: a retry finds its question even when a cap is
    // reached since.
    if let (Some(key), Some(existing), Some(fingerprint)) = (&rules.idempotency, existing, fingerprint) {
        return keyed(pool, key, &existing, &fingerprint).await.map(Attempt::Done);
    }
    if inserted {
        return Ok(Attempt::Done(Inserted::New));
    }
    match room.as_str() {
        "near" => Ok(Attempt::Near),
        "agent" => Err(StoreError::TooManyPending {
            scope: PendingScope::Agent(question.agent.clone()),
            limit: rules.max_pending_per_agent.unwrap_or_default(),
        }),
        "recipient" => Err(StoreError::TooManyPending {
            scope: PendingScope::Recipient(question.recipient.clone()),
            limit: rules.max_pending_per_recipient.unwrap_or_default(),
        }),
        other => Err(StoreError::Corrupt(format!(
            "the cap check answered {other:?} and the question {} was not inserted",
            question.id
        ))),
    }
}

/// The unique index a failed statement collided with.
fn unique_violation<T>(result: &Result<T, sqlx::Error>) -> Option<String> {
    let Err(sqlx::Error::Database(error)) = result else {
        return None;
    };
    error
        .is_unique_violation()
        .then(|| error.constraint().unwrap_or("a unique index").to_owned())
}

/// The question an agent's idempotency key was first used for (`question`,
/// with `fingerprint`): it, when the key comes with the same request;
/// [`StoreError::KeyReused`] when with another.
async fn keyed(pool: &PgPool, key: &IdempotencyKey, question: &str, fingerprint: &str) -> Result<Inserted, StoreError> {
    let question = decode_id(question)?;
    if fingerprint != key.fingerprint {
        return Err(StoreError::KeyReused { question });
    }
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = $1"))
        .bind(question.as_str())
        .fetch_optional(pool)
        .await?;
    match row {
        Some(row) => Ok(Inserted::Existing(Box::new(row.decode()?))),
        None => Err(StoreError::Corrupt(format!(
            "idempotency key {:?}: its question {question} is gone",
            key.key
        ))),
    }
}

/// What a collision on `constraint` means, looked at after the rollback:
/// the error to return, or `None` to try again.
async fn collision(
    pool: &PgPool,
    question: &QuestionRecord,
    constraint: &str,
) -> Result<Option<StoreError>, StoreError> {
    match constraint {
        "questions_pkey" => Ok(Some(StoreError::Duplicate(question.id.clone()))),
        "questions_one_pending_per_session" => {
            let pending: Option<String> = sqlx::query_scalar(
                "SELECT id FROM questions WHERE agent = $1 AND session_id = $2 AND status = 'pending' LIMIT 1",
            )
            .bind(&question.agent)
            .bind(&question.session_id)
            .fetch_optional(pool)
            .await?;
            match (pending, &question.session_id) {
                (Some(pending), Some(session)) => Ok(Some(StoreError::SessionBusy {
                    session: session.clone(),
                    pending: decode_id(&pending)?,
                })),
                _ => Ok(None),
            }
        }
        // The key's first insert committed meanwhile: the next attempt
        // finds it (the same question, or a key reused).
        _ => Ok(None),
    }
}
