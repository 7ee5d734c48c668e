//! Signed result callbacks against the real binary: a webhook receiver in
//! Python (tests/webhooks/receiver.py) verifies every delivery with the
//! `standardwebhooks` package from the Python Package Index, not askgate's own code, and says
//! whether the same library refuses the delivery forged (a changed body,
//! another secret) and replayed past the specification's tolerance.
//!
//! The scenarios: a receiver that fails twice then succeeds gets the result
//! exactly once more, every attempt under the same `webhook-id`; a receiver
//! down while askgate is killed and restarted still gets it after; a
//! question's own `callbackUrl` goes to its URL, and only on a host the
//! agent's configuration allows.

use crate::support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use support::venv::Venv;
use support::{Server, repo_root, until};

/// The agent whose questions' results are sent to the receiver.
const HOOK_TOKEN: &str = "svc-test-agent-hooked-0123456789abcdefghijk";

/// How long a delivery may take to arrive: a few backoff pauses, or the
/// 30 s lease of an attempt that askgate was killed while sending.
const PATIENCE: Duration = Duration::from_secs(50);

/// The Python of `target/webhooks-venv`, holding the pinned library.
fn python() -> PathBuf {
    Venv::new("webhooks", "webhooks-venv", "tests/webhooks/requirements.txt", (3, 9)).ensure("python")
}

/// A free port on loopback, for a receiver that starts after askgate.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// The configuration that sends agent `hooked`'s results to `port`.
fn hooked_agent(port: u16) -> String {
    format!(
        "\n[agents.hooked]\ntoken = \"{HOOK_TOKEN}\"\nrecipients = [\"*\"]\ncallback_url = \"http://127.0.0.1:{port}/hooks/askgate\"\n"
    )
}

/// The secret askgate generated for agent `hooked`.
fn generated_secret(data_dir: &Path) -> String {
    let secret = std::fs::read_to_string(data_dir.join("webhook-secret-hooked")).expect("askgate keeps the secret");
    let secret = secret.trim().to_owned();
    assert!(secret.starts_with("whsec_"), "a Standard Webhooks secret");
    secret
}

