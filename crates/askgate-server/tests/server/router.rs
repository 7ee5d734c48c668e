//! The router in-process with `oneshot`: request decoding, authentication,
//! error shapes and the OpenAPI document, against the real engine and store.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, fixture_in, one_agent_one_page, send_to, web_recipient};

use askgate_server::ServerSettings;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const TOKEN: &str = "router-test-token-0123456789abcdefghij";
const KEY: &str = "router-test-web-key-0123456789abcdefghij";

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        max_body_bytes: 4096,
        ..one_agent_one_page(TOKEN, KEY)
    };
    fixture_in(dir, vec![web_recipient("me", "Me")], settings).await
}

async fn send(fixture: &Fixture, request: Request<Body>) -> (StatusCode, Value) {
    send_to(&fixture.router, request).await
}

fn post(path: &str, token: Option<&str>, content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut request = Request::post(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    request.body(body.into()).unwrap()
}

fn ask_body() -> String {
    json!({
        "to": "me",
        "questions": [{"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "A"}, {"label": "B"}]}],
    })
    .to_string()
}

#[tokio::test]
async fn a_question_is_created_with_its_resource() {
    let fixture = fixture().await;
    let (status, body) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), ask_body()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(body["status"], "pending");
    assert_eq!(body["to"], "me");
    assert_eq!(body["channel"], "web");
    assert_eq!(body["request"]["timeoutSeconds"], 900);
    assert_eq!(body["result"], Value::Null);
}

#[tokio::test]
async fn bodies_are_refused_with_stable_codes() {
    let fixture = fixture().await;
    let cases = [
        (
            post("/v1/questions", None, Some("application/json"), ask_body()),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            post("/v1/questions", Some("wrong"), Some("application/json"), ask_body()),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            post("/v1/questions", Some(TOKEN), Some("text/plain"), ask_body()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            post("/v1/questions", Some(TOKEN), None, ask_body()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            post("/v1/questions", Some(TOKEN), Some("application/json"), "{nope"),
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            post("/v1/questions", Some(TOKEN), Some("application/json"), "[1]"),
            StatusCode::BAD_REQUEST,
            "invalid_type",
        ),
        (
            post("/v1/questions", Some(TOKEN), Some("application/json"), "x".repeat(5000)),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
        (
            post("/v1/ask", Some(TOKEN), Some("application/json; charset=utf-8"), "{}"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
        ),
    ];
    for (request, status, code) in cases {
        let (got, body) = send(&fixture, request).await;
        assert_eq!((got, body["error"]["code"].as_str()), (status, Some(code)), "{body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

#[tokio::test]
async fn validation_reports_every_problem_with_its_path() {
    let fixture = fixture().await;
    let body = json!({
        "to": 7,
        "sessionKind": "robot",
        "colour": "red",
        "questions": [{"id": "Deploy", "header": "", "question": "?", "options": [{"label": "Other"}, {"label": "B"}]}],
    });
    let (status, body) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let found: Vec<(&str, &str)> = body["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["code"].as_str().unwrap(), e["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            ("invalid_type", "to"),
            ("invalid_type", "sessionKind"),
            ("unknown_field", "colour"),
            ("invalid_id", "questions[0].id"),
            ("empty_header", "questions[0].header"),
            ("other_option_not_allowed", "questions[0].options[0].label"),
        ]
    );
    assert_eq!(
        (body["error"]["code"].as_str(), body["error"]["path"].as_str()),
        (Some("invalid_type"), Some("to"))
    );
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case_and_nothing_else_passes() {
    let fixture = fixture().await;
    let with = |authorization: String| {
        Request::post("/v1/questions")
            .header(header::AUTHORIZATION, authorization)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(ask_body()))
            .unwrap()
    };
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let (status, body) = send(&fixture, with(format!("{scheme} {TOKEN}"))).await;
        assert!(status.is_success(), "{scheme}: {status} {body}");
    }
    for refused in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        TOKEN.to_owned(),
        format!("Bearer {TOKEN}x"),
        "Bearer ".to_owned(),
    ] {
        let (status, body) = send(&fixture, with(refused.clone())).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn what_the_openapi_document_allows_the_server_takes_and_blank_is_neither() {
    let fixture = fixture().await;
    let (_, document) = send(&fixture, Request::get("/openapi.json").body(Body::empty()).unwrap()).await;
    let schemas = &document["components"]["schemas"];
    let request = &schemas["QuestionRequest"]["properties"];
    let question = &schemas["AskQuestion"]["properties"];
    for (field, schema) in [
        ("to", &request["to"]),
        ("sessionId", &request["sessionId"]),
        ("runId", &request["runId"]),
        ("header", &question["header"]),
        ("question", &question["question"]),
        ("label", &question["options"]["items"]["properties"]["label"]),
    ] {
        // Something other than white space, which the server trims (and, in
        // the `ask_user` fields, control characters, which it cleans away;
        // in the ids, U+0000 anywhere, which it refuses:
        // schema_regressions.rs).
        let pattern = schema["pattern"].as_str().unwrap_or_default();
        let pattern = pattern
            .strip_prefix("^[^\\u0000]*[^\\u0000")
            .map_or(pattern.to_owned(), |rest| format!("[^{rest}"));
        assert!(
            pattern.starts_with("[^\\u0009-\\u000d\\u0020") || pattern.starts_with("[^\\u0000-\\u0020"),
            "{field}: {schema}"
        );
    }
    // Blank envelope fields are refused, as the document says.
    for field in ["to", "sessionId", "runId"] {
        let mut body: Value = serde_json::from_str(&ask_body()).unwrap();
        body[field] = json!("  ");
        let (status, answer) = send(
            &fixture,
            post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {answer}");
    }
    // Null session fields are taken, as the document says.
    let mut body: Value = serde_json::from_str(&ask_body()).unwrap();
    body["sessionId"] = Value::Null;
    body["runId"] = Value::Null;
    body["sessionKind"] = Value::Null;
    let (status, answer) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert!(status.is_success(), "{answer}");
    // A bad ?wait= on a question is a 400 the document lists.
    assert!(document["paths"]["/v1/questions/{id}"]["get"]["responses"]["400"].is_object());
}

#[tokio::test]
async fn an_error_body_lists_at_most_50_problems_and_counts_them_all() {
    let fixture = fixture().await;
    // 3 questions × (a bad id, an empty header and question, 30 bad options…):
    // far more problems than an answer should list.
    let options: Vec<Value> = (0..60).map(|_| json!({"label": ""})).collect();
    let question = json!({"id": "Bad Id", "header": "", "question": "", "options": options});
    let body = json!({"to": "me", "questions": [question.clone(), question.clone(), question]});
    let (status, answer) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let listed = answer["error"]["errors"].as_array().unwrap().len();
    let count = answer["error"]["errorCount"].as_u64().unwrap();
    assert_eq!(listed, 50, "{answer}");
    assert!(count > 50, "{answer}");
    assert!(
        answer.to_string().len() < 16_000,
        "a bounded body: {} bytes",
        answer.to_string().len()
    );
}

#[tokio::test]
async fn the_page_is_never_framed_cached_or_sniffed_and_a_cross_site_form_cannot_skip() {
    let fixture = fixture().await;
    let page = fixture
        .router
        .clone()
        .oneshot(Request::get(format!("/web/{KEY}")).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let headers = page.headers();
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    for directive in [
        "script-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'none'",
        "default-src 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let state = fixture
        .router
        .clone()
        .oneshot(
            Request::get(format!("/web/{KEY}/api/state"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(state.headers()[header::CACHE_CONTROL], "no-store");
    assert_eq!(state.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");

    // A question, and a cross-site page posting a form at its Skip.
    let (_, created) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), ask_body()),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let skip = format!("/web/{KEY}/api/questions/{id}/skip");
    for content_type in [
        Some("application/x-www-form-urlencoded"),
        Some("text/plain"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let (status, answer) = send(&fixture, post(&skip, None, content_type, "a=b")).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("unsupported_media_type")),
            "{content_type:?}"
        );
    }
    let (_, resource) = send(
        &fixture,
        Request::get(format!("/v1/questions/{id}"))
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(resource["status"], "pending", "{resource}");
    // The page's own request skips.
    let (status, _) = send(&fixture, post(&skip, None, Some("application/json"), "{}")).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_routes_and_questions_are_json_404s() {
    let fixture = fixture().await;
    for path in [
        "/nope",
        "/v1/questions/01J0000000000000000000000",
        "/v1/questions/bad%20id",
        "/web/wrong-key",
    ] {
        let request = Request::get(path)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let (status, body) = send(&fixture, request).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}"
        );
    }
}

#[tokio::test]
async fn bad_queries_and_methods_are_json_errors() {
    let fixture = fixture().await;
    let (_, created) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), ask_body()),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let get = |path: String| {
        Request::get(path)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap()
    };
    for query in ["wait=abc", "wait=1&wait=2", "wait=-1", "wait="] {
        let (status, body) = send(&fixture, get(format!("/v1/questions/{id}?{query}"))).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_query")),
            "{query}"
        );
    }
    let (status, body) = send(&fixture, get(format!("/v1/questions/{id}?other=1&wait=0"))).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("pending")));
    let (status, body) = send(&fixture, get("/v1/ask".to_owned())).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
}

#[tokio::test]
async fn the_openapi_document_describes_every_agent_route_with_the_guidance() {
    let fixture = fixture().await;
    let (status, document) = send(&fixture, Request::get("/openapi.json").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], "3.1.0");
    let paths: Vec<&str> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        paths,
        [
            "/v1/ask",
            "/v1/questions",
            "/v1/questions/{id}",
            "/v1/questions/{id}/events",
            "/v1/questions/{id}/cancel",
            "/v1/agent",
            "/v1/runs/{runId}/abort"
        ]
    );
    let description = document["paths"]["/v1/ask"]["post"]["description"].as_str().unwrap();
    assert_eq!(description, askgate_core::guidance::TOOL_DESCRIPTION);
    // Every described route exists: none of them answers "no such route".
    for (path, method) in [
        ("/v1/ask", "POST"),
        ("/v1/questions", "POST"),
        ("/v1/questions/x/events", "GET"),
        ("/v1/questions/x/cancel", "POST"),
        ("/v1/agent", "GET"),
        ("/v1/runs/x/abort", "POST"),
    ] {
        let request = Request::builder().method(method).uri(path).body(Body::empty()).unwrap();
        let (status, body) = send(&fixture, request).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn health_readiness_metrics_and_the_page_assets() {
    let fixture = fixture().await;
    let (status, body) = send(&fixture, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ok"})));
    let (status, body) = send(&fixture, Request::get("/readyz").body(Body::empty()).unwrap()).await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"status": "ready", "channels": {}}))
    );
    send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), ask_body()),
    )
    .await;
    let (status, Value::String(metrics)) = send(&fixture, Request::get("/metrics").body(Body::empty()).unwrap()).await
    else {
        panic!("metrics are text");
    };
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("askgate_questions_created_total{channel=\"web\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("askgate_questions_pending 1"), "{metrics}");
    for path in [
        format!("/web/{KEY}"),
        "/assets/web.js".to_owned(),
        "/assets/web-words.js".to_owned(),
        "/assets/web.css".to_owned(),
    ] {
        let response = fixture
            .router
            .clone()
            .oneshot(Request::get(&path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn every_field_of_the_ask_user_arguments_is_described_as_the_guidance_says() {
    let fixture = fixture().await;
    let (_, document) = send(&fixture, Request::get("/openapi.json").body(Body::empty()).unwrap()).await;
    let schemas = &document["components"]["schemas"];
    let request = &schemas["QuestionRequest"]["properties"];
    let question = &schemas["AskQuestion"]["properties"];
    let option = &question["options"]["items"]["properties"];
    support::assert_fields_described(request, question, option);
}

#[tokio::test]
async fn a_wrong_token_is_told_apart_from_a_missing_one_and_413_states_the_limit() {
    let fixture = fixture().await;
    let (missing_status, missing) = send(
        &fixture,
        post("/v1/questions", None, Some("application/json"), ask_body()),
    )
    .await;
    let (wrong_status, wrong) = send(
        &fixture,
        post(
            "/v1/questions",
            Some("not-a-token-askgate-knows"),
            Some("application/json"),
            ask_body(),
        ),
    )
    .await;
    assert_eq!(
        (missing_status, wrong_status),
        (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED)
    );
    assert_eq!(
        (&missing["error"]["code"], &wrong["error"]["code"]),
        (&json!("unauthorized"), &json!("unauthorized"))
    );
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer"),
        "{missing}"
    );
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not one askgate knows"),
        "{wrong}"
    );

    let big = "x".repeat(5000);
    let (status, body) = send(
        &fixture,
        post(
            "/v1/questions",
            Some(TOKEN),
            Some("application/json"),
            format!("\"{big}\""),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("4096 bytes"),
        "the refusal states the limit: {body}"
    );
}

/// An error names what it blames with an excerpt, never the whole input: a
/// 60 KB id, field name, recipient, answer key or route gets an error body
/// of a few hundred bytes that still carries its code and path.
#[tokio::test]
async fn error_bodies_quote_the_request_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        max_body_bytes: 512 * 1024,
        ..one_agent_one_page(TOKEN, KEY)
    };
    let fixture = fixture_in(dir, vec![web_recipient("me", "Me")], settings).await;
    let huge = "x".repeat(60_000);
    let sent = |request: Request<Body>| {
        let router = fixture.router.clone();
        async move {
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            (status, bytes.len(), body)
        }
    };
    let check = |what: &str, (status, size, body): (StatusCode, usize, Value), expected: (StatusCode, &str)| {
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (expected.0, Some(expected.1)),
            "{what}: {body}"
        );
        assert!(size < 1024, "{what}: an error body of {size} bytes");
        assert!(!body.to_string().contains(&huge[..100]), "{what}: {body}");
        body
    };
    let json_post = |path: &str, body: Value| post(path, Some(TOKEN), Some("application/json"), body.to_string());

    let mut ask: Value = serde_json::from_str(&ask_body()).unwrap();
    ask["questions"][0]["id"] = json!(format!("a{huge}"));
    let body = check(
        "a 60 KB question id",
        sent(json_post("/v1/questions", ask)).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_id"),
    );
    assert_eq!(body["error"]["path"], "questions[0].id", "{body}");

    let mut ask: Value = serde_json::from_str(&ask_body()).unwrap();
    ask[&huge] = json!(true);
    let body = check(
        "a 60 KB unknown field",
        sent(json_post("/v1/questions", ask)).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field"),
    );
    let path = body["error"]["path"].as_str().unwrap();
    assert!(path.starts_with("xxxxxxxx") && path.ends_with('…'), "{body}");

    let mut ask: Value = serde_json::from_str(&ask_body()).unwrap();
    ask["to"] = json!(huge);
    let body = check(
        "a 60 KB recipient",
        sent(json_post("/v1/questions", ask)).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_recipient"),
    );
    assert_eq!(body["error"]["path"], "to", "{body}");

    for route in [format!("/v1/{huge}"), format!("/v1/questions/{huge}")] {
        let request = Request::get(route)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        check(
            "a 60 KB route",
            sent(request).await,
            (StatusCode::NOT_FOUND, "not_found"),
        );
    }

    let (_, created) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), ask_body()),
    )
    .await;
    let answer = format!("/web/{KEY}/api/questions/{}/answer", created["id"].as_str().unwrap());
    let web_post = |body: Value| post(&answer, None, Some("application/json"), body.to_string());
    check(
        "a 60 KB field of a page answer",
        sent(web_post(json!({ &huge: 1 }))).await,
        (StatusCode::BAD_REQUEST, "invalid_json"),
    );
    check(
        "a 60 KB string of a page answer",
        sent(web_post(json!({"answers": {"deploy": {"text": 1, "options": huge}}}))).await,
        (StatusCode::BAD_REQUEST, "invalid_json"),
    );
    let body = check(
        "a 60 KB answer key",
        sent(web_post(json!({"answers": {&huge: {"options": [0]}}}))).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_answer"),
    );
    let path = body["error"]["path"].as_str().unwrap();
    assert!(path.starts_with("answers.xxxx") && path.ends_with('…'), "{body}");
}

