//! The web page's live updates, against the router with the real engine and
//! store: the event stream carries each changed question of the page's
//! recipient as the state lists it (pending, or ended with its summary),
//! never another recipient's, and says when changes were missed; and what a
//! change costs in bytes at 10,000 pending questions, before and after.
//! (Each change is followed by a `count` event: `web_paging.rs`.)
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::print_stdout,
    reason = "the measurement's figures go to the test's captured stdout (`--nocapture`)"
)]

use crate::support;
use support::Fixture;

use std::path::Path;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt as _;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const TOKEN: &str = "web-changes-test-token-0123456789abcdefghij";
const ME_KEY: &str = "web-changes-me-key-0123456789abcdefghijklmn";
const OTHER_KEY: &str = "web-changes-other-key-0123456789abcdefghijk";
/// The longest any one step may take.
const WITHIN: Duration = Duration::from_secs(10);

async fn fixture_with_keys(dir: tempfile::TempDir) -> Fixture {
    support::two_pages_in(dir, TOKEN, ME_KEY, OTHER_KEY).await
}

async fn fixture() -> Fixture {
    fixture_with_keys(tempfile::tempdir().unwrap()).await
}

/// A fixture whose database is on a tmpfs when there is one: the
/// measurement stores 10,000 questions and counts bytes, not time, so the
/// disk's flushes would only make it slow.
async fn fixture_in_memory() -> Fixture {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    fixture_with_keys(dir).await
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn request(&self, request: Request<Body>) -> (StatusCode, Bytes);
    async fn json(&self, request: Request<Body>) -> (StatusCode, Value);
    async fn ask(&self, to: &str, header: &str) -> String;
    async fn ask_with(&self, body: &Value) -> String;
    async fn cancel(&self, id: &str);
    async fn page_post(&self, key: &str, id: &str, action: &str, body: &Value) -> (StatusCode, Value);
    async fn state(&self, key: &str) -> Value;
    async fn events(&self, key: &str) -> Events;
}

impl Suite for Fixture {
    async fn request(&self, request: Request<Body>) -> (StatusCode, Bytes) {
        let response = tokio::time::timeout(WITHIN, self.router.clone().oneshot(request))
            .await
            .unwrap()
            .unwrap();
        let status = response.status();
        let bytes = tokio::time::timeout(WITHIN, response.into_body().collect())
            .await
            .unwrap()
            .unwrap()
            .to_bytes();
        (status, bytes)
    }

