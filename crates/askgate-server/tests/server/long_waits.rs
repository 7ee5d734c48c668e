//! Waits longer than the `ask_user` contract's hour (issue 26, item 4),
//! against the router with the real engine and store: `POST /v1/questions`
//! keeps a `timeoutSeconds` up to the asking agent's `max_timeout` and
//! refuses a longer one naming that limit, `POST /v1/ask` still lowers it
//! to the hour, the OpenAPI document says both; and the page's entry of a
//! question says when a reminder went out.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, agent_one, fixture_in, send_to, web_recipient};

use std::time::{Duration, SystemTime};

use askgate_core::QuestionId;
use askgate_server::{AgentToken, ServerSettings, WebKey};
use askgate_store::{Step, StepKind, StepWrite, Store as _};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// Agent `long`, whose `max_timeout` is 8 hours.
const LONG_TOKEN: &str = "long-waits-long-token-0123456789abcdefgh";
/// Agent `one`, with the default `max_timeout` (the contract's hour).
const HOUR_TOKEN: &str = "long-waits-hour-token-0123456789abcdefgh";
const KEY: &str = "long-waits-web-key-0123456789abcdefghijk";
const EIGHT_HOURS: u32 = 8 * 3600;
/// The longest any one request may take.
const WITHIN: Duration = Duration::from_secs(10);

async fn fixture(agents: Vec<AgentToken>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents,
        web_keys: vec![WebKey {
            key: KEY.into(),
            recipient: "me".into(),
        }],
        ..ServerSettings::default()
    };
    fixture_in(dir, vec![web_recipient("me", "Me")], settings).await
}

/// Agents `long` (8 h) and `one` (the default).
fn two_agents() -> Vec<AgentToken> {
    let mut long = agent_one(LONG_TOKEN);
    long.name = "long".into();
    long.max_timeout_seconds = EIGHT_HOURS;
    vec![long, agent_one(HOUR_TOKEN)]
}

fn question(timeout: &Value) -> Value {
    json!({
        "to": "me",
        "questions": [{"id": "approve", "header": "Approve", "question": "Ship the release tonight?",
            "options": [{"label": "Yes"}, {"label": "No"}]}],
        "timeoutSeconds": timeout,
    })
}

fn post(path: &str, token: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn get(path: &str, token: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Body::empty()).unwrap()
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn send(&self, request: Request<Body>) -> (StatusCode, Value);
}

impl Suite for Fixture {
    async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        tokio::time::timeout(WITHIN, send_to(&self.router, request))
            .await
            .unwrap()
    }
}

fn instant(value: &Value) -> SystemTime {
    humantime::parse_rfc3339(value.as_str().unwrap()).unwrap()
}

/// How long the resource's question waits: `expiresAt - createdAt`.
fn wait_of(resource: &Value) -> Duration {
    instant(&resource["expiresAt"])
        .duration_since(instant(&resource["createdAt"]))
        .unwrap()
}

#[tokio::test]
async fn the_non_blocking_call_keeps_a_wait_up_to_the_agents_limit() {
    let fixture = fixture(two_agents()).await;
    for seconds in [3601, 7200, EIGHT_HOURS] {
        let (status, resource) = fixture
            .send(post("/v1/questions", LONG_TOKEN, &question(&json!(seconds))))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{seconds}: {resource}");
        assert_eq!(resource["request"]["timeoutSeconds"], seconds, "{resource}");
        assert_eq!(
            wait_of(&resource),
            Duration::from_secs(u64::from(seconds)),
            "{resource}"
        );
    }
    // Below the hour it reads as the contract does: 5 s is raised to 30.
    let (status, resource) = fixture
        .send(post("/v1/questions", LONG_TOKEN, &question(&json!(5))))
        .await;
    assert_eq!(
        (status, &resource["request"]["timeoutSeconds"]),
        (StatusCode::CREATED, &json!(30))
    );
}

