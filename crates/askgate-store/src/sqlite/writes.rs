//! The writes of the embedded store, as the writer thread runs them: each
//! inside the thread's transaction (in a savepoint of its own), so none
//! begins or commits anything itself. Values are encoded by the caller,
//! before the hand-off, so the one writer thread spends its time on SQL.

use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::MessageRef;
use rusqlite::{Connection, OptionalExtension as _, params};

use super::writer::unavailable;
use crate::readiness::{PROBE_BYTES, PROBE_KEY};
use crate::row::{QuestionRow, decode_id, decode_json, encode, question_columns};
use crate::steps::{self, StepWrite};
use crate::surfaces::{self, SurfaceWrite, all_finished};
use crate::{
    IdempotencyKey, InsertRules, Inserted, PendingScope, ProgressSaved, Pruned, QuestionRecord, QuestionStatus,
    StoreError, Timestamp,
};

/// A question as [`insert`] writes it: its columns, JSON already encoded.
#[derive(Debug)]
pub(super) struct NewQuestion {
    pub(super) record: QuestionRecord,
    pub(super) request: String,
    pub(super) surfaces: String,
    pub(super) progress: String,
    pub(super) resolution: Option<String>,
    pub(super) steps: String,
}

/// [`crate::Store::insert_with`]: the idempotency key, the caps, then the
/// row (and the key's row, and the callback's).
pub(super) fn insert(conn: &Connection, new: &NewQuestion, rules: &InsertRules) -> Result<Inserted, StoreError> {
    let question = &new.record;
    if let Some(key) = &rules.idempotency
        && let Some(existing) = keyed(conn, &question.agent, key)?
    {
        return Ok(Inserted::Existing(Box::new(existing)));
    }
    let pending = question.status == QuestionStatus::Pending;
    if pending {
        check_cap(
            conn,
            PendingScope::Agent(question.agent.clone()),
            rules.max_pending_per_agent,
        )?;
        check_cap(
            conn,
            PendingScope::Recipient(question.recipient.clone()),
            rules.max_pending_per_recipient,
        )?;
    }
    let resolved_at = question.resolution.as_ref().map(|resolution| resolution.at);
    let inserted = conn
        .prepare_cached(
            "INSERT INTO questions (id, status, agent, session_id, run_id, recipient, surfaces, \
             locale, request, created_at, expires_at, progress, resolution, resolved_at, finished, \
             steps, next_step_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                question.id.as_str(),
                question.status.as_str(),
                question.agent,
                question.session_id,
                question.run_id,
                question.recipient,
                new.surfaces,
                question.locale.as_str(),
                new.request,
                question.created_at,
                question.expires_at,
                new.progress,
                new.resolution,
                resolved_at,
                all_finished(&question.surfaces),
                new.steps,
                question.next_step_at(),
            ])
        });
    match inserted {
        Ok(_) => {}
        Err(error) if is_unique_violation(&error) => return Err(conflict(conn, question, error)?),
        Err(error) => return Err(unavailable(error)),
    }
    if let Some(key) = &rules.idempotency {
        conn.prepare_cached("INSERT INTO idempotency_keys (agent, key, fingerprint, question_id) VALUES (?, ?, ?, ?)")
            .and_then(|mut statement| {
                statement.execute(params![question.agent, key.key, key.fingerprint, question.id.as_str()])
            })
            .map_err(unavailable)?;
    }
    if let Some(callback) = &rules.callback {
        super::callbacks::add(conn, &question.id, callback)?;
    }
    Ok(Inserted::New)
}

fn is_unique_violation(error: &rusqlite::Error) -> bool {
    error.sqlite_error().is_some_and(|error| {
        matches!(
            error.extended_code,
            rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
        )
    })
}

/// The question an agent's idempotency key was first used for, when it was
/// used with the same request; [`StoreError::KeyReused`] when with another.
fn keyed(conn: &Connection, agent: &str, key: &IdempotencyKey) -> Result<Option<QuestionRecord>, StoreError> {
    let row: Option<(String, String)> = conn
        .prepare_cached("SELECT question_id, fingerprint FROM idempotency_keys WHERE agent = ? AND key = ?")
        .and_then(|mut statement| {
            statement
                .query_row(params![agent, key.key], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(unavailable)?;
    let Some((question, fingerprint)) = row else {
        return Ok(None);
    };
    let question = decode_id(&question)?;
    if fingerprint != key.fingerprint {
        return Err(StoreError::KeyReused { question });
    }
    read(conn, &question)?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "idempotency key {:?}: its question {question} is gone",
                key.key
            ))
        })
        .map(Some)
}

