//! The checks against Slack's vendored specs, each refused the way Slack
//! refuses it: a method Slack does not document (`unknown_method`); a
//! missing, unknown or mistyped argument (`invalid_arguments`); every
//! Block Kit length and count askgate relies on, in a message
//! (`invalid_blocks`) and in a modal (`invalid_arguments`), counted in
//! UTF-16 units; a message's `text` (`msg_too_long`); and a reply's
//! `thread_ts`, which must name a parent message (`invalid_thread_ts`).

use askgate_testkit::slack::{BOT_TOKEN, FakeSlack, Ping};
use serde_json::{Value, json};

use super::{World, world};

/// A raw JSON call with the bot token: Slack's whole answer.
async fn call(fake: &FakeSlack, method: &str, body: &Value) -> Value {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{}/{method}", fake.api_url()))
        .bearer_auth(BOT_TOKEN)
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The `[ERROR] …` messages of a refusal.
fn messages(answer: &Value) -> Vec<String> {
    answer["response_metadata"]["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages: {answer}"))
        .iter()
        .map(|message| message.as_str().unwrap().to_owned())
        .collect()
}

fn plain(text: &str) -> Value {
    json!({ "type": "plain_text", "text": text })
}

fn button(text: &str, action_id: &str, value: &str) -> Value {
    json!({ "type": "button", "text": plain(text), "action_id": action_id, "value": value })
}

fn option(text: &str, value: &str) -> Value {
    json!({ "text": plain(text), "value": value })
}

/// A form as askgate opens one: an input with a placeholder, checkboxes.
fn modal() -> Value {
    json!({
        "type": "modal",
        "callback_id": "ag1:01JQUESTION00000000000000:a",
        "private_metadata": "{\"c\":\"C1\"}",
        "title": plain("Answer"),
        "submit": plain("Send"),
        "close": plain("Cancel"),
        "blocks": [
            { "type": "input", "block_id": "deploy", "label": plain("Where should this build go?"),
              "element": { "type": "plain_text_input", "action_id": "text", "multiline": true, "max_length": 3000,
                           "placeholder": plain("Your own words") } },
            { "type": "input", "block_id": "notify#options", "optional": true, "label": plain("Notify"),
              "element": { "type": "checkboxes", "action_id": "checked",
                           "options": [option("Team channel", "0"), option("Nobody", "1")] } }
        ]
    })
}

/// A prompt as askgate posts one: a section and a row of buttons.
fn prompt() -> Value {
    json!([
        { "type": "section", "block_id": "askgate:question", "text": { "type": "mrkdwn", "text": "*Deploy?*", "verbatim": true } },
        { "type": "actions", "block_id": "askgate:actions", "elements": [
            button("Staging", "ag1:q:0", "ag1:q:0"), button("Production", "ag1:q:1", "ag1:q:1")
        ] }
    ])
}

/// Sets `pointer` (a JSON pointer into `value`) to `to`.
fn with(mut value: Value, pointer: &str, to: Value) -> Value {
    *value.pointer_mut(pointer).unwrap_or_else(|| panic!("no {pointer}")) = to;
    value
}

#[tokio::test]
async fn methods_and_arguments_are_checked_against_the_web_api_document() {
    let world = world().await;
    let fake = &world.fake;
    let general = world.general.id.as_str();

    // A method Slack does not document.
    let answer = call(fake, "chat.postMesage", &json!({ "channel": general, "text": "hi" })).await;
    assert_eq!(answer["error"], "unknown_method");
    assert_eq!(answer["req_method"], "chat.postMesage");

    // A required argument left out.
    let answer = call(fake, "chat.postMessage", &json!({ "text": "hi" })).await;
    assert_eq!(
        (&answer["ok"], &answer["error"]),
        (&json!(false), &json!("invalid_arguments"))
    );
    assert_eq!(messages(&answer), ["[ERROR] missing required field: channel"]);
    let answer = call(fake, "chat.update", &json!({ "channel": general, "text": "hi" })).await;
    assert_eq!(messages(&answer), ["[ERROR] missing required field: ts"]);
    let answer = call(fake, "views.open", &json!({ "trigger_id": "1.2.3" })).await;
    assert_eq!(messages(&answer), ["[ERROR] missing required field: view"]);

    // An argument the method does not document (a misspelling).
    let answer = call(
        fake,
        "chat.postMessage",
        &json!({ "channel": general, "text": "hi", "thread": "1.2" }),
    )
    .await;
    assert_eq!(messages(&answer), ["[ERROR] unknown argument: thread"]);

    // Wrong types: `users` is a comma-separated string, not an array.
    let answer = call(fake, "conversations.open", &json!({ "users": [world.alice.id] })).await;
    assert_eq!(answer["error"], "invalid_arguments");
    assert_eq!(messages(&answer), ["[ERROR] must be a string [json-pointer:/users]"]);
    let answer = call(fake, "conversations.open", &json!({ "users": world.alice.id })).await;
    assert_eq!(answer["ok"], true, "{answer}");
    let answer = call(
        fake,
        "chat.postMessage",
        &json!({ "channel": general, "text": "hi", "unfurl_links": "nope" }),
    )
    .await;
    assert_eq!(
        messages(&answer),
        ["[ERROR] must be a boolean [json-pointer:/unfurl_links]"]
    );
    let answer = call(
        fake,
        "chat.postMessage",
        &json!({ "channel": general, "text": { "t": 1 } }),
    )
    .await;
    assert_eq!(messages(&answer), ["[ERROR] must be a string [json-pointer:/text]"]);

    // Nothing of it reached the channel.
    assert!(fake.messages(general).is_empty());
}

