//! The fake Telegram Bot API server, driven over HTTP with plain reqwest, as
//! teloxide would drive it (`/bot{token}/{Method}`, JSON bodies).
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use askgate_testkit::telegram::{
    BOT_ID, BOT_USERNAME, Failure, FakeTelegram, MESSAGE_NOT_MODIFIED, TELEGRAM_PAYLOADS, TgChat, TgUser,
    WEBHOOK_RETRY_PAUSE, telegram_payload,
};
use axum::extract::{Request, State};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(5);

async fn call(fake: &FakeTelegram, method: &str, body: &Value) -> (StatusCode, Value) {
    let url = format!("{}bot{}/{method}", fake.api_url(), fake.token());
    let response = reqwest::Client::new().post(url).json(body).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

/// The `result` of a call that must succeed.
async fn ok(fake: &FakeTelegram, method: &str, body: &Value) -> Value {
    let (status, answer) = call(fake, method, body).await;
    assert_eq!(status, StatusCode::OK, "{method}: {answer}");
    assert_eq!(answer["ok"], true, "{method}: {answer}");
    answer["result"].clone()
}

fn alice() -> TgUser {
    TgUser::new(111_222_333, "Alice").with_username("alice_example")
}

fn keyboard(tokens: &[&str]) -> Value {
    let row: Vec<Value> = tokens
        .iter()
        .map(|token| json!({ "text": format!("label {token}"), "callback_data": token }))
        .collect();
    json!({ "inline_keyboard": [row] })
}

#[tokio::test]
async fn get_me_describes_the_bot() {
    let fake = FakeTelegram::start().await;
    assert!(fake.api_url().starts_with("http://127.0.0.1:"));
    assert!(fake.api_url().ends_with('/'));

    let me = ok(&fake, "getMe", &json!({})).await;
    assert_eq!(me["id"], BOT_ID);
    assert_eq!(me["is_bot"], true);
    assert_eq!(me["username"], BOT_USERNAME);
    for field in [
        "first_name",
        "can_join_groups",
        "can_read_all_group_messages",
        "supports_inline_queries",
        "has_main_web_app",
    ] {
        assert!(me.get(field).is_some(), "getMe has no {field}: {me}");
    }

    // A GET with no body works too.
    let url = format!("{}bot{}/getMe", fake.api_url(), fake.token());
    let answer: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["username"], BOT_USERNAME);
}

#[tokio::test]
async fn method_names_are_matched_case_insensitively_and_recorded_canonically() {
    let fake = FakeTelegram::start().await;
    ok(&fake, "GetMe", &json!({})).await;
    ok(&fake, "GETWEBHOOKINFO", &json!({})).await;
    ok(&fake, "SendMessage", &json!({ "chat_id": 5, "text": "hi" })).await;
    ok(&fake, "sendmessage", &json!({ "chat_id": 5, "text": "again" })).await;

    let methods: Vec<String> = fake.calls().into_iter().map(|call| call.method).collect();
    assert_eq!(methods, ["getMe", "getWebhookInfo", "sendMessage", "sendMessage"]);
    assert_eq!(fake.calls_to("SENDMESSAGE").len(), 2);
    assert_eq!(fake.calls_to("sendMessage")[1].body["text"], "again");
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_and_an_unknown_method_not_found() {
    let fake = FakeTelegram::start().await;
    let url = format!("{}bot123456:WRONG/getMe", fake.api_url());
    let response = reqwest::Client::new().post(url).json(&json!({})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "ok": false, "error_code": 401, "description": "Unauthorized" })
    );
    assert!(fake.calls().is_empty(), "a call with a wrong token is not the bot's");

    let (status, body) = call(&fake, "sendCarrierPigeon", &json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({ "ok": false, "error_code": 404, "description": "Not Found" })
    );
    assert_eq!(fake.calls()[0].method, "sendCarrierPigeon");
}

