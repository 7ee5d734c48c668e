//! The fake Discord, driven by the real client: serenity's `Http` against
//! the REST routes, serenity's `Client` against the gateway, serenity's
//! `Verifier` against the signed HTTP interactions, and serenity's model
//! types against the payload samples. Where serenity has no say (headers,
//! exact close codes), a plain reqwest or WebSocket client looks.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_testkit::discord::{
    APPLICATION_ID, AckVia, BOT_ID, DISCORD_PAYLOADS, Delivery, Disconnect, DiscordChannel, DiscordUser, Failure,
    FakeDiscord, InteractionRecord, Modal, ModalField, Ping, Reply, Signature, TOKEN, discord_payload,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use serenity::all::{
    ActionRowComponent, ButtonKind, ButtonStyle, ChannelId, ChannelType, ClientBuilder, ComponentInteraction, Context,
    CreateActionRow, CreateAllowedMentions, CreateButton, CreateInputText, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, CreateMessage, CreateModal,
    EditInteractionResponse, EditMessage, EventHandler, GatewayIntents, GuildId, Http, HttpBuilder, InputTextStyle,
    Interaction, InteractionId, Message, MessageId, Ready, ResumedEvent, ShardManager,
};
use serenity::http::{ErrorResponse, HttpError, LightMethod, Request, Route};
use serenity::interactions_endpoint::Verifier;
use serenity::model::channel::Nonce;
use tokio::net::TcpListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message as WsMessage;

const WAIT: Duration = Duration::from_secs(10);
const GUILD: u64 = 700_000_000_000_000_001;
const GENERAL: u64 = 700_000_000_000_000_002;

fn alice() -> DiscordUser {
    DiscordUser::new(300_000_000_000_000_001, "alice").with_global_name("Alice")
}

fn general() -> DiscordChannel {
    DiscordChannel::guild(GENERAL, GUILD, "general")
}

/// serenity's `Http` on the fake, as askgate builds it.
fn http(fake: &FakeDiscord) -> Http {
    HttpBuilder::new(fake.token())
        .proxy(fake.api_url())
        .ratelimiter_disabled(true)
        .application_id(APPLICATION_ID.into())
        .build()
}

/// The Discord error inside a serenity error.
fn discord_error(error: serenity::Error) -> ErrorResponse {
    match error {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(response)) => response,
        other => panic!("not an error answer from Discord: {other:?}"),
    }
}

/// The status, JSON code and first error path (or else the message) of a refusal.
fn refusal<T: Debug>(result: serenity::Result<T>) -> (u16, isize, String) {
    let error = discord_error(result.unwrap_err());
    let detail = error
        .error
        .errors
        .first()
        .map_or_else(|| error.error.message.clone(), |e| e.path.clone());
    (error.status_code.as_u16(), error.error.code, detail)
}

fn id_of(object: &Value) -> u64 {
    object["id"].as_str().unwrap().parse().unwrap()
}

fn buttons(ids: &[&str]) -> CreateActionRow {
    let button = |id: &&str| {
        CreateButton::new(*id)
            .label(format!("label {id}"))
            .style(ButtonStyle::Primary)
    };
    CreateActionRow::Buttons(ids.iter().map(button).collect())
}

async fn post_question(fake: &FakeDiscord, channel: u64) -> Message {
    let builder = CreateMessage::new()
        .content("Deploy where?")
        .components(vec![buttons(&["ag:q1:0", "ag:q1:1"])]);
    ChannelId::new(channel)
        .send_message(&http(fake), builder)
        .await
        .unwrap()
}

async fn respond(http: &Http, to: &InteractionRecord, response: CreateInteractionResponse) -> serenity::Result<()> {
    let id = InteractionId::new(to.id);
    http.create_interaction_response(id, &to.token, &response, vec![]).await
}

fn ephemeral(content: &str) -> CreateInteractionResponse {
    CreateInteractionResponse::Message(CreateInteractionResponseMessage::new().content(content).ephemeral(true))
}

// ---------------------------------------------------------------------------
// REST, through serenity's Http

#[tokio::test]
async fn serenity_reads_the_bot_the_gateway_and_the_application() {
    let fake = FakeDiscord::start().await;
    assert!(fake.api_url().starts_with("http://127.0.0.1:"));
    let http = http(&fake);

    let me = http.get_current_user().await.unwrap();
    assert_eq!((me.id.get(), me.bot, me.name.as_str()), (BOT_ID, true, "askgate"));
    let gateway = http.get_gateway().await.unwrap();
    assert_eq!(gateway.url, fake.gateway_url());
    assert!(gateway.url.starts_with("ws://127.0.0.1:"));
    let bot_gateway = http.get_bot_gateway().await.unwrap();
    assert_eq!((bot_gateway.url, bot_gateway.shards), (fake.gateway_url(), 1));
    assert_eq!(bot_gateway.session_start_limit.max_concurrency, 1);
    let application = http.get_current_application_info().await.unwrap();
    assert_eq!(
        (application.id.get(), application.verify_key),
        (APPLICATION_ID, fake.public_key())
    );

    let routes: Vec<String> = fake.calls().into_iter().map(|call| call.route).collect();
    let expected = [
        "GET /users/@me",
        "GET /gateway",
        "GET /gateway/bot",
        "GET /oauth2/applications/@me",
    ];
    assert_eq!(routes, expected);
}

#[tokio::test]
async fn a_wrong_token_gets_serenitys_401() {
    let fake = FakeDiscord::start().await;
    let http = HttpBuilder::new("MTIz.wrong.token")
        .proxy(fake.api_url())
        .ratelimiter_disabled(true)
        .build();
    let refused = refusal(http.get_current_user().await);
    assert_eq!(refused, (401, 0, "401: Unauthorized".to_owned()));
    assert!(fake.calls().is_empty(), "a request with a wrong token is not the bot's");
}

