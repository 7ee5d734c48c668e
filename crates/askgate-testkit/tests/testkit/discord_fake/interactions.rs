//! Signed HTTP interactions and the payload samples.

use super::*;

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
