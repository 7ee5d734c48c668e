//! Slow and idle clients against a real server on port 0 (`conn`): the
//! header-read and idle timeouts, long responses that must not be cut, the
//! connection cap, and the shutdown deadline. Timeouts are hundreds of
//! milliseconds, set through [`ConnectionLimits`]; every wait is bounded.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

mod support;
use support::{agent_one, state_in, web_recipient};

use std::net::SocketAddr;
use std::time::Duration;

use askgate_server::{ConnectionLimits, ServerSettings};
use axum::Router;
use axum::body::Body;
use axum::routing::get;
use futures_util::stream;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

const TOKEN: &str = "connections-test-token-0123456789abcdefgh";
/// The longest any single step of these tests may take before it fails.
const BOUND: Duration = Duration::from_secs(5);

/// A server on a loopback port, with two routes beside askgate's own:
/// `/test/sleep/{ms}` answers after `ms`, and `/test/stream` sends `a`, `b`
/// and `c` with 600 ms of silence between them.
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
        ..ServerSettings::default()
    };
    let (state, stop) = state_in(dir.path(), vec![web_recipient("me", "Me")], settings).await;
    let extra = Router::new()
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
