//! The agent API against its own OpenAPI document: schemathesis (installed
//! from the Python Package Index into a virtualenv under the target
//! directory) generates requests from the real binary's `/openapi.json` and
//! runs all of its checks on the answers, authenticated as an agent. Any 5xx,
//! any answer the document does not describe, any request the document
//! allows but the server refuses (or the reverse) fails the test, with
//! schemathesis's report.
//!
//! Its prerequisites are installed when they can be and reported when they
//! cannot; this test never skips. It needs `python3` with its `venv` module,
//! and `pip` needs the Python Package Index (or a local index or wheel
//! directory configured for pip); the virtualenv is reused while it holds the
//! pinned versions of `tests/schemathesis/requirements.txt`.
//!
//! Bounded: schemathesis runs at most `MAX_EXAMPLES` examples per operation
//! from a fixed seed, every call has a deadline (`schemathesis.toml`), and the
//! whole run is killed and the test failed after `RUN_TIMEOUT`. Questions
//! would otherwise hold calls open: `POST /v1/ask` until its question ends
//! (its timeout is 30 s at the least, and the space it sends every second
//! keeps a read timeout from firing), `?wait=N` up to an hour, the event
//! stream until its question ends. So a person watches both recipients'
//! pages the whole time and ends every question as soon as it shows,
//! answering one and skipping the next: every route is tested, the event
//! stream included, and each ends within a fraction of a second.
//!
//! Not in the run: the web page's routes (`/web/{key}/…`, which the agent
//! document does not describe: they are the person's, covered by
//! `service.rs` and `browser.rs`), though the person here calls them about
//! 40 times a second and fails the test on any 5xx; and `/healthz`, `/readyz`,
//! `/metrics`, which take no input.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::venv::{Venv, read_back};
use support::{AGENT_TOKEN, ME_KEY, OTHER_KEY, Server, repo_root};

/// Hypothesis's seed: the same seed and versions generate the same requests.
const SEED: u64 = 20_261_203;
/// Test cases per operation and phase.
const MAX_EXAMPLES: u32 = 40;
/// The whole schemathesis run, on 2 busy cores; it takes under a minute.
const RUN_TIMEOUT: Duration = Duration::from_mins(5);
/// How often the person looks at the pages.
const PERSON_INTERVAL: Duration = Duration::from_millis(50);

/// The `st` of `target/schemathesis-venv`, holding the pinned versions of
/// `tests/schemathesis/requirements.txt` (schemathesis 4 needs Python 3.11).
fn ensure_schemathesis() -> PathBuf {
    Venv::new(
        "schemathesis",
        "schemathesis-venv",
        "tests/schemathesis/requirements.txt",
        (3, 11),
    )
    .ensure("st")
}

/// What the person did while schemathesis ran.
#[derive(Default)]
struct Person {
    answered: AtomicU64,
    skipped: AtomicU64,
    /// The 5xx answers the page's API gave, as `status path: body`.
    server_errors: std::sync::Mutex<Vec<String>>,
}

