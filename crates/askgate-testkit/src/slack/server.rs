//! The HTTP side of the fake: `POST` (or `GET`) `/api/<method>` with the
//! token from `Authorization: Bearer …` or a `token` form field, the
//! arguments from a JSON or form body and the query string, the call
//! recorded, a queued failure applied, and Slack's answers: HTTP 200 with
//! `"ok": true` or `{"ok": false, "error": …}`, and 429 with `Retry-After`.
//! Also the `response_url`s of clicks (`/actions/…`), and the lifetime of
//! the Web API server, the Socket Mode server and the delivery tasks.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::http::form_decode;
use super::state::Shared;
use super::types::{Call, Failure, TokenKind};
use super::{APP_TOKEN, BOT_TOKEN};
use crate::fake::{self, Connection, Fault, Loopback, lock};

const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Form fields Slack reads as JSON text.
const JSON_FIELDS: &[&str] = &["blocks", "attachments", "view", "metadata"];

/// An answer other than `"ok": true`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApiError {
    /// HTTP 200 with `{"ok": false, "error": …}` and any more fields.
    Error(String, Map<String, Value>),
    /// HTTP 429 with `Retry-After`.
    RateLimited(Duration),
}

impl ApiError {
    pub(crate) fn new(error: &str) -> Self {
        Self::Error(error.to_owned(), Map::new())
    }

    /// Adds a field to the body.
    pub(crate) fn with(self, key: &str, value: Value) -> Self {
        match self {
            Self::Error(error, mut fields) => {
                fields.insert(key.to_owned(), value);
                Self::Error(error, fields)
            }
            limited @ Self::RateLimited(_) => limited,
        }
    }

    /// Whether this refuses a call as Slack's published spec refuses it (an
    /// unknown method, arguments or blocks the spec or the Block Kit limits
    /// refuse, a `thread_ts` that is no parent message's), rather than for
    /// the state's reasons (no such channel).
    pub(crate) fn is_violation(&self) -> bool {
        const SPEC: &[&str] = &[
            "unknown_method",
            "invalid_arguments",
            "invalid_blocks",
            "invalid_blocks_format",
            "invalid_json",
            "msg_too_long",
            "no_text",
            "invalid_thread_ts",
        ];
        matches!(self, Self::Error(error, _) if SPEC.contains(&error.as_str()))
    }

    /// The error with Slack's `response_metadata.messages` (`[ERROR] …`).
    pub(crate) fn with_messages(self, messages: &[String]) -> Self {
        let messages: Vec<String> = messages.iter().map(|message| format!("[ERROR] {message}")).collect();
        self.with("response_metadata", json!({ "messages": messages }))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            Self::Error(error, fields) => {
                let mut body = Map::new();
                body.insert("ok".to_owned(), Value::Bool(false));
                body.insert("error".to_owned(), Value::String(error));
                body.extend(fields);
                (StatusCode::OK, axum::Json(Value::Object(body))).into_response()
            }
            Self::RateLimited(wait) => {
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let mut response = (
                    StatusCode::TOO_MANY_REQUESTS,
                    axum::Json(json!({ "ok": false, "error": "ratelimited" })),
                )
                    .into_response();
                if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
                response
            }
        }
    }
}

/// The Web API server, the Socket Mode server (with the delivery clock) and
/// the HTTP event pusher; dropping it stops them all.
pub(crate) struct Server {
    shared: Arc<Shared>,
    loopback: Loopback,
    socket: JoinHandle<()>,
    socket_addr: SocketAddr,
    pusher: Mutex<Option<JoinHandle<()>>>,
}

impl Server {
    pub(crate) async fn start(shared: Arc<Shared>) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the fake Slack's Socket Mode server binds 127.0.0.1:0");
        let socket_addr = listener.local_addr().expect("a bound listener knows its address");
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let loopback = Loopback::serve(app)
            .await
            .expect("the fake Slack's Web API binds 127.0.0.1:0");
        {
            let mut state = shared.state.lock();
            state.api_base = format!("http://{}", loopback.addr());
            state.socket_base = format!("ws://{socket_addr}");
        }
        let socket = tokio::spawn(super::socket::serve(listener, Arc::clone(&shared)));
        Self {
            shared,
            loopback,
            socket,
            socket_addr,
            pusher: Mutex::new(None),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.loopback.addr()
    }

    pub(crate) fn socket_addr(&self) -> SocketAddr {
        self.socket_addr
    }

