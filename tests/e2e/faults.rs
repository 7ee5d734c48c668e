//! Faults on the real binary (issue 11): an outside connection holding
//! SQLite's write lock past a question's deadline, `kill -9` at random
//! moments while agents ask and the page answers, and a full disk under the
//! data directory; and (issue 24) the database file overwritten in place or
//! truncated, and a disk with room for a small write but not for a question.
//! askgate must lose nothing it acknowledged, change nothing it stored,
//! acknowledge nothing into a file that is no longer its own, report a store
//! it cannot write to, recover without a restart where it can, and never
//! panic.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use support::tmpfs::{Tmpfs, fill};
use support::{AGENT_TOKEN, ME_KEY, POLL_TIMEOUT, Server, now_millis, rfc3339_millis};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// The options of [`ask_body`], by index.
const LABELS: [&str; 3] = ["Staging (Recommended)", "Production", "Canary"];

/// The shortest `timeoutSeconds` askgate accepts (`MIN_TIMEOUT_SECONDS`).
const SHORTEST_TIMEOUT: u64 = 30;

/// A one-question request for `me` that expires after `timeout` seconds.
fn ask_body(timeout: u64) -> Value {
    json!({
        "to": "me",
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": LABELS.map(|label| json!({"label": label})),
        }],
        "timeoutSeconds": timeout
    })
}

fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("the resource has an id").to_owned()
}

/// The answer's body for option `index` of [`ask_body`]'s question.
fn choice(index: usize) -> Value {
    json!({"answers": {"deploy_target": {"options": [index], "text": null}}})
}

/// The tool result of a question answered with option `index`.
fn answered_with(index: usize) -> Value {
    json!({"status": "answered", "answers": {"answers": {"deploy_target": [LABELS[index]]}}})
}

/// Sends a request and reads its status and body (JSON, or the text as a
/// JSON string). Unlike the harness it returns a 5xx rather than failing,
/// and a transport error (askgate killed) rather than panicking: the
/// callers decide what each means.
async fn call(request: reqwest::RequestBuilder) -> Result<(u16, Value), reqwest::Error> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, body))
}

/// Fails the test if askgate's log so far shows a panic.
fn assert_no_panic(server: &mut Server, when: &str) {
    let stderr = server.stderr();
    assert!(
        !stderr.contains("panicked"),
        "askgate panicked ({when}); its stderr:\n{stderr}"
    );
}

// 1 ────────────────────────────────────────────────────────────────────────