#[tokio::test]
async fn a_dm_has_its_own_id_and_a_message_is_sent_once_per_enforced_nonce() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    fake.add_user(&alice());
    let open = json!({ "recipient_id": alice().id.to_string() });
    let dm = http.create_private_channel(&open).await.unwrap();
    assert_ne!(dm.id.get(), alice().id, "a DM channel's id is not the user's");
    assert_eq!((dm.kind, dm.recipient.id.get()), (ChannelType::Private, alice().id));
    assert_eq!(dm.recipient.global_name.as_deref(), Some("Alice"));
    assert_eq!(
        http.create_private_channel(&open).await.unwrap().id,
        dm.id,
        "the same DM every time"
    );
    assert_eq!(fake.dm_channel_id(alice().id), Some(dm.id.get()));

    let builder = CreateMessage::new()
        .content("Deploy where? <@42> @everyone")
        .components(vec![buttons(&["ag:q1:0", "ag:q1:1"])])
        .allowed_mentions(CreateAllowedMentions::new())
        .nonce(Nonce::String("ask-q1-1".to_owned()))
        .enforce_nonce(true);
    let first = dm.id.send_message(&http, builder.clone()).await.unwrap();
    let second = dm.id.send_message(&http, builder).await.unwrap();
    assert_eq!(
        first.id, second.id,
        "a second send with the nonce returns the first message"
    );
    assert_eq!(fake.calls_to("POST /channels/{channel_id}/messages").len(), 2);
    assert_eq!((first.author.id.get(), first.channel_id), (BOT_ID, dm.id));
    assert!(first.edited_timestamp.is_none());
    let ActionRowComponent::Button(button) = &first.components[0].components[1] else {
        panic!("a button")
    };
    assert_eq!(button.label.as_deref(), Some("label ag:q1:1"));
    let primary = ButtonKind::NonLink {
        custom_id: "ag:q1:1".to_owned(),
        style: ButtonStyle::Primary,
    };
    assert_eq!(button.data, primary);
    let id_time = first.id.created_at().unix_timestamp();
    assert!(
        id_time.abs_diff(first.timestamp.unix_timestamp()) < 5,
        "a snowflake carries its time"
    );

    let seen = fake.messages(dm.id.get());
    assert_eq!(seen.len(), 1, "one message: {seen:?}");
    let seen = &seen[0];
    assert_eq!(seen.content, "Deploy where? <@42> @everyone");
    let components: Vec<_> = seen
        .components()
        .iter()
        .map(|c| (c.label.clone(), c.custom_id.clone(), c.style))
        .collect();
    let component = |id: &str| (Some(format!("label {id}")), Some(id.to_owned()), Some(1));
    assert_eq!(components, [component("ag:q1:0"), component("ag:q1:1")]);
    assert_eq!(
        seen.allowed_mentions,
        Some(json!({ "parse": [], "users": [], "roles": [] }))
    );
    assert!(seen.pings.is_empty(), "allowed_mentions empty: nobody is pinged");
    assert!(!seen.edited);

    let without_enforce = CreateMessage::new()
        .content("again")
        .nonce(Nonce::String("ask-q1-1".to_owned()));
    let third = dm.id.send_message(&http, without_enforce).await.unwrap();
    assert_ne!(third.id, first.id, "without enforce_nonce a nonce does not deduplicate");

    let no_buttons = EditMessage::new().components(vec![]);
    let edited = dm.id.edit_message(&http, first.id, no_buttons).await.unwrap();
    assert!(edited.components.is_empty() && edited.edited_timestamp.is_some());
    assert_eq!(edited.content, first.content);
    assert!(http.get_message(dm.id, first.id).await.unwrap().components.is_empty());
    let seen = fake.message_by_id(first.id.get()).unwrap();
    assert!(seen.edited && seen.rows.is_empty());
}

#[tokio::test]
async fn allowed_mentions_decide_who_a_message_pings() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    fake.add_channel(&general());
    let channel = ChannelId::new(GENERAL);
    let message = |mentions: Option<CreateAllowedMentions>| {
        let builder = CreateMessage::new().content("@here <@42> <@&7> please");
        let builder = match mentions {
            Some(mentions) => builder.allowed_mentions(mentions),
            None => builder,
        };
        let http = &http;
        async move { channel.send_message(http, builder).await.unwrap() }
    };
    let pings = |message: &Message| fake.message_by_id(message.id.get()).unwrap().pings;

    let all = message(None).await;
    assert_eq!(pings(&all), [Ping::Here, Ping::User(42), Ping::Role(7)]);
    assert!(all.mention_everyone);
    assert_eq!(all.mention_roles.iter().map(|role| role.get()).collect::<Vec<_>>(), [7]);
    let only_42 = message(Some(CreateAllowedMentions::new().users([42_u64]))).await;
    assert_eq!(pings(&only_42), [Ping::User(42)]);
    assert_eq!(
        only_42.mentions.iter().map(|user| user.id.get()).collect::<Vec<_>>(),
        [42]
    );
    let none = message(Some(CreateAllowedMentions::new())).await;
    assert!(pings(&none).is_empty());
    assert!(!none.mention_everyone && none.mentions.is_empty());
}

#[tokio::test]
async fn a_reply_references_the_message_it_answers() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let channel = general();
    fake.add_channel(&channel);
    let asked = id_of(&fake.message(&alice(), &channel, "Can I deploy on Friday?", None));

    let reply = CreateMessage::new()
        .content("Answer with the buttons")
        .reference_message((ChannelId::new(GENERAL), MessageId::new(asked)));
    let reply = ChannelId::new(GENERAL).send_message(&http, reply).await.unwrap();
    let reference = reply.message_reference.as_ref().and_then(|r| r.message_id);
    assert_eq!(reference.map(MessageId::get), Some(asked));
    let referenced = reply.referenced_message.as_deref().unwrap();
    assert_eq!(
        (referenced.id.get(), referenced.content.as_str()),
        (asked, "Can I deploy on Friday?")
    );
    let seen = fake.message_by_id(reply.id.get()).unwrap();
    assert_eq!(seen.reply_to, Some(asked));
    assert_eq!(
        seen.pings,
        [Ping::RepliedUser(alice().id)],
        "a reply pings its author by default"
    );

    let missing = CreateMessage::new()
        .content("to nothing")
        .reference_message((ChannelId::new(GENERAL), MessageId::new(12345)));
    let refused = refusal(ChannelId::new(GENERAL).send_message(&http, missing).await);
    assert_eq!(refused, (400, 50035, "message_reference".to_owned()));
}

