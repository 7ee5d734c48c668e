//! The fake Telegram refuses what Telegram refuses: every request is checked
//! against the vendored Bot API description (`spec/telegram/api.json`), and a
//! violation is answered as Telegram answers it, `400` with
//! `{"ok":false,"error_code":400,"description":"Bad Request: …"}`. One case
//! at least per kind of rule, and per limit askgate relies on, each beside
//! the largest request that is still accepted; and a reply as askgate sends
//! a reminder, with the rules its description states for replies.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use askgate_testkit::telegram::{FakeTelegram, TgChat, TgMention, TgUser};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn call(fake: &FakeTelegram, method: &str, body: &Value) -> (StatusCode, Value) {
    let url = format!("{}bot{}/{method}", fake.api_url(), fake.token());
    let response = reqwest::Client::new().post(url).json(body).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

async fn accepted(fake: &FakeTelegram, method: &str, body: &Value) -> Value {
    let (status, answer) = call(fake, method, body).await;
    assert_eq!(status, StatusCode::OK, "{method} {body}: {answer}");
    answer["result"].clone()
}

/// Asserts that Telegram's way of refusing is used, with this description.
async fn refused(fake: &FakeTelegram, method: &str, body: &Value, description: &str) {
    let (status, answer) = call(fake, method, body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {body}: {answer}");
    assert_eq!(
        answer,
        json!({ "ok": false, "error_code": 400, "description": description }),
        "{method} {body}"
    );
}

const CHAT: i64 = 111_222_333;

fn send(text: &str) -> Value {
    json!({ "chat_id": CHAT, "text": text })
}

fn with_markup(markup: &Value) -> Value {
    let mut body = send("pick");
    body["reply_markup"] = markup.clone();
    body
}

fn button(data: &str) -> Value {
    json!({ "text": "label", "callback_data": data })
}

fn keyboard(buttons: &[Value]) -> Value {
    json!({ "inline_keyboard": [buttons] })
}

#[tokio::test]
async fn an_unknown_method_is_not_found() {
    let fake = FakeTelegram::start().await;
    let (status, answer) = call(&fake, "sendCarrierPigeon", &json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer,
        json!({ "ok": false, "error_code": 404, "description": "Not Found" })
    );
    // A method Telegram has is found in any case and recorded as documented.
    accepted(&fake, "SENDCHATACTION", &json!({ "chat_id": CHAT, "action": "typing" })).await;
    assert_eq!(fake.calls()[1].method, "sendChatAction");
}

#[tokio::test]
async fn a_missing_required_parameter_or_field_is_refused() {
    let fake = FakeTelegram::start().await;
    // Telegram's own wording, per parameter.
    refused(
        &fake,
        "sendMessage",
        &json!({ "text": "hi" }),
        "Bad Request: chat_id is empty",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &json!({ "chat_id": CHAT }),
        "Bad Request: message text is empty",
    )
    .await;
    refused(&fake, "sendMessage", &send(""), "Bad Request: message text is empty").await;
    refused(
        &fake,
        "answerCallbackQuery",
        &json!({ "text": "Got it" }),
        "Bad Request: query is too old and response timeout expired or query ID is invalid",
    )
    .await;
    refused(
        &fake,
        "deleteMessage",
        &json!({ "chat_id": CHAT }),
        "Bad Request: message identifier is not specified",
    )
    .await;
    // The Bot API server's general wording.
    refused(
        &fake,
        "setMyCommands",
        &json!({}),
        "Bad Request: parameter \"commands\" is required",
    )
    .await;
    // Inside objects, its JSON reader's.
    let mut body = send("a reply");
    body["reply_parameters"] = json!({ "allow_sending_without_reply": true });
    refused(
        &fake,
        "sendMessage",
        &body,
        "Bad Request: can't find field \"message_id\"",
    )
    .await;
    body["reply_parameters"] = json!({ "message_id": "first" });
    refused(
        &fake,
        "sendMessage",
        &body,
        "Bad Request: field \"message_id\" must be of type Integer",
    )
    .await;
    body["reply_parameters"] =
        json!({ "message_id": 1, "allow_sending_without_reply": true, "fail_if_missing": false });
    refused(
        &fake,
        "sendMessage",
        &body,
        "Bad Request: unknown field \"fail_if_missing\"",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&keyboard(&[json!({ "callback_data": "x" })])),
        "Bad Request: can't parse inline keyboard button: Can't find field \"text\"",
    )
    .await;
    assert!(fake.messages().is_empty(), "nothing refused was sent");
}

