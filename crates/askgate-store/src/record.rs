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

    /// Whether a person ended the question this way (answered or skipped):
    /// a person's resolution counts only while the question is not yet due.
    pub fn is_by_person(self) -> bool {
        matches!(self, Self::Answered | Self::Skipped)
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
    /// The kind of surface it came through (`telegram`, `web`): what the
    /// summary names ("Answered by Alice in Telegram").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
}

/// Where a question's delivery to one surface stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceState {
    /// Not delivered yet, or only in part: on its way, or to be retried.
    Sending,
    /// Delivered in full.
    Delivered,
    /// Could not be delivered: given up on, for [`Surface::reason`].
    Failed,
}

impl SurfaceState {
    /// The state as the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sending => "sending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }
}

/// One surface a question is shown on: a channel of its recipient, where on
/// it, and how far its delivery and its summary got. A question has one per
/// surface of its recipient, in the recipient's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Surface {
    /// The channel's name in the configuration (one surface per channel).
    pub channel: String,
    /// The channel's kind (`telegram`, `web`). Empty for a question stored
    /// before surfaces were: its kind was not recorded.
    #[serde(default)]
    pub kind: String,
    /// The conversation: where it is addressed, then where it was delivered
    /// (a direct message's own id, learned from the send).
    pub conversation: String,
    /// How far its delivery got.
    pub state: SurfaceState,
    /// The messages it was delivered as (in part, while
    /// [`SurfaceState::Sending`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether its messages were edited into the question's summary
    /// (or have nothing to edit: askgate's own page).
    #[serde(default)]
    pub finished: bool,
    /// The recipient it was escalated to ([`StepKind::Escalate`]); `None`:
    /// a surface of the question's own recipient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
}

impl Surface {
    /// A surface not delivered yet.
    pub fn sending(channel: &str, kind: &str, conversation: &str) -> Self {
        Self {
            channel: channel.to_owned(),
            kind: kind.to_owned(),
            conversation: conversation.to_owned(),
            state: SurfaceState::Sending,
            delivery: None,
            reason: None,
            finished: false,
            recipient: None,
        }
    }

    /// The same surface, of the recipient a question was escalated to.
    #[must_use]
    pub fn escalated_to(mut self, recipient: &str) -> Self {
        self.recipient = Some(recipient.to_owned());
        self
    }

    /// What names this surface among its question's: its channel, for the
    /// question's own recipient (one surface per channel); `channel@name`
    /// for one it was escalated to, which may share a channel with another.
    pub fn key(&self) -> String {
        match &self.recipient {
            None => self.channel.clone(),
            Some(recipient) => format!("{}@{recipient}", self.channel),
        }
    }

    /// A surface delivered as it was stored, with nothing ever to edit
    /// (askgate's own page, [`Delivery::in_place`]).
    pub fn in_place(channel: &str, kind: &str, delivery: Delivery) -> Self {
        Self {
            conversation: delivery.conversation().unwrap_or_default().to_owned(),
            state: SurfaceState::Delivered,
            delivery: Some(delivery),
            finished: true,
            ..Self::sending(channel, kind, "")
        }
    }

    /// Whether messages of it wait to be edited into the summary.
    pub fn to_edit(&self) -> bool {
        self.delivery.is_some() && !self.finished
    }
}

/// What a step of a question's plan does when its time comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// Nudges the people who may answer, under each delivered copy.
    Remind,
    /// Delivers the question to another recipient too ([`Step::to`]).
    Escalate,
    /// Tells an admin recipient ([`Step::to`]) that a surface failed: taken
    /// once per question, when the first surface fails.
    NotifyFailure,
}

/// One timed step of a question's plan (a reminder, an escalation), or a
/// one-off taken when something happened (a failure notice). A step is
/// taken (`done`) in the store before anything is sent for it, in a write
/// that only one process wins: it is sent at most once, across restarts
/// and replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// When it is due (after quiet hours held it).
    pub at: Timestamp,
    /// When it was due before the quiet hours of the person it reaches
    /// held it to their end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_from: Option<Timestamp>,
    /// The recipient it reaches: an escalation's, a failure notice's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// When it was taken; `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Timestamp>,
}

impl Step {
    /// A step of `kind` due `at`.
    pub fn planned(kind: StepKind, at: Timestamp) -> Self {
        Self {
            kind,
            at,
            held_from: None,
            to: None,
            done: None,
        }
    }

    /// The same step, reaching `recipient`.
    #[must_use]
    pub fn to(mut self, recipient: &str) -> Self {
        self.to = Some(recipient.to_owned());
        self
    }
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
    /// The surfaces it is shown on, in the recipient's order; never empty.
    pub surfaces: Vec<Surface>,
    /// The language of askgate's wording for this recipient.
    pub locale: Locale,
    /// The normalized request.
    pub request: AskRequest,
    /// When askgate accepted it.
    pub created_at: Timestamp,
    /// When it expires.
    pub expires_at: Timestamp,
    /// Partial answers of a multi-question prompt so far.
    pub progress: Answers,
    /// How it ended, once it has.
    pub resolution: Option<Resolution>,
    /// Its plan: reminders and escalations, in time order, and what was
    /// taken of it.
    pub steps: Vec<Step>,
}

impl QuestionRecord {
    /// Its surface on `channel`, of its own recipient.
    pub fn surface(&self, channel: &str) -> Option<&Surface> {
        self.surfaces
            .iter()
            .find(|surface| surface.channel == channel && surface.recipient.is_none())
    }

    /// The recipient whose surface `surface` is: the one it was escalated
    /// to, or the question's own.
    pub fn owner<'a>(&'a self, surface: &'a Surface) -> &'a str {
        surface.recipient.as_deref().unwrap_or(&self.recipient)
    }

    /// Its surface named `key` ([`Surface::key`]).
    pub fn surface_by_key(&self, key: &str) -> Option<&Surface> {
        self.surfaces.iter().find(|surface| surface.key() == key)
    }

    /// When its next step waiting to be taken is due.
    pub fn next_step_at(&self) -> Option<Timestamp> {
        self.steps
            .iter()
            .filter(|step| step.done.is_none())
            .map(|step| step.at)
            .min()
    }

    /// The channel of its first surface: where a question shown on one
    /// surface is.
    pub fn channel(&self) -> &str {
        self.surfaces.first().map_or("", |surface| surface.channel.as_str())
    }

    /// The delivery on its first surface: where a question shown on one
    /// surface went.
    pub fn delivery(&self) -> Option<&Delivery> {
        self.surfaces.first().and_then(|surface| surface.delivery.as_ref())
    }

    /// The conversation of its first surface.
    pub fn conversation(&self) -> &str {
        self.surfaces
            .first()
            .map_or("", |surface| surface.conversation.as_str())
    }

    /// Whether every surface has been delivered to or given up on.
    pub fn delivered(&self) -> bool {
        self.surfaces
            .iter()
            .all(|surface| surface.state != SurfaceState::Sending)
    }
}
