//! Slow and idle clients against a real server on port 0 (`conn`): the
//! header-read, body and idle timeouts, long responses that must not be cut,
//! the connection cap, and the shutdown deadline. Timeouts are hundreds of
//! milliseconds, set through [`ConnectionLimits`]; every wait is bounded.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;
use support::{agent_one, state_in, web_recipient};

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use askgate_adapter::webhook::{self, SecretHeader, Unverified, Verifier};
use askgate_server::{ConnectionLimits, ServerSettings};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName};
use axum::response::IntoResponse as _;
use axum::routing::get;
use futures_util::stream;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

const TOKEN: &str = "connections-test-token-0123456789abcdefgh";
const KEY: &str = "connections-test-web-key-0123456789abcdefg";
/// The secret of the `/hook/secret` webhook route (Telegram's kind of proof).
const HOOK_SECRET: &str = "connections-test-hook-secret-0123456789";
/// A question id that is well formed and belongs to no question.
const NO_QUESTION: &str = "01J00000000000000000000000";
/// The longest any single step of these tests may take before it fails.
const BOUND: Duration = Duration::from_secs(5);

/// A server on a loopback port, with routes beside askgate's own:
/// `/test/sleep/{ms}` answers after `ms`, `/test/stream` sends `a`, `b`
/// and `c` with 600 ms of silence between them, and two webhook routes
/// (`askgate_adapter::webhook`): `/hook/secret` proven by a secret header
/// (as Telegram's), `/hook/signed` by a signature over the body (as
/// Discord's and Slack's, whose headers can only be checked for presence
/// before the body is there).
struct Running {
    address: SocketAddr,
    served: JoinHandle<std::io::Result<()>>,
    shutdown: Option<oneshot::Sender<()>>,
    _stop: tokio::sync::watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn start(limits: ConnectionLimits) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        web_keys: vec![askgate_server::WebKey {
            key: KEY.into(),
            recipient: "me".into(),
        }],
        ..ServerSettings::default()
    };
    let (state, stop) = state_in(dir.path(), vec![web_recipient("me", "Me")], settings).await;
    let answered = |_: HeaderMap, _: axum::body::Bytes| async { "taken".into_response() };
    let secret = SecretHeader::new(HeaderName::from_static("x-hook-secret"), &[HOOK_SECRET]);
    let extra = Router::new()
        .merge(webhook::route("test", "/hook/secret", secret, answered))
        .merge(webhook::route("test", "/hook/signed", Signed, answered))
        .route(
            "/test/sleep/{ms}",
            get(|axum::extract::Path(ms): axum::extract::Path<u64>| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                "slept"
            }),
        )
        .route(
            "/test/stream",
            get(|| async {
                let parts = stream::unfold(0, |sent| async move {
                    if sent > 0 {
                        tokio::time::sleep(Duration::from_millis(600)).await;
                    }
                    let part = ["a", "b", "c"].get(sent)?;
                    Some((Ok::<_, std::io::Error>(*part), sent + 1))
                });
                Body::from_stream(parts)
            }),
        );
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let address = listener.local_addr().unwrap();
    let (shutdown, signal) = oneshot::channel::<()>();
    let served = tokio::spawn(askgate_server::serve_with_limits(
        listener,
        state,
        extra,
        limits,
        async move {
            let _ = signal.await;
        },
    ));
    Running {
        address,
        served,
        shutdown: Some(shutdown),
        _stop: stop,
        _dir: dir,
    }
}

/// A webhook verifier like Discord's and Slack's: a signature header over
/// the body (here: the body itself), which only its presence can be checked
/// for before the body is read.
struct Signed;

impl Verifier for Signed {
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), Unverified> {
        headers
            .contains_key("x-signature")
            .then_some(())
            .ok_or(Unverified("the signature header is missing"))
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Unverified> {
        (headers["x-signature"].as_bytes() == body)
            .then_some(())
            .ok_or(Unverified("the signature does not match"))
    }
}

fn limits(header_ms: u64, idle_ms: u64) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_millis(header_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        ..ConnectionLimits::default()
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(BOUND).build().unwrap()
}

async fn connect(address: SocketAddr) -> TcpStream {
    timeout(BOUND, TcpStream::connect(address)).await.unwrap().unwrap()
}

