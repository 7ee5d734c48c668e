//! Operating askgate, end to end on the real binary (`tests/e2e/support`): its
//! logs (`[log] format` and `level`, `RUST_LOG` over them, one event per
//! line), what it prints of the secrets it generates (where they are, never
//! them), rotating agent tokens and page keys with `SIGHUP` while an agent
//! waits, and `askgate health` for a container's health check.
//!
//! Every harness server also checks, when it stops, that no secret it
//! knows reached its stdout or stderr (`Server::assert_no_secret_in`).

use crate::support;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::{AGENT_TOKEN, ASKGATE, ME_KEY, POLL_TIMEOUT, Reply, Server, deploy_question, until};

/// A second token for agent `one`, and a second page key for `me`.
const NEW_TOKEN: &str = "svc-test-agent-one-rotated-0123456789abcdefgh";
const NEW_KEY: &str = "svc-test-web-key-me-rotated-0123456789abcdefgh";

/// The lines of `log` that are not blank.
fn lines(log: &str) -> Vec<&str> {
    log.lines().filter(|line| !line.trim().is_empty()).collect()
}

#[tokio::test]
async fn json_logs_are_one_object_per_line_with_the_question_and_channel_as_fields() {
    let mut server = Server::start_with("", "[log]\nformat = \"json\"\n");
    let resource = server.create(&deploy_question()).await;
    let id = resource["id"].as_str().expect("an id").to_owned();
    let (status, _) = server.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!(status, 200);
    server.question_with_status(&id, "answered", POLL_TIMEOUT).await;

    // Both events are logged by the time the question reads as answered;
    // the log is read again until the second has reached the pipe.
    let events: Vec<Value> = until("the \"question ended\" event in the log", POLL_TIMEOUT, || {
        let log = server.stderr();
        async move {
            let events: Vec<Value> = lines(&log)
                .into_iter()
                .map(|line| {
                    serde_json::from_str::<Value>(line)
                        .unwrap_or_else(|error| panic!("a log line is not JSON ({error}): {line}\nthe log:\n{log}"))
                })
                .collect();
            events
                .iter()
                .any(|event| event["message"] == "question ended")
                .then_some(events)
        }
    })
    .await;
    for event in &events {
        assert!(event.is_object(), "{event}");
        assert!(event["timestamp"].is_string() && event["level"].is_string(), "{event}");
    }
    for message in ["question accepted", "question ended"] {
        let event = events
            .iter()
            .find(|event| event["message"] == message)
            .unwrap_or_else(|| panic!("no \"{message}\" event in {events:?}"));
        // At the top level, where a log pipeline filters on them.
        assert_eq!(event["question"], id.as_str(), "{event}");
        assert_eq!(event["channel"], "web", "{event}");
        assert_eq!(event["level"], "INFO", "{event}");
    }
}

#[tokio::test]
async fn the_configured_level_filters_and_rust_log_wins_over_it() {
    let quiet = "[log]\nlevel = \"warn\"\n";
    let mut configured = Server::start_with_log("", quiet, None);
    configured.create(&deploy_question()).await;
    let mut overridden = Server::start_with_log("", quiet, Some("info"));
    overridden.create(&deploy_question()).await;
    let accepted = |log: &str| log.lines().any(|line| line.contains("question accepted"));
    until("an INFO event under RUST_LOG=info", POLL_TIMEOUT, || {
        let log = overridden.stderr();
        async move { accepted(&log).then_some(()) }
    })
    .await;
    let log = configured.stderr();
    assert!(!accepted(&log), "level = \"warn\" logged an INFO event:\n{log}");
    assert!(!log.contains(" INFO "), "level = \"warn\" logged INFO events:\n{log}");
}

#[tokio::test]
async fn a_generated_token_and_page_key_are_announced_by_where_they_are_never_by_value() {
    let mut server = Server::start_with("", "[agents.generated]\nrecipients = [\"me\"]\n");
    let token_file = server.data_dir().join("agent-token-generated");
    let token = std::fs::read_to_string(&token_file).expect("the generated token is kept in a file");
    let token = token.trim();
    assert!(token.starts_with("agt_") && token.len() > 40, "{token}");
    // The token works: the file is where an admin reads it from.
    let (status, _) = server.post_json("/v1/questions", Some(token), &deploy_question()).await;
    assert_eq!(status, 201);

    let said = server.stdout();
    let line = said
        .lines()
        .find(|line| line.starts_with("agent token for \"generated\""))
        .unwrap_or_else(|| panic!("no line about the generated token in:\n{said}"));
    assert_eq!(
        line,
        format!("agent token for \"generated\" (created): in {}", token_file.display())
    );
    // Not a terminal: the page link names where its key is, not the key.
    let page = said
        .lines()
        .find(|line| line.starts_with("web page for \"me\""))
        .unwrap_or_else(|| panic!("no line about the page in:\n{said}"));
    assert!(page.ends_with("/web/<the key in the configuration>"), "{page}");
    // And the token is in neither stream (checked again when it stops).
    assert!(!said.contains(token) && !server.stderr().contains(token));
}

/// What `GET /v1/questions/{id}` answers with `token`.
async fn status_with(server: &Server, id: &str, token: &str) -> u16 {
    server.get(&format!("/v1/questions/{id}"), Some(token)).await.0
}

/// What `GET /web/{key}/api/state` answers.
async fn page_status(server: &Server, key: &str) -> u16 {
    server.get(&format!("/web/{key}/api/state"), None).await.0
}

/// Rewrites the configuration file: `from` becomes `to`.
fn edit_config(server: &Server, from: &str, to: &str) {
    let path = server.config_path();
    let text = std::fs::read_to_string(path).expect("the configuration is readable");
    assert!(text.contains(from), "{from} is not in the configuration:\n{text}");
    std::fs::write(path, text.replace(from, to)).expect("the configuration is written");
}

