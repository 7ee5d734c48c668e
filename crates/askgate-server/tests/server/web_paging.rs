//! The web page's state is paged, against the router with the real engine
//! and store: the state lists the first page of pending questions, how many
//! are pending in all and whether more are; `api/pending?after=` walks the
//! rest, every question once, oldest first; the latest to end are listed
//! however many are pending; and the state stays under 100 KB however many
//! questions are pending and however large they are.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::Fixture;

use std::path::Path;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt as _;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const TOKEN: &str = "web-paging-test-token-0123456789abcdefghijk";
const ME_KEY: &str = "web-paging-me-key-0123456789abcdefghijklmno";
const OTHER_KEY: &str = "web-paging-other-key-0123456789abcdefghijkl";
/// The longest any one request may take.
const WITHIN: Duration = Duration::from_secs(10);
/// How many pending questions a page lists (`web::PENDING_PAGE`).
const PAGE: usize = 50;
/// The bound the state is kept under, in bytes.
const BOUND: usize = 100_000;

/// Two recipients with a page each, the store on a tmpfs when there is one:
/// these tests store hundreds of questions and count entries and bytes, not
/// time, so the disk's flushes would only make them slow.
async fn fixture() -> Fixture {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    support::two_pages_in(dir, TOKEN, ME_KEY, OTHER_KEY).await
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn request(&self, request: Request<Body>) -> (StatusCode, Bytes);
    async fn get(&self, path: &str) -> (StatusCode, Value, usize);
    async fn state(&self, key: &str) -> (Value, usize);
    async fn page_after(&self, key: &str, after: &str) -> (Value, usize);
    async fn ask(&self, body: &Value) -> String;
    async fn ask_many(&self, to: &str, count: usize, build: fn(&str, usize) -> Value) -> Vec<String>;
    async fn cancel(&self, id: &str);
    async fn walk(&self, key: &str) -> (Vec<String>, usize);
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

    /// `GET path`: the status, the body as JSON, and its size in bytes.
    async fn get(&self, path: &str) -> (StatusCode, Value, usize) {
        let (status, bytes) = self.request(Request::get(path).body(Body::empty()).unwrap()).await;
        (status, serde_json::from_slice(&bytes).unwrap(), bytes.len())
    }

    /// The page's state, and its size in bytes.
    async fn state(&self, key: &str) -> (Value, usize) {
        let (status, state, bytes) = self.get(&format!("/web/{key}/api/state")).await;
        assert_eq!(status, StatusCode::OK, "{state}");
        (state, bytes)
    }

    /// The page after `after`, and its size in bytes.
    async fn page_after(&self, key: &str, after: &str) -> (Value, usize) {
        let (status, page, bytes) = self.get(&format!("/web/{key}/api/pending?after={after}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        (page, bytes)
    }

    /// Asks a question through the agent API; its id.
    async fn ask(&self, body: &Value) -> String {
        let (status, created) = self
            .request(
                Request::post("/v1/questions")
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap(),
            )
            .await;
        let created: Value = serde_json::from_slice(&created).unwrap();
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    /// Asks `count` questions of `build`, one after the other (so that
    /// they are asked in this order); their ids.
    async fn ask_many(&self, to: &str, count: usize, build: fn(&str, usize) -> Value) -> Vec<String> {
        let mut ids = Vec::with_capacity(count);
        for n in 0..count {
            ids.push(self.ask(&build(to, n)).await);
        }
        ids
    }

    /// Cancels a question through the agent API: it ends.
    async fn cancel(&self, id: &str) {
        let (status, body) = self
            .request(
                Request::post(format!("/v1/questions/{id}/cancel"))
                    .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    }

    /// Every pending question of the page, walked from the state page by
    /// page: their ids in the order listed, and how many pages it took.
    async fn walk(&self, key: &str) -> (Vec<String>, usize) {
        let (state, _) = self.state(key).await;
        let mut ids = ids_of(&state["pending"]);
        let mut more = state["more"].as_bool().unwrap();
        let mut pages = 1;
        while more {
            let (page, bytes) = self.page_after(key, ids.last().unwrap()).await;
            assert!(bytes < BOUND, "a page of {bytes} bytes");
            let listed = ids_of(&page["pending"]);
            assert!(!listed.is_empty() && listed.len() <= PAGE, "{page}");
            assert_eq!(page["pendingCount"], state["pendingCount"]);
            ids.extend(listed);
            more = page["more"].as_bool().unwrap();
            pages += 1;
        }
        (ids, pages)
    }
}

fn ids_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A question of the size agents ask (about 600 bytes as an entry).
fn typical(to: &str, n: usize) -> Value {
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

/// A question as large as askgate accepts, in four-byte characters: three
/// questions of four options, every text at its longest (about 14 KB as an
/// entry; 50 of them would be 700 KB).
fn largest(to: &str, n: usize) -> Value {
    let wide = |count: usize| "𠀋".repeat(count);
    let questions: Vec<Value> = (0..askgate_core::request::MAX_QUESTIONS)
        .map(|q| {
            let options: Vec<Value> = (0..askgate_core::request::MAX_OPTIONS)
                .map(|o| {
                    json!({
                        "label": format!("{n}-{q}-{o}{}", wide(askgate_core::request::MAX_LABEL_CHARS - 8)),
                        "description": wide(askgate_core::request::MAX_DESCRIPTION_CHARS),
                    })
                })
                .collect();
            json!({
                "id": format!("q{q}_{}", "x".repeat(askgate_core::request::MAX_ID_CHARS - 3)),
                "header": wide(askgate_core::request::MAX_HEADER_GRAPHEMES),
                "question": format!("{n}{}", wide(askgate_core::request::MAX_QUESTION_CHARS - 4)),
                "options": options,
            })
        })
        .collect();
    json!({"to": to, "questions": questions, "timeoutSeconds": 3600})
}

#[tokio::test]
async fn the_state_lists_one_page_and_counts_them_all() {
    let fixture = fixture().await;
    let ids = fixture.ask_many("me", PAGE * 2 + 20, typical).await;
    fixture.ask_many("other", 3, typical).await;

    let (state, _) = fixture.state(ME_KEY).await;
    assert_eq!(ids_of(&state["pending"]), ids[..PAGE], "the first page, oldest first");
    assert_eq!(state["pendingCount"], ids.len());
    assert_eq!(state["more"], true);
    assert_eq!(state["recent"], json!([]));
    assert_eq!(state["recentLimit"], 10);
    assert_eq!(state["recipient"]["name"], "me");
    // Every entry keeps its shape: the one the event stream carries.
    let first = &state["pending"][0];
    for field in [
        "id",
        "status",
        "createdAt",
        "expiresAt",
        "resolvedAt",
        "request",
        "summary",
    ] {
        assert!(first.get(field).is_some(), "{field} in {first}");
    }

    // A page that has them all says so.
    let (theirs, _) = fixture.state(OTHER_KEY).await;
    assert_eq!(theirs["pending"].as_array().unwrap().len(), 3);
    assert_eq!((&theirs["pendingCount"], &theirs["more"]), (&json!(3), &json!(false)));
}

#[tokio::test]
async fn paging_walks_every_question_once_oldest_first() {
    let fixture = fixture().await;
    let ids = fixture.ask_many("me", PAGE * 2 + 20, typical).await;
    fixture.ask_many("other", 5, typical).await;

    let (walked, pages) = fixture.walk(ME_KEY).await;
    assert_eq!(
        walked, ids,
        "every question once, oldest first, none of another recipient's"
    );
    assert_eq!(pages, 3);
    let (last, _) = fixture.page_after(ME_KEY, &ids[PAGE * 2 - 1]).await;
    assert_eq!(ids_of(&last["pending"]), ids[PAGE * 2..]);
    assert_eq!(
        (&last["more"], &last["pendingCount"]),
        (&json!(false), &json!(ids.len()))
    );

    // Without `after`, the first page, as the state lists it.
    let (status, first, _) = fixture.get(&format!("/web/{ME_KEY}/api/pending")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(ids_of(&first["pending"]), ids[..PAGE]);
    assert_eq!(first["more"], true);

    // The last card of a page was answered before "Show more": the next
    // page goes on from where it was, not from the beginning.
    fixture.cancel(&ids[PAGE - 1]).await;
    let (next, _) = fixture.page_after(ME_KEY, &ids[PAGE - 1]).await;
    assert_eq!(ids_of(&next["pending"]), ids[PAGE..PAGE * 2]);
    assert_eq!(next["pendingCount"], ids.len() - 1);
    // And the page after the last one is empty.
    let (after_last, _) = fixture.page_after(ME_KEY, ids.last().unwrap()).await;
    assert_eq!(
        (&after_last["pending"], &after_last["more"]),
        (&json!([]), &json!(false))
    );
}

#[tokio::test]
async fn the_latest_to_end_are_recent_however_many_are_pending() {
    let fixture = fixture().await;
    // Asked first, ended last: behind 60 newer pending questions.
    let ending = fixture.ask_many("me", 12, typical).await;
    let pending = fixture.ask_many("me", 60, typical).await;
    // Ended newest first, so that the order they ended in is not the order
    // they were asked in; a few milliseconds apart, so that no two ended at
    // the same millisecond.
    for id in ending.iter().rev() {
        fixture.cancel(id).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }

    let (state, _) = fixture.state(ME_KEY).await;
    let recent = ids_of(&state["recent"]);
    let latest_first: Vec<String> = ending.iter().take(10).cloned().collect();
    assert_eq!(recent, latest_first, "the ten latest to end, the latest first");
    for entry in state["recent"].as_array().unwrap() {
        assert_eq!(entry["status"], "cancelled", "{entry}");
        assert!(
            entry["resolvedAt"].is_string() && entry["summary"].is_string(),
            "{entry}"
        );
    }
    assert_eq!(state["pendingCount"], pending.len());
    assert_eq!(ids_of(&state["pending"]), pending[..PAGE]);
}

#[tokio::test]
async fn the_state_stays_under_100_kb_at_500_pending() {
    let fixture = fixture().await;
    let ids = fixture.ask_many("me", 500, typical).await;
    for id in &ids[..20] {
        fixture.cancel(id).await;
    }
    let (state, bytes) = fixture.state(ME_KEY).await;
    assert!(bytes < BOUND, "the state is {bytes} bytes");
    assert_eq!(state["pending"].as_array().unwrap().len(), PAGE);
    assert_eq!(state["recent"].as_array().unwrap().len(), 10);
    assert_eq!((&state["pendingCount"], &state["more"]), (&json!(480), &json!(true)));
    let (page, bytes) = fixture.page_after(ME_KEY, &ids[100]).await;
    assert!(bytes < BOUND, "a page is {bytes} bytes");
    assert_eq!(page["pending"].as_array().unwrap().len(), PAGE);
}

#[tokio::test]
async fn the_largest_questions_make_shorter_pages_not_larger_responses() {
    let fixture = fixture().await;
    let ended = fixture.ask_many("me", 12, largest).await;
    for id in &ended {
        fixture.cancel(id).await;
    }
    let ids = fixture.ask_many("me", 30, largest).await;

    let (state, bytes) = fixture.state(ME_KEY).await;
    assert!(bytes < BOUND, "the state is {bytes} bytes");
    let listed = state["pending"].as_array().unwrap().len();
    assert!((1..ids.len()).contains(&listed), "{listed} listed");
    assert!(!state["recent"].as_array().unwrap().is_empty());
    assert_eq!((&state["pendingCount"], &state["more"]), (&json!(30), &json!(true)));

    let (walked, pages) = fixture.walk(ME_KEY).await;
    assert_eq!(walked, ids, "every question once, oldest first");
    assert!(pages > 1);
}

#[tokio::test]
async fn a_wrong_key_or_a_bad_after_is_a_json_error() {
    let fixture = fixture().await;
    let mine = fixture.ask(&typical("me", 0)).await;
    let theirs = fixture.ask(&typical("other", 0)).await;

    // A wrong key: the same 404 as every other route of the page, JSON
    // even for a browser, whatever `after` is.
    for path in [
        format!("/web/{ME_KEY}x/api/pending"),
        format!("/web/{ME_KEY}x/api/pending?after={mine}"),
        format!("/web/{ME_KEY}x/api/pending?after=not%20an%20id"),
        "/web/nothing/api/pending".to_owned(),
    ] {
        let (status, bytes) = fixture
            .request(
                Request::get(&path)
                    .header(header::ACCEPT, "text/html,*/*;q=0.8")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "not_found", "{path}: {body}");
        assert_eq!(body["error"]["message"], "There is no such page.", "{path}: {body}");
    }

    // Not a question id at all, empty, or twice: 400, naming `after`.
    for query in ["after=not%20an%20id", "after=", &format!("after={mine}&after={mine}")] {
        let (status, body, _) = fixture.get(&format!("/web/{ME_KEY}/api/pending?{query}")).await;
        assert_eq!(
            (status, &body["error"]["code"], &body["error"]["path"]),
            (StatusCode::BAD_REQUEST, &json!("invalid_query"), &json!("after")),
            "{query}: {body}"
        );
    }
    // A question askgate does not have, or another recipient's: 404, naming
    // `after` (the store would start from the beginning again).
    for after in ["01J0000000000000000000000", theirs.as_str()] {
        let (status, body, _) = fixture.get(&format!("/web/{ME_KEY}/api/pending?after={after}")).await;
        assert_eq!(
            (status, &body["error"]["code"], &body["error"]["path"]),
            (StatusCode::NOT_FOUND, &json!("not_found"), &json!("after")),
            "{after}: {body}"
        );
    }
    // Other parameters are ignored.
    let (status, body, _) = fixture
        .get(&format!("/web/{ME_KEY}/api/pending?after={mine}&limit=5"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"pending": [], "pendingCount": 1, "more": false}));
}

/// The stream counts after each change, so that a page holding one page of
/// many knows how many are pending without telling new questions from ones
/// it has not loaded.
#[tokio::test]
async fn the_stream_counts_after_every_change() {
    let fixture = fixture().await;
    fixture.ask_many("me", PAGE + 5, typical).await;
    let response = support::open(&fixture.router, &format!("/web/{ME_KEY}/api/events")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = Sse {
        frames: response.into_body().into_data_stream(),
        text: String::new(),
    };
    let asked = fixture.ask(&typical("me", 99)).await;
    let (name, changed) = stream.next().await;
    assert_eq!((name.as_str(), &changed["id"]), ("changed", &json!(asked)));
    assert_eq!(
        stream.next().await,
        ("count".to_owned(), json!({"pendingCount": PAGE + 6}))
    );
    // Another recipient's question changes nothing here.
    fixture.ask(&typical("other", 0)).await;
    fixture.cancel(&asked).await;
    let (name, changed) = stream.next().await;
    assert_eq!(
        (name.as_str(), &changed["id"], &changed["status"]),
        ("changed", &json!(asked), &json!("cancelled"))
    );
    assert_eq!(
        stream.next().await,
        ("count".to_owned(), json!({"pendingCount": PAGE + 5}))
    );
}

/// An event stream, read event by event.
struct Sse {
    frames: axum::body::BodyDataStream,
    text: String,
}

impl Sse {
    /// The next event's name and data (keep-alive comments are skipped).
    async fn next(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let name = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("");
                let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                    continue;
                };
                return (name.to_owned(), serde_json::from_str(data).unwrap());
            }
            let frame = tokio::time::timeout(WITHIN, self.frames.next())
                .await
                .expect("an event arrives in time")
                .expect("the stream goes on")
                .unwrap();
            self.text.push_str(std::str::from_utf8(&frame).unwrap());
        }
    }
}
