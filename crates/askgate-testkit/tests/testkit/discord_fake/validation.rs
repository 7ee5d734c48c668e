//! Every request is checked as Discord checks it: the `User-Agent` its edge
//! requires, the operation in Discord's OpenAPI document, and the body and
//! parameters by the document's schemas (with the documentation's stricter
//! limits) and by the rules the document cannot state. One refused request
//! per rule kind, sent by hand so that nothing but the rule is wrong.

use super::*;

/// A raw request to the fake: `(status, JSON body)`.
async fn send(fake: &FakeDiscord, method: &str, path: &str, body: Option<Value>, agent: Option<&str>) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new()
        .request(method, format!("{}/api/v10{path}", fake.api_url()))
        .header("Authorization", format!("Bot {TOKEN}"));
    if let Some(agent) = agent {
        request = request.header("User-Agent", agent);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The first `_errors` code at a dotted path of a `50035` answer.
fn code_at(answer: &(u16, Value), path: &str) -> String {
    assert_eq!((answer.0, &answer.1["code"]), (400, &json!(50035)), "{}", answer.1);
    let mut node = &answer.1["errors"];
    for key in path.split('.').filter(|key| !key.is_empty()) {
        node = &node[key];
    }
    node["_errors"][0]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error at {path:?}: {}", answer.1))
        .to_owned()
}

fn button(id: &str, label: &str) -> Value {
    json!({ "type": 2, "style": 1, "label": label, "custom_id": id })
}

fn row(components: &[Value]) -> Value {
    json!({ "type": 1, "components": components })
}

fn text_input(id: &str) -> Value {
    json!({ "type": 4, "custom_id": id, "style": 2, "label": "Why?" })
}

fn modal(data: &Value) -> Value {
    json!({ "type": 9, "data": data })
}

#[tokio::test]
async fn a_request_without_discords_user_agent_is_blocked_at_the_edge() {
    let fake = FakeDiscord::start().await;
    let blocked = json!({ "message": "internal network error", "code": 40333 });
    for agent in [
        None,
        Some("reqwest/0.12"),
        Some("DiscordBot"),
        Some("DiscordBot (, 0.1.0)"),
    ] {
        assert_eq!(
            send(&fake, "GET", "/users/@me", None, agent).await,
            (403, blocked.clone()),
            "{agent:?}"
        );
    }
    // The routes that take no bot token are HTTP requests too.
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:0").await;
    let callback = format!("/interactions/{}/{}/callback", click.id, click.token);
    let answer = send(&fake, "POST", &callback, Some(json!({ "type": 6 })), None).await;
    assert_eq!(answer, (403, blocked.clone()));
    let follow_up = format!("/webhooks/{APPLICATION_ID}/{}", click.token);
    let answer = send(&fake, "POST", &follow_up, Some(json!({ "content": "hi" })), None).await;
    assert_eq!(answer, (403, blocked));
    assert!(
        fake.calls().iter().all(|call| call.route != "GET /users/@me"),
        "a blocked request never reaches Discord"
    );
    assert_eq!(send(&fake, "GET", "/users/@me", None, Some(USER_AGENT)).await.0, 200);
    assert_eq!(
        send(&fake, "POST", &callback, Some(json!({ "type": 6 })), Some(USER_AGENT))
            .await
            .0,
        204
    );
}

#[tokio::test]
async fn an_operation_the_document_lacks_is_not_found() {
    let fake = FakeDiscord::start().await;
    fake.add_channel(&general());
    let ua = Some(USER_AGENT);
    let not_found = (404, json!({ "message": "404: Not Found", "code": 0 }));
    assert_eq!(send(&fake, "GET", "/channels/1/nothing", None, ua).await, not_found);
    assert_eq!(send(&fake, "POST", "/messages", Some(json!({})), ua).await, not_found);
    let wrong_method = send(
        &fake,
        "PUT",
        &format!("/channels/{GENERAL}/messages"),
        Some(json!({})),
        ua,
    )
    .await;
    assert_eq!(
        wrong_method,
        (405, json!({ "message": "405: Method Not Allowed", "code": 0 }))
    );
    // A path parameter is typed by the document: a snowflake.
    let answer = send(&fake, "GET", "/channels/general/messages/1", None, ua).await;
    assert_eq!(code_at(&answer, "channel_id"), "NUMBER_TYPE_COERCE");
    assert_eq!(
        answer.1["errors"]["channel_id"]["_errors"][0]["message"],
        "Value \"general\" is not snowflake."
    );
}

#[tokio::test]
async fn a_message_body_is_checked_against_the_document() {
    let fake = FakeDiscord::start().await;
    fake.add_channel(&general());
    let ua = Some(USER_AGENT);
    let path = format!("/channels/{GENERAL}/messages");
    let post = |body: Value| send(&fake, "POST", &path, Some(body), ua);

    // Lengths, in code points: content (the documentation's 2000, where the
    // document says 4000), a button's label, a custom id, a nonce.
    assert_eq!(post(json!({ "content": "👍".repeat(2000) })).await.0, 200);
    let answer = post(json!({ "content": "👍".repeat(2001) })).await;
    assert_eq!(code_at(&answer, "content"), "BASE_TYPE_MAX_LENGTH");
    assert_eq!(
        answer.1["errors"]["content"]["_errors"][0]["message"],
        "Must be 2000 or fewer in length."
    );
    let answer = post(json!({ "components": [row(&[button("a", &"é".repeat(81))])] })).await;
    assert_eq!(
        code_at(&answer, "components.0.components.0.label"),
        "BASE_TYPE_MAX_LENGTH"
    );
    let answer = post(json!({ "components": [row(&[button(&"c".repeat(101), "A")])] })).await;
    assert_eq!(
        code_at(&answer, "components.0.components.0.custom_id"),
        "BASE_TYPE_MAX_LENGTH"
    );
    let answer = post(json!({ "content": "x", "nonce": "n".repeat(26) })).await;
    assert_eq!(code_at(&answer, "nonce"), "BASE_TYPE_MAX_LENGTH");
    // Counts: five buttons a row, five rows (legacy components), 100 ids.
    let six: Vec<Value> = (0..6).map(|i| button(&format!("b{i}"), "A")).collect();
    let answer = post(json!({ "components": [row(&six)] })).await;
    assert_eq!(code_at(&answer, "components.0.components"), "BASE_TYPE_MAX_LENGTH");
    let rows: Vec<Value> = (0..6).map(|i| row(&[button(&format!("r{i}"), "A")])).collect();
    let answer = post(json!({ "components": rows })).await;
    assert_eq!(code_at(&answer, "components"), "BASE_TYPE_MAX_LENGTH");
    let ids: Vec<String> = (0..101).map(|i| (1000 + i).to_string()).collect();
    let answer = post(json!({ "content": "x", "allowed_mentions": { "users": ids } })).await;
    assert_eq!(code_at(&answer, "allowed_mentions.users"), "BASE_TYPE_MAX_LENGTH");
    // Required, types, choices and fields the document does not name.
    let answer = post(json!({ "components": [{ "type": 1 }] })).await;
    assert_eq!(code_at(&answer, "components.0.components"), "BASE_TYPE_REQUIRED");
    let answer = post(json!({ "content": 42 })).await;
    assert_eq!(code_at(&answer, "content"), "BASE_TYPE_STRING");
    let answer =
        post(json!({ "components": [row(&[json!({ "type": 2, "style": 9, "label": "A", "custom_id": "a" })])] })).await;
    assert_eq!(code_at(&answer, "components.0.components.0.style"), "BASE_TYPE_CHOICES");
    let answer = post(json!({ "components": [{ "type": 99 }] })).await;
    assert_eq!(code_at(&answer, "components.0.type"), "UNION_TYPE_CHOICES");
    let answer = post(json!({ "content": "x", "allowed_mentions": { "parse": ["nobody"] } })).await;
    assert_eq!(code_at(&answer, "allowed_mentions.parse.0"), "BASE_TYPE_CHOICES");
    let answer = post(json!({ "content": "x", "embed": { "title": "gone since v10" } })).await;
    assert_eq!(code_at(&answer, "embed"), "UNKNOWN_FIELD");
    let answer = send(
        &fake,
        "POST",
        &format!("{path}?silent=true"),
        Some(json!({ "content": "x" })),
        ua,
    )
    .await;
    assert_eq!(code_at(&answer, "silent"), "UNKNOWN_FIELD");
    // Every error of a body at once, as Discord reports them.
    let answer = post(json!({ "content": 7, "tts": "yes" })).await;
    assert_eq!(
        (code_at(&answer, "content"), code_at(&answer, "tts")),
        ("BASE_TYPE_STRING".to_owned(), "BASE_TYPE_BOOLEAN".to_owned())
    );

    // An edit is checked by its own operation's schema.
    let sent = post(json!({ "content": "hi" })).await.1;
    let edit = format!("{path}/{}", sent["id"].as_str().unwrap());
    let answer = send(&fake, "PATCH", &edit, Some(json!({ "content": "x".repeat(2001) })), ua).await;
    assert_eq!(code_at(&answer, "content"), "BASE_TYPE_MAX_LENGTH");
    let answer = send(&fake, "PATCH", &edit, Some(json!({ "nonce": "n" })), ua).await;
    assert_eq!(code_at(&answer, "nonce"), "UNKNOWN_FIELD");
    assert_eq!(fake.messages(GENERAL).len(), 2, "only the valid messages were made");
}

#[tokio::test]
async fn what_the_document_cannot_say_is_refused_by_hand() {
    let fake = FakeDiscord::start().await;
    fake.add_channel(&general());
    let path = format!("/channels/{GENERAL}/messages");
    let post = |body: Value| send(&fake, "POST", &path, Some(body), Some(USER_AGENT));

    let answer = post(json!({ "components": [row(&[button("a", "A"), button("a", "B")])] })).await;
    assert_eq!(
        code_at(&answer, "components.0.components.1.custom_id"),
        "COMPONENT_CUSTOM_ID_DUPLICATED"
    );
    let select = json!({ "type": 3, "custom_id": "s", "options": [{ "label": "A", "value": "a" }] });
    let answer = post(json!({ "components": [row(&[select, button("b", "B")])] })).await;
    assert_eq!(
        code_at(&answer, "components.0.components"),
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
    );
    let link = json!({ "type": 2, "style": 5, "label": "Docs", "custom_id": "l" });
    let answer = post(json!({ "components": [row(&[link])] })).await;
    assert_eq!(code_at(&answer, "components.0.components.0.url"), "BASE_TYPE_REQUIRED");
    assert_eq!(
        code_at(&answer, "components.0.components.0.custom_id"),
        "BUTTON_COMPONENT_INVALID_FIELD"
    );
    let answer = post(json!({ "content": "x", "allowed_mentions": { "parse": ["users"], "users": ["1"] } })).await;
    assert_eq!(
        code_at(&answer, "allowed_mentions"),
        "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE"
    );
    let answer = post(json!({ "components": [{ "type": 10, "content": "layout needs IS_COMPONENTS_V2" }] })).await;
    assert_eq!(code_at(&answer, "components.0.type"), "UNION_TYPE_CHOICES");
    let v2 = json!({ "flags": 1 << 15, "components": [{ "type": 10, "content": "a text display" }] });
    assert_eq!(post(v2).await.0, 200);
}

#[tokio::test]
async fn interaction_responses_and_follow_ups_are_checked_against_the_document() {
    let fake = FakeDiscord::start().await;
    let ua = Some(USER_AGENT);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:0").await;
    let callback = format!("/interactions/{}/{}/callback", click.id, click.token);
    let respond = |body: Value| send(&fake, "POST", &callback, Some(body), ua);

    let answer = respond(json!({ "data": { "content": "no type" } })).await;
    assert_eq!(code_at(&answer, "type"), "BASE_TYPE_REQUIRED");
    let answer = respond(json!({ "type": 4, "data": { "content": "x".repeat(2001) } })).await;
    assert_eq!(code_at(&answer, "data.content"), "BASE_TYPE_MAX_LENGTH");
    let rows = |n: usize| (0..n).map(|i| row(&[text_input(&format!("f{i}"))])).collect::<Vec<_>>();
    let long = |n: usize| "m".repeat(n);
    for (data, at, code) in [
        (
            json!({ "custom_id": "m", "title": long(46), "components": rows(1) }),
            "data.title",
            "BASE_TYPE_MAX_LENGTH",
        ),
        (
            json!({ "custom_id": long(101), "title": "t", "components": rows(1) }),
            "data.custom_id",
            "BASE_TYPE_MAX_LENGTH",
        ),
        // The documentation's five, where the document says 40.
        (
            json!({ "custom_id": "m", "title": "t", "components": rows(6) }),
            "data.components",
            "BASE_TYPE_MAX_LENGTH",
        ),
        (
            json!({ "custom_id": "m", "title": "t", "components": [] }),
            "data.components",
            "BASE_TYPE_MIN_LENGTH",
        ),
        (
            json!({ "custom_id": "m", "components": rows(1) }),
            "data.title",
            "BASE_TYPE_REQUIRED",
        ),
    ] {
        assert_eq!(code_at(&respond(modal(&data)).await, at), code, "{at}");
    }
    let mut input = text_input("why");
    input["label"] = json!(long(46));
    input["placeholder"] = json!(long(101));
    input["max_length"] = json!(4001);
    let answer = respond(modal(
        &json!({ "custom_id": "m", "title": "t", "components": [row(&[input])] }),
    ))
    .await;
    let at = "data.components.0.components.0";
    assert_eq!(code_at(&answer, &format!("{at}.label")), "BASE_TYPE_MAX_LENGTH");
    assert_eq!(code_at(&answer, &format!("{at}.placeholder")), "BASE_TYPE_MAX_LENGTH");
    assert_eq!(code_at(&answer, &format!("{at}.max_length")), "NUMBER_TYPE_MAX");
    let label = json!({ "type": 18, "label": long(46), "description": long(101), "component": text_input("why") });
    let answer = respond(modal(&json!({ "custom_id": "m", "title": "t", "components": [label] }))).await;
    assert_eq!(code_at(&answer, "data.components.0.label"), "BASE_TYPE_MAX_LENGTH");
    assert_eq!(
        code_at(&answer, "data.components.0.description"),
        "BASE_TYPE_MAX_LENGTH"
    );
    let two = row(&[text_input("a"), text_input("b")]);
    let answer = respond(modal(&json!({ "custom_id": "m", "title": "t", "components": [two] }))).await;
    assert_eq!(
        code_at(&answer, "data.components.0.components"),
        "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
    );
    assert!(
        fake.interaction(click.id).unwrap().replies.is_empty(),
        "nothing refused was taken"
    );
}

#[tokio::test]
async fn follow_ups_and_edits_through_the_interactions_webhook_are_checked_too() {
    let fake = FakeDiscord::start().await;
    let ua = Some(USER_AGENT);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:1").await;
    let callback = format!("/interactions/{}/{}/callback", click.id, click.token);
    assert_eq!(
        send(&fake, "POST", &callback, Some(json!({ "type": 6 })), ua).await.0,
        204
    );
    let follow_up = format!("/webhooks/{APPLICATION_ID}/{}", click.token);
    let answer = send(
        &fake,
        "POST",
        &follow_up,
        Some(json!({ "content": "x".repeat(2001), "flags": 64 })),
        ua,
    )
    .await;
    assert_eq!(code_at(&answer, "content"), "BASE_TYPE_MAX_LENGTH");
    let original = format!("{follow_up}/messages/@original");
    let answer = send(
        &fake,
        "PATCH",
        &original,
        Some(json!({ "components": [row(&[button("a", "")])] })),
        ua,
    )
    .await;
    assert_eq!(
        code_at(&answer, "components.0.components.0.label"),
        "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED"
    );
}

#[tokio::test]
async fn the_answer_to_an_http_interaction_is_checked_as_a_callback_is() {
    async fn too_long_a_title() -> axum::Json<Value> {
        axum::Json(modal(
            &json!({ "custom_id": "m", "title": "t".repeat(46), "components": [row(&[text_input("a")])] }),
        ))
    }
    let fake = FakeDiscord::start().await;
    let app = axum::Router::new().route("/interactions", axum::routing::post(too_long_a_title));
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}/interactions", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    fake.deliver_interactions_to(&url);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:0").await;
    let Delivery::Http(answer) = &click.delivery else {
        panic!("by HTTP")
    };
    let error = answer.error.clone().unwrap_or_default();
    assert!(
        error.contains("50035") && error.contains("BASE_TYPE_MAX_LENGTH"),
        "{error}"
    );
    assert!(click.replies.is_empty() && click.acknowledged_via.is_none());
    server.abort();
}

