//! Whose each streamable HTTP session at `/mcp` is, and how many one agent
//! token may hold.
//!
//! rmcp's session manager knows a session by its id alone: any caller
//! presenting an `Mcp-Session-Id` could call in it, read its event stream
//! or end it (and with it cancel its questions). [`guard`] runs between
//! authentication and rmcp:
//!
//! - **Owner.** A session belongs to the agent token that opened it. A
//!   request naming a session the caller does not own is answered exactly as
//!   one naming no session at all: `404 not_found` ("There is no such MCP
//!   session."), so that another agent learns nothing, not even that the
//!   session exists. rmcp never sees the request.
//! - **Cap.** An agent token holds at most `[mcp] max_sessions_per_token`
//!   sessions (each costs rmcp about 140 KiB until it ends). When a new one
//!   opens past the cap, the token's session idle longest is closed, as a
//!   `DELETE` would close it (its pending questions are cancelled). A session
//!   is busy while a request other than its event stream (`GET`) is being
//!   answered — a tool call that waits for the person, above all — and busy
//!   sessions are never closed for the cap: when every one is busy, the new
//!   session is refused with `429 too_many_sessions` instead.
//! - **DELETE** is answered `204 No Content` (rmcp answers `202`, which
//!   the official Python SDK logs as "Session termination failed: 202": the
//!   MCP specification's clients expect 200 or 204).
//!
//! Sessions rmcp ends by itself (idle for 5 minutes, or failed) are
//! forgotten here when next looked at: before a token's sessions are
//! counted, and when a request names one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager as _};
use tokio::time::Instant;

use crate::auth::Agent;
use crate::error::ApiError;

/// The header that names the streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// `[mcp] max_sessions_per_token` when the configuration says nothing: more
/// than one person's agents open at once, while one token's abandoned
/// sessions cost at most a few megabytes.
pub const DEFAULT_MAX_SESSIONS_PER_TOKEN: usize = 32;

/// The owners and use of the open sessions. Cheap to share.
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    max_per_agent: usize,
    open: Mutex<HashMap<SessionId, Entry>>,
}

/// One open session.
struct Entry {
    /// The agent (token) that opened it.
    owner: String,
    /// Requests other than its event stream being answered.
    busy: usize,
    /// When a request last came or was answered.
    last_used: Instant,
}

/// Why a new session was not kept.
struct AllBusy;

