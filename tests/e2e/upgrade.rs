//! Upgrading replicas, end to end: the real `askgate serve` on a PostgreSQL
//! schema that a newer askgate migrated (simulated: a migration it does not
//! know recorded as applied, with an additive change) serves and answers
//! questions while the schema is compatible, and refuses to start, saying
//! why and what to do, once a migration declared it is not
//! (`schema.oldest_compatible`).

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use askgate_testkit::postgres::Schema;
use serde_json::json;
use support::{ASKGATE, ME_KEY, POLL_TIMEOUT, Server};

/// How long a refused start may take to exit.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The `[store]` section for `url`.
fn store_section(url: &str) -> String {
    format!("\n[store]\nkind = \"postgres\"\nurl = \"{url}\"\nmax_connections = 4\n")
}

/// The newest PostgreSQL migration this askgate knows (its files are
/// numbered from 1 without gaps).
fn known() -> i64 {
    let dir = support::repo_root().join("crates/askgate-store/migrations/postgres");
    i64::try_from(std::fs::read_dir(dir).expect("the migrations").count()).expect("a count")
}

/// Runs `askgate serve` on `config`, which must exit within
/// [`REFUSAL_TIMEOUT`]; its exit code and stderr.
async fn serve_refused(config: &std::path::Path) -> (Option<i32>, String) {
    let mut child = Command::new(ASKGATE)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .env("RUST_LOG", "info,sqlx=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the askgate binary starts");
    let deadline = Instant::now() + REFUSAL_TIMEOUT;
    loop {
        if child.try_wait().expect("the child can be waited for").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("its output");
            panic!(
                "askgate serve did not exit within {REFUSAL_TIMEOUT:?}; its stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let output = child.wait_with_output().expect("its output");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_askgate_serves_a_compatible_newer_schema_and_refuses_an_incompatible_one() {
    let schema = Schema::create().await;
    let mut server = Server::start_with("", &store_section(&schema.url()));
    // It migrated before it listened.
    server.kill();

    // A newer askgate migrated the schema: migration 9999, additive.
    schema
        .execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (9999, 'a newer release', TRUE, '\\x00'::bytea, 1)",
        )
        .await;
    schema.execute("ALTER TABLE questions ADD COLUMN note TEXT").await;
    schema
        .execute("CREATE TABLE upgrade_notes (id TEXT PRIMARY KEY, body TEXT)")
        .await;

    // This askgate starts on it, says so once, and serves.
    server.restart();
    let known = known();
    let warned = "the database schema is newer than this askgate knows";
    let deadline = Instant::now() + POLL_TIMEOUT;
    while !server.stderr().contains(warned) {
        assert!(Instant::now() < deadline, "no warning; stderr:\n{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let stderr = server.stderr();
    let line = stderr.lines().find(|line| line.contains(warned)).expect("the line");
    assert!(
        line.contains("WARN") && line.contains("schema=9999") && line.contains(&format!("known={known}")),
        "{line}"
    );
    assert_eq!(stderr.matches(warned).count(), 1, "{stderr}");
    let asked = server.create(&support::deploy_question()).await;
    let id = asked["id"].as_str().expect("an id").to_owned();
    let (status, body) = server.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!((status, body), (200, json!({"status": "answered"})));
    let answered = server.question_with_status(&id, "answered", POLL_TIMEOUT).await;
    assert_eq!(
        answered["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );
    server.kill();

    // A later migration declares that only an askgate that knows 9999 may
    // run (over the floor an earlier migration may have set).
    schema
        .execute(
            "INSERT INTO settings (key, value) VALUES ('schema.oldest_compatible', '9999') \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .await;
    let (code, stderr) = serve_refused(server.config_path()).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "askgate: opening the PostgreSQL store ([store] url): the database schema is at migration 9999, newer than this askgate knows ({known}), and no longer \
             compatible with it (an askgate that knows migration 9999 or later is needed): upgrade this askgate, \
             or restore the backup taken before the upgrade (what was written since is lost)"
        )),
        "{stderr}"
    );
    // Refused before it listened or changed anything: the answer is kept.
    let mut conn = schema.connect().await;
    let stored: String = sqlx::query_scalar("SELECT status FROM questions WHERE id = $1")
        .bind(&id)
        .fetch_one(&mut conn)
        .await
        .expect("the question is kept");
    assert_eq!(stored, "answered");
}
