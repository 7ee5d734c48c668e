//! Accepting and running connections: the accept loop, the connection cap,
//! the header-read, body and idle keep-alive timeouts, and the shutdown
//! deadline.
//!
//! This replaces `axum::serve`, which has none of them: a client that
//! opened a connection and sent nothing held it (and a file descriptor)
//! forever, and kept the process alive after the shutdown signal.
//!
//! - **Cap.** A connection is accepted only when one of
//!   [`ConnectionLimits::max_connections`] slots is free; past the cap new
//!   connections wait, unaccepted, in the listen backlog until one closes.
//!   Accept errors (`EMFILE` and the like) are logged and backed off, never
//!   fatal and never a busy loop.
//! - **Timeouts.** A connection waiting for a request's headers is closed
//!   after [`ConnectionLimits::header_read_timeout`] (counted from the
//!   accept, or from the first byte of a request on a kept-alive
//!   connection); a kept-alive connection with no request in flight is closed
//!   after [`ConnectionLimits::idle_timeout`]. Neither applies while a
//!   request is in flight (from its headers to the last byte of its
//!   response): `POST /v1/ask`, `?wait=N` and server-sent events may take as
//!   long as they need.
//! - **Body deadline.** A request's body must have arrived
//!   [`ConnectionLimits::body_timeout`] after its headers: a route still
//!   waiting for it then gets an error from the body, and the client gets
//!   `408 body_timeout` and the connection is closed. A client that declares
//!   a body and never sends it (`Content-Length: 1000`, then nothing) holds a
//!   connection that long at most, and only on a route that reads the body:
//!   routes check the caller (a page's key, a bearer token, a webhook's
//!   secret header) before they read it, and a refused request's unread body
//!   closes its connection with the answer.
//! - **Shutdown.** Once the shutdown future completes, nothing more is
//!   accepted, connections without a request in flight close at once,
//!   in-flight requests may finish, and after
//!   [`ConnectionLimits::shutdown_deadline`] every remaining connection is
//!   dropped and [`serve`] returns.
//!
//! Connections speak HTTP/1.1 (what agents, browsers, the chat platforms and
//! reverse proxies send askgate).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, Request, Response, header};
use axum::response::IntoResponse as _;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt as _;

/// How connections are accepted, timed out and shut down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection may take to send a request's headers: from the
    /// accept for its first request, from the request's first byte after that.
    pub header_read_timeout: Duration,
    /// How long a kept-alive connection may wait, with no request in flight,
    /// for its next request.
    pub idle_timeout: Duration,
    /// How long a request's body may take to arrive, counted from its
    /// headers; a request still sending it then gets 408 and its connection
    /// is closed.
    pub body_timeout: Duration,
    /// How many connections are served at once; more wait to be accepted
    /// until one closes. At least 1.
    pub max_connections: usize,
    /// How long in-flight requests get to finish after the shutdown signal;
    /// then every remaining connection is dropped.
    pub shutdown_deadline: Duration,
}

impl Default for ConnectionLimits {
    /// 10 s for headers, 10 s for a body (askgate's bodies are at most
    /// 64 KiB, a webhook's 1 MiB), 60 s idle, 4,096 connections (room for
    /// 1,000 agents waiting on answers, their pollers and the people's
    /// pages), 10 s to shut down.
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(10),
            max_connections: 4096,
            shutdown_deadline: Duration::from_secs(10),
        }
    }
}

/// File descriptors kept free beside the connections' sockets: the store,
/// the channels' outbound HTTP clients, the listener, logs.
const RESERVED_DESCRIPTORS: u64 = 256;
/// The first pause after an accept error; it doubles up to the longest.
const ACCEPT_PAUSE_FIRST: Duration = Duration::from_millis(10);
const ACCEPT_PAUSE_LONGEST: Duration = Duration::from_secs(1);
/// How often reaching the cap is logged at most.
const CAP_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Makes room for `max_connections` sockets: raises the process's soft limit
/// on open files (`RLIMIT_NOFILE`) to its hard limit when the cap needs more
/// than the soft limit allows, and returns the cap that fits, which is lower
/// than asked (with a warning) only when even the hard limit is too low.
///
/// Call it once at start, before serving; it changes a process-wide limit,
/// which is why [`serve`] does not do it by itself.
pub fn fit_open_files_limit(max_connections: usize) -> usize {
    let max_connections = max_connections.max(1);
    let wanted = u64::try_from(max_connections)
        .unwrap_or(u64::MAX)
        .saturating_add(RESERVED_DESCRIPTORS);
    let Some(limit) = open_files_limit(wanted) else {
        return max_connections;
    };
    if limit >= wanted {
        return max_connections;
    }
    let fits = limit.saturating_sub(RESERVED_DESCRIPTORS).max(limit / 2).max(1);
    let fits = usize::try_from(fits).unwrap_or(max_connections).min(max_connections);
    tracing::warn!(
        open_files = limit,
        asked = max_connections,
        cap = fits,
        "the open-files limit is too low for the connection cap; serving fewer connections at once"
    );
    fits
}