impl Sessions {
    /// The sessions of `manager`, at most `max_per_agent` (at least 1) per agent token.
    pub(crate) fn new(manager: Arc<LocalSessionManager>, max_per_agent: usize) -> Self {
        Self {
            manager,
            max_per_agent: max_per_agent.max(1),
            open: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        // Every update is one insert, remove or field change: whole even if a holder panicked.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `id` is an open session of `agent`; a session rmcp has
    /// ended is forgotten.
    async fn owned_by(&self, id: &SessionId, agent: &str) -> bool {
        let owner = self.lock().get(id).map(|entry| entry.owner == agent);
        match owner {
            None => false,
            Some(false) => {
                tracing::info!(
                    agent,
                    "a request named another agent's mcp session; answered as unknown"
                );
                false
            }
            Some(true) => {
                let open = self.manager.has_session(id).await.unwrap_or(false);
                if !open {
                    self.lock().remove(id);
                }
                open
            }
        }
    }

    /// Marks a request in `id` begun; the returned use ends it when dropped.
    fn begin(self: &Arc<Self>, id: &SessionId, busy: bool) -> Use {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.last_used = Instant::now();
            entry.busy += usize::from(busy);
        }
        Use {
            sessions: Arc::clone(self),
            id: id.clone(),
            busy,
        }
    }

    /// Keeps `id`, just opened by `agent`, within the cap: closes the
    /// agent's sessions that idled longest while it holds too many, or, when
    /// all of them are busy, the new one (`Err`).
    async fn admit(&self, agent: &str, id: SessionId) -> Result<(), AllBusy> {
        // Forget the sessions rmcp has ended, so that they do not count.
        let held: Vec<SessionId> = self
            .lock()
            .iter()
            .filter(|(_, entry)| entry.owner == agent)
            .map(|(id, _)| id.clone())
            .collect();
        let mut ended = Vec::new();
        for held in held {
            if !self.manager.has_session(&held).await.unwrap_or(false) {
                ended.push(held);
            }
        }
        let (closing, refused) = {
            let mut open = self.lock();
            for id in &ended {
                open.remove(id);
            }
            open.insert(
                id.clone(),
                Entry {
                    owner: agent.to_owned(),
                    busy: 0,
                    last_used: Instant::now(),
                },
            );
            let mut closing = Vec::new();
            let mut refused = false;
            while open.values().filter(|entry| entry.owner == agent).count() > self.max_per_agent {
                let idlest = open
                    .iter()
                    .filter(|(held, entry)| entry.owner == agent && entry.busy == 0 && **held != id)
                    .min_by_key(|(_, entry)| entry.last_used)
                    .map(|(held, _)| held.clone());
                if let Some(idlest) = idlest {
                    open.remove(&idlest);
                    closing.push(idlest);
                } else {
                    open.remove(&id);
                    refused = true;
                    break;
                }
            }
            (closing, refused)
        };
        for old in &closing {
            tracing::info!(
                agent,
                "closing the agent token's mcp session idle longest: it holds [mcp] max_sessions_per_token"
            );
            self.close(old).await;
        }
        if refused {
            self.close(&id).await;
            return Err(AllBusy);
        }
        Ok(())
    }

    async fn close(&self, id: &SessionId) {
        if let Err(error) = self.manager.close_session(id).await {
            tracing::warn!(%error, "could not close an mcp session");
        }
    }

    fn forget(&self, id: &SessionId) {
        self.lock().remove(id);
    }
}

/// A request being answered in a session: busy (unless it is the event
/// stream) until its response has been sent or dropped.
struct Use {
    sessions: Arc<Sessions>,
    id: SessionId,
    busy: bool,
}

impl Use {
    /// The session is in use now (a call's answer is being sent; the event
    /// stream's pings are no use).
    fn touch(&self) {
        if !self.busy {
            return;
        }
        if let Some(entry) = self.sessions.lock().get_mut(&self.id) {
            entry.last_used = Instant::now();
        }
    }
}

impl Drop for Use {
    fn drop(&mut self) {
        if let Some(entry) = self.sessions.lock().get_mut(&self.id) {
            entry.last_used = Instant::now();
            entry.busy -= usize::from(self.busy && entry.busy > 0);
        }
    }
}

/// The answer to a request naming a session that is not the caller's, or
/// none at all: the same either way.
fn unknown_session() -> Response {
    ApiError::not_found("MCP session").into_response()
}

/// The middleware of `/mcp` (after authentication): see the module.
pub(crate) async fn guard(State(sessions): State<Arc<Sessions>>, request: Request, next: Next) -> Response {
    let Some(agent) = request.extensions().get::<Agent>().map(|agent| agent.name.clone()) else {
        return ApiError::unauthorized().into_response();
    };
    let named: Option<SessionId> = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(Into::into);
    let Some(id) = named else {
        return opening(&sessions, &agent, request, next).await;
    };
    if !sessions.owned_by(&id, &agent).await {
        return unknown_session();
    }
    let method = request.method().clone();
    let using = sessions.begin(&id, method != Method::GET);
    let response = next.run(request).await;
    if method == Method::DELETE && response.status().is_success() {
        sessions.forget(&id);
        return StatusCode::NO_CONTENT.into_response();
    }
    response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            using.touch();
            frame
        }))
    })
}

/// A request that names no session: `initialize` opens one (its response
/// names it), which is kept within the cap.
async fn opening(sessions: &Sessions, agent: &str, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let opened: Option<SessionId> = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(Into::into);
    let Some(id) = opened else {
        return response;
    };
    match sessions.admit(agent, id).await {
        Ok(()) => response,
        Err(AllBusy) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_sessions",
            format!(
                "This agent token already holds {} MCP sessions, each with a call in progress \
                 ([mcp] max_sessions_per_token); end one (DELETE /mcp) or wait for a call to return.",
                sessions.max_per_agent
            ),
        )
        .into_response(),
    }
}
