//! The HTTP side of the fake: the `User-Agent` Discord requires, `/api/v10/…`
//! matched to an operation of Discord's OpenAPI document ([`spec`]) and to
//! the fake's routes, the bot token checked where the document asks for it
//! (`Authorization: Bot <token>`; the interaction and webhook routes take
//! none), the body read (JSON, or a multipart body's `payload_json`), the
//! request recorded, a queued failure applied, the request validated
//! ([`spec`] and [`validate`]), and answers and errors in Discord's shapes;
//! and the lifetime of the REST server and the gateway.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::TOKEN;
use super::spec;
use super::state::{Shared, State, unix_millis};
use super::types::{Call, Failure};
use super::validate::{self, Form};
use crate::fake::{self, Connection, Fault, Loopback};

const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// The routes the fake answers, as a test names them to
/// [`FakeDiscord::fail_next`](super::FakeDiscord::fail_next). `{message_id}`
/// of the webhook routes also matches `@original`.
pub const ROUTES: &[&str] = &[
    "GET /gateway",
    "GET /gateway/bot",
    "GET /users/@me",
    "GET /applications/@me",
    "GET /oauth2/applications/@me",
    "POST /users/@me/channels",
    "POST /channels/{channel_id}/messages",
    "GET /channels/{channel_id}/messages/{message_id}",
    "PATCH /channels/{channel_id}/messages/{message_id}",
    "DELETE /channels/{channel_id}/messages/{message_id}",
    "POST /interactions/{interaction_id}/{interaction_token}/callback",
    "POST /webhooks/{application_id}/{interaction_token}",
    "GET /webhooks/{application_id}/{interaction_token}/messages/{message_id}",
    "PATCH /webhooks/{application_id}/{interaction_token}/messages/{message_id}",
    "DELETE /webhooks/{application_id}/{interaction_token}/messages/{message_id}",
];

/// A request matched to a route, with the ids from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Gateway,
    GatewayBot,
    Me,
    Application,
    DmChannels,
    ChannelMessages {
        channel: u64,
    },
    ChannelMessage {
        channel: u64,
        message: u64,
    },
    Callback {
        interaction: u64,
        token: String,
    },
    Webhook {
        application: u64,
        token: String,
    },
    /// `message` is `None` for `@original`.
    WebhookMessage {
        application: u64,
        token: String,
        message: Option<u64>,
    },
}

