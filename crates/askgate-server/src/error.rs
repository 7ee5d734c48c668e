//! The one error type of the HTTP API: a stable code, a status, a sentence,
//! and the JSON path when a value is to blame.

use askgate_core::text::{Limit, excerpt};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error as the API reports it: `{"error": {"code", "message", "path"?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code clients match on.
    pub code: &'static str,
    /// A sentence for a person.
    pub message: String,
    /// The JSON path of the offending value.
    pub path: Option<String>,
    /// Every validation problem, when there were several.
    pub details: Vec<askgate_core::ValidationError>,
}

impl ApiError {
    /// An error with no path.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            path: None,
            details: Vec::new(),
        }
    }

    /// The same error, naming the offending value.
    #[must_use]
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// 401: no or a wrong bearer token.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Send an agent token as \"Authorization: Bearer <token>\".",
        )
    }

    /// 401: a bearer token askgate does not know (told apart from a missing
    /// one, so that a mistyped or rotated token is recognised at once).
    pub fn unknown_token() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "This agent token is not one askgate knows: check it against the agents in askgate's configuration.",
        )
    }

    /// 404: no such thing (or not one this caller may see).
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("There is no such {what}."))
    }

    /// 503: the store cannot take writes now (a full disk, a held lock, a
    /// replaced file); nothing was changed, and trying again later is right.
    /// The cause is logged, not shown.
    pub fn unavailable(cause: &dyn std::fmt::Display) -> Self {
        tracing::warn!(%cause, "could not save; answered 503");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "askgate could not save this just now, so nothing was changed. Please try again in a moment.",
        )
    }

    /// 500: our fault, never a client's. The cause is logged, not shown.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "askgate failed; the error is in its log.",
        )
    }
}

impl From<askgate_core::ValidationErrors> for ApiError {
    fn from(errors: askgate_core::ValidationErrors) -> Self {
        let first = errors.errors.first().cloned();
        let (code, message, path) = match &first {
            Some(first) if errors.errors.len() == 1 => {
                (first.code.as_str(), first.message.clone(), Some(first.path.clone()))
            }
            Some(first) => (
                first.code.as_str(),
                format!(
                    "The request has {} problems; the first: {}",
                    errors.errors.len(),
                    first.message
                ),
                Some(first.path.clone()),
            ),
            None => ("invalid_request", "The request is not valid.".to_owned(), None),
        };
        let status = if code == "invalid_json" {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        Self {
            status,
            code,
            message,
            path: path.filter(|path| !path.is_empty()),
            details: errors.errors,
        }
    }
}

impl From<askgate_engine::EngineError> for ApiError {
    fn from(error: askgate_engine::EngineError) -> Self {
        use askgate_engine::EngineError;
        match error {
            EngineError::UnknownRecipient(name) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_recipient",
                format!("No recipient named \"{}\" is configured.", excerpt(&name)),
            )
            .at("to"),
            EngineError::SubagentNotAllowed => Self::new(
                StatusCode::FORBIDDEN,
                "subagent_not_allowed",
                "ask_user is for main sessions only; a sub-agent run cannot ask the person.",
            )
            .at("sessionKind"),
            EngineError::QuestionPending { pending } => Self::new(
                StatusCode::CONFLICT,
                "question_pending",
                format!(
                    "This session already waits for an answer to question {pending}; wait for it or cancel it first."
                ),
            )
            .at("sessionId"),
            EngineError::NotFound => Self::not_found("question"),
            EngineError::InvalidAnswer { path, message } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_answer", message).at(path)
            }
            EngineError::InvalidPlan { path, message } => Self::from(askgate_core::validate::ValidationErrors {
                errors: vec![crate::api::error(
                    askgate_core::validate::ErrorCode::InvalidEscalation,
                    &path,
                    message,
                )],
            }),
            EngineError::TooLong { path, message } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "answer_too_long", message).at(path)
            }
            EngineError::TooManyPending { scope, limit } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_pending",
                format!(
                    "The {scope} already has {limit} questions waiting for an answer, the most askgate allows \
                     ([limits] in its configuration); wait for answers or cancel some first."
                ),
            ),
            EngineError::KeyReused { question } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                format!(
                    "This idempotency key was used for question {question} with another request; \
                     use a new key for a new question."
                ),
            ),
            EngineError::Store(error) if error.is_unavailable() => Self::unavailable(&error),
            other => Self::internal(&other),
        }
    }
}

/// When a client told 503 should try again.
const RETRY_AFTER_SECONDS: &str = "5";

/// The most problems an error body lists (`errorCount` says how many there
/// were when there were more).
pub const MAX_LISTED_PROBLEMS: usize = 50;

/// The longest message an error carries, in characters: ours are one or two
/// sentences, quoting the request only as an excerpt ([`excerpt`]).
const MAX_MESSAGE_CHARS: usize = 400;

/// The longest JSON path an error carries, in characters: askgate's paths
/// are short, and a name from the request in one is an excerpt.
const MAX_PATH_CHARS: usize = 200;

impl ApiError {
    /// The error with its message and path, and its problems' (the first
    /// [`MAX_LISTED_PROBLEMS`] of them, the only ones shown), within
    /// [`MAX_MESSAGE_CHARS`] and [`MAX_PATH_CHARS`]: whatever a message quotes,
    /// from the request or from a library, an error body stays small.
    #[must_use]
    pub fn bounded(mut self) -> Self {
        let message = Limit::code_points(MAX_MESSAGE_CHARS);
        let path = Limit::code_points(MAX_PATH_CHARS);
        self.message = message.ellipsize(&self.message);
        self.path = self.path.map(|text| path.ellipsize(&text));
        for problem in self.details.iter_mut().take(MAX_LISTED_PROBLEMS) {
            problem.message = message.ellipsize(&problem.message);
            problem.path = path.ellipsize(&problem.path);
        }
        self
    }

    /// The response of a bounded error.
    fn render(self) -> Response {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(path) = &self.path {
            error["path"] = json!(path);
        }
        if self.details.len() > 1 {
            // A bounded answer to an unbounded request: the first problems,
            // and how many there were in all.
            let shown = &self.details[..self.details.len().min(MAX_LISTED_PROBLEMS)];
            error["errors"] = json!(shown);
            if shown.len() < self.details.len() {
                error["errorCount"] = json!(self.details.len());
            }
        }
        let mut response = (self.status, axum::Json(json!({ "error": error }))).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.bounded().render()
    }
}