#[tokio::test]
async fn sent_messages_are_full_messages_and_edits_change_them() {
    let fake = FakeTelegram::start().await;
    let chat = TgChat::private(alice().id);

    let sent = ok(
        &fake,
        "sendMessage",
        &json!({
            "chat_id": chat.id,
            "text": "<b>Deploy</b>\nWhere to? a &lt; b",
            "parse_mode": "HTML",
            "reply_markup": keyboard(&["ag1:q1:0", "ag1:q1:1"]),
            "link_preview_options": { "is_disabled": true },
        }),
    )
    .await;
    assert_eq!(sent["message_id"], 1);
    assert_eq!(sent["from"]["id"], BOT_ID);
    assert_eq!(sent["from"]["is_bot"], true);
    assert_eq!(sent["chat"], json!({ "id": chat.id, "type": "private" }));
    assert!(sent["date"].as_u64().unwrap() > 1_700_000_000);
    assert_eq!(sent["text"], "Deploy\nWhere to? a < b");
    assert_eq!(sent["entities"], json!([{ "offset": 0, "length": 6, "type": "bold" }]));
    assert_eq!(sent["reply_markup"], keyboard(&["ag1:q1:0", "ag1:q1:1"]));

    // Ids count per chat.
    let second = ok(&fake, "sendMessage", &json!({ "chat_id": chat.id, "text": "two" })).await;
    assert_eq!(second["message_id"], 2);
    let elsewhere = ok(
        &fake,
        "sendMessage",
        &json!({ "chat_id": -4_000_000_001_i64, "text": "x" }),
    )
    .await;
    assert_eq!(elsewhere["message_id"], 1);
    assert_eq!(elsewhere["chat"]["type"], "group");

    // Same text, same keyboard: Telegram refuses.
    let same = json!({
        "chat_id": chat.id,
        "message_id": 1,
        "text": "<b>Deploy</b>\nWhere to? a &lt; b",
        "parse_mode": "HTML",
        "reply_markup": keyboard(&["ag1:q1:0", "ag1:q1:1"]),
    });
    let (status, answer) = call(&fake, "editMessageText", &same).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error_code"], 400);
    assert_eq!(answer["description"], MESSAGE_NOT_MODIFIED);
    assert!(MESSAGE_NOT_MODIFIED.starts_with("Bad Request: message is not modified"));

    // New text and no keyboard: the buttons go.
    let edited = ok(
        &fake,
        "EditMessageText",
        &json!({
            "chat_id": chat.id,
            "message_id": 1,
            "text": "<b>Deploy</b>\nWhere to?\n\nAnswered: production",
            "parse_mode": "HTML",
        }),
    )
    .await;
    assert_eq!(edited["message_id"], 1);
    assert_eq!(edited["text"], "Deploy\nWhere to?\n\nAnswered: production");
    assert!(edited.get("reply_markup").is_none());
    assert!(edited.get("edit_date").is_some());
    let stored = &fake.messages()[&chat.id];
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0], edited);

    // Editing it into the same again is "not modified" (an idempotent
    // `finish` must cope with this).
    let again = json!({
        "chat_id": chat.id,
        "message_id": 1,
        "text": "<b>Deploy</b>\nWhere to?\n\nAnswered: production",
        "parse_mode": "HTML",
    });
    let (status, answer) = call(&fake, "editMessageText", &again).await;
    assert_eq!(
        (status, answer["description"].as_str()),
        (StatusCode::BAD_REQUEST, Some(MESSAGE_NOT_MODIFIED))
    );

    // editMessageReplyMarkup puts a keyboard back, and only once.
    let markup = json!({ "chat_id": chat.id, "message_id": 2, "reply_markup": keyboard(&["t"]) });
    let with_buttons = ok(&fake, "editMessageReplyMarkup", &markup).await;
    assert_eq!(with_buttons["reply_markup"], keyboard(&["t"]));
    let (status, answer) = call(&fake, "editMessageReplyMarkup", &markup).await;
    assert_eq!(
        (status, answer["description"].as_str()),
        (StatusCode::BAD_REQUEST, Some(MESSAGE_NOT_MODIFIED))
    );

    let (status, answer) = call(
        &fake,
        "editMessageText",
        &json!({ "chat_id": chat.id, "message_id": 99, "text": "x" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["description"], "Bad Request: message to edit not found");
}

#[tokio::test]
async fn text_is_checked_as_telegram_checks_it() {
    let fake = FakeTelegram::start().await;
    let request = |text: String, parse_mode: Option<&str>| {
        let mut body = json!({ "chat_id": 7, "text": text });
        if let Some(mode) = parse_mode {
            body["parse_mode"] = json!(mode);
        }
        body
    };
    let description = |answer: &Value| answer["description"].as_str().unwrap().to_owned();

    // An unescaped `<` is an error in HTML, and so is an unknown tag.
    let (status, answer) = call(&fake, "sendMessage", &request("a < b".into(), Some("HTML"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        description(&answer),
        "Bad Request: can't parse entities: Unsupported start tag \"\" at byte offset 2"
    );
    let (_, answer) = call(&fake, "sendMessage", &request("<br>".into(), Some("html"))).await;
    assert!(
        description(&answer).contains("Unsupported start tag \"br\""),
        "{answer}"
    );
    let (_, answer) = call(&fake, "sendMessage", &request("<b>open".into(), Some("HTML"))).await;
    assert!(description(&answer).contains("Can't find end tag corresponding to start tag \"b\""));

    // Escaped text arrives literally; a bare `&` is kept; `@name` is a mention.
    let sent = ok(
        &fake,
        "sendMessage",
        &request(
            "&lt;b&gt;x&lt;/b&gt; &amp; *_[] AT&T ask @alice_example".into(),
            Some("HTML"),
        ),
    )
    .await;
    assert_eq!(sent["text"], "<b>x</b> & *_[] AT&T ask @alice_example");
    assert_eq!(
        sent["entities"],
        json!([{ "offset": 25, "length": 14, "type": "mention" }])
    );
    // A word joiner after `@` defuses it.
    let sent = ok(
        &fake,
        "sendMessage",
        &request("ask @\u{2060}alice_example".into(), None),
    )
    .await;
    assert!(sent.get("entities").is_none(), "{sent}");

    // Offsets count UTF-16 units; text is trimmed.
    let sent = ok(&fake, "sendMessage", &request("  😀 <i>hi</i>\n".into(), Some("HTML"))).await;
    assert_eq!(sent["text"], "😀 hi");
    assert_eq!(
        sent["entities"],
        json!([{ "offset": 3, "length": 2, "type": "italic" }])
    );

    // Length is counted after parsing.
    let long = format!("<b>{}</b>", "x".repeat(4096));
    ok(&fake, "sendMessage", &request(long, Some("HTML"))).await;
    let (_, answer) = call(&fake, "sendMessage", &request("x".repeat(4097), None)).await;
    assert_eq!(description(&answer), "Bad Request: message is too long");
    let (_, answer) = call(&fake, "sendMessage", &request(String::new(), None)).await;
    assert_eq!(description(&answer), "Bad Request: message text is empty");
    // Text that is only white space gets past the Bot API server, and TDLib refuses it.
    let (_, answer) = call(&fake, "sendMessage", &request(" \n ".into(), None)).await;
    assert_eq!(description(&answer), "Bad Request: text must be non-empty");

    // callback_data is 1 to 64 bytes; a button needs an action.
    let mut body = request("pick".into(), None);
    body["reply_markup"] = keyboard(&[&"x".repeat(65)]);
    let (_, answer) = call(&fake, "sendMessage", &body).await;
    assert_eq!(description(&answer), "Bad Request: BUTTON_DATA_INVALID");
    body["reply_markup"] = json!({ "inline_keyboard": [[{ "text": "no action" }]] });
    let (_, answer) = call(&fake, "sendMessage", &body).await;
    assert!(description(&answer).contains("Text buttons are unallowed"));

    // A force_reply is accepted but, as on Telegram, not echoed.
    body["reply_markup"] = json!({ "force_reply": true, "input_field_placeholder": "Your answer" });
    let sent = ok(&fake, "sendMessage", &body).await;
    assert!(sent.get("reply_markup").is_none());
    assert_eq!(
        fake.calls_to("sendMessage").last().unwrap().body["reply_markup"]["force_reply"],
        true
    );
}

#[tokio::test]
async fn long_polling_returns_an_injected_tap_at_once_and_honours_offsets() {
    let fake = FakeTelegram::start().await;
    let chat = TgChat::private(alice().id);
    let prompt = ok(
        &fake,
        "sendMessage",
        &json!({ "chat_id": chat.id, "text": "Deploy?", "reply_markup": keyboard(&["ag1:q1:0"]) }),
    )
    .await;

    // Nothing queued: a short poll answers at once with nothing.
    assert_eq!(
        ok(&fake, "getUpdates", &json!({ "offset": 0, "timeout": 0 })).await,
        json!([])
    );

    // A long poll wakes as soon as the person taps.
    let poller = {
        let fake = fake.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let updates = ok(&fake, "GetUpdates", &json!({ "offset": 0, "timeout": 10 })).await;
            (updates, started.elapsed())
        })
    };
    fake.wait_for_call("getUpdates", 2, WAIT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let tap = fake.tap(&alice(), &chat, 1, "ag1:q1:0");
    let (updates, took) = poller.await.unwrap();
    assert!(took < Duration::from_secs(3), "the poll waited {took:?}");
    assert_eq!(updates, json!([tap]));

    let query = &tap["callback_query"];
    assert_eq!(query["data"], "ag1:q1:0");
    assert_eq!(query["from"]["id"], alice().id);
    assert_eq!(query["message"], prompt, "the message is the stored one");
    assert!(query["chat_instance"].is_string());
    let update_id = tap["update_id"].as_i64().unwrap();

    // Not confirmed yet: the same update again.
    assert_eq!(
        ok(&fake, "getUpdates", &json!({ "offset": update_id })).await,
        json!([tap])
    );
    // Confirmed by a higher offset: gone.
    let second = fake.message(&alice(), &chat, "2", Some(1), None);
    let updates = ok(&fake, "getUpdates", &json!({ "offset": update_id + 1 })).await;
    assert_eq!(updates, json!([second]));
    assert_eq!(fake.pending_updates(), vec![second.clone()]);
    assert_eq!(second["update_id"], update_id + 1);
    assert_eq!(second["message"]["reply_to_message"], prompt);

    // The callback is answered once.
    let answer = json!({ "callback_query_id": query["id"], "text": "Answer submitted" });
    assert_eq!(ok(&fake, "answerCallbackQuery", &answer).await, true);
    let (status, _) = call(&fake, "answerCallbackQuery", &answer).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A long poll with nothing to give answers when its timeout runs out.
    let started = Instant::now();
    let updates = ok(&fake, "getUpdates", &json!({ "offset": update_id + 2, "timeout": 1 })).await;
    assert_eq!(updates, json!([]));
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(fake.pending_updates().is_empty());
}

#[tokio::test]
async fn a_newer_poll_ends_an_older_one_and_a_webhook_stops_polling() {
    let fake = FakeTelegram::start().await;
    let older = {
        let fake = fake.clone();
        tokio::spawn(async move { call(&fake, "getUpdates", &json!({ "timeout": 10 })).await })
    };
    fake.wait_for_call("getUpdates", 1, WAIT).await.unwrap();
    ok(&fake, "getUpdates", &json!({ "timeout": 0 })).await;
    let (status, answer) = older.await.unwrap();
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        answer["description"]
            .as_str()
            .unwrap()
            .starts_with("Conflict: terminated by other getUpdates")
    );

    let set = json!({ "url": "https://example.invalid/hook", "secret_token": "s3cr3t-T0ken", "allowed_updates": ["message", "callback_query"] });
    assert_eq!(ok(&fake, "setWebhook", &set).await, true);
    let webhook = fake.webhook().unwrap();
    assert_eq!(webhook.secret_token.as_deref(), Some("s3cr3t-T0ken"));
    assert_eq!(
        ok(&fake, "getWebhookInfo", &json!({})).await["url"],
        "https://example.invalid/hook"
    );
    let (status, _) = call(&fake, "getUpdates", &json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT);

    assert_eq!(
        ok(&fake, "deleteWebhook", &json!({ "drop_pending_updates": true })).await,
        true
    );
    assert!(fake.webhook().is_none());
    assert_eq!(ok(&fake, "getWebhookInfo", &json!({})).await["url"], "");
}

#[tokio::test]
async fn allowed_updates_filter_what_is_queued_afterwards() {
    let fake = FakeTelegram::start().await;
    let chat = TgChat::private(alice().id);
    ok(&fake, "getUpdates", &json!({ "allowed_updates": ["message"] })).await;
    assert_eq!(fake.allowed_updates().unwrap(), ["message"]);

    let tap = fake.tap(&alice(), &chat, 1, "x");
    assert!(
        tap.get("callback_query").is_some(),
        "the update is still returned for webhook tests"
    );
    let text = fake.message(&alice(), &chat, "hello", None, None);
    let raw = fake.raw(json!({ "hypothetical_future_update": { "id": 1 } }));
    assert!(raw["update_id"].as_i64().unwrap() > text["update_id"].as_i64().unwrap());
    let updates = ok(&fake, "getUpdates", &json!({})).await;
    assert_eq!(updates, json!([text, raw]));
}

#[tokio::test]
async fn failures_are_injected_once_each() {
    let fake = FakeTelegram::start().await;
    let send = json!({ "chat_id": 9, "text": "hi" });

    fake.fail_next("SendMessage", Failure::TooManyRequests { retry_after: 3 });
    let (status, answer) = call(&fake, "sendMessage", &send).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        answer,
        json!({
            "ok": false,
            "error_code": 429,
            "description": "Too Many Requests: retry after 3",
            "parameters": { "retry_after": 3 },
        })
    );
    assert!(fake.send_times(9).is_empty(), "a refused message was not sent");
    // Consumed: the retry goes through.
    ok(&fake, "sendMessage", &send).await;
    assert_eq!(fake.send_times(9).len(), 1);
    assert_eq!(fake.calls_to("sendMessage").len(), 2, "both attempts are recorded");

    fake.fail_next(
        "sendMessage",
        Failure::Forbidden("Forbidden: bot was blocked by the user".into()),
    );
    fake.fail_next("sendMessage", Failure::BadRequest("Bad Request: chat not found".into()));
    fake.fail_next(
        "sendMessage",
        Failure::OkFalse {
            code: 400,
            description: "Bad Request: chat not found".into(),
        },
    );
    let (status, answer) = call(&fake, "sendMessage", &send).await;
    assert_eq!(
        (status, answer["error_code"].clone()),
        (StatusCode::FORBIDDEN, json!(403))
    );
    let (status, answer) = call(&fake, "sendMessage", &send).await;
    assert_eq!(
        (status, answer["description"].clone()),
        (StatusCode::BAD_REQUEST, json!("Bad Request: chat not found"))
    );
    let (status, answer) = call(&fake, "sendMessage", &send).await;
    assert_eq!(
        (status, answer["ok"].clone(), answer["error_code"].clone()),
        (StatusCode::OK, json!(false), json!(400))
    );

    fake.fail_next("getMe", Failure::ServerError);
    let (status, _) = call(&fake, "getMe", &json!({})).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);

    fake.fail_next("sendMessage", Failure::Slow(Duration::from_millis(400)));
    let started = Instant::now();
    ok(&fake, "sendMessage", &send).await;
    assert!(started.elapsed() >= Duration::from_millis(400));

    fake.fail_next("sendMessage", Failure::Disconnect);
    let url = format!("{}bot{}/sendMessage", fake.api_url(), fake.token());
    let error = reqwest::Client::new().post(url).json(&send).send().await;
    assert!(error.is_err(), "the connection is dropped: {error:?}");
    ok(&fake, "sendMessage", &send).await;
}