/// Telegram ignores what it does not know; the fake refuses it, so that a
/// misspelt parameter fails a test instead of silently doing nothing.
#[tokio::test]
async fn an_unknown_parameter_or_field_is_refused() {
    let fake = FakeTelegram::start().await;
    let mut body = send("hi");
    body["disable_web_page_preview"] = json!(true);
    refused(
        &fake,
        "sendMessage",
        &body,
        "Bad Request: unknown parameter \"disable_web_page_preview\"",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&keyboard(&[json!({ "text": "a", "callback": "x" })])),
        "Bad Request: can't parse inline keyboard button: Unknown field \"callback\"",
    )
    .await;
    refused(
        &fake,
        "getMe",
        &json!({ "verbose": true }),
        "Bad Request: unknown parameter \"verbose\"",
    )
    .await;
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_refused() {
    let fake = FakeTelegram::start().await;
    refused(
        &fake,
        "sendMessage",
        &json!({ "chat_id": true, "text": "hi" }),
        "Bad Request: parameter \"chat_id\" must be of type Integer or String",
    )
    .await;
    refused(
        &fake,
        "deleteMessage",
        &json!({ "chat_id": CHAT, "message_id": "first" }),
        "Bad Request: parameter \"message_id\" must be of type Integer",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&json!({ "force_reply": "yes" })),
        "Bad Request: field \"force_reply\" must be of type Boolean",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&keyboard(&[json!({ "text": ["a"], "callback_data": "x" })])),
        "Bad Request: can't parse inline keyboard button: Field \"text\" must be of type String",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&json!({ "inline_keyboard": [button("x")] })),
        "Bad Request: field \"inline_keyboard[0]\" must be of type Array of InlineKeyboardButton",
    )
    .await;
    let mut body = send("hi");
    body["link_preview_options"] = json!({ "is_disabled": "yes" });
    refused(
        &fake,
        "sendMessage",
        &body,
        "Bad Request: field \"is_disabled\" must be of type Boolean",
    )
    .await;
    // An edit can carry nothing but an inline keyboard.
    let sent = accepted(&fake, "sendMessage", &send("hi")).await;
    refused(
        &fake,
        "editMessageReplyMarkup",
        &json!({ "chat_id": CHAT, "message_id": sent["message_id"], "reply_markup": { "force_reply": true } }),
        "Bad Request: unknown field \"force_reply\"",
    )
    .await;
    // A union takes any of its types, and an abstract type its subtypes.
    accepted(
        &fake,
        "sendMessage",
        &json!({ "chat_id": CHAT.to_string(), "text": "hi" }),
    )
    .await;
    let commands = json!([{ "command": "skip", "description": "Skip the question" }]);
    let scope = |scope: Value| json!({ "commands": commands, "scope": scope });
    accepted(
        &fake,
        "setMyCommands",
        &scope(json!({ "type": "chat", "chat_id": CHAT })),
    )
    .await;
    accepted(&fake, "setMyCommands", &scope(json!({ "type": "all_private_chats" }))).await;
    refused(
        &fake,
        "setMyCommands",
        &scope(json!({ "type": "chat" })),
        "Bad Request: can't find field \"chat_id\"",
    )
    .await;
}