#[tokio::test]
async fn every_refusal_by_the_spec_is_recorded_as_a_violation_and_nothing_else_is() {
    let fake = FakeDiscord::start().await;
    fake.add_channel(&general());
    let ua = Some(USER_AGENT);
    let path = format!("/channels/{GENERAL}/messages");
    // Accepted, and refused for the state's reasons (no such channel): no violation.
    assert_eq!(
        send(&fake, "POST", &path, Some(json!({ "content": "hi" })), ua).await.0,
        200
    );
    assert_eq!(
        send(
            &fake,
            "POST",
            "/channels/42/messages",
            Some(json!({ "content": "hi" })),
            ua
        )
        .await
        .0,
        404
    );
    assert_eq!(fake.violations(), Vec::<String>::new());
    // Refused by the spec: each recorded.
    send(&fake, "POST", &path, Some(json!({ "content": "x".repeat(2001) })), ua).await;
    send(&fake, "GET", "/users/@me", None, None).await;
    let violations = fake.violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[0].contains("50035") && violations[0].contains("content"),
        "{violations:?}"
    );
    assert!(violations[1].contains("User-Agent"), "{violations:?}");
}

/// A reminder as askgate sends it, and the ways Discord refuses one: a
/// reply (`message_reference`) that may go out without its message, with
/// `allowed_mentions` letting exactly one person be notified. Read back
/// with `replies_to`.
#[tokio::test]
async fn a_reply_that_mentions_one_person_is_checked_and_read_back() {
    let fake = FakeDiscord::start().await;
    fake.add_channel(&general());
    let ua = Some(USER_AGENT);
    let path = format!("/channels/{GENERAL}/messages");
    let post = |body: Value| send(&fake, "POST", &path, Some(body), ua);
    let prompt = post(json!({ "content": "Ship it?" })).await.1;
    let prompt_id = prompt["id"].as_str().unwrap().to_owned();
    let alice_id = alice().id;
    let alice = alice_id.to_string();
    let reminder = |reference: Value, users: Value| {
        json!({
            "content": format!("<@{alice}> <@4242> @everyone Still waiting"),
            "allowed_mentions": { "parse": [], "users": users, "replied_user": false },
            "message_reference": reference,
        })
    };

    let (status, sent) = post(reminder(
        json!({ "message_id": prompt_id, "fail_if_not_exists": false }),
        json!([alice]),
    ))
    .await;
    assert_eq!(status, 200, "{sent}");
    let replies = fake.replies_to(GENERAL, prompt_id.parse().unwrap());
    let [reply] = replies.as_slice() else {
        panic!("one reply to the prompt: {replies:?}");
    };
    assert_eq!(reply.pings, [Ping::User(alice_id)], "only the allowed user: {reply:?}");
    assert_eq!(reply.json["mention_everyone"], false);

    // A message that is gone: sent without the reference, or refused.
    let (status, alone) = post(reminder(
        json!({ "message_id": "12345", "fail_if_not_exists": false }),
        json!([]),
    ))
    .await;
    assert_eq!(status, 200, "{alone}");
    assert!(alone.get("message_reference").is_none(), "{alone}");
    let answer = post(reminder(json!({ "message_id": "12345" }), json!([]))).await;
    assert_eq!(code_at(&answer, "message_reference"), "REPLIES_UNKNOWN_MESSAGE");
    // The document's rules on both objects.
    let answer = post(reminder(json!({ "fail_if_not_exists": false }), json!([]))).await;
    assert_eq!(code_at(&answer, "message_reference.message_id"), "BASE_TYPE_REQUIRED");
    let answer = post(reminder(json!({ "message_id": "first" }), json!([]))).await;
    assert!(!code_at(&answer, "message_reference.message_id").is_empty());
    let answer = post(reminder(
        json!({ "message_id": prompt_id, "mention_author": false }),
        json!([]),
    ))
    .await;
    assert_eq!(code_at(&answer, "message_reference.mention_author"), "UNKNOWN_FIELD");
    let answer = post(reminder(json!({ "message_id": prompt_id }), json!([alice, alice]))).await;
    assert_eq!(code_at(&answer, "allowed_mentions.users"), "LIST_ITEM_VALUE_DUPLICATE");
    let mut both = reminder(json!({ "message_id": prompt_id }), json!([alice]));
    both["allowed_mentions"]["parse"] = json!(["users"]);
    let answer = post(both).await;
    assert_eq!(
        code_at(&answer, "allowed_mentions"),
        "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE"
    );
    assert_eq!(
        fake.replies_to(GENERAL, prompt_id.parse().unwrap()).len(),
        1,
        "nothing refused was made"
    );
}
