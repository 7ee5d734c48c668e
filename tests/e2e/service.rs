//! askgate's service, end to end: the real `askgate serve` binary on a
//! loopback port (`tests/e2e/support`), driven over HTTP as an agent (the `/v1`
//! API) and as the person answering (the web page's API), killed, stopped
//! and restarted on the same data directory; and the `check-config` command
//! against it (`askgate ask` is in `tests/e2e/agent_retries.rs`).

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    AGENT_TOKEN, ASKGATE, EventStream, LIMITED_TOKEN, MAX_BODY_BYTES, ME_KEY, OTHER_KEY, POLL_TIMEOUT, Reply, Server,
    metric, now_millis, rfc3339_millis,
};

/// How long a waiting call may take to return once its question has ended.
const PROMPTLY: Duration = Duration::from_secs(10);

/// The one-question prompt of the spec's examples.
fn deploy_prompt() -> Value {
    json!({
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": [
                {"label": "Staging (Recommended)", "description": "safe, resets nightly"},
                {"label": "Production"},
                {"label": "Canary"}
            ]
        }],
        "timeoutSeconds": 600
    })
}

/// A question request for `me`: the deploy prompt plus envelope fields.
fn ask_body(envelope: &Value) -> Value {
    let mut body = deploy_prompt();
    body["to"] = json!("me");
    for (name, value) in envelope.as_object().expect("envelope fields are an object") {
        body[name] = value.clone();
    }
    body
}

fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("the resource has an id").to_owned()
}

/// Starts `POST /v1/ask` as agent `one`; returns once the response has begun.
async fn start_ask(server: &Server, body: &Value) -> reqwest::Response {
    let response = server
        .http()
        .post(server.url("/v1/ask"))
        .bearer_auth(AGENT_TOKEN)
        .json(body)
        .send()
        .await
        .expect("POST /v1/ask is answered");
    assert_eq!(response.status(), 200, "POST /v1/ask was refused");
    response
}

fn question_id_header(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("askgate-question-id")
        .expect("POST /v1/ask names its question in askgate-question-id")
        .to_str()
        .expect("a text header")
        .to_owned()
}

/// Reads the rest of a `POST /v1/ask` body (within `PROMPTLY`).
async fn finish_ask(response: reqwest::Response) -> Reply {
    let reply = tokio::time::timeout(PROMPTLY, Reply::read(response))
        .await
        .expect("the waiting POST /v1/ask returns promptly");
    // A terminal or a line-reading client shows the result on its own line.
    assert!(
        reply.text.ends_with('\n'),
        "the body ends with a newline: {:?}",
        reply.text
    );
    reply
}

fn sorted(ids: &Value) -> Vec<String> {
    let mut ids: Vec<String> = ids
        .as_array()
        .expect("an array of ids")
        .iter()
        .map(|id| id.as_str().expect("an id").to_owned())
        .collect();
    ids.sort();
    ids
}

// 1 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_answered_on_the_web_page_returns_the_exact_tool_result() {
    let server = Server::start();
    let request = server
        .http()
        .post(server.url("/v1/ask"))
        .bearer_auth(AGENT_TOKEN)
        .json(&ask_body(&json!({"sessionId": "session-1"})));
    let call = tokio::spawn(request.send());

    let pending = server.pending_on_page(ME_KEY, 1).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    let id = id_of(&pending[0]);
    assert_eq!(pending[0]["status"], "pending");
    assert_eq!(pending[0]["request"], server.question(&id).await["request"]);

    let mut response = call
        .await
        .expect("the ask task runs")
        .expect("POST /v1/ask is answered");
    assert_eq!(response.status(), 200);
    assert_eq!(question_id_header(&response), id);
    let content_type = response.headers()["content-type"].to_str().expect("text");
    assert!(content_type.starts_with("application/json"), "{content_type}");

    // While the question waits, the body is keep-alive whitespace and nothing else.
    let first = tokio::time::timeout(PROMPTLY, response.chunk())
        .await
        .expect("a keep-alive arrives within the keep-alive interval")
        .expect("the body can be read")
        .expect("the body has not ended");
    assert!(
        !first.is_empty() && first.iter().all(|b| *b == b' '),
        "while pending the body is only spaces: {first:?}"
    );

    let (status, answered) = server.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!((status, answered), (200, json!({"status": "answered"})));

    let rest = finish_ask(response).await;
    let body = String::from_utf8_lossy(&first).into_owned() + rest.text.as_str();
    assert!(body.starts_with(' '), "{body:?}");
    // Parsed as it is: JSON allows the leading whitespace.
    let result: Value = serde_json::from_str(&body).expect("the whole body is JSON");
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );
    assert_eq!(server.question(&id).await["status"], "answered");
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
}