#[tokio::test]
async fn discords_refusals_surface_in_serenitys_errors() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let channel = general();
    fake.add_channel(&channel);
    let send = |channel: u64, body: Value| {
        let http = &http;
        async move { refusal(http.send_message(ChannelId::new(channel), vec![], &body).await) }
    };
    let hi = || json!({ "content": "hi" });

    assert_eq!(send(1234, hi()).await, (404, 10003, "Unknown Channel".to_owned()));
    let dm = fake.dm_channel(&alice());
    fake.refuse_dms(alice().id);
    assert_eq!(
        send(dm.id, hi()).await,
        (403, 50007, "Cannot send messages to this user".to_owned())
    );
    let secret = DiscordChannel::guild(GENERAL + 1, GUILD, "secret");
    fake.add_channel(&secret);
    fake.deny_access(secret.id);
    assert_eq!(send(secret.id, hi()).await, (403, 50001, "Missing Access".to_owned()));

    let error = discord_error(
        http.send_message(ChannelId::new(GENERAL), vec![], &json!({ "content": "x".repeat(2001) }))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (error.error.code, error.error.message.as_str()),
        (50035, "Invalid Form Body")
    );
    assert_eq!(error.error.errors[0].path, "content");
    assert_eq!(error.error.errors[0].message, "Must be 2000 or fewer in length.");
    let button = |id: String, label: String| json!({ "type": 2, "style": 1, "label": label, "custom_id": id });
    let row = |buttons: Vec<Value>| json!({ "type": 1, "components": buttons });
    let six = (0..6).map(|i| button(format!("b{i}"), "l".repeat(81))).collect();
    let error = discord_error(
        http.send_message(
            ChannelId::new(GENERAL),
            vec![],
            &json!({ "content": "x", "components": [row(six)] }),
        )
        .await
        .unwrap_err(),
    );
    let paths: Vec<&str> = error.error.errors.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"components.0.components"), "{paths:?}");
    assert!(paths.contains(&"components.0.components.0.label"), "{paths:?}");
    let long_id = row(vec![button("c".repeat(101), "A".to_owned())]);
    let refused = send(GENERAL, json!({ "content": "x", "components": [long_id] })).await;
    assert_eq!(refused, (400, 50035, "components.0.components.0.custom_id".to_owned()));
    let rows: Vec<Value> = (0..6)
        .map(|i| row(vec![button(format!("r{i}"), "A".to_owned())]))
        .collect();
    let refused = send(GENERAL, json!({ "content": "x", "components": rows })).await;
    assert_eq!(refused, (400, 50035, "components".to_owned()));
    assert_eq!(
        send(GENERAL, json!({ "content": "" })).await,
        (400, 50006, "Cannot send an empty message".to_owned())
    );
    assert!(fake.messages(GENERAL).is_empty(), "refused messages are not stored");

    let theirs = MessageId::new(id_of(&fake.message(&alice(), &channel, "mine", None)));
    let edit = EditMessage::new().content("yours");
    assert_eq!(
        refusal(ChannelId::new(GENERAL).edit_message(&http, theirs, edit).await).1,
        50005
    );
    let unknown = refusal(http.get_message(ChannelId::new(GENERAL), MessageId::new(99)).await);
    assert_eq!(unknown, (404, 10008, "Unknown Message".to_owned()));
}

#[tokio::test]
async fn an_ephemeral_answer_is_taken_once_then_followed_up_and_edited() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:0").await;

    respond(&http, &click, ephemeral("Answer submitted")).await.unwrap();
    let again = refusal(respond(&http, &click, ephemeral("Answer submitted")).await);
    assert_eq!(
        again,
        (400, 40060, "Interaction has already been acknowledged.".to_owned())
    );
    let follow_up = CreateInteractionResponseFollowup::new()
        .content("Recorded: Staging")
        .ephemeral(true);
    let follow_up = http
        .create_followup_message(&click.token, &follow_up, vec![])
        .await
        .unwrap();
    assert_eq!(follow_up.channel_id.get(), dm.id);
    let edit = EditInteractionResponse::new().content("Answer submitted: Staging");
    let original = http
        .edit_original_interaction_response(&click.token, &edit, vec![])
        .await
        .unwrap();
    assert_eq!(original.content, "Answer submitted: Staging");

    let record = fake.interaction(click.id).unwrap();
    assert_eq!(record.acknowledged_via, Some(AckVia::Callback));
    let [first, second, third] = &record.replies[..] else {
        panic!("three replies: {:?}", record.replies)
    };
    assert!(matches!(first, Reply::Message { content, ephemeral: true, .. } if content == "Answer submitted"));
    let follow_up_id = follow_up.id.get();
    assert!(matches!(second, Reply::FollowUp { message_id, ephemeral: true, .. } if *message_id == follow_up_id));
    assert!(matches!(third, Reply::Edited { content, .. } if content == "Answer submitted: Staging"));
    let only_alice = fake
        .messages(dm.id)
        .into_iter()
        .filter(|m| m.ephemeral_for == Some(alice().id))
        .count();
    assert_eq!(only_alice, 2);
}

#[tokio::test]
async fn a_modal_opened_by_a_click_is_submitted_and_its_answer_updates_the_message() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:1").await;

    let input = CreateInputText::new(InputTextStyle::Paragraph, "Your reason", "why").placeholder("Because…");
    let modal = CreateModal::new("ag:q1:form", "Why not staging?").components(vec![CreateActionRow::InputText(input)]);
    respond(&http, &click, CreateInteractionResponse::Modal(modal))
        .await
        .unwrap();
    let field = ModalField {
        custom_id: "why".to_owned(),
        label: "Your reason".to_owned(),
        style: 2,
        required: true,
        value: None,
        placeholder: Some("Because…".to_owned()),
        min_length: None,
        max_length: None,
    };
    let modal = Modal {
        custom_id: "ag:q1:form".to_owned(),
        title: "Why not staging?".to_owned(),
        fields: vec![field],
    };
    assert_eq!(fake.interaction(click.id).unwrap().replies, [Reply::Modal(modal)]);

    let submit = fake
        .submit_modal(&alice(), &dm, "ag:q1:form", &[("why", "Too risky")])
        .await;
    let Interaction::Modal(modal) = serde_json::from_value(submit.payload.clone()).unwrap() else {
        panic!("a modal submit")
    };
    assert_eq!(
        (modal.data.custom_id.as_str(), modal.user.id.get()),
        ("ag:q1:form", alice().id)
    );
    let ActionRowComponent::InputText(input) = &modal.data.components[0].components[0] else {
        panic!("a text input")
    };
    assert_eq!(
        (input.custom_id.as_str(), input.value.as_deref()),
        ("why", Some("Too risky"))
    );
    assert_eq!(
        modal.message.map(|m| m.id),
        Some(question.id),
        "opened from the question"
    );

    let update = CreateInteractionResponseMessage::new()
        .content("Answered: Production")
        .components(vec![]);
    respond(&http, &submit, CreateInteractionResponse::UpdateMessage(update))
        .await
        .unwrap();
    let updated = fake.message_by_id(question.id.get()).unwrap();
    assert_eq!(
        (updated.content.as_str(), updated.rows.len(), updated.edited),
        ("Answered: Production", 0, true)
    );
    let replies = fake.interaction(submit.id).unwrap().replies;
    assert!(matches!(&replies[0], Reply::UpdatedMessage { message_id, .. } if *message_id == question.id.get()));
}