/// A form sends nothing but text, and JSON-serialized objects: the Bot API
/// server reads numbers, booleans and objects from it.
#[tokio::test]
async fn form_parameters_are_read_as_the_bot_api_server_reads_them() {
    let fake = FakeTelegram::start().await;
    let url = format!("{}bot{}/sendMessage", fake.api_url(), fake.token());
    let form = [
        ("chat_id", CHAT.to_string()),
        ("text", "hi".to_owned()),
        ("disable_notification", "true".to_owned()),
        ("reply_markup", keyboard(&[button("ag1:q:0")]).to_string()),
    ];
    let response = reqwest::Client::new().post(url).form(&form).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["reply_markup"], keyboard(&[button("ag1:q:0")]));
}

#[tokio::test]
async fn message_text_is_at_most_4096_characters_after_parsing() {
    let fake = FakeTelegram::start().await;
    // Characters are code points: 4096 emoji are 8192 UTF-16 units.
    let most = "😀".repeat(4096);
    let sent = accepted(&fake, "sendMessage", &send(&most)).await;
    refused(
        &fake,
        "sendMessage",
        &send(&format!("{most}x")),
        "Bad Request: message is too long",
    )
    .await;
    // Markup does not count, and an edit is refused by Telegram's servers.
    let mut html = send(&format!("<b>{most}</b>"));
    html["parse_mode"] = json!("HTML");
    accepted(&fake, "sendMessage", &html).await;
    let edit = |text: String| json!({ "chat_id": CHAT, "message_id": sent["message_id"], "text": text });
    accepted(&fake, "editMessageText", &edit(format!("{}y", "x".repeat(4095)))).await;
    refused(
        &fake,
        "editMessageText",
        &edit("x".repeat(4097)),
        "Bad Request: MESSAGE_TOO_LONG",
    )
    .await;
}

#[tokio::test]
async fn a_callback_answer_is_at_most_200_characters() {
    let fake = FakeTelegram::start().await;
    let user = TgUser::new(CHAT, "Alice");
    let chat = TgChat::private(CHAT);
    let sent = accepted(&fake, "sendMessage", &with_markup(&keyboard(&[button("ag1:q:0")]))).await;
    let id = sent["message_id"].as_i64().unwrap();
    let tap = fake.tap(&user, &chat, id, "ag1:q:0");
    let answer = |text: String| json!({ "callback_query_id": tap["callback_query"]["id"], "text": text });
    refused(
        &fake,
        "answerCallbackQuery",
        &answer("é".repeat(201)),
        "Bad Request: MESSAGE_TOO_LONG",
    )
    .await;
    accepted(&fake, "answerCallbackQuery", &answer("😀".repeat(200))).await;
}

#[tokio::test]
async fn callback_data_is_1_to_64_bytes() {
    let fake = FakeTelegram::start().await;
    let markup = |data: &str| with_markup(&keyboard(&[button(data)]));
    accepted(&fake, "sendMessage", &markup(&"x".repeat(64))).await;
    for data in ["", &"x".repeat(65), &"é".repeat(33)] {
        refused(&fake, "sendMessage", &markup(data), "Bad Request: BUTTON_DATA_INVALID").await;
    }
}

#[tokio::test]
async fn a_force_reply_placeholder_is_1_to_64_characters() {
    let fake = FakeTelegram::start().await;
    let placeholder = |text: String| with_markup(&json!({ "force_reply": true, "input_field_placeholder": text }));
    accepted(&fake, "sendMessage", &placeholder("😀".repeat(64))).await;
    refused(
        &fake,
        "sendMessage",
        &placeholder("😀".repeat(65)),
        "Bad Request: field \"input_field_placeholder\" must be 1-64 characters long, not 65",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &placeholder(String::new()),
        "Bad Request: field \"input_field_placeholder\" must be 1-64 characters long, not 0",
    )
    .await;
}

