//! The Web API: slack-morphism's calls reach the fake and decode its
//! answers; tokens, conversations, content and Block Kit are checked as
//! Slack checks them; failures and rate limits come as Slack sends them;
//! mentions and links are read as Slack reads them.

use std::time::{Duration, Instant};

use askgate_testkit::slack::{
    BOT_ID, BOT_TOKEN, BOT_USER_ID, DeliveryKind, Failure, FakeSlack, Link, Ping, TEAM_ID, TokenKind,
};
use serde_json::{Value, json};
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

use super::{World, api_error, app_token, blocks, bot_token, button, question, world};

/// A raw POST, for what slack-morphism does not show (status, headers, bodies).
async fn raw(url: &str, token: Option<&str>, body: &Value) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().to_owned());
    (status, retry_after, response.json().await.unwrap())
}

#[tokio::test]
async fn slack_morphism_joins_its_method_names_onto_the_api_url() {
    let World { fake, client, .. } = world().await;
    // slack-morphism's own base has no trailing slash: `https://slack.com/api`.
    assert!(!SlackClientHttpApiUri::SLACK_API_URI_STR.ends_with('/'));
    assert!(fake.api_url().ends_with("/api") && fake.api_url().starts_with("http://127.0.0.1:"));

    let me = client.open_session(&bot_token()).auth_test().await.unwrap();
    assert_eq!(me.user_id.0, BOT_USER_ID);
    assert_eq!(me.team_id.0, TEAM_ID);
    assert_eq!(me.bot_id.unwrap().0, BOT_ID);
    assert_eq!(me.url.0.as_str(), "https://askgate-test.slack.com/");

    let calls = fake.calls_to("auth.test");
    assert_eq!(calls.len(), 1, "the call reached the fake by its method name");
    assert_eq!(calls[0].token, TokenKind::Bot);
}

#[tokio::test]
async fn tokens_are_refused_as_slack_refuses_them() {
    let World { fake, client, .. } = world().await;
    let stranger = SlackApiToken::new("xoxb-not-issued".to_owned().into());
    assert_eq!(
        api_error(client.open_session(&stranger).auth_test().await).code,
        "invalid_auth"
    );
    assert_eq!(
        api_error(client.open_session(&app_token()).auth_test().await).code,
        "not_allowed_token_type"
    );
    let open = SlackApiAppsConnectionOpenRequest::new();
    assert_eq!(
        api_error(client.open_session(&bot_token()).apps_connections_open(&open).await).code,
        "not_allowed_token_type"
    );
    let url = client
        .open_session(&app_token())
        .apps_connections_open(&open)
        .await
        .unwrap()
        .url;
    let prefix = format!("{}/link/?ticket=", fake.socket_url());
    assert!(url.0.as_str().starts_with(&prefix), "{url:?}");

    let (status, _, body) = raw(&format!("{}/auth.test", fake.api_url()), None, &json!({})).await;
    assert_eq!((status, body), (200, json!({ "ok": false, "error": "not_authed" })));
    let (status, _, body) = raw(&format!("{}/no.such", fake.api_url()), Some(BOT_TOKEN), &json!({})).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "ok": false, "error": "unknown_method", "req_method": "no.such" })
        )
    );

    fake.deactivate();
    assert_eq!(
        api_error(client.open_session(&bot_token()).auth_test().await).code,
        "account_inactive"
    );
}

#[tokio::test]
async fn a_post_answers_its_message_and_the_call_is_recorded_as_sent() {
    let world = world().await;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let request = SlackApiChatPostMessageRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new()
            .with_text("Deploy?".to_owned())
            .with_blocks(blocks(question())),
    )
    .with_unfurl_links(false);
    let posted = session.chat_post_message(&request).await.unwrap();
    assert_eq!(posted.channel.0, world.general.id);
    assert_eq!(posted.message.sender.bot_id.unwrap().0, BOT_ID);
    assert_eq!(posted.message.content.text.as_deref(), Some("Deploy?"));
    let stored_blocks = serde_json::to_value(posted.message.content.blocks.unwrap()).unwrap();
    assert_eq!(stored_blocks[1]["block_id"], "answers");
    assert!(
        stored_blocks[0]["block_id"].is_string(),
        "Slack gives a block without one an id"
    );

    let call = world.fake.calls_to("chat.postMessage").pop().unwrap();
    assert_eq!(
        call.body,
        serde_json::to_value(&request).unwrap(),
        "the arguments as sent"
    );
    assert_eq!(call.body["unfurl_links"], false);

    let second = world.post(&world.general.id, "again", None).await;
    assert!(second > posted.ts.0, "ts values grow: {} then {second}", posted.ts.0);
    let (seconds, micros) = second.split_once('.').unwrap();
    assert_eq!((seconds.len(), micros.len()), (10, 6));

    let seen = world.fake.messages(&world.general.id);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].ts, posted.ts.0);
    assert_eq!(seen[0].unfurl_links, Some(false));
    assert_eq!(seen[0].buttons()[0]["value"], "q1:yes");
}