#[tokio::test]
async fn a_longer_wait_is_refused_naming_the_agents_limit() {
    let fixture = fixture(two_agents()).await;
    for (token, seconds, limit) in [
        (LONG_TOKEN, json!(EIGHT_HOURS + 1), "its max_timeout is 28800 s (8h)"),
        (LONG_TOKEN, json!(604_800), "its max_timeout is 28800 s (8h)"),
        (LONG_TOKEN, json!(1e300), "its max_timeout is 28800 s (8h)"),
        (HOUR_TOKEN, json!(3601), "its max_timeout is 3600 s (1h)"),
    ] {
        let (status, body) = fixture.send(post("/v1/questions", token, &question(&seconds))).await;
        let error = &body["error"];
        assert_eq!(
            (status, error["code"].as_str(), error["path"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("invalid_timeout"),
                Some("timeoutSeconds")
            ),
            "{seconds}: {body}"
        );
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(limit), "{seconds}: {message}");
    }
    // The default agent still has the whole hour.
    let (status, body) = fixture
        .send(post("/v1/questions", HOUR_TOKEN, &question(&json!(3600))))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Refused with the request's other problems, all in one answer.
    let mut both = question(&json!(EIGHT_HOURS * 2));
    both["questions"][0]["id"] = json!("Not An Id");
    let (status, body) = fixture.send(post("/v1/questions", LONG_TOKEN, &both)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let codes: Vec<&str> = body["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["invalid_id", "invalid_timeout"], "{body}");
}

#[tokio::test]
async fn the_blocking_call_keeps_the_contracts_hour() {
    let fixture = fixture(two_agents()).await;
    // The response's body is the answer, held until the question ends: only
    // its headers are read here (dropping it cancels the question).
    let response = tokio::time::timeout(
        WITHIN,
        fixture
            .router
            .clone()
            .oneshot(post("/v1/ask", LONG_TOKEN, &question(&json!(EIGHT_HOURS)))),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["askgate-question-id"].to_str().unwrap().to_owned();
    let (status, resource) = fixture
        .send(get(&format!("/v1/questions/{id}"), Some(LONG_TOKEN)))
        .await;
    assert_eq!(status, StatusCode::OK, "{resource}");
    assert_eq!(resource["request"]["timeoutSeconds"], 3600, "{resource}");
    assert_eq!(wait_of(&resource), Duration::from_secs(3600));
}

#[tokio::test]
async fn the_openapi_document_says_how_long_each_call_may_wait() {
    let check = |document: &Value, longest: u32| {
        let paths = &document["paths"];
        assert_eq!(
            paths["/v1/ask"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/QuestionRequest"
        );
        assert_eq!(
            paths["/v1/questions"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/CreateQuestionRequest"
        );
        let schemas = &document["components"]["schemas"];
        // The blocking call: clamped, so no maximum, and the guidance's words.
        let ask = &schemas["QuestionRequest"]["properties"]["timeoutSeconds"];
        assert_eq!(ask.get("maximum"), None, "{ask}");
        assert_eq!(
            ask["description"].as_str(),
            Some(askgate_core::guidance::field_description("timeoutSeconds"))
        );
        // The non-blocking call: up to the longest limit of any token.
        let create = &schemas["CreateQuestionRequest"];
        let timeout = &create["properties"]["timeoutSeconds"];
        assert_eq!(timeout["maximum"], longest, "{timeout}");
        let description = timeout["description"].as_str().unwrap();
        assert!(
            description.starts_with(askgate_core::guidance::field_description("timeoutSeconds")),
            "{description}"
        );
        assert!(description.contains("max_timeout"), "{description}");
        assert!(description.contains("invalid_timeout"), "{description}");
        // Otherwise the same body.
        let mut same = create.clone();
        same["properties"]["timeoutSeconds"] = schemas["QuestionRequest"]["properties"]["timeoutSeconds"].clone();
        assert_eq!(same, schemas["QuestionRequest"]);
    };
    let fixture = fixture(two_agents()).await;
    let (status, document) = fixture.send(get("/openapi.json", None)).await;
    assert_eq!(status, StatusCode::OK);
    check(&document, EIGHT_HOURS);
    let fixture = self::fixture(vec![agent_one(HOUR_TOKEN)]).await;
    let (_, document) = fixture.send(get("/openapi.json", None)).await;
    check(&document, 3600);
    assert_eq!(document, askgate_server::openapi::document());
}

#[tokio::test]
async fn the_page_says_when_a_reminder_went_out() {
    let fixture = fixture(two_agents()).await;
    let (status, resource) = fixture
        .send(post("/v1/questions", LONG_TOKEN, &question(&json!(EIGHT_HOURS))))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{resource}");
    let id = QuestionId::parse(resource["id"].as_str().unwrap()).unwrap();
    let page_state = || fixture.send(get(&format!("/web/{KEY}/api/state"), None));
    let (_, state) = page_state().await;
    assert_eq!(state["pending"][0]["reminded"], false, "{state}");

    // What the engine does when a reminder is due: the step is taken in the
    // store before the nudge is sent.
    let now = i64::try_from(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let reminder = Step::planned(StepKind::Remind, now);
    let taken = fixture.store.take_step(&id, StepWrite::Once(&reminder)).await.unwrap();
    assert!(taken.is_some());
    let (_, state) = page_state().await;
    assert_eq!(state["pending"][0]["id"], id.as_str());
    assert_eq!(state["pending"][0]["reminded"], true, "{state}");

    // Another kind of step is no reminder.
    let (_, other) = fixture
        .send(post("/v1/questions", HOUR_TOKEN, &question(&json!(600))))
        .await;
    let other_id = QuestionId::parse(other["id"].as_str().unwrap()).unwrap();
    let notice = Step::planned(StepKind::NotifyFailure, now);
    fixture
        .store
        .take_step(&other_id, StepWrite::Once(&notice))
        .await
        .unwrap();
    let (_, state) = page_state().await;
    let entry = state["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["id"] == other_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(entry["reminded"], false, "{state}");
}