#[tokio::test]
async fn a_deferred_answer_is_filled_in_through_the_original_response() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    fake.add_channel(&general());
    let question = post_question(&fake, GENERAL).await;
    let click = fake.click(&alice(), &general(), question.id.get(), "ag:q1:0").await;

    let defer = CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new());
    respond(&http, &click, defer).await.unwrap();
    let thinking = http.get_original_interaction_response(&click.token).await.unwrap();
    assert_eq!(thinking.flags.map(|flags| flags.bits() & 128), Some(128), "loading");
    let done = EditInteractionResponse::new().content("Done");
    http.edit_original_interaction_response(&click.token, &done, vec![])
        .await
        .unwrap();
    let done = fake.message_by_id(thinking.id.get()).unwrap();
    assert_eq!(
        (done.content.as_str(), done.json["flags"].clone()),
        ("Done", json!(0)),
        "no longer loading"
    );
    let replies = fake.interaction(click.id).unwrap().replies;
    assert_eq!(replies[0], Reply::Deferred { ephemeral: false });
    assert!(matches!(&replies[1], Reply::Edited { message_id, .. } if *message_id == thinking.id.get()));
}

#[tokio::test]
async fn interaction_answers_discord_refuses() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:0").await;

    let early = CreateInteractionResponseFollowup::new().content("x");
    let early = refusal(http.create_followup_message(&click.token, &early, vec![]).await);
    assert_eq!(
        early,
        (404, 10015, "Unknown Webhook".to_owned()),
        "no webhook before the first response"
    );
    let input = CreateInputText::new(InputTextStyle::Short, "l", "i");
    let long_title = CreateModal::new("m", "t".repeat(46)).components(vec![CreateActionRow::InputText(input)]);
    let refused = refusal(respond(&http, &click, CreateInteractionResponse::Modal(long_title)).await);
    assert_eq!(refused, (400, 50035, "data.title".to_owned()));
    let refused = refusal(respond(&http, &click, CreateInteractionResponse::Pong).await);
    assert_eq!(refused, (400, 50035, "type".to_owned()), "PONG answers a PING only");
    let mut forged = click.clone();
    forged.token.push('x');
    let refused = refusal(respond(&http, &forged, CreateInteractionResponse::Acknowledge).await);
    assert_eq!(refused.1, 10062, "another token");

    fake.age_interaction(click.id, Duration::from_secs(4));
    let late = refusal(respond(&http, &click, CreateInteractionResponse::Acknowledge).await);
    assert_eq!(late, (404, 10062, "Unknown interaction".to_owned()), "too late: 3 s");
    assert!(fake.interaction(click.id).unwrap().replies.is_empty());
}

#[tokio::test]
async fn a_queued_failure_applies_once_then_clears() {
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    fake.add_channel(&general());

    fake.fail_next("GET /users/@me", Failure::RateLimited { retry_after: 1.5 });
    let error = discord_error(http.get_current_user().await.unwrap_err());
    // Discord's 429 body has no `code`; serenity 0.12 cannot decode it into
    // its error type and keeps neither the body nor the headers.
    assert_eq!(
        (error.status_code, error.error.code),
        (StatusCode::TOO_MANY_REQUESTS, -1)
    );
    assert!(http.get_current_user().await.is_ok(), "the failure is used once");

    // The same request built by serenity but sent by hand keeps retry_after.
    fake.fail_next("GET /users/@me", Failure::RateLimited { retry_after: 1.5 });
    let client = reqwest::Client::new();
    let request = Request::new(Route::UserMe, LightMethod::Get)
        .build(&client, http.token(), http.proxy.as_deref())
        .unwrap()
        .build()
        .unwrap();
    let response = client.execute(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(
        (header("retry-after"), header("x-ratelimit-remaining")),
        ("2".to_owned(), "0".to_owned())
    );
    assert_eq!(
        (header("x-ratelimit-reset-after"), header("x-ratelimit-scope")),
        ("1.500".to_owned(), "user".to_owned())
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "message": "You are being rate limited.", "retry_after": 1.5, "global": false })
    );

    let route = "POST /channels/{channel_id}/messages";
    fake.fail_next(route, Failure::GlobalRateLimited { retry_after: 0.25 });
    let response = reqwest::Client::new()
        .post(format!("{}/api/v10/channels/{GENERAL}/messages", fake.api_url()))
        .header("Authorization", format!("Bot {TOKEN}"))
        .json(&json!({ "content": "hi" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-ratelimit-global"], "true");
    assert_eq!(response.json::<Value>().await.unwrap()["global"], true);
    assert!(fake.messages(GENERAL).is_empty(), "a refused request takes no effect");

    fake.fail_next(route, Failure::ServerError { status: 503 });
    let missing_permissions = Failure::Error {
        status: 403,
        code: 50013,
        message: "Missing Permissions".to_owned(),
    };
    fake.fail_next(route, missing_permissions);
    fake.fail_next(route, Failure::Disconnect);
    let hi = json!({ "content": "hi" });
    let send = || http.send_message(ChannelId::new(GENERAL), vec![], &hi);
    assert_eq!(refusal(send().await), (503, 0, "503: Service Unavailable".to_owned()));
    assert_eq!(refusal(send().await), (403, 50013, "Missing Permissions".to_owned()));
    let dropped = send().await.unwrap_err();
    assert!(
        matches!(dropped, serenity::Error::Http(HttpError::Request(_))),
        "no answer: {dropped:?}"
    );
    assert!(fake.messages(GENERAL).is_empty());
    send().await.unwrap();
    assert_eq!(fake.messages(GENERAL).len(), 1, "the queue is empty again");
    assert_eq!(fake.calls_to(route).len(), 5, "every attempt is recorded");

    fake.fail_next("GET /users/@me", Failure::Slow(Duration::from_millis(300)));
    let started = Instant::now();
    http.get_current_user().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
}

// ---------------------------------------------------------------------------
// The gateway, through serenity's Client

/// What the event handler saw.
#[derive(Debug)]
enum Event {
    Ready(String),
    Interaction(Box<Interaction>),
    Message(Box<Message>),
    Resumed,
}

/// Passes every event on, and answers every click with an ephemeral message.
struct Handler(UnboundedSender<Event>);

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _: Context, ready: Ready) {
        let _ = self.0.send(Event::Ready(ready.session_id));
    }

    async fn interaction_create(&self, ctx: Context, interaction: Interaction) {
        if let Interaction::Component(component) = &interaction {
            let _ = component
                .create_response(&ctx.http, ephemeral("Answer submitted"))
                .await;
        }
        let _ = self.0.send(Event::Interaction(Box::new(interaction)));
    }

    async fn message(&self, _: Context, message: Message) {
        let _ = self.0.send(Event::Message(Box::new(message)));
    }

    async fn resume(&self, _: Context, _: ResumedEvent) {
        let _ = self.0.send(Event::Resumed);
    }
}