// 2 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_question_answer_with_free_text_is_on_the_resource() {
    let server = Server::start();
    let asked_at = now_millis();
    let created = server
        .create(&json!({
            "to": "me",
            "sessionId": "session-2",
            "runId": "run-2",
            "timeoutSeconds": 120,
            "questions": [
                {
                    "id": "deploy_target",
                    "header": "Deploy",
                    "question": "Where should this build go?",
                    "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
                },
                {
                    "id": "notify",
                    "header": "Notify",
                    "question": "Who should be told?",
                    "multiSelect": true,
                    "options": [{"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody"}]
                }
            ]
        }))
        .await;
    let id = id_of(&created);
    assert_eq!(created["to"], "me");
    assert_eq!(created["channel"], "web");
    assert_eq!(created["sessionId"], "session-2");
    assert_eq!(created["runId"], "run-2");
    assert_eq!(created["result"], Value::Null);
    assert_eq!(created["resolution"], Value::Null);

    let (status, body) = server
        .web_answer(
            ME_KEY,
            &id,
            &json!({
                "deploy_target": {"options": [0], "text": null},
                "notify": {"options": [], "text": "  the release manager  "}
            }),
        )
        .await;
    assert_eq!((status, body), (200, json!({"status": "answered"})));

    let resource = server.question(&id).await;
    assert_eq!(resource["id"], json!(id));
    assert_eq!(resource["status"], "answered");
    assert_eq!(
        resource["result"],
        json!({"status": "answered", "answers": {"answers": {
            "deploy_target": ["Staging (Recommended)"],
            "notify": ["the release manager"]
        }}})
    );
    let resolution = &resource["resolution"];
    assert_eq!(resolution["status"], "answered");
    assert_eq!(resolution["by"]["displayName"], "Me");
    assert_eq!(resolution["via"], "web");
    assert_eq!(
        resolution["answers"],
        json!({
            "deploy_target": [{"kind": "option", "index": 0, "label": "Staging (Recommended)"}],
            "notify": [{"kind": "free_text", "text": "the release manager"}]
        })
    );
    assert_eq!(resource["request"]["timeoutSeconds"], 120);
    assert_eq!(resource["request"]["questions"][1]["multiSelect"], true);

    let created_at = rfc3339_millis(resource["createdAt"].as_str().expect("createdAt is text"));
    let expires_at = rfc3339_millis(resource["expiresAt"].as_str().expect("expiresAt is text"));
    let resolved_at = rfc3339_millis(resource["resolvedAt"].as_str().expect("resolvedAt is text"));
    assert_eq!(expires_at - created_at, 120_000, "{resource}");
    assert!((created_at - asked_at).abs() < 60_000, "createdAt is now: {resource}");
    assert!(created_at <= resolved_at && resolved_at < expires_at, "{resource}");
    assert_eq!(resource["createdAt"], created["createdAt"]);
    assert_eq!(resource["expiresAt"], created["expiresAt"]);
}

// 3 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_waiting_get_with_no_answer_and_is_idempotent() {
    let server = Server::start();
    let id = id_of(&server.create(&ask_body(&json!({"sessionId": "session-3"}))).await);

    let waiting = {
        let request = server
            .http()
            .get(server.url(&format!("/v1/questions/{id}?wait=30")))
            .bearer_auth(AGENT_TOKEN);
        tokio::spawn(async move { Reply::read(request.send().await.expect("the GET is answered")).await })
    };
    // Give the GET time to start waiting; it must still be waiting then.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "GET ?wait=30 returned while the question was pending"
    );

    let (status, cancelled) = server
        .post_empty(&format!("/v1/questions/{id}/cancel"), Some(AGENT_TOKEN))
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["result"], json!({"status": "no_answer"}));

    let waited = tokio::time::timeout(PROMPTLY, waiting)
        .await
        .expect("the waiting GET returns once the question is cancelled")
        .expect("the GET task runs");
    let (status, resource) = waited.status_json();
    assert_eq!(status, 200);
    assert_eq!(resource["status"], "cancelled");
    assert_eq!(resource["result"], json!({"status": "no_answer"}));
    assert_eq!(resource["resolution"]["status"], "cancelled");

    // Again: the same answer, nothing changes.
    let (status, again) = server
        .post_empty(&format!("/v1/questions/{id}/cancel"), Some(AGENT_TOKEN))
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, cancelled);

    // The page no longer offers it, and it can no longer be answered.
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
    let (status, ended) = server.web_choose(ME_KEY, &id, "deploy_target", 0).await;
    assert_eq!(status, 409, "{ended}");
    assert_eq!(ended["error"]["code"], "question_ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_run_cancels_its_pending_questions_only() {
    let server = Server::start();
    let a = id_of(
        &server
            .create(&ask_body(&json!({"runId": "r1", "sessionId": "s-a"})))
            .await,
    );
    let b = id_of(
        &server
            .create(&ask_body(&json!({"runId": "r1", "sessionId": "s-b"})))
            .await,
    );
    let c = id_of(
        &server
            .create(&ask_body(&json!({"runId": "r2", "sessionId": "s-c"})))
            .await,
    );

    // Another agent's abort of a run with the same name touches nothing of agent one's.
    let (status, aborted) = server.post_empty("/v1/runs/r1/abort", Some(LIMITED_TOKEN)).await;
    assert_eq!((status, aborted), (200, json!({"runId": "r1", "cancelled": []})));
    assert_eq!(server.question(&a).await["status"], "pending");

    let (status, aborted) = server.post_empty("/v1/runs/r1/abort", Some(AGENT_TOKEN)).await;
    assert_eq!(status, 200, "{aborted}");
    assert_eq!(aborted["runId"], "r1");
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    assert_eq!(sorted(&aborted["cancelled"]), expected);
    assert_eq!(aborted.as_object().map(serde_json::Map::len), Some(2), "{aborted}");
    for id in [&a, &b] {
        let resource = server.question(id).await;
        assert_eq!(resource["status"], "cancelled", "{resource}");
        assert_eq!(resource["result"], json!({"status": "no_answer"}));
    }
    assert_eq!(server.question(&c).await["status"], "pending");

    // A blocking ask in the aborted run (a run goes on being aborted until it stops).
    let response = start_ask(&server, &ask_body(&json!({"runId": "r1", "sessionId": "s-d"}))).await;
    let d = question_id_header(&response);
    server.question_with_status(&d, "pending", POLL_TIMEOUT).await;
    let (status, aborted) = server.post_empty("/v1/runs/r1/abort", Some(AGENT_TOKEN)).await;
    assert_eq!((status, aborted), (200, json!({"runId": "r1", "cancelled": [d]})));
    let reply = finish_ask(response).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), json!({"status": "no_answer"}));

    let (status, aborted) = server
        .post_empty("/v1/runs/nothing-here/abort", Some(AGENT_TOKEN))
        .await;
    assert_eq!(
        (status, aborted),
        (200, json!({"runId": "nothing-here", "cancelled": []}))
    );
    assert_eq!(server.question(&c).await["status"], "pending");
    let pending = server.web_state(ME_KEY).await["pending"].clone();
    let listed: Vec<String> = pending.as_array().expect("a list").iter().map(id_of).collect();
    assert_eq!(listed, [c], "{pending}");
}

