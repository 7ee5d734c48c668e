//! `kill -9` on PostgreSQL under load (issue 28): the guard that askgate's
//! PostgreSQL cycle path gives up no acknowledged answer, whatever it is
//! optimised into.
//!
//! The scenario: two `askgate serve` on one database (`[store] kind =
//! "postgres"`, a schema of the test's own), as deployments run them. 48
//! agents ask at once, each eight questions one after the other, half of them
//! with `POST /v1/questions` then `GET /v1/questions/{id}?wait=N`, half with
//! the blocking `POST /v1/ask`, every ask with an `Idempotency-Key`. 16
//! people answer on the web page (`/web/{key}/api/...`) of either replica
//! at once, often the same question, each answer an option and a text of
//! its own, so that a result names the one answer it holds. While that
//! runs, the replicas in turn are killed (`SIGKILL`) and restarted, four
//! kills in all: the requests the one killed was serving are cut off, and
//! the agents whose requests were cut ask (with the same key) or wait
//! again, on the other replica or on the restarted one.
//!
//! What is checked, whatever the timing:
//!
//! - an answer acknowledged (`200 {"status": "answered"}`) is its
//!   question's final result exactly, option and text, read through either
//!   replica; no question acknowledges two answers;
//! - an answer refused (`409 question_ended`, or `503`, which says nothing
//!   was changed) is never a result;
//! - an answer whose request the kill cut off (in doubt; nobody answers
//!   that question again until the replica is back) is either the result,
//!   exactly, or the question is still pending and takes another answer
//!   after the restart;
//! - every question ends once: it is answered, with the result and the
//!   `resolvedAt` its waiting agent was given; the store counts no question
//!   pending (its per-agent and per-recipient counters, which a question
//!   ended twice would take below 0, are back to 0); a key retried after a
//!   cut-off reply names the question it created, and the database holds
//!   no question that no agent asked;
//! - every agent gets its question's final result, also one whose wait or
//!   blocking ask the kill cut off;
//! - no wait runs to its end with the question long answered (a replica
//!   that missed the change);
//! - neither replica panics, and no request gets a reply other than those.
//!
//! Each kill comes after a number of acknowledged answers (seeded:
//! `ASKGATE_PG_KILL_SEED` repeats the numbers, not the timing), short of
//! the questions asked, so the kills fall while questions are still being
//! asked and answered. Bounded: 384 questions, 10 to 25 s of load on a
//! 2-core machine; every wait has a deadline.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use askgate_testkit::postgres::Schema;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use support::{AGENT_TOKEN, ME_KEY, Server, now_millis};

/// Agents asking at once.
const AGENTS: usize = 48;
/// The questions each agent asks, one after the other.
const QUESTIONS_PER_AGENT: usize = 8;
/// Every question of the run.
const QUESTIONS: usize = AGENTS * QUESTIONS_PER_AGENT;
/// People answering on the page at once.
const ANSWERERS: usize = 16;
/// How many times a replica is killed, the two in turn.
const KILLS: usize = 4;
/// The options of the first question, by index.
const LABELS: [&str; 3] = ["Staging (Recommended)", "Production", "Canary"];
/// `?wait=` of an agent's `GET`: far longer than a question stays pending
/// under this load.
const WAIT_SECONDS: u64 = 30;
/// A wait that runs to its end with the question ended longer ago than
/// this missed its wake-up: no replica, however busy, takes that long to
/// hear of an answer.
const LOST_WAKE_UP_MILLIS: i64 = 15_000;
/// How long the whole run may take; it takes seconds.
const PATIENCE: Duration = Duration::from_secs(120);
/// Between an agent's retries of a request that was cut off.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Two questions for `me`: an option to choose, and one answered in the
/// person's own words. Ten minutes: none expires during the run.
fn ask_body() -> Value {
    json!({
        "to": "me",
        "questions": [
            {
                "id": "deploy_target",
                "header": "Deploy",
                "question": "Where should this build go?",
                "options": LABELS.map(|label| json!({"label": label})),
            },
            {
                "id": "notes",
                "header": "Notes",
                "question": "Anything the release notes should say?",
                "options": [{"label": "Nothing"}, {"label": "Known issues"}],
            }
        ],
        "timeoutSeconds": 600
    })
}