#[tokio::test]
async fn calls_are_recorded_and_can_be_waited_for() {
    let fake = FakeTelegram::start().await;
    let sender = {
        let fake = fake.clone();
        tokio::spawn(async move {
            for n in 0..3 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                ok(&fake, "sendMessage", &json!({ "chat_id": 4, "text": format!("n{n}") })).await;
            }
        })
    };
    let calls = fake.wait_for_call("sendMessage", 3, WAIT).await.unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].body, json!({ "chat_id": 4, "text": "n2" }));
    sender.await.unwrap();
    let times = fake.send_times(4);
    assert_eq!(times.len(), 3);
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]));

    let timeout = fake
        .wait_for_call("editMessageText", 1, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert_eq!(timeout.calls.len(), 3);
    assert!(timeout.to_string().contains("editMessageText"));

    // Form-urlencoded bodies are read too.
    let url = format!("{}bot{}/sendMessage", fake.api_url(), fake.token());
    let answer: Value = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("chat_id=4&text=caf%C3%A9+au+lait")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["result"]["text"], "café au lait");
}

#[tokio::test]
async fn forum_topics_and_replies_look_as_on_telegram() {
    let fake = FakeTelegram::start().await;
    let forum = TgChat::forum(-1_002_233_445_566, "Platform");
    fake.add_chat(&forum);
    let topic = fake.create_topic(&forum, "Deploys");

    let sent = ok(
        &fake,
        "sendMessage",
        &json!({ "chat_id": forum.id, "message_thread_id": topic, "text": "Ship it?" }),
    )
    .await;
    assert_eq!(sent["message_thread_id"], topic);
    assert_eq!(sent["is_topic_message"], true);
    assert_eq!(sent["chat"]["is_forum"], true);
    assert_eq!(sent["reply_to_message"]["forum_topic_created"]["name"], "Deploys");

    // A person's reply in the topic replies to the bot's message, whose own
    // reply is not nested.
    let bob = TgUser::new(444_555_666, "Bob");
    let reply_id = sent["message_id"].as_i64().unwrap();
    let update = fake.message(&bob, &forum, "yes", Some(reply_id), Some(topic));
    let message = &update["message"];
    assert_eq!(message["message_thread_id"], topic);
    assert_eq!(message["reply_to_message"]["message_id"], reply_id);
    assert!(message["reply_to_message"].get("reply_to_message").is_none());

    // A message in a topic that replies to nothing replies to the topic.
    let plain = fake.message(&bob, &forum, "also", None, Some(topic));
    assert_eq!(plain["message"]["reply_to_message"]["message_id"], topic);

    // In a plain supergroup, a reply carries the thread of what it answers.
    let ops = TgChat::supergroup(-1_001_987_654_321, "Ops");
    fake.add_chat(&ops);
    let prompt = ok(
        &fake,
        "sendMessage",
        &json!({ "chat_id": ops.id, "text": "Roll back?" }),
    )
    .await;
    assert!(prompt.get("message_thread_id").is_none());
    let answer = fake.message(&bob, &ops, "no", Some(prompt["message_id"].as_i64().unwrap()), None);
    assert_eq!(answer["message"]["message_thread_id"], prompt["message_id"]);
    assert!(answer["message"].get("is_topic_message").is_none());

    let sticker = fake.sticker(&bob, &ops, None);
    assert!(sticker["message"]["sticker"]["file_id"].is_string());
    let edited = fake.edited_message(&bob, &ops, answer["message"]["message_id"].as_i64().unwrap(), "yes");
    assert_eq!(edited["edited_message"]["text"], "yes");
    assert!(edited["edited_message"].get("edit_date").is_some());

    // Replying to a message that does not exist is refused.
    let (status, body) = call(
        &fake,
        "sendMessage",
        &json!({ "chat_id": ops.id, "text": "x", "reply_parameters": { "message_id": 999 } }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["description"], "Bad Request: message to be replied not found");
}

#[tokio::test]
async fn the_server_stops_when_dropped() {
    let fake = FakeTelegram::start().await;
    let url = format!("{}bot{}/getMe", fake.api_url(), fake.token());
    reqwest::get(&url).await.unwrap();
    drop(fake);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(reqwest::get(&url).await.is_err());
}

#[test]
fn payload_samples_are_updates() {
    assert!(TELEGRAM_PAYLOADS.len() >= 7);
    for (name, payload) in TELEGRAM_PAYLOADS {
        let update: Value = serde_json::from_str(payload).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(update["update_id"].is_i64(), "{name} has no update_id");
        assert_eq!(
            update.as_object().unwrap().len(),
            2,
            "{name}: one update kind besides update_id"
        );
    }
    for name in [
        "callback_query",
        "message_private",
        "message_group_reply",
        "edited_message",
        "sticker",
        "forum_topic_message",
        "unknown_kind",
    ] {
        assert!(!telegram_payload(name).is_empty());
    }
    assert_eq!(telegram_payload("sticker.json"), telegram_payload("sticker"));

    let reply: Value = serde_json::from_str(telegram_payload("message_group_reply")).unwrap();
    assert!(reply["message"]["reply_to_message"].is_object());
    assert!(reply["message"]["reply_to_message"].get("reply_to_message").is_none());
    let topic: Value = serde_json::from_str(telegram_payload("forum_topic_message")).unwrap();
    assert_eq!(topic["message"]["is_topic_message"], true);
    assert!(topic["message"]["message_thread_id"].is_i64());
}

// ---------------------------------------------------------------------------
// Webhook delivery

const SECRET: &str = "s3cr3t-T0ken";

/// One request the webhook receiver got.
#[derive(Debug, Clone)]
struct Hit {
    path_and_query: String,
    secret: Option<String>,
    content_type: Option<String>,
    body: Value,
}

/// How the receiver answers: these statuses for its first requests, then
/// 200; the first request to get 200 waits for `hold`, if given, to be notified.
#[derive(Clone, Default)]
struct Script {
    failures: Vec<StatusCode>,
    hold: Option<Arc<Notify>>,
}

#[derive(Clone, Default)]
struct ReceiverState {
    script: Script,
    hits: Arc<Mutex<Vec<Hit>>>,
}

/// A webhook receiver on `127.0.0.1:0`, standing in for the server under test.
struct Receiver {
    base: String,
    hits: Arc<Mutex<Vec<Hit>>>,
    task: JoinHandle<()>,
}

impl Receiver {
    async fn start(script: Script) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = ReceiverState {
            script,
            hits: Arc::default(),
        };
        let hits = Arc::clone(&state.hits);
        let app = axum::Router::new().fallback(receive).with_state(state);
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, hits, task }
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(State(state): State<ReceiverState>, request: Request) -> StatusCode {
    let (parts, body) = request.into_parts();
    let header = |name: &str| parts.headers.get(name).map(|value| value.to_str().unwrap().to_owned());
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let n = {
        let mut hits = state.hits.lock().unwrap();
        hits.push(Hit {
            path_and_query: parts.uri.path_and_query().unwrap().to_string(),
            secret: header("x-telegram-bot-api-secret-token"),
            content_type: header("content-type"),
            body: serde_json::from_slice(&body).unwrap(),
        });
        hits.len() - 1
    };
    match state.script.failures.get(n) {
        Some(status) => *status,
        None => {
            if n == state.script.failures.len()
                && let Some(hold) = &state.script.hold
            {
                hold.notified().await;
            }
            StatusCode::OK
        }
    }
}

/// A base URL with nothing listening on it.
async fn dead_base() -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn id(update: &Value) -> i64 {
    update["update_id"].as_i64().unwrap()
}

async fn set_webhook(fake: &FakeTelegram, url: &str) {
    let set = json!({ "url": url, "secret_token": SECRET, "allowed_updates": ["message", "callback_query"] });
    assert_eq!(ok(fake, "setWebhook", &set).await, true);
}

#[tokio::test]
async fn a_webhook_gets_each_update_posted_to_its_path_with_the_secret() {
    let fake = FakeTelegram::start().await;
    let receiver = Receiver::start(Script::default()).await;
    let chat = TgChat::private(alice().id);
    set_webhook(&fake, "https://askgate.test/telegram/tg?bot=main#ignored").await;
    fake.deliver_webhooks_to(&format!("{}/", receiver.base));

    let tap = fake.tap(&alice(), &chat, 1, "ag1:q1:0");
    let text = fake.message(&alice(), &chat, "production", None, None);
    let attempts = fake.wait_for_delivery(id(&tap), WAIT).await.unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].url, format!("{}/telegram/tg?bot=main", receiver.base));
    assert_eq!(attempts[0].status, Some(200));
    fake.wait_for_delivery(id(&text), WAIT).await.unwrap();
    assert!(
        fake.pending_updates().is_empty(),
        "acknowledged updates leave the queue"
    );

    let hits = receiver.hits();
    assert_eq!(hits.len(), 2, "{hits:?}");
    for (hit, update) in hits.iter().zip([&tap, &text]) {
        assert_eq!(hit.path_and_query, "/telegram/tg?bot=main");
        assert_eq!(hit.secret.as_deref(), Some(SECRET));
        assert_eq!(hit.content_type.as_deref(), Some("application/json"));
        assert_eq!(&hit.body, update);
    }
    let deliveries = fake.webhook_deliveries();
    let ids: Vec<i64> = deliveries.iter().map(|delivery| delivery.update_id).collect();
    assert_eq!(ids, [id(&tap), id(&text)]);

    let info = ok(&fake, "getWebhookInfo", &json!({})).await;
    assert_eq!(info["pending_update_count"], 0);
    assert!(info.get("last_error_message").is_none(), "{info}");
}