/// The open-files limit after raising it toward `wanted` (`None`: unlimited
/// or unknown).
#[cfg(unix)]
fn open_files_limit(wanted: u64) -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let current = current?;
    if current >= wanted {
        return Some(current);
    }
    // The hard limit, or what is wanted when the hard limit is "unlimited"
    // (Linux refuses an unlimited soft limit for open files).
    let raised = maximum.unwrap_or(wanted);
    if raised <= current {
        return Some(current);
    }
    match setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(raised),
            maximum,
        },
    ) {
        Ok(()) => {
            tracing::info!(from = current, to = raised, "raised the open-files limit");
            Some(raised)
        }
        Err(error) => {
            tracing::warn!(%error, "could not raise the open-files limit");
            Some(current)
        }
    }
}

#[cfg(not(unix))]
fn open_files_limit(_wanted: u64) -> Option<u64> {
    None
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes,
/// then shuts down as the module describes. Accept errors are logged, not
/// returned; the `Result` is kept for the callers of `axum::serve`'s shape.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    // A watch rather than hyper-util's `GracefulShutdown`, which has no
    // deadline and, like hyper's own graceful shutdown, waits for a
    // connection that has sent half a request's headers: each connection's
    // task closes such connections itself (`Activity::deadline`).
    let (closing, closing_seen) = watch::channel(false);
    // Every connection's task is owned here: finished ones are reaped as new
    // connections come, and the rest are aborted at the shutdown deadline.
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    let mut accepting = Accepting {
        pause: ACCEPT_PAUSE_FIRST,
        cap_logged: None,
    };
    loop {
        let (stream, peer, slot) = tokio::select! {
            () = &mut shutdown => break,
            accepted = accepting.next(&listener, &slots) => accepted,
        };
        while connections.try_join_next().is_some() {}
        let connection = Connection {
            router: router.clone(),
            limits: limits.clone(),
            activity: Arc::new(Activity::new()),
        };
        connections.spawn(connection.run(stream, peer, closing_seen.clone(), slot));
    }

    drop(listener);
    closing.send_replace(true);
    let open = connections.len();
    if open > 0 {
        tracing::info!(
            connections = open,
            "shutting down: closing idle connections, finishing requests"
        );
    }
    let deadline = tokio::time::sleep(limits.shutdown_deadline);
    let mut deadline = pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => {
                tracing::warn!(
                    connections = connections.len(),
                    "the shutdown deadline passed; dropping the remaining connections"
                );
                connections.shutdown().await;
                break;
            }
            next = connections.join_next() => if next.is_none() { break },
        }
    }
    Ok(())
}

/// The accept loop's memory between connections.
struct Accepting {
    /// The pause after the next accept error.
    pause: Duration,
    /// When reaching the cap was last logged: at most once a minute, as
    /// slots free and fill again all the time while it lasts.
    cap_logged: Option<Instant>,
}

impl Accepting {
    /// The next connection, with the slot it holds: waits for a free slot, then
    /// accepts. Accept errors about one connection are skipped; others (out of
    /// file descriptors, out of memory) are logged and paused on, longer each
    /// time, so that the loop neither dies nor spins.
    async fn next(
        &mut self,
        listener: &TcpListener,
        slots: &Arc<Semaphore>,
    ) -> (TcpStream, SocketAddr, OwnedSemaphorePermit) {
        loop {
            if slots.available_permits() == 0
                && self
                    .cap_logged
                    .is_none_or(|logged| logged.elapsed() >= CAP_LOG_INTERVAL)
            {
                tracing::warn!("the connection cap is reached; new connections wait until one closes");
                self.cap_logged = Some(Instant::now());
            }
            let Ok(slot) = Arc::clone(slots).acquire_owned().await else {
                // The semaphore is never closed; should it be, nothing more can be served.
                return std::future::pending().await;
            };
            match listener.accept().await {
                Ok((stream, peer)) => {
                    self.pause = ACCEPT_PAUSE_FIRST;
                    return (stream, peer, slot);
                }
                Err(error) if is_connection_error(&error) => {
                    tracing::debug!(%error, "a connection failed while being accepted");
                }
                Err(error) => {
                    tracing::warn!(%error, pause = ?self.pause, "accepting connections failed; pausing");
                    drop(slot);
                    tokio::time::sleep(self.pause).await;
                    self.pause = (self.pause * 2).min(ACCEPT_PAUSE_LONGEST);
                }
            }
        }
    }
}