/// The running receiver and the reports it printed.
struct Receiver {
    child: Child,
    reports: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start(port: u16, secret: &str, fail_first: u32) -> Self {
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/webhooks/receiver.py"))
            .args([port.to_string(), secret.to_owned(), fail_first.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the receiver starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let first: Value =
            serde_json::from_str(&lines.next().expect("the receiver's port").expect("a line")).expect("JSON");
        assert_eq!(first["port"], port, "the receiver listens on its port");
        let reports = Arc::new(Mutex::new(Vec::new()));
        let kept = reports.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let report: Value = serde_json::from_str(&line).expect("a JSON report");
                kept.lock().unwrap_or_else(PoisonError::into_inner).push(report);
            }
        });
        Self { child, reports }
    }

    fn reports(&self) -> Vec<Value> {
        self.reports.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    async fn delivered(&self) -> Vec<Value> {
        until("a delivery the receiver answered 204", PATIENCE, || async {
            let reports = self.reports();
            reports.iter().any(|r| r["answered"] == 204).then_some(reports)
        })
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A question for agent `hooked`, with its own `callbackUrl` if given.
fn question(callback_url: Option<&str>) -> Value {
    json!({
        "to": "me",
        "questions": [{"id": "go", "header": "Go", "question": "Go ahead?",
                       "options": [{"label": "Yes"}, {"label": "No"}]}],
        "timeoutSeconds": 600,
        "callbackUrl": callback_url
    })
}

/// Asks a question as agent `hooked` and cancels it: its id.
async fn ask_and_cancel(server: &Server) -> String {
    ask_and_cancel_to(server, None).await
}

/// Asks a question as agent `hooked`, with its own `callbackUrl` if given,
/// and cancels it: its id.
async fn ask_and_cancel_to(server: &Server, callback_url: Option<&str>) -> String {
    let (status, created) = server
        .post_json("/v1/questions", Some(HOOK_TOKEN), &question(callback_url))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["callbacks"], json!([]), "no attempt before it ends: {created}");
    let id = created["id"].as_str().expect("an id").to_owned();
    let (status, cancelled) = server
        .post_empty(&format!("/v1/questions/{id}/cancel"), Some(HOOK_TOKEN))
        .await;
    assert_eq!(status, 200, "{cancelled}");
    id
}

/// Every report is a delivery the library verified, of `id`'s result,
/// which the library refuses forged or replayed.
fn assert_verified(reports: &[Value], id: &str) {
    for report in reports {
        assert_eq!(report["verified"], true, "the library verified it: {report}");
        assert_eq!(
            report["webhookId"],
            format!("msg_{id}"),
            "one webhook-id for every attempt"
        );
        assert_eq!(report["payload"]["type"], "question.ended", "{report}");
        assert_eq!(report["payload"]["data"]["id"], id, "{report}");
        assert_eq!(report["payload"]["data"]["status"], "cancelled", "{report}");
        assert_eq!(report["forgedBodyRefused"], true, "a changed body is refused: {report}");
        assert_eq!(
            report["otherSecretRefused"], true,
            "another secret's signature is refused: {report}"
        );
        assert_eq!(
            report["replayRefused"], true,
            "a replay past the tolerance is refused: {report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_fails_twice_then_succeeds_gets_the_result_exactly_once_more() {
    let port = free_port();
    let server = Server::start_with("", &hooked_agent(port));
    let receiver = Receiver::start(port, &generated_secret(server.data_dir()), 2);
    let id = ask_and_cancel(&server).await;

    let reports = receiver.delivered().await;
    assert_verified(&reports, &id);
    let answered: Vec<&Value> = reports.iter().map(|r| &r["answered"]).collect();
    assert_eq!(answered, [500, 500, 204], "two failures, then the success");
    // Nothing after the success: the next retry would have come within 2 s
    // of the third attempt; four seconds on, still three deliveries.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        receiver.reports().len(),
        3,
        "never sent again after a 2xx: {:?}",
        receiver.reports()
    );
    // Each attempt is in the resource.
    let (status, resource) = server.get(&format!("/v1/questions/{id}"), Some(HOOK_TOKEN)).await;
    assert_eq!(status, 200, "{resource}");
    let callbacks: Vec<(Value, Value, Value)> = resource["callbacks"]
        .as_array()
        .expect("the resource lists its callbacks")
        .iter()
        .map(|c| (c["attempt"].clone(), c["status"].clone(), c["httpStatus"].clone()))
        .collect();
    assert_eq!(
        callbacks,
        [
            (json!(1), json!("failed"), json!(500)),
            (json!(2), json!("failed"), json!(500)),
            (json!(3), json!("delivered"), json!(204)),
        ],
        "{resource}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_across_a_restart_of_askgate_still_gets_the_result_after() {
    let port = free_port();
    let mut server = Server::start_with("", &hooked_agent(port));
    let secret = generated_secret(server.data_dir());
    let id = ask_and_cancel(&server).await;
    // Tried while the receiver is down.
    let deadline = std::time::Instant::now() + PATIENCE;
    while !server.stderr().contains("the callback failed") {
        assert!(
            std::time::Instant::now() < deadline,
            "no failed attempt in askgate's log"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill();
    let receiver = Receiver::start(port, &secret, 0);
    server.restart();
    let reports = receiver.delivered().await;
    assert_verified(&reports, &id);
    assert_eq!(reports.len(), 1, "delivered once, after the restart: {reports:?}");
    assert_eq!(
        generated_secret(server.data_dir()),
        secret,
        "the secret is kept across restarts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_own_callback_url_gets_its_result_and_only_an_allowed_host_is_taken() {
    // The agent's own callback_url names a port nobody listens on: a
    // delivery there would fail; the question's URL is the one used.
    let server = Server::start_with("", &hooked_agent(free_port()));
    let secret = generated_secret(server.data_dir());
    let own = free_port();

    // Another host than the configuration allows (127.0.0.1, callback_url's):
    // refused at callbackUrl, the URL not echoed, nothing asked.
    let elsewhere = format!("http://localhost:{own}/secret-path");
    let (status, refused) = server
        .post_json("/v1/questions", Some(HOOK_TOKEN), &question(Some(&elsewhere)))
        .await;
    assert_eq!(status, 422, "{refused}");
    let problem = &refused["error"];
    assert_eq!(problem["code"], "invalid_callback_url", "{refused}");
    assert_eq!(problem["path"], "callbackUrl", "{refused}");
    assert!(!refused.to_string().contains("secret-path"), "{refused}");

    let receiver = Receiver::start(own, &secret, 0);
    let url = format!("http://127.0.0.1:{own}/own");
    let id = ask_and_cancel_to(&server, Some(&url)).await;
    let reports = receiver.delivered().await;
    assert_verified(&reports, &id);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let (_, resource) = server.get(&format!("/v1/questions/{id}"), Some(HOOK_TOKEN)).await;
    assert_eq!(resource["callbacks"][0]["status"], "delivered", "{resource}");
}
