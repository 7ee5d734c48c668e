//! What the server's suites share: askgate's state over the real engine
//! and a SQLite store in a temporary directory, with web recipients, and a
//! request sent to a router in-process.
// Helpers panic on purpose, outside #[test] functions too: a panic is how a
// test reports a failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use askgate_core::Locale;
use askgate_core::channel::{Channel, Destination};
use askgate_engine::{Clock, Engine, Recipient, RecipientSurface};
use askgate_server::{AgentToken, Allowed, AppState, Metrics, ServerSettings, WebChannel};
use askgate_store::SqliteStore;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

/// A recipient on the web channel whose conversation is its name.
pub(crate) fn web_recipient(name: &str, display_name: &str) -> Recipient {
    let destination = Destination {
        conversation: name.into(),
        thread: None,
    };
    Recipient::on(
        name,
        display_name,
        RecipientSurface::new("web", "web", destination, vec![]),
        Locale::En,
    )
}

/// Agent `one`, with `token`, allowed to ask everyone.
pub(crate) fn agent_one(token: &str) -> AgentToken {
    AgentToken {
        name: "one".into(),
        token: token.into(),
        allowed: Allowed::All,
        max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
        callback_hosts: Vec::new(),
    }
}

/// Settings with agent `one` (`token`) and `me`'s page at `key`.
pub(crate) fn one_agent_one_page(token: &str, key: &str) -> ServerSettings {
    ServerSettings {
        agents: vec![agent_one(token)],
        web_keys: vec![askgate_server::WebKey {
            key: key.into(),
            recipient: "me".into(),
        }],
        ..ServerSettings::default()
    }
}

/// The state of a started engine over a store in `dir` with the web channel
/// and `recipients`; shutdown is signalled by the returned sender (keep it).
pub(crate) async fn state_in(
    dir: &Path,
    recipients: Vec<Recipient>,
    settings: ServerSettings,
) -> (AppState, tokio::sync::watch::Sender<bool>) {
    let (state, _, stop) = state_and_store_in(dir, recipients, settings).await;
    (state, stop)
}

/// [`state_in`], and its store, for a test that writes what the engine
/// would (a step of a question's plan taken).
pub(crate) async fn state_and_store_in(
    dir: &Path,
    recipients: Vec<Recipient>,
    settings: ServerSettings,
) -> (AppState, Arc<SqliteStore>, tokio::sync::watch::Sender<bool>) {
    let store = Arc::new(SqliteStore::open(&dir.join("askgate.db")).await.unwrap());
    let channels: Vec<Arc<dyn Channel>> = vec![Arc::new(WebChannel::new("web"))];
    let metrics = Arc::new(Metrics::new());
    let engine = Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone());
    engine.start().await.unwrap();
    let (stop, stopping) = tokio::sync::watch::channel(false);
    (AppState::new(engine, metrics, settings, stopping), store, stop)
}

/// askgate's router over [`state_in`], its store (for a test that writes
/// what the engine would), and what must live as long as them.
pub(crate) struct Fixture {
    pub(crate) state: AppState,
    pub(crate) router: Router,
    pub(crate) store: Arc<SqliteStore>,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::watch::Sender<bool>,
}

/// [`state_in`] in `dir` (kept as long as the fixture), and its router.
pub(crate) async fn fixture_in(
    dir: tempfile::TempDir,
    recipients: Vec<Recipient>,
    settings: ServerSettings,
) -> Fixture {
    let (state, store, stop) = state_and_store_in(dir.path(), recipients, settings).await;
    Fixture {
        router: askgate_server::app(state.clone()),
        state,
        store,
        _dir: dir,
        _stop: stop,
    }
}

/// `GET path` sent to `router`: the response with its body unread (an
/// event stream, read as it comes).
pub(crate) async fn open(router: &Router, path: &str) -> axum::response::Response {
    router
        .clone()
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap()
}

/// Sends `request` to `router` and reads the status and the body (JSON, or
/// the text as a JSON string).
pub(crate) async fn send_to(router: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// Asserts that every field of the `ask_user` arguments is described in a
/// published schema as the model guidance says (one source for OpenAPI and
/// MCP): `request` holds the top-level properties, `question` a question's,
/// `option` an option's.
pub(crate) fn assert_fields_described(request: &Value, question: &Value, option: &Value) {
    for (field, text) in askgate_core::guidance::FIELD_DESCRIPTIONS {
        let schema = match field.rsplit_once('.') {
            None => &request[field],
            Some(("questions[]", name)) => &question[name],
            Some(("questions[].options[]", name)) => &option[name],
            Some(_) => panic!("a field the test does not place: {field}"),
        };
        assert_eq!(schema["description"], text, "{field}");
    }
}

/// Two web recipients, "me" and "other", each with its page key, and one
/// agent token: the web page suites' service, on `dir`.
pub(crate) async fn two_pages_in(dir: tempfile::TempDir, token: &str, me_key: &str, other_key: &str) -> Fixture {
    let settings = ServerSettings {
        agents: vec![agent_one(token)],
        web_keys: vec![
            askgate_server::WebKey {
                key: me_key.into(),
                recipient: "me".into(),
            },
            askgate_server::WebKey {
                key: other_key.into(),
                recipient: "other".into(),
            },
        ],
        ..ServerSettings::default()
    };
    let recipients = vec![web_recipient("me", "Me"), web_recipient("other", "Other")];
    fixture_in(dir, recipients, settings).await
}