/// Posts these blocks to #general: Slack's answer.
async fn post(world: &World, blocks: Value) -> Value {
    let body = json!({ "channel": world.general.id, "text": "Deploy?", "blocks": blocks });
    call(&world.fake, "chat.postMessage", &body).await
}

/// Opens this view (the trigger id is never looked at: the view is an
/// argument, checked first): Slack's answer.
async fn open(world: &World, view: Value) -> Value {
    let body = json!({ "trigger_id": "12345.98765.abcd2358fdea", "view": view });
    call(&world.fake, "views.open", &body).await
}

#[tokio::test]
async fn every_message_length_is_refused_as_invalid_blocks() {
    let world = world().await;
    assert_eq!(post(&world, prompt()).await["ok"], true);

    let wide = |units: usize| "x".repeat(units);
    // (what, where in the prompt, its limit, Slack's error one past it)
    let section_text = "/0/text/text";
    let button_text = "/1/elements/0/text/text";
    let button_value = "/1/elements/0/value";
    let action_id = "/1/elements/0/action_id";
    let block_id = "/0/block_id";
    let cases = [
        (
            "section text",
            section_text,
            3000,
            "must be less than 3001 characters [json-pointer:/blocks/0/text/text]",
        ),
        (
            "button text",
            button_text,
            75,
            "must be less than 76 characters [json-pointer:/blocks/1/elements/0/text/text]",
        ),
        (
            "button value",
            button_value,
            2000,
            "must be less than 2001 characters [json-pointer:/blocks/1/elements/0/value]",
        ),
        (
            "action_id",
            action_id,
            255,
            "must be less than 256 characters [json-pointer:/blocks/1/elements/0/action_id]",
        ),
        (
            "block_id",
            block_id,
            255,
            "must be less than 256 characters [json-pointer:/blocks/0/block_id]",
        ),
    ];
    for (what, pointer, limit, error) in cases {
        let fits = post(&world, with(prompt(), pointer, json!(wide(limit)))).await;
        assert_eq!(fits["ok"], true, "{what} at its limit: {fits}");
        let refused = post(&world, with(prompt(), pointer, json!(wide(limit + 1)))).await;
        assert_eq!(refused["error"], "invalid_blocks", "{what}: {refused}");
        assert!(
            refused["errors"].as_array().unwrap().contains(&json!(error)),
            "{what}: {refused}"
        );
        assert!(
            messages(&refused).contains(&format!("[ERROR] {error}")),
            "{what}: {refused}"
        );
    }

    // Lengths are UTF-16 units: 38 emoji are 76 units, one past a button's 75.
    let emoji = "😀".repeat(38);
    let refused = post(&world, with(prompt(), button_text, json!(emoji))).await;
    assert!(
        refused["errors"].as_array().unwrap().contains(&json!(
            "must be less than 76 characters [json-pointer:/blocks/1/elements/0/text/text]"
        )),
        "{refused}"
    );
    let fits = post(&world, with(prompt(), button_text, json!("😀".repeat(37)))).await;
    assert_eq!(fits["ok"], true, "{fits}");

    // The message text.
    let long = json!({ "channel": world.general.id, "text": wide(40_001) });
    assert_eq!(
        call(&world.fake, "chat.postMessage", &long).await["error"],
        "msg_too_long"
    );
    assert_eq!(
        world.fake.messages(&world.general.id).len(),
        7,
        "only the posts that fit"
    );
}

