//! askgate's HTTP side, on axum.
//!
//! | module | owns |
//! | --- | --- |
//! | [`api`] | the agent API under `/v1` (ask, questions, events, cancel, run abort) |
//! | [`web`] | the web channel: askgate's own answer page behind a secret link, or behind sign-in with OpenID Connect (`/web/me`) |
//! | [`auth`] | agent bearer tokens and the recipients each may ask |
//! | [`headers`] | the security headers of every response (the page's Content-Security-Policy, no framing, no caching) |
//! | [`error`] | [`ApiError`]: one error type, stable codes, `{"error": {...}}` |
//! | [`body`] | the JSON body extractor (400/413/415 as [`ApiError`]) |
//! | [`resource`] | the question resource and the tool result |
//! | [`nudges`] | the reminders and escalations a question sets itself (`remind`, `escalate`) |
//! | [`callbacks`] | a question's own result callback (`callbackUrl`), only to hosts its agent may name |
//! | [`metrics`] | Prometheus metrics, fed by the engine's observer hooks, the channels' states, the store's counts and a middleware timing each request |
//! | [`channels`] | [`ChannelStates`]: each channel `connecting`, `up` or `refused`, for `/readyz` and `askgate_channel_up` |
//! | [`openapi`] | `/openapi.json` |
//! | [`conn`] | accepting and running connections: the cap, the header-read, body and idle timeouts, the shutdown deadline |
//! | [`mcp`] | askgate as an MCP server: the tools, `/mcp` (streamable HTTP), and the backend of the stdio bridge |
//!
//! [`app`] builds the router from an [`AppState`]; [`serve`] runs it on a
//! listener until a shutdown future completes, finishing in-flight requests
//! within [`ConnectionLimits`].
//! This crate decides nothing about questions: the engine does.

pub mod api;
pub mod auth;
pub mod body;
pub mod callbacks;
pub mod channels;
pub mod conn;
pub mod error;
pub mod headers;
pub mod mcp;
pub mod metrics;
pub mod nudges;
pub mod openapi;
pub mod resource;
pub mod web;

use std::sync::Arc;
use std::time::Duration;

use askgate_engine::Engine;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;

pub use auth::{Agent, AgentToken, Allowed};
pub use channels::ChannelStates;
pub use conn::ConnectionLimits;
pub use error::ApiError;
pub use mcp::McpSettings;
pub use metrics::Metrics;
pub use web::{OidcPerson, OidcSettings, OidcSetupError, SignIn, Web, WebChannel, WebKey};

/// How the HTTP side is set up.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// The agent tokens.
    pub agents: Vec<AgentToken>,
    /// The secret page links.
    pub web_keys: Vec<WebKey>,
    /// The largest request body accepted; larger ones get 413.
    pub max_body_bytes: usize,
    /// How often `POST /v1/ask` sends a space while it waits.
    pub ask_keepalive: Duration,
    /// How long the question of a keyed `POST /v1/ask` whose caller went
    /// away is kept for a retry to re-attach before it is cancelled.
    pub ask_retry_grace: Duration,
    /// The MCP server at `/mcp`.
    pub mcp: McpSettings,
    /// The configured channels' states, reported by `/readyz`.
    pub channels: ChannelStates,
    /// Sign-in to the page with OpenID Connect (`[web.oidc]`), when configured.
    pub oidc: Option<Arc<SignIn>>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            agents: Vec::new(),
            web_keys: Vec::new(),
            max_body_bytes: 64 * 1024,
            ask_keepalive: Duration::from_secs(5),
            ask_retry_grace: Duration::from_secs(15),
            mcp: McpSettings::default(),
            channels: ChannelStates::default(),
            oidc: None,
        }
    }
}

/// What a live view learns from [`AppState::next_change`].
pub(crate) enum Change {
    /// A question it watches changed.
    Matching(Arc<askgate_store::QuestionRecord>),
    /// Changes were lost: re-read what it shows.
    Missed,
}

/// What every handler shares. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(pub(crate) Arc<Shared>);

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) engine: Engine,
    pub(crate) metrics: Arc<Metrics>,
    /// The agent tokens and page keys: replaced whole when the admin
    /// rotates one ([`AppState::set_credentials`]).
    credentials: std::sync::RwLock<Arc<Credentials>>,
    pub(crate) max_body_bytes: usize,
    pub(crate) ask_keepalive: Duration,
    pub(crate) ask_retry_grace: Duration,
    pub(crate) mcp: McpSettings,
    pub(crate) channels: ChannelStates,
    pub(crate) oidc: Option<Arc<SignIn>>,
    pub(crate) attached: api::Attached,
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
}