/// A running serenity client and what its handler saw.
struct Running {
    shards: Arc<ShardManager>,
    task: JoinHandle<serenity::Result<()>>,
    events: UnboundedReceiver<Event>,
    seen: Vec<Event>,
    resumes: usize,
}

impl Running {
    async fn start(fake: &FakeDiscord, intents: GatewayIntents) -> Self {
        let (tx, events) = unbounded_channel();
        let mut client = ClientBuilder::new_with_http(http(fake), intents)
            .event_handler(Handler(tx))
            .await
            .unwrap();
        let shards = Arc::clone(&client.shard_manager);
        let task = tokio::spawn(async move { client.start().await });
        Self {
            shards,
            task,
            events,
            seen: Vec::new(),
            resumes: 0,
        }
    }

    /// The first event `pick` takes, within [`WAIT`].
    async fn expect<T>(&mut self, pick: impl Fn(&Event) -> Option<T>) -> T {
        if let Some(found) = self.seen.iter().find_map(&pick) {
            return found;
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv()).await;
            let event = event.expect("the event in time").unwrap();
            let found = pick(&event);
            self.seen.push(event);
            if let Some(found) = found {
                return found;
            }
        }
    }

    async fn ready(&mut self) -> String {
        self.expect(|event| match event {
            Event::Ready(session) => Some(session.clone()),
            _ => None,
        })
        .await
    }

    async fn click(&mut self, id: u64) -> ComponentInteraction {
        self.expect(|event| match event {
            Event::Interaction(interaction) if interaction.id().get() == id => interaction.clone().message_component(),
            _ => None,
        })
        .await
    }

    /// Waits for one more RESUMED than those waited for so far (the
    /// handler's tasks may pass it on before or after the replayed events).
    async fn resumed(&mut self) {
        self.resumes += 1;
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.seen.iter().filter(|event| matches!(event, Event::Resumed)).count() < self.resumes {
            let event = tokio::time::timeout_at(deadline, self.events.recv()).await;
            self.seen.push(event.expect("RESUMED in time").unwrap());
        }
    }

    async fn stop(mut self) -> Vec<Event> {
        // Anything still on its way: a duplicate would come now.
        tokio::time::sleep(Duration::from_millis(200)).await;
        while let Ok(event) = self.events.try_recv() {
            self.seen.push(event);
        }
        self.shards.shutdown_all().await;
        let _ = tokio::time::timeout(WAIT, self.task).await;
        self.seen
    }
}

#[tokio::test]
async fn serenitys_client_gets_ready_clicks_and_typed_replies() {
    let fake = FakeDiscord::start().await;
    fake.set_heartbeat_interval(Duration::from_millis(300));
    let channel = general();
    fake.add_channel(&channel);
    let intents = GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES | GatewayIntents::MESSAGE_CONTENT;
    let mut client = Running::start(&fake, intents).await;

    let session = client.ready().await;
    assert_eq!(fake.session_id(), Some(session));
    let identify = &fake.identifies()[0];
    assert_eq!(
        (identify["token"].clone(), identify["intents"].clone()),
        (json!(format!("Bot {TOKEN}")), json!(intents.bits()))
    );
    assert_eq!(
        (identify["compress"].clone(), identify["shard"].clone()),
        (json!(true), json!([0, 1]))
    );
    assert_eq!(
        fake.calls()[0].route,
        "GET /gateway",
        "serenity asks for the gateway URL when built"
    );
    assert_eq!(fake.gateway_connections()[0].path, "/?v=10");

    // A click in a guild channel reaches the handler, whose answer the person sees.
    let question = post_question(&fake, channel.id).await;
    let click = fake.click(&alice(), &channel, question.id.get(), "ag:q1:0").await;
    assert!(matches!(click.delivery, Delivery::Gateway { seq: Some(_) }));
    let component = client.click(click.id).await;
    assert_eq!(component.data.custom_id, "ag:q1:0");
    assert_eq!(
        (component.guild_id, component.user.id.get()),
        (Some(GuildId::new(GUILD)), alice().id)
    );
    assert_eq!(component.member.as_ref().map(|m| m.user.id.get()), Some(alice().id));
    assert_eq!(component.message.id, question.id);
    let replies = fake.wait_for_replies(click.id, 1, WAIT).await.unwrap();
    assert!(matches!(&replies[0], Reply::Message { content, ephemeral: true, .. } if content == "Answer submitted"));

    // A typed reply to the question.
    let typed = id_of(&fake.message(&alice(), &channel, "Staging, please", Some(question.id.get())));
    let message = client
        .expect(|event| match event {
            Event::Message(message) if message.id.get() == typed => Some(message.clone()),
            _ => None,
        })
        .await;
    assert_eq!(
        (message.content.as_str(), message.guild_id),
        ("Staging, please", Some(GuildId::new(GUILD)))
    );
    assert_eq!(message.referenced_message.as_ref().map(|m| m.id), Some(question.id));

    // Heartbeats are answered.
    fake.wait_for_frames(1, 2, WAIT).await.unwrap();
    assert!(fake.gateway_sent().iter().filter(|frame| frame.op == Some(11)).count() >= 2);
    client.stop().await;
}

