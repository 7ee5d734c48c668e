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
    let acks = fake.calls_to("answerCallbackQuery");
    assert_eq!(acks[0].body["text"], json!("Answer submitted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn webhook_mode_registers_itself_and_refuses_a_forged_secret() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE));
    let server = Server::start_with("public_url = \"https://askgate.test\"", &telegram_config(&fake, true));
    fake.wait_for_call("setWebhook", 1, Duration::from_secs(20))
        .await
        .unwrap();
    let webhook = fake.webhook().expect("askgate set its webhook at start");
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
