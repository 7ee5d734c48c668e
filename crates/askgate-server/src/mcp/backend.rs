//! What the MCP tools need from askgate, as a trait ([`Backend`]) with the
//! in-process implementation ([`EngineBackend`], the engine behind `/mcp`);
//! the other is [`super::http::HttpBackend`], a client of `/v1` for the
//! stdio bridge.

use std::time::Duration;

use askgate_core::{AskRequest, ToolResult};
use askgate_engine::{NewQuestion, SessionKind};
use serde::{Deserialize, Serialize};

use crate::auth::Agent;
use crate::error::ApiError;
use crate::{AppState, api, resource};

/// Who makes a tool call.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The agent token's identity, when askgate checks it in-process (`None`
    /// for a bridge, whose token `/v1` checks on every request).
    pub agent: Option<Agent>,
}

impl Caller {
    /// The name an MCP session is bound to: a session's calls all come from one agent.
    pub(crate) fn name(&self) -> &str {
        self.agent.as_ref().map_or("", |agent| agent.name.as_str())
    }
}

/// A question to ask: validated arguments and the resolved recipient.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The recipient's name.
    pub to: String,
    /// The agent session, for the one-pending-question rule.
    pub session_id: Option<String>,
    /// The validated request.
    pub request: AskRequest,
}

/// A question as the tools see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Its id.
    pub id: String,
    /// The tool result once it has ended; `None` while pending.
    pub result: Option<ToolResult>,
}

impl Status {
    pub(crate) fn of(record: &askgate_store::QuestionRecord) -> Self {
        Self {
            id: record.id.to_string(),
            result: resource::tool_result(record),
        }
    }
}

/// One problem of a refused call (askgate's `errors[]` item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The stable code.
    pub code: String,
    /// The JSON path; empty for the call as a whole.
    #[serde(default)]
    pub path: String,
    /// A sentence saying what to fix.
    pub message: String,
}

/// askgate's refusal of a call: its error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The stable code (`question_pending`, `invalid_id`, …).
    pub code: String,
    /// A sentence.
    pub message: String,
    /// The JSON path of the offending value.
    pub path: Option<String>,
    /// Every problem, when validation found any.
    pub problems: Vec<Problem>,
}

/// Why a tool call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// askgate refused it (validation, a pending question, no such question …).
    #[error("{}: {}", .0.code, .0.message)]
    Refused(Refusal),
    /// askgate could not be reached, or answered with something unreadable.
    #[error("askgate could not be reached: {0}")]
    Unreachable(String),
}

impl BackendError {
    /// The error as askgate's error object.
    pub fn refusal(&self) -> Refusal {
        match self {
            Self::Refused(refusal) => refusal.clone(),
            Self::Unreachable(cause) => Refusal {
                code: "askgate_unreachable".into(),
                message: format!("askgate could not be reached ({cause}); try again in a moment."),
                path: None,
                problems: Vec::new(),
            },
        }
    }

    /// A refusal with one problem at `path` (the arguments of a tool).
    pub(crate) fn invalid(code: &str, path: &str, message: String) -> Self {
        let problem = Problem {
            code: code.into(),
            path: path.into(),
            message: message.clone(),
        };
        Self::Refused(Refusal {
            code: code.into(),
            message,
            path: Some(path.into()),
            problems: vec![problem],
        })
    }

    /// Whether askgate refused because there is no such question (for this agent).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Refused(refusal) if refusal.code == "not_found")
    }
}

impl From<ApiError> for BackendError {
    fn from(error: ApiError) -> Self {
        // Bounded as an error body is: a tool result quotes as little of the call.
        let error = error.bounded();
        Self::Refused(Refusal {
            code: error.code.to_owned(),
            message: error.message,
            path: error.path,
            problems: error
                .details
                .into_iter()
                .map(|problem| Problem {
                    code: problem.code.as_str().to_owned(),
                    path: problem.path,
                    message: problem.message,
                })
                .collect(),
        })
    }
}

impl From<askgate_engine::EngineError> for BackendError {
    fn from(error: askgate_engine::EngineError) -> Self {
        ApiError::from(error).into()
    }
}

