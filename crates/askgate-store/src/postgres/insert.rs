//! [`crate::Store::insert_with`] on PostgreSQL: one transaction checks the
//! idempotency key, locks and reads the counters of capped scopes, and
//! inserts the row (and the key's row, and the callback's).
//!
//! Two replicas inserting at once can collide on a unique index: the same
//! idempotency key (both saw none), the same agent session (both saw it
//! free), or the same id. The transaction is then rolled back and the
//! collision named: a question that holds the id is
//! [`StoreError::Duplicate`], a session's pending question
//! [`StoreError::SessionBusy`]; a collision whose cause has gone by the time
//! it is looked at (the key's first insert committed, the session's
//! question ended) is tried again, a bounded number of times.

use sqlx::postgres::PgPool;
use sqlx::{PgConnection, Postgres, Transaction};

use super::select_questions;
use crate::row::{QuestionRow, decode_id, encode};
use crate::{IdempotencyKey, InsertRules, Inserted, PendingScope, QuestionRecord, QuestionStatus, StoreError};

/// Attempts after a collision whose cause was gone when looked at.
const ATTEMPTS: usize = 4;

/// What one attempt ended in.
enum Attempt {
    Done(Inserted),
    /// A unique index refused the row: its name.
    Collided(String),
}

pub(super) async fn insert(
    pool: &PgPool,
    question: &QuestionRecord,
    rules: &InsertRules,
) -> Result<Inserted, StoreError> {
    let columns = Columns {
        request: encode(&question.request)?,
        surfaces: encode(&question.surfaces)?,
        progress: encode(&question.progress)?,
        resolution: question.resolution.as_ref().map(encode).transpose()?,
        steps: encode(&question.steps)?,
    };
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let mut tx = pool.begin().await?;
        match attempt(&mut tx, question, &columns, rules).await? {
            Attempt::Done(inserted) => {
                tx.commit().await?;
                return Ok(inserted);
            }
            Attempt::Collided(constraint) => {
                tx.rollback().await?;
                if let Some(error) = collision(pool, question, &constraint).await? {
                    return Err(error);
                }
                last = constraint;
            }
        }
    }
    Err(StoreError::Unavailable(format!(
        "the insert of question {} kept colliding on {last} with other writes",
        question.id
    )))
}

/// The question's JSON columns, encoded once for every attempt.
struct Columns {
    request: String,
    surfaces: String,
    progress: String,
    resolution: Option<String>,
    steps: String,
}

async fn attempt(
    tx: &mut Transaction<'static, Postgres>,
    question: &QuestionRecord,
    columns: &Columns,
    rules: &InsertRules,
) -> Result<Attempt, StoreError> {
    if let Some(key) = &rules.idempotency
        && let Some(existing) = keyed(tx, &question.agent, key).await?
    {
        return Ok(Attempt::Done(Inserted::Existing(Box::new(existing))));
    }
    if question.status == QuestionStatus::Pending {
        // The agent's row first, then the recipient's: the order the
        // trigger updates them in.
        check_cap(
            tx,
            PendingScope::Agent(question.agent.clone()),
            rules.max_pending_per_agent,
        )
        .await?;
        check_cap(
            tx,
            PendingScope::Recipient(question.recipient.clone()),
            rules.max_pending_per_recipient,
        )
        .await?;
    }
    let inserted = sqlx::query(
        "INSERT INTO questions (id, status, agent, session_id, run_id, recipient, surfaces, \
         locale, request, created_at, expires_at, progress, resolution, resolved_at, finished, \
         steps, next_step_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
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
    .bind(question.resolution.as_ref().map(|resolution| resolution.at))
    .bind(crate::surfaces::all_finished(&question.surfaces))
    .bind(&columns.steps)
    .bind(question.next_step_at())
    .execute(&mut **tx)
    .await;
    if let Some(constraint) = unique_violation(&inserted) {
        return Ok(Attempt::Collided(constraint));
    }
    inserted?;
    if let Some(key) = &rules.idempotency {
        let keyed =
            sqlx::query("INSERT INTO idempotency_keys (agent, key, fingerprint, question_id) VALUES ($1, $2, $3, $4)")
                .bind(&question.agent)
                .bind(&key.key)
                .bind(&key.fingerprint)
                .bind(question.id.as_str())
                .execute(&mut **tx)
                .await;
        if let Some(constraint) = unique_violation(&keyed) {
            return Ok(Attempt::Collided(constraint));
        }
        keyed?;
    }
    if let Some(callback) = &rules.callback {
        super::callbacks::add(tx, &question.id, callback).await?;
    }
    Ok(Attempt::Done(Inserted::New))
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

/// The question an agent's idempotency key was first used for, when it was
/// used with the same request; [`StoreError::KeyReused`] when with another.
async fn keyed(
    conn: &mut PgConnection,
    agent: &str,
    key: &IdempotencyKey,
) -> Result<Option<QuestionRecord>, StoreError> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT question_id, fingerprint FROM idempotency_keys WHERE agent = $1 AND key = $2")
            .bind(agent)
            .bind(&key.key)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((question, fingerprint)) = row else {
        return Ok(None);
    };
    let question = decode_id(&question)?;
    if fingerprint != key.fingerprint {
        return Err(StoreError::KeyReused { question });
    }
    let row = sqlx::query_as::<_, QuestionRow>(select_questions!("WHERE id = $1"))
        .bind(question.as_str())
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => row.decode().map(Some),
        None => Err(StoreError::Corrupt(format!(
            "idempotency key {:?}: its question {question} is gone",
            key.key
        ))),
    }
}

/// Refuses when `scope` has `limit` pending questions already. The upsert
/// locks the scope's counter row until the transaction ends (creating it at
/// 0 when missing), so that two replicas inserting under one cap take turns
/// instead of both reading the count below it.
async fn check_cap(conn: &mut PgConnection, scope: PendingScope, limit: Option<u32>) -> Result<(), StoreError> {
    let Some(limit) = limit else {
        return Ok(());
    };
    let (kind, who) = match &scope {
        PendingScope::Agent(agent) => ("agent", agent),
        PendingScope::Recipient(recipient) => ("recipient", recipient),
    };
    let count: i64 = sqlx::query_scalar(
        "INSERT INTO pending_counts (scope, who, pending) VALUES ($1, $2, 0) \
         ON CONFLICT (scope, who) DO UPDATE SET pending = pending_counts.pending RETURNING pending",
    )
    .bind(kind)
    .bind(who.as_str())
    .fetch_one(&mut *conn)
    .await?;
    if count >= i64::from(limit) {
        return Err(StoreError::TooManyPending { scope, limit });
    }
    Ok(())
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