/// One answer given on the page: the option chosen for `deploy_target`
/// and the text for `notes`, unique to this answer.
#[derive(Debug, Clone)]
struct Attempt {
    question: String,
    option: usize,
    text: String,
    outcome: Outcome,
}

impl Attempt {
    /// The body of `POST /web/{key}/api/questions/{id}/answer`.
    fn body(option: usize, text: &str) -> Value {
        json!({"answers": {
            "deploy_target": {"options": [option], "text": null},
            "notes": {"options": [], "text": text},
        }})
    }

    /// The tool result of the question answered with this.
    fn result(&self) -> Value {
        json!({"status": "answered", "answers": {"answers": {
            "deploy_target": [LABELS[self.option]],
            "notes": [self.text],
        }}})
    }
}

/// What became of an answer's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// `200 {"status": "answered"}`: askgate took it.
    Acknowledged,
    /// `409 question_ended`: another answer was there first.
    Ended,
    /// `503 store_unavailable`: refused, nothing changed.
    Unavailable,
    /// No reply: the kill cut the request off (or any other reply, which is
    /// also reported as a problem).
    InDoubt,
}

/// What an agent was given for one question.
#[derive(Debug)]
struct Got {
    id: String,
    /// The tool result (the resource's `result` for a `GET`).
    result: Value,
    /// The resource the agent's `GET ?wait` returned; `None` for the blocking ask.
    resource: Option<Value>,
}

fn lock<T>(shared: &Mutex<T>) -> MutexGuard<'_, T> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the agents, the people and the test share.
struct Load {
    http: reqwest::Client,
    /// Each replica's base URL; `None` while it is down (taken out before
    /// the kill, so that no request goes to a port another process may
    /// have by then).
    bases: Mutex<[Option<String>; 2]>,
    /// Every answer given on the page, by its text.
    attempts: Mutex<HashMap<String, Attempt>>,
    /// Questions with an answer in doubt: nobody answers them again until
    /// they are settled, after the restart.
    set_aside: Mutex<HashSet<String>>,
    /// Answers acknowledged so far (the kills come after so many).
    acknowledged: AtomicUsize,
    /// Each agent's question now, while it waits (for a failure's report).
    current: Mutex<Vec<Option<String>>>,
    /// Agents that have asked all their questions.
    finished: AtomicUsize,
    /// Requests the kills cut off, by agents and by people.
    cut: AtomicUsize,
    /// `GET ?wait` that ran out with the question still pending.
    waits_ran_out: AtomicUsize,
    /// Every reply no request here should get.
    unexpected: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Load {
    fn new(replicas: &[Server; 2]) -> Self {
        Self {
            http: reqwest::Client::builder()
                .no_proxy()
                // Beyond the longest wait: a request that hangs fails the run, not the machine.
                .timeout(Duration::from_secs(WAIT_SECONDS + 30))
                .build()
                .expect("an HTTP client"),
            bases: Mutex::new(replicas.each_ref().map(|server| Some(server.base().to_owned()))),
            attempts: Mutex::default(),
            set_aside: Mutex::default(),
            acknowledged: AtomicUsize::new(0),
            current: Mutex::new(vec![None; AGENTS]),
            finished: AtomicUsize::new(0),
            cut: AtomicUsize::new(0),
            waits_ran_out: AtomicUsize::new(0),
            unexpected: Mutex::default(),
            stop: AtomicBool::new(false),
        }
    }

    /// `preferred`'s base URL, else the other replica's; `None` when
    /// neither is up.
    fn base(&self, preferred: usize) -> Option<String> {
        let bases = lock(&self.bases);
        bases[preferred].clone().or_else(|| bases[1 - preferred].clone())
    }

    fn unexpected(&self, what: String) {
        lock(&self.unexpected).push(what);
    }
}

/// Sends a request and reads its status and body (JSON, or the text as a
/// JSON string); a transport error (askgate killed) is returned, not a
/// panic, and so is a 5xx: the callers decide what each means.
async fn call(request: reqwest::RequestBuilder) -> Result<(u16, Value), reqwest::Error> {
    let response = request.send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, body))
}