/// Errors that concern the one connection being accepted, not the listener.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// One connection: the router it serves, its limits and what it is doing.
struct Connection {
    router: Router,
    limits: ConnectionLimits,
    activity: Arc<Activity>,
}

impl Connection {
    /// Serves the connection until it ends, times out, or is closed by the
    /// shutdown; `_slot` is its place under the cap, freed when this ends.
    async fn run(
        self,
        stream: TcpStream,
        peer: SocketAddr,
        mut closing: watch::Receiver<bool>,
        _slot: OwnedSemaphorePermit,
    ) {
        let io = TokioIo::new(Watched {
            stream,
            activity: Arc::clone(&self.activity),
        });
        let service = ConnectionService {
            router: self.router.clone(),
            activity: Arc::clone(&self.activity),
            body_timeout: self.limits.body_timeout,
            peer,
        };
        // hyper's own header_read_timeout is off: in hyper 1.12 its timer
        // also starts the moment a kept-alive connection goes idle, so it
        // would close idle connections after the header timeout and could not
        // give the idle timeout its own (longer) value (the test
        // `a_kept_alive_connection_is_closed_after_the_idle_timeout_not_the_header_one`
        // fails with it). `Activity` times both.
        let mut builder = http1::Builder::new();
        builder.header_read_timeout(None);
        let connection = builder.serve_connection(io, service);
        let mut connection = pin!(connection);
        let mut shutting_down = false;
        loop {
            let deadline = self.activity.deadline(&self.limits, shutting_down);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, %peer, "a connection ended with an error");
                    }
                    return;
                }
                () = self.activity.changed.notified() => {}
                () = sleep_until(deadline) => {
                    // Check again: what the connection did may have moved the deadline.
                    if self.activity.deadline(&self.limits, shutting_down).is_some_and(|at| at <= Instant::now()) {
                        tracing::debug!(%peer, why = self.activity.waiting_for(), "closing a connection that sent no request in time");
                        return;
                    }
                }
                _ = closing.wait_for(|closing| *closing), if !shutting_down => {
                    shutting_down = true;
                    // Closes the connection now if it is idle, else after the
                    // response in flight.
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// What a connection is doing, shared by its socket (bytes read), its
/// requests (in flight or done) and its task (which times it out).
struct Activity {
    phase: Mutex<Phase>,
    /// Told whenever the phase changes, so that the task re-reads the deadline.
    changed: Notify,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in flight: waiting for the next one's headers.
    Waiting {
        /// Since when.
        since: Instant,
        /// Whether a request was served before (the connection was kept alive).
        kept_alive: bool,
        /// When the first byte of the next request arrived, if it has.
        request_started: Option<Instant>,
    },
    /// Requests in flight, from their headers to the end of their responses.
    Busy { requests: usize },
}

impl Activity {
    fn new() -> Self {
        Self {
            phase: Mutex::new(Phase::Waiting {
                since: Instant::now(),
                kept_alive: false,
                request_started: None,
            }),
            changed: Notify::new(),
        }
    }

    fn update(&self, change: impl FnOnce(&mut Phase) -> bool) {
        let changed = change(&mut self.phase.lock().unwrap_or_else(PoisonError::into_inner));
        if changed {
            self.changed.notify_one();
        }
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived from the client.
    fn read(&self) {
        self.update(|phase| match phase {
            Phase::Waiting {
                request_started: started @ None,
                ..
            } => {
                *started = Some(Instant::now());
                true
            }
            _ => false,
        });
    }

    /// A request's headers were read: it is in flight until the returned
    /// guard (carried by its response body) is dropped.
    fn begin(self: &Arc<Self>) -> InFlight {
        self.update(|phase| {
            *phase = match *phase {
                Phase::Waiting { .. } => Phase::Busy { requests: 1 },
                Phase::Busy { requests } => Phase::Busy { requests: requests + 1 },
            };
            true
        });
        InFlight(Arc::clone(self))
    }

    fn end(&self) {
        self.update(|phase| {
            if let Phase::Busy { requests } = *phase {
                *phase = if requests > 1 {
                    Phase::Busy { requests: requests - 1 }
                } else {
                    Phase::Waiting {
                        since: Instant::now(),
                        kept_alive: true,
                        request_started: None,
                    }
                };
            }
            true
        });
    }

    /// When the connection is to be closed, if nothing happens before.
    fn deadline(&self, limits: &ConnectionLimits, shutting_down: bool) -> Option<Instant> {
        match self.phase() {
            Phase::Busy { .. } => None,
            // A request begun, its headers not complete: hyper's graceful
            // shutdown would wait for them, so the connection is closed here.
            Phase::Waiting {
                request_started: Some(_),
                ..
            } if shutting_down => Some(Instant::now()),
            // The first request's headers are due from the accept.
            Phase::Waiting {
                since,
                kept_alive: false,
                ..
            } => Some(since + limits.header_read_timeout),
            Phase::Waiting {
                request_started: Some(started),
                ..
            } => Some(started + limits.header_read_timeout),
            Phase::Waiting { since, .. } => Some(since + limits.idle_timeout),
        }
    }

    /// Which timeout a waiting connection is under, for the log.
    fn waiting_for(&self) -> &'static str {
        match self.phase() {
            Phase::Waiting {
                kept_alive: true,
                request_started: None,
                ..
            } => "idle",
            _ => "headers",
        }
    }
}

/// A request in flight; dropped with its response body (sent to the end, or
/// abandoned when the connection goes).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The router as a hyper service that marks each request in flight and
/// holds its body to the body deadline.
#[derive(Clone)]
struct ConnectionService {
    router: Router,
    activity: Arc<Activity>,
    body_timeout: Duration,
    peer: SocketAddr,
}

impl hyper::service::Service<Request<Incoming>> for ConnectionService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        let router = self.router.clone();
        let timed_out = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + self.body_timeout;
        let (body_timeout, peer) = (self.body_timeout, self.peer);
        let request = request.map(|body| {
            Body::new(DeadlineBody {
                body,
                deadline,
                timer: None,
                timed_out: Arc::clone(&timed_out),
            })
        });
        Box::pin(async move {
            let mut response = router.oneshot(request).await?;
            if timed_out.load(Ordering::Acquire) {
                // Whatever the route made of its body's error, the client is
                // told the one thing that happened, and the connection, whose
                // read side is mid-body, is closed.
                tracing::debug!(%peer, "a request's body did not arrive in time; answered 408");
                response = body_timed_out(body_timeout);
            }
            Ok(response.map(|body| TrackedBody {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// `408 body_timeout`, closing the connection.
fn body_timed_out(body_timeout: Duration) -> Response<Body> {
    let seconds = body_timeout.as_secs_f64();
    let mut response = crate::ApiError::new(
        axum::http::StatusCode::REQUEST_TIMEOUT,
        "body_timeout",
        format!(
            "The request's body did not arrive within {seconds} s of its headers \
             (server.body_timeout_seconds); send the whole body at once."
        ),
    )
    .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Why a request's body ended in an error: the body deadline passed while
/// the client was still sending it.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive before the body deadline")]
struct BodyTimedOut;

/// A request's body that fails with [`BodyTimedOut`] once `deadline` has
/// passed while the client is still sending it; what has arrived is always
/// passed on, however late it is read.
// Written by hand: tower-http's `TimeoutBody` times each frame on its own,
// so a client sending a byte every few seconds would never be cut off.
struct DeadlineBody {
    body: Incoming,
    deadline: Instant,
    /// Started the first time the body has nothing to give: most bodies
    /// arrive with their headers and never need one.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Set when the deadline cut the body off (read by [`ConnectionService`]).
    timed_out: Arc<AtomicBool>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(context) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(context) {
            Poll::Ready(()) => {
                this.timed_out.store(true, Ordering::Release);
                Poll::Ready(Some(Err(Box::new(BodyTimedOut))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its request in flight until it is dropped.
// Written by hand: neither http-body-util nor tower-http has a body that runs
// something when it is dropped, and the size hint must pass through (hyper
// sets Content-Length from it).
struct TrackedBody {
    body: Body,
    _in_flight: InFlight,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The socket, telling [`Activity`] when bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(context, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && buffer.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, context: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(context, bytes)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }
}
