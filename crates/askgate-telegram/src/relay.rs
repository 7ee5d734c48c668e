//! Telegram's answers read within a bound, through a relay on loopback.
//!
//! teloxide reads every answer whole (`Response::text`) with the reqwest
//! client it is given, and reqwest 0.12 has no limit on a body's size nor a
//! hook into a connection's bytes (its connector layers must return its own
//! sealed connection type). So the bot talks to this relay instead, on
//! `127.0.0.1` with a port of its own: each call is forwarded to the Bot
//! API with askgate's own client and its answer read with
//! [`read_capped`]; larger than [`MAX_ANSWER_BYTES`], or a 5xx, or no
//! answer, the relay answers the bot a short text that is not Telegram's
//! JSON, starting with [`FAILED`], which [`crate::error::channel_error`]
//! turns into [`askgate_core::ChannelError::Unavailable`] with its reason
//! (retried as a 5xx is). Teloxide's own reading of Telegram's JSON, its
//! throttling and its types stay as they are.
//!
//! A relay holds nothing secret: the token travels in each call's path,
//! from the bot on this machine to Telegram, as it would without it.

use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::cause::{bounded, with_cause};
use askgate_adapter::read::{MAX_ANSWER_BYTES, ReadError, read_capped};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::task::JoinHandle;

/// How a relay's own answer starts when the call did not get a usable
/// answer from Telegram: never the start of Telegram's JSON.
pub(crate) const FAILED: &str = "askgate relay: ";

/// The largest call the relay forwards (askgate's own: a message is a few KiB).
const MAX_CALL_BYTES: usize = 1024 * 1024;

/// How long the relay waits for Telegram: longer than the bot's own
/// timeout, which is the one that counts (the relay's call is dropped with
/// the bot's).
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(90);

/// A relay to one Bot API server; stops serving when dropped.
#[derive(Debug)]
pub(crate) struct Relay {
    url: reqwest::Url,
    task: JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where calls go, and how.
struct Upstream {
    /// The Bot API's URL without a trailing slash; a call's path and query
    /// are appended to it, so the relay reaches no other host.
    base: String,
    client: reqwest::Client,
}

impl Relay {
    /// A relay to the Bot API at `upstream` on a fresh loopback port. Must
    /// be called inside a tokio runtime.
    pub(crate) fn start(upstream: &reqwest::Url) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let url = reqwest::Url::parse(&format!("http://{}/", listener.local_addr()?)).map_err(io::Error::other)?;
        // What teloxide's default client does, as before the relay: 5 s to
        // connect, the machine's proxy settings.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(UPSTREAM_TIMEOUT)
            .tcp_nodelay(true)
            .build()
            .map_err(io::Error::other)?;
        let upstream = Arc::new(Upstream {
            base: upstream.as_str().trim_end_matches('/').to_owned(),
            client,
        });
        let app = Router::new()
            .fallback(forward)
            .layer(DefaultBodyLimit::max(MAX_CALL_BYTES))
            .with_state(upstream);
        let task = tokio::spawn(async move {
            // Serves until the relay is dropped (the task aborted).
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, task })
    }

    /// The URL to give the bot (`Bot::set_api_url`).
    pub(crate) fn url(&self) -> &reqwest::Url {
        &self.url
    }
}

/// Forwards one call and answers with Telegram's answer, or with a
/// [`FAILED`] text saying why there is none.
async fn forward(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let Ok(body): Result<Bytes, _> = axum::body::to_bytes(body, MAX_CALL_BYTES).await else {
        return failed(StatusCode::OK, "the call was too large to forward");
    };
    let mut call = upstream
        .client
        .request(parts.method, format!("{}{path}", upstream.base))
        .body(body);
    if let Some(content_type) = parts.headers.get(header::CONTENT_TYPE) {
        call = call.header(header::CONTENT_TYPE, content_type);
    }
    let response = match call.send().await {
        Ok(response) => response,
        // No answer: said at once (a 5xx would make teloxide wait 10 s first).
        // The URL holds the token: left out.
        Err(error) => return failed(StatusCode::OK, &with_cause(&error.without_url())),
    };
    let status = response.status();
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    let body = match read_capped(response, MAX_ANSWER_BYTES).await {
        Ok(body) => body,
        Err(ReadError::Failed(error)) => return failed(StatusCode::OK, &with_cause(&error.without_url())),
        Err(too_large) => {
            let status = if status.is_server_error() {
                status
            } else {
                StatusCode::BAD_GATEWAY
            };
            return failed(status, &format!("Telegram (HTTP {}): {too_large}", status.as_u16()));
        }
    };
    if status.is_server_error() {
        // Telegram failing, not refusing: teloxide would read its error
        // JSON as a refusal for good.
        let said = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|json| json["description"].as_str().map(bounded));
        let reason = match said {
            Some(said) => format!("Telegram answered HTTP {}: {said}", status.as_u16()),
            None => format!("Telegram answered HTTP {}", status.as_u16()),
        };
        return failed(status, &reason);
    }
    let mut answer = (status, body).into_response();
    if let Some(content_type) = content_type {
        answer.headers_mut().insert(header::CONTENT_TYPE, content_type);
    }
    answer
}

/// The relay's own answer: [`FAILED`] and why, which is not Telegram's JSON.
fn failed(status: StatusCode, reason: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{FAILED}{}", bounded(reason)),
    )
        .into_response()
}