// 4 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_ask_whose_caller_goes_away_is_cancelled() {
    let server = Server::start();
    let caller = reqwest::Client::builder().no_proxy().build().expect("a client");
    let response = caller
        .post(server.url("/v1/ask"))
        .bearer_auth(AGENT_TOKEN)
        .json(&ask_body(&json!({"sessionId": "session-4"})))
        .send()
        .await
        .expect("POST /v1/ask is answered");
    assert_eq!(response.status(), 200);
    let id = question_id_header(&response);
    assert_eq!(server.question(&id).await["status"], "pending");

    drop(response);
    drop(caller);
    let resource = server
        .question_with_status(&id, "cancelled", Duration::from_secs(10))
        .await;
    assert_eq!(resource["result"], json!({"status": "no_answer"}));
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
}

// 5 ────────────────────────────────────────────────────────────────────────

fn assert_error(what: &str, (status, body): &(u16, Value), expected_status: u16, code: &str, path: Option<&str>) {
    assert_eq!(*status, expected_status, "{what}: {body}");
    assert_eq!(body["error"]["code"], code, "{what}: {body}");
    assert!(
        body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: every error has a message: {body}"
    );
    match path {
        Some(path) => assert_eq!(body["error"]["path"], path, "{what}: {body}"),
        None => assert!(body["error"].get("path").is_none(), "{what}: no path expected: {body}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_authenticated_and_limited() {
    let server = Server::start();
    let body = ask_body(&json!({}));

    let missing = server.post_json("/v1/questions", None, &body).await;
    assert_error("no Authorization", &missing, 401, "unauthorized", None);
    let missing = server.get("/v1/questions/01J00000000000000000000000", None).await;
    assert_error("GET without Authorization", &missing, 401, "unauthorized", None);
    let wrong = server
        .post_json(
            "/v1/questions",
            Some("svc-test-not-a-token-0123456789abcdefghijkl"),
            &body,
        )
        .await;
    assert_error("a wrong token", &wrong, 401, "unauthorized", None);
    let reply = server
        .send(
            server
                .http()
                .post(server.url("/v1/ask"))
                .header("authorization", format!("Basic {AGENT_TOKEN}"))
                .json(&body),
        )
        .await;
    assert_error("not a bearer token", &reply.status_json(), 401, "unauthorized", None);

    let mut to_other = body.clone();
    to_other["to"] = json!("other");
    let refused = server.post_json("/v1/questions", Some(LIMITED_TOKEN), &to_other).await;
    assert_error("limited asks other", &refused, 403, "recipient_not_allowed", Some("to"));
    let refused = server.post_json("/v1/ask", Some(LIMITED_TOKEN), &to_other).await;
    assert_error(
        "limited asks other (ask)",
        &refused,
        403,
        "recipient_not_allowed",
        Some("to"),
    );
    let (status, allowed) = server.post_json("/v1/questions", Some(LIMITED_TOKEN), &body).await;
    assert_eq!(status, 201, "limited may ask me: {allowed}");

    let subagent = ask_body(&json!({"sessionKind": "subagent", "sessionId": "sub-1"}));
    let refused = server.post_json("/v1/questions", Some(AGENT_TOKEN), &subagent).await;
    assert_eq!(refused.0, 403, "{}", refused.1);
    assert_eq!(refused.1["error"]["code"], "subagent_not_allowed", "{}", refused.1);
    let refused = server.post_json("/v1/ask", Some(AGENT_TOKEN), &subagent).await;
    assert_eq!(refused.0, 403, "{}", refused.1);
    assert_eq!(refused.1["error"]["code"], "subagent_not_allowed", "{}", refused.1);

    // None of the refused requests created a question.
    let pending = server.web_state(ME_KEY).await["pending"].clone();
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending}");
    assert_eq!(server.web_state(OTHER_KEY).await["pending"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_request_bodies_get_their_status_and_code() {
    let server = Server::start();
    let post_raw = |content_type: &'static str, body: Vec<u8>| {
        server
            .http()
            .post(server.url("/v1/questions"))
            .bearer_auth(AGENT_TOKEN)
            .header("content-type", content_type)
            .body(body)
    };

    let not_json = server
        .send(post_raw("application/json", b"{\"to\": \"me\",".to_vec()))
        .await;
    assert_error("not JSON", &not_json.status_json(), 400, "invalid_json", None);
    let form = server.send(post_raw("text/plain", b"{\"to\": \"me\"}".to_vec())).await;
    assert_error("text/plain", &form.status_json(), 415, "unsupported_media_type", None);
    let ask_form = server
        .send(
            server
                .http()
                .post(server.url("/v1/ask"))
                .bearer_auth(AGENT_TOKEN)
                .header("content-type", "application/x-www-form-urlencoded")
                .body("to=me"),
        )
        .await;
    assert_error(
        "form on /v1/ask",
        &ask_form.status_json(),
        415,
        "unsupported_media_type",
        None,
    );

    let mut big = ask_body(&json!({}));
    big["questions"][0]["question"] = json!("x".repeat(MAX_BODY_BYTES + 1));
    let too_large = server
        .send(post_raw("application/json", big.to_string().into_bytes()))
        .await;
    assert_error(
        "over max_body_bytes",
        &too_large.status_json(),
        413,
        "payload_too_large",
        None,
    );

    // Several problems: all reported, the first one's code on top.
    let mut invalid = ask_body(&json!({}));
    invalid["priority"] = json!("high");
    invalid["questions"][0]["options"] = json!([
        {"label": "Staging (Recommended)"},
        {"label": "Production"},
        {"label": "Canary"},
        {"label": "Blue-green"},
        {"label": "Other…"}
    ]);
    let (status, body) = server.post_json("/v1/questions", Some(AGENT_TOKEN), &invalid).await;
    assert_eq!(status, 422, "{body}");
    let errors = body["error"]["errors"].as_array().expect("every problem is listed");
    let listed: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e["code"].as_str().expect("a code"), e["path"].as_str().expect("a path")))
        .collect();
    assert_eq!(
        listed,
        [
            ("unknown_field", "priority"),
            ("option_count", "questions[0].options"),
            ("other_option_not_allowed", "questions[0].options[4].label"),
        ],
        "{body}"
    );
    assert_eq!(body["error"]["code"], errors[0]["code"], "{body}");
    assert_eq!(body["error"]["path"], errors[0]["path"], "{body}");

    let mut unknown = ask_body(&json!({}));
    unknown["to"] = json!("nobody");
    let refused = server.post_json("/v1/questions", Some(AGENT_TOKEN), &unknown).await;
    assert_error("unknown recipient", &refused, 422, "unknown_recipient", Some("to"));

    let session = ask_body(&json!({"sessionId": "busy-session"}));
    let first = server.create(&session).await;
    let second = server.post_json("/v1/questions", Some(AGENT_TOKEN), &session).await;
    assert_error(
        "second question in a session",
        &second,
        409,
        "question_pending",
        Some("sessionId"),
    );
    let second = server.post_json("/v1/ask", Some(AGENT_TOKEN), &session).await;
    assert_error(
        "second ask in a session",
        &second,
        409,
        "question_pending",
        Some("sessionId"),
    );
    // Once the first has ended, the session may ask again.
    let (status, _) = server.web_skip(ME_KEY, &id_of(&first)).await;
    assert_eq!(status, 200);
    server.create(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_are_found_only_by_their_agent() {
    let server = Server::start();
    let (status, theirs) = server
        .post_json("/v1/questions", Some(LIMITED_TOKEN), &ask_body(&json!({})))
        .await;
    assert_eq!(status, 201, "{theirs}");
    let theirs = id_of(&theirs);
    let mine = id_of(&server.create(&ask_body(&json!({}))).await);

    let foreign = server.get(&format!("/v1/questions/{theirs}"), Some(AGENT_TOKEN)).await;
    assert_error("another agent's question", &foreign, 404, "not_found", None);
    let foreign = server
        .post_empty(&format!("/v1/questions/{theirs}/cancel"), Some(AGENT_TOKEN))
        .await;
    assert_error("cancel another agent's question", &foreign, 404, "not_found", None);
    let reply = server
        .get_reply(&format!("/v1/questions/{theirs}/events"), Some(AGENT_TOKEN))
        .await;
    assert_error("another agent's events", &reply.status_json(), 404, "not_found", None);
    let (status, still) = server
        .get(&format!("/v1/questions/{theirs}"), Some(LIMITED_TOKEN))
        .await;
    assert_eq!((status, still["status"].clone()), (200, json!("pending")), "{still}");

    for id in [
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "not-an-id",
        "%20",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV0",
    ] {
        let unknown = server.get(&format!("/v1/questions/{id}"), Some(AGENT_TOKEN)).await;
        assert_error(&format!("GET of {id:?}"), &unknown, 404, "not_found", None);
        let unknown = server
            .post_empty(&format!("/v1/questions/{id}/cancel"), Some(AGENT_TOKEN))
            .await;
        assert_error(&format!("cancel of {id:?}"), &unknown, 404, "not_found", None);
    }

    let bad_wait = server
        .get(&format!("/v1/questions/{mine}?wait=abc"), Some(AGENT_TOKEN))
        .await;
    assert_error("?wait=abc", &bad_wait, 400, "invalid_query", Some("wait"));
    let bad_wait = server
        .get(&format!("/v1/questions/{mine}?wait=-1"), Some(AGENT_TOKEN))
        .await;
    assert_error("?wait=-1", &bad_wait, 400, "invalid_query", Some("wait"));

    for path in ["/v1/nothing", "/v2/questions", "/nowhere"] {
        let reply = server.get_reply(path, Some(AGENT_TOKEN)).await;
        let content_type = reply.header("content-type").unwrap_or_default().to_owned();
        assert!(content_type.starts_with("application/json"), "{path}: {content_type}");
        assert_error(path, &reply.status_json(), 404, "not_found", None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_page_refuses_wrong_keys_ended_questions_and_invalid_answers() {
    let server = Server::start();
    let id = id_of(&server.create(&ask_body(&json!({}))).await);
    let wrong_key = "svc-test-wrong-key-0123456789abcdefghijklmnop";

    let page = server.get_reply(&format!("/web/{ME_KEY}"), None).await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap_or_default().starts_with("text/html"));
    for path in [
        format!("/web/{wrong_key}"),
        format!("/web/{wrong_key}/api/state"),
        format!("/web/{wrong_key}/api/events"),
    ] {
        let reply = server.get_reply(&path, None).await;
        assert_eq!(reply.status, 404, "{path}: {}", reply.text);
        assert!(!reply.text.contains(ME_KEY), "{path}: {}", reply.text);
    }
    let refused = server.web_choose(wrong_key, &id, "deploy_target", 0).await;
    assert_error("answer with a wrong key", &refused, 404, "not_found", None);
    // Another recipient's page cannot answer me's question.
    let refused = server.web_choose(OTHER_KEY, &id, "deploy_target", 0).await;
    assert_error("answer on another recipient's page", &refused, 404, "not_found", None);
    let refused = server.web_skip(OTHER_KEY, &id).await;
    assert_error("skip on another recipient's page", &refused, 404, "not_found", None);
    let refused = server.web_choose(ME_KEY, "not-an-id", "deploy_target", 0).await;
    assert_error("answer to an ill-formed id", &refused, 404, "not_found", None);

    let invalid = server.web_choose(ME_KEY, &id, "deploy_target", 9).await;
    assert_error(
        "option index 9",
        &invalid,
        422,
        "invalid_answer",
        Some("answers.deploy_target.options"),
    );
    let invalid = server
        .web_answer(
            ME_KEY,
            &id,
            &json!({"deploy_target": {"options": [0, 1], "text": null}}),
        )
        .await;
    assert_error(
        "two options of a single-select question",
        &invalid,
        422,
        "invalid_answer",
        Some("answers.deploy_target"),
    );
    let invalid = server.web_answer(ME_KEY, &id, &json!({})).await;
    assert_error(
        "no answer at all",
        &invalid,
        422,
        "invalid_answer",
        Some("answers.deploy_target"),
    );
    let invalid = server
        .web_answer(
            ME_KEY,
            &id,
            &json!({"no_such_question": {"options": [0], "text": null}}),
        )
        .await;
    assert_error(
        "an unknown question id",
        &invalid,
        422,
        "invalid_answer",
        Some("answers.no_such_question"),
    );
    assert_eq!(
        server.question(&id).await["status"],
        "pending",
        "invalid answers change nothing"
    );

    let (status, skipped) = server.web_skip(ME_KEY, &id).await;
    assert_eq!((status, skipped), (200, json!({"status": "skipped"})));
    let ended = server.web_choose(ME_KEY, &id, "deploy_target", 0).await;
    assert_error("answer an ended question", &ended, 409, "question_ended", None);
    let ended = server.web_skip(ME_KEY, &id).await;
    assert_error("skip an ended question", &ended, 409, "question_ended", None);
    let resource = server.question(&id).await;
    assert_eq!(resource["status"], "skipped");
    assert_eq!(resource["result"], json!({"status": "no_answer"}));
    assert_eq!(resource["resolution"]["by"]["displayName"], "Me");
}

// 6 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_questions_survive_kill_9_and_expire_while_down() {
    let mut server = Server::start();
    let kept = server
        .create(&ask_body(&json!({"sessionId": "keep-1", "runId": "run-6"})))
        .await;
    // A blocking ask whose connection breaks with the process: the agent picks
    // its answer up by the id in the header.
    let response = start_ask(&server, &ask_body(&json!({"sessionId": "keep-2"}))).await;
    let asked = server.question(&question_id_header(&response)).await;
    let mut short = ask_body(&json!({"sessionId": "short"}));
    short["timeoutSeconds"] = json!(30);
    let short = server.create(&short).await;
    let short_id = id_of(&short);
    let short_expires = rfc3339_millis(short["expiresAt"].as_str().expect("expiresAt"));
    assert_eq!(
        short_expires - rfc3339_millis(short["createdAt"].as_str().expect("createdAt")),
        30_000
    );

    server.kill();
    let broken = tokio::time::timeout(PROMPTLY, response.text()).await;
    assert!(
        !matches!(broken, Ok(Ok(ref text)) if !text.trim().is_empty()),
        "a killed askgate cannot have answered: {broken:?}"
    );

    // While askgate is down, the short question's deadline passes.
    let wait = u64::try_from(short_expires + 1_000 - now_millis()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait)).await;
    server.restart();

    let expired = server.question(&short_id).await;
    assert_eq!(expired["status"], "expired", "{expired}");
    assert_eq!(expired["result"], json!({"status": "no_answer"}));
    assert_eq!(expired["resolution"]["status"], "expired");
    assert_eq!(expired["expiresAt"], short["expiresAt"]);

    let mut ids = Vec::new();
    for before in [&kept, &asked] {
        let id = id_of(before);
        let after = server.question(&id).await;
        assert_eq!(&after, before, "the question is as it was before the kill");
        assert_eq!(after["status"], "pending");
        ids.push(id);
    }
    let pending = server.web_state(ME_KEY).await["pending"].clone();
    let mut listed: Vec<String> = pending.as_array().expect("a list").iter().map(id_of).collect();
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids, "{pending}");
    for entry in pending.as_array().expect("a list") {
        let before = if id_of(entry) == id_of(&kept) { &kept } else { &asked };
        assert_eq!(entry["expiresAt"], before["expiresAt"]);
    }

    for (before, index, label) in [(&kept, 2, "Canary"), (&asked, 0, "Staging (Recommended)")] {
        let id = id_of(before);
        let (status, body) = server.web_choose(ME_KEY, &id, "deploy_target", index).await;
        assert_eq!((status, body), (200, json!({"status": "answered"})));
        let resource = server.question(&id).await;
        assert_eq!(resource["status"], "answered");
        assert_eq!(
            resource["result"],
            json!({"status": "answered", "answers": {"answers": {"deploy_target": [label]}}})
        );
    }
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
}

// 7 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_events_stream_the_resource_until_it_ends() {
    let server = Server::start();
    let id = id_of(&server.create(&ask_body(&json!({}))).await);
    let pending = server.question(&id).await;

    let response = server
        .http()
        .get(server.url(&format!("/v1/questions/{id}/events")))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .expect("the event stream opens");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("text").to_owned();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    let mut events = EventStream::new(response);

    let first = events.next(PROMPTLY).await.expect("a first event");
    assert_eq!(first.event, "question");
    let first: Value = serde_json::from_str(&first.data).expect("the event is JSON");
    assert_eq!(first, pending);

    let (status, _) = server.web_choose(ME_KEY, &id, "deploy_target", 2).await;
    assert_eq!(status, 200);
    let second = events.next(PROMPTLY).await.expect("an event when it ends");
    assert_eq!(second.event, "question");
    let second: Value = serde_json::from_str(&second.data).expect("the event is JSON");
    assert_eq!(second["id"], json!(id));
    assert_eq!(second["status"], "answered");
    assert_eq!(
        second["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Canary"]}}})
    );
    assert_eq!(second, server.question(&id).await);
    assert_eq!(
        events.next(PROMPTLY).await,
        None,
        "the stream ends after the question does"
    );

    // An ended question's stream: its final state, then the end.
    let response = server
        .http()
        .get(server.url(&format!("/v1/questions/{id}/events")))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .expect("the event stream opens");
    let mut events = EventStream::new(response);
    let only = events.next(PROMPTLY).await.expect("the final state");
    assert_eq!(serde_json::from_str::<Value>(&only.data).expect("JSON"), second);
    assert_eq!(events.next(PROMPTLY).await, None);
}

