//! [`crate::Store`]'s callbacks on PostgreSQL: every replica sweeps, and
//! `FOR UPDATE SKIP LOCKED` with a lease lets one replica send each attempt.
//! A callback is written by the question's insert (`insert.rs`).

use askgate_core::QuestionId;

use crate::callbacks::{decode_attempts, encode_attempts};
use crate::{CallbackAttempt, DueCallback, StoreError, Timestamp};

/// [`crate::Store::callbacks_due`].
pub(super) async fn due(
    pool: &sqlx::PgPool,
    now: Timestamp,
    lease_until: Timestamp,
    limit: u32,
) -> Result<Vec<DueCallback>, StoreError> {
    let rows: Vec<(String, String, String, Option<i64>)> = sqlx::query_as(
        "UPDATE callbacks SET leased_until = $2 WHERE question_id IN \
         (SELECT question_id FROM callbacks WHERE due_at IS NOT NULL AND due_at <= $1 \
          AND (leased_until IS NULL OR leased_until <= $1) ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED) \
         RETURNING question_id, url, attempts, until",
    )
    .bind(now)
    .bind(lease_until)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    crate::callbacks::due_callbacks(rows, now)
}

/// [`crate::Store::record_callback`]: the row held `FOR UPDATE` between
/// the read and the write.
pub(super) async fn record(
    pool: &sqlx::PgPool,
    id: &QuestionId,
    attempt: &CallbackAttempt,
    next: Option<Timestamp>,
) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    let attempts: Option<String> =
        sqlx::query_scalar("SELECT attempts FROM callbacks WHERE question_id = $1 FOR UPDATE")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await?;
    let Some(attempts) = attempts else {
        return Ok(());
    };
    let mut attempts = decode_attempts(&attempts);
    attempts.push(attempt.clone());
    sqlx::query("UPDATE callbacks SET attempts = $2, due_at = $3, leased_until = NULL WHERE question_id = $1")
        .bind(id.as_str())
        .bind(encode_attempts(&attempts))
        .bind(next)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// [`crate::Store::callback_attempts`].
pub(super) async fn attempts(
    pool: &sqlx::PgPool,
    id: &QuestionId,
) -> Result<Option<Vec<crate::CallbackAttempt>>, StoreError> {
    let attempts: Option<String> = sqlx::query_scalar("SELECT attempts FROM callbacks WHERE question_id = $1")
        .bind(id.as_str())
        .fetch_optional(pool)
        .await?;
    Ok(attempts.as_deref().map(decode_attempts))
}
