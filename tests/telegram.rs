//! The real binary with a Telegram channel, against the testkit's fake Bot
//! API on loopback: asked over HTTP, answered by a tap or typed replies, in
//! polling and webhook mode.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use askgate_testkit::telegram::{FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::{AGENT_TOKEN, Server};

const ALICE: i64 = 4242;
const WEBHOOK_SECRET: &str = "e2e-webhook-secret-0123456789abcdefghijkl";

fn telegram_config(fake: &FakeTelegram, webhook: bool) -> String {
    let mode = if webhook {
        format!("mode = \"webhook\"\nsecret_token = \"{WEBHOOK_SECRET}\"\n")
    } else {
        String::new()
    };
    format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{}\"\napi_url = \"{}\"\n{mode}\n\
         [recipients.alice]\nchannel = \"tg\"\nchat_id = {ALICE}\ndisplay_name = \"Alice\"\n",
        fake.token(),
        fake.api_url()
    )
}

fn deploy() -> Value {
    json!({
        "to": "alice",
        "questions": [{"id": "deploy", "header": "Deploy", "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]}],
    })
}

/// The question id and the message id of the prompt the fake received.
async fn prompt(fake: &FakeTelegram, server: &Server, nth: usize) -> (String, i64, String) {
    let sent = fake
        .wait_for_call("sendMessage", nth, Duration::from_secs(20))
        .await
        .unwrap();
    let token = sent[nth - 1].body["reply_markup"]["inline_keyboard"][1][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = token.split(':').nth(1).unwrap().to_owned();
    let _ = server;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(message) = fake.messages().get(&ALICE).and_then(|sent| sent.last().cloned()) {
            return (id, message["message_id"].as_i64().unwrap(), token);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the prompt was not stored by the fake"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What `probe` finds, once it finds something (the fake records a call
/// before it has applied it).
async fn eventually<T>(what: &str, probe: impl Fn() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: not within 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn polling_a_tap_answers_the_waiting_agent_and_edits_the_message() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE));
    let server = Server::start_with("", &telegram_config(&fake, false));
    let asking = {
        let http = server.http();
        let url = server.url("/v1/ask");
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(AGENT_TOKEN)
                .json(&deploy())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    let (_, message, token) = prompt(&fake, &server, 1).await;
    fake.tap(&TgUser::new(ALICE, "Alice"), &TgChat::private(ALICE), message, &token);
    let body = tokio::time::timeout(Duration::from_secs(20), asking)
        .await
        .unwrap()
        .unwrap();
    let result: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(
        result,
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    let edits = fake
        .wait_for_call("editMessageText", 1, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(
        edits[0].body["text"]
            .as_str()
            .unwrap()
            .contains("Answered by Alice: Production")
    );
    let acks = fake
        .wait_for_call("answerCallbackQuery", 1, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(acks[0].body["text"], json!("Answer submitted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn webhook_mode_registers_itself_and_refuses_a_forged_secret() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE));
    let server = Server::start_with("public_url = \"https://askgate.test\"", &telegram_config(&fake, true));
    let webhook = eventually("askgate sets its webhook at start", || fake.webhook()).await;
    assert_eq!(webhook.secret_token.as_deref(), Some(WEBHOOK_SECRET));
    assert_eq!(webhook.url, "https://askgate.test/telegram/tg");

    let created = server.create(&deploy()).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let (_, message, token) = prompt(&fake, &server, 1).await;
    let update = fake.tap(&TgUser::new(ALICE, "Alice"), &TgChat::private(ALICE), message, &token);
    let post = |secret: &'static str| {
        server
            .http()
            .post(server.url("/telegram/tg"))
            .header("X-Telegram-Bot-Api-Secret-Token", secret)
            .json(&update)
            .send()
    };
    assert_eq!(post("forged-secret").await.unwrap().status().as_u16(), 401);
    assert_eq!(server.question(&id).await["status"], json!("pending"));
    assert_eq!(post(WEBHOOK_SECRET).await.unwrap().status().as_u16(), 200);
    let resource = server.question(&id).await;
    assert_eq!(
        resource["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn a_wrong_bot_token_fails_check_config_and_start_up_without_showing_it() {
    let fake = FakeTelegram::start().await;
    let wrong = "999999:wrong-token-never-shown";
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("askgate.toml");
    let text = support::config_text(dir.path()) + &telegram_config(&fake, false).replace(fake.token(), wrong);
    std::fs::write(&config, text).unwrap();
    for command in ["check-config", "serve"] {
        let mut run = tokio::process::Command::new(support::ASKGATE);
        if command == "serve" {
            run.args(["serve", "--config"]);
        } else {
            run.arg("check-config");
        }
        let output = tokio::time::timeout(
            Duration::from_secs(30),
            run.arg(&config).current_dir(dir.path()).output(),
        )
        .await
        .expect("askgate finishes")
        .unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.status.success(), "{command} must fail: {printed}");
        assert!(
            printed.contains("channels.tg"),
            "{command} names the channel: {printed}"
        );
        assert!(
            !printed.contains("wrong-token-never-shown"),
            "{command} shows the token: {printed}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_kill_between_the_tap_and_the_edit_loses_nothing_and_answers_once() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE));
    let mut server = Server::start_with("", &telegram_config(&fake, false));
    let created = server.create(&deploy()).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let (_, message, token) = prompt(&fake, &server, 1).await;
    // The edit after the answer never reaches Telegram, and askgate dies right then.
    fake.fail_next("editMessageText", askgate_testkit::telegram::Failure::Disconnect);
    fake.tap(&TgUser::new(ALICE, "Alice"), &TgChat::private(ALICE), message, &token);
    server
        .question_with_status(&id, "answered", Duration::from_secs(20))
        .await;
    fake.wait_for_call("editMessageText", 1, Duration::from_secs(20))
        .await
        .unwrap();
    server.kill();

    server.restart();
    let edits = fake
        .wait_for_call("editMessageText", 2, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(
        edits[1].body["text"]
            .as_str()
            .unwrap()
            .contains("Answered by Alice: Production")
    );
    let shown = fake.stored_message(ALICE, message).unwrap();
    assert!(
        shown["text"]
            .as_str()
            .unwrap()
            .contains("Answered by Alice: Production")
    );
    assert!(shown.get("reply_markup").is_none(), "the buttons are gone: {shown}");
    let resource = server.question(&id).await;
    assert_eq!(
        resource["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    // The tap was taken once. If askgate died before saving the update offset,
    // Telegram redelivers the tap: it is recognised and only acknowledged again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let acks = fake.calls_to("answerCallbackQuery");
    let submitted = acks
        .iter()
        .filter(|ack| ack.body["text"] == json!("Answer submitted"))
        .count();
    assert_eq!(submitted, 1, "{acks:?}");
}
