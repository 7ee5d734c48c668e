//! askgate on PostgreSQL, end to end: the real `askgate serve` with
//! `[store] kind = "postgres"` (in a schema of the test's own on the test
//! PostgreSQL, `askgate_testkit::postgres`), asked over HTTP and answered on
//! its web page, killed and restarted on the same database; and what
//! `check-config` says of the database.

mod support;

use std::process::Stdio;

use askgate_testkit::postgres::Schema;
use serde_json::{Value, json};
use support::{AGENT_TOKEN, ASKGATE, ME_KEY, Server};

/// The `[store]` section for `schema`.
fn store_section(url: &str) -> String {
    format!("\n[store]\nkind = \"postgres\"\nurl = \"{url}\"\nmax_connections = 4\n")
}

fn ask_body(session: &str) -> Value {
    json!({
        "to": "me",
        "sessionId": session,
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
        }],
        "timeoutSeconds": 600
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_postgres_is_answered_with_the_exact_result_and_survives_kill_9() {
    let schema = Schema::create().await;
    let mut server = Server::start_with("", &store_section(&schema.url()));

    // A blocking ask, answered on the web page.
    let call = tokio::spawn(
        server
            .http()
            .post(server.url("/v1/ask"))
            .bearer_auth(AGENT_TOKEN)
            .json(&ask_body("s1"))
            .send(),
    );
    let pending = server.pending_on_page(ME_KEY, 1).await;
    let id = pending[0]["id"].as_str().expect("an id").to_owned();
    let (status, body) = server.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!((status, body), (200, json!({"status": "answered"})));
    let response = call.await.expect("the ask task").expect("POST /v1/ask answered");
    let result: Value = serde_json::from_str(&response.text().await.expect("the body")).expect("JSON");
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );

    // The rows are where the configuration said: in the test's schema.
    let mut conn = schema.connect().await;
    let stored: String = sqlx::query_scalar("SELECT status FROM questions WHERE id = $1")
        .bind(&id)
        .fetch_one(&mut conn)
        .await
        .expect("the question is in the schema");
    assert_eq!(stored, "answered");

    // A pending question survives kill -9 and is answered after the restart;
    // the session rule still holds for it.
    let kept = server.create(&ask_body("s2")).await;
    let kept_id = kept["id"].as_str().expect("an id").to_owned();
    server.kill();
    server.restart();
    assert_eq!(server.question(&kept_id).await, kept);
    let (status, body) = server
        .post_json("/v1/questions", Some(AGENT_TOKEN), &ask_body("s2"))
        .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &json!("question_pending")),
        "{body}"
    );
    let (status, _) = server.web_choose(ME_KEY, &kept_id, "deploy_target", 0).await;
    assert_eq!(status, 200);
    let answered = server.question(&kept_id).await;
    assert_eq!(
        answered["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}})
    );
}

fn check_config(config: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("askgate.toml");
    std::fs::write(&file, support::config_text(dir.path()) + config).expect("written");
    let output = std::process::Command::new(ASKGATE)
        .arg("check-config")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("askgate check-config runs");
    let said = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.code(), said)
}

#[tokio::test]
async fn check_config_says_what_answered_or_what_is_wrong_with_the_database_never_the_password() {
    let schema = Schema::create().await;
    let (code, said) = check_config(&store_section(&schema.url()));
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.lines().any(|line| line.starts_with("store: PostgreSQL ")),
        "{said}"
    );

    let (code, said) = check_config(&store_section("postgres://askgate:hunter2-secret@127.0.0.1:1/askgate"));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("store.url") && said.contains("cannot reach the PostgreSQL server at 127.0.0.1:1"),
        "{said}"
    );
    assert!(!said.contains("hunter2"), "{said}");
}
