//! The page's progress route (`POST /web/{key}/api/questions/{id}/progress`),
//! against the router with the real engine and store: steps answered on the
//! page are saved into the question's stored progress (the one a chat reply
//! saves), merged with what is there, told to the page's event stream, and
//! finished by the page's answer with only what remains; bad input is a 4xx
//! with a stable code and a path, never a 500; an ended question is a 409.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, send_to};

use std::time::Duration;

use askgate_core::QuestionId;
use askgate_core::answer::{AnswerItem, Answers};
use askgate_store::Store as _;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const TOKEN: &str = "web-progress-test-token-0123456789abcdefghi";
const ME_KEY: &str = "web-progress-me-key-0123456789abcdefghijklm";
const OTHER_KEY: &str = "web-progress-other-key-0123456789abcdefghij";
/// The longest any one step may take.
const WITHIN: Duration = Duration::from_secs(10);

/// Two pages, `me` and `other`, over the real engine and store.
async fn fixture() -> Fixture {
    support::two_pages_in(tempfile::tempdir().unwrap(), TOKEN, ME_KEY, OTHER_KEY).await
}

fn three_questions() -> Value {
    let question = |id: &str, header: &str, multi: bool| {
        json!({"id": id, "header": header, "question": format!("{header}?"), "multiSelect": multi,
            "options": [{"label": format!("{header} A")}, {"label": format!("{header} B")}]})
    };
    json!({"to": "me", "sessionId": "progress-1", "questions": [
        question("db", "Which DB", false),
        question("when", "Deploy when", false),
        question("notify", "Notify", true),
    ]})
}

fn post(path: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn send(&self, request: Request<Body>) -> (StatusCode, Value);
    async fn ask(&self) -> String;
    async fn progress(&self, key: &str, id: &str, answers: Value) -> (StatusCode, Value);
    async fn resource(&self, id: &str) -> Value;
    async fn request_of(&self, id: &str) -> askgate_core::AskRequest;
    async fn stored_progress(&self, id: &str) -> Answers;
}

