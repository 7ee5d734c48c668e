//! Slow and idle clients against the real `askgate serve` (`tests/e2e/support`):
//! hundreds of silent connections must not stop it answering, SIGTERM
//! must end it within the shutdown deadline however many clients stay silent,
//! and a body declared and never sent is refused at once without the page's
//! key, and cut off at `[server] body_timeout_seconds` with it.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{AGENT_TOKEN, ME_KEY, Server};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// The probe's figure: 300 silent connections once exhausted askgate's file
/// descriptors.
const SILENT: usize = 300;
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(3);
/// What the process may take beyond the deadline to exit (the store, the timers).
const EXIT_MARGIN: Duration = Duration::from_secs(3);

#[tokio::test]
async fn silent_clients_neither_starve_healthz_nor_hold_up_shutdown() {
    let mut server = Server::start_with(
        &format!("shutdown_deadline_seconds = {}\n", SHUTDOWN_DEADLINE.as_secs()),
        "",
    );
    let address = server.base().trim_start_matches("http://").to_owned();

    // Silent connections, every third one with half a request's headers
    // (a slowloris). The default header timeout (10 s) keeps them open
    // for the whole of this test.
    let mut silent = Vec::with_capacity(SILENT);
    for index in 0..SILENT {
        let mut stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&address))
            .await
            .expect("connecting does not hang")
            .expect("askgate accepts the connection");
        if index % 3 == 0 {
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: askgate\r\n")
                .await
                .expect("half a request is sent");
        }
        silent.push(stream);
    }

    let started = Instant::now();
    let (status, body) = server.get("/healthz", None).await;
    let to_healthz = started.elapsed();
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    assert!(
        to_healthz < Duration::from_secs(2),
        "/healthz took {to_healthz:?} beside {SILENT} silent connections"
    );

    // Long requests in flight: they end at once on shutdown ("pending"), and
    // must not hold it up.
    let mut asked = server
        .ask_waiting(&json!({
            "to": "me",
            "questions": [{"id": "deploy", "header": "Deploy", "question": "Where?",
                           "options": [{"label": "A"}, {"label": "B"}]}],
        }))
        .await;
    let waiting = {
        let request = server
            .http()
            .get(server.url(&format!("/v1/questions/{}?wait=60", asked.id)))
            .bearer_auth(AGENT_TOKEN);
        tokio::spawn(request.send())
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let exit = server.terminate(SHUTDOWN_DEADLINE + EXIT_MARGIN).await;
    let to_exit = started.elapsed();
    assert!(exit.success(), "askgate exited with {exit}");
    assert_eq!(asked.result(Duration::from_secs(5)).await["status"], "pending");
    let waited = waiting
        .await
        .expect("the waiting task does not panic")
        .expect("the wait is answered");
    assert_eq!(waited.status(), 200);

    // Every silent connection was closed by askgate (end of file or a reset).
    let mut closed = 0;
    for stream in &mut silent {
        let mut buffer = [0_u8; 256];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buffer)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, SILENT, "connections left open after askgate exited");

    println!(
        "{SILENT} silent connections: /healthz answered in {to_healthz:?}; \
         SIGTERM to exit {to_exit:?} (deadline {SHUTDOWN_DEADLINE:?})"
    );
}

/// `server.body_timeout_seconds` as the configuration sets it: a page answer
/// that declares a body and never sends it is answered `404` at once with a
/// wrong key, and `408 body_timeout` at the deadline with the right one; each
/// connection is closed with its answer.
#[tokio::test]
async fn a_body_never_sent_is_refused_at_once_without_the_key_and_cut_off_with_it() {
    let server = Server::start_with("body_timeout_seconds = 1\n", "");
    let address = server.base().trim_start_matches("http://").to_owned();
    let question = "01J00000000000000000000000";
    for (key, status, at_least, at_most) in [
        ("not-the-key", "404", Duration::ZERO, Duration::from_millis(500)),
        (ME_KEY, "408", Duration::from_millis(900), Duration::from_millis(2500)),
    ] {
        let mut stream = TcpStream::connect(&address).await.expect("askgate accepts");
        let request = format!(
            "POST /web/{key}/api/questions/{question}/answer HTTP/1.1\r\nHost: askgate\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .expect("the headers are sent");
        let started = Instant::now();
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
            .await
            .expect("the connection is closed")
            .expect("the answer is read");
        let took = started.elapsed();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{answer}");
        assert!((at_least..at_most).contains(&took), "{status} after {took:?}");
        println!("a body never sent, {status}: answered and closed after {took:?}");
    }
}