#[tokio::test]
async fn a_refused_delivery_is_retried_in_order_until_acknowledged() {
    let fake = FakeTelegram::start().await;
    let hold = Arc::new(Notify::new());
    let receiver = Receiver::start(Script {
        failures: vec![StatusCode::INTERNAL_SERVER_ERROR, StatusCode::UNAUTHORIZED],
        hold: Some(Arc::clone(&hold)),
    })
    .await;
    let chat = TgChat::private(alice().id);
    set_webhook(&fake, "https://askgate.test/telegram/tg").await;
    fake.deliver_webhooks_to(&receiver.base);
    let first = fake.tap(&alice(), &chat, 1, "ag1:q1:0");
    let second = fake.message(&alice(), &chat, "later", None, None);

    // Two refusals; the third attempt is held by the receiver, so the
    // webhook is still failing while the test looks.
    fake.wait_for_deliveries(WAIT, |deliveries| deliveries.len() >= 2)
        .await
        .unwrap();
    let info = ok(&fake, "getWebhookInfo", &json!({})).await;
    assert_eq!(info["pending_update_count"], 2, "{info}");
    assert_eq!(
        info["last_error_message"],
        "Wrong response from the webhook: 401 Unauthorized"
    );
    assert!(info["last_error_date"].as_u64().unwrap() > 1_700_000_000);
    assert_eq!(fake.pending_updates(), [first.clone(), second.clone()]);

    hold.notify_one();
    let attempts = fake.wait_for_delivery(id(&first), WAIT).await.unwrap();
    let statuses: Vec<Option<u16>> = attempts.iter().map(|attempt| attempt.status).collect();
    assert_eq!(statuses, [Some(500), Some(401), Some(200)]);
    assert!(
        attempts[1].at - attempts[0].at >= WEBHOOK_RETRY_PAUSE,
        "a retry waits its pause"
    );
    fake.wait_for_delivery(id(&second), WAIT).await.unwrap();

    let arrived: Vec<i64> = receiver.hits().iter().map(|hit| id(&hit.body)).collect();
    assert_eq!(arrived, [id(&first), id(&first), id(&first), id(&second)]);
    let deliveries = fake.webhook_deliveries();
    let attempted: Vec<(i64, Option<u16>)> = deliveries
        .iter()
        .map(|delivery| (delivery.update_id, delivery.status))
        .collect();
    assert_eq!(
        attempted,
        [
            (id(&first), Some(500)),
            (id(&first), Some(401)),
            (id(&first), Some(200)),
            (id(&second), Some(200)),
        ]
    );
    assert!(deliveries.windows(2).all(|pair| pair[0].at <= pair[1].at));
    assert!(fake.pending_updates().is_empty());
    // Telegram keeps reporting the last error after it recovered.
    let info = ok(&fake, "getWebhookInfo", &json!({})).await;
    assert_eq!(info["pending_update_count"], 0);
    assert!(info["last_error_message"].is_string());
}