/// What authenticates a request: the agent tokens and the page keys.
#[derive(Debug)]
pub(crate) struct Credentials {
    pub(crate) agents: Vec<AgentToken>,
    pub(crate) web_keys: Vec<web::WebKey>,
}

impl AppState {
    /// The engine behind the service.
    pub fn engine(&self) -> &Engine {
        &self.0.engine
    }

    /// The agent tokens and page keys in force now.
    pub(crate) fn credentials(&self) -> Arc<Credentials> {
        Arc::clone(
            &self
                .0
                .credentials
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Replaces the agent tokens and page keys (a rotation, on `SIGHUP`):
    /// requests from now on are checked against these; what was asked,
    /// and every agent waiting for an answer, is untouched.
    pub fn set_credentials(&self, agents: Vec<AgentToken>, web_keys: Vec<WebKey>) {
        *self
            .0
            .credentials
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(Credentials { agents, web_keys });
    }

    /// The state for an engine (whose observer should be `metrics`).
    /// `stopping` turns true when the server shuts down: long waits then
    /// return at once, so that shutdown is not held up by them.
    pub fn new(
        engine: Engine,
        metrics: Arc<Metrics>,
        settings: ServerSettings,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        Self(Arc::new(Shared {
            engine,
            metrics,
            credentials: std::sync::RwLock::new(Arc::new(Credentials {
                agents: settings.agents,
                web_keys: settings.web_keys,
            })),
            max_body_bytes: settings.max_body_bytes,
            ask_keepalive: settings.ask_keepalive,
            ask_retry_grace: settings.ask_retry_grace,
            mcp: settings.mcp,
            channels: settings.channels,
            oidc: settings.oidc,
            attached: api::Attached::default(),
            stopping,
        }))
    }

    /// Waits for a question to end, for at most `max`, or until shutdown.
    pub(crate) async fn wait(
        &self,
        id: &askgate_core::QuestionId,
        max: Duration,
    ) -> Result<askgate_store::QuestionRecord, askgate_engine::EngineError> {
        tokio::select! {
            record = self.0.engine.wait(id, max) => record,
            () = self.stopped() => self.0.engine.wait(id, Duration::ZERO).await,
        }
    }

    /// [`AppState::wait`] for a question `agent` asked (404 for another's).
    pub(crate) async fn wait_for_agent(
        &self,
        agent: &str,
        id: &askgate_core::QuestionId,
        max: Duration,
    ) -> Result<askgate_store::QuestionRecord, askgate_engine::EngineError> {
        tokio::select! {
            record = self.0.engine.wait_for_agent(agent, id, max) => record,
            () = self.stopped() => self.0.engine.wait_for_agent(agent, id, Duration::ZERO).await,
        }
    }

    /// Completes when the server starts shutting down: endless streams
    /// (server-sent events) end then, so that shutdown is not held up.
    pub(crate) async fn stopped(&self) {
        let mut stopping = self.0.stopping.clone();
        drop(stopping.wait_for(|stop| *stop).await);
    }

    /// The next change to a question that `matches`, for a live view:
    /// [`Change::Missed`] when the view fell behind and changes were lost,
    /// `None` once the server shuts down or the engine is gone.
    pub(crate) async fn next_change(
        &self,
        changes: &mut tokio::sync::broadcast::Receiver<askgate_engine::Update>,
        matches: impl Fn(&askgate_store::QuestionRecord) -> bool,
    ) -> Option<Change> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = self.stopped() => return None,
            };
            match change {
                Ok(askgate_engine::Update::Changed(record)) if matches(&record) => {
                    return Some(Change::Matching(record));
                }
                Ok(askgate_engine::Update::Missed) | Err(RecvError::Lagged(_)) => return Some(Change::Missed),
                Ok(_) => {}
                Err(RecvError::Closed) => return None,
            }
        }
    }

    /// Whether the server is shutting down.
    pub(crate) fn is_stopping(&self) -> bool {
        *self.0.stopping.borrow()
    }
}

