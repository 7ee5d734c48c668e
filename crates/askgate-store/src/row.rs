//! A `questions` row and the JSON of its columns, the same in both stores:
//! read by sqlx (SQLite's readers, every PostgreSQL query) and by rusqlite
//! (SQLite's writer thread) alike.

use std::str::FromStr;

use askgate_core::{AskRequest, Locale, QuestionId};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{QuestionRecord, QuestionStatus, StoreError};

/// The columns a [`QuestionRow`] is made of, in the order
/// [`QuestionRow::from_rusqlite`] reads them.
macro_rules! question_columns {
    () => {
        "id, status, agent, session_id, run_id, recipient, surfaces, locale, request, \
         created_at, expires_at, progress, resolution, steps"
    };
}
pub(crate) use question_columns;

/// A value as its JSON column holds it.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| sqlx::Error::Encode(Box::new(error)).into())
}

/// A JSON column read back; `what` names the column for the error.
pub(crate) fn decode_json<T: DeserializeOwned>(id: &str, what: &str, json: &str) -> Result<T, StoreError> {
    serde_json::from_str(json).map_err(|error| StoreError::Corrupt(format!("question {id}: column {what}: {error}")))
}

/// A question id read back from a column.
pub(crate) fn decode_id(id: &str) -> Result<QuestionId, StoreError> {
    QuestionId::parse(id).map_err(|error| StoreError::Corrupt(format!("question id {id:?}: {error}")))
}

pub(crate) fn decode_all(rows: Vec<QuestionRow>) -> Result<Vec<QuestionRecord>, StoreError> {
    rows.into_iter().map(QuestionRow::decode).collect()
}

/// The expired rows that can be read back, in deadline order (`RETURNING`
/// keeps none); the others are logged and left out: a batch that changed
/// them all must not be lost for one bad row.
pub(crate) fn decode_expired(rows: Vec<QuestionRow>) -> Vec<QuestionRecord> {
    let mut records: Vec<QuestionRecord> = rows
        .into_iter()
        .filter_map(|row| {
            row.decode()
                .inspect_err(|error| tracing::error!(%error, "a question expired by a sweep cannot be read back"))
                .ok()
        })
        .collect();
    records.sort_by(|a, b| (a.expires_at, a.id.as_str()).cmp(&(b.expires_at, b.id.as_str())));
    records
}

/// A `questions` row as the database has it, before its text is checked.
#[derive(sqlx::FromRow)]
pub(crate) struct QuestionRow {
    id: String,
    status: String,
    agent: String,
    session_id: Option<String>,
    run_id: Option<String>,
    recipient: String,
    surfaces: String,
    locale: String,
    request: String,
    created_at: i64,
    expires_at: i64,
    progress: String,
    resolution: Option<String>,
    steps: String,
}

impl QuestionRow {
    /// The id column as stored, before it is read as a [`QuestionId`].
    pub(crate) fn raw_id(&self) -> &str {
        &self.id
    }

    /// The record, or [`StoreError::Corrupt`] naming the question and the
    /// column that could not be read.
    pub(crate) fn decode(self) -> Result<QuestionRecord, StoreError> {
        let id = decode_id(&self.id)?;
        let raw = self.id.as_str();
        let status = QuestionStatus::from_str(&self.status)
            .map_err(|error| StoreError::Corrupt(format!("question {raw}: column status: {error}")))?;
        let locale = Locale::from_str(&self.locale)
            .map_err(|error| StoreError::Corrupt(format!("question {raw}: column locale: {error}")))?;
        let request: AskRequest = decode_json(raw, "request", &self.request)?;
        let surfaces = decode_json(raw, "surfaces", &self.surfaces)?;
        let progress = decode_json(raw, "progress", &self.progress)?;
        let resolution = self
            .resolution
            .as_deref()
            .map(|json| decode_json(raw, "resolution", json))
            .transpose()?;
        let steps = decode_json(raw, "steps", &self.steps)?;
        Ok(QuestionRecord {
            id,
            status,
            agent: self.agent,
            session_id: self.session_id,
            run_id: self.run_id,
            recipient: self.recipient,
            surfaces,
            locale,
            request,
            created_at: self.created_at,
            expires_at: self.expires_at,
            progress,
            resolution,
            steps,
        })
    }
}

impl QuestionRow {
    /// Question `id`'s row, read by rusqlite (the writer's transaction, and
    /// SQLite's reads by id on the caller's thread).
    pub(crate) fn by_id(conn: &rusqlite::Connection, id: &QuestionId) -> rusqlite::Result<Option<Self>> {
        use rusqlite::OptionalExtension as _;
        conn.prepare_cached(concat!("SELECT ", question_columns!(), " FROM questions WHERE id = ?"))?
            .query_row([id.as_str()], Self::from_rusqlite)
            .optional()
    }

    /// A row selected with [`question_columns`], read by rusqlite.
    pub(crate) fn from_rusqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            status: row.get(1)?,
            agent: row.get(2)?,
            session_id: row.get(3)?,
            run_id: row.get(4)?,
            recipient: row.get(5)?,
            surfaces: row.get(6)?,
            locale: row.get(7)?,
            request: row.get(8)?,
            created_at: row.get(9)?,
            expires_at: row.get(10)?,
            progress: row.get(11)?,
            resolution: row.get(12)?,
            steps: row.get(13)?,
        })
    }
}