#[tokio::test]
async fn a_post_to_a_person_goes_to_their_dm() {
    let world = world().await;
    let token = bot_token();
    let session = world.client.open_session(&token);
    // Slack documents `users` as a comma-separated string; slack-morphism's
    // request sends a JSON array, which Slack's arguments check refuses.
    let as_array = SlackApiConversationsOpenRequest::new().with_users(vec![world.alice.id.clone().into()]);
    let refused = api_error(session.conversations_open(&as_array).await);
    assert_eq!(refused.code, "invalid_arguments");
    assert!(
        refused
            .http_response_body
            .unwrap()
            .contains("[ERROR] must be a string [json-pointer:/users]")
    );
    let open = |users: &str| {
        let url = format!("{}/conversations.open", world.fake.api_url());
        let body = json!({ "users": users });
        async move { raw(&url, Some(BOT_TOKEN), &body).await.2 }
    };
    let dm = open(&world.alice.id).await["channel"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(dm.starts_with('D'), "{dm}");
    assert_eq!(open(&world.alice.id).await["channel"]["id"], dm.as_str(), "the same DM");
    assert_eq!(open("U0NOBODY1").await["error"], "user_not_found");

    let request = SlackApiChatPostMessageRequest::new(
        world.alice.id.clone().into(),
        SlackMessageContent::new().with_text("hi".to_owned()),
    );
    let posted = session.chat_post_message(&request).await.unwrap();
    assert_eq!(posted.channel.0, dm, "Slack answers the DM it posted into");
    assert_eq!(world.fake.messages(&dm)[0].text, "hi");
    assert_eq!(world.fake.dm(&world.alice), dm);
}

#[tokio::test]
async fn posts_where_the_bot_may_not_are_refused() {
    let world = world().await;
    let fake = &world.fake;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let post = |channel: &str, text: &str| {
        SlackApiChatPostMessageRequest::new(
            channel.to_owned().into(),
            SlackMessageContent::new().with_text(text.to_owned()),
        )
    };
    let outside = fake.channel("outside", &[&world.alice]);
    fake.remove_bot(&outside.id);
    let secret = fake.private_channel("secret", &[&world.alice]);
    fake.remove_bot(&secret.id);
    let old = fake.channel("old", &[]);
    fake.archive(&old.id);

    let code = |result: ClientResult<SlackApiChatPostMessageResponse>| api_error(result).code;
    assert_eq!(
        code(session.chat_post_message(&post(&outside.id, "x")).await),
        "not_in_channel"
    );
    assert_eq!(
        code(session.chat_post_message(&post(&secret.id, "x")).await),
        "channel_not_found"
    );
    assert_eq!(
        code(session.chat_post_message(&post("C0NOWHERE", "x")).await),
        "channel_not_found"
    );
    assert_eq!(
        code(session.chat_post_message(&post(&old.id, "x")).await),
        "is_archived"
    );
    assert_eq!(
        code(session.chat_post_message(&post(&world.general.id, "  ")).await),
        "no_text"
    );
    let long = "x".repeat(40_001);
    assert_eq!(
        code(session.chat_post_message(&post(&world.general.id, &long)).await),
        "msg_too_long"
    );
    assert!(fake.messages(&outside.id).is_empty() && fake.messages(&world.general.id).is_empty());

    assert_eq!(world.post("#general", "by name", None).await.len(), 17);
}

#[tokio::test]
async fn invalid_blocks_are_refused_with_slack_s_json_pointers() {
    let world = world().await;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let long_label = json!([
        { "type": "section", "text": { "type": "mrkdwn", "text": "Pick" } },
        { "type": "actions", "elements": [button("a", &"x".repeat(76), "v")] }
    ]);
    let request = SlackApiChatPostMessageRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new()
            .with_text("Pick".to_owned())
            .with_blocks(blocks(long_label)),
    );
    let error = api_error(session.chat_post_message(&request).await);
    assert_eq!(error.code, "invalid_blocks");
    let errors = error.errors.unwrap();
    assert!(
        errors.contains(&"must be less than 76 characters [json-pointer:/blocks/1/elements/0/text/text]".to_owned()),
        "{errors:?}"
    );
    assert!(
        error
            .http_response_body
            .unwrap()
            .contains("[ERROR] must be less than 76 characters")
    );

    let mut styled = button("a", "ok", "v");
    styled["style"] = json!("blue");
    let many: Vec<Value> = (0..26).map(|i| button(&format!("b{i}"), "b", "v")).collect();
    let (_, _, body) = raw(
        &format!("{}/chat.postMessage", world.fake.api_url()),
        Some(BOT_TOKEN),
        &json!({ "channel": world.general.id, "text": "x", "blocks": [
            { "type": "actions", "elements": [styled, button("a", "dup", "v")] },
            { "type": "actions", "elements": many },
            { "type": "header", "text": { "type": "mrkdwn", "text": "no" } },
            { "type": "section", "text": { "type": "mrkdwn", "text": "y".repeat(3001) } },
        ] }),
    )
    .await;
    let errors: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for expected in [
        "must be one of primary, danger [json-pointer:/blocks/0/elements/0/style]",
        "duplicate action_id [json-pointer:/blocks/0/elements/1/action_id]",
        "no more than 25 items allowed [json-pointer:/blocks/1/elements]",
        "must be a plain_text text object [json-pointer:/blocks/2/text/type]",
        "must be less than 3001 characters [json-pointer:/blocks/3/text/text]",
    ] {
        assert!(errors.contains(&expected), "{expected} not in {errors:?}");
    }
    assert!(world.fake.messages(&world.general.id).is_empty());
}