/// Waits until the server closes `stream` (end of file or a reset) and
/// returns how long that took; fails if it stays open `within`, or if the
/// server sends anything.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Duration {
    let started = Instant::now();
    let mut buffer = [0_u8; 1024];
    match timeout(within, stream.read(&mut buffer)).await {
        Ok(Ok(0) | Err(_)) => started.elapsed(),
        Ok(Ok(read)) => panic!(
            "the server sent {:?} instead of closing",
            String::from_utf8_lossy(&buffer[..read])
        ),
        Err(elapsed) => panic!("the connection is still open after {within:?} ({elapsed})"),
    }
}

/// Sends `GET path` on a kept-alive connection and reads the whole response
/// (which must have a Content-Length); returns its status line and body.
async fn get_on(stream: &mut TcpStream, path: &str) -> (String, String) {
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: askgate\r\n\r\n").as_bytes())
        .await
        .unwrap();
    read_response(stream, BOUND).await
}

async fn read_response(stream: &mut TcpStream, within: Duration) -> (String, String) {
    let mut received = Vec::new();
    let mut buffer = [0_u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = &text[..end];
            let length: usize = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .expect("a Content-Length");
            if received.len() >= end + 4 + length {
                let status = head.lines().next().unwrap().to_owned();
                return (status, text[end + 4..end + 4 + length].to_owned());
            }
        }
        let read = tokio::time::timeout_at(deadline, stream.read(&mut buffer))
            .await
            .unwrap_or_else(|_| panic!("no whole response within {within:?}: {text:?}"))
            .unwrap();
        assert!(read > 0, "the connection closed mid-response: {text:?}");
        received.extend_from_slice(&buffer[..read]);
    }
}

#[tokio::test]
async fn a_silent_or_slow_client_is_closed_after_the_header_timeout() {
    let server = start(limits(300, 5000)).await;

    let mut silent = connect(server.address).await;
    let took = closed_within(&mut silent, BOUND).await;
    assert!(took >= Duration::from_millis(250), "closed early: {took:?}");
    assert!(took < Duration::from_millis(1500), "closed late: {took:?}");

    // Half a request's headers, then nothing.
    let mut partial = connect(server.address).await;
    partial.write_all(b"GET /healthz HTTP/1.1\r\nHost: a").await.unwrap();
    let took = closed_within(&mut partial, BOUND).await;
    assert!(took >= Duration::from_millis(250), "closed early: {took:?}");
    assert!(took < Duration::from_millis(1500), "closed late: {took:?}");
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_after_the_idle_timeout_not_the_header_one() {
    // A header timeout shorter than the idle one: idle time between requests
    // must be counted against the idle timeout only.
    let server = start(limits(200, 900)).await;
    let mut kept = connect(server.address).await;
    let (status, body) = get_on(&mut kept, "/healthz").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"status": "ok"}));

    // Idle longer than the header timeout, shorter than the idle one: still served.
    tokio::time::sleep(Duration::from_millis(450)).await;
    let (status, _) = get_on(&mut kept, "/healthz").await;
    assert_eq!(status, "HTTP/1.1 200 OK");

    let took = closed_within(&mut kept, BOUND).await;
    assert!(
        took >= Duration::from_millis(800),
        "closed before the idle timeout: {took:?}"
    );
    assert!(took < Duration::from_millis(2500), "closed late: {took:?}");

    // A request begun on a kept-alive connection gets the header timeout.
    let mut slow = connect(server.address).await;
    get_on(&mut slow, "/healthz").await;
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let took = closed_within(&mut slow, BOUND).await;
    assert!(
        took < Duration::from_millis(800),
        "not closed after the header timeout: {took:?}"
    );
}

