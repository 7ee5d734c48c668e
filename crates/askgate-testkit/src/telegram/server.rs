//! The HTTP side of the fake: `/bot{token}/{method}` with the token checked
//! and the method matched case-insensitively, parameters from the query
//! string and a JSON, form-urlencoded or multipart body, queued failures
//! applied, every request checked against the vendored Bot API description
//! before a method answers, answers and errors in Telegram's envelope; and
//! the server's lifetime.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

use super::http::deliver_webhooks;
use super::spec::api;
use super::state::Shared;
use super::validate;
use super::{Call, Failure, TOKEN, WEBHOOK_TIMEOUT};
use crate::fake::{self, Connection, Fault, Loopback, push_client};

const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The server and the webhook delivery task; dropping it stops them both
/// and ends the long polls.
pub(crate) struct Server {
    loopback: Loopback,
    delivery: JoinHandle<()>,
    shared: Arc<Shared>,
}

impl Server {
    /// Serves the fake on `127.0.0.1:0`, and starts its webhook delivery.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound, or no HTTP client built for webhook
    /// delivery.
    pub(crate) async fn start(shared: &Arc<Shared>) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the fake Telegram server binds 127.0.0.1:0");
        Self::start_on(shared, listener)
    }

    /// Serves the fake on `listener`, and starts its webhook delivery.
    ///
    /// # Panics
    ///
    /// If the listener has no address, or no HTTP client can be built for
    /// webhook delivery.
    pub(crate) fn start_on(shared: &Arc<Shared>, listener: tokio::net::TcpListener) -> Self {
        let app = Router::new().fallback(handle).with_state(Arc::clone(shared));
        let loopback = Loopback::serve_on(listener, app).expect("the fake Telegram server serves its listener");
        let client = push_client(WEBHOOK_TIMEOUT).expect("an HTTP client without TLS can be built");
        let delivery = tokio::spawn(deliver_webhooks(Arc::clone(shared), client));
        Self {
            loopback,
            delivery,
            shared: Arc::clone(shared),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.loopback.addr()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.loopback.stop();
        self.delivery.abort();
        // Whatever still waits on the state learns that the fake is gone: a
        // long poll answers at once, the delivery loop ends.
        self.shared.state.lock().closed = true;
        self.shared.updates_changed.notify_waiters();
        self.shared.state.notify();
    }
}

/// Answers one request: the path names the token and the method; the call is
/// recorded, then a queued failure applies or the method answers.
async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let connection = Connection::of(&parts.extensions);
    let Some((token, method)) = split_path(parts.uri.path()) else {
        return ApiError::not_found().into_response();
    };
    if token != TOKEN {
        return ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    }
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
    let params = parse_params(parts.uri.query(), &parts.headers, &body);
    let spec = api().method(&method);
    let name = spec.map_or_else(|| lower_first(&method), |spec| spec.name.clone());
    let recorded = params.as_ref().map_or(Value::Null, Clone::clone);
    let request = format!("{name} {}", brief(&recorded));
    let failure = shared.record(
        Call {
            method: name,
            body: recorded,
        },
        &method,
    );
    fake::answer(failure.map(fault), connection.as_ref(), async {
        let answer = match (params, spec) {
            (Err(error), _) => Err(error),
            // Not a method of the Bot API at all.
            (Ok(_), None) => Err(ApiError {
                invalid: true,
                ..ApiError::not_found()
            }),
            (Ok(params), Some(spec)) => match validate::check(spec, &params) {
                Err(violation) => Err(ApiError::invalid(violation.description())),
                Ok(()) => shared.call(&spec.name, &params).await,
            },
        };
        if let Err(error) = &answer
            && error.invalid
        {
            let refusal = format!("{}: {request}", error.description);
            shared.state.lock().violations.push(refusal);
        }
        match answer {
            Ok(result) => Json(json!({ "ok": true, "result": result })).into_response(),
            Err(error) => error.into_response(),
        }
    })
    .await
}

/// A request's parameters for a report, cut to a readable length.
fn brief(params: &Value) -> String {
    const MOST: usize = 300;
    let text = params.to_string();
    match text.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}… ({} characters)", &text[..end], text.chars().count()),
        None => text,
    }
}

/// What a queued failure does to the call it is used on.
fn fault(failure: Failure) -> Fault {
    match failure {
        Failure::Slow(delay) => Fault::Slow(delay),
        Failure::Disconnect => Fault::Disconnect,
        Failure::Huge { status, bytes } => Fault::Respond(fake::huge_answer(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "application/json",
            bytes,
        )),
        failure => Fault::Respond(ApiError::from_failure(failure).into_response()),
    }
}

/// `/bot{token}/{method}` → (token, method).
fn split_path(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/bot")?;
    let (token, method) = rest.split_once('/')?;
    let method = method.strip_suffix('/').unwrap_or(method);
    if method.is_empty() || method.contains('/') {
        return None;
    }
    Some((percent_decode(token, false), percent_decode(method, false)))
}