#[tokio::test]
async fn the_bot_edits_its_own_messages_only() {
    let world = world().await;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let update = SlackApiChatUpdateRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new().with_text("Approved by <@U0ALICE01>".to_owned()),
        ts.clone().into(),
    );
    let updated = session.chat_update(&update).await.unwrap();
    assert_eq!(updated.ts.0, ts);
    assert_eq!(
        updated.message.content.text.as_deref(),
        Some("Approved by <@U0ALICE01>")
    );
    assert!(updated.message.edited.is_some());
    let seen = world
        .fake
        .wait_for_edit(&world.general.id, &ts, super::WAIT, |seen| {
            seen.text.starts_with("Approved")
        })
        .await
        .unwrap();
    assert_eq!(seen.pings, [Ping::User("U0ALICE01".into())], "an edit's mentions count");
    assert!(!seen.buttons().is_empty(), "blocks left out are kept");

    let remove = SlackApiChatUpdateRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new()
            .with_text("done".to_owned())
            .with_blocks(vec![]),
        ts.clone().into(),
    );
    session.chat_update(&remove).await.unwrap();
    assert!(
        world
            .fake
            .message_at(&world.general.id, &ts)
            .unwrap()
            .buttons()
            .is_empty()
    );

    let theirs = world.fake.message(&world.alice, &world.general.id, "mine", None);
    let not_ours = SlackApiChatUpdateRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new().with_text("x".to_owned()),
        theirs.into(),
    );
    assert_eq!(
        api_error(session.chat_update(&not_ours).await).code,
        "cant_update_message"
    );
    let missing = SlackApiChatUpdateRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new().with_text("x".to_owned()),
        "1.000001".to_owned().into(),
    );
    assert_eq!(api_error(session.chat_update(&missing).await).code, "message_not_found");
}