    /// (Re)starts the task that POSTs events, with the settings as they are now.
    pub(crate) fn start_pusher(&self) {
        let (timeout, pause) = {
            let state = self.shared.state.lock();
            (state.config.ack_timeout, state.config.retry_pause)
        };
        let client = fake::push_client(timeout).expect("an HTTP client without TLS can be built");
        let task = tokio::spawn(super::http::deliver_events(Arc::clone(&self.shared), client, pause));
        if let Some(old) = lock(&self.pusher).replace(task) {
            old.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.loopback.stop();
        // Aborting the Socket Mode task drops its connections with it.
        self.socket.abort();
        if let Some(pusher) = lock(&self.pusher).take() {
            pusher.abort();
        }
        self.shared.change(|state| state.closed = true);
    }
}

/// Answers one request: read, recorded, then failed as queued or answered.
async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let connection = Connection::of(&parts.extensions);
    let path = parts.uri.path().to_owned();
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
    if path.starts_with("/actions/") {
        let body = serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|_| {
            // A form body with `payload=<json>` is read too.
            let form = form_decode(&String::from_utf8_lossy(&bytes));
            form.iter()
                .find(|(key, _)| key == "payload")
                .and_then(|(_, payload)| serde_json::from_str(payload).ok())
                .unwrap_or(Value::Null)
        });
        let call = Call {
            method: "response_url".to_owned(),
            token: TokenKind::Missing,
            body: body.clone(),
            at: Instant::now(),
        };
        let failure = shared.state.record(|state| state.requests.record(call, "response_url"));
        return fake::answer(failure.map(fault), connection.as_ref(), async {
            let answer = shared.change(|state| state.response_url(&path, &body));
            match answer {
                Ok(()) => (StatusCode::OK, axum::Json(json!({ "ok": true }))).into_response(),
                Err(error) => (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({ "ok": false, "error": error })),
                )
                    .into_response(),
            }
        })
        .await;
    }
    let Some(method) = path.strip_prefix("/api/").map(str::to_owned) else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    let (token, args) = arguments(&parts.headers, parts.uri.query(), &bytes);
    let token = token_kind(token.as_deref());
    let call = Call {
        method: method.clone(),
        token,
        body: args.clone().unwrap_or(Value::Null),
        at: Instant::now(),
    };
    let failure = shared.state.record(|state| state.requests.record(call, &method));
    fake::answer(failure.map(fault), connection.as_ref(), async {
        let answer = match args {
            Some(args) => shared.change(|state| state.api(&method, token, &args, Instant::now())),
            None => Err(ApiError::new("invalid_json")),
        };
        if let Err(error) = &answer
            && error.is_violation()
        {
            let violation = format!("{method}: {error:?}");
            shared.change(|state| state.violations.push(violation));
        }
        match answer {
            Ok(mut body) => {
                if let Some(object) = body.as_object_mut() {
                    let mut answered = Map::new();
                    answered.insert("ok".to_owned(), Value::Bool(true));
                    answered.append(object);
                    body = Value::Object(answered);
                }
                (StatusCode::OK, axum::Json(body)).into_response()
            }
            Err(error) => error.into_response(),
        }
    })
    .await
}

/// The token a request carried and its arguments (`None` for a JSON body
/// that does not parse). A JSON body is taken as sent (its token, if any,
/// is ignored, as Slack ignores it); form fields and query parameters
/// become strings, with the JSON-valued fields parsed.
fn arguments(headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> (Option<String>, Option<Value>) {
    let mut token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|value| value.trim().to_owned());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut fields = Map::new();
    let mut form = |text: &str, fields: &mut Map<String, Value>| {
        for (key, value) in form_decode(text) {
            if key == "token" {
                token.get_or_insert(value);
            } else if JSON_FIELDS.contains(&key.as_str())
                && let Ok(parsed) = serde_json::from_str::<Value>(&value)
            {
                fields.insert(key, parsed);
            } else {
                fields.insert(key, Value::String(value));
            }
        }
    };
    if let Some(query) = query {
        form(query, &mut fields);
    }
    let text = String::from_utf8_lossy(body);
    if content_type.starts_with("application/json") && !text.trim().is_empty() {
        let Ok(Value::Object(json)) = serde_json::from_str::<Value>(&text) else {
            return (token, None);
        };
        fields.extend(json);
    } else if !text.trim().is_empty() {
        form(&text, &mut fields);
    }
    (token, Some(Value::Object(fields)))
}

fn token_kind(token: Option<&str>) -> TokenKind {
    match token {
        None | Some("") => TokenKind::Missing,
        Some(BOT_TOKEN) => TokenKind::Bot,
        Some(APP_TOKEN) => TokenKind::App,
        Some(_) => TokenKind::Invalid,
    }
}

/// What a queued failure does to the call it is used on.
fn fault(failure: Failure) -> Fault {
    match failure {
        Failure::RateLimited { retry_after } => Fault::Respond(ApiError::RateLimited(retry_after).into_response()),
        Failure::Error(error) => Fault::Respond(ApiError::new(error).into_response()),
        Failure::Status(status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let text = format!("{status}");
            Fault::Respond((status, text).into_response())
        }
        Failure::Slow(delay) => Fault::Slow(delay),
        Failure::Drop => Fault::Disconnect,
        Failure::Huge { status, bytes } => Fault::Respond(crate::fake::huge_answer(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "text/html",
            bytes,
        )),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};
    use serde_json::json;

    use super::{arguments, token_kind};
    use crate::slack::types::TokenKind;
    use crate::slack::{APP_TOKEN, BOT_TOKEN};

    #[test]
    fn json_bodies_are_kept_and_form_bodies_parsed() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer xoxb-1"));
        let (token, args) = arguments(&headers, None, br#"{"channel":"C1","blocks":[{"type":"divider"}]}"#);
        assert_eq!(token.as_deref(), Some("xoxb-1"));
        assert_eq!(
            args,
            Some(json!({ "channel": "C1", "blocks": [{ "type": "divider" }] }))
        );

        let mut form = HeaderMap::new();
        form.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let (token, args) = arguments(
            &form,
            None,
            b"token=xoxb-2&channel=C1&text=a+b%21&blocks=%5B%7B%22type%22%3A%22divider%22%7D%5D",
        );
        assert_eq!(token.as_deref(), Some("xoxb-2"));
        assert_eq!(
            args,
            Some(json!({ "channel": "C1", "text": "a b!", "blocks": [{ "type": "divider" }] }))
        );
        assert_eq!(arguments(&headers, None, b"{nope").1, None);
    }

    #[test]
    fn tokens_are_told_apart() {
        assert_eq!(token_kind(Some(BOT_TOKEN)), TokenKind::Bot);
        assert_eq!(token_kind(Some(APP_TOKEN)), TokenKind::App);
        assert_eq!(token_kind(Some("xoxb-other")), TokenKind::Invalid);
        assert_eq!(token_kind(None), TokenKind::Missing);
    }
}
