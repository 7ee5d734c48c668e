//! [`crate::Store`]'s callback writes on the writer thread: one process per
//! file, so a due callback is leased by the write that takes it and
//! nothing needs skipping.

use askgate_core::QuestionId;
use rusqlite::{Connection, params};

use super::writer::unavailable;
use crate::callbacks::{decode_attempts, encode_attempts};
use crate::{CallbackAttempt, DueCallback, NewCallback, StoreError, Timestamp};

/// Records the callback of the question just inserted, in the insert's
/// write ([`crate::InsertRules::callback`]): armed at once when the
/// question was stored already ended (the trigger only arms those that end
/// after).
pub(super) fn add(conn: &Connection, id: &QuestionId, callback: &NewCallback) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO callbacks (question_id, url, window_ms, due_at, until) \
         SELECT id, ?2, ?3, CASE WHEN status <> 'pending' THEN resolved_at END, \
                CASE WHEN status <> 'pending' THEN resolved_at + ?3 END \
         FROM questions WHERE id = ?1 \
         ON CONFLICT (question_id) DO NOTHING",
    )
    .and_then(|mut statement| statement.execute(params![id.as_str(), callback.url, callback.window_ms]))
    .map_err(unavailable)?;
    Ok(())
}

/// [`crate::Store::callbacks_due`].
pub(super) fn due(
    conn: &Connection,
    now: Timestamp,
    lease_until: Timestamp,
    limit: u32,
) -> Result<Vec<DueCallback>, StoreError> {
    let rows = conn
        .prepare_cached(
            "UPDATE callbacks SET leased_until = ?2 WHERE question_id IN \
             (SELECT question_id FROM callbacks WHERE due_at IS NOT NULL AND due_at <= ?1 \
              AND (leased_until IS NULL OR leased_until <= ?1) ORDER BY due_at LIMIT ?3) \
             RETURNING question_id, url, attempts, until",
        )
        .and_then(|mut statement| {
            statement
                .query_map(params![now, lease_until, limit], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(unavailable)?;
    crate::callbacks::due_callbacks(rows, now)
}

/// [`crate::Store::record_callback`]: read and written back under the one
/// writer, so two records cannot lose each other's attempt.
pub(super) fn record(
    conn: &Connection,
    id: &QuestionId,
    attempt: &CallbackAttempt,
    next: Option<Timestamp>,
) -> Result<(), StoreError> {
    let attempts: Option<String> = conn
        .prepare_cached("SELECT attempts FROM callbacks WHERE question_id = ?")
        .and_then(|mut statement| {
            rusqlite::OptionalExtension::optional(statement.query_row(params![id.as_str()], |row| row.get(0)))
        })
        .map_err(unavailable)?;
    let Some(attempts) = attempts else {
        return Ok(());
    };
    let mut attempts = decode_attempts(&attempts);
    attempts.push(attempt.clone());
    conn.prepare_cached("UPDATE callbacks SET attempts = ?2, due_at = ?3, leased_until = NULL WHERE question_id = ?1")
        .and_then(|mut statement| statement.execute(params![id.as_str(), encode_attempts(&attempts), next]))
        .map_err(unavailable)?;
    Ok(())
}