impl Suite for Fixture {
    async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        tokio::time::timeout(WITHIN, send_to(&self.router, request))
            .await
            .unwrap()
    }

    async fn ask(&self) -> String {
        let (status, created) = self.send(post("/v1/questions", &three_questions())).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created["id"].as_str().unwrap().to_owned()
    }

    async fn progress(&self, key: &str, id: &str, answers: Value) -> (StatusCode, Value) {
        let path = format!("/web/{key}/api/questions/{id}/progress");
        self.send(post(&path, &json!({"answers": answers}))).await
    }

    async fn resource(&self, id: &str) -> Value {
        let request = Request::get(format!("/v1/questions/{id}"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        self.send(request).await.1
    }

    async fn request_of(&self, id: &str) -> askgate_core::AskRequest {
        let id = QuestionId::parse(id).unwrap();
        self.store.get(&id).await.unwrap().unwrap().request
    }

    async fn stored_progress(&self, id: &str) -> Answers {
        let id = QuestionId::parse(id).unwrap();
        self.store.get(&id).await.unwrap().unwrap().progress
    }
}

fn option(index: usize, label: &str) -> AnswerItem {
    AnswerItem::Option {
        index,
        label: label.to_owned(),
    }
}

#[tokio::test]
async fn steps_saved_on_the_page_are_the_stored_progress_and_the_answer_sends_the_rest() {
    let fixture = fixture().await;
    let id = fixture.ask().await;

    // Step 1, saved: the store holds it, the page's state lists it.
    let (status, saved) = fixture.progress(ME_KEY, &id, json!({"db": {"options": [1]}})).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(saved["status"], "pending");
    assert_eq!(
        saved["progress"],
        json!({"db": [{"kind": "option", "index": 1, "label": "Which DB B"}]})
    );
    let mut expected = Answers::new();
    let request = fixture.request_of(&id).await;
    expected.set(&request, "db", vec![option(1, "Which DB B")]);
    assert_eq!(fixture.stored_progress(&id).await, expected);
    let state_path = format!("/web/{ME_KEY}/api/state");
    let (_, state) = fixture
        .send(Request::get(&state_path).body(Body::empty()).unwrap())
        .await;
    assert_eq!(state["pending"][0]["progress"], saved["progress"], "{state}");

    // Step 2 with step 1 changed: each step replaces its own, in order.
    let (status, saved) = fixture
        .progress(
            ME_KEY,
            &id,
            json!({"when": {"text": "  after lunch  "}, "db": {"options": [0], "text": null}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(
        saved["progress"],
        json!({
            "db": [{"kind": "option", "index": 0, "label": "Which DB A"}],
            "when": [{"kind": "free_text", "text": "after lunch"}],
        })
    );
    assert_eq!(
        fixture.resource(&id).await["status"],
        "pending",
        "progress never ends it"
    );

    // The answer sends only what remains; the result has all three.
    let path = format!("/web/{ME_KEY}/api/questions/{id}/answer");
    let body = json!({"answers": {"notify": {"options": [0, 1]}}});
    let (status, answered) = fixture.send(post(&path, &body)).await;
    assert_eq!(status, StatusCode::OK, "{answered}");
    assert_eq!(
        fixture.resource(&id).await["result"],
        json!({"status": "answered", "answers": {"answers": {
            "db": ["Which DB A"], "when": ["after lunch"], "notify": ["Notify A", "Notify B"]}}})
    );

    // Ended: a late save is a 409, and changes nothing.
    let (status, late) = fixture.progress(ME_KEY, &id, json!({"db": {"options": [1]}})).await;
    assert_eq!(
        (status, late["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("question_ended")),
        "{late}"
    );
    assert_eq!(
        fixture.resource(&id).await["result"]["answers"]["answers"]["db"],
        json!(["Which DB A"])
    );
}

#[tokio::test]
async fn a_save_is_merged_with_progress_saved_meanwhile_and_the_stream_hears_it() {
    let fixture = fixture().await;
    let id = fixture.ask().await;
    let events = support::open(&fixture.router, &format!("/web/{ME_KEY}/api/events")).await;
    let mut stream = events.into_body().into_data_stream();

    // A chat reply saved step 2 (as the engine does, compare-and-set).
    let request = fixture.request_of(&id).await;
    let mut chat = Answers::new();
    chat.set(&request, "when", vec![option(0, "Deploy when A")]);
    let question = QuestionId::parse(&id).unwrap();
    assert_eq!(
        fixture
            .store
            .save_progress(&question, &Answers::new(), &chat)
            .await
            .unwrap(),
        askgate_store::ProgressSaved::Saved
    );

    // The page saves step 1 on top of it: both are kept.
    let (status, saved) = fixture.progress(ME_KEY, &id, json!({"db": {"options": [1]}})).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    let mut both = chat.clone();
    both.set(&request, "db", vec![option(1, "Which DB B")]);
    assert_eq!(fixture.stored_progress(&id).await, both);

    // The page's stream carries the question with both steps.
    let mut text = String::new();
    let found = tokio::time::timeout(WITHIN, async {
        while let Some(chunk) = stream.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            for line in text.lines().filter_map(|line| line.strip_prefix("data:")) {
                let data: Value = serde_json::from_str(line.trim()).unwrap_or(Value::Null);
                if data["id"] == id.as_str() && data["progress"].get("db").is_some() {
                    return data;
                }
            }
        }
        panic!("the stream ended: {text}");
    })
    .await
    .unwrap_or_else(|_| panic!("no event with the saved step: {text}"));
    assert_eq!(found["progress"]["when"][0]["label"], "Deploy when A", "{found}");
    assert_eq!(found["status"], "pending");
}

#[tokio::test]
async fn bad_progress_is_a_client_error_with_a_code_and_a_path() {
    let fixture = fixture().await;
    let id = fixture.ask().await;
    let long = "x".repeat(askgate_core::request::MAX_FREE_TEXT_CHARS + 1);
    for (answers, status, code, path) in [
        (json!({}), 422, "invalid_answer", Some("answers")),
        (
            json!({"nope": {"options": [0]}}),
            422,
            "invalid_answer",
            Some("answers.nope"),
        ),
        (
            json!({"db": {"options": [7]}}),
            422,
            "invalid_answer",
            Some("answers.db.options"),
        ),
        (
            json!({"db": {"options": []}}),
            422,
            "invalid_answer",
            Some("answers.db"),
        ),
        (
            json!({"db": {"options": [0, 1]}}),
            422,
            "invalid_answer",
            Some("answers.db"),
        ),
        (
            json!({"db": {"text": long}}),
            422,
            "answer_too_long",
            Some("answers.db.text"),
        ),
    ] {
        let (got, error) = fixture.progress(ME_KEY, &id, answers.clone()).await;
        assert_eq!(got.as_u16(), status, "{answers}: {error}");
        assert_eq!(error["error"]["code"], code, "{answers}: {error}");
        assert_eq!(error["error"]["path"].as_str(), path, "{answers}: {error}");
        assert!(
            error["error"]["message"].as_str().is_some_and(|m| m.ends_with('.')),
            "a sentence: {error}"
        );
    }
    // Not JSON of the route's shape: still a 4xx with a code.
    let path = format!("/web/{ME_KEY}/api/questions/{id}/progress");
    for body in [
        json!({"answers": {"db": {"options": ["a"]}}}),
        json!({"answer": {}}),
        json!([1]),
    ] {
        let (status, error) = fixture.send(post(&path, &body)).await;
        assert!(status.is_client_error(), "{body}: {status} {error}");
        assert!(error["error"]["code"].is_string(), "{body}: {error}");
    }
    // Another person's page, or no question at all: 404.
    let (status, error) = fixture.progress(OTHER_KEY, &id, json!({"db": {"options": [0]}})).await;
    assert_eq!(
        (status, error["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, _) = fixture
        .progress(ME_KEY, "01ARZ3NDEKTSV4RRFFQ69G5FAV", json!({"db": {"options": [0]}}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        fixture.stored_progress(&id).await.iter().next().is_none(),
        "nothing was saved"
    );
}
