//! askgate on PostgreSQL, end to end: the real `askgate serve` with
//! `[store] kind = "postgres"` (in a schema of the test's own on the test
//! PostgreSQL, `askgate_testkit::postgres`), asked over HTTP and answered on
//! its web page, killed and restarted on the same database; two of them on
//! one database, as replicas; and what `check-config` says of the database.

use crate::support;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_testkit::postgres::Schema;
use askgate_testkit::telegram::{FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::{AGENT_TOKEN, ASKGATE, ME_KEY, Server, now_millis, rfc3339_millis};

/// The `[store]` section for `schema`.
fn store_section(url: &str) -> String {
    format!("\n[store]\nkind = \"postgres\"\nurl = \"{url}\"\nmax_connections = 4\n")
}

fn ask_body(session: &str) -> Value {
    let mut body = support::deploy_question();
    body["sessionId"] = json!(session);
    body
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

    // A NUL in an id of the envelope, which PostgreSQL keeps in no text, is
    // refused as on SQLite: 422 `invalid_character` at its path, not a 503
    // that tells the agent to send it again.
    for field in ["sessionId", "runId", "toolCallId"] {
        let mut body = ask_body("s3");
        body[field] = json!("a\u{0}b");
        let (status, answer) = server.post_json("/v1/questions", Some(AGENT_TOKEN), &body).await;
        assert_eq!(
            (status, &answer["error"]["code"], &answer["error"]["path"]),
            (422, &json!("invalid_character"), &json!(field)),
            "{answer}"
        );
    }
    let (status, answer) = server.post_empty("/v1/runs/a%00b/abort", Some(AGENT_TOKEN)).await;
    assert_eq!(
        (status, &answer["error"]["code"], &answer["error"]["path"]),
        (422, &json!("invalid_character"), &json!("runId")),
        "{answer}"
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
    let said = String::from_utf8_lossy(&output.stdout).into_owned() + &*String::from_utf8_lossy(&output.stderr);
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

/// Two `askgate serve` on one database: a wait held by A ends when B's page
/// stores the answer; 1,000 questions asked on either and answered on both
/// pages at once are each answered exactly once; A `kill -9`'d with 50
/// pending: they expire on time on B. (One long test: the last part waits
/// out the shortest timeout a question may have, 30 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_database_share_waits_answers_and_expiry() {
    let schema = Schema::create().await;
    let store = store_section(&schema.url());
    let a = Server::start_with("", &store);
    let b = Arc::new(Server::start_with("", &store));

    // A blocking ask on A, answered on B's page.
    let call = tokio::spawn(
        a.http()
            .post(a.url("/v1/ask"))
            .bearer_auth(AGENT_TOKEN)
            .json(&ask_body("s1"))
            .send(),
    );
    let pending = b.pending_on_page(ME_KEY, 1).await;
    let id = pending[0]["id"].as_str().expect("an id").to_owned();
    let response = call.await.expect("the ask task").expect("POST /v1/ask answered");
    let (status, body) = b.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!((status, body), (200, json!({"status": "answered"})));
    let stored = Instant::now();
    let text = response.text().await.expect("the body");
    let took = stored.elapsed();
    let result: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );
    // Correctness, not a benchmark: the wait ended on the answer, not on a
    // timer (the benchmark measures the latency).
    assert!(
        took < Duration::from_secs(2),
        "A's wait ended {took:?} after B stored the answer"
    );

    // 1,000 questions, asked on A or B, each answered on both pages at once.
    let a = Arc::new(a);
    let wins = race_answers(&a, &b, 1_000).await;
    assert_eq!(wins.len(), 1_000);
    for (n, (id, label)) in wins.iter().enumerate() {
        // Every one reads the same through either replica: the answer that won.
        let resource = if n % 2 == 0 {
            a.question(id).await
        } else {
            b.question(id).await
        };
        assert_eq!(
            resource["result"],
            json!({"status": "answered", "answers": {"answers": {"deploy_target": [label]}}}),
            "{id}"
        );
    }
    let mut conn = schema.connect().await;
    let answered: i64 = sqlx::query_scalar("SELECT count(*) FROM questions WHERE status = 'answered'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(answered, 1_001);

    // A dies with 50 pending (30 s, the shortest timeout): B expires them on time.
    let mut a = Arc::into_inner(a).expect("no other holder of A");
    let mut deadlines = Vec::new();
    for n in 0..50 {
        let mut body = ask_body(&format!("dying-{n}"));
        body["timeoutSeconds"] = json!(30);
        let created = a.create(&body).await;
        let expires = rfc3339_millis(created["expiresAt"].as_str().expect("expiresAt"));
        deadlines.push((created["id"].as_str().expect("an id").to_owned(), expires));
    }
    a.kill();
    let latest = deadlines.iter().map(|(_, at)| *at).max().unwrap_or_default();
    tokio::time::sleep(Duration::from_millis(u64::try_from(latest - now_millis()).unwrap_or(0))).await;
    for (id, expires) in &deadlines {
        let resource = b.question_with_status(id, "expired", Duration::from_secs(10)).await;
        let ended = rfc3339_millis(resource["resolvedAt"].as_str().expect("resolvedAt"));
        // On time: at the deadline, within the sweep's second and a little.
        assert!(
            (*expires..=expires + 2_500).contains(&ended),
            "{id} expired at {ended}, its deadline {expires}"
        );
    }
}

/// Secrets askgate generates live in the database's settings with
/// PostgreSQL: two replicas accept the same generated agent token
/// and the same page key, and neither writes them to its data directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_secrets_are_shared_by_replicas_through_the_database() {
    let schema = Schema::create().await;
    let more = store_section(&schema.url())
        + "\n[agents.generated]\nrecipients = [\"*\"]\n\n[recipients.gen]\nchannel = \"web\"\n";
    let (a, b) = (Server::start_with("", &more), Server::start_with("", &more));

    let mut conn = schema.connect().await;
    let setting =
        |key: &'static str| sqlx::query_scalar::<_, String>("SELECT value FROM settings WHERE key = $1").bind(key);
    let token = setting("secret.agent-token-generated")
        .fetch_one(&mut conn)
        .await
        .expect("the token is kept");
    let key = setting("secret.web-key-gen")
        .fetch_one(&mut conn)
        .await
        .expect("the page key is kept");
    assert!(token.starts_with("agt_") && token.len() >= 40, "{token}");
    for server in [&a, &b] {
        let (status, agent) = server.get("/v1/agent", Some(&token)).await;
        assert_eq!((status, &agent["name"]), (200, &json!("generated")), "{agent}");
        let page = server
            .http()
            .get(server.url(&format!("/web/{key}")))
            .send()
            .await
            .expect("the page");
        assert_eq!(page.status(), 200);
        for file in ["agent-token-generated", "web-key-gen"] {
            assert!(
                !server.data_dir().join(file).exists(),
                "{file} written to the data directory"
            );
        }
    }

    // `askgate link` prints the link kept in the database, and `rotate`
    // keeps a new one there. Each within a few seconds: it had opened a
    // pool of one connection, which the change feed held, and every
    // statement failed after waiting 5 s for it.
    let link = |verb: &str| {
        let started = Instant::now();
        let said = a.link(verb, "gen");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(4), "askgate link {verb} took {took:?}");
        said
    };
    let shown = link("show");
    assert!(shown.contains(&format!("/web/{key}")), "{shown}");
    let rotated = link("rotate");
    let new_key = setting("secret.web-key-gen")
        .fetch_one(&mut conn)
        .await
        .expect("the page key is kept");
    assert_ne!(new_key, key, "rotate keeps a new key");
    assert!(rotated.contains(&format!("/web/{new_key}")), "{rotated}");
}

