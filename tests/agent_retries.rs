//! What an agent meets when it retries or asks too much, end to end on the
//! real binary: `Idempotency-Key` (and `toolCallId`) make a retried
//! `POST /v1/questions` or `POST /v1/ask` find the question of the first
//! attempt; a keyed `/v1/ask` whose connection dropped keeps its question for
//! a grace period, long enough for the retry to re-attach; the caps on
//! pending questions answer 429; an answer in one's own words longer than
//! askgate takes is refused with a sentence.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{AGENT_TOKEN, ME_KEY, Server};

fn deploy(to: &str) -> Value {
    json!({
        "to": to,
        "questions": [{
            "id": "deploy_target", "header": "Deploy", "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
        }],
        "timeoutSeconds": 600
    })
}

async fn create_keyed(server: &Server, key: &str, body: &Value) -> support::Reply {
    server
        .send(
            server
                .http()
                .post(server.url("/v1/questions"))
                .bearer_auth(AGENT_TOKEN)
                .header("Idempotency-Key", key)
                .json(body),
        )
        .await
}

#[tokio::test]
async fn a_retried_create_finds_the_first_question_and_another_body_under_the_key_is_refused() {
    let server = Server::start();
    let first = create_keyed(&server, "call-0001", &deploy("me")).await;
    assert_eq!(first.status, 201, "{:?}", first.text);
    let id = first.json()["id"].as_str().unwrap().to_owned();

    let retry = create_keyed(&server, "call-0001", &deploy("me")).await;
    assert_eq!(retry.status, 200, "a retry finds, not creates: {:?}", retry.text);
    assert_eq!(retry.json()["id"], json!(id));
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        server.pending_on_page(ME_KEY, 1).await.len(),
        1,
        "one question, not two"
    );

    let mut other = deploy("me");
    other["questions"][0]["question"] = json!("Where should the other build go?");
    let (status, body) = create_keyed(&server, "call-0001", &other).await.status_json();
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "idempotency_key_reused");

    // A blank key is refused, not taken for no key.
    let (status, body) = create_keyed(&server, " ", &deploy("me")).await.status_json();
    assert_eq!(
        (status, body["error"]["path"].as_str()),
        (422, Some("Idempotency-Key")),
        "{body}"
    );

    // A tool call id in the body is a key too.
    let mut with_call = deploy("me");
    with_call["toolCallId"] = json!("toolu_01ABC");
    let (status, created) = server.post_json("/v1/questions", Some(AGENT_TOKEN), &with_call).await;
    assert_eq!(status, 201, "{created}");
    let (status, again) = server.post_json("/v1/questions", Some(AGENT_TOKEN), &with_call).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], created["id"]);
}

#[tokio::test]
async fn a_keyed_ask_whose_connection_dropped_is_picked_up_by_its_retry_with_the_answer() {
    let server = Server::start_with("ask_retry_grace_seconds = 30", "");
    let ask = |server: &Server| {
        server
            .http()
            .post(server.url("/v1/ask"))
            .bearer_auth(AGENT_TOKEN)
            .header("Idempotency-Key", "call-ask-1")
            .json(&deploy("me"))
            .send()
    };
    let first = ask(&server).await.expect("askgate answers");
    assert_eq!(first.status().as_u16(), 200);
    let id = first.headers()["askgate-question-id"].to_str().unwrap().to_owned();
    // The connection drops (the agent's process lost it): askgate notices at
    // its next keep-alive space.
    drop(first);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(server.question(&id).await["status"], "pending", "kept for the retry");

    let retry = ask(&server).await.expect("askgate answers");
    assert_eq!(retry.headers()["askgate-question-id"].to_str().unwrap(), id);
    assert_eq!(retry.headers()["idempotent-replayed"].to_str().unwrap(), "true");
    let (status, _) = server.web_choose(ME_KEY, &id, "deploy_target", 1).await;
    assert_eq!(status, 200);
    let text = tokio::time::timeout(Duration::from_secs(15), retry.text())
        .await
        .expect("the retry gets the answer")
        .unwrap();
    let result: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}})
    );
}

#[tokio::test]
async fn a_keyed_ask_nobody_retries_is_cancelled_after_the_grace_and_an_unkeyed_one_at_once() {
    let server = Server::start_with("ask_retry_grace_seconds = 3", "");
    let ask = |key: Option<&str>| {
        let mut request = server.http().post(server.url("/v1/ask")).bearer_auth(AGENT_TOKEN);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.json(&deploy("me")).send()
    };
    let keyed = ask(Some("call-gone")).await.unwrap();
    let keyed_id = keyed.headers()["askgate-question-id"].to_str().unwrap().to_owned();
    let unkeyed = ask(None).await.unwrap();
    let unkeyed_id = unkeyed.headers()["askgate-question-id"].to_str().unwrap().to_owned();
    // Both connections drop.
    drop(keyed);
    drop(unkeyed);
    // The unkeyed question is cancelled as soon as the drop is noticed (a
    // keep-alive space every second); the keyed one is still pending then.
    server
        .question_with_status(&unkeyed_id, "cancelled", Duration::from_secs(10))
        .await;
    assert_eq!(server.question(&keyed_id).await["status"], "pending");
    server
        .question_with_status(&keyed_id, "cancelled", Duration::from_secs(15))
        .await;
}

#[tokio::test]
async fn the_caps_on_pending_questions_answer_429_and_free_text_has_a_limit() {
    let server = Server::start_with(
        "",
        "\n[limits]\nmax_pending_per_agent = 2\nmax_pending_per_recipient = 5\n",
    );
    let first = server.create(&deploy("me")).await;
    server.create(&deploy("other")).await;
    let (status, body) = server
        .post_json("/v1/questions", Some(AGENT_TOKEN), &deploy("me"))
        .await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "too_many_pending");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("agent \"one\""),
        "the message names whose cap: {body}"
    );

    // An answer in one's own words: 2,000 characters are taken, 2,001 are not.
    let id = first["id"].as_str().unwrap();
    let answer = |text: String| json!({"deploy_target": {"text": text}});
    let (status, body) = server.web_answer(ME_KEY, id, &answer("é".repeat(2001))).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "answer_too_long");
    assert_eq!(body["error"]["path"], "answers.deploy_target.text");
    assert!(body["error"]["message"].as_str().unwrap().contains("2000"), "{body}");
    assert_eq!(server.question(id).await["status"], "pending");
    let (status, body) = server.web_answer(ME_KEY, id, &answer("é".repeat(2000))).await;
    assert_eq!(status, 200, "{body}");

    // One answered: the agent may ask again.
    let (status, body) = server
        .post_json("/v1/questions", Some(AGENT_TOKEN), &deploy("me"))
        .await;
    assert_eq!(status, 201, "{body}");
}