impl Person {
    /// Ends every question on both pages as soon as it shows: answers one
    /// (the first option of each of its questions), skips the next.
    async fn watch(&self, base: &str, http: reqwest::Client, mut stop: tokio::sync::watch::Receiver<bool>) {
        let url = |path: &str| format!("{base}{path}");
        let mut turn = 0_u64;
        loop {
            for key in [ME_KEY, OTHER_KEY] {
                let Some(state) = self.call(http.get(url(&format!("/web/{key}/api/state")))).await else {
                    continue;
                };
                for pending in state["pending"].as_array().into_iter().flatten() {
                    let Some(id) = pending["id"].as_str() else { continue };
                    turn += 1;
                    if turn.is_multiple_of(2) {
                        let answers: serde_json::Map<String, Value> = pending["request"]["questions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|question| question["id"].as_str())
                            .map(|question| (question.to_owned(), json!({"options": [0], "text": null})))
                            .collect();
                        let path = format!("/web/{key}/api/questions/{id}/answer");
                        let request = http.post(url(&path)).json(&json!({ "answers": answers }));
                        if self.call(request).await.is_some() {
                            self.answered.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        let path = format!("/web/{key}/api/questions/{id}/skip");
                        if self.call(http.post(url(&path)).json(&json!({}))).await.is_some() {
                            self.skipped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep(PERSON_INTERVAL) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// A call to the page's API: its JSON on success; `None` on a 4xx (the
    /// agent may have cancelled the question first) or a network error
    /// (askgate is not killed while the person watches, so there is none to
    /// expect, but the run's report will say more about it than the person
    /// could). A 5xx is recorded.
    async fn call(&self, request: reqwest::RequestBuilder) -> Option<Value> {
        let response = request.send().await.ok()?;
        let status = response.status();
        let path = response.url().path().to_owned();
        let text = response.text().await.ok()?;
        if status.is_server_error() {
            self.server_errors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{status} {path}: {text}"));
        }
        if status.is_success() {
            serde_json::from_str(&text).ok()
        } else {
            None
        }
    }
}

/// The number of calls in schemathesis's HAR report.
fn calls_in(har: &Path) -> usize {
    let text = std::fs::read_to_string(har).unwrap_or_else(|error| panic!("{}: {error}", har.display()));
    let har: Value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", har.display()));
    har["log"]["entries"].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_api_matches_its_openapi_document_under_schemathesis() {
    let st = ensure_schemathesis();
    let root = repo_root();
    let config = root.join("tests").join("schemathesis").join("schemathesis.toml");
    let hooks = root.join("tests").join("schemathesis").join("hooks.py");

    let mut server = Server::start();
    let work = server.data_dir().join("schemathesis");
    std::fs::create_dir_all(&work).expect("the run's directory is created");
    let har = work.join("calls.har");

    let person = Arc::new(Person::default());
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let watching = {
        let person = Arc::clone(&person);
        let base = server.base().to_owned();
        let http = server.http();
        tokio::spawn(async move { person.watch(&base, http, stopping).await })
    };

    let log = tempfile::tempfile_in(&work).expect("a log file");
    let started = Instant::now();
    let mut run = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(server.url("/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {AGENT_TOKEN}")])
        .args(["--checks", "all"])
        .args(["--max-examples", &MAX_EXAMPLES.to_string()])
        .args(["--seed", &SEED.to_string()])
        .args(["--report", "har", "--report-har-path"])
        .arg(&har)
        .arg("--no-color")
        // Hypothesis and the reports write beside the run, never into the checkout.
        .current_dir(&work)
        .env("SCHEMATHESIS_HOOKS", &hooks)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("the file handle clones"))
        .stderr(log.try_clone().expect("the file handle clones"))
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{} could not be started: {error}", st.display()));
    let status = tokio::time::timeout(RUN_TIMEOUT, run.wait()).await;
    let elapsed = started.elapsed();
    if status.is_err() {
        let _ = run.kill().await;
    }
    let _ = stop.send(true);
    watching.await.expect("the person does not panic");
    let report = read_back(log);
    println!("{report}");

    let status = match status {
        Ok(status) => status.expect("schemathesis can be waited for"),
        Err(elapsed) => panic!(
            "schemathesis did not finish within {RUN_TIMEOUT:?} ({elapsed}); what it printed:\n{report}\naskgate's log:\n{}",
            server.stderr()
        ),
    };
    let calls = if har.exists() { calls_in(&har) } else { 0 };
    // "Test cases:" is followed by a line such as "852 generated, 1 found 1 unique failure".
    let cases = report
        .lines()
        .map(str::trim)
        .find(|line| line.contains(" generated"))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or("?");
    println!(
        "schemathesis: {calls} calls ({cases} test cases, seed {SEED}, at most {MAX_EXAMPLES} examples per operation and phase) in {:.1} s; the person answered {} and skipped {} questions",
        elapsed.as_secs_f64(),
        person.answered.load(Ordering::Relaxed),
        person.skipped.load(Ordering::Relaxed),
    );
    let server_errors = person
        .server_errors
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert!(
        server_errors.is_empty(),
        "the web page's API answered with a server error:\n{}",
        server_errors.join("\n")
    );
    assert!(
        status.success(),
        "schemathesis found problems ({status}); its report is above, and askgate's log:\n{}",
        server.stderr()
    );
    assert!(
        calls > 0,
        "schemathesis made no calls (no HAR report at {})",
        har.display()
    );
}