    async fn json(&self, request: Request<Body>) -> (StatusCode, Value) {
        let (status, bytes) = self.request(request).await;
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// Asks `to` a question through the agent API; its id.
    async fn ask(&self, to: &str, header: &str) -> String {
        self.ask_with(&json!({
            "to": to,
            "questions": [{"id": "deploy", "header": header, "question": "Where should it go?",
                           "options": [{"label": "Staging"}, {"label": "Production"}]}],
        }))
        .await
    }

    async fn ask_with(&self, body: &Value) -> String {
        let (status, created) = self
            .json(
                Request::post("/v1/questions")
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    /// Cancels a question through the agent API: it ends elsewhere.
    async fn cancel(&self, id: &str) {
        let (status, body) = self
            .json(
                Request::post(format!("/v1/questions/{id}/cancel"))
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// Posts on a page's API.
    async fn page_post(&self, key: &str, id: &str, action: &str, body: &Value) -> (StatusCode, Value) {
        self.json(
            Request::post(format!("/web/{key}/api/questions/{id}/{action}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    async fn state(&self, key: &str) -> Value {
        let (status, state) = self
            .json(
                Request::get(format!("/web/{key}/api/state"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{state}");
        state
    }

    async fn events(&self, key: &str) -> Events {
        let response = self
            .router
            .clone()
            .oneshot(
                Request::get(format!("/web/{key}/api/events"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
        Events {
            body: response.into_body(),
            buffer: String::new(),
        }
    }
}

/// A page's event stream, read event by event.
struct Events {
    body: Body,
    buffer: String,
}

/// One server-sent event: its name, its data, and its size on the wire.
#[derive(Debug)]
struct Event {
    name: String,
    data: Value,
    bytes: usize,
}

impl Events {
    /// The next `changed` event (keep-alive comments and the `count` after
    /// each change are skipped; `web_paging.rs` checks those).
    async fn next(&mut self) -> Event {
        loop {
            let event = self.next_any().await;
            if event.name != "count" {
                return event;
            }
        }
    }

    /// The next event, whatever its name.
    async fn next_any(&mut self) -> Event {
        tokio::time::timeout(WITHIN, self.read())
            .await
            .expect("an event arrives in time")
    }

    async fn read(&mut self) -> Event {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        value.trim_start().clone_into(&mut name);
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.strip_prefix(' ').unwrap_or(value));
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Event {
                    name,
                    data: serde_json::from_str(&data).unwrap(),
                    bytes: block.len(),
                };
            }
            let frame = self.body.frame().await.expect("the stream goes on").unwrap();
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }
}

fn entry_in<'a>(list: &'a Value, id: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in {list}"))
}

#[tokio::test]
async fn the_stream_carries_each_changed_question_as_the_state_lists_it() {
    let fixture = fixture().await;
    let mut events = fixture.events(ME_KEY).await;

    // A new question arrives whole, exactly as the state lists it.
    let id = fixture.ask("me", "Deploy").await;
    let event = events.next().await;
    assert_eq!(event.name, "changed");
    assert_eq!(event.data["id"], id.as_str(), "{}", event.data);
    assert_eq!(event.data["status"], "pending");
    assert_eq!(event.data["request"]["questions"][0]["header"], "Deploy");
    assert_eq!(event.data["summary"], Value::Null);
    let state = fixture.state(ME_KEY).await;
    assert_eq!(&event.data, entry_in(&state["pending"], &id));
    assert_eq!(state["recentLimit"], 10);

    // Answered on the page: the stream carries the ended question with its
    // summary, as the state's recent list has it.
    let (status, answered) = fixture
        .page_post(ME_KEY, &id, "answer", &json!({"answers": {"deploy": {"options": [1]}}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{answered}");
    assert_eq!(answered, json!({"status": "answered"}));
    let event = events.next().await;
    assert_eq!(event.data["id"], id.as_str(), "{}", event.data);
    assert_eq!(event.data["status"], "answered");
    let summary = event.data["summary"].as_str().unwrap();
    assert!(summary.contains("Production"), "{summary}");
    assert!(event.data["resolvedAt"].is_string(), "{}", event.data);
    let state = fixture.state(ME_KEY).await;
    assert_eq!(state["pending"], json!([]));
    assert_eq!(&event.data, entry_in(&state["recent"], &id));

    // Skipped on the page: likewise.
    let id = fixture.ask("me", "Skip me").await;
    assert_eq!(events.next().await.data["id"], id.as_str());
    let (status, skipped) = fixture.page_post(ME_KEY, &id, "skip", &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{skipped}");
    let event = events.next().await;
    assert_eq!(
        (&event.data["id"], &event.data["status"]),
        (&json!(id), &json!("skipped"))
    );
    assert_eq!(skipped, json!({"status": "skipped"}));
    assert!(
        event.data["summary"].as_str().unwrap().contains("Skipped"),
        "{}",
        event.data
    );
}

#[tokio::test]
async fn a_question_ending_elsewhere_arrives_as_its_summary() {
    let fixture = fixture().await;
    let mut events = fixture.events(ME_KEY).await;
    let id = fixture.ask("me", "Deploy").await;
    assert_eq!(events.next().await.data["status"], "pending");

    // The agent cancels it: the page is told it ended, with its summary.
    fixture.cancel(&id).await;
    let event = events.next().await;
    assert_eq!(event.name, "changed");
    assert_eq!(
        (&event.data["id"], &event.data["status"]),
        (&json!(id), &json!("cancelled"))
    );
    let summary = event.data["summary"].as_str().unwrap();
    assert!(!summary.is_empty());
    assert_eq!(
        &event.data,
        entry_in(&fixture.state(ME_KEY).await["recent"], &id),
        "the summary is the one the state shows"
    );
}

#[tokio::test]
async fn another_recipients_questions_never_reach_this_page() {
    let fixture = fixture().await;
    let mut mine = fixture.events(ME_KEY).await;
    let mut theirs = fixture.events(OTHER_KEY).await;

    // Created, answered on their page, and cancelled: none of it is ours.
    let answered = fixture.ask("other", "Theirs").await;
    let cancelled = fixture.ask("other", "Theirs too").await;
    let (status, _) = fixture
        .page_post(
            OTHER_KEY,
            &answered,
            "answer",
            &json!({"answers": {"deploy": {"options": [0]}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    fixture.cancel(&cancelled).await;
    // Nor can this page answer it.
    let (status, _) = fixture.page_post(ME_KEY, &cancelled, "skip", &json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Their page saw all four changes...
    let seen: Vec<(Value, Value)> = {
        let mut seen = Vec::new();
        for _ in 0..4 {
            let event = theirs.next().await;
            seen.push((event.data["id"].clone(), event.data["status"].clone()));
        }
        seen
    };
    assert_eq!(
        seen,
        [
            (json!(answered), json!("pending")),
            (json!(cancelled), json!("pending")),
            (json!(answered), json!("answered")),
            (json!(cancelled), json!("cancelled")),
        ]
    );
    // ...and the first event on ours is our own question, asked after theirs.
    let own = fixture.ask("me", "Mine").await;
    let event = mine.next().await;
    assert_eq!(event.data["id"], own.as_str(), "{}", event.data);
    assert_eq!(fixture.state(ME_KEY).await["recent"], json!([]));
}

#[tokio::test]
async fn a_stream_that_fell_behind_says_changes_were_missed() {
    let fixture = fixture_in_memory().await;
    // Opened and not read: the engine's buffer of changes (1024) overflows.
    let mut events = fixture.events(ME_KEY).await;
    for n in 0..1100 {
        fixture.ask_with(&build("me", n)).await;
    }
    let event = events.next().await;
    assert_eq!(event.name, "changed");
    assert_eq!(event.data, json!({"missed": true}));
    // After which it carries changes again.
    let id = fixture.ask("me", "After").await;
    loop {
        let event = events.next().await;
        if event.data["id"] == id.as_str() {
            break;
        }
    }
}

/// A question of the size agents ask.
fn build(to: &str, n: usize) -> Value {
    json!({
        "to": to,
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": format!("Where should build {n} go? It passed every check on the main branch."),
            "options": [
                {"label": "Staging (Recommended)", "description": "safe, resets nightly"},
                {"label": "Production", "description": "live traffic"},
                {"label": "Canary", "description": "5% of traffic for an hour"},
            ],
        }],
        "timeoutSeconds": 3600,
    })
}

/// Not a timed assertion: prints what one change costs the page with
/// 10,000 questions pending, when it read the whole state on every change
/// (the old event plus every pending question) and now (the event with the
/// question, and the count after it); and what opening the page costs now
/// that the state lists one page of them.
#[tokio::test]
async fn what_a_change_costs_at_10000_pending() {
    const PENDING: usize = 10_000;
    let fixture = fixture_in_memory().await;
    let started = Instant::now();
    // A few at a time: the store takes one write at a time, the rest (JSON,
    // validation) runs beside it.
    futures_util::stream::iter(0..PENDING)
        .for_each_concurrent(8, |n| {
            let fixture = &fixture;
            async move {
                fixture.ask_with(&build("me", n)).await;
            }
        })
        .await;
    let stored = started.elapsed();

    let mut events = fixture.events(ME_KEY).await;
    let id = fixture.ask_with(&build("me", PENDING)).await;
    let created = events.next_any().await;
    assert_eq!(created.data["id"], id.as_str());
    let counted = events.next_any().await;
    assert_eq!(counted.name, "count");
    assert_eq!(counted.data, json!({"pendingCount": PENDING + 1}));
    let (status, answered) = fixture
        .page_post(
            ME_KEY,
            &id,
            "answer",
            &json!({"answers": {"deploy_target": {"options": [1]}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answered}");
    let ended = events.next_any().await;
    assert_eq!(ended.data["status"], "answered");
    let recounted = events.next_any().await;
    assert_eq!(recounted.data, json!({"pendingCount": PENDING}));

    let read = Instant::now();
    let (status, state) = fixture
        .request(
            Request::get(format!("/web/{ME_KEY}/api/state"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let read = read.elapsed();
    assert_eq!(status, StatusCode::OK);
    let state_json = serde_json::from_slice::<Value>(&state).unwrap();
    assert_eq!(state_json["pending"].as_array().unwrap().len(), 50);
    assert_eq!(state_json["pendingCount"], PENDING);
    // What the whole list of pending questions weighs: what the state was
    // before it was paged, read here page by page.
    let mut whole = 0;
    let mut listed = 0;
    let mut after = state_json["pending"][49]["id"].as_str().unwrap().to_owned();
    whole += state.len();
    listed += 50;
    loop {
        let (status, page) = fixture
            .request(
                Request::get(format!("/web/{ME_KEY}/api/pending?after={after}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        whole += page.len();
        let page: Value = serde_json::from_slice(&page).unwrap();
        let entries = page["pending"].as_array().unwrap();
        listed += entries.len();
        if page["more"] == false {
            break;
        }
        entries.last().unwrap()["id"].as_str().unwrap().clone_into(&mut after);
    }
    assert_eq!(listed, PENDING);
    // What the stream sent before: the id and status, and the page then read the state.
    let old_event = format!("event: changed\ndata: {}\n\n", json!({"id": id, "status": "answered"})).len();
    let before = old_event + whole;
    let after = created.bytes.max(ended.bytes) + counted.bytes.max(recounted.bytes);
    println!(
        "web page, {PENDING} pending (stored in {:.1} s): per change, before {before} bytes \
         ({old_event} event + {whole} for every pending question); after {after} bytes at most \
         (created {} bytes, answered {} bytes, count {} bytes): {:.0}x less; \
         the state is now {} bytes, read in {} ms in-process",
        stored.as_secs_f64(),
        created.bytes,
        ended.bytes,
        counted.bytes,
        as_f64(before) / as_f64(after),
        state.len(),
        read.as_millis(),
    );
    assert!(after * 100 < before, "a change costs {after} bytes, the list {before}");
    assert!(state.len() < 100_000, "the state is {} bytes", state.len());
}

#[expect(clippy::cast_precision_loss, reason = "a ratio of byte counts, printed")]
fn as_f64(bytes: usize) -> f64 {
    bytes as f64
}
