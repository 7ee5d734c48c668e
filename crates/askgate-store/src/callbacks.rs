//! Result callbacks as stored: the URL a question's result is sent to
//! when it ends, and each attempt so far. Both stores keep them in the
//! table `callbacks` (migrations: sqlite 0008, postgres 0007): a row is
//! written with its question, and armed by a trigger in the statement that
//! ends the question.

use askgate_core::QuestionId;
use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// How one attempt went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallbackStatus {
    /// The receiver answered 2xx: never sent again.
    Delivered,
    /// No answer, or not 2xx: tried again later while time is left.
    Failed,
    /// Failed, and the window is over: never sent again.
    GaveUp,
}

/// A question's result callback, written with the question
/// ([`crate::InsertRules::callback`]) in the same transaction: a question
/// is never stored without the callback its agent asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCallback {
    /// Where the result is sent (an HTTP `POST`).
    pub url: String,
    /// How long after the question ends attempts are made, in milliseconds.
    pub window_ms: i64,
}

/// One attempt at a callback, as the question's resource shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallbackAttempt {
    /// 1 for the first.
    pub attempt: u32,
    /// How it went.
    pub status: CallbackStatus,
    /// The receiver's HTTP status, when it answered.
    pub http_status: Option<u16>,
    /// When it was made.
    pub at: Timestamp,
}

/// A callback due for an attempt, leased to the sweep that took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueCallback {
    /// Its question.
    pub question_id: QuestionId,
    /// Where it goes.
    pub url: String,
    /// The attempts so far (the next is `attempts.len() + 1`).
    pub attempts: Vec<CallbackAttempt>,
    /// The last moment an attempt is made.
    pub until: Timestamp,
}

/// Decodes the `attempts` column; a row askgate cannot read counts as none
/// tried rather than stopping every sweep on it.
pub(crate) fn decode_attempts(text: &str) -> Vec<CallbackAttempt> {
    serde_json::from_str(text).unwrap_or_default()
}

/// A due callback as both stores read it: `(question_id, url, attempts,
/// until)`, `until` being `now` when a row has none (armed rows have one).
pub(crate) fn due_callbacks(
    rows: Vec<(String, String, String, Option<Timestamp>)>,
    now: Timestamp,
) -> Result<Vec<DueCallback>, crate::StoreError> {
    rows.into_iter()
        .map(|(id, url, attempts, until)| {
            Ok(DueCallback {
                question_id: crate::row::decode_id(&id)?,
                url,
                attempts: decode_attempts(&attempts),
                until: until.unwrap_or(now),
            })
        })
        .collect()
}

/// Encodes the `attempts` column.
pub(crate) fn encode_attempts(attempts: &[CallbackAttempt]) -> String {
    serde_json::to_string(attempts).unwrap_or_else(|_| "[]".to_owned())
}