/// `count` questions, asked on `a` or `b` in turn, each answered on both
/// pages at once: exactly one answer is taken, the other told the question
/// ended. The ids with the label that won.
async fn race_answers(a: &Arc<Server>, b: &Arc<Server>, count: usize) -> Vec<(String, &'static str)> {
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..8_usize {
        let (a, b) = (a.clone(), b.clone());
        workers.spawn(async move {
            let mut wins = Vec::new();
            for n in (worker..count).step_by(8) {
                let (asker, other) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
                let (status, created) = asker
                    .post_json("/v1/questions", Some(AGENT_TOKEN), &ask_body(&format!("race-{n}")))
                    .await;
                assert_eq!(status, 201, "{created}");
                let id = created["id"].as_str().expect("an id").to_owned();
                let (first, second) = tokio::join!(
                    asker.web_choose(ME_KEY, &id, "deploy_target", 0),
                    other.web_choose(ME_KEY, &id, "deploy_target", 1),
                );
                let answered: Vec<usize> = [&first, &second]
                    .iter()
                    .enumerate()
                    .filter(|(_, (status, _))| *status == 200)
                    .map(|(index, _)| index)
                    .collect();
                assert_eq!(answered.len(), 1, "{id}: {first:?} {second:?}");
                let lost = if answered[0] == 0 { &second } else { &first };
                assert_eq!(
                    (lost.0, &lost.1["error"]["code"]),
                    (409, &json!("question_ended")),
                    "{id}"
                );
                wins.push((
                    id,
                    if answered[0] == 0 {
                        "Staging (Recommended)"
                    } else {
                        "Production"
                    },
                ));
            }
            wins
        });
    }
    workers.join_all().await.into_iter().flatten().collect()
}