/// Takes SQLite's write lock on the file in `argv[1]`, says `locked`, holds
/// the lock until a line arrives on stdin, releases it and says `released`.
const LOCK_HOLDER: &str = r#"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
print("released", flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_blocked_by_an_outside_write_lock_lands_once_the_lock_is_released() {
    let mut server = Server::start();
    let created = server.create(&ask_body(SHORTEST_TIMEOUT)).await;
    let id = id_of(&created);
    let expires_at = rfc3339_millis(created["expiresAt"].as_str().expect("expiresAt"));
    server.pending_on_page(ME_KEY, 1).await;
    // The delivery is stored just after the question shows on the page; let
    // it land first, so that the expiry is the only write that meets the lock.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let database = server.data_dir().join("askgate.db");
    let mut holder = tokio::process::Command::new("python3")
        .arg("-c")
        .arg(LOCK_HOLDER)
        .arg(&database)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs (this test takes the write lock with python3's sqlite3 module)");
    let mut said = BufReader::new(holder.stdout.take().expect("piped stdout")).lines();
    let first = tokio::time::timeout(POLL_TIMEOUT, said.next_line())
        .await
        .expect("python3 takes the write lock within the poll timeout")
        .expect("python3's stdout can be read");
    assert_eq!(
        first.as_deref(),
        Some("locked"),
        "python3 could not take the write lock on {}",
        database.display()
    );

    // Hold it past the deadline and past the busy timeout (5 s) of the
    // expiry's first attempt, so that at least one attempt fails.
    let hold_until = expires_at + 7_000;
    let pause = u64::try_from(hold_until - now_millis()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(pause)).await;
    let held = server.question(&id).await;
    assert_eq!(
        held["status"], "pending",
        "a question cannot expire while another connection holds the write lock: {held}"
    );
    let past_deadline = Duration::from_millis(u64::try_from(now_millis() - expires_at).unwrap_or(0));

    let waiter = {
        let request = server
            .http()
            .get(server.url(&format!("/v1/questions/{id}?wait=60")))
            .bearer_auth(AGENT_TOKEN);
        tokio::spawn(async move { call(request).await.map(|(status, body)| (status, body, Instant::now())) })
    };
    // The waiter is in its wait before the lock goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "the waiting GET returned while the lock was held"
    );

    let mut stdin = holder.stdin.take().expect("piped stdin");
    stdin.write_all(b"release\n").await.expect("python3 reads its stdin");
    stdin.flush().await.expect("python3 reads its stdin");
    let released = Instant::now();
    let said_released = tokio::time::timeout(POLL_TIMEOUT, said.next_line())
        .await
        .expect("python3 releases the lock within the poll timeout")
        .expect("python3's stdout can be read");
    assert_eq!(said_released.as_deref(), Some("released"));
    let exit = tokio::time::timeout(POLL_TIMEOUT, holder.wait())
        .await
        .expect("python3 exits")
        .expect("python3 can be waited for");
    assert!(exit.success(), "python3 failed: {exit}");

    let (status, resource, returned) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiting GET returns within 10 s of the release")
        .expect("the waiting task does not panic")
        .expect("askgate answers the waiting GET");
    let after_release = returned.saturating_duration_since(released);
    assert_eq!(status, 200, "{resource}");
    assert_eq!(resource["status"], "expired", "{resource}");
    assert_eq!(resource["result"], json!({"status": "no_answer"}));
    assert_eq!(resource["resolution"]["status"], "expired");
    assert_eq!(resource["expiresAt"], created["expiresAt"], "the deadline is unchanged");
    assert!(
        after_release <= Duration::from_secs(5),
        "the question expired {after_release:?} after the lock was released, not within a few seconds"
    );
    assert_eq!(
        server.question(&id).await,
        resource,
        "the store holds what the waiter got"
    );

    let log = server.stderr();
    assert!(
        log.contains("could not expire a question; trying again"),
        "the expiry never met the lock (no retry logged); askgate's stderr:\n{log}"
    );
    assert_no_panic(&mut server, "after the lock was released");
    println!(
        "outside write lock held {:.1} s past the deadline: expired {:.2} s after its release",
        past_deadline.as_secs_f64(),
        after_release.as_secs_f64()
    );
}

// 2 ────────────────────────────────────────────────────────────────────────

/// How many times askgate is killed.
const KILLS: usize = 20;

/// What askgate acknowledged, and what went wrong on its side, while it was
/// being killed.
#[derive(Default)]
struct Ledger {
    /// Every question created (`201`), as the agent got it.
    created: Vec<Value>,
    /// Every answer acknowledged (`200`, `"status": "answered"`): the question
    /// and the option chosen.
    acknowledged: Vec<(String, usize)>,
    /// Answers refused because the question had ended (another answer won).
    conflicts: usize,
    /// Requests that got no reply (askgate was killed or not yet back).
    broken: usize,
    /// Any other reply: a 5xx, or one no request here should get.
    unexpected: Vec<String>,
}

type Shared<T> = Arc<Mutex<T>>;

fn lock<T>(shared: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the agents and the person on the page share.
#[derive(Clone)]
struct Load {
    http: reqwest::Client,
    /// The running askgate's base URL (it changes at each restart).
    base: Shared<String>,
    ledger: Shared<Ledger>,
    stop: Arc<AtomicBool>,
}

/// An agent: creates questions until `stop`, recording each it is told of.
async fn agent(load: Load, seed: u64) {
    let Load {
        http,
        base,
        ledger,
        stop,
    } = load;
    let mut rng = StdRng::seed_from_u64(seed);
    while !stop.load(Ordering::Relaxed) {
        let url = format!("{}/v1/questions", lock(&base));
        let request = http.post(url).bearer_auth(AGENT_TOKEN).json(&ask_body(3600));
        match call(request).await {
            Ok((201, resource)) => lock(&ledger).created.push(resource),
            Ok((status, body)) => lock(&ledger)
                .unexpected
                .push(format!("POST /v1/questions: {status} {body}")),
            Err(_) => lock(&ledger).broken += 1,
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
    }
}

/// The person on the web page: answers a pending question with a random
/// option until `stop`, recording each answer acknowledged.
async fn answerer(load: Load, seed: u64) {
    let Load {
        http,
        base,
        ledger,
        stop,
    } = load;
    let mut rng = StdRng::seed_from_u64(seed);
    while !stop.load(Ordering::Relaxed) {
        let base = lock(&base).clone();
        let pending = match call(http.get(format!("{base}/web/{ME_KEY}/api/state"))).await {
            Ok((200, state)) => state["pending"].as_array().cloned().unwrap_or_default(),
            Ok((status, body)) => {
                lock(&ledger)
                    .unexpected
                    .push(format!("GET the page state: {status} {body}"));
                Vec::new()
            }
            Err(_) => {
                lock(&ledger).broken += 1;
                Vec::new()
            }
        };
        if pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        // One of the first few: the two answerers often pick the same one.
        let id = id_of(&pending[rng.random_range(0..pending.len().min(3))]);
        let index = rng.random_range(0..LABELS.len());
        let url = format!("{base}/web/{ME_KEY}/api/questions/{id}/answer");
        match call(http.post(url).json(&choice(index))).await {
            Ok((200, body)) if body["status"] == "answered" => {
                lock(&ledger).acknowledged.push((id, index));
            }
            Ok((409, body)) if body["error"]["code"] == "question_ended" => lock(&ledger).conflicts += 1,
            Ok((status, body)) => lock(&ledger)
                .unexpected
                .push(format!("POST the answer to {id}: {status} {body}")),
            Err(_) => lock(&ledger).broken += 1,
        }
    }
}

/// What the store holds against what askgate acknowledged.
#[derive(Default)]
struct Audit {
    /// Every discrepancy, as a sentence, and every unexpected reply.
    problems: Vec<String>,
    /// Created questions askgate no longer knows.
    missing: usize,
    /// Created questions whose `createdAt` or `expiresAt` differ from the 201's.
    deadlines_changed: usize,
    /// Acknowledged answers the question does not have.
    lost: usize,
    /// Acknowledged answers stored with another option.
    changed: usize,
    /// Questions whose answer was acknowledged more than once.
    doubled: usize,
}

/// Reads every question of `ledger` back from `server` and compares.
async fn audit(server: &Server, ledger: &Ledger) -> Audit {
    let mut audit = Audit {
        problems: ledger.unexpected.clone(),
        ..Audit::default()
    };
    let mut stored = HashMap::new();
    for created in &ledger.created {
        let id = id_of(created);
        let (status, resource) = call(
            server
                .http()
                .get(server.url(&format!("/v1/questions/{id}")))
                .bearer_auth(AGENT_TOKEN),
        )
        .await
        .expect("askgate answers");
        if status != 200 {
            audit.missing += 1;
            audit
                .problems
                .push(format!("created question {id} is gone: {status} {resource}"));
            continue;
        }
        if resource["expiresAt"] != created["expiresAt"] || resource["createdAt"] != created["createdAt"] {
            audit.deadlines_changed += 1;
            audit.problems.push(format!(
                "question {id} was created with {} .. {}, now it is {} .. {}",
                created["createdAt"], created["expiresAt"], resource["createdAt"], resource["expiresAt"]
            ));
        }
        if !matches!(resource["status"].as_str(), Some("pending" | "answered")) {
            audit
                .problems
                .push(format!("question {id} is {}: {resource}", resource["status"]));
        }
        stored.insert(id, resource);
    }

    let mut acknowledged: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (id, index) in &ledger.acknowledged {
        acknowledged.entry(id).or_default().push(*index);
    }
    for (id, indexes) in &acknowledged {
        if indexes.len() > 1 {
            audit.doubled += 1;
            audit.problems.push(format!(
                "question {id} was answered and acknowledged {} times: {indexes:?}",
                indexes.len()
            ));
        }
        // Answered on the page, maybe created by a request whose reply the kill cut off.
        let resource = match stored.get(*id) {
            Some(resource) => resource.clone(),
            None => server.question(id).await,
        };
        let index = indexes[0];
        if resource["status"] != "answered" {
            audit.lost += 1;
        } else if resource["result"] != answered_with(index) {
            audit.changed += 1;
        } else {
            continue;
        }
        audit.problems.push(format!(
            "question {id} was acknowledged as {:?}, it is now {resource}",
            LABELS[index]
        ));
    }
    audit
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_load_loses_changes_and_doubles_nothing_acknowledged() {
    let (seed, mut rng) = support::seeded_rng("ASKGATE_FAULTS_SEED", "its kill moments");
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client");

    let mut server = Server::start();
    let load = Load {
        http,
        base: Arc::new(Mutex::new(server.base().to_owned())),
        ledger: Arc::new(Mutex::new(Ledger::default())),
        stop: Arc::new(AtomicBool::new(false)),
    };
    let mut workers = Vec::new();
    for worker in 0..2 {
        workers.push(tokio::spawn(agent(load.clone(), seed ^ (2 * worker + 1))));
        workers.push(tokio::spawn(answerer(load.clone(), seed ^ (2 * worker + 2))));
    }

    let started = Instant::now();
    for kill in 1..=KILLS {
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..1200))).await;
        assert_no_panic(&mut server, &format!("before kill {kill}"));
        server.kill();
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..300))).await;
        // Blocks until askgate prints its listening line; the workers run on.
        tokio::task::block_in_place(|| server.restart());
        server.base().clone_into(&mut lock(&load.base));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    load.stop.store(true, Ordering::Relaxed);
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(30), worker)
            .await
            .expect("the workers stop")
            .expect("a worker does not panic");
    }
    let load_time = started.elapsed();

    let ledger = std::mem::take(&mut *lock(&load.ledger));
    let Audit {
        problems,
        missing,
        deadlines_changed,
        lost,
        changed,
        doubled,
    } = audit(&server, &ledger).await;
    assert_no_panic(&mut server, "after the last restart");

    println!(
        "kill -9 ×{KILLS}: {} questions, {} answers acknowledged, {lost} lost, {changed} changed, {doubled} doubled, \
         {deadlines_changed} deadlines changed, {missing} missing ({} conflicts, {} requests cut off, {:.1} s)",
        ledger.created.len(),
        ledger.acknowledged.len(),
        ledger.conflicts,
        ledger.broken,
        load_time.as_secs_f64()
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) (seed {seed}):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(
        !ledger.created.is_empty() && !ledger.acknowledged.is_empty(),
        "the load did nothing: {} questions, {} answers",
        ledger.created.len(),
        ledger.acknowledged.len()
    );
}

