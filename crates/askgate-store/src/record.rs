//! What is stored about a question.

use std::fmt;
use std::str::FromStr;

use askgate_core::answer::Answers;
use askgate_core::channel::{Delivery, UserRef};
use askgate_core::{AskRequest, Locale, QuestionId};
use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC. The engine's clock produces them;
/// the store never reads the clock itself.
pub type Timestamp = i64;

/// Where a question is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// Waiting for the person.
    Pending,
    /// Every question has an answer.
    Answered,
    /// Nobody answered in time.
    Expired,
    /// The person skipped it.
    Skipped,
    /// The agent cancelled it, or its run was aborted.
    Cancelled,
    /// It could not be shown at all.
    DeliveryFailed,
}

impl QuestionStatus {
    /// Every status, for metrics and tests.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::Answered,
        Self::Expired,
        Self::Skipped,
        Self::Cancelled,
        Self::DeliveryFailed,
    ];

    /// The status as stored and as the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Expired => "expired",
            Self::Skipped => "skipped",
            Self::Cancelled => "cancelled",
            Self::DeliveryFailed => "delivery_failed",
        }
    }

    /// Whether the question has ended.
    pub fn is_final(self) -> bool {
        self != Self::Pending
    }
}

impl fmt::Display for QuestionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status name the store does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown question status \"{0}\"")]
pub struct UnknownStatus(pub String);

impl FromStr for QuestionStatus {
    type Err = UnknownStatus;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| UnknownStatus(text.to_owned()))
    }
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// The final status; never `pending`.
    pub status: QuestionStatus,
    /// When it ended.
    pub at: Timestamp,
    /// Who answered or skipped, when a person did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<UserRef>,
    /// The answers, when answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Answers>,
    /// Why, in words: `expired`, `cancelled by the agent`, `run aborted`,
    /// a platform's refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The channel the resolving answer came through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// Everything stored about one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionRecord {
    /// askgate's id.
    pub id: QuestionId,
    /// Where it is in its life.
    pub status: QuestionStatus,
    /// The name of the agent token that asked.
    pub agent: String,
    /// The agent's session, for the one-pending-question rule.
    pub session_id: Option<String>,
    /// The agent's run, for run aborts.
    pub run_id: Option<String>,
    /// The recipient's name in the configuration.
    pub recipient: String,
    /// The channel's name in the configuration.
    pub channel: String,
    /// The conversation on that channel.
    pub conversation: String,
    /// The language of askgate's wording for this recipient.
    pub locale: Locale,
    /// The normalized request.
    pub request: AskRequest,
    /// When askgate accepted it.
    pub created_at: Timestamp,
    /// When it expires.
    pub expires_at: Timestamp,
    /// The messages it was delivered as, once delivered.
    pub delivery: Option<Delivery>,
    /// Partial answers of a multi-question prompt so far.
    pub progress: Answers,
    /// How it ended, once it has.
    pub resolution: Option<Resolution>,
}