#[tokio::test]
async fn serenitys_client_resumes_without_losing_or_repeating_a_dispatch() {
    let fake = FakeDiscord::start().await;
    let channel = general();
    fake.add_channel(&channel);
    let mut client = Running::start(&fake, GatewayIntents::GUILD_MESSAGES).await;
    let session = client.ready().await;
    let question = post_question(&fake, channel.id).await.id.get();
    let first = fake.click(&alice(), &channel, question, "ag:q1:0").await;
    client.click(first.id).await;

    // Dropped: a click while away arrives after the resume.
    assert!(fake.disconnect(Disconnect::Abrupt));
    let away = fake.click(&alice(), &channel, question, "ag:q1:1").await;
    let resume = fake.wait_for_frames(6, 1, WAIT).await.unwrap();
    assert_eq!(resume[0].json["d"]["session_id"], session.as_str());
    client.click(away.id).await;
    client.resumed().await;

    // Closed with 4000 (resumable), told to reconnect (op 7), a resumable
    // invalid session: each time it resumes.
    assert!(fake.disconnect(Disconnect::Close(4000)));
    client.resumed().await;
    assert!(fake.request_reconnect());
    client.resumed().await;
    assert!(fake.invalidate_session(true));
    client.resumed().await;
    let last = fake.click(&alice(), &channel, question, "ag:q1:0").await;
    client.click(last.id).await;
    assert_eq!(fake.wait_for_frames(6, 4, WAIT).await.unwrap().len(), 4);
    assert_eq!(
        (fake.identifies().len(), fake.session_id()),
        (1, Some(session)),
        "never identified again"
    );
    let connections = fake.gateway_connections();
    assert!(
        connections.len() == 5 && connections[..4].iter().all(|c| c.closed),
        "{connections:?}"
    );

    let mut counts: HashMap<u64, usize> = HashMap::new();
    for event in client.stop().await {
        if let Event::Interaction(interaction) = event {
            *counts.entry(interaction.id().get()).or_default() += 1;
        }
    }
    assert_eq!(
        counts,
        HashMap::from([(first.id, 1), (away.id, 1), (last.id, 1)]),
        "each once"
    );
}

#[tokio::test]
async fn serenity_stops_on_a_disallowed_privileged_intent() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let client = Running::start(&fake, GatewayIntents::GUILD_MESSAGES | GatewayIntents::MESSAGE_CONTENT).await;
    let outcome = tokio::time::timeout(WAIT, client.task).await.unwrap().unwrap();
    let disallowed = matches!(
        outcome,
        Err(serenity::Error::Gateway(
            serenity::gateway::GatewayError::DisallowedGatewayIntents
        ))
    );
    assert!(disallowed, "{outcome:?}");
}

// ---------------------------------------------------------------------------
// The gateway, frame by frame

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str) -> Socket {
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next JSON frame, or the close code.
async fn next(socket: &mut Socket) -> Result<Value, Option<u16>> {
    loop {
        match tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("a frame in time")
        {
            Some(Ok(WsMessage::Text(text))) => return Ok(serde_json::from_str(&text).unwrap()),
            Some(Ok(WsMessage::Close(frame))) => return Err(frame.map(|frame| u16::from(frame.code))),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Err(None),
        }
    }
}

async fn send(socket: &mut Socket, frame: &Value) {
    socket.send(WsMessage::Text(frame.to_string())).await.unwrap();
}

fn identify(intents: u64) -> Value {
    let properties = json!({ "os": "linux", "browser": "test", "device": "test" });
    json!({ "op": 2, "d": { "token": TOKEN, "intents": intents, "properties": properties } })
}

/// `(t, s)` of a dispatch.
fn kind(frame: &Value) -> (&str, u64) {
    (
        frame["t"].as_str().unwrap_or_default(),
        frame["s"].as_u64().unwrap_or_default(),
    )
}

/// Connects and identifies; returns the socket and the READY frame.
async fn session(fake: &FakeDiscord, intents: u64) -> (Socket, Value) {
    let mut socket = connect(&format!("{}/?v=10&encoding=json", fake.gateway_url())).await;
    assert_eq!(next(&mut socket).await.unwrap()["op"], 10);
    send(&mut socket, &identify(intents)).await;
    let ready = next(&mut socket).await.unwrap();
    (socket, ready)
}

#[tokio::test]
async fn the_gateway_keeps_discords_sessions_sequence_and_intents() {
    let fake = FakeDiscord::start().await;
    let channel = general();
    fake.add_channel(&channel);
    let question = post_question(&fake, channel.id).await.id.get();

    let (mut socket, ready) = session(&fake, 1 << 9).await;
    assert_eq!((ready["op"].clone(), kind(&ready)), (json!(0), ("READY", 1)));
    let ready = &ready["d"];
    assert_eq!(
        (ready["v"].clone(), ready["user"]["id"].clone()),
        (json!(10), json!(BOT_ID.to_string()))
    );
    assert_eq!(ready["resume_gateway_url"], format!("{}/resume", fake.gateway_url()));
    assert_eq!(
        (ready["guilds"].clone(), id_of(&ready["application"])),
        (json!([]), APPLICATION_ID)
    );
    let session_id = ready["session_id"].as_str().unwrap().to_owned();
    send(&mut socket, &json!({ "op": 1, "d": 1 })).await;
    assert_eq!(next(&mut socket).await.unwrap()["op"], 11);

    // The bot's own messages come back too (the question, sent before any
    // session, did not): its edit, with content, as the bot's own.
    let edit = EditMessage::new().content("Deploy where? (2 options)");
    let question_id = MessageId::new(question);
    ChannelId::new(GENERAL)
        .edit_message(&http(&fake), question_id, edit)
        .await
        .unwrap();
    let event = next(&mut socket).await.unwrap();
    let content = event["d"]["content"].as_str();
    assert_eq!(
        (kind(&event), content),
        (("MESSAGE_UPDATE", 2), Some("Deploy where? (2 options)"))
    );
    assert_eq!(id_of(&event["d"]["author"]), BOT_ID);

    // GUILD_MESSAGES without MESSAGE_CONTENT: content only where the bot is mentioned; no DMs.
    fake.message(&alice(), &channel, "secret plan", None);
    let event = next(&mut socket).await.unwrap();
    assert_eq!(
        (kind(&event), event["d"]["content"].as_str()),
        (("MESSAGE_CREATE", 3), Some(""))
    );
    assert_eq!(event["d"]["guild_id"], GUILD.to_string());
    fake.message(&alice(), &channel, &format!("<@{BOT_ID}> hello"), None);
    assert_eq!(
        next(&mut socket).await.unwrap()["d"]["content"],
        format!("<@{BOT_ID}> hello")
    );
    let dm = fake.dm_channel(&alice());
    fake.message(&alice(), &dm, "in a DM", None);
    fake.click(&alice(), &channel, question, "ag:q1:0").await;
    let event = next(&mut socket).await.unwrap();
    assert_eq!(kind(&event), ("INTERACTION_CREATE", 5), "the DM was not sent");

    // Dropped; a click while away; the resume replays what came after seq 4.
    assert!(fake.disconnect(Disconnect::Abrupt));
    assert!(next(&mut socket).await.is_err());
    let away = fake.click(&alice(), &channel, question, "ag:q1:1").await;
    let mut socket = connect(&format!("{}/resume?v=10&encoding=json", fake.gateway_url())).await;
    assert_eq!(next(&mut socket).await.unwrap()["op"], 10);
    let resume = json!({ "op": 6, "d": { "token": format!("Bot {TOKEN}"), "session_id": session_id, "seq": 4 } });
    send(&mut socket, &resume).await;
    let replayed = [
        next(&mut socket).await.unwrap(),
        next(&mut socket).await.unwrap(),
        next(&mut socket).await.unwrap(),
    ];
    let kinds: Vec<(&str, u64)> = replayed.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [("INTERACTION_CREATE", 5), ("INTERACTION_CREATE", 6), ("RESUMED", 7)]
    );
    assert_eq!(id_of(&replayed[1]["d"]), away.id);

    // A resume of a session that does not exist is an invalid session.
    let mut other = connect(&format!("{}/?v=10", fake.gateway_url())).await;
    next(&mut other).await.unwrap();
    send(
        &mut other,
        &json!({ "op": 6, "d": { "token": TOKEN, "session_id": "nope", "seq": 1 } }),
    )
    .await;
    assert_eq!(
        next(&mut other).await.unwrap(),
        json!({ "t": null, "s": null, "op": 9, "d": false })
    );

    // Op 7 on demand; then an invalidated session: what happens before the
    // next Identify comes after its READY.
    assert!(fake.request_reconnect());
    assert_eq!(next(&mut socket).await.unwrap()["op"], 7);
    assert!(fake.invalidate_session(false));
    assert_eq!(next(&mut socket).await.unwrap()["d"], false);
    let held = fake.click(&alice(), &channel, question, "ag:q1:0").await;
    assert_eq!(held.delivery, Delivery::Gateway { seq: None });
    let (mut socket, ready) = session(&fake, 1 << 9).await;
    assert_ne!(ready["d"]["session_id"], session_id.as_str());
    let event = next(&mut socket).await.unwrap();
    assert_eq!((kind(&event), id_of(&event["d"])), (("INTERACTION_CREATE", 2), held.id));

    // Identifying twice on one connection closes it with 4005.
    send(&mut socket, &identify(1 << 9)).await;
    assert_eq!(next(&mut socket).await.unwrap_err(), Some(4005));
}