// 3 ────────────────────────────────────────────────────────────────────────

/// `GET /readyz`, without the harness's check that it is no 5xx.
async fn readiness(server: &Server) -> (u16, Value) {
    call(server.http().get(server.url("/readyz")))
        .await
        .expect("askgate answers /readyz")
}

/// `/readyz`'s status code and `status` (its `channels` aside).
async fn ready_status(server: &Server) -> (u16, Value) {
    let (code, ready) = readiness(server).await;
    (code, ready["status"].clone())
}

/// On a full disk: the web answer to `answer_url` and a new question are
/// refused with `503 store_unavailable`, and `/readyz` says why it is not ready.
async fn refused_while_full(server: &Server, answer_url: &str, filler_size: u64) {
    // Reads still work on a full disk; the store learns that it is full
    // from a write that fails, so the refused answer comes first.
    let refused = call(server.http().post(answer_url).json(&choice(0)))
        .await
        .expect("askgate answers the web answer");
    let create_refused = call(
        server
            .http()
            .post(server.url("/v1/questions"))
            .bearer_auth(AGENT_TOKEN)
            .json(&ask_body(3600)),
    )
    .await
    .expect("askgate answers POST /v1/questions");
    let not_ready = readiness(server).await;
    println!(
        "disk full ({} KiB of filler): web answer {} {}; POST /v1/questions {} {}; /readyz {} {}",
        filler_size / 1024,
        refused.0,
        refused.1,
        create_refused.0,
        create_refused.1,
        not_ready.0,
        not_ready.1
    );
    assert_ne!(
        refused.0, 200,
        "an answer askgate could not store was acknowledged: {}",
        refused.1
    );
    for (what, (status, body)) in [("the web answer", &refused), ("POST /v1/questions", &create_refused)] {
        assert_eq!(*status, 503, "{what} on a full disk answered {status} {body}");
        assert_eq!(body["error"]["code"], "store_unavailable", "{what}: {body}");
        assert!(body["error"]["message"].is_string(), "{what}: {body}");
    }
    assert_eq!(not_ready.0, 503, "/readyz on a full disk: {}", not_ready.1);
    assert_eq!(not_ready.1["status"], "unavailable", "{}", not_ready.1);
    assert!(
        not_ready.1["reason"].as_str().is_some_and(|reason| !reason.is_empty()),
        "/readyz gives no reason: {}",
        not_ready.1
    );
}

