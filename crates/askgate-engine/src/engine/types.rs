//! The engine's public types: what an agent asks with, what it gets back,
//! the errors, and what the engine tells observers and live views.

use std::sync::Arc;

use askgate_core::channel::ChannelError;
use askgate_core::{AskRequest, QuestionId};
use askgate_store::{PendingScope, QuestionRecord, StoreError};

use crate::plan::Nudges;

/// Whether the asking agent runs as a main session or a sub-agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// A main agent session: may ask.
    #[default]
    Main,
    /// A sub-agent run: `ask_user` is refused (spec §2).
    Subagent,
}

/// A question an agent wants to ask.
#[derive(Debug, Clone)]
pub struct NewQuestion {
    /// The name of the agent token that asks.
    pub agent: String,
    /// The recipient's name.
    pub to: String,
    /// The agent's session, for the one-pending-question rule.
    pub session_id: Option<String>,
    /// The agent's run, for run aborts.
    pub run_id: Option<String>,
    /// Main session or sub-agent.
    pub session_kind: SessionKind,
    /// The validated request.
    pub request: AskRequest,
    /// The agent's idempotency key for this call (an `Idempotency-Key`
    /// header or a tool call id): asking again with the same key and the
    /// same question finds the question asked the first time.
    pub idempotency_key: Option<String>,
    /// The reminders and escalations the question sets itself (the
    /// non-blocking API's `remind`, `escalate`): they win over the agent's
    /// and the recipient's, and an escalation of its own that cannot happen
    /// is refused ([`EngineError::InvalidPlan`]).
    pub nudges: Nudges,
    /// Where the question's result is sent when it ends, over its agent's
    /// configured URL (the API's `callbackUrl`, checked against the
    /// agent's allowed hosts before it gets here).
    pub callback_url: Option<String>,
}

/// What [`Engine::ask_with`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The question.
    pub record: QuestionRecord,
    /// True when the idempotency key found a question asked before: nothing
    /// new was stored or sent.
    pub replayed: bool,
}

/// The engine's limits, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many pending questions per agent token.
    pub max_pending_per_agent: Option<u32>,
    /// At most this many pending questions per recipient.
    pub max_pending_per_recipient: Option<u32>,
}

impl Default for Limits {
    /// No caps: a library user opts in; the binary's configuration sets them.
    fn default() -> Self {
        Self {
            max_pending_per_agent: None,
            max_pending_per_recipient: None,
        }
    }
}

/// An answer given directly rather than typed: askgate's web page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectAnswer {
    /// Skip the whole prompt.
    Skip,
    /// One answer per question id: chosen option indexes and/or own words.
    Answers(Vec<DirectItem>),
}

/// One question's direct answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectItem {
    /// The question id (`deploy_target`).
    pub id: String,
    /// Chosen options, by index.
    pub options: Vec<usize>,
    /// The person's own words, if any.
    pub text: Option<String>,
}

/// Why the engine refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No recipient of that name is configured.
    #[error("no recipient named \"{0}\" is configured")]
    UnknownRecipient(String),
    /// `ask_user` is for main sessions only.
    #[error("ask_user is not available to sub-agent runs")]
    SubagentNotAllowed,
    /// The agent session already waits for an answer.
    #[error("this session already has a pending question ({pending})")]
    QuestionPending {
        /// The question it waits for.
        pending: QuestionId,
    },
    /// No such question (or not one this caller may see).
    #[error("no such question")]
    NotFound,
    /// A direct answer that does not fit the question.
    #[error("{message}")]
    InvalidAnswer {
        /// Where in the answer, `answers.deploy.options[0]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A cap on pending questions was reached.
    #[error("{scope} already has {limit} pending questions, the most allowed")]
    TooManyPending {
        /// Whose cap.
        scope: PendingScope,
        /// The cap.
        limit: u32,
    },
    /// The idempotency key was used before for another question.
    #[error("the idempotency key was used before for question {question}, with another request")]
    KeyReused {
        /// The question asked with the key the first time.
        question: QuestionId,
    },
    /// A free-text answer is longer than askgate takes.
    #[error("{message}")]
    TooLong {
        /// Where in the answer.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A reminder or escalation the question sets that cannot be kept: an
    /// escalation after the question ends, or to nobody configured.
    #[error("{message}")]
    InvalidPlan {
        /// Where in the request, `escalate[1].after`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a direct answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// It resolved the question.
    Resolved(QuestionRecord),
    /// The question had ended already; nothing changed.
    AlreadyEnded(QuestionRecord),
}

/// Hooks for metrics; the server implements them with Prometheus.
pub trait Observer: Send + Sync + 'static {
    /// A question was accepted.
    fn question_created(&self, _record: &QuestionRecord) {}
    /// A question ended.
    fn question_resolved(&self, _record: &QuestionRecord) {}
    /// A delivery attempt failed.
    fn delivery_error(&self, _channel: &str, _error: &ChannelError) {}
    /// A prompt reached a surface on `channel`: sent whole and recorded, or
    /// shown on askgate's own page as the question was stored.
    fn delivered(&self, _channel: &str) {}
    /// A surface on `channel` was given up on: the question could not reach
    /// its person there.
    fn surface_failed(&self, _channel: &str) {}
}

/// What a live view hears from [`Engine::subscribe`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Update {
    /// A question was asked or changed, as it is now.
    Changed(Arc<QuestionRecord>),
    /// Changes made elsewhere may have been lost (another replica's, while
    /// the store's change feed was reconnecting): re-read what is shown.
    Missed,
}

/// An observer that observes nothing.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
