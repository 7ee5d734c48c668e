//! What schemathesis (`tests/e2e/schemathesis.rs`) found where `/openapi.json`
//! and the server disagreed, each held in place: the document now refuses
//! exactly what the server refuses, and takes what it takes. In-process with
//! `oneshot`, against the real engine and store.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{agent_one, send_to, state_in, web_recipient};

use askgate_server::{ServerSettings, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};

const TOKEN: &str = "schema-test-token-0123456789abcdefghij";

struct Fixture {
    router: Router,
    document: Value,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::watch::Sender<bool>,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        ..ServerSettings::default()
    };
    let (state, stop) = state_in(dir.path(), vec![web_recipient("me", "Me")], settings).await;
    let router = app(state);
    let request = Request::get("/openapi.json").body(Body::empty()).unwrap();
    let (_, document) = send_to(&router, request).await;
    Fixture {
        router,
        document,
        _dir: dir,
        _stop: stop,
    }
}

impl Fixture {
    /// `POST /v1/questions{query}` with `body`.
    async fn create(&self, query: &str, body: &Value) -> (StatusCode, Value) {
        let request = Request::post(format!("/v1/questions{query}"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        send_to(&self.router, request).await
    }

    fn schema(&self, name: &str) -> &Value {
        &self.document["components"]["schemas"][name]
    }
}

fn question() -> Value {
    json!({"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "A"}, {"label": "B"}]})
}

fn body_with(question: &Value) -> Value {
    json!({"to": "me", "questions": [question]})
}

/// The characters a `[^…]` class of `\uXXXX` escapes and `\uXXXX-\uXXXX`
/// ranges (the only form the document uses) admits.
fn class_admits(pattern: &str, c: char) -> bool {
    let inner = pattern
        .strip_prefix("[^")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{pattern:?} is not a negated class"));
    let mut excluded = Vec::new();
    let mut rest = inner;
    let escape = |rest: &mut &str| -> u32 {
        let hex = rest
            .strip_prefix("\\u")
            .unwrap_or_else(|| panic!("{pattern:?}: expected \\uXXXX at {rest:?}"));
        let code = u32::from_str_radix(&hex[..4], 16).unwrap();
        *rest = &hex[4..];
        code
    };
    while !rest.is_empty() {
        let from = escape(&mut rest);
        let to = match rest.strip_prefix('-') {
            Some(range) => {
                rest = range;
                escape(&mut rest)
            }
            None => from,
        };
        excluded.push(from..=to);
    }
    !excluded.iter().any(|range| range.contains(&u32::from(c)))
}

/// Every character up to U+FFFF except surrogates, and a few beyond.
fn characters() -> impl Iterator<Item = char> {
    (0..=0xFFFF_u32)
        .chain([0x1_0000, 0x1_F600, 0x10_FFFF])
        .filter_map(char::from_u32)
}

#[tokio::test]
async fn a_text_field_of_control_characters_is_refused_and_the_document_says_so() {
    // Found: `"question": "\u009e\u0001\u0090"` matched the document's `\S`
    // but is empty once cleaned, so askgate refused it (422 invalid_question).
    let fixture = fixture().await;
    let question_schema = &fixture.schema("AskQuestion")["properties"];
    for (field, schema) in [
        ("header", &question_schema["header"]),
        ("question", &question_schema["question"]),
        ("label", &question_schema["options"]["items"]["properties"]["label"]),
    ] {
        let pattern = schema["pattern"].as_str().unwrap();
        for c in characters() {
            assert_eq!(
                class_admits(pattern, c),
                !(c.is_whitespace() || c.is_control()),
                "{field}: the pattern and the server's cleaning disagree on U+{:04X}",
                u32::from(c)
            );
        }
        let mut question = question();
        if field == "label" {
            question["options"][0]["label"] = json!("\u{9e}\u{1}\u{90}");
        } else {
            question[field] = json!("\u{9e}\u{1}\u{90}");
        }
        let (status, answer) = fixture.create("", &body_with(&question)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {answer}");
    }
}

#[tokio::test]
async fn the_envelope_names_are_refused_blank_but_taken_with_control_characters() {
    // The envelope is trimmed of white space only, so its pattern admits
    // control characters: `"sessionId": "\u0001"` is a session.
    let fixture = fixture().await;
    let request = &fixture.schema("QuestionRequest")["properties"];
    for field in ["to", "sessionId", "runId", "toolCallId"] {
        let pattern = request[field]["pattern"].as_str().unwrap();
        // The ids' pattern is anchored, to refuse U+0000 anywhere: its
        // middle class is the character that makes them not blank.
        let class = match pattern.strip_prefix("^[^\\u0000]*[^\\u0000") {
            Some(rest) => format!("[^\\u0000{}", rest.strip_suffix("[^\\u0000]*$").unwrap()),
            None => pattern.to_owned(),
        };
        for c in characters() {
            assert_eq!(
                class_admits(&class, c),
                !c.is_whitespace() && (field == "to" || c != '\0'),
                "{field}: the pattern and str::trim disagree on U+{:04X}",
                u32::from(c)
            );
        }
    }
    let mut body = body_with(&question());
    body["sessionId"] = json!("\u{1}");
    body["runId"] = json!("\u{1}");
    let (status, answer) = fixture.create("", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn null_optional_fields_are_taken_and_the_document_allows_them() {
    // Found: `"timeoutSeconds": null` (and `multiSelect`, an option's
    // `description`) read as absent, but the document allowed no null.
    let fixture = fixture().await;
    let request = &fixture.schema("QuestionRequest")["properties"];
    let question_schema = &fixture.schema("AskQuestion")["properties"];
    for schema in [
        &request["timeoutSeconds"],
        &question_schema["multiSelect"],
        &question_schema["options"]["items"]["properties"]["description"],
    ] {
        assert!(schema["type"].as_array().unwrap().contains(&json!("null")), "{schema}");
    }
    let mut question = question();
    question["multiSelect"] = Value::Null;
    question["options"][0]["description"] = Value::Null;
    let mut body = body_with(&question);
    body["timeoutSeconds"] = Value::Null;
    let (status, answer) = fixture.create("", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

#[tokio::test]
async fn identical_options_or_questions_are_refused_and_the_document_says_so() {
    // Most generated "valid" questions were refused for two identical
    // options; `uniqueItems` states the part of the rule JSON Schema can.
    let fixture = fixture().await;
    let request = &fixture.schema("QuestionRequest")["properties"];
    let question_schema = &fixture.schema("AskQuestion")["properties"];
    assert_eq!(request["questions"]["uniqueItems"], true);
    assert_eq!(question_schema["options"]["uniqueItems"], true);
    let mut same_options = question();
    same_options["options"] = json!([{"label": "A"}, {"label": "A"}]);
    let (status, answer) = fixture.create("", &body_with(&same_options)).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("duplicate_label")),
        "{answer}"
    );
    let body = json!({"to": "me", "questions": [question(), question()]});
    let (status, answer) = fixture.create("", &body).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("duplicate_id")),
        "{answer}"
    );
}

#[tokio::test]
async fn a_wait_over_an_hour_is_clamped_and_the_document_allows_it() {
    // The document said `maximum: 3600` while the server clamps any whole
    // number of seconds it can read; it now says what the server reads.
    let fixture = fixture().await;
    let wait = &fixture.document["paths"]["/v1/questions"]["post"]["parameters"][0];
    assert_eq!(wait["name"], "wait");
    assert_eq!(wait["schema"]["maximum"], json!(u64::MAX), "{wait}");
    // A question that has already ended returns at once, whatever the wait.
    let (status, created) = fixture.create("", &body_with(&question())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let cancel = Request::post(format!("/v1/questions/{id}/cancel"))
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, _) = send_to(&fixture.router, cancel).await;
    assert_eq!(status, StatusCode::OK);
    for (wait, expected) in [
        ("3601", StatusCode::OK),
        ("18446744073709551615", StatusCode::OK),
        ("18446744073709551616", StatusCode::BAD_REQUEST),
        ("-1", StatusCode::BAD_REQUEST),
    ] {
        let get = Request::get(format!("/v1/questions/{id}?wait={wait}"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let (status, answer) = send_to(&fixture.router, get).await;
        assert_eq!(status, expected, "wait={wait}: {answer}");
    }
}

#[tokio::test]
async fn a_bad_tool_call_id_is_refused_also_beside_an_idempotency_key_header() {
    // Found: with an `Idempotency-Key` header the body's `toolCallId` went
    // unread, so one of 256 characters was taken though the document's
    // `maxLength` is 255.
    let fixture = fixture().await;
    let tool_call_id = &fixture.schema("QuestionRequest")["properties"]["toolCallId"];
    assert_eq!(tool_call_id["maxLength"], 255, "{tool_call_id}");
    let mut body = body_with(&question());
    body["toolCallId"] = json!("0".repeat(256));
    let request = Request::post("/v1/questions")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", "call-1")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, answer) = send_to(&fixture.router, request).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["path"], "toolCallId", "{answer}");
}

#[tokio::test]
async fn a_nul_in_an_envelope_id_is_refused_with_its_path_and_the_document_says_so() {
    // Found on PostgreSQL, which keeps no U+0000 in text: such a `sessionId`,
    // `runId` or `toolCallId` got 503 (try again) there and was kept by
    // SQLite. Both stores now refuse it before anything is stored.
    let fixture = fixture().await;
    let request = &fixture.schema("QuestionRequest")["properties"];
    for field in ["sessionId", "runId", "toolCallId"] {
        let pattern = request[field]["pattern"].as_str().unwrap();
        assert!(
            pattern.starts_with("^[^\\u0000]*") && pattern.ends_with("[^\\u0000]*$"),
            "{field}: {pattern}"
        );
    }
    let mut body = body_with(&question());
    for field in ["sessionId", "runId", "toolCallId"] {
        body[field] = json!("a\u{0}b");
    }
    let (status, answer) = fixture.create("", &body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let problems: Vec<(&str, &str)> = answer["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| (problem["code"].as_str().unwrap(), problem["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        problems,
        [
            ("invalid_character", "sessionId"),
            ("invalid_character", "runId"),
            ("invalid_character", "toolCallId")
        ],
        "{answer}"
    );
    // One alone is the error's own code and path.
    let mut body = body_with(&question());
    body["sessionId"] = json!("\u{0}");
    let (status, answer) = fixture.create("", &body).await;
    assert_eq!(
        (status, &answer["error"]["code"], &answer["error"]["path"]),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!("invalid_character"),
            &json!("sessionId")
        ),
        "{answer}"
    );
    // A run named so by the path.
    let abort = &fixture.document["paths"]["/v1/runs/{runId}/abort"]["post"];
    assert_eq!(abort["parameters"][0]["schema"]["pattern"], "^[^\\u0000]*$");
    assert!(abort["responses"]["422"].is_object(), "{abort}");
    let request = Request::post("/v1/runs/a%00b/abort")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, answer) = send_to(&fixture.router, request).await;
    assert_eq!(
        (status, &answer["error"]["code"], &answer["error"]["path"]),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!("invalid_character"),
            &json!("runId")
        ),
        "{answer}"
    );
}