#[tokio::test]
async fn every_message_count_and_kind_is_refused_as_invalid_blocks() {
    let world = world().await;
    // Counts: blocks in a message, elements in actions and context, fields.
    let dividers = |n: usize| json!(vec![json!({ "type": "divider" }); n]);
    assert_eq!(post(&world, dividers(50)).await["ok"], true);
    let refused = post(&world, dividers(51)).await;
    assert_eq!(
        refused["errors"],
        json!(["no more than 50 items allowed [json-pointer:/blocks]"])
    );
    let buttons = |n: usize| {
        let elements: Vec<Value> = (0..n).map(|i| button("Go", &format!("a{i}"), "v")).collect();
        json!([{ "type": "actions", "elements": elements }])
    };
    assert_eq!(post(&world, buttons(25)).await["ok"], true);
    assert_eq!(
        post(&world, buttons(26)).await["errors"],
        json!(["no more than 25 items allowed [json-pointer:/blocks/0/elements]"])
    );
    let context =
        |n: usize| json!([{ "type": "context", "elements": vec![json!({ "type": "mrkdwn", "text": "x" }); n] }]);
    assert_eq!(post(&world, context(10)).await["ok"], true);
    assert_eq!(
        post(&world, context(11)).await["errors"],
        json!(["no more than 10 items allowed [json-pointer:/blocks/0/elements]"])
    );
    let fields = |n: usize| json!([{ "type": "section", "fields": vec![json!({ "type": "mrkdwn", "text": "x" }); n] }]);
    assert_eq!(post(&world, fields(10)).await["ok"], true);
    assert_eq!(
        post(&world, fields(11)).await["errors"],
        json!(["no more than 10 items allowed [json-pointer:/blocks/0/fields]"])
    );

    // Kinds: a header's text is plain_text; a block type Slack lacks.
    let header = json!([{ "type": "header", "text": { "type": "mrkdwn", "text": "Deploy" } }]);
    assert_eq!(
        post(&world, header).await["errors"],
        json!([
            "failed to match all allowed schemas [json-pointer:/blocks/0/text]",
            "must be a plain_text text object [json-pointer:/blocks/0/text/type]"
        ])
    );
    assert_eq!(
        post(&world, json!([{ "type": "carousel" }])).await["errors"],
        json!(["must be a valid block type [json-pointer:/blocks/0/type]"])
    );

    assert_eq!(
        world.fake.messages(&world.general.id).len(),
        4,
        "only the posts that fit"
    );
}

#[tokio::test]
async fn every_modal_length_is_refused_as_invalid_arguments() {
    let world = world().await;
    assert_eq!(
        open(&world, modal()).await["error"],
        "invalid_trigger_id",
        "a good view"
    );

    // The case: a placeholder of 310 characters.
    let refused = open(
        &world,
        with(modal(), "/blocks/0/element/placeholder/text", json!("x".repeat(310))),
    )
    .await;
    assert_eq!(refused["error"], "invalid_arguments");
    assert!(
        refused.get("errors").is_none(),
        "views.open carries messages only: {refused}"
    );
    assert_eq!(
        messages(&refused),
        [
            "[ERROR] failed to match all allowed schemas [json-pointer:/view/blocks/0/element/placeholder]",
            "[ERROR] must be less than 151 characters [json-pointer:/view/blocks/0/element/placeholder/text]",
        ]
    );

    let wide = |units: usize| json!("x".repeat(units));
    // 38 thumbs with a skin tone: 76 code points but 152 UTF-16 units.
    let emoji = json!("👍🏽".repeat(38));
    let cases = [
        (
            "placeholder",
            "/blocks/0/element/placeholder/text",
            wide(151),
            "must be less than 151 characters",
        ),
        (
            "placeholder in UTF-16",
            "/blocks/0/element/placeholder/text",
            emoji,
            "must be less than 151 characters",
        ),
        (
            "input label",
            "/blocks/0/label/text",
            wide(2001),
            "must be less than 2001 characters",
        ),
        ("title", "/title/text", wide(25), "must be less than 25 characters"),
        ("submit", "/submit/text", wide(25), "must be less than 25 characters"),
        ("close", "/close/text", wide(25), "must be less than 25 characters"),
        (
            "private_metadata",
            "/private_metadata",
            wide(3001),
            "must be less than 3001 characters",
        ),
        (
            "callback_id",
            "/callback_id",
            wide(256),
            "must be less than 256 characters",
        ),
        (
            "option text",
            "/blocks/1/element/options/0/text/text",
            wide(76),
            "must be less than 76 characters",
        ),
        (
            "option value",
            "/blocks/1/element/options/0/value",
            wide(151),
            "must be less than 151 characters",
        ),
        (
            "max_length",
            "/blocks/0/element/max_length",
            json!(3001),
            "must be a number from 1 to 3000",
        ),
    ];
    for (what, pointer, value, error) in cases {
        let refused = open(&world, with(modal(), pointer, value)).await;
        assert_eq!(refused["error"], "invalid_arguments", "{what}: {refused}");
        let expected = format!("[ERROR] {error} [json-pointer:/view{pointer}]");
        assert!(messages(&refused).contains(&expected), "{what}: {refused}");
    }
}

