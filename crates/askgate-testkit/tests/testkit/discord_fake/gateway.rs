//! The gateway, through serenity's `Client` and a plain WebSocket client.

use super::*;

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