// 8 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_health_and_metrics() {
    let server = Server::start();

    let reply = server.get_reply("/openapi.json", None).await;
    assert_eq!(reply.status, 200);
    let document = reply.json();
    let version = document["openapi"].as_str().expect("openapi is a string");
    assert!(version.starts_with("3.1."), "{version}");
    let paths = document["paths"].as_object().expect("paths");
    for path in [
        "/v1/ask",
        "/v1/questions",
        "/v1/questions/{id}",
        "/v1/questions/{id}/events",
        "/v1/questions/{id}/cancel",
        "/v1/runs/{runId}/abort",
    ] {
        assert!(paths.contains_key(path), "{path} is not described");
    }
    let description = document["paths"]["/v1/ask"]["post"]["description"]
        .as_str()
        .expect("the ask operation has a description");
    assert!(description.contains("Recommended"), "{description}");
    assert!(description.contains("no_answer"), "{description}");

    let (status, health) = server.get("/healthz", None).await;
    assert_eq!((status, health), (200, json!({"status": "ok"})));
    let (status, ready) = server.get("/readyz", None).await;
    // A channel's state beside the store's readiness (the harness has the page only).
    assert_eq!(
        (status, ready),
        (200, json!({"status": "ready", "channels": {"web": {"state": "up"}}}))
    );

    let created_sample = "askgate_questions_created_total{channel=\"web\"}";
    let before = server.get_reply("/metrics", None).await;
    assert_eq!(before.status, 200);
    let created_before = metric(&before.text, created_sample).unwrap_or(0.0);
    assert_eq!(
        metric(&before.text, "askgate_questions_pending"),
        Some(0.0),
        "{}",
        before.text
    );

    let id = id_of(&server.create(&ask_body(&json!({}))).await);
    let after = server.get_reply("/metrics", None).await;
    assert_eq!(
        metric(&after.text, created_sample),
        Some(created_before + 1.0),
        "{}",
        after.text
    );
    assert_eq!(
        metric(&after.text, "askgate_questions_pending"),
        Some(1.0),
        "{}",
        after.text
    );

    let (status, _) = server.web_skip(ME_KEY, &id).await;
    assert_eq!(status, 200);
    let ended = server.get_reply("/metrics", None).await;
    assert_eq!(
        metric(&ended.text, "askgate_questions_pending"),
        Some(0.0),
        "{}",
        ended.text
    );
    assert_eq!(
        metric(
            &ended.text,
            "askgate_questions_ended_total{channel=\"web\",surface=\"web\",status=\"skipped\"}"
        ),
        Some(1.0),
        "{}",
        ended.text
    );
}