#[tokio::test]
async fn bot_commands_and_webhook_secrets_keep_their_lengths() {
    let fake = FakeTelegram::start().await;
    let commands = |command: String, description: String| json!({ "commands": [{ "command": command, "description": description }] });
    accepted(&fake, "setMyCommands", &commands("c".repeat(32), "d".repeat(256))).await;
    refused(
        &fake,
        "setMyCommands",
        &commands("c".repeat(33), "d".into()),
        "Bad Request: can't parse BotCommand: Field \"command\" must be 1-32 characters long, not 33",
    )
    .await;
    refused(
        &fake,
        "setMyCommands",
        &commands("c".into(), "d".repeat(257)),
        "Bad Request: can't parse BotCommand: Field \"description\" must be 1-256 characters long, not 257",
    )
    .await;

    let webhook = |secret: String| json!({ "url": "https://askgate.test/telegram", "secret_token": secret });
    accepted(&fake, "setWebhook", &webhook("s".repeat(256))).await;
    refused(
        &fake,
        "setWebhook",
        &webhook("s".repeat(257)),
        "Bad Request: secret token is too long",
    )
    .await;
    refused(
        &fake,
        "setWebhook",
        &webhook("not secret!".into()),
        "Bad Request: secret token contains unallowed characters",
    )
    .await;
}

#[tokio::test]
async fn counts_are_kept_commands_and_buttons() {
    let fake = FakeTelegram::start().await;
    let command = |n: usize| json!({ "command": format!("c{n}"), "description": "d" });
    accepted(
        &fake,
        "setMyCommands",
        &json!({ "commands": (0..100).map(command).collect::<Vec<_>>() }),
    )
    .await;
    refused(
        &fake,
        "setMyCommands",
        &json!({ "commands": (0..101).map(command).collect::<Vec<_>>() }),
        "Bad Request: parameter \"commands\" must have 0-100 items, not 101",
    )
    .await;

    // Telegram's servers refuse more than 100 buttons; the description
    // states no number (see spec/telegram/README.md, "Added limits").
    let rows = |n: usize| {
        let rows: Vec<Value> = (0..n).map(|i| json!([button(&format!("ag1:q:{i}"))])).collect();
        with_markup(&json!({ "inline_keyboard": rows }))
    };
    accepted(&fake, "sendMessage", &rows(100)).await;
    refused(
        &fake,
        "sendMessage",
        &rows(101),
        "Bad Request: reply markup is too long",
    )
    .await;
}

#[tokio::test]
async fn an_inline_button_has_exactly_one_action() {
    let fake = FakeTelegram::start().await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&keyboard(&[json!({ "text": "no action" })])),
        "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
    )
    .await;
    refused(
        &fake,
        "sendMessage",
        &with_markup(&keyboard(&[
            json!({ "text": "two", "callback_data": "x", "url": "https://askgate.test" }),
        ])),
        "Bad Request: can't parse inline keyboard button: Exactly one of the fields other than text, \
         icon_custom_emoji_id, and style must be used to specify the type of the button",
    )
    .await;
}