fn id_of(resource: &Value) -> String {
    resource["id"].as_str().unwrap_or_default().to_owned()
}

/// An agent: asks its questions one after the other, through its replica
/// (the other while that one is down), every ask keyed so that a retry
/// after a cut-off reply is the same question.
async fn agent(load: Arc<Load>, n: usize) -> Vec<Got> {
    let mut got = Vec::new();
    for q in 0..QUESTIONS_PER_AGENT {
        let key = format!("pg-kill-agent-{n}-{q}");
        // Half of each replica's agents block, half poll.
        let answer = if (n / 2).is_multiple_of(2) {
            ask_then_wait(&load, n, &key).await
        } else {
            ask_blocking(&load, n, &key).await
        };
        lock(&load.current)[n] = None;
        match answer {
            Some(answer) => got.push(answer),
            None => break,
        }
    }
    load.finished.fetch_add(1, Ordering::Relaxed);
    got
}

/// `POST /v1/questions`, then `GET /v1/questions/{id}?wait=N` until it
/// ends; `None` when askgate gave a reply it should not have (reported).
async fn ask_then_wait(load: &Load, n: usize, key: &str) -> Option<Got> {
    let id = loop {
        let Some(base) = load.base(n % 2) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let request = load
            .http
            .post(format!("{base}/v1/questions"))
            .bearer_auth(AGENT_TOKEN)
            .header("Idempotency-Key", key)
            .json(&ask_body());
        match call(request).await {
            // 200: a retry found the question its first try created.
            Ok((201 | 200, resource)) if resource["status"] == "pending" => break id_of(&resource),
            // ... and already ended: the kill cut the first try's answer
            // off, and a person answered what the page showed before the
            // retry came (the people answer at once). Its result is here.
            Ok((200, resource)) if resource["result"].is_object() => {
                return Some(Got {
                    id: id_of(&resource),
                    result: resource["result"].clone(),
                    resource: Some(resource),
                });
            }
            Ok((503, _)) => tokio::time::sleep(RETRY_PAUSE).await,
            Ok((status, body)) => {
                load.unexpected(format!("agent {n}: POST /v1/questions ({key}): {status} {body}"));
                return None;
            }
            Err(_) => {
                load.cut.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    };
    lock(&load.current)[n] = Some(id.clone());
    loop {
        let Some(base) = load.base(n % 2) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let request = load
            .http
            .get(format!("{base}/v1/questions/{id}?wait={WAIT_SECONDS}"))
            .bearer_auth(AGENT_TOKEN);
        let waited = Instant::now();
        match call(request).await {
            Ok((200, resource)) if resource["status"] == "pending" => {
                load.waits_ran_out.fetch_add(1, Ordering::Relaxed);
            }
            Ok((200, resource)) => {
                // A wait that ran to its end although the question had
                // ended long before: the replica missed the change (a lost
                // notification) and read the question only at the deadline.
                let ended = support::rfc3339_millis(resource["resolvedAt"].as_str().unwrap_or_default());
                if waited.elapsed() >= Duration::from_secs(WAIT_SECONDS) && now_millis() - ended > LOST_WAKE_UP_MILLIS {
                    load.unexpected(format!(
                        "agent {n}: the wait on {id} ran its {WAIT_SECONDS} s, though the question ended {} ms \
                         before it returned",
                        now_millis() - ended
                    ));
                }
                return Some(Got {
                    id,
                    result: resource["result"].clone(),
                    resource: Some(resource),
                });
            }
            Ok((status, body)) => {
                load.unexpected(format!("agent {n}: GET /v1/questions/{id}?wait: {status} {body}"));
                return None;
            }
            Err(_) => {
                load.cut.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

/// The blocking `POST /v1/ask`, asked again with the same key when the
/// kill cuts it off (which re-attaches to the question, or returns its
/// result when it has ended); `None` when askgate gave a reply it should
/// not have (reported).
async fn ask_blocking(load: &Load, n: usize, key: &str) -> Option<Got> {
    let mut known: Option<String> = None;
    loop {
        let Some(base) = load.base(n % 2) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let sent = load
            .http
            .post(format!("{base}/v1/ask"))
            .bearer_auth(AGENT_TOKEN)
            .header("Idempotency-Key", key)
            .json(&ask_body())
            .send()
            .await;
        let Ok(response) = sent else {
            load.cut.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("askgate-question-id")
            .and_then(|id| id.to_str().ok())
            .map(str::to_owned);
        let Ok(text) = response.text().await else {
            load.cut.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        if status == 503 {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        }
        let (200, Some(id)) = (status, id) else {
            load.unexpected(format!("agent {n}: POST /v1/ask ({key}): {status} {text}"));
            return None;
        };
        if known.get_or_insert_with(|| id.clone()) != &id {
            load.unexpected(format!(
                "agent {n}: the key {key} asked {} first, then {id}",
                known.unwrap_or_default()
            ));
            return None;
        }
        lock(&load.current)[n] = Some(id.clone());
        return match serde_json::from_str::<Value>(text.trim()) {
            Ok(result) if result["status"] == "answered" => Some(Got {
                id,
                result,
                resource: None,
            }),
            _ => {
                load.unexpected(format!("agent {n}: POST /v1/ask ({key}) ended with {text:?}"));
                None
            }
        };
    }
}

/// A person on the page: reads the pending questions on either replica,
/// answers a few of them (chosen at random, so that people often answer
/// the same one) on either replica, and records what became of each answer.
async fn answerer(load: Arc<Load>, n: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut given = 0_usize;
    while !load.stop.load(Ordering::Relaxed) {
        let Some(base) = load.base(rng.random_range(0..2)) else {
            tokio::time::sleep(RETRY_PAUSE).await;
            continue;
        };
        let mut pending: Vec<String> = match call(load.http.get(format!("{base}/web/{ME_KEY}/api/state"))).await {
            Ok((200, state)) => state["pending"].as_array().into_iter().flatten().map(id_of).collect(),
            Ok((status, body)) => {
                load.unexpected(format!("answerer {n}: the page state: {status} {body}"));
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        if pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        // A few per read of the state, as a person works down the list.
        for _ in 0..3 {
            if pending.is_empty() {
                break;
            }
            let id = pending.swap_remove(rng.random_range(0..pending.len()));
            if lock(&load.set_aside).contains(&id) {
                continue;
            }
            let option = rng.random_range(0..LABELS.len());
            let text = format!("answer {n}.{given}");
            given += 1;
            give(&load, rng.random_range(0..2), id, option, text).await;
        }
    }
}

/// Answers `id` on the page of replica `preferred` (of the other while it
/// is down) with `option` and `text`; records the attempt, and sets the
/// question aside when the answer is in doubt.
async fn give(load: &Load, preferred: usize, id: String, option: usize, text: String) {
    let Some(base) = load.base(preferred) else {
        return;
    };
    let url = format!("{base}/web/{ME_KEY}/api/questions/{id}/answer");
    let outcome = match call(load.http.post(url).json(&Attempt::body(option, &text))).await {
        Ok((200, body)) if body == json!({"status": "answered"}) => Outcome::Acknowledged,
        Ok((409, body)) if body["error"]["code"] == "question_ended" => Outcome::Ended,
        Ok((503, body)) if body["error"]["code"] == "store_unavailable" => Outcome::Unavailable,
        Ok((status, body)) => {
            load.unexpected(format!("the answer {text:?} to {id}: {status} {body}"));
            Outcome::InDoubt
        }
        Err(_) => {
            load.cut.fetch_add(1, Ordering::Relaxed);
            Outcome::InDoubt
        }
    };
    if outcome == Outcome::InDoubt {
        lock(&load.set_aside).insert(id.clone());
    }
    let attempt = Attempt {
        question: id,
        option,
        text: text.clone(),
        outcome,
    };
    lock(&load.attempts).insert(text, attempt);
    if outcome == Outcome::Acknowledged {
        load.acknowledged.fetch_add(1, Ordering::Relaxed);
    }
}

/// The questions set aside, settled once the replica killed is back: each
/// is found ended (by the answer in doubt, or by one that was there first)
/// or answered now.
#[derive(Default)]
struct Settled {
    handled: HashSet<String>,
    /// Found ended.
    found_ended: usize,
    /// Found pending, and answered now.
    answered_after: usize,
}

impl Settled {
    /// Settles the questions set aside so far, through the replicas at
    /// `bases` (neither is killed meanwhile).
    async fn settle(mut self, bases: [String; 2], load: Arc<Load>) -> Self {
        let aside: Vec<String> = lock(&load.set_aside).difference(&self.handled).cloned().collect();
        for id in aside {
            self.handled.insert(id.clone());
            let read = load
                .http
                .get(format!("{}/v1/questions/{id}", bases[0]))
                .bearer_auth(AGENT_TOKEN);
            match call(read).await {
                Ok((200, resource)) if resource["status"] == "pending" => {}
                Ok((200, _)) => {
                    self.found_ended += 1;
                    continue;
                }
                reply => {
                    load.unexpected(format!("reading {id} after a restart: {reply:?}"));
                    continue;
                }
            }
            self.answered_after += 1;
            let text = format!("after a restart {id}");
            let url = format!("{}/web/{ME_KEY}/api/questions/{id}/answer", bases[1]);
            // Ended: a person who listed it before it was set aside answered first.
            let outcome = match call(load.http.post(url).json(&Attempt::body(0, &text))).await {
                Ok((200, _)) => Outcome::Acknowledged,
                Ok((409, body)) if body["error"]["code"] == "question_ended" => Outcome::Ended,
                reply => {
                    load.unexpected(format!("the answer after a restart to {id}: {reply:?}"));
                    Outcome::InDoubt
                }
            };
            let attempt = Attempt {
                question: id,
                option: 0,
                text: text.clone(),
                outcome,
            };
            lock(&load.attempts).insert(text, attempt);
        }
        self
    }
}

/// The questions agents still wait on, each as both replicas read it,
/// with every answer given to it and what became of it.
async fn still_waiting(replicas: &[Server; 2], load: &Load) -> Vec<String> {
    let waiting: Vec<String> = lock(&load.current).iter().flatten().cloned().collect();
    let mut said = Vec::new();
    for id in waiting {
        let mut reads = Vec::new();
        for server in replicas {
            let read = server.http().get(server.url(&format!("/v1/questions/{id}")));
            reads.push(match call(read.bearer_auth(AGENT_TOKEN)).await {
                Ok((status, resource)) => format!("{status} {} {}", resource["status"], resource["result"]),
                Err(error) => error.to_string(),
            });
        }
        let given: Vec<String> = lock(&load.attempts)
            .values()
            .filter(|attempt| attempt.question == id)
            .map(|attempt| format!("{:?} {:?}", attempt.text, attempt.outcome))
            .collect();
        let aside = lock(&load.set_aside).contains(&id);
        said.push(format!(
            "{id}: read {reads:?}; set aside {aside}; answers given {given:?}"
        ));
    }
    said
}

/// Fails the test if askgate's log so far shows a panic.
fn assert_no_panic(server: &mut Server, when: &str) {
    let stderr = server.stderr();
    assert!(
        !stderr.contains("panicked"),
        "askgate panicked ({when}); its stderr:\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_replica_under_load_loses_no_acknowledged_answer() {
    let (seed, mut rng) = support::seeded_rng("ASKGATE_PG_KILL_SEED", "when the kills come and who answers what");

    let schema = Schema::create().await;
    // `max_connections` left at its default, as a deployment runs.
    let store = format!("\n[store]\nkind = \"postgres\"\nurl = \"{}\"\n", schema.url());
    let mut replicas = [Server::start_with("", &store), Server::start_with("", &store)];
    let load = Arc::new(Load::new(&replicas));
    let started = Instant::now();
    let agents: Vec<_> = (0..AGENTS).map(|n| tokio::spawn(agent(load.clone(), n))).collect();
    let answerers: Vec<_> = (0..ANSWERERS)
        .map(|n| tokio::spawn(answerer(load.clone(), n, rng.random())))
        .collect();
    let (kills, settled) = kill_in_turn(&mut replicas, &load, &mut rng, started + PATIENCE).await;
    let load_time = started.elapsed();
    load.stop.store(true, Ordering::Relaxed);
    let mut asked = Vec::new();
    for agent in agents {
        asked.extend(agent.await.expect("an agent does not panic"));
    }
    for answerer in answerers {
        tokio::time::timeout(Duration::from_secs(WAIT_SECONDS + 30), answerer)
            .await
            .expect("the people stop")
            .expect("a person does not panic");
    }
    for server in &mut replicas {
        assert_no_panic(server, "after the run");
    }

    let attempts = std::mem::take(&mut *lock(&load.attempts));
    let mut audit = Audit::of(&replicas, &schema, &asked, &attempts).await;
    let count = |outcome| attempts.values().filter(|a| a.outcome == outcome).count();
    println!(
        "kill -9 ×{KILLS} ({}): {} questions, {} answers acknowledged, {} refused as ended, {} refused 503, \
         {} in doubt ({} the result in the end; {} questions set aside found ended, {} answered after a \
         restart); {} requests cut off, {} waits ran out; {} lost, {} changed, {} doubled ({:.1} s)",
        kills.join("; "),
        asked.len(),
        count(Outcome::Acknowledged),
        count(Outcome::Ended),
        count(Outcome::Unavailable),
        count(Outcome::InDoubt),
        audit.in_doubt_won,
        settled.found_ended,
        settled.answered_after,
        load.cut.load(Ordering::Relaxed),
        load.waits_ran_out.load(Ordering::Relaxed),
        audit.lost,
        audit.changed,
        audit.doubled,
        load_time.as_secs_f64()
    );
    let mut problems = std::mem::take(&mut *lock(&load.unexpected));
    problems.append(&mut audit.problems);
    assert!(
        problems.is_empty(),
        "{} problem(s) (seed {seed}):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The scenario happened: every question asked and answered, and the
    // kills cut requests off (agents waiting on the killed replica, at least).
    assert_eq!(asked.len(), QUESTIONS);
    assert!(
        load.cut.load(Ordering::Relaxed) > 0,
        "the kills cut no request off: they missed the load"
    );
}

/// Kills the replicas in turn, each after so many more answers were
/// acknowledged since the last restart, and restarts it; settles the
/// questions set aside after each restart (while the load runs on, and
/// before the next kill), then until every agent has its answers. What
/// each kill met, and how the questions set aside were settled.
async fn kill_in_turn(
    replicas: &mut [Server; 2],
    load: &Arc<Load>,
    rng: &mut StdRng,
    deadline: Instant,
) -> (Vec<String>, Settled) {
    let bases = |replicas: &[Server; 2]| replicas.each_ref().map(|server| server.base().to_owned());
    let mut settling = tokio::spawn(Settled::default().settle(bases(replicas), load.clone()));
    let mut kills = Vec::new();
    for kill in 0..KILLS {
        let after = load.acknowledged.load(Ordering::Relaxed) + rng.random_range(QUESTIONS / 24..QUESTIONS / 10);
        while load.acknowledged.load(Ordering::Relaxed) < after {
            assert!(
                Instant::now() < deadline,
                "the load stalled at {} acknowledged answers, short of {after}",
                load.acknowledged.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let settled = settling.await.expect("settling does not panic");
        let replica = kill % 2;
        let server = &mut replicas[replica];
        assert_no_panic(server, "before its kill");
        lock(&load.bases)[replica] = None;
        server.kill();
        let (acknowledged, done) = (
            load.acknowledged.load(Ordering::Relaxed),
            load.finished.load(Ordering::Relaxed),
        );
        let down = Instant::now();
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..300))).await;
        // Blocks until askgate prints its listening line; the load runs on.
        tokio::task::block_in_place(|| server.restart());
        kills.push(format!(
            "{acknowledged} acknowledged, {done} agents done, down {:.1} s",
            down.elapsed().as_secs_f64()
        ));
        lock(&load.bases)[replica] = Some(server.base().to_owned());
        settling = tokio::spawn(settled.settle(bases(replicas), load.clone()));
    }
    let mut settled = settling.await.expect("settling does not panic");
    while load.finished.load(Ordering::Relaxed) < AGENTS {
        // An answer cut off by the last kill may be reported only now.
        settled = settled.settle(bases(replicas), load.clone()).await;
        assert!(
            Instant::now() < deadline,
            "{} of {AGENTS} agents still wait after {PATIENCE:?}:\n{}",
            AGENTS - load.finished.load(Ordering::Relaxed),
            still_waiting(replicas, load).await.join("\n")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (kills, settled)
}

/// The fields of a question resource that say how and when it ended.
const ENDING: [&str; 7] = [
    "status",
    "createdAt",
    "expiresAt",
    "resolvedAt",
    "answeredBy",
    "resolution",
    "result",
];

/// What the audit found.
#[derive(Default)]
struct Audit {
    /// Every discrepancy, as a sentence.
    problems: Vec<String>,
    /// Each question as replica 0 reads it in the end, by id.
    finals: HashMap<String, Value>,
    /// Acknowledged answers whose question is not answered.
    lost: usize,
    /// Acknowledged answers whose question holds another answer.
    changed: usize,
    /// Questions that acknowledged more than one answer.
    doubled: usize,
    /// Questions whose result is an answer in doubt.
    in_doubt_won: usize,
}

impl Audit {
    /// Reads every question back through both replicas and from the
    /// database and compares with what the agents were given and the
    /// people were told.
    async fn of(replicas: &[Server; 2], schema: &Schema, asked: &[Got], attempts: &HashMap<String, Attempt>) -> Self {
        let mut audit = Self::default();
        for got in asked {
            audit.question(replicas, got, attempts).await;
        }
        audit.acknowledged(attempts);
        audit.database(replicas, schema, asked).await;
        audit
    }

    /// One question: the same through both replicas, answered with one
    /// answer given to it as given (acknowledged or in doubt), the result
    /// its agent was given.
    async fn question(&mut self, replicas: &[Server; 2], got: &Got, attempts: &HashMap<String, Attempt>) {
        let id = &got.id;
        let (here, there) = (replicas[0].question(id).await, replicas[1].question(id).await);
        // What the question's end is (its deliveries may still be marked
        // finished after it ended, by either replica).
        let ending = |resource: &Value| ENDING.map(|field| resource[field].clone());
        if ending(&here) != ending(&there) {
            self.problems
                .push(format!("the replicas disagree on {id}:\n  {here}\n  {there}"));
        }
        if here["status"] != "answered" {
            self.problems
                .push(format!("question {id} ended {}: {here}", here["status"]));
        }
        // The one answer the result holds, by its text.
        let text = here["result"]["answers"]["answers"]["notes"][0]
            .as_str()
            .unwrap_or_default();
        match attempts.get(text) {
            Some(winner) if winner.question == *id && here["result"] == winner.result() => {
                self.in_doubt_won += usize::from(winner.outcome == Outcome::InDoubt);
                if !matches!(winner.outcome, Outcome::Acknowledged | Outcome::InDoubt) {
                    self.problems.push(format!(
                        "question {id} holds the answer {text:?}, which was refused ({:?})",
                        winner.outcome
                    ));
                }
            }
            _ => self
                .problems
                .push(format!("question {id} holds no answer given to it as given: {here}")),
        }
        if got.result != here["result"] {
            self.problems.push(format!(
                "the agent of {id} was given {}, the question holds {}",
                got.result, here["result"]
            ));
        }
        if let Some(seen) = &got.resource
            && (seen["resolvedAt"] != here["resolvedAt"] || seen["resolution"] != here["resolution"])
        {
            self.problems.push(format!(
                "question {id} ended as {} {}, now it reads {} {}",
                seen["resolvedAt"], seen["resolution"], here["resolvedAt"], here["resolution"]
            ));
        }
        self.finals.insert(id.clone(), here);
    }

    /// Every acknowledged answer is its question's result, and only one
    /// per question.
    fn acknowledged(&mut self, attempts: &HashMap<String, Attempt>) {
        let mut by_question: BTreeMap<&str, Vec<&Attempt>> = BTreeMap::new();
        for attempt in attempts.values().filter(|a| a.outcome == Outcome::Acknowledged) {
            by_question.entry(&attempt.question).or_default().push(attempt);
        }
        for (id, acknowledged) in by_question {
            if acknowledged.len() > 1 {
                self.doubled += 1;
                let texts: Vec<&str> = acknowledged.iter().map(|a| a.text.as_str()).collect();
                self.problems
                    .push(format!("question {id} acknowledged {} answers: {texts:?}", texts.len()));
            }
            let Some(now) = self.finals.get(id) else {
                self.problems
                    .push(format!("question {id}, answered on the page, was asked by no agent"));
                continue;
            };
            for attempt in acknowledged {
                if now["status"] != "answered" {
                    self.lost += 1;
                } else if now["result"] != attempt.result() {
                    self.changed += 1;
                } else {
                    continue;
                }
                self.problems.push(format!(
                    "question {id} acknowledged {:?}, it now holds {}",
                    attempt.text, now["result"]
                ));
            }
        }
    }

    /// The database: the questions the agents asked, each once, none
    /// pending, and its pending counters back to 0 (as the pages count).
    async fn database(&mut self, replicas: &[Server; 2], schema: &Schema, asked: &[Got]) {
        let mut conn = schema.connect().await;
        let stored: Vec<(String, String)> = sqlx::query_as("SELECT id, status FROM questions")
            .fetch_all(&mut conn)
            .await
            .expect("the questions read");
        let asked_ids: HashSet<&str> = asked.iter().map(|got| got.id.as_str()).collect();
        if asked_ids.len() != asked.len() {
            self.problems.push(format!(
                "{} agents' asks share {} questions",
                asked.len(),
                asked_ids.len()
            ));
        }
        for (id, status) in &stored {
            if !asked_ids.contains(id.as_str()) {
                self.problems.push(format!(
                    "question {id} ({status}) in the database was asked by no agent"
                ));
            }
        }
        if stored.len() != asked_ids.len() {
            self.problems.push(format!(
                "the database holds {} questions, the agents asked {}",
                stored.len(),
                asked_ids.len()
            ));
        }
        // Each scope's count is the sum of its stripes (migration 8): one
        // stripe may be below zero, the sum never.
        let counters: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT scope, who, CAST(sum(pending) AS BIGINT) FROM pending_counts GROUP BY scope, who")
                .fetch_all(&mut conn)
                .await
                .expect("the counters read");
        for (scope, who, pending) in counters {
            if pending != 0 {
                self.problems
                    .push(format!("the {scope} {who} counts {pending} pending, none is"));
            }
        }
        for server in replicas {
            let count = server.web_state(ME_KEY).await["pendingCount"].clone();
            if count != json!(0) {
                self.problems
                    .push(format!("{}'s page counts {count} pending", server.base()));
            }
        }
    }
}