// 9 ────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_waiting_requests_and_keeps_questions() {
    let mut server = Server::start();
    let id = id_of(&server.create(&ask_body(&json!({"sessionId": "term-1"}))).await);
    let waiting = {
        let request = server
            .http()
            .get(server.url(&format!("/v1/questions/{id}?wait=60")))
            .bearer_auth(AGENT_TOKEN);
        tokio::spawn(async move { Reply::read(request.send().await.expect("the GET is answered")).await })
    };
    // A blocking ask in flight too: a restart is not the agent giving up.
    let asking = start_ask(&server, &ask_body(&json!({"sessionId": "term-2"}))).await;
    let asked = question_id_header(&asking);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "GET ?wait=60 returned while the question was pending"
    );

    let stopped_at = Instant::now();
    let exit = server.terminate(Duration::from_secs(10)).await;
    assert_eq!(exit.code(), Some(0), "askgate exits cleanly on SIGTERM ({exit})");
    let reply = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting GET completes on shutdown")
        .expect("the GET task runs");
    assert!(stopped_at.elapsed() < Duration::from_secs(10));
    let (status, resource) = reply.status_json();
    assert_eq!(status, 200, "{resource}");
    assert_eq!(resource["id"], json!(id));
    assert_eq!(resource["status"], "pending");
    // The blocking ask ends with well-formed JSON that says the question is
    // still pending and how to find it, never a false result.
    let ended = tokio::time::timeout(PROMPTLY, asking.text())
        .await
        .expect("the ask ends")
        .expect("a whole response");
    let ended: Value = serde_json::from_str(ended.trim()).unwrap_or_else(|error| panic!("{error}: {ended:?}"));
    assert_eq!(ended, json!({"status": "pending", "questionId": asked.clone()}));

    server.restart();
    for id in [&id, &asked] {
        let resource = server.question(id).await;
        assert_eq!(resource["status"], "pending", "{resource}");
    }
    assert_eq!(
        server.web_state(ME_KEY).await["pending"].as_array().map(Vec::len),
        Some(2)
    );
}

