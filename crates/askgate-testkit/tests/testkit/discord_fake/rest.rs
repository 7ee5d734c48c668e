//! The REST routes, through serenity's `Http`.

use super::*;

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
        .header("User-Agent", USER_AGENT)
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