/// What a route answers on success.
#[derive(Debug)]
pub(crate) enum Answer {
    Json(Value),
    /// JSON with headers (a rate-limit bucket's).
    JsonWithHeaders(Value, Vec<(&'static str, String)>),
    NoContent,
}

/// The REST server and the gateway's accept task; dropping it stops both
/// and drops their connections.
pub(crate) struct Server {
    loopback: Loopback,
    gateway: JoinHandle<()>,
    gateway_addr: SocketAddr,
}

impl Server {
    pub(crate) async fn start(shared: Arc<Shared>, gateway_listener: tokio::net::TcpListener) -> Self {
        let gateway_addr = gateway_listener
            .local_addr()
            .expect("a bound listener knows its address");
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let loopback = Loopback::serve(app)
            .await
            .expect("the fake Discord REST server binds 127.0.0.1:0");
        let gateway = tokio::spawn(super::gateway::serve(gateway_listener, shared));
        Self {
            loopback,
            gateway,
            gateway_addr,
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.loopback.addr()
    }

    pub(crate) fn gateway_addr(&self) -> SocketAddr {
        self.gateway_addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.loopback.stop();
        // Aborting the accept task drops its connection tasks with it.
        self.gateway.abort();
    }
}

/// Answers one request: the `User-Agent` looked at (Discord's edge), the
/// operation found in Discord's OpenAPI document, the token checked where
/// the document asks for one, the request recorded, then failed as queued,
/// refused as Discord's form checks refuse it, or answered by its route.
async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let connection = Connection::of(&parts.extensions);
    if !user_agent_ok(&parts.headers) {
        let violation = format!("{} {}: no DiscordBot User-Agent", parts.method, parts.uri.path());
        shared.state.lock().violations.push(violation);
        return ApiError::blocked().into_response();
    }
    let Some(path) = parts.uri.path().strip_prefix("/api/v10") else {
        return ApiError::not_found().into_response();
    };
    let path = path.to_owned();
    let method = parts.method.as_str().to_owned();
    let operation = spec::operation(&method, &path);
    let open = operation.as_ref().is_ok_and(|operation| operation.open);
    if operation.is_ok() && !open && !authorised(&parts.headers) {
        return ApiError::unauthorized().into_response();
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
    let body = parse_body(&parts.headers, &bytes);
    let matched = match_route(&method, &path);
    let route_name = match &matched {
        Some((name, _)) => (*name).to_owned(),
        None => format!("{method} {path}"),
    };
    let query = parts.uri.query().map(str::to_owned);
    let call = Call {
        method: method.clone(),
        path,
        route: route_name.clone(),
        query: query.clone(),
        body: body.as_ref().map_or(Value::Null, Clone::clone),
    };
    let failure = shared.state.record(|state| state.requests.record(call, &route_name));
    fake::answer(failure.map(fault), connection.as_ref(), async {
        let answer = operation
            .and_then(|operation| {
                let body = body?;
                let mut form = Form::default();
                spec::check(&operation, query.as_deref(), &body, &mut form);
                validate::rules(&operation.id, &body, &mut form);
                form.finish()?;
                Ok(body)
            })
            .and_then(|body| {
                // A request Discord takes but the fake does not serve.
                let (_, route) = matched.ok_or_else(ApiError::not_found)?;
                shared.call(&method, &route, &body)
            });
        if let Err(error) = &answer
            && error.is_violation()
        {
            let violation = format!("{route_name}: {}", error.body());
            shared.state.lock().violations.push(violation);
        }
        match answer {
            Ok(Answer::Json(value)) => (StatusCode::OK, axum::Json(value)).into_response(),
            Ok(Answer::JsonWithHeaders(value, headers)) => {
                let mut response = (StatusCode::OK, axum::Json(value)).into_response();
                for (name, value) in headers {
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        response.headers_mut().insert(name, value);
                    }
                }
                response
            }
            Ok(Answer::NoContent) => StatusCode::NO_CONTENT.into_response(),
            Err(error) => error.into_response(),
        }
    })
    .await
}

impl Shared {
    /// Answers a matched request; the state changes and waiters are woken.
    fn call(&self, method: &str, route: &Route, body: &Value) -> Result<Answer, ApiError> {
        let gateway_url = self.gateway_url.clone();
        let public_key = super::signing::public_key_hex(&self.signing_key);
        self.state
            .record(|state: &mut State| state.answer(method, route, body, &gateway_url, &public_key))
    }
}

fn authorised(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value == format!("Bot {TOKEN}"))
}

/// "Clients using the HTTP API must provide a valid User Agent which
/// specifies information about the client library and version in the
/// following format: `DiscordBot ($url, $versionNumber)`. Clients may
/// append more information and metadata to the end of this string"
/// (API Reference, User Agent).
fn user_agent_ok(headers: &HeaderMap) -> bool {
    headers
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .and_then(|agent| agent.strip_prefix("DiscordBot ("))
        .and_then(|rest| rest.split_once(')'))
        .and_then(|(inside, _)| inside.split_once(", "))
        .is_some_and(|(url, version)| {
            !url.trim().is_empty() && !version.trim().is_empty() && !url.contains(char::is_whitespace)
        })
}

/// `(method, path)` → the name and ids of a route the fake serves; `None`
/// for one it does not (the path and method are Discord's: see [`spec`]).
fn match_route(method: &str, path: &str) -> Option<(&'static str, Route)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let id = |segment: &str| segment.parse::<u64>().ok();
    let (pattern, route) = match segments.as_slice() {
        ["gateway"] => ("/gateway", Route::Gateway),
        ["gateway", "bot"] => ("/gateway/bot", Route::GatewayBot),
        ["users", "@me"] => ("/users/@me", Route::Me),
        ["applications", "@me"] => ("/applications/@me", Route::Application),
        ["oauth2", "applications", "@me"] => ("/oauth2/applications/@me", Route::Application),
        ["users", "@me", "channels"] => ("/users/@me/channels", Route::DmChannels),
        ["channels", channel, "messages"] => (
            "/channels/{channel_id}/messages",
            Route::ChannelMessages { channel: id(channel)? },
        ),
        ["channels", channel, "messages", message] => (
            "/channels/{channel_id}/messages/{message_id}",
            Route::ChannelMessage {
                channel: id(channel)?,
                message: id(message)?,
            },
        ),
        ["interactions", interaction, token, "callback"] => (
            "/interactions/{interaction_id}/{interaction_token}/callback",
            Route::Callback {
                interaction: id(interaction)?,
                token: (*token).to_owned(),
            },
        ),
        ["webhooks", application, token] => (
            "/webhooks/{application_id}/{interaction_token}",
            Route::Webhook {
                application: id(application)?,
                token: (*token).to_owned(),
            },
        ),
        ["webhooks", application, token, "messages", message] => (
            "/webhooks/{application_id}/{interaction_token}/messages/{message_id}",
            Route::WebhookMessage {
                application: id(application)?,
                token: (*token).to_owned(),
                message: match *message {
                    "@original" => None,
                    message => Some(id(message)?),
                },
            },
        ),
        _ => return None,
    };
    let name = format!("{method} {pattern}");
    ROUTES.iter().find(|known| **known == name).map(|known| (*known, route))
}

/// The JSON body, or a multipart body's `payload_json`; `null` when empty.
fn parse_body(headers: &HeaderMap, bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let json = if content_type.starts_with("multipart/form-data") {
        payload_json(&content_type, bytes).ok_or_else(ApiError::invalid_json)?
    } else {
        bytes.to_vec()
    };
    serde_json::from_slice(&json).map_err(|_| ApiError::invalid_json())
}

/// The `payload_json` part of a multipart body (files are not kept).
fn payload_json(content_type: &str, body: &[u8]) -> Option<Vec<u8>> {
    let boundary = content_type
        .split(';')
        .find_map(|part| part.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let body = String::from_utf8_lossy(body);
    body.split(&format!("--{boundary}")).find_map(|part| {
        let (head, value) = part.split_once("\r\n\r\n")?;
        head.contains("name=\"payload_json\"")
            .then(|| value.strip_suffix("\r\n").unwrap_or(value).as_bytes().to_vec())
    })
}

/// What a queued failure does to the request it is used on.
fn fault(failure: Failure) -> Fault {
    match failure {
        Failure::Slow(delay) => Fault::Slow(delay),
        Failure::Disconnect => Fault::Disconnect,
        Failure::RateLimited { retry_after } => {
            Fault::Respond(ApiError::rate_limited(retry_after, false).into_response())
        }
        Failure::GlobalRateLimited { retry_after } => {
            Fault::Respond(ApiError::rate_limited(retry_after, true).into_response())
        }
        Failure::ServerError { status } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = format!(
                "{}: {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("Server Error")
            );
            Fault::Respond(ApiError::with_status(status, 0, &message).into_response())
        }
        Failure::Error { status, code, message } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            Fault::Respond(ApiError::with_status(status, code, &message).into_response())
        }
        Failure::Huge { status, bytes } => Fault::Respond(crate::fake::huge_answer(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "application/json",
            bytes,
        )),
    }
}