// 10 ───────────────────────────────────────────────────────────────────────

fn check_config(file: &std::path::Path) -> std::process::Output {
    std::process::Command::new(ASKGATE)
        .arg("check-config")
        .arg(file)
        .env_remove("UNSET_VAR_FOR_TEST")
        .stdin(Stdio::null())
        .output()
        .expect("askgate check-config runs")
}

#[test]
fn check_config_accepts_the_harness_configuration() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("askgate.toml");
    std::fs::write(&file, support::config_text(dir.path())).expect("written");
    let output = check_config(&file);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.lines().any(|line| line.starts_with("ok:")), "{stdout}");
    for secret in [AGENT_TOKEN, LIMITED_TOKEN, ME_KEY, OTHER_KEY] {
        assert!(!stdout.contains(secret), "check-config printed a secret: {stdout}");
    }
}

/// A valid secret in the broken configuration: it must never be printed.
const SECRET: &str = "svc-test-do-not-print-me-0123456789abcdef";
/// A too-short token: a problem, whose value must not be printed either.
const SHORT_SECRET: &str = "hunter2-short";

/// A configuration with these problems: an unset `${VAR}`
/// (`agents.one.token`), a short secret (`agents.short.token`), a missing
/// channel (`recipients.me.channel`), and with `unknown_key` an unknown key
/// (`server.listen_port`).
fn broken_config(unknown_key: bool) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:0"
{}
[agents.one]
token = "${{UNSET_VAR_FOR_TEST}}"
recipients = ["*"]

