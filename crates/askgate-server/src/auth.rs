//! Agent authentication: bearer tokens from the configuration, each allowed
//! a set of recipients.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};

use crate::AppState;
use crate::error::ApiError;

/// Which recipients an agent may ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Every recipient (`"*"`).
    All,
    /// Only these, by name.
    Only(Vec<String>),
}

/// A configured agent token.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentToken {
    /// The agent's name (questions record it; it scopes cancel and get).
    pub name: String,
    /// The bearer token.
    pub token: String,
    /// Who it may ask.
    pub allowed: Allowed,
    /// The longest `timeoutSeconds` it may give `POST /v1/questions`
    /// (`agents.NAME.max_timeout`): [`askgate_core::request::MAX_TIMEOUT_SECONDS`], the contract's
    /// hour, unless configured longer, up to a week. `ask_user` itself
    /// (`POST /v1/ask`, MCP) stays clamped to the hour.
    pub max_timeout_seconds: u32,
    /// The hosts a question's own `callbackUrl` may name
    /// (`agents.NAME.callback_hosts` and its `callback_url`'s host),
    /// lower-cased; empty: none.
    pub callback_hosts: Vec<String>,
}

impl std::fmt::Debug for AgentToken {
    // The token is a secret: it never reaches a log through Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToken")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .field("allowed", &self.allowed)
            .field("max_timeout_seconds", &self.max_timeout_seconds)
            .field("callback_hosts", &self.callback_hosts)
            .finish()
    }
}

/// The authenticated agent of a request.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// Who it may ask.
    pub allowed: Allowed,
    /// Its token's [`AgentToken::max_timeout_seconds`].
    pub max_timeout_seconds: u32,
    /// Its token's [`AgentToken::callback_hosts`].
    pub callback_hosts: Vec<String>,
}

impl Agent {
    /// 403 unless this agent may ask `recipient`.
    pub fn check_recipient(&self, recipient: &str) -> Result<(), ApiError> {
        let allowed = match &self.allowed {
            Allowed::All => true,
            Allowed::Only(names) => names.iter().any(|name| name == recipient),
        };
        if allowed {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "recipient_not_allowed",
                format!(
                    "This agent token may not ask \"{}\".",
                    askgate_core::text::excerpt(recipient)
                ),
            )
            .at("to"))
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value; the scheme's case
/// does not matter (RFC 7235 §2.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

impl FromRequestParts<AppState> for Agent {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer)
            .ok_or_else(ApiError::unauthorized)?;
        // Every token is compared, in constant time, so that timing tells nothing.
        let credentials = state.credentials();
        let mut found = None;
        for agent in &credentials.agents {
            if constant_time_eq::constant_time_eq(agent.token.as_bytes(), presented.as_bytes()) {
                found = Some(agent);
            }
        }
        let agent = found.ok_or_else(ApiError::unknown_token)?;
        Ok(Self {
            name: agent.name.clone(),
            allowed: agent.allowed.clone(),
            max_timeout_seconds: agent.max_timeout_seconds,
            callback_hosts: agent.callback_hosts.clone(),
        })
    }
}
