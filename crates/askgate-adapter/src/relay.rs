//! A platform's answers read within a bound, through a relay on loopback,
//! for platform crates that read every answer whole with an HTTP client of
//! their own (teloxide, matrix-sdk).
//!
//! reqwest has no limit on a body's size nor a hook into a connection's
//! bytes (its connector layers must return its own sealed connection
//! type), and such a crate reads with whatever client it is given. So the
//! crate talks to a [`Relay`] instead, on `127.0.0.1` with a port of its
//! own: each call is forwarded to the platform's one base URL with
//! askgate's own client and its answer read with [`read_capped`], within
//! the bound the platform's [`Relayed::limit`] names for that call. When
//! there is no usable answer (none, or one too large), the relay answers
//! what the platform crate reads as a passing failure
//! ([`Relayed::failed`]); a platform may also say how its server errors
//! are passed on ([`Relayed::answered`]). The platform crate's own reading
//! of the platform's JSON, its retries and its types stay as they are.
//!
//! A relay holds nothing secret: credentials travel in each call (its path
//! or the headers [`Relayed::HEADERS`] names), from the platform crate on
//! this machine to the platform, as they would without it; the relay logs
//! none of it, and reaches no other host than the platform's.

use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::task::JoinHandle;

use crate::cause::with_cause;
use crate::read::{ReadError, read_capped};

/// The largest call a relay forwards (askgate's own: a message is a few KiB).
const MAX_CALL_BYTES: usize = 1024 * 1024;

/// What a platform's relay needs to know of it.
pub trait Relayed: Send + Sync + 'static {
    /// The request headers forwarded besides `Content-Type` (for a bearer
    /// token, `Authorization`).
    const HEADERS: &'static [HeaderName];

    /// How long the relay waits for the platform's answer: longer than the
    /// platform crate's own timeout, which is the one that counts (the
    /// relay's call is dropped with the crate's).
    const TIMEOUT: Duration;

    /// The most the relay reads of the answer to a call of `path` (its path
    /// and query).
    fn limit(&self, path: &str) -> usize;

    /// The relay's own answer when a call got no usable answer, which the
    /// platform crate reads as a passing failure.
    fn failed(&self, failure: Failure) -> Response;

    /// The answer to pass on, from the platform's `status`, `content_type`
    /// and `body` (read within the limit): as they came, unless the
    /// platform crate would misread them.
    fn answered(&self, status: StatusCode, content_type: Option<HeaderValue>, body: Vec<u8>) -> Response {
        pass_on(status, content_type, body)
    }
}

/// The platform's answer, as it came.
pub fn pass_on(status: StatusCode, content_type: Option<HeaderValue>, body: Vec<u8>) -> Response {
    let mut answer = (status, body).into_response();
    if let Some(content_type) = content_type {
        answer.headers_mut().insert(header::CONTENT_TYPE, content_type);
    }
    answer
}

/// Why a call got no usable answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Failure {
    /// The call was larger than the relay forwards.
    CallTooLarge,
    /// The platform could not be reached, or its answer broke off: said in
    /// a few words, without the URL (it may hold a token).
    NoAnswer(String),
    /// The platform answered with `status` and a body larger than the
    /// limit, which the relay did not read.
    TooLarge {
        /// The platform's status.
        status: StatusCode,
        /// The limit, said for a person ("larger than 2 MiB").
        reason: String,
    },
}

/// A relay to one platform; stops serving when dropped.
#[derive(Debug)]
pub struct Relay {
    url: reqwest::Url,
    task: JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where calls go, and how.
struct Upstream<P> {
    /// The platform's URL without a trailing slash; a call's path and query
    /// are appended to it, so the relay reaches no other host.
    base: String,
    client: reqwest::Client,
    platform: P,
}

impl Relay {
    /// A relay to `platform` at `upstream` on a fresh loopback port. Must be
    /// called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// When no loopback port can be had, or no HTTP client built.
    pub fn start<P: Relayed>(upstream: &reqwest::Url, platform: P) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let url = reqwest::Url::parse(&format!("http://{}/", listener.local_addr()?)).map_err(io::Error::other)?;
        // What the platform crates' default clients do: 5 s to connect, the
        // machine's proxy settings.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(P::TIMEOUT)
            .tcp_nodelay(true)
            .build()
            .map_err(io::Error::other)?;
        let upstream = Arc::new(Upstream {
            base: upstream.as_str().trim_end_matches('/').to_owned(),
            client,
            platform,
        });
        let app = Router::new()
            .fallback(forward::<P>)
            .layer(DefaultBodyLimit::max(MAX_CALL_BYTES))
            .with_state(upstream);
        let task = tokio::spawn(async move {
            // Serves until the relay is dropped (the task aborted).
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, task })
    }

    /// The URL to give the platform crate instead of the platform's.
    pub fn url(&self) -> &reqwest::Url {
        &self.url
    }
}

/// Forwards one call and answers with the platform's answer, or with the
/// platform's word for a failure.
async fn forward<P: Relayed>(State(upstream): State<Arc<Upstream<P>>>, request: Request) -> Response {
    let platform = &upstream.platform;
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let Ok(body): Result<Bytes, _> = axum::body::to_bytes(body, MAX_CALL_BYTES).await else {
        return platform.failed(Failure::CallTooLarge);
    };
    let mut call = upstream
        .client
        .request(parts.method, format!("{}{path}", upstream.base))
        .body(body);
    for name in std::iter::once(&header::CONTENT_TYPE).chain(P::HEADERS) {
        if let Some(value) = parts.headers.get(name) {
            call = call.header(name, value);
        }
    }
    let response = match call.send().await {
        Ok(response) => response,
        // The URL may hold a token: left out.
        Err(error) => return platform.failed(Failure::NoAnswer(with_cause(&error.without_url()))),
    };
    let status = response.status();
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    match read_capped(response, platform.limit(path)).await {
        Ok(body) => platform.answered(status, content_type, body),
        Err(ReadError::Failed(error)) => platform.failed(Failure::NoAnswer(with_cause(&error.without_url()))),
        Err(too_large) => platform.failed(Failure::TooLarge {
            status,
            reason: too_large.to_string(),
        }),
    }
}