[agents.two]
token = "{SECRET}"
recipients = ["*"]

[agents.short]
token = "{SHORT_SECRET}"
recipients = ["*"]

[channels.web]
type = "web"

[recipients.me]
channel = "chat"
"#,
        if unknown_key { "listen_port = 8080\n" } else { "" }
    )
}

fn assert_problems(output: &std::process::Output, keys: &[&str]) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    for secret in [SECRET, SHORT_SECRET] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "a secret was printed: {stdout}{stderr}"
        );
    }
    let lines: Vec<&str> = stdout.lines().filter(|line| !line.trim().is_empty()).collect();
    assert_eq!(lines.len(), keys.len(), "one line per problem: {stdout}");
    for key in keys {
        let naming = lines.iter().filter(|line| line.contains(key)).count();
        assert_eq!(naming, 1, "exactly one line names {key}: {stdout}");
    }
}

#[test]
fn check_config_lists_every_value_problem_without_secrets() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("broken.toml");
    std::fs::write(&file, broken_config(false)).expect("written");
    assert_problems(
        &check_config(&file),
        &["recipients.me.channel", "agents.one.token", "agents.short.token"],
    );
}

#[test]
fn check_config_reports_an_unknown_key_together_with_the_other_problems() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("broken.toml");
    std::fs::write(&file, broken_config(true)).expect("written");
    assert_problems(
        &check_config(&file),
        &[
            "listen_port",
            "recipients.me.channel",
            "agents.one.token",
            "agents.short.token",
        ],
    );
}