/// What the tools need from askgate. Ids are strings: a bridge gets them
/// from JSON.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Who makes the call whose request carries `extensions` (the HTTP
    /// request's parts, on the streamable HTTP transport).
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Result<Caller, BackendError>;

    /// The recipients the caller may ask, sorted (for the default `to`).
    async fn recipients(&self, caller: &Caller) -> Result<Vec<String>, BackendError>;

    /// Accepts a question; returns at once.
    async fn ask(&self, caller: &Caller, ask: Ask) -> Result<Status, BackendError>;

    /// The question once it has ended, or as it is after `max`.
    async fn wait(&self, caller: &Caller, id: &str, max: Duration) -> Result<Status, BackendError>;

    /// Cancels a question (idempotent).
    async fn cancel(&self, caller: &Caller, id: &str) -> Result<Status, BackendError>;

    /// The longest a tool call waits before it returns `pending`
    /// (`[mcp] wait_seconds`).
    async fn wait_limit(&self) -> Duration;

    /// Whether askgate is shutting down: waits end at once and questions are
    /// kept (a session ending then cancels nothing).
    fn is_stopping(&self) -> bool {
        false
    }
}

/// The engine itself, behind askgate's own `/mcp`: the agent is the one
/// `/mcp`'s authentication attached to the HTTP request.
#[derive(Debug, Clone)]
pub struct EngineBackend {
    state: AppState,
    /// The agent of calls that come without an authenticated HTTP request.
    agent: Option<Agent>,
}

impl EngineBackend {
    /// The backend of `state`'s engine, for `/mcp`: each call's agent is the
    /// one its HTTP request authenticated as.
    pub fn new(state: AppState) -> Self {
        Self { state, agent: None }
    }

    /// The backend of `state`'s engine for one agent, over a transport with
    /// no HTTP request (askgate embedded in another program, an in-memory
    /// transport in tests).
    pub fn for_agent(state: AppState, agent: Agent) -> Self {
        Self {
            state,
            agent: Some(agent),
        }
    }

    fn agent(caller: &Caller) -> Result<&Agent, BackendError> {
        caller.agent.as_ref().ok_or_else(|| ApiError::unauthorized().into())
    }
}

#[async_trait::async_trait]
impl Backend for EngineBackend {
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Result<Caller, BackendError> {
        let agent = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Agent>())
            .or(self.agent.as_ref())
            .cloned()
            .ok_or_else(ApiError::unauthorized)?;
        Ok(Caller { agent: Some(agent) })
    }

    async fn recipients(&self, caller: &Caller) -> Result<Vec<String>, BackendError> {
        Ok(api::askable(&self.state.0.engine, Self::agent(caller)?))
    }

    async fn ask(&self, caller: &Caller, ask: Ask) -> Result<Status, BackendError> {
        let agent = Self::agent(caller)?;
        api::check_to(&self.state.0.engine, agent, &ask.to)?;
        let question = NewQuestion {
            nudges: askgate_engine::Nudges::default(),
            callback_url: None,
            agent: agent.name.clone(),
            to: ask.to,
            session_id: ask.session_id,
            run_id: None,
            session_kind: SessionKind::Main,
            request: ask.request,
            idempotency_key: None,
        };
        let accepted = self.state.0.engine.ask_with(question).await?;
        Ok(Status::of(&accepted.record))
    }

    async fn wait(&self, caller: &Caller, id: &str, max: Duration) -> Result<Status, BackendError> {
        let agent = Self::agent(caller)?;
        let id = api::question_id(id)?;
        api::owned(&self.state.0.engine, agent, &id).await?;
        let record = self.state.wait(&id, max).await?;
        Ok(Status::of(&record))
    }

    async fn cancel(&self, caller: &Caller, id: &str) -> Result<Status, BackendError> {
        let agent = Self::agent(caller)?;
        let id = api::question_id(id)?;
        let record = self.state.0.engine.cancel(&agent.name, &id).await?;
        Ok(Status::of(&record))
    }

    async fn wait_limit(&self) -> Duration {
        self.state.0.mcp.wait
    }

    fn is_stopping(&self) -> bool {
        self.state.is_stopping()
    }
}