#[tokio::test]
async fn an_ephemeral_message_is_seen_by_its_person_only() {
    let world = world().await;
    let fake = &world.fake;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let stranger = fake.add_user("carol");
    let events_before = fake.deliveries().len();
    let request = SlackApiChatPostEphemeralRequest::new(
        world.general.id.clone().into(),
        world.alice.id.clone().into(),
        SlackMessageContent::new().with_text("Only you can see this".to_owned()),
    );
    session.chat_post_ephemeral(&request).await.unwrap();

    let (status, _, body) = raw(
        &format!("{}/chat.postEphemeral", fake.api_url()),
        Some(BOT_TOKEN),
        &json!({ "channel": world.general.id, "user": world.bob.id, "text": "psst" }),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body["message_ts"].as_str().unwrap().contains('.'), "{body}");

    let for_alice = fake.ephemerals_for(&world.alice.id);
    assert_eq!(for_alice.len(), 1);
    assert_eq!(for_alice[0].text, "Only you can see this");
    assert_eq!(for_alice[0].ephemeral_for.as_deref(), Some(world.alice.id.as_str()));
    assert_eq!(fake.ephemerals_for(&world.bob.id)[0].text, "psst");
    assert!(fake.ephemerals_for(&stranger.id).is_empty());
    assert_eq!(
        fake.deliveries().len(),
        events_before,
        "ephemeral messages send no events"
    );

    let outsider = SlackApiChatPostEphemeralRequest::new(
        world.general.id.clone().into(),
        stranger.id.clone().into(),
        SlackMessageContent::new().with_text("x".to_owned()),
    );
    assert_eq!(
        api_error(session.chat_post_ephemeral(&outsider).await).code,
        "user_not_in_channel"
    );
}

#[tokio::test]
async fn rate_limits_carry_retry_after() {
    let world = world().await;
    let fake = &world.fake;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let request = SlackApiChatPostMessageRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new().with_text("hi".to_owned()),
    );
    fake.fail_next(
        "chat.postMessage",
        Failure::RateLimited {
            retry_after: Duration::from_secs(2),
        },
    );
    match session.chat_post_message(&request).await.unwrap_err() {
        SlackClientError::RateLimitError(error) => {
            assert_eq!(error.retry_after, Some(Duration::from_secs(2)));
            assert_eq!(error.code.as_deref(), Some("ratelimited"));
        }
        other => panic!("not a rate limit: {other:?}"),
    }
    assert!(
        fake.messages(&world.general.id).is_empty(),
        "a refused call takes no effect"
    );

    fake.limit_posting(Duration::from_secs(1), 2);
    session.chat_post_message(&request).await.unwrap();
    session.chat_post_message(&request).await.unwrap();
    let url = format!("{}/chat.postMessage", fake.api_url());
    let body = json!({ "channel": world.general.id, "text": "third" });
    let (status, retry_after, answer) = raw(&url, Some(BOT_TOKEN), &body).await;
    assert_eq!((status, retry_after.as_deref()), (429, Some("1")));
    assert_eq!(answer, json!({ "ok": false, "error": "ratelimited" }));
    let other = fake.channel("other", &[]);
    let elsewhere = json!({ "channel": other.id, "text": "fine" });
    assert_eq!(
        raw(&url, Some(BOT_TOKEN), &elsewhere).await.0,
        200,
        "another channel has its own limit"
    );
    assert_eq!(fake.messages(&world.general.id).len(), 2);
}

#[tokio::test]
async fn failures_come_on_demand() {
    let world = world().await;
    let fake = &world.fake;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let request = SlackApiChatPostMessageRequest::new(
        world.general.id.clone().into(),
        SlackMessageContent::new().with_text("hi".to_owned()),
    );
    fake.fail_next("chat.postMessage", Failure::Error("channel_not_found"));
    fake.fail_next("chat.postMessage", Failure::Status(503));
    fake.fail_next("chat.postMessage", Failure::Drop);
    fake.fail_next("chat.postMessage", Failure::Slow(Duration::from_millis(300)));
    assert_eq!(
        api_error(session.chat_post_message(&request).await).code,
        "channel_not_found"
    );
    match session.chat_post_message(&request).await.unwrap_err() {
        SlackClientError::HttpError(error) => assert_eq!(error.status_code.as_u16(), 503),
        other => panic!("not an HTTP error: {other:?}"),
    }
    assert!(
        session.chat_post_message(&request).await.is_err(),
        "a dropped connection"
    );
    assert!(fake.messages(&world.general.id).is_empty());
    let started = Instant::now();
    session.chat_post_message(&request).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(fake.messages(&world.general.id).len(), 1);
    assert_eq!(fake.calls_to("chat.postMessage").len(), 4, "every call is recorded");
}

