//! What an agent meets when it retries or asks too much, end to end on the
//! real binary: `Idempotency-Key` (and `toolCallId`) make a retried
//! `POST /v1/questions` or `POST /v1/ask` find the question of the first
//! attempt; a keyed `/v1/ask` whose connection dropped keeps its question for
//! a grace period, long enough for the retry to re-attach; the caps on
//! pending questions answer 429; an answer in one's own words longer than
//! askgate takes is refused with a sentence. And `askgate ask`, a script's
//! way to ask: its exit code says how the question ended (0 answered, 3 no
//! answer, 4 delivery failed in `tests/e2e/telegram.rs`, 1 refused or
//! unreachable, 2 usage), with the token from a file and `to` left out.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{AGENT_TOKEN, AskEnded, LIMITED_TOKEN, ME_KEY, Server, ask_command};

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

/// How long `askgate ask` may take to exit once its question has ended.
const PROMPTLY: Duration = Duration::from_secs(10);

/// The deploy question without a recipient, in a prompt file in `server`'s
/// directory.
fn prompt_file(server: &Server) -> std::path::PathBuf {
    let mut prompt = deploy("me");
    prompt.as_object_mut().expect("an object").remove("to");
    let path = server.data_dir().join("prompt.json");
    std::fs::write(&path, prompt.to_string()).expect("the prompt file is written");
    path
}

fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("the resource has an id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ask_command_exits_0_with_the_answer_for_the_tokens_one_recipient() {
    let server = Server::start();
    let prompt = prompt_file(&server);
    // The token in a file, with the newline an editor leaves; no --to: the
    // limited agent may ask only `me`.
    let token_file = server.data_dir().join("token");
    std::fs::write(&token_file, format!("{LIMITED_TOKEN}\n")).unwrap();
    let command = ask_command(server.base(), &["--token-file", token_file.to_str().unwrap()], &prompt);

    let pending = server.pending_on_page(ME_KEY, 1).await;
    let id = id_of(&pending[0]);
    let (status, _) = server.web_choose(ME_KEY, &id, "deploy_target", 0).await;
    assert_eq!(status, 200);

    let ended = AskEnded::of(command, PROMPTLY).await;
    assert_eq!(
        ended.json_with_code(0),
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}})
    );
    // stderr says what it did: whom it asked and the question's id.
    assert!(ended.stderr.contains(&format!("asked me (question {id})")), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ask_command_exits_3_when_the_question_is_skipped_or_cancelled() {
    let server = Server::start();
    let prompt = prompt_file(&server);
    for cancelled in [false, true] {
        let command = ask_command(server.base(), &["--token", AGENT_TOKEN, "--to", "me"], &prompt);
        let id = id_of(&server.pending_on_page(ME_KEY, 1).await[0]);
        let status = if cancelled {
            server
                .post_empty(&format!("/v1/questions/{id}/cancel"), Some(AGENT_TOKEN))
                .await
                .0
        } else {
            server.web_skip(ME_KEY, &id).await.0
        };
        assert_eq!(status, 200);
        let ended = AskEnded::of(command, PROMPTLY).await;
        assert_eq!(
            ended.json_with_code(3),
            json!({"status": "no_answer"}),
            "cancelled: {cancelled}"
        );
        assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ask_command_exits_1_when_refused_or_unreachable_and_2_on_a_wrong_command_line() {
    let server = Server::start();
    let prompt = prompt_file(&server);

    // Agent `one` may ask `me` and `other`: `to` cannot be left out.
    let ended = AskEnded::of(ask_command(server.base(), &["--token", AGENT_TOKEN], &prompt), PROMPTLY).await;
    let error = &ended.json_with_code(1)["error"];
    assert_eq!(
        (&error["code"], &error["path"]),
        (&json!("missing_field"), &json!("to")),
        "{ended:?}"
    );
    assert!(ended.stderr.contains("may ask \"me\", \"other\"."), "{ended:?}");

    // A mistyped name: the error names the right ones.
    let args = ["--token", AGENT_TOKEN, "--to", "mee"];
    let ended = AskEnded::of(ask_command(server.base(), &args, &prompt), PROMPTLY).await;
    assert_eq!(
        ended.json_with_code(1)["error"]["code"],
        "unknown_recipient",
        "{ended:?}"
    );
    assert!(
        ended
            .stderr
            .contains("(422 Unprocessable Entity, unknown_recipient): No recipient named \"mee\""),
        "{ended:?}"
    );
    assert!(ended.stderr.contains("may ask \"me\", \"other\"."), "{ended:?}");
    // None of them asked anything.
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));

    // Nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let ended = AskEnded::of(ask_command(&closed, &["--token", AGENT_TOKEN], &prompt), PROMPTLY).await;
    assert_eq!(ended.code, Some(1), "{ended:?}");
    assert_eq!(ended.stdout, "", "{ended:?}");
    assert_eq!(
        ended.stderr,
        format!("askgate: could not connect — is `askgate serve` running at {closed}?\n")
    );

    // A token on the command line and in a file; a file that cannot be read.
    let token_file = server.data_dir().join("token");
    std::fs::write(&token_file, AGENT_TOKEN).unwrap();
    let token_path = token_file.to_str().unwrap();
    let both = ["--token", AGENT_TOKEN, "--token-file", token_path];
    let ended = AskEnded::of(ask_command(server.base(), &both, &prompt), PROMPTLY).await;
    assert_eq!(ended.code, Some(2), "{ended:?}");
    assert!(ended.stderr.contains("--token-file"), "{ended:?}");
    let missing = server.data_dir().join("no-such-token");
    let args = ["--token-file", missing.to_str().unwrap()];
    let ended = AskEnded::of(ask_command(server.base(), &args, &prompt), PROMPTLY).await;
    assert_eq!(ended.code, Some(2), "{ended:?}");
    assert!(
        ended.stderr.starts_with(&format!(
            "askgate: could not read the token file {}: ",
            missing.display()
        )),
        "{ended:?}"
    );
    assert_eq!(server.web_state(ME_KEY).await["pending"], json!([]));
}