/// An error answer in Discord's shape: `{"message": …, "code": …}` (with
/// `errors` for 50035), or the rate-limit body with its headers.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    body: Value,
    headers: Vec<(&'static str, String)>,
}

impl ApiError {
    fn with_status(status: StatusCode, code: u64, message: &str) -> Self {
        Self {
            status,
            body: json!({ "message": message, "code": code }),
            headers: Vec::new(),
        }
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> Value {
        self.body.clone()
    }

    /// Whether this refuses a request Discord's spec refuses (an invalid
    /// form body, an operation the document lacks, a wrong method), rather
    /// than one the state refuses (an unknown channel, a rate limit).
    pub(crate) fn is_violation(&self) -> bool {
        self.body["code"] == json!(50_035)
            || self.status == StatusCode::METHOD_NOT_ALLOWED
            || (self.status == StatusCode::NOT_FOUND && self.body["code"] == json!(0))
    }

    /// What Discord's edge answers a request it blocks, e.g. one without a
    /// `DiscordBot` `User-Agent`: 403 with JSON code 40333 ("Cloudflare is
    /// blocking your request. This can often be resolved by setting a proper
    /// User Agent", Opcodes and Status Codes; the body as reported in
    /// discord/discord-api-docs#6473).
    pub(crate) fn blocked() -> Self {
        Self::with_status(StatusCode::FORBIDDEN, 40_333, "internal network error")
    }

    pub(crate) fn unauthorized() -> Self {
        Self::with_status(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized")
    }

    pub(crate) fn not_found() -> Self {
        Self::with_status(StatusCode::NOT_FOUND, 0, "404: Not Found")
    }

    pub(crate) fn method_not_allowed() -> Self {
        Self::with_status(StatusCode::METHOD_NOT_ALLOWED, 0, "405: Method Not Allowed")
    }

    pub(crate) fn unknown_channel() -> Self {
        Self::with_status(StatusCode::NOT_FOUND, 10_003, "Unknown Channel")
    }

    pub(crate) fn unknown_message() -> Self {
        Self::with_status(StatusCode::NOT_FOUND, 10_008, "Unknown Message")
    }

    pub(crate) fn unknown_webhook() -> Self {
        Self::with_status(StatusCode::NOT_FOUND, 10_015, "Unknown Webhook")
    }

    pub(crate) fn unknown_interaction() -> Self {
        Self::with_status(StatusCode::NOT_FOUND, 10_062, "Unknown interaction")
    }

    pub(crate) fn already_acknowledged() -> Self {
        Self::with_status(
            StatusCode::BAD_REQUEST,
            40_060,
            "Interaction has already been acknowledged.",
        )
    }

    pub(crate) fn missing_access() -> Self {
        Self::with_status(StatusCode::FORBIDDEN, 50_001, "Missing Access")
    }

    pub(crate) fn not_author() -> Self {
        Self::with_status(
            StatusCode::FORBIDDEN,
            50_005,
            "Cannot edit a message authored by another user",
        )
    }

    pub(crate) fn empty_message() -> Self {
        Self::with_status(StatusCode::BAD_REQUEST, 50_006, "Cannot send an empty message")
    }

    pub(crate) fn cannot_message_user() -> Self {
        Self::with_status(StatusCode::FORBIDDEN, 50_007, "Cannot send messages to this user")
    }

    pub(crate) fn invalid_json() -> Self {
        Self::with_status(
            StatusCode::BAD_REQUEST,
            50_109,
            "The request body contains invalid JSON.",
        )
    }

    pub(crate) fn invalid_form(errors: Value) -> Self {
        let mut body = json!({ "message": "Invalid Form Body", "code": 50_035 });
        body["errors"] = errors;
        Self {
            status: StatusCode::BAD_REQUEST,
            body,
            headers: Vec::new(),
        }
    }

    /// Discord's 429, with `Retry-After` (whole seconds, rounded up) and the
    /// `X-RateLimit-*` headers of an exhausted bucket.
    pub(crate) fn rate_limited(retry_after: f64, global: bool) -> Self {
        let reset = f64::from(u32::try_from(unix_millis() / 1000).unwrap_or(u32::MAX)) + retry_after;
        let mut headers = vec![
            ("retry-after", format!("{}", retry_after.ceil())),
            ("x-ratelimit-scope", (if global { "global" } else { "user" }).to_owned()),
        ];
        if global {
            headers.push(("x-ratelimit-global", "true".to_owned()));
        } else {
            headers.extend([
                ("x-ratelimit-limit", "5".to_owned()),
                ("x-ratelimit-remaining", "0".to_owned()),
                ("x-ratelimit-reset", format!("{reset:.3}")),
                ("x-ratelimit-reset-after", format!("{retry_after:.3}")),
                ("x-ratelimit-bucket", "80c17d2f203122d936070c88c8d10f33".to_owned()),
            ]);
        }
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            body: json!({
                "message": "You are being rate limited.",
                "retry_after": retry_after,
                "global": global,
            }),
            headers,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    use super::{Route, match_route, user_agent_ok};

    #[test]
    fn paths_are_matched_to_routes_with_their_ids() {
        assert_eq!(
            match_route("POST", "/channels/42/messages"),
            Some((
                "POST /channels/{channel_id}/messages",
                Route::ChannelMessages { channel: 42 }
            ))
        );
        assert_eq!(
            match_route("PATCH", "/webhooks/7/tok/messages/@original"),
            Some((
                "PATCH /webhooks/{application_id}/{interaction_token}/messages/{message_id}",
                Route::WebhookMessage {
                    application: 7,
                    token: "tok".to_owned(),
                    message: None
                }
            ))
        );
        assert_eq!(match_route("PUT", "/channels/42/messages"), None);
        assert_eq!(match_route("GET", "/guilds/1"), None);
    }

    #[test]
    fn a_user_agent_names_the_library_and_its_version() {
        let ok = |agent: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(agent) = agent {
                headers.insert(
                    header::USER_AGENT,
                    HeaderValue::from_str(agent).unwrap_or(HeaderValue::from_static("")),
                );
            }
            user_agent_ok(&headers)
        };
        assert!(ok(Some("DiscordBot (https://github.com/serenity-rs/serenity, 0.12.4)")));
        assert!(ok(Some("DiscordBot (https://example.invalid/askgate, 0.1.0) rust")));
        assert!(!ok(None));
        assert!(!ok(Some("reqwest/0.12")));
        assert!(!ok(Some("DiscordBot")));
        assert!(!ok(Some("DiscordBot (, 1.0)")));
        assert!(!ok(Some("Mozilla/5.0 DiscordBot (https://x, 1)")));
    }
}