#[tokio::test]
async fn every_modal_count_is_refused_as_invalid_arguments() {
    let world = world().await;
    // Counts: blocks in a modal, checkboxes.
    let section = json!({ "type": "section", "text": { "type": "mrkdwn", "text": "x" } });
    let many = with(modal(), "/blocks", json!(vec![section; 101]));
    assert_eq!(
        messages(&open(&world, many).await),
        ["[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]"]
    );
    let options: Vec<Value> = (0..11).map(|i| option("x", &i.to_string())).collect();
    let refused = open(&world, with(modal(), "/blocks/1/element/options", json!(options))).await;
    assert_eq!(
        messages(&refused),
        ["[ERROR] no more than 10 items allowed [json-pointer:/view/blocks/1/element/options]"]
    );

    // What the table cannot say: inputs need a submit button.
    let mut no_submit = modal();
    no_submit.as_object_mut().unwrap().remove("submit");
    assert_eq!(
        messages(&open(&world, no_submit).await),
        ["[ERROR] must provide submit when the view has input blocks [json-pointer:/view]"]
    );
    assert!(world.fake.views().is_empty());
}

#[tokio::test]
async fn every_refusal_by_the_spec_is_recorded_as_a_violation_and_nothing_else_is() {
    let fake = FakeSlack::start().await;
    // Refused for the state's reasons (no such channel): no violation.
    let answer = call(
        &fake,
        "chat.postMessage",
        &json!({ "channel": "C0NOSUCH", "text": "hi" }),
    )
    .await;
    assert_eq!(answer["ok"], json!(false), "{answer}");
    assert_eq!(fake.violations(), Vec::<String>::new());
    // Refused by the spec: each recorded.
    call(&fake, "conversations.open", &json!({ "users": ["U1"] })).await;
    call(&fake, "chat.fly", &json!({})).await;
    let violations = fake.violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[0].starts_with("conversations.open") && violations[0].contains("invalid_arguments"),
        "{violations:?}"
    );
    assert!(violations[1].contains("unknown_method"), "{violations:?}");
}

/// A reminder as askgate posts one: a thread reply under the prompt that
/// mentions one person, read back with `replies_to`. chat.postMessage's
/// `thread_ts` is "another message's `ts` … Avoid using a reply's `ts`
/// value; use its parent instead": a reply's `ts`, or one that names no
/// message of the conversation, is `invalid_thread_ts` and a violation.
#[tokio::test]
async fn a_thread_reply_names_its_parent_and_is_read_back() {
    let world = world().await;
    let general = world.general.id.clone();
    let prompt = world.post(&general, "Ship it?", None).await;
    let reminder = |thread_ts: &str| {
        json!({
            "channel": general,
            "text": format!("<@{}> Still waiting &lt;!channel&gt;", world.alice.id),
            "thread_ts": thread_ts,
            "unfurl_links": false,
        })
    };
    let answer = call(&world.fake, "chat.postMessage", &reminder(&prompt)).await;
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let reply_ts = answer["ts"].as_str().unwrap().to_owned();
    let replies = world.fake.replies_to(&general, &prompt);
    let [reply] = replies.as_slice() else {
        panic!("one reply in the prompt's thread: {replies:?}");
    };
    assert_eq!(reply.ts, reply_ts);
    assert_eq!(reply.pings, [Ping::User(world.alice.id.clone())], "{reply:?}");
    assert!(
        world.fake.replies_to(&general, &reply_ts).is_empty(),
        "a reply has no thread of its own"
    );

    for wrong in [reply_ts.as_str(), "1700000000.999999"] {
        let answer = call(&world.fake, "chat.postMessage", &reminder(wrong)).await;
        assert_eq!(answer["error"], json!("invalid_thread_ts"), "{wrong}: {answer}");
    }
    let violations = world.fake.violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations
            .iter()
            .all(|violation| violation.contains("invalid_thread_ts")),
        "{violations:?}"
    );
    assert_eq!(
        world.fake.replies_to(&general, &prompt).len(),
        1,
        "nothing refused was posted"
    );
}