/// One question, read inside the transaction.
fn read(conn: &Connection, id: &QuestionId) -> Result<Option<QuestionRecord>, StoreError> {
    let row = QuestionRow::by_id(conn, id).map_err(unavailable)?;
    row.map(QuestionRow::decode).transpose()
}

/// Refuses when `scope` has `limit` pending questions already.
fn check_cap(conn: &Connection, scope: PendingScope, limit: Option<u32>) -> Result<(), StoreError> {
    let Some(limit) = limit else {
        return Ok(());
    };
    // `pending_counts` is kept by triggers in the same transaction as each
    // insert and resolution (migration 0004): one row, however many are pending.
    let (kind, who) = match &scope {
        PendingScope::Agent(agent) => ("agent", agent),
        PendingScope::Recipient(recipient) => ("recipient", recipient),
    };
    let count: i64 = conn
        .prepare_cached("SELECT pending FROM pending_counts WHERE scope = ? AND who = ?")
        .and_then(|mut statement| statement.query_row([kind, who.as_str()], |row| row.get(0)).optional())
        .map_err(unavailable)?
        .unwrap_or(0);
    if count >= i64::from(limit) {
        return Err(StoreError::TooManyPending { scope, limit });
    }
    Ok(())
}

/// What an insert that broke a unique constraint collided with: the id, or
/// the session's pending question. Anything else is the database's own
/// error, returned as it was.
fn conflict(conn: &Connection, question: &QuestionRecord, error: rusqlite::Error) -> Result<StoreError, StoreError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM questions WHERE id = ?")
        .and_then(|mut statement| statement.exists([question.id.as_str()]))
        .map_err(unavailable)?;
    if exists {
        return Ok(StoreError::Duplicate(question.id.clone()));
    }
    if let Some(session) = &question.session_id {
        let pending: Option<String> = conn
            .prepare_cached(
                "SELECT id FROM questions WHERE agent = ? AND session_id = ? AND status = 'pending' LIMIT 1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row(params![question.agent, session], |row| row.get(0))
                    .optional()
            })
            .map_err(unavailable)?;
        if let Some(pending) = pending {
            return Ok(StoreError::SessionBusy {
                session: session.clone(),
                pending: decode_id(&pending)?,
            });
        }
    }
    Ok(unavailable(error))
}

/// A write to the question's surface on `channel` ([`SurfaceWrite`]), and
/// for a delivery an index entry per message: the question as it is after,
/// or `None` when there is no such question. The list is read and written
/// back on the one writer thread, so no other write comes in between.
pub(super) fn write_surface(
    conn: &Connection,
    id: &QuestionId,
    channel: &str,
    write: &SurfaceWrite<'_>,
) -> Result<Option<QuestionRecord>, StoreError> {
    let Some(mut record) = read(conn, id)? else {
        return Ok(None);
    };
    surfaces::apply(id, &mut record.surfaces, channel, write)?;
    let json = encode(&record.surfaces)?;
    // The channel the messages are on: `channel` names the surface, which
    // for an escalated one is `channel@recipient`.
    let on = record
        .surface_by_key(channel)
        .map_or_else(|| channel.to_owned(), |surface| surface.channel.clone());
    conn.prepare_cached("UPDATE questions SET surfaces = ?, finished = ? WHERE id = ?")
        .and_then(|mut statement| {
            statement.execute(params![json, surfaces::all_finished(&record.surfaces), id.as_str()])
        })
        .map_err(unavailable)?;
    if let SurfaceWrite::Delivered(delivery) = write {
        for message in &delivery.messages {
            index_message(conn, id, &on, message)?;
        }
    }
    Ok(Some(record))
}

/// [`crate::Store::take_step`]: the plan (and an escalation's surfaces)
/// read and written back on the one writer thread, so that one write wins.
pub(super) fn take_step(
    conn: &Connection,
    id: &QuestionId,
    write: &StepWrite<'_>,
) -> Result<Option<QuestionRecord>, StoreError> {
    let Some(mut record) = read(conn, id)? else {
        return Ok(None);
    };
    if !steps::apply(&mut record, write) {
        return Ok(None);
    }
    let (steps, surfaces) = (encode(&record.steps)?, encode(&record.surfaces)?);
    conn.prepare_cached("UPDATE questions SET steps = ?, next_step_at = ?, surfaces = ?, finished = ? WHERE id = ?")
        .and_then(|mut statement| {
            statement.execute(params![
                steps,
                record.next_step_at(),
                surfaces,
                surfaces::all_finished(&record.surfaces),
                id.as_str()
            ])
        })
        .map_err(unavailable)?;
    Ok(Some(record))
}