/// Polls `/readyz` until it is `200 {"status": "ready"}`; returns how long that took.
async fn ready_again(server: &Server, within: Duration) -> Duration {
    let since = Instant::now();
    loop {
        let (status, body) = readiness(server).await;
        if status == 200 {
            assert_eq!(body, json!({"status": "ready", "channels": {"web": {"state": "up"}}}));
            return since.elapsed();
        }
        assert!(
            since.elapsed() < within,
            "/readyz still answers {status} {body} {within:?} after the disk has room again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_reported_refused_and_recovered_from_without_a_restart() {
    // Declared first, so dropped last: askgate is killed before the unmount.
    let disk = Tmpfs::mount("2m");
    let mut server = Server::start_with_data_dir(disk.path(), "", "");
    assert_eq!(
        readiness(&server).await,
        (200, json!({"status": "ready", "channels": {"web": {"state": "up"}}}))
    );

    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(id_of(&server.create(&ask_body(3600)).await));
    }
    server.pending_on_page(ME_KEY, ids.len()).await;
    let before = [(ids[0].clone(), 1), (ids[1].clone(), 2)];
    for (id, index) in &before {
        let (status, body) = server.web_choose(ME_KEY, id, "deploy_target", *index).await;
        assert_eq!((status, &body["status"]), (200, &json!("answered")), "{body}");
    }
    // The deliveries are stored just after the questions show; let them land.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let filler: PathBuf = disk.path().join("filler");
    let filler_size = fill(&filler);
    let id = &ids[2];
    let answer_url = server.url(&format!("/web/{ME_KEY}/api/questions/{id}/answer"));

    refused_while_full(&server, &answer_url, filler_size).await;
    let still = server.question(id).await;
    assert_eq!(still["status"], "pending", "the refused answer is not stored: {still}");

    std::fs::remove_file(&filler).expect("the filler file can be removed");
    let ready_after = ready_again(&server, Duration::from_secs(10)).await;

    let accepted = call(server.http().post(&answer_url).json(&choice(0)))
        .await
        .expect("askgate answers the web answer");
    assert_eq!(
        (accepted.0, &accepted.1["status"]),
        (200, &json!("answered")),
        "the same answer once the disk has room: {}",
        accepted.1
    );
    let answered = server.question(id).await;
    assert_eq!(answered["status"], "answered");
    assert_eq!(answered["result"], answered_with(0));
    for (id, index) in &before {
        let resource = server.question(id).await;
        assert_eq!(resource["status"], "answered", "{resource}");
        assert_eq!(resource["result"], answered_with(*index), "{resource}");
    }
    let created = server.create(&ask_body(3600)).await;
    assert_eq!(server.question(&id_of(&created)).await["status"], "pending");
    assert_no_panic(&mut server, "after the disk had room again");
    println!(
        "disk has room again: ready after {:.2} s, the refused answer stored, {} earlier answers kept",
        ready_after.as_secs_f64(),
        before.len()
    );
}

/// `POST /v1/questions` with a 10-minute question.
async fn create(server: &Server) -> (u16, Value) {
    let request = server.http().post(server.url("/v1/questions")).bearer_auth(AGENT_TOKEN);
    call(request.json(&ask_body(600))).await.expect("askgate answers")
}

/// The database file deleted or replaced under a running askgate (a restore
/// over it, a clean-up script): nothing more is acknowledged into a file
/// nobody will read, `/readyz` says why, and a restart opens the file that
/// is there now.
#[tokio::test]
async fn a_database_file_replaced_while_running_is_refused_until_a_restart() {
    let mut server = Server::start();
    let (status, created) = create(&server).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(readiness(&server).await.0, 200);

    // A restore puts another file at the same path (here: a copy of it).
    let db = server.data_dir().join("askgate.db");
    let copy = db.with_extension("restored");
    std::fs::copy(&db, &copy).expect("the database file is copied");
    std::fs::rename(&copy, &db).expect("the copy replaces it");

    let (status, ready) = readiness(&server).await;
    assert_eq!(status, 503, "{ready}");
    assert!(
        ready["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("replaced")),
        "{ready}"
    );
    let answer_url = server.url(&format!("/web/{ME_KEY}/api/questions/{}/answer", id_of(&created)));
    let (status, refused) = call(server.http().post(&answer_url).json(&choice(1)))
        .await
        .expect("askgate answers");
    assert_eq!(
        status, 503,
        "an answer is not acknowledged into a replaced file: {refused}"
    );
    assert_eq!(refused["error"]["code"], "store_unavailable");

    // A restart opens the file that is there now, and all is well again.
    server.kill();
    server.restart();
    assert_eq!(readiness(&server).await.0, 200);
    let (status, again) = create(&server).await;
    assert_eq!(status, 201, "{again}");
    assert_no_panic(&mut server, "after the file was replaced");
}

/// The database file written over in place under a running askgate (`cp
/// other.db askgate.db` onto the live file, `: > askgate.db`): the file
/// keeps its inode, so only what is in it tells. Nothing more is
/// acknowledged, `/readyz` says why until a restart, and the file that is
/// there now is left as it was put there.
async fn refused_in_place(server: &Server, created: &Value, why: &str) {
    for _ in 0..2 {
        let (status, ready) = readiness(server).await;
        assert_eq!(status, 503, "{ready}");
        let reason = ready["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("changed by another program") && reason.contains(why) && reason.contains("restart"),
            "/readyz: {ready}"
        );
        let (status, refused) = create(server).await;
        assert_eq!(status, 503, "a question acknowledged into a changed file: {refused}");
        assert_eq!(refused["error"]["code"], "store_unavailable", "{refused}");
        let answer_url = server.url(&format!("/web/{ME_KEY}/api/questions/{}/answer", id_of(created)));
        let (status, refused) = call(server.http().post(&answer_url).json(&choice(1)))
            .await
            .expect("askgate answers");
        assert_eq!(status, 503, "an answer acknowledged into a changed file: {refused}");
        assert_eq!(refused["error"]["code"], "store_unavailable", "{refused}");
    }
}

#[tokio::test]
async fn a_database_file_overwritten_in_place_by_another_database_is_refused_until_a_restart() {
    // Another askgate's database (its own identity), closed cleanly.
    let mut other = Server::start();
    let (status, theirs) = create(&other).await;
    assert_eq!(status, 201, "{theirs}");
    other.terminate(Duration::from_secs(15)).await;
    let restored = std::fs::read(other.data_dir().join("askgate.db")).expect("the other database reads");

    let mut server = Server::start();
    let (status, created) = create(&server).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(readiness(&server).await.0, 200);
    let db = server.data_dir().join("askgate.db");
    std::fs::write(&db, &restored).expect("the other database is copied over the file");

    refused_in_place(&server, &created, "another database").await;
    assert_no_panic(&mut server, "after the file was overwritten");
    server.kill();
    assert!(
        std::fs::read(&db).expect("the file reads") == restored,
        "askgate wrote into the database copied over its file"
    );

    // A restart without the old `-wal` and `-shm` files (a restore's rule)
    // serves the database that was put there.
    for stale in ["askgate.db-wal", "askgate.db-shm"] {
        let _ = std::fs::remove_file(server.data_dir().join(stale));
    }
    server.restart();
    assert_eq!(readiness(&server).await.0, 200);
    let (status, _) = server
        .get(&format!("/v1/questions/{}", id_of(&created)), Some(AGENT_TOKEN))
        .await;
    assert_eq!(
        status, 404,
        "the question of the file that was replaced is not in the restored one"
    );
    let (status, again) = create(&server).await;
    assert_eq!(status, 201, "{again}");
}

#[tokio::test]
async fn a_database_file_truncated_under_askgate_is_refused_until_a_restart() {
    let mut server = Server::start();
    let (status, created) = create(&server).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(readiness(&server).await.0, 200);
    let db = server.data_dir().join("askgate.db");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .and_then(|file| file.set_len(0))
        .expect("the file is truncated");

    refused_in_place(&server, &created, "truncated to 0 bytes").await;
    assert_no_panic(&mut server, "after the file was truncated");
    server.kill();
    assert_eq!(
        std::fs::metadata(&db).expect("the file is there").len(),
        0,
        "askgate wrote into the truncated file"
    );
}

/// The largest question askgate takes: three questions of 300 characters,
/// four options each with a 64-character label and a 150-character
/// description, in 3-byte characters (about 10 KB of text).
fn large_ask_body() -> Value {
    let text = |start: String, chars: usize| {
        let fill = chars - start.chars().count();
        start + "漢".repeat(fill).as_str()
    };
    let questions: Vec<Value> = (0..3)
        .map(|question| {
            let options: Vec<Value> = (0..4)
                .map(|option| {
                    json!({
                        "label": text(format!("{question}.{option} "), 64),
                        "description": text(String::new(), 150),
                    })
                })
                .collect();
            json!({
                "id": format!("q{question}"),
                "header": format!("Part {question}"),
                "question": text(format!("Question {question}: "), 300),
                "options": options,
            })
        })
        .collect();
    json!({"to": "me", "questions": questions, "timeoutSeconds": 3600})
}

/// `POST /v1/questions` with [`large_ask_body`].
async fn create_large(server: &Server) -> (u16, Value) {
    let request = server.http().post(server.url("/v1/questions")).bearer_auth(AGENT_TOKEN);
    call(request.json(&large_ask_body())).await.expect("askgate answers")
}

/// A disk with room for a small write but not for a question (`/readyz`'s
/// own small write still fitted, so it said ready while every create
/// failed): readiness follows the writes agents ask for, its probe never
/// outweighs them, and a question stored says ready again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_with_room_for_small_writes_only_is_not_ready_until_a_question_is_stored() {
    // Declared first, so dropped last: askgate is killed before the unmount.
    let disk = Tmpfs::mount("3m");
    let mut server = Server::start_with_data_dir(disk.path(), "", "");
    for _ in 0..3 {
        let (status, created) = create_large(&server).await;
        assert_eq!(status, 201, "{created}");
    }
    assert_eq!(ready_status(&server).await, (200, json!("ready")));

    // Three pages' room: a small write fits, a question does not.
    let spare = disk.path().join("spare");
    std::fs::write(&spare, vec![0_u8; 12 * 1024]).expect("the spare file is written");
    let filler = disk.path().join("filler");
    fill(&filler);
    std::fs::remove_file(&spare).expect("the spare file is removed");

    let (status, refused) = create_large(&server).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "store_unavailable", "{refused}");
    let (status, ready) = readiness(&server).await;
    println!(
        "room for small writes only: POST /v1/questions 503 {}; /readyz {status} {ready}",
        refused["error"]["code"]
    );
    assert_eq!(status, 503, "/readyz after a create failed: {ready}");
    assert_eq!(ready["status"], "unavailable", "{ready}");
    let reason = ready["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("full") || reason.contains("disk"), "/readyz: {ready}");
    // Creates keep failing between probes: still not ready.
    for _ in 0..3 {
        assert_eq!(create_large(&server).await.0, 503);
        assert_eq!(readiness(&server).await.0, 503);
    }
    // No create for a while: readiness tries its own write, as large as a
    // question, and that does not fit either.
    for _ in 0..2 {
        let (status, ready) = readiness(&server).await;
        assert_eq!(status, 503, "/readyz with no create since: {ready}");
    }

    // Room again: the next question is stored, and readiness follows it.
    std::fs::remove_file(&filler).expect("the filler file can be removed");
    let (status, created) = create_large(&server).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(ready_status(&server).await, (200, json!("ready")));
    assert_eq!(server.question(&id_of(&created)).await["status"], "pending");
    assert_no_panic(&mut server, "after the disk had room again");
}
