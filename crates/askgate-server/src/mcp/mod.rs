//! askgate as an MCP server (rmcp): one tool set, two transports.
//!
//! | module | owns |
//! | --- | --- |
//! | [`tools`] | the tools (`ask_user`, `await_answer`, `cancel_question`): names, descriptions, schemas, results |
//! | [`server`] | [`McpServer`], one session's rmcp handler: bounded waits with progress, cancellation, the session's questions |
//! | [`backend`] | the [`Backend`] trait the tools call, and [`EngineBackend`], the engine in-process |
//! | [`http`] | [`HttpBackend`], a client of askgate's `/v1` API for the stdio bridge (`askgate mcp`) |
//! | `sessions` | whose each `/mcp` session is (another agent's is unknown to it), the cap per agent token, `DELETE` answered 204 |
//!
//! `routes` mounts streamable HTTP at `/mcp` (in `app`), behind the same agent
//! bearer tokens as `/v1`; the binary runs [`McpServer`] over stdio with an
//! [`HttpBackend`].

pub mod backend;
pub mod http;
pub mod server;
mod sessions;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use backend::{Ask, Backend, BackendError, Caller, EngineBackend, Problem, Refusal, Status};
pub use http::HttpBackend;
pub use server::McpServer;
pub use sessions::DEFAULT_MAX_SESSIONS_PER_TOKEN;

use crate::AppState;
use crate::auth::Agent;

/// The path of the streamable HTTP transport.
pub const PATH: &str = "/mcp";

/// How long a tool call waits for an answer when the configuration says nothing.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// How long responses in flight get to be sent when askgate shuts down,
/// before the MCP sessions (and their open streams) are closed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The MCP settings (`[mcp]`, and the host names `/mcp` answers to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// The longest a tool call waits before it returns `pending`: below
    /// clients' usual 60 s limit on a tool call.
    pub wait: Duration,
    /// The `Host` names (or `host:port`) `/mcp` accepts, against DNS
    /// rebinding: loopback, and the host of `server.public_url`.
    pub allowed_hosts: Vec<String>,
    /// The most `/mcp` sessions one agent token holds at once; past it the
    /// token's session idle longest is closed (`sessions`).
    pub max_sessions_per_token: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            wait: DEFAULT_WAIT,
            allowed_hosts: allowed_hosts(None),
            max_sessions_per_token: DEFAULT_MAX_SESSIONS_PER_TOKEN,
        }
    }
}

/// The loopback names, and the host of `public_url` when there is one.
pub fn allowed_hosts(public_url: Option<&str>) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(str::to_owned).to_vec();
    let host = public_url
        .and_then(|url| url.parse::<axum::http::Uri>().ok())
        .and_then(|uri| uri.host().map(str::to_owned));
    hosts.extend(host);
    hosts
}

/// The `/mcp` route: streamable HTTP, one [`McpServer`] per MCP session over
/// the engine, behind agent authentication (401 with askgate's error JSON).
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    let settings = &state.0.mcp;
    let stop = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts.clone())
        .with_max_request_body_bytes(state.0.max_body_bytes)
        .with_cancellation_token(stop.clone());
    close_on_shutdown(state, stop);
    let backend: Arc<dyn Backend> = Arc::new(EngineBackend::new(state.clone()));
    let manager = Arc::new(LocalSessionManager::default());
    let sessions = Arc::new(sessions::Sessions::new(
        Arc::clone(&manager),
        settings.max_sessions_per_token,
    ));
    let service = StreamableHttpService::new(move || Ok(McpServer::new(backend.clone(), None)), manager, config);
    // Authentication first, then the session's owner (the last layer added runs first).
    Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(sessions, sessions::guard))
        .layer(axum::middleware::from_fn_with_state(state.clone(), authenticate))
}

/// Closes the MCP sessions (and their open event streams) shortly after
/// askgate starts shutting down, once waiting calls have returned `pending`.
fn close_on_shutdown(state: &AppState, stop: tokio_util::sync::CancellationToken) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let state = state.clone();
    // Ends when askgate stops (or with the runtime): it only waits for that.
    runtime.spawn(async move {
        state.stopped().await;
        tokio::time::sleep(STOP_GRACE).await;
        stop.cancel();
    });
}

/// The agent of every `/mcp` request, as for `/v1`: no or a wrong token is
/// 401 with askgate's error JSON; the agent rides along to the tools.
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    use axum::extract::FromRequestParts as _;
    let (mut parts, body) = request.into_parts();
    match Agent::from_request_parts(&mut parts, &state).await {
        Ok(agent) => {
            parts.extensions.insert(agent);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => error.into_response(),
    }
}