#[tokio::test]
async fn mentions_and_links_are_read_as_slack_reads_them() {
    let world = world().await;
    let fake = &world.fake;
    let hostile = "<!channel> <@U999> <https://evil.example|click> &lt;!here&gt;";
    let ts = world.post(&world.general.id, hostile, None).await;
    let seen = fake.message_at(&world.general.id, &ts).unwrap();
    assert_eq!(seen.pings, [Ping::Channel, Ping::User("U999".into())]);
    assert_eq!(
        seen.links,
        [Link {
            url: "https://evil.example".into(),
            label: Some("click".into()),
            unfurls: true
        }]
    );

    let escaped = "&lt;!channel&gt; &lt;@U999&gt; &lt;https://evil.example|click&gt;";
    let ts = world.post(&world.general.id, escaped, None).await;
    let seen = fake.message_at(&world.general.id, &ts).unwrap();
    assert!(seen.pings.is_empty(), "{seen:?}");
    // The bare URL is linked as it reads, with no label to hide it behind.
    assert_eq!(seen.links.len(), 1);
    assert_eq!(
        (seen.links[0].url.as_str(), seen.links[0].label.as_ref()),
        ("https://evil.example", None)
    );

    let (_, _, body) = raw(
        &format!("{}/chat.postMessage", fake.api_url()),
        Some(BOT_TOKEN),
        &json!({ "channel": world.general.id, "text": "see https://example.com", "unfurl_links": false,
                 "blocks": [
                    { "type": "header", "text": { "type": "plain_text", "text": "<!everyone>" } },
                    { "type": "section", "text": { "type": "mrkdwn", "text": "<!here> <!subteam^S1>" } },
                 ] }),
    )
    .await;
    let seen = fake
        .message_at(&world.general.id, body["ts"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        seen.pings,
        [Ping::Here, Ping::Subteam("S1".into())],
        "plain_text notifies no one"
    );
    assert_eq!(seen.links.len(), 1);
    assert!(!seen.links[0].unfurls);

    let (_, _, body) = raw(
        &format!("{}/chat.postMessage", fake.api_url()),
        Some(BOT_TOKEN),
        &json!({ "channel": world.general.id, "text": "@here ask @alice", "link_names": true }),
    )
    .await;
    let seen = fake
        .message_at(&world.general.id, body["ts"].as_str().unwrap())
        .unwrap();
    assert_eq!(seen.pings, [Ping::Here, Ping::User(world.alice.id.clone())]);
}

#[tokio::test]
async fn a_form_body_is_read_as_slack_reads_it() {
    let World { fake, general, .. } = world().await;
    let form = format!(
        "token={BOT_TOKEN}&channel={}&text=a+b&blocks=%5B%7B%22type%22%3A%22divider%22%7D%5D",
        general.id
    );
    let answer: Value = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{}/chat.postMessage", fake.api_url()))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    let call = fake.calls_to("chat.postMessage").pop().unwrap();
    assert_eq!(call.token, TokenKind::Bot);
    assert_eq!(
        call.body,
        json!({ "channel": general.id, "text": "a b", "blocks": [{ "type": "divider" }] })
    );
}

#[tokio::test]
async fn the_bot_s_own_posts_come_back_as_events() {
    let world = world().await;
    let fake: &FakeSlack = &world.fake;
    let ts = world.post(&world.general.id, "hello", None).await;
    let event = fake
        .deliveries()
        .into_iter()
        .find(|delivery| delivery.kind == DeliveryKind::Event)
        .unwrap();
    assert_eq!(event.payload["event"]["bot_id"], BOT_ID);
    assert_eq!(event.payload["event"]["ts"], ts);
    assert!(event.payload["event"].get("subtype").is_none());
    let quiet = fake.channel("quiet", &[]);
    fake.remove_bot(&quiet.id);
    fake.message(&world.alice, &quiet.id, "unheard", None);
    assert_eq!(fake.deliveries().len(), 1, "no events from a channel the bot is not in");
}
