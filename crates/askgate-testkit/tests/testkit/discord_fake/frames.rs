//! The gateway frame by frame, through a plain WebSocket client (exact frames and close codes).

use super::*;

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

/// A test can make a Resume replay dispatches the client had already
/// received (from an earlier `s` than its `seq`): those come again, in
/// order, then what it missed, then RESUMED; the next Resume is as usual.
#[tokio::test]
async fn a_resume_can_replay_what_the_client_had_already_received() {
    let fake = FakeDiscord::start().await;
    let (mut socket, ready) = session(&fake, (1 << 9) | (1 << 12)).await;
    let session_id = ready["d"]["session_id"].as_str().unwrap().to_owned();
    for n in 2..=4 {
        assert_eq!(fake.dispatch("TYPING_START", json!({ "n": n })), Some(n));
        assert_eq!(kind(&next(&mut socket).await.unwrap()), ("TYPING_START", n));
    }
    fake.replay_on_next_resume_from(3);
    assert!(fake.disconnect(Disconnect::Abrupt));
    assert_eq!(fake.dispatch("TYPING_START", json!({ "n": 5 })), Some(5));
    let resume = |seq: u64| json!({ "op": 6, "d": { "token": TOKEN, "session_id": session_id, "seq": seq } });

    let mut socket = connect(&format!("{}/resume", fake.gateway_url())).await;
    assert_eq!(next(&mut socket).await.unwrap()["op"], 10);
    send(&mut socket, &resume(4)).await;
    let mut got = Vec::new();
    for _ in 0..4 {
        let frame = next(&mut socket).await.unwrap();
        got.push((kind(&frame).0.to_owned(), kind(&frame).1));
    }
    let expected: Vec<(String, u64)> = [
        ("TYPING_START", 3),
        ("TYPING_START", 4),
        ("TYPING_START", 5),
        ("RESUMED", 6),
    ]
    .into_iter()
    .map(|(t, s)| (t.to_owned(), s))
    .collect();
    assert_eq!(got, expected);
    let resumes: Vec<Value> = fake
        .gateway_frames()
        .into_iter()
        .filter(|frame| frame.op == Some(6))
        .map(|frame| frame.json["d"]["seq"].clone())
        .collect();
    assert_eq!(resumes, [json!(4)], "the Resume is recorded");

    // Once only: the next Resume replays after its `seq`.
    assert!(fake.disconnect(Disconnect::Abrupt));
    let mut socket = connect(&format!("{}/resume", fake.gateway_url())).await;
    assert_eq!(next(&mut socket).await.unwrap()["op"], 10);
    send(&mut socket, &resume(6)).await;
    assert_eq!(kind(&next(&mut socket).await.unwrap()), ("RESUMED", 7));
}

/// The application's flags follow the allowed privileged intents (the
/// "limited" flags), unless the test sets them; both in `GET
/// /applications/@me` and in READY.
#[tokio::test]
async fn the_application_flags_follow_the_intents_unless_set() {
    const MESSAGE_CONTENT_LIMITED: u64 = 1 << 19;
    let fake = FakeDiscord::start().await;
    let http = http(&fake);
    let http = &http;
    let flags = move || async move { http.get_current_application_info().await.unwrap().flags.unwrap().bits() };
    assert_ne!(flags().await & MESSAGE_CONTENT_LIMITED, 0, "granted by default");
    fake.allow_privileged_intents(0);
    assert_eq!(flags().await & ((1 << 18) | MESSAGE_CONTENT_LIMITED), 0);
    fake.set_application_flags(1 << 18);
    assert_eq!(flags().await, 1 << 18);
    let (_socket, ready) = session(&fake, 1 << 9).await;
    assert_eq!(ready["d"]["application"]["flags"], json!(1u64 << 18));
}