#[tokio::test]
async fn tokens_and_page_keys_rotate_on_sighup_while_an_agent_waits() {
    let mut server = Server::start();
    let old_token_line = format!("token = \"{AGENT_TOKEN}\"");
    let old_key_line = format!("web_key = \"{ME_KEY}\"");

    // An agent waits on the old token, across the whole rotation.
    let waiting = server
        .http()
        .post(server.url("/v1/ask"))
        .bearer_auth(AGENT_TOKEN)
        .json(&deploy_question())
        .send()
        .await
        .expect("POST /v1/ask is answered");
    assert_eq!(waiting.status(), 200);
    let id = waiting
        .headers()
        .get("askgate-question-id")
        .and_then(|value| value.to_str().ok())
        .expect("the question's id")
        .to_owned();
    let waiting = tokio::spawn(Reply::read(waiting));
    assert_eq!(status_with(&server, &id, NEW_TOKEN).await, 401, "not yet configured");

    // Both tokens and both keys, then SIGHUP: both are accepted, and the
    // new token is the same agent (it sees the question the old one asked).
    edit_config(
        &server,
        &old_token_line,
        &format!("tokens = [\"{NEW_TOKEN}\", \"{AGENT_TOKEN}\"]"),
    );
    edit_config(
        &server,
        &old_key_line,
        &format!("web_keys = [\"{NEW_KEY}\", \"{ME_KEY}\"]"),
    );
    server.signal("HUP");
    until("the new token accepted after SIGHUP", POLL_TIMEOUT, || async {
        (status_with(&server, &id, NEW_TOKEN).await == 200).then_some(())
    })
    .await;
    assert_eq!(status_with(&server, &id, AGENT_TOKEN).await, 200);
    assert_eq!(page_status(&server, NEW_KEY).await, 200);
    assert_eq!(page_status(&server, ME_KEY).await, 200);

    // A file with a problem changes nothing: what is in force stays.
    let good = std::fs::read_to_string(server.config_path()).expect("readable");
    std::fs::write(
        server.config_path(),
        good.replace("[agents.limited]", "[agents.limited]\ncolour = 1"),
    )
    .expect("written");
    server.signal("HUP");
    until("the refused reload logged", POLL_TIMEOUT, || {
        let log = server.stderr();
        async move {
            (log.contains("the configuration was not reloaded") && log.contains("agents.limited.colour")).then_some(())
        }
    })
    .await;
    assert_eq!(status_with(&server, &id, AGENT_TOKEN).await, 200);
    std::fs::write(server.config_path(), &good).expect("written");

    // The old ones removed, then SIGHUP: refused; the new ones still work.
    edit_config(
        &server,
        &format!("tokens = [\"{NEW_TOKEN}\", \"{AGENT_TOKEN}\"]"),
        &format!("tokens = [\"{NEW_TOKEN}\"]"),
    );
    edit_config(
        &server,
        &format!("web_keys = [\"{NEW_KEY}\", \"{ME_KEY}\"]"),
        &format!("web_key = \"{NEW_KEY}\""),
    );
    server.signal("HUP");
    until("the old token refused after SIGHUP", POLL_TIMEOUT, || async {
        (status_with(&server, &id, AGENT_TOKEN).await == 401).then_some(())
    })
    .await;
    assert_eq!(page_status(&server, ME_KEY).await, 404);
    assert_eq!(status_with(&server, &id, NEW_TOKEN).await, 200);

    // The agent that asked with the old token is still waiting, and gets
    // the answer given on the page's new link.
    assert!(!waiting.is_finished(), "the waiting agent was cut off by the rotation");
    let (status, answered) = server.web_choose(NEW_KEY, &id, "deploy_target", 1).await;
    assert_eq!(status, 200, "{answered}");
    let reply = tokio::time::timeout(POLL_TIMEOUT, waiting)
        .await
        .expect("the waiting agent is answered promptly")
        .expect("the wait did not panic");
    assert_eq!(
        reply.json(),
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );
    let log = server.stderr();
    assert!(log.contains("reloaded the agent tokens and page keys"), "{log}");
}

#[tokio::test]
async fn health_exits_0_when_ready_and_1_with_a_reason_otherwise() {
    let server = Server::start();
    let ready = Command::new(ASKGATE)
        .args(["health", "--url", server.base()])
        .output()
        .expect("askgate health runs");
    assert_eq!(ready.status.code(), Some(0), "{ready:?}");

    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let down = Command::new(ASKGATE)
        .args(["health", "--url", &format!("http://127.0.0.1:{port}")])
        .output()
        .expect("askgate health runs");
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    let said = String::from_utf8_lossy(&down.stderr);
    assert!(said.contains("/readyz") && said.contains("could not connect"), "{said}");
}

/// A supervisor's reload or stop as soon as askgate says it listens is
/// answered (a reload, a graceful stop), never fatal: the handlers are
/// installed before anything else.
#[tokio::test]
async fn sighup_and_sigterm_right_after_the_start_are_answered() {
    let mut server = Server::start();
    server.signal("HUP");
    server.signal("HUP");
    let (status, _) = server.get("/healthz", None).await;
    assert_eq!(status, 200, "SIGHUP stopped askgate");
    let exit = server.terminate(Duration::from_secs(15)).await;
    assert!(exit.success(), "SIGTERM right after the start: {exit}");

    for _ in 0..3 {
        server.restart();
        let exit = server.terminate(Duration::from_secs(15)).await;
        assert!(exit.success(), "SIGTERM right after the listening line: {exit}");
    }
}