/// Alice's Telegram user id, which is also her private chat's id.
const ALICE: i64 = 4242;

/// Two replicas polling one Telegram bot: only the lease holder polls (the
/// fake sees no second poller); `kill -9` it, and the other takes the
/// connection's lease within 10 s: a tap then is answered, once, and every
/// update is confirmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_at_a_time_polls_telegram_and_another_takes_over_when_it_dies() {
    let schema = Schema::create().await;
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE));
    let more = store_section(&schema.url())
        + format!(
            "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{}\"\napi_url = \"{}\"\n\n\
             [recipients.alice]\nchannel = \"tg\"\nchat_id = {ALICE}\ndisplay_name = \"Alice\"\n",
            fake.token(),
            fake.api_url()
        )
        .as_str();
    let mut a = Server::start_with("", &more);
    let b = Server::start_with("", &more);

    // Asked on either, tapped in Telegram: answered, by whichever polls.
    tap_answers(&fake, &a, "Production", 1).await;
    tap_answers(&fake, &b, "Staging (Recommended)", 0).await;
    // B tried for the lease every 2 s all along: it never polled beside A.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(fake.poll_conflicts(), 0, "two replicas polled Telegram at once");

    let mut conn = schema.connect().await;
    let before = lease_holder(&mut conn).await.expect("A holds the lease");
    a.kill();
    let killed = Instant::now();
    // The lease moves to B within 10 s (it lasts 6 s, B tries every 2 s).
    loop {
        let now_held = lease_holder(&mut conn).await;
        if now_held.as_ref().is_some_and(|owner| *owner != before) {
            break;
        }
        let waited = killed.elapsed();
        assert!(
            waited < Duration::from_secs(10),
            "the lease is still {now_held:?} {waited:?} after A died"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And B polls: a tap now is answered, once.
    tap_answers(&fake, &b, "Production", 1).await;
    // And B confirms what it applied (its next poll's offset): nothing is left.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fake.pending_updates().is_empty() {
        assert!(Instant::now() < deadline, "{:?}", fake.pending_updates());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Who holds the Telegram channel's lease now.
async fn lease_holder(conn: &mut sqlx::PgConnection) -> Option<String> {
    sqlx::query_scalar("SELECT owner FROM leases WHERE name = 'channel:tg'")
        .fetch_optional(conn)
        .await
        .expect("the leases table reads")
}

/// Asks Alice on `server`, taps option `index` in Telegram: the waiting
/// agent gets `label`.
async fn tap_answers(fake: &FakeTelegram, server: &Server, label: &str, index: usize) {
    let body = json!({
        "to": "alice",
        "questions": [{
            "id": "deploy_target", "header": "Deploy", "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
        }]
    });
    let mut asked = server.ask_waiting(&body).await;
    let message = eventually_shown(fake, &asked.id).await;
    let (alice, dm) = (TgUser::new(ALICE, "Alice"), TgChat::private(ALICE));
    fake.tap(&alice, &dm, message, &asked.token(&index.to_string()));
    let result = asked.result(Duration::from_secs(20)).await;
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy_target": [label]}}})
    );
}

/// The prompt of question `id` in the fake's chats: its `message_id`.
async fn eventually_shown(fake: &FakeTelegram, id: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let shown = fake.messages().get(&ALICE).and_then(|sent| {
            sent.iter()
                .find(|m| m["reply_markup"].to_string().contains(id))
                .cloned()
        });
        if let Some(message) = shown {
            return message["message_id"].as_i64().expect("a message id");
        }
        assert!(Instant::now() < deadline, "the prompt of {id} never reached Telegram");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