#[tokio::test]
async fn the_gateway_closes_with_discords_codes() {
    let fake = FakeDiscord::start().await;
    let url = format!("{}/?v=10", fake.gateway_url());
    let closes_with = |text: String| {
        let url = url.clone();
        async move {
            let mut socket = connect(&url).await;
            next(&mut socket).await.unwrap();
            socket.send(WsMessage::Text(text)).await.unwrap();
            next(&mut socket).await.unwrap_err()
        }
    };
    let wrong_token = json!({ "op": 2, "d": { "token": "nope", "intents": 0, "properties": {} } });
    assert_eq!(closes_with(wrong_token.to_string()).await, Some(4004));
    let presence = json!({ "op": 3, "d": {} });
    assert_eq!(
        closes_with(presence.to_string()).await,
        Some(4003),
        "presence before identify"
    );
    assert_eq!(
        closes_with(json!({ "op": 99, "d": null }).to_string()).await,
        Some(4001)
    );
    assert_eq!(closes_with("{not json".to_owned()).await, Some(4002));
    assert_eq!(closes_with(identify(1 << 30).to_string()).await, Some(4013));
    fake.allow_privileged_intents(0);
    assert_eq!(closes_with(identify(1 << 15).to_string()).await, Some(4014));
    assert!(fake.session_id().is_none());
    assert!(
        fake.gateway_frames().iter().any(|frame| frame.op == Some(99)),
        "frames are recorded"
    );
}

// ---------------------------------------------------------------------------
// HTTP interactions

/// askgate's side of an interactions endpoint: verify with serenity's
/// `Verifier`, answer PING, answer a click with an ephemeral message, fail
/// on `boom`.
async fn endpoint(State(verifier): State<Arc<Verifier>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    };
    if verifier
        .verify(header("X-Signature-Ed25519"), header("X-Signature-Timestamp"), &body)
        .is_err()
    {
        return (StatusCode::UNAUTHORIZED, "invalid request signature").into_response();
    }
    let response = match serde_json::from_slice::<Interaction>(&body).unwrap() {
        Interaction::Ping(_) => CreateInteractionResponse::Pong,
        Interaction::Component(click) if click.data.custom_id == "boom" => {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        Interaction::Component(click) => ephemeral(&format!("You chose {}", click.data.custom_id)),
        _ => CreateInteractionResponse::Acknowledge,
    };
    axum::Json(serde_json::to_value(response).unwrap()).into_response()
}