/// The router: the agent API, MCP, the web page, health, metrics, OpenAPI.
pub fn app(state: AppState) -> Router {
    let limit = state.0.max_body_bytes;
    let metrics = Arc::clone(&state.0.metrics);
    mcp::routes(&state)
        .route("/v1/ask", post(api::ask))
        .route("/v1/questions", post(api::create_question))
        .route("/v1/questions/{id}", get(api::get_question))
        .route("/v1/questions/{id}/events", get(api::question_events))
        .route("/v1/questions/{id}/cancel", post(api::cancel_question))
        .route("/v1/runs/{run_id}/abort", post(api::abort_run))
        .route("/v1/agent", get(api::agent))
        .route("/", get(web::not_found))
        .route("/web/oidc/login", get(web::oidc_login))
        .route("/web/oidc/callback", get(web::oidc_callback))
        .route("/web/oidc/logout", post(web::oidc_logout))
        .route("/web/oidc/signed-out", get(web::oidc_signed_out))
        .route("/web/{key}", get(web::page))
        .route("/web/{key}/api/state", get(web::page_state))
        .route("/web/{key}/api/pending", get(web::pending))
        .route("/web/{key}/api/events", get(web::events))
        .route("/web/{key}/api/questions/{id}/answer", post(web::answer))
        .route("/web/{key}/api/questions/{id}/skip", post(web::skip))
        .route("/web/{key}/api/questions/{id}/progress", post(web::progress::save))
        .route("/assets/web.js", get(web::script))
        .route("/assets/web-words.js", get(web::words))
        .route("/assets/web.css", get(web::style))
        .route("/openapi.json", get(openapi_document))
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics_text))
        .fallback(|| async { ApiError::not_found("route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "This route does not take that method.",
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(headers::security_headers))
        // Outermost: it sees the status every other layer settled on.
        .layer(axum::middleware::from_fn_with_state(metrics, metrics::http::track))
        .with_state(state)
}

/// `/openapi.json`, with the longest `timeoutSeconds` `POST /v1/questions`
/// takes from any agent token in force now.
async fn openapi_document(State(state): State<AppState>) -> axum::Json<serde_json::Value> {
    let longest = state
        .credentials()
        .agents
        .iter()
        .map(|agent| agent.max_timeout_seconds)
        .max()
        .unwrap_or(askgate_core::request::MAX_TIMEOUT_SECONDS);
    axum::Json(openapi::document_for(longest))
}

/// `/readyz`: ready while the store takes writes, whatever the chat
/// platforms do; each channel's state beside it, for the admin
/// ([`channels`]: a channel down does not make askgate not ready).
async fn ready(State(state): State<AppState>) -> Response {
    let channels = state.0.channels.json();
    match state.0.engine.store().ping().await {
        Ok(()) => axum::Json(json!({"status": "ready", "channels": channels})).into_response(),
        Err(error) => {
            tracing::warn!(%error, "not ready: the store cannot take writes");
            // The reason names a condition (a full disk, a replaced file),
            // never a secret: the store's errors carry no credentials.
            (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({"status": "unavailable", "reason": error.to_string(), "channels": channels})),
            )
                .into_response()
        }
    }
}

async fn metrics_text(State(state): State<AppState>) -> Response {
    // The store counts its failed writes itself; read once per scrape.
    let failures = state.0.engine.store().write_failures();
    state.0.metrics.note_store_failures(&failures);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.0.metrics.render(),
    )
        .into_response()
}

/// Serves `app(state)` on `listener` until `shutdown` completes, then lets
/// in-flight requests finish; with the default [`ConnectionLimits`].
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, Router::new(), shutdown).await
}

/// Like [`serve`], with more routes beside askgate's own (a chat adapter's
/// webhook endpoints, which the binary wires in).
pub async fn serve_with(
    listener: TcpListener,
    state: AppState,
    extra: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_limits(listener, state, extra, ConnectionLimits::default(), shutdown).await
}

/// Like [`serve_with`], within `limits` (see [`conn`]).
pub async fn serve_with_limits(
    listener: TcpListener,
    state: AppState,
    extra: Router,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    conn::serve(listener, app_with(state, extra), limits, shutdown).await
}

/// [`app`] with `extra` routes beside askgate's own (a chat adapter's
/// webhook endpoints), counted and timed in the HTTP metrics as askgate's
/// own are.
pub fn app_with(state: AppState, extra: Router) -> Router {
    // Only on the extra routes: `app` times its own routes and the
    // fallback, which is its.
    let extra = if extra.has_routes() {
        extra.route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.0.metrics),
            metrics::http::track,
        ))
    } else {
        extra
    };
    extra.merge(app(state))
}