#[tokio::test]
async fn nothing_is_delivered_without_a_base_or_after_delete_webhook() {
    // A negative wait: long enough for several attempts, had there been any.
    const QUIET: Duration = Duration::from_millis(300);
    let fake = FakeTelegram::start().await;
    let receiver = Receiver::start(Script::default()).await;
    let chat = TgChat::private(alice().id);

    // A webhook but no base: the update waits in the queue.
    set_webhook(&fake, "https://askgate.test/telegram/tg").await;
    let waiting = fake.message(&alice(), &chat, "one", None, None);
    let error = fake.wait_for_delivery(id(&waiting), QUIET).await.unwrap_err();
    assert!(error.deliveries.is_empty(), "{error}");
    assert!(receiver.hits().is_empty());
    assert_eq!(fake.pending_updates(), std::slice::from_ref(&waiting));

    // Given a base, it goes at once.
    fake.deliver_webhooks_to(&receiver.base);
    fake.wait_for_delivery(id(&waiting), WAIT).await.unwrap();
    assert_eq!(receiver.hits().len(), 1);

    // Webhook deleted: updates stay for getUpdates.
    assert_eq!(ok(&fake, "deleteWebhook", &json!({})).await, true);
    let kept = fake.message(&alice(), &chat, "two", None, None);
    let error = fake.wait_for_delivery(id(&kept), QUIET).await.unwrap_err();
    assert_eq!(error.deliveries.len(), 1, "only the first update: {error}");
    assert_eq!(receiver.hits().len(), 1);
    assert_eq!(fake.pending_updates(), std::slice::from_ref(&kept));
    assert_eq!(ok(&fake, "getUpdates", &json!({})).await, json!([kept]));
}