/// What the edge suite asks of every platform: the requests refused as
/// invalid, each described; not those refused for the state they met.
#[tokio::test]
async fn refused_requests_are_reported_as_violations() {
    let fake = FakeTelegram::start().await;
    accepted(&fake, "sendMessage", &send("fine")).await;
    let (status, _) = call(
        &fake,
        "editMessageText",
        &json!({ "chat_id": CHAT, "message_id": 99, "text": "x" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a message that is not there");
    assert_eq!(fake.violations(), Vec::<String>::new());

    refused(
        &fake,
        "sendMessage",
        &send(&"x".repeat(4097)),
        "Bad Request: message is too long",
    )
    .await;
    let mut html = send("a < b");
    html["parse_mode"] = json!("HTML");
    call(&fake, "sendMessage", &html).await;
    call(&fake, "sendCarrierPigeon", &json!({})).await;
    let violations = fake.violations();
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(violations[0].starts_with("Bad Request: message is too long: sendMessage {"));
    assert!(violations[0].contains("… (4128 characters)"), "{}", violations[0]);
    assert!(violations[1].starts_with("Bad Request: can't parse entities: "));
    assert_eq!(violations[2], "Not Found: sendCarrierPigeon {}");
}

/// A reminder as askgate sends it: a reply, with a text mention of the
/// person, read back with `replies_to`; `allow_sending_without_reply` sends
/// a reply to a message that is gone, except in a forum topic.
#[tokio::test]
async fn replies_and_text_mentions_are_read_back_as_a_person_sees_them() {
    let fake = FakeTelegram::start().await;
    let alice = TgUser::new(111_222_333, "Alice");
    let room = TgChat::group(-4_242, "Release team");
    let bob = TgUser::new(444_555_666, "Bob");
    // Alice is known to the fake once she has written.
    fake.message(&alice, &room, "hi", None, None);
    let prompt = accepted(&fake, "sendMessage", &json!({ "chat_id": room.id, "text": "Ship it?" })).await;
    let prompt_id = prompt["message_id"].as_i64().unwrap();
    let reminder = json!({
        "chat_id": room.id,
        "text": format!("<a href=\"tg://user?id={}\">Alice</a> Still waiting, @bob_example &lt;b&gt;", alice.id),
        "parse_mode": "HTML",
        "reply_parameters": { "message_id": prompt_id, "allow_sending_without_reply": true },
    });
    let sent = accepted(&fake, "sendMessage", &reminder).await;
    assert_eq!(sent["reply_to_message"]["message_id"], prompt_id);
    assert_eq!(sent["entities"][0]["type"], "text_mention");
    assert_eq!(sent["entities"][0]["user"]["first_name"], "Alice");
    // Another message in the chat replies to nothing.
    accepted(&fake, "sendMessage", &json!({ "chat_id": room.id, "text": "aside" })).await;
    let replies = fake.replies_to(room.id, prompt_id);
    let [reply] = replies.as_slice() else {
        panic!("one reply to the prompt: {replies:?}");
    };
    assert_eq!(reply.text, "Alice Still waiting, @bob_example <b>");
    assert_eq!(
        reply.mentions,
        [TgMention::User(alice.id), TgMention::Username("bob_example".into())]
    );
    assert_eq!(fake.bot_messages_in(room.id).len(), 3);
    assert!(fake.replies_to(room.id, 999).is_empty());

    // A message that is gone: sent without the reply when allowed.
    let gone = json!({ "message_id": 999, "allow_sending_without_reply": true });
    let sent = accepted(
        &fake,
        "sendMessage",
        &json!({ "chat_id": room.id, "text": "x", "reply_parameters": gone }),
    )
    .await;
    assert!(sent.get("reply_to_message").is_none());
    // "Always False for … forum topic": refused there all the same.
    let forum = TgChat::forum(-1_002_233_445_566, "Platform");
    fake.add_chat(&forum);
    let topic = fake.create_topic(&forum, "Deploys");
    let in_topic = json!({ "chat_id": forum.id, "message_thread_id": topic, "text": "x", "reply_parameters": gone });
    let (status, body) = call(&fake, "sendMessage", &in_topic).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["description"], "Bad Request: message to be replied not found");
    // A reply in the topic to a message there is a reply to it.
    let asked = accepted(
        &fake,
        "sendMessage",
        &json!({ "chat_id": forum.id, "message_thread_id": topic, "text": "Ship?" }),
    )
    .await;
    let asked_id = asked["message_id"].as_i64().unwrap();
    let here = json!({ "message_id": asked_id, "allow_sending_without_reply": true });
    let nudge =
        json!({ "chat_id": forum.id, "message_thread_id": topic, "text": "Still waiting", "reply_parameters": here });
    let sent = accepted(&fake, "sendMessage", &nudge).await;
    assert_eq!(
        (
            sent["message_thread_id"].as_i64(),
            sent["reply_to_message"]["message_id"].as_i64()
        ),
        (Some(topic), Some(asked_id))
    );
    assert_eq!(fake.replies_to(forum.id, asked_id)[0].thread, Some(topic));
    // Replies to another chat are not modelled.
    let elsewhere = json!({ "message_id": prompt_id, "chat_id": room.id });
    let (status, _) = call(
        &fake,
        "sendMessage",
        &json!({ "chat_id": bob.id, "text": "x", "reply_parameters": elsewhere }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
}