#[tokio::test]
async fn long_waits_and_slow_streams_are_not_cut() {
    let server = start(limits(200, 200)).await;
    let base = format!("http://{}", server.address);
    let client = http();

    // A `?wait` that holds longer than both timeouts before it answers.
    let created: Value = client
        .post(format!("{base}/v1/questions"))
        .bearer_auth(TOKEN)
        .json(&json!({
            "to": "me",
            "questions": [{"id": "deploy", "header": "Deploy", "question": "Where?",
                           "options": [{"label": "A"}, {"label": "B"}]}],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    let started = Instant::now();
    let response = client
        .get(format!("{base}/v1/questions/{id}?wait=1"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let resource: Value = response.json().await.unwrap();
    assert_eq!(resource["status"], "pending");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    // A streamed response, silent for longer than both timeouts between parts.
    let text = client
        .get(format!("{base}/test/stream"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(text, "abc");

    // A handler that takes long before its headers, on a raw connection.
    let mut raw = connect(server.address).await;
    let (status, body) = get_on(&mut raw, "/test/sleep/700").await;
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "slept"));
}

#[tokio::test]
async fn past_the_cap_a_connection_waits_until_one_closes() {
    let server = start(ConnectionLimits {
        max_connections: 2,
        ..limits(5000, 5000)
    })
    .await;
    let first = connect(server.address).await;
    let _second = connect(server.address).await;
    // Both slots are taken once the server has accepted them; give it a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;

    // The third connects (the listen backlog takes it) but is not served.
    let mut third = connect(server.address).await;
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: askgate\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0_u8; 64];
    assert!(
        timeout(Duration::from_millis(400), third.read(&mut buffer))
            .await
            .is_err(),
        "a connection past the cap was served"
    );

    // One closes: the waiting one is served.
    let started = Instant::now();
    drop(first);
    let (status, _) = read_response(&mut third, BOUND).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    drop(third);

    let response = http()
        .get(format!("http://{}/healthz", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn shutdown_closes_idle_connections_at_once_and_returns_by_the_deadline() {
    let deadline = Duration::from_millis(600);
    let mut server = start(ConnectionLimits {
        shutdown_deadline: deadline,
        ..limits(10_000, 10_000)
    })
    .await;
    let base = format!("http://{}", server.address);
    let client = http();

    let mut silent = connect(server.address).await;
    let mut partial = connect(server.address).await;
    partial.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let mut kept = connect(server.address).await;
    get_on(&mut kept, "/healthz").await;
    // One request that finishes within the deadline, one that would not.
    let short = tokio::spawn(client.get(format!("{base}/test/sleep/300")).send());
    let long = tokio::spawn(client.get(format!("{base}/test/sleep/30000")).send());
    tokio::time::sleep(Duration::from_millis(100)).await;

    let started = Instant::now();
    server.shutdown.take().unwrap().send(()).unwrap();
    for idle in [&mut silent, &mut partial, &mut kept] {
        let took = closed_within(idle, BOUND).await;
        assert!(
            took < deadline,
            "an idle connection stayed until the deadline: {took:?}"
        );
    }
    let short = timeout(BOUND, short).await.unwrap().unwrap().unwrap();
    assert_eq!(short.status(), 200);
    assert_eq!(short.text().await.unwrap(), "slept");

    timeout(BOUND, &mut server.served).await.unwrap().unwrap().unwrap();
    let took = started.elapsed();
    assert!(
        took >= deadline,
        "returned before the deadline with a request in flight: {took:?}"
    );
    assert!(took < deadline + Duration::from_secs(1), "returned late: {took:?}");
    assert!(
        timeout(BOUND, long).await.unwrap().unwrap().is_err(),
        "the request past the deadline was cut"
    );
    assert!(
        TcpStream::connect(server.address).await.is_err(),
        "the listener is closed"
    );
}

/// A request that declares a 1,000-byte body and sends none of it (the body,
/// if any, is written later by the test).
fn without_body(path: &str, headers: &[(&str, &str)]) -> String {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
    );
    for (name, value) in headers {
        let _ = write!(request, "{name}: {value}\r\n");
    }
    request.push_str("\r\n");
    request
}

/// The MCP client's `Accept`.
const MCP_ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

/// Body-less requests that the route refuses from their path or headers, with
/// the status each gets: never waiting for the body.
fn refused_before_the_body() -> Vec<(&'static str, String, u16)> {
    let answer = format!("/web/not-the-key/api/questions/{NO_QUESTION}/answer");
    let bearer = format!("Bearer {TOKEN}x");
    vec![
        ("a page answer with a wrong key", without_body(&answer, &[]), 404),
        (
            "a page answer with a malformed question id",
            without_body(&format!("/web/{KEY}/api/questions/not.an.id/answer"), &[]),
            404,
        ),
        (
            "a webhook without its secret header",
            without_body("/hook/secret", &[]),
            401,
        ),
        (
            "a webhook with a wrong secret header",
            without_body("/hook/secret", &[("X-Hook-Secret", "wrong")]),
            401,
        ),
        (
            "a webhook without its signature header",
            without_body("/hook/signed", &[]),
            401,
        ),
        ("/v1 without a token", without_body("/v1/questions", &[]), 401),
        (
            "/v1 with a wrong token",
            without_body("/v1/questions", &[("Authorization", &bearer)]),
            401,
        ),
        ("/mcp without a token", without_body("/mcp", &[MCP_ACCEPT]), 401),
    ]
}

/// Body-less requests from callers who pass every check the route can make
/// before the body: they wait for it until the body deadline.
fn waiting_for_the_body() -> Vec<(&'static str, String)> {
    let bearer = format!("Bearer {TOKEN}");
    vec![
        (
            "a page answer",
            without_body(&format!("/web/{KEY}/api/questions/{NO_QUESTION}/answer"), &[]),
        ),
        (
            "a webhook with its secret header",
            without_body("/hook/secret", &[("X-Hook-Secret", HOOK_SECRET)]),
        ),
        (
            "a webhook with a signature header",
            without_body("/hook/signed", &[("X-Signature", "{}")]),
        ),
        (
            "/v1 with the token",
            without_body("/v1/questions", &[("Authorization", &bearer)]),
        ),
        (
            "/mcp with the token",
            without_body("/mcp", &[("Authorization", &bearer), MCP_ACCEPT]),
        ),
    ]
}

/// Reads what the server sends until it closes the connection, within
/// `within`: the status line, and how long it took to close.
async fn answer_then_closed(stream: &mut TcpStream, within: Duration) -> Result<(String, Duration), String> {
    let started = Instant::now();
    let mut received = Vec::new();
    let read = timeout(within, stream.read_to_end(&mut received)).await;
    let text = String::from_utf8_lossy(&received).into_owned();
    match read {
        Ok(Ok(_)) => Ok((text.lines().next().unwrap_or_default().to_owned(), started.elapsed())),
        // A reset after the answer is a close too.
        Ok(Err(_)) if !received.is_empty() => {
            Ok((text.lines().next().unwrap_or_default().to_owned(), started.elapsed()))
        }
        Ok(Err(error)) => Err(format!("the connection failed before an answer: {error}")),
        Err(_) => Err(format!("still open after {within:?}, having sent {text:?}")),
    }
}

/// How long `GET /healthz` takes on a new connection; fails past `within`.
async fn healthz_within(address: SocketAddr, within: Duration) -> Duration {
    let started = Instant::now();
    let mut stream = connect(address).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: askgate\r\n\r\n")
        .await
        .unwrap();
    let (status, _) = read_response(&mut stream, within).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    started.elapsed()
}

#[tokio::test]
async fn a_caller_is_refused_before_its_body_and_a_body_that_never_comes_is_cut_off() {
    let body_timeout = Duration::from_millis(600);
    let server = start(ConnectionLimits {
        body_timeout,
        ..limits(5000, 5000)
    })
    .await;

    // Refused at once, long before the body deadline, and closed with it.
    for (what, request, status) in refused_before_the_body() {
        let mut stream = connect(server.address).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let (line, took) = answer_then_closed(&mut stream, BOUND)
            .await
            .unwrap_or_else(|error| panic!("{what}: {error}"));
        assert!(line.starts_with(&format!("HTTP/1.1 {status} ")), "{what}: {line}");
        assert!(took < Duration::from_millis(300), "{what}: answered after {took:?}");
    }

    // Waited for, then 408 at the deadline and closed.
    for (what, request) in waiting_for_the_body() {
        let mut stream = connect(server.address).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        let started = Instant::now();
        timeout(BOUND, stream.read_to_end(&mut received))
            .await
            .unwrap_or_else(|_| panic!("{what}: still open after {BOUND:?}"))
            .unwrap();
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 408 "), "{what}: {text}");
        assert!(text.contains("connection: close"), "{what}: {text}");
        assert!(text.contains(r#""code":"body_timeout""#), "{what}: {text}");
        assert!(
            took >= body_timeout.saturating_sub(Duration::from_millis(50)),
            "{what}: cut after {took:?}"
        );
        assert!(
            took < body_timeout + Duration::from_secs(1),
            "{what}: cut after {took:?}"
        );
    }

    // A body dripped a byte at a time is cut off at the deadline all the same.
    let (_, request) = &waiting_for_the_body()[0];
    let mut stream = connect(server.address).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut buffer = [0_u8; 1024];
    let answer = loop {
        tokio::select! {
            read = stream.read(&mut buffer) => break String::from_utf8_lossy(&buffer[..read.unwrap()]).into_owned(),
            () = tokio::time::sleep(Duration::from_millis(100)) => {
                assert!(started.elapsed() < BOUND, "the dripping client was never cut off");
                let _ = stream.write_all(b" ").await;
            }
        }
    };
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(started.elapsed() < body_timeout + Duration::from_secs(1));

    // A body that arrives in pieces within the deadline is read whole.
    let mut stream = connect(server.address).await;
    let skip = format!("/web/{KEY}/api/questions/{NO_QUESTION}/skip");
    let head = without_body(&skip, &[]).replace("Content-Length: 1000", "Content-Length: 2");
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(b"{").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(b"}").await.unwrap();
    let (status, body) = read_response(&mut stream, BOUND).await;
    assert_eq!(status, "HTTP/1.1 404 Not Found", "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        "not_found"
    );
}

/// The probe's attack, and more: 5,000 connections each declaring a body it
/// never sends, on the page's answer route, webhook routes, `/v1` and
/// `/mcp`, opened in batches while `/healthz` is asked. Those that fail a
/// check the route makes before the body are answered and closed at once;
/// the rest get 408 and are closed at the body deadline; `/healthz`
/// answers within a second throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_bodyless_requests_neither_starve_healthz_nor_outlive_the_body_deadline() {
    const WANTED: usize = 5000;
    // Opened 100 at a time: larger bursts of connects on loopback saw SYNs
    // dropped and sent again a second later.
    const BATCH: usize = 100;
    let body_timeout = Duration::from_secs(2);
    // Each connection is two descriptors here (the client's and the server's).
    let room = askgate_server::conn::fit_open_files_limit(2 * WANTED + 256);
    let count = WANTED.min(room / 2);
    if count < WANTED {
        println!("the open-files limit leaves room for {count} connections, not {WANTED}");
    }
    // A cap of 3,000: above the requests that pass every check made before
    // the body (under 2,000 of the 5,000), the only ones held until the body
    // deadline; below those held when the page and the webhooks checked
    // their caller after the body (some 3,800), which filled the cap and
    // kept `/healthz` waiting, as the probe saw.
    let server = start(ConnectionLimits {
        body_timeout,
        max_connections: 3000,
        ..ConnectionLimits::default()
    })
    .await;
    let address = server.address;

    let refused = refused_before_the_body();
    let waiting = waiting_for_the_body();
    let kinds = refused.len() + waiting.len();
    let mut readers = tokio::task::JoinSet::new();
    let mut slowest_healthz = Duration::ZERO;
    for batch in (0..count).collect::<Vec<_>>().chunks(BATCH) {
        let opened = futures_util::future::join_all(batch.iter().map(|&index| {
            let (what, request, expected) = match index % kinds {
                kind if kind < refused.len() => {
                    let (what, request, status) = &refused[kind];
                    (*what, request.clone(), *status)
                }
                kind => {
                    let (what, request) = &waiting[kind - refused.len()];
                    (*what, request.clone(), 408)
                }
            };
            async move {
                let mut stream = connect(address).await;
                stream.write_all(request.as_bytes()).await.unwrap();
                (what, expected, stream)
            }
        }))
        .await;
        for (what, expected, mut stream) in opened {
            readers.spawn(async move {
                let outcome = answer_then_closed(&mut stream, body_timeout + BOUND).await;
                (what, expected, outcome)
            });
        }
        slowest_healthz = slowest_healthz.max(healthz_within(address, Duration::from_secs(1)).await);
    }
    slowest_healthz = slowest_healthz.max(healthz_within(address, Duration::from_secs(1)).await);

    let mut problems = Vec::new();
    let (mut slowest_refusal, mut slowest_cut) = (Duration::ZERO, Duration::ZERO);
    while let Some(joined) = readers.join_next().await {
        let (what, expected, outcome) = joined.unwrap();
        match outcome {
            Ok((line, took)) => {
                if !line.starts_with(&format!("HTTP/1.1 {expected} ")) {
                    problems.push(format!("{what}: {line}"));
                } else if expected == 408 {
                    slowest_cut = slowest_cut.max(took);
                    // Counted from when the reader started, a little after
                    // the request was sent: the cut may come a little early.
                    if took > body_timeout + Duration::from_millis(1500) {
                        problems.push(format!("{what}: closed after {took:?}"));
                    }
                } else {
                    slowest_refusal = slowest_refusal.max(took);
                    if took >= body_timeout {
                        problems.push(format!("{what}: refused only after {took:?}"));
                    }
                }
            }
            Err(error) => problems.push(format!("{what}: {error}")),
        }
    }
    println!(
        "{count} body-less requests: /healthz at most {slowest_healthz:?}, refusals at most \
         {slowest_refusal:?}, 408s at most {slowest_cut:?} (body deadline {body_timeout:?})"
    );
    assert!(
        problems.is_empty(),
        "{} of {count} connections went wrong, e.g. {:?}",
        problems.len(),
        &problems[..problems.len().min(10)]
    );
}