fn lower_first(method: &str) -> String {
    let mut chars = method.chars();
    chars
        .next()
        .map_or_else(String::new, |first| first.to_lowercase().chain(chars).collect())
}

/// An error answer: HTTP status, `error_code`, `description`, `retry_after`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: u16,
    description: String,
    retry_after: Option<u32>,
    /// A refusal of the request itself (Telegram would refuse it whatever
    /// the state), kept for [`FakeTelegram::violations`](super::FakeTelegram::violations).
    invalid: bool,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, description: impl Into<String>) -> Self {
        Self {
            status,
            code: status.as_u16(),
            description: description.into(),
            retry_after: None,
            invalid: false,
        }
    }

    /// `400` for a request that breaks the Bot API's description or a limit
    /// Telegram adds to it.
    pub(crate) fn invalid(description: impl Into<String>) -> Self {
        Self {
            invalid: true,
            ..Self::bad_request(description)
        }
    }

    pub(crate) fn bad_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, description)
    }

    pub(crate) fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    pub(crate) fn conflict(description: &str) -> Self {
        Self::new(StatusCode::CONFLICT, description)
    }

    fn from_failure(failure: Failure) -> Self {
        match failure {
            Failure::TooManyRequests { retry_after } => Self {
                retry_after: Some(retry_after),
                ..Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too Many Requests: retry after {retry_after}"),
                )
            },
            Failure::BadRequest(description) => Self::bad_request(description),
            Failure::Forbidden(description) => Self::new(StatusCode::FORBIDDEN, description),
            Failure::OkFalse { code, description } => Self {
                code,
                ..Self::new(StatusCode::OK, description)
            },
            Failure::ServerError | Failure::Slow(_) | Failure::Disconnect | Failure::Huge { .. } => {
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "ok": false,
            "error_code": self.code,
            "description": self.description,
        });
        if let Some(retry_after) = self.retry_after {
            body["parameters"] = json!({ "retry_after": retry_after });
        }
        (self.status, Json(body)).into_response()
    }
}

// ---------------------------------------------------------------------------
// Parameters

pub(crate) fn as_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn int(params: &Value, key: &str) -> Option<i64> {
    params.get(key).and_then(as_int)
}

pub(crate) fn string(params: &Value, key: &str) -> Option<String> {
    match params.get(key)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

pub(crate) fn boolean(params: &Value, key: &str) -> Option<bool> {
    match params.get(key)? {
        Value::Bool(flag) => Some(*flag),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// An object or array parameter, also when a form sent it JSON-serialized.
pub(crate) fn object(params: &Value, key: &str) -> Option<Value> {
    match params.get(key)? {
        value @ (Value::Object(_) | Value::Array(_)) => Some(value.clone()),
        Value::String(text) => serde_json::from_str(text).ok(),
        _ => None,
    }
}

pub(crate) fn string_list(params: &Value, key: &str) -> Option<Vec<String>> {
    let list = object(params, key)?;
    Some(
        list.as_array()?
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
    )
}

fn parse_params(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let mut params = Map::new();
    if let Some(query) = query {
        params.extend(form_fields(query));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if body.iter().all(u8::is_ascii_whitespace) {
        // Nothing more.
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        params.extend(form_fields(&String::from_utf8_lossy(body)));
    } else if content_type.starts_with("multipart/form-data") {
        params.extend(multipart_fields(&content_type, body));
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(fields)) => params.extend(fields),
            _ => return Err(ApiError::invalid("Bad Request: can't parse JSON object")),
        }
    }
    Ok(Value::Object(params))
}

/// A form value: JSON-serialized objects and arrays are read as JSON, the
/// rest stays text (the accessors read numbers and booleans from text).
fn form_value(text: String) -> Value {
    if text.starts_with(['{', '['])
        && let Ok(value) = serde_json::from_str(&text)
    {
        return value;
    }
    Value::String(text)
}

fn form_fields(form: &str) -> Vec<(String, Value)> {
    form.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key, true), form_value(percent_decode(value, true)))
        })
        .collect()
}

fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => match text.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                Some(byte) => {
                    out.push(byte);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text fields of a multipart body; a file part becomes its name and size.
fn multipart_fields(content_type: &str, body: &[u8]) -> Vec<(String, Value)> {
    let Some(boundary) = content_type
        .split(';')
        .find_map(|part| part.trim().strip_prefix("boundary="))
        .map(|boundary| format!("--{}", boundary.trim_matches('"')))
    else {
        return Vec::new();
    };
    let body = String::from_utf8_lossy(body);
    let mut fields = Vec::new();
    for part in body.split(boundary.as_str()).skip(1) {
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let attribute = |name: &str| {
            let start = head.find(&format!("{name}=\""))? + name.len() + 2;
            let end = head[start..].find('"')? + start;
            Some(head[start..end].to_owned())
        };
        let Some(name) = attribute("name") else { continue };
        let value = match attribute("filename") {
            Some(file) => json!({ "file_name": file, "bytes": value.len() }),
            None => form_value(value.to_owned()),
        };
        fields.push((name, value));
    }
    fields
}