async fn serve_endpoint(fake: &FakeDiscord) -> String {
    let app = axum::Router::new()
        .route("/discord/interactions", axum::routing::post(endpoint))
        .with_state(Arc::new(Verifier::new(&fake.public_key())));
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}/discord/interactions", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn http_interactions_are_signed_and_the_answer_is_the_first_response() {
    let fake = FakeDiscord::start().await;
    let url = serve_endpoint(&fake).await;
    fake.deliver_interactions_to(&url);

    let ping = fake.ping().await;
    assert_eq!(
        (ping.replies.as_slice(), ping.acknowledged_via),
        ([Reply::Pong].as_slice(), Some(AckVia::HttpResponse))
    );
    let Delivery::Http(answer) = &ping.delivery else {
        panic!("by HTTP")
    };
    assert_eq!(
        (answer.status, answer.body.clone()),
        (Some(200), json!({ "type": 1, "data": null }))
    );

    let dm = fake.dm_channel(&alice());
    let question = post_question(&fake, dm.id).await;
    let click = fake.click(&alice(), &dm, question.id.get(), "ag:q1:1").await;
    assert_eq!(click.acknowledged_via, Some(AckVia::HttpResponse));
    assert!(
        matches!(&click.replies[..], [Reply::Message { content, ephemeral: true, .. }] if content == "You chose ag:q1:1")
    );
    assert_eq!(id_of(&click.payload["user"]), alice().id);
    assert!(click.payload.get("guild_id").is_none() && click.payload.get("member").is_none());
    let late = refusal(respond(&http(&fake), &click, CreateInteractionResponse::Acknowledge).await);
    assert_eq!(late.1, 40060, "the HTTP answer was the first response");

    let boom = fake.click(&alice(), &dm, question.id.get(), "boom").await;
    let Delivery::Http(answer) = &boom.delivery else {
        panic!("by HTTP")
    };
    assert_eq!(answer.status, Some(500));
    assert!(answer.error.is_some() && boom.replies.is_empty() && boom.acknowledged_via.is_none());

    let payload =
        json!({ "id": "1", "application_id": APPLICATION_ID.to_string(), "type": 1, "token": "t", "version": 1 });
    for (signature, status) in [
        (Signature::Valid, 200),
        (Signature::Forged, 401),
        (Signature::Missing, 401),
    ] {
        let answer = fake.post_interaction(&url, &payload, signature).await;
        assert_eq!(answer.status, Some(status), "{signature:?}");
    }
}

#[tokio::test]
async fn serenitys_verifier_accepts_the_fakes_signature_and_rejects_a_forged_one() {
    let fake = FakeDiscord::start().await;
    let verifier = Verifier::new(&fake.public_key());
    let body = discord_payload("component_guild").as_bytes();
    let signed = fake.signature_headers(body, Signature::Valid);
    assert_eq!(
        (signed[0].0.as_str(), signed[1].0.as_str()),
        ("X-Signature-Ed25519", "X-Signature-Timestamp")
    );
    assert!(verifier.verify(&signed[0].1, &signed[1].1, body).is_ok());
    assert!(
        verifier.verify(&signed[0].1, &signed[1].1, b"{}").is_err(),
        "another body"
    );
    let forged = fake.signature_headers(body, Signature::Forged);
    assert!(verifier.verify(&forged[0].1, &forged[1].1, body).is_err());
}

// ---------------------------------------------------------------------------
// Payloads

#[test]
fn the_documentation_samples_decode_with_serenity() {
    for (name, sample) in DISCORD_PAYLOADS {
        let decoded = if name.starts_with("message_create") {
            serde_json::from_str::<Message>(sample).map(drop)
        } else {
            serde_json::from_str::<Interaction>(sample).map(drop)
        };
        decoded.unwrap_or_else(|error| panic!("{name}: {error}"));
    }
    let parse = |name: &str| serde_json::from_str::<Interaction>(discord_payload(name)).unwrap();
    let Interaction::Component(guild) = parse("component_guild") else {
        panic!("a click")
    };
    assert_eq!(
        (guild.data.custom_id.as_str(), guild.user.id.get()),
        ("click_one", 53_908_232_506_183_680)
    );
    assert!(guild.guild_id.is_some() && guild.member.is_some());
    let Interaction::Component(dm) = parse("component_dm") else {
        panic!("a click")
    };
    assert!(dm.guild_id.is_none() && dm.member.is_none());
    assert_eq!(dm.user.id.get(), 53_908_232_506_183_680);
    let Interaction::Modal(modal) = parse("modal_submit.json") else {
        panic!("a modal")
    };
    let ActionRowComponent::InputText(name) = &modal.data.components[0].components[0] else {
        panic!("a text input")
    };
    assert_eq!((name.custom_id.as_str(), name.value.as_deref()), ("name", Some("John")));
    assert!(matches!(parse("ping"), Interaction::Ping(_)));
    let reply: Message = serde_json::from_str(discord_payload("message_create_reply")).unwrap();
    assert_eq!(reply.referenced_message.map(|m| m.content), Some("Supa Hot".to_owned()));
    let reference = reply.message_reference.and_then(|r| r.message_id).map(MessageId::get);
    assert_eq!(reference, Some(334_385_199_974_967_042));
    assert!(reply.guild_id.is_some() && reply.member.is_some());
}

#[tokio::test]
async fn the_fakes_own_payloads_decode_with_serenity() {
    let fake = FakeDiscord::start().await;
    let channel = general();
    fake.add_channel(&channel);
    let question = post_question(&fake, channel.id).await;
    let dm = fake.dm_channel(&alice());
    let in_dm = post_question(&fake, dm.id).await;

    let click = fake.click(&alice(), &channel, question.id.get(), "ag:q1:1").await;
    let Interaction::Component(guild) = serde_json::from_value(click.payload).unwrap() else {
        panic!("a click")
    };
    assert_eq!(
        (guild.guild_id, guild.user.id.get()),
        (Some(GuildId::new(GUILD)), alice().id)
    );
    assert_eq!((guild.channel_id.get(), guild.message.id), (GENERAL, question.id));
    assert_eq!(guild.token, click.token);
    let click = fake.click(&alice(), &dm, in_dm.id.get(), "ag:q1:0").await;
    let Interaction::Component(private) = serde_json::from_value(click.payload).unwrap() else {
        panic!("a click")
    };
    assert_eq!((private.guild_id, private.user.id.get()), (None, alice().id));

    let submit = fake
        .submit_modal(&alice(), &channel, "form", &[("a", "one"), ("b", "two")])
        .await;
    let Interaction::Modal(modal) = serde_json::from_value(submit.payload).unwrap() else {
        panic!("a modal")
    };
    assert_eq!(modal.data.components.len(), 2);
    assert!(modal.message.is_none(), "no modal was opened from a message");

    let reply = fake.message(&alice(), &channel, "Production <@1>", Some(question.id.get()));
    let reply: Message = serde_json::from_value(reply).unwrap();
    assert_eq!(reply.referenced_message.map(|m| m.id), Some(question.id));
    assert!(reply.member.is_some() && reply.guild_id.is_some());

    let closed = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let nobody = format!("http://{}/nobody-listens", closed.local_addr().unwrap());
    drop(closed);
    fake.deliver_interactions_to(&nobody);
    let ping = fake.ping().await;
    assert!(matches!(
        serde_json::from_value(ping.payload).unwrap(),
        Interaction::Ping(_)
    ));
    assert!(matches!(ping.delivery, Delivery::Http(answer) if answer.status.is_none() && answer.error.is_some()));
}