#[tokio::test]
async fn a_new_base_takes_over_delivery() {
    let fake = FakeTelegram::start().await;
    let chat = TgChat::private(alice().id);
    let dead = dead_base().await;
    set_webhook(&fake, "https://askgate.test/telegram/tg").await;
    fake.deliver_webhooks_to(&dead);
    let tap = fake.tap(&alice(), &chat, 1, "ag1:q1:1");

    let failed = fake
        .wait_for_deliveries(WAIT, |deliveries| deliveries.len() >= 2)
        .await
        .unwrap();
    for attempt in &failed {
        assert_eq!(
            (attempt.update_id, attempt.url.as_str(), attempt.status),
            (id(&tap), format!("{dead}/telegram/tg").as_str(), None)
        );
    }
    let info = ok(&fake, "getWebhookInfo", &json!({})).await;
    assert_eq!(info["last_error_message"], "Connection refused");
    assert_eq!(info["pending_update_count"], 1);

    // The server under test came back on another port.
    let receiver = Receiver::start(Script::default()).await;
    fake.deliver_webhooks_to(&receiver.base);
    let attempts = fake.wait_for_delivery(id(&tap), WAIT).await.unwrap();
    let (last, before) = attempts.split_last().unwrap();
    assert!(before.len() >= 2 && before.iter().all(|attempt| attempt.status.is_none()));
    assert_eq!(last.url, format!("{}/telegram/tg", receiver.base));
    assert_eq!(last.status, Some(200));
    let hits = receiver.hits();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].body, tap);
    assert!(fake.pending_updates().is_empty());
}

#[tokio::test]
async fn webhook_delivery_stops_with_the_fake() {
    let fake = FakeTelegram::start().await;
    let receiver = Receiver::start(Script {
        failures: vec![StatusCode::SERVICE_UNAVAILABLE; 1000],
        hold: None,
    })
    .await;
    set_webhook(&fake, "https://askgate.test/hook").await;
    fake.deliver_webhooks_to(&receiver.base);
    fake.message(&alice(), &TgChat::private(alice().id), "forever", None, None);
    fake.wait_for_deliveries(WAIT, |deliveries| deliveries.len() >= 2)
        .await
        .unwrap();

    let url = format!("{}bot{}/getMe", fake.api_url(), fake.token());
    drop(fake);
    // The delivery task held no handle: the server is gone…
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(reqwest::get(&url).await.is_err());
    // …and so are the retries, which would come every WEBHOOK_RETRY_PAUSE.
    let after_drop = receiver.hits().len();
    tokio::time::sleep(WEBHOOK_RETRY_PAUSE * 3).await;
    assert_eq!(receiver.hits().len(), after_drop);
}