/// The lines `serve` prints until the one about the page of `other` (the
/// last recipient), from `command`'s stdout; the process is then killed.
fn announced(mut command: std::process::Command) -> Vec<String> {
    use std::io::BufRead as _;
    let mut serving = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .expect("askgate starts");
    let stdout = serving.stdout.take().expect("piped stdout");
    let lines: Vec<String> = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .map(|line| line.trim_end().to_owned())
        .take_while(|line| !line.starts_with("web page for \"other\""))
        .collect();
    let _ = serving.kill();
    let _ = serving.wait();
    lines
}

/// The address a start announced first.
fn listening(lines: &[String]) -> String {
    lines
        .iter()
        .find_map(|line| line.strip_prefix("askgate listening on "))
        .unwrap_or_else(|| panic!("no listening line in {lines:#?}"))
        .to_owned()
}

/// A start prints each web page's link in full only on the admin's own
/// terminal; elsewhere (journald, `docker logs`) where its key is. A start
/// that cannot listen creates nothing.
#[tokio::test]
async fn a_start_prints_the_page_link_in_full_only_on_a_terminal_and_a_failed_start_creates_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data_dir = dir.path().join("data");
    let config = dir.path().join("askgate.toml");
    std::fs::write(&config, support::config_text(&data_dir)).expect("written");

    let mut piped = std::process::Command::new(ASKGATE);
    piped.arg("serve").arg("--config").arg(&config);
    let lines = announced(piped);
    let base = listening(&lines);
    assert!(
        lines
            .iter()
            .any(|line| line == &format!("web page for \"me\": {base}/web/<the key in the configuration>")),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|line| line.contains(ME_KEY)), "{lines:#?}");

    // On a terminal (util-linux's `script` gives it one). Killing `script`
    // hangs the terminal up, which askgate takes as SIGHUP (a reload), not
    // as a stop: `timeout` ends it.
    let mut terminal = std::process::Command::new("script");
    terminal.args([
        "-qfec",
        &format!("timeout 10 {ASKGATE} serve --config {}", config.display()),
        "/dev/null",
    ]);
    let lines = announced(terminal);
    let base = listening(&lines);
    assert!(
        lines
            .iter()
            .any(|line| line == &format!("web page for \"me\": {base}/web/{ME_KEY}")),
        "{lines:#?}"
    );

    // Another askgate on a port that is taken: refused, and nothing created.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("its address").port();
    let fresh = dir.path().join("fresh");
    let text = support::config_text(&fresh).replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    let busy = dir.path().join("busy.toml");
    std::fs::write(&busy, text).expect("written");
    let output = std::process::Command::new(ASKGATE)
        .arg("serve")
        .arg("--config")
        .arg(&busy)
        .output()
        .expect("askgate runs");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(&format!("listening on 127.0.0.1:{port}")),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!fresh.exists(), "a failed start creates no data directory");
}