/// A question's own reminders and escalations: planned and listed in the
/// resource; each one that cannot be read or kept is refused with its path.
#[tokio::test]
async fn a_question_sets_its_reminders_and_escalations_and_bad_ones_are_named_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_in(
        dir,
        vec![web_recipient("me", "Me"), on_a_chat("lead", "Lead")],
        ServerSettings {
            max_body_bytes: 4096,
            ..one_agent_one_page(TOKEN, KEY)
        },
    )
    .await;
    let mut body: Value = serde_json::from_str(&ask_body()).unwrap();
    body["timeoutSeconds"] = json!(600);
    body["remind"] = json!(["50%", "2m before"]);
    body["escalate"] = json!([{"after": "5m", "to": "lead"}]);
    let (status, created) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let reminders = created["reminders"].as_array().unwrap();
    assert_eq!(reminders.len(), 2);
    assert!(reminders.iter().all(|reminder| reminder["sentAt"].is_null()));
    assert_eq!(created["escalations"][0]["to"], "lead");
    assert!(created["escalations"][0]["escalatedAt"].is_null());
    let asked = epoch_seconds(&created["createdAt"]);
    assert_eq!(epoch_seconds(&reminders[0]["at"]) - asked, 300);
    assert_eq!(epoch_seconds(&reminders[1]["at"]) - asked, 480);
    assert_eq!(epoch_seconds(&created["escalations"][0]["at"]) - asked, 300);

    body["sessionId"] = json!("another");
    body["remind"] = json!(["150%", 3]);
    body["escalate"] = json!([{"after": "1h", "to": "lead"}, {"after": "soon", "to": " ", "when": 1}]);
    let (status, refused) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let problems: Vec<(String, String)> = refused["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["code"].as_str().unwrap().to_owned(),
                e["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("invalid_reminder", "remind[0]"),
        ("invalid_type", "remind[1]"),
        ("unknown_field", "escalate[1].when"),
        ("invalid_escalation", "escalate[1].after"),
        ("invalid_escalation", "escalate[1].to"),
    ];
    for (code, path) in expected {
        assert!(
            problems.iter().any(|(c, p)| c == code && p == path),
            "{code} at {path} missing from {problems:?}"
        );
    }
    // Well formed, but after the question ends (600 s): refused when asked.
    body["remind"] = json!(null);
    body["escalate"] = json!([{"after": "1h", "to": "lead"}]);
    let (status, refused) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let problem = refused["error"]["errors"].get(0).unwrap_or(&refused["error"]);
    assert_eq!(problem["code"], "invalid_escalation");
    assert_eq!(problem["path"], "escalate[0].after");
    assert!(problem["message"].as_str().unwrap().contains("600 s"), "{problem}");
    // Nor to a recipient who has only the page: an escalation reaches a chat.
    body["escalate"] = json!([{"after": "1m", "to": "me"}]);
    let (status, refused) = send(
        &fixture,
        post("/v1/questions", Some(TOKEN), Some("application/json"), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let problem = refused["error"]["errors"].get(0).unwrap_or(&refused["error"]);
    assert_eq!(problem["path"], "escalate[0].to");
}

/// A recipient in a chat (a Telegram chat no test here sends to): whom an
/// escalation can reach.
fn on_a_chat(name: &str, display_name: &str) -> askgate_engine::Recipient {
    let destination = askgate_core::channel::Destination {
        conversation: "42".into(),
        thread: None,
    };
    askgate_engine::Recipient::on(
        name,
        display_name,
        askgate_engine::RecipientSurface::new("tg", "telegram", destination, vec![]),
        askgate_core::Locale::En,
    )
}

/// Seconds since the epoch of an RFC 3339 time as the resource writes it
/// (`2026-12-05T20:00:00.000Z`).
fn epoch_seconds(value: &Value) -> i64 {
    let time = humantime::parse_rfc3339(value.as_str().unwrap()).unwrap();
    i64::try_from(time.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

const ONLY_ME: &str = "router-test-only-me-0123456789abcdefghij";
const NOBODY: &str = "router-test-nobody-0123456789abcdefghijk";

/// `me` and 24 more recipients, agent `one` (`TOKEN`, everybody), agent
/// `only_me` (`ONLY_ME`), and agent `ghost` (`NOBODY`), allowed only a
/// recipient that is not configured.
async fn many_recipients() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let limited = |name: &str, token: &str, allowed: &str| askgate_server::AgentToken {
        name: name.into(),
        token: token.into(),
        allowed: askgate_server::Allowed::Only(vec![allowed.into()]),
        max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
        callback_hosts: Vec::new(),
    };
    let mut settings = one_agent_one_page(TOKEN, KEY);
    settings.agents.push(limited("only_me", ONLY_ME, "me"));
    settings.agents.push(limited("ghost", NOBODY, "gone"));
    let mut recipients = vec![web_recipient("me", "Me")];
    recipients.extend((1..=24).map(|n| web_recipient(&format!("r{n:02}"), "R")));
    fixture_in(dir, recipients, settings).await
}

async fn document_of(fixture: &Fixture) -> Value {
    send(fixture, Request::get("/openapi.json").body(Body::empty()).unwrap())
        .await
        .1
}

fn without_to() -> Value {
    let mut body: Value = serde_json::from_str(&ask_body()).unwrap();
    body.as_object_mut().unwrap().remove("to");
    body
}

fn json_request(path: &str, token: &str, body: &Value) -> Request<Body> {
    post(path, Some(token), Some("application/json"), body.to_string())
}

#[tokio::test]
async fn to_may_be_left_out_when_the_token_may_ask_one_recipient() {
    let fixture = many_recipients().await;
    let (status, body) = send(&fixture, json_request("/v1/questions", ONLY_ME, &without_to())).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["to"], "me", "{body}");
    // A null `to` is one left out, as the document says.
    let mut null = without_to();
    null["to"] = Value::Null;
    let (status, body) = send(&fixture, json_request("/v1/questions", ONLY_ME, &null)).await;
    assert_eq!((status, &body["to"]), (StatusCode::CREATED, &json!("me")), "{body}");
    let to = &document_of(&fixture).await["components"]["schemas"]["QuestionRequest"]["properties"]["to"];
    assert_eq!(to["type"], json!(["string", "null"]), "{to}");

    // The blocking call too: its response starts, naming the question.
    let response = fixture
        .router
        .clone()
        .oneshot(json_request("/v1/ask", ONLY_ME, &without_to()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["askgate-question-id"].to_str().unwrap().to_owned();
    drop(response);
    let request = Request::get(format!("/v1/questions/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {ONLY_ME}"))
        .body(Body::empty())
        .unwrap();
    let (status, resource) = send(&fixture, request).await;
    assert_eq!((status, &resource["to"]), (StatusCode::OK, &json!("me")), "{resource}");

    // The document no longer requires it.
    let document = document_of(&fixture).await;
    let required = &document["components"]["schemas"]["QuestionRequest"]["required"];
    assert_eq!(required, &json!(["questions"]), "{required}");
}

/// The names a message lists: the first 20 of the sorted 25 (`me`, then
/// `r01` to `r19`), then how many more.
fn assert_lists_twenty_and_more(message: &str) {
    let listed = std::iter::once("\"me\"".to_owned())
        .chain((1..=19).map(|n| format!("\"r{n:02}\"")))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(message.contains(&format!("{listed} and 5 more")), "{message}");
    assert!(!message.contains("r20"), "{message}");
}

#[tokio::test]
async fn to_left_out_with_several_or_no_recipients_is_refused_with_the_names() {
    let fixture = many_recipients().await;
    for path in ["/v1/questions", "/v1/ask"] {
        let (status, body) = send(&fixture, json_request(path, TOKEN, &without_to())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        assert_eq!(body["error"]["code"], "missing_field", "{path}: {body}");
        assert_eq!(body["error"]["path"], "to", "{path}: {body}");
        assert_lists_twenty_and_more(body["error"]["message"].as_str().unwrap());

        let (status, body) = send(&fixture, json_request(path, NOBODY, &without_to())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        assert_eq!(
            (body["error"]["code"].as_str(), body["error"]["path"].as_str()),
            (Some("missing_field"), Some("to")),
            "{body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("may ask no configured recipient"), "{message}");
    }
    // Reported with the request's other problems, all at once.
    let mut body = without_to();
    body["colour"] = json!("red");
    let (status, body) = send(&fixture, json_request("/v1/questions", TOKEN, &body)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let paths: Vec<&str> = body["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["colour", "to"], "{body}");
}

#[tokio::test]
async fn an_unknown_or_forbidden_recipient_is_refused_with_the_names_the_token_may_ask() {
    let fixture = many_recipients().await;
    let mut body = without_to();
    body["to"] = json!("nobdy");
    for path in ["/v1/questions", "/v1/ask"] {
        let (status, answer) = send(&fixture, json_request(path, TOKEN, &body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["error"]["code"], "unknown_recipient", "{answer}");
        assert_eq!(answer["error"]["path"], "to", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("No recipient named \"nobdy\" is configured; "),
            "{message}"
        );
        assert_lists_twenty_and_more(message);

        let (status, answer) = send(&fixture, json_request(path, ONLY_ME, &body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
        assert_eq!(answer["error"]["code"], "recipient_not_allowed", "{answer}");
        assert_eq!(
            answer["error"]["message"], "This agent token may not ask \"nobdy\"; it may ask \"me\".",
            "{answer}"
        );
    }
    // Long names are cut short and fewer listed: the sentence stays whole
    // within an error's bound.
    let dir = tempfile::tempdir().unwrap();
    let long: Vec<_> = (0..10)
        .map(|n| web_recipient(&format!("{n}{}", "x".repeat(100)), "Long"))
        .collect();
    let fixture = fixture_in(dir, long, one_agent_one_page(TOKEN, KEY)).await;
    let (_, answer) = send(&fixture, json_request("/v1/questions", TOKEN, &body)).await;
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.ends_with(" more."), "{message}");
    assert!(message.chars().count() < 400, "{message}");
}