/// [`crate::Store::attach_message`].
pub(super) fn attach_message(
    conn: &Connection,
    id: &QuestionId,
    channel: &str,
    message: &MessageRef,
) -> Result<(), StoreError> {
    if index_message(conn, id, channel, message)? {
        Ok(())
    } else {
        Err(StoreError::UnknownQuestion(id.clone()))
    }
}

/// Indexes one message on `channel` under a question; a message indexed
/// under another question moves to this one (the newest delivery is what
/// the platform shows). False when there is no such question.
fn index_message(conn: &Connection, id: &QuestionId, channel: &str, message: &MessageRef) -> Result<bool, StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO messages (channel, conversation, message, question_id) \
             SELECT ?, ?, ?, id FROM questions WHERE id = ? \
             ON CONFLICT (channel, conversation, message) DO UPDATE SET question_id = excluded.question_id",
        )
        .and_then(|mut statement| {
            statement.execute(params![channel, message.conversation, message.message, id.as_str()])
        })
        .map_err(unavailable)?;
    Ok(inserted > 0)
}

/// [`crate::Store::save_progress`]: saved when the question is pending and
/// its progress is still what was `read` (compared as values, not as JSON
/// text, whose key order is not the point).
pub(super) fn save_progress(
    conn: &Connection,
    id: &QuestionId,
    read: &Answers,
    progress: &str,
) -> Result<ProgressSaved, StoreError> {
    let stored: Option<(String, String)> = conn
        .prepare_cached("SELECT status, progress FROM questions WHERE id = ?")
        .and_then(|mut statement| {
            statement
                .query_row([id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(unavailable)?;
    let Some((_, stored)) = stored.filter(|(status, _)| status == QuestionStatus::Pending.as_str()) else {
        return Ok(ProgressSaved::Ended);
    };
    let stored: Answers = decode_json(id.as_str(), "progress", &stored)?;
    if &stored != read {
        return Ok(ProgressSaved::Changed);
    }
    conn.prepare_cached("UPDATE questions SET progress = ? WHERE id = ?")
        .and_then(|mut statement| statement.execute(params![progress, id.as_str()]))
        .map_err(unavailable)?;
    Ok(ProgressSaved::Saved)
}

/// [`crate::Store::resolve`]: the compare-and-set from `pending`, returning
/// the row as it is now when this call resolved it.
pub(super) fn resolve(
    conn: &Connection,
    id: &QuestionId,
    status: QuestionStatus,
    resolution: &str,
    at: Timestamp,
) -> Result<Option<QuestionRecord>, StoreError> {
    // Only the first resolution finds it pending, and a person's only while
    // the question is not yet due.
    let by_person = status.is_by_person();
    let row = conn
        .prepare_cached(concat!(
            "UPDATE questions SET status = ?, resolution = ?, resolved_at = ? \
             WHERE id = ? AND status = 'pending' AND (? = 0 OR expires_at > ?) RETURNING ",
            question_columns!()
        ))
        .and_then(|mut statement| {
            statement
                .query_row(
                    params![status.as_str(), resolution, at, id.as_str(), by_person, at],
                    QuestionRow::from_rusqlite,
                )
                .optional()
        })
        .map_err(unavailable)?;
    // A row that cannot be read back must not half-resolve the question:
    // the error is a refusal, and the writer undoes the update with it.
    row.map(QuestionRow::decode).transpose()
}

/// [`crate::Store::expire_due`]: one process per file, so nothing to skip.
pub(super) fn expire_due(
    conn: &Connection,
    status: QuestionStatus,
    resolution: &str,
    at: Timestamp,
    limit: u32,
) -> Result<Vec<QuestionRecord>, StoreError> {
    let rows = conn
        .prepare_cached(concat!(
            "UPDATE questions SET status = ?1, resolution = ?2, resolved_at = ?3 \
             WHERE id IN (SELECT id FROM questions WHERE status = 'pending' AND expires_at <= ?3 \
             ORDER BY expires_at LIMIT ?4) RETURNING ",
            question_columns!()
        ))
        .and_then(|mut statement| {
            statement
                .query_map(
                    params![status.as_str(), resolution, at, limit],
                    QuestionRow::from_rusqlite,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(unavailable)?;
    Ok(crate::row::decode_expired(rows))
}

/// [`crate::Store::record_event`]: true the first time.
pub(super) fn record_event(conn: &Connection, channel: &str, event_id: &str) -> Result<bool, StoreError> {
    let inserted = conn
        .prepare_cached("INSERT OR IGNORE INTO inbound_events (channel, event_id) VALUES (?, ?)")
        .and_then(|mut statement| statement.execute(params![channel, event_id]))
        .map_err(unavailable)?;
    Ok(inserted == 1)
}

/// Undoes [`record_event`] inside the same transaction.
pub(super) fn forget_event(conn: &Connection, channel: &str, event_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM inbound_events WHERE channel = ? AND event_id = ?")
        .and_then(|mut statement| statement.execute(params![channel, event_id]))
        .map_err(unavailable)?;
    Ok(())
}

/// [`crate::Store::set_setting`].
pub(super) fn set_setting(conn: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .and_then(|mut statement| statement.execute(params![key, value]))
    .map_err(unavailable)?;
    Ok(())
}

/// Readiness's probe (`crate::readiness`): the [`PROBE_KEY`] setting
/// rewritten with [`PROBE_BYTES`] of fresh random text, so that the commit
/// needs as many new pages in the `-wal` file as a large question.
pub(super) fn probe(conn: &Connection) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO settings (key, value) VALUES (?1, hex(randomblob(?2))) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .and_then(|mut statement| statement.execute(params![PROBE_KEY, PROBE_BYTES / 2]))
    .map_err(unavailable)?;
    Ok(())
}

/// [`crate::Store::insert_setting`]: true when this call set it.
pub(super) fn insert_setting(conn: &Connection, key: &str, value: &str) -> Result<bool, StoreError> {
    let inserted = conn
        .prepare_cached("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING")
        .and_then(|mut statement| statement.execute(params![key, value]))
        .map_err(unavailable)?;
    Ok(inserted == 1)
}

/// [`crate::Store::try_lease`]: one upsert whose update applies only to
/// the owner's own or an expired lease.
pub(super) fn try_lease(
    conn: &Connection,
    name: &str,
    owner: &str,
    now: Timestamp,
    until: Timestamp,
) -> Result<bool, StoreError> {
    let taken = conn
        .prepare_cached(
            "INSERT INTO leases (name, owner, until) VALUES (?1, ?2, ?4) \
             ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until \
             WHERE leases.owner = excluded.owner OR leases.until <= ?3",
        )
        .and_then(|mut statement| statement.execute(params![name, owner, now, until]))
        .map_err(unavailable)?;
    Ok(taken == 1)
}

/// [`crate::Store::set_setting_leased`].
pub(super) fn set_setting_leased(
    conn: &Connection,
    key: &str,
    value: &str,
    lease: &str,
    owner: &str,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let set = conn
        .prepare_cached(
            "INSERT INTO settings (key, value) SELECT ?1, ?2 \
             WHERE EXISTS (SELECT 1 FROM leases WHERE name = ?3 AND owner = ?4 AND until > ?5) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .and_then(|mut statement| statement.execute(params![key, value, lease, owner, now]))
        .map_err(unavailable)?;
    Ok(set == 1)
}

/// [`crate::Store::release_lease`].
pub(super) fn release_lease(conn: &Connection, name: &str, owner: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM leases WHERE name = ? AND owner = ?")
        .and_then(|mut statement| statement.execute(params![name, owner]))
        .map_err(unavailable)?;
    Ok(())
}

/// [`crate::Store::prune`]. Messages and idempotency keys go with their
/// question (`ON DELETE CASCADE`). `questions_ended_before` and
/// `inbound_events_received` find what is due without a scan.
pub(super) fn prune(conn: &Connection, ended_before: Timestamp, limit: u32) -> Result<Pruned, StoreError> {
    let questions = conn
        .prepare_cached(
            "DELETE FROM questions WHERE rowid IN (SELECT rowid FROM questions \
             WHERE status <> 'pending' AND resolved_at < ? ORDER BY resolved_at LIMIT ?)",
        )
        .and_then(|mut statement| statement.execute(params![ended_before, limit]))
        .map_err(unavailable)?;
    let events = conn
        .prepare_cached(
            "DELETE FROM inbound_events WHERE rowid IN (SELECT rowid FROM inbound_events \
             WHERE received_at < ? ORDER BY received_at LIMIT ?)",
        )
        .and_then(|mut statement| statement.execute(params![ended_before, limit]))
        .map_err(unavailable)?;
    // Leases past their end long ago (a prompt's `deliver:<id>`).
    conn.prepare_cached("DELETE FROM leases WHERE until < ?")
        .and_then(|mut statement| statement.execute(params![ended_before]))
        .map_err(unavailable)?;
    Ok(Pruned {
        questions: questions as u64,
        events: events as u64,
    })
}
