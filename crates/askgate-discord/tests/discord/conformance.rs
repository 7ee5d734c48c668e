//! The adapter conformance suite (`askgate_testkit::conformance`, the rules
//! of `docs/adapter-spec.md`) run against the fake Discord: the outbound half
//! on [`DiscordChannel`], the inbound half with the real engine and store
//! behind the adapter, in both of its inbound modes (the gateway, and the
//! HTTP interactions endpoint).
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use askgate_core::channel::{Channel, ChannelError, Destination, Outgoing};
use askgate_core::render::TextPrompt;
use askgate_core::{Presentation, QuestionId};
use askgate_discord::channel::USER_PREFIX;
use askgate_discord::markup;
use askgate_discord::rest::Rest;
use askgate_testkit::conformance::{self, PlatformUnderTest, Shown};
use askgate_testkit::discord::{self as fake, DiscordUser, Failure, FakeDiscord, SeenMessage};
use async_trait::async_trait;

/// The person asked: in a DM, which askgate opens for their user id.
const ALICE: u64 = 300_000_000_000_000_001;
/// Someone else in the server.
const BOB: u64 = 300_000_000_000_000_002;
const GUILD: u64 = 700_000_000_000_000_001;
/// A server channel the release team is asked in.
const ROOM: u64 = 700_000_000_000_000_002;
/// The channel's configured name.
const NAME: &str = "dc";

fn alice() -> DiscordUser {
    DiscordUser::new(ALICE, "alice").with_global_name("Alice")
}

fn bob() -> DiscordUser {
    DiscordUser::new(BOB, "bob").with_global_name("Bob")
}

fn room() -> fake::DiscordChannel {
    fake::DiscordChannel::guild(ROOM, GUILD, "releases")
}

/// A fake Discord that knows the people and the server channel.
async fn start_fake() -> FakeDiscord {
    let fake = FakeDiscord::start().await;
    fake.add_user(&alice());
    fake.add_user(&bob());
    fake.add_channel(&room());
    fake
}

/// The route every prompt's message is sent on.
const SEND: &str = "POST /channels/{channel_id}/messages";

/// A message as a person sees it: the content with Discord's backslash
/// escapes rendered, the buttons in order, and who it notified.
fn shown(message: &SeenMessage) -> Shown {
    Shown {
        text: markup::shown(&message.content),
        buttons: message
            .components()
            .into_iter()
            .filter_map(|component| Some((component.label.clone()?, component.custom_id.clone()?)))
            .collect(),
        mentions: message.pings.len(),
    }
}

/// The outbound half: [`DiscordChannel`] sending to `destination` on the fake.
struct Outbound {
    fake: FakeDiscord,
    channel: askgate_discord::DiscordChannel,
    destination: Destination,
}

#[async_trait]
impl PlatformUnderTest for Outbound {
    fn channel(&self) -> &dyn Channel {
        &self.channel
    }

    fn destination(&self) -> Destination {
        self.destination.clone()
    }

    async fn shown(&self, conversation: &str, message: &str) -> Shown {
        let seen = self
            .fake
            .message_by_id(message.parse().unwrap())
            .expect("the fake has the message");
        assert_eq!(
            seen.channel_id.to_string(),
            conversation,
            "the delivery MUST name the conversation the message is in"
        );
        shown(&seen)
    }

    fn refuse_next_send(&self) {
        self.fake.fail_next(
            SEND,
            Failure::Error {
                status: 403,
                code: 50001,
                message: "Missing Access".into(),
            },
        );
    }

    async fn rate_limit_next_send(&self) -> Duration {
        // A route's 429: `retry_after` in seconds, with a fraction.
        self.fake.fail_next(SEND, Failure::RateLimited { retry_after: 0.3 });
        Duration::from_millis(300)
    }

    async fn texts(&self, conversation: &str) -> Vec<String> {
        let channel = conversation.parse().unwrap();
        self.fake
            .messages(channel)
            .iter()
            .map(|seen| shown(seen).text)
            .collect()
    }
}

/// With typed replies (the gateway with Message Content), to a person by
/// user id: askgate opens the DM, whose id is not the user's.
#[tokio::test]
async fn the_discord_adapter_conforms_in_a_dm() {
    let fake = start_fake().await;
    let channel = askgate_discord::DiscordChannel::new(NAME, Rest::new(fake.token(), &fake.api_url()), true);
    let destination = Destination {
        conversation: format!("{USER_PREFIX}{ALICE}"),
        thread: None,
    };
    let outbound = Outbound {
        fake,
        channel,
        destination,
    };
    conformance::run(&outbound).await;
    let dm = outbound.fake.dm_channel_id(ALICE).expect("askgate opened the DM");
    assert_ne!(dm, ALICE, "the fake's DM has an id of its own");
    assert_eq!(
        outbound.fake.calls_to("POST /users/@me/channels").len(),
        1,
        "the DM is opened once"
    );
    // Every message went to the DM, with mentions off.
    let messages = outbound.fake.messages(dm);
    assert!(!messages.is_empty());
    for message in &messages {
        assert_eq!(
            message.allowed_mentions,
            Some(serde_json::json!({"parse": []})),
            "{message:?}"
        );
    }
    the_global_rate_limit_is_waited_out_and_closed_dms_are_refused(&outbound).await;
}

/// Spec §2.7, §2.8: Discord's global 429 (`"global": true`) is waited out
/// like a route's (the shared suite's scenario) and the part sent again,
/// once; a person whose DMs are closed is `Rejected`.
async fn the_global_rate_limit_is_waited_out_and_closed_dms_are_refused(outbound: &Outbound) {
    let prompt = Presentation::Text(TextPrompt::new(vec!["after a 429".into()]));
    let question = QuestionId::parse("01JDISCORDGLOBALLIMIT0000").unwrap();
    outbound
        .fake
        .fail_next(SEND, Failure::GlobalRateLimited { retry_after: 0.3 });
    let sends_before = outbound.fake.calls_to(SEND).len();
    let started = Instant::now();
    let delivery = outbound
        .channel
        .deliver(&Outgoing::new(&question, &outbound.destination, &prompt))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outbound.fake.calls_to(SEND).len() - sends_before, 2, "sent again once");
    assert_eq!(delivery.messages.len(), 1);

    outbound.fake.refuse_dms(ALICE);
    let question = QuestionId::parse("01JDISCORDDMSCLOSED00000").unwrap();
    let refused = outbound
        .channel
        .deliver(&Outgoing::new(&question, &outbound.destination, &prompt))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused.error, ChannelError::Rejected { reason } if reason.contains("50007")),
        "{refused:?}"
    );
    assert!(refused.delivery.messages.is_empty());
}

/// Without typed replies (the interactions endpoint), in a server channel.
#[tokio::test]
async fn the_discord_adapter_conforms_in_a_server_channel_without_typed_replies() {
    let fake = start_fake().await;
    let channel = askgate_discord::DiscordChannel::new(NAME, Rest::new(fake.token(), &fake.api_url()), false);
    let destination = Destination {
        conversation: ROOM.to_string(),
        thread: None,
    };
    let outbound = Outbound {
        fake,
        channel,
        destination,
    };
    conformance::run(&outbound).await;
    assert!(outbound.fake.calls_to("POST /users/@me/channels").is_empty());
}

/// The inbound suite (`conformance::inbound`): a person in Discord, with the
/// real engine and store behind the adapter, over the gateway and over the
/// interactions endpoint.
mod inbound {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use askgate_adapter::Inbound;
    use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
    use askgate_core::ButtonAction;
    use askgate_core::QuestionId;
    use askgate_core::channel::{Channel, InboundEvent, InboundSink, UserRef};
    use askgate_core::form::FormValue;
    use askgate_discord::channel::USER_PREFIX;
    use askgate_discord::decode::OTHER_FIELD;
    use askgate_discord::rest::Rest;
    use askgate_discord::runtime::{DiscordRuntime, Mode as RuntimeMode};
    use askgate_discord::{DiscordChannel, DiscordSettings, markup};
    use askgate_engine::{Engine, Recipient};
    use askgate_store::{QuestionRecord, QuestionStatus};
    use askgate_testkit::conformance::inbound::{self, GROUP, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
    use askgate_testkit::conformance::nudges::{self, Posted};
    use askgate_testkit::conformance::{Shown, edges};
    use askgate_testkit::discord::{self as fake, DiscordUser, FakeDiscord, Modal, Ping, Reply, Signature};
    use async_trait::async_trait;
    use tokio::sync::watch;

    use super::{ALICE, NAME, ROOM, alice, bob, room, start_fake};

    /// How long a reply to a typed message may take to go out in its
    /// channel's turn, or the question's message to be edited.
    const QUIET: Duration = Duration::from_secs(5);
    /// One single-select question.
    const SINGLE: &str = r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?",
        "options":[{"label":"Staging"},{"label":"Production"}]}],"timeoutSeconds":600}"#;
    /// Discord's privileged Message Content intent.
    const MESSAGE_CONTENT: u64 = 1 << 15;
    /// The route of an edit of a channel message.
    const EDIT: &str = "PATCH /channels/{channel_id}/messages/{message_id}";

    /// Every scenario: the gateway with Message Content has typed replies,
    /// modals (Other…, Answer…) and server channels.
    const GATEWAY_SCENARIOS: [&str; 12] = inbound::EVERY_SCENARIO;

    /// Every scenario but typed replies, which never reach an interactions
    /// endpoint.
    fn interactions_scenarios() -> Vec<&'static str> {
        inbound::every_scenario_but(&[
            "typed_replies_answer_over_several_messages",
            "a_stranger_who_writes_is_told_the_recipient_block",
            "link_in_the_direct_conversation_answers_with_the_persons_own_link",
        ])
    }

    /// Every nudge scenario: Discord has server channels.
    const NUDGES: [&str; 5] = nudges::EVERY_NUDGE;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Gateway,
        Interactions,
    }

    struct Discord {
        fake: FakeDiscord,
        runtime: Arc<DiscordRuntime>,
        mode: Mode,
        /// Dropped with the test: the gateway stops.
        stop: watch::Sender<bool>,
        /// The modal last opened for each person on each question.
        modals: Mutex<HashMap<(u64, QuestionId), Modal>>,
        /// The interactions endpoint's URL, once mounted.
        endpoint: OnceLock<String>,
    }

    fn user(who: Who) -> DiscordUser {
        match who {
            Who::Recipient => alice(),
            Who::Stranger => bob(),
        }
    }

    fn edits_of(fake: &FakeDiscord, channel: u64, message: u64) -> usize {
        let path = format!("/channels/{channel}/messages/{message}");
        fake.calls_to(EDIT).iter().filter(|call| call.path == path).count()
    }

    /// What a person saw of one answer to their interaction.
    fn seen_of(reply: &Reply) -> Seen {
        match reply {
            // An ephemeral message is Discord's only private notice: it looks
            // the same whether askgate meant an alert or not.
            Reply::Message {
                content,
                ephemeral: true,
                ..
            }
            | Reply::FollowUp {
                content,
                ephemeral: true,
                ..
            } => Seen::Notice {
                text: markup::shown(content),
                alert: false,
            },
            Reply::Message { content, .. } | Reply::FollowUp { content, .. } => Seen::Reply {
                text: markup::shown(content),
            },
            // Other…'s modal is the one whose only field is the answer.
            Reply::Modal(modal) if modal.fields.len() == 1 && modal.fields[0].custom_id == OTHER_FIELD => {
                Seen::FreeTextInput
            }
            Reply::Modal(modal) => Seen::Form {
                fields: modal.fields.iter().map(|field| field.custom_id.clone()).collect(),
            },
            other => panic!("the person saw {other:?} as an answer to their interaction"),
        }
    }

    impl Discord {
        async fn start(mode: Mode) -> Self {
            let fake = start_fake().await;
            fake.allow_privileged_intents(MESSAGE_CONTENT);
            let runtime = match mode {
                Mode::Gateway => {
                    Arc::new(DiscordSettings::gateway(NAME, fake.token(), &fake.api_url(), Some(true)).runtime())
                }
                Mode::Interactions => {
                    let rest = Rest::new(fake.token(), &fake.api_url());
                    let channel = Arc::new(DiscordChannel::new(NAME, rest, false));
                    let public_key = fake.public_key();
                    Arc::new(DiscordRuntime::new(channel, RuntimeMode::Interactions { public_key }))
                }
            };
            let (stop, _) = watch::channel(false);
            Self {
                fake,
                runtime,
                mode,
                stop,
                modals: Mutex::new(HashMap::new()),
                endpoint: OnceLock::new(),
            }
        }

        /// The channel a question is in (as the fake knows it), and its message's id.
        fn question_message(&self, question: &QuestionRecord) -> (fake::DiscordChannel, u64) {
            let message = &question.delivery().unwrap().messages[0];
            let conversation: u64 = message
                .conversation
                .parse()
                .unwrap_or_else(|_| panic!("the delivery names no Discord channel: {message:?}"));
            let channel = if conversation == ROOM {
                room()
            } else {
                let dm = self.fake.dm_channel(&alice());
                assert_eq!(
                    dm.id, conversation,
                    "the question went to the DM askgate opened, not to {conversation}"
                );
                dm
            };
            (channel, message.message.parse().unwrap())
        }

        /// What the person saw after interaction `id`: its first response,
        /// or, after a silent deferral, the follow-up.
        async fn seen(&self, id: u64) -> Seen {
            let Ok(replies) = self.fake.wait_for_replies(id, 1, PATIENCE).await else {
                return Seen::Nothing;
            };
            let reply = match &replies[0] {
                Reply::DeferredUpdate => match self.fake.wait_for_replies(id, 2, PATIENCE).await {
                    Ok(replies) => replies[1].clone(),
                    Err(_) => return Seen::Nothing,
                },
                first => first.clone(),
            };
            seen_of(&reply)
        }

        /// `who` does something in the question's channel that makes an
        /// interaction; remembers a modal it opened.
        async fn interacted(&self, who: Who, question: &QuestionRecord, id: u64) -> Seen {
            let seen = self.seen(id).await;
            let record = self.fake.interaction(id).unwrap();
            if let Some(modal) = record.replies.iter().find_map(|reply| match reply {
                Reply::Modal(modal) => Some(modal.clone()),
                _ => None,
            }) {
                self.modals
                    .lock()
                    .unwrap()
                    .insert((user(who).id, question.id.clone()), modal);
            }
            seen
        }

        fn modal(&self, who: Who, question: &QuestionRecord) -> Modal {
            self.modals
                .lock()
                .unwrap()
                .get(&(user(who).id, question.id.clone()))
                .cloned()
                .unwrap_or_else(|| panic!("no modal is open for {who:?} on question {}", question.id))
        }

        /// `who` submits the modal open for them with these fields.
        async fn submit(&self, who: Who, question: &QuestionRecord, fields: &[(&str, &str)]) -> Seen {
            let (channel, _) = self.question_message(question);
            let modal = self.modal(who, question);
            let record = self
                .fake
                .submit_modal(&user(who), &channel, &modal.custom_id, fields)
                .await;
            self.interacted(who, question, record.id).await
        }
    }

    #[async_trait]
    impl PersonPlatform for Discord {
        async fn shown(&self, message: &askgate_core::channel::MessageRef) -> Option<Shown> {
            let seen = self.fake.message_by_id(message.message.parse().ok()?)?;
            Some(super::shown(&seen))
        }

        fn violations(&self) -> Vec<String> {
            self.fake.violations()
        }

        fn user(&self, who: Who) -> UserRef {
            let user = user(who);
            UserRef {
                id: user.id.to_string(),
                display_name: user.global_name.unwrap_or(user.username),
            }
        }

        /// The bot's messages everyone in the channel sees, with Discord's
        /// escapes rendered and whom each notified.
        async fn posted(&self, conversation: &str) -> Option<Vec<Posted>> {
            let channel = conversation.parse().ok()?;
            let posted = self
                .fake
                .messages(channel)
                .into_iter()
                .filter(|message| message.author_id == fake::BOT_ID && message.ephemeral_for.is_none())
                .map(|message| Posted {
                    message: message.id.to_string(),
                    reply_to: message.reply_to.map(|id| id.to_string()),
                    text: markup::shown(&message.content),
                    mentions: message
                        .pings
                        .iter()
                        .map(|ping| match ping {
                            Ping::User(id) | Ping::RepliedUser(id) => id.to_string(),
                            Ping::Role(id) => format!("<@&{id}>"),
                            Ping::Everyone => "@everyone".to_owned(),
                            Ping::Here => "@here".to_owned(),
                        })
                        .collect(),
                })
                .collect();
            Some(posted)
        }

        fn redelivers(&self, event: &InboundEvent) -> bool {
            Inbound::redelivers(&**self.runtime.discord(), event)
        }

        fn channel(&self) -> Arc<dyn Channel> {
            self.runtime.channel()
        }

        fn recipients(&self) -> Vec<Recipient> {
            vec![
                recipient(PERSON, "Alice", NAME, &format!("{USER_PREFIX}{ALICE}"), &[]),
                recipient(GROUP, "Release team", NAME, &ROOM.to_string(), &[&ALICE.to_string()]),
            ]
        }

        async fn connect(&self, _engine: Engine, sink: Arc<dyn InboundSink>) {
            match self.mode {
                Mode::Gateway => {
                    assert!(
                        self.runtime.routes(sink.clone()).is_none(),
                        "the gateway mounts no route"
                    );
                    let runtime = Arc::clone(&self.runtime);
                    tokio::spawn(runtime.run(sink, Shutdown::new(self.stop.subscribe())));
                    self.fake
                        .wait_for_session(PATIENCE)
                        .await
                        .expect("askgate connects to the gateway");
                }
                Mode::Interactions => {
                    let router = self.runtime.routes(sink).expect("the interactions endpoint is a route");
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let base = format!("http://{}", listener.local_addr().unwrap());
                    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
                    let endpoint = format!("{base}/discord/{NAME}");
                    self.fake.deliver_interactions_to(&endpoint);
                    self.endpoint.set(endpoint).unwrap();
                    // Discord checks the endpoint before it names it.
                    let ping = self.fake.ping().await;
                    assert_eq!(ping.replies, [Reply::Pong], "{ping:?}");
                }
            }
        }

        async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
            let (channel, message) = self.question_message(question);
            let record = self.fake.click(&user(who), &channel, message, token).await;
            self.interacted(who, question, record.id).await
        }

        async fn type_reply(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            let (channel, question_message) = self.question_message(question);
            // Counted before the message: the engine may end the question
            // (and the edit go out) at once.
            let edits_before = edits_of(&self.fake, channel.id, question_message);
            let sent = self.fake.message(&user(who), &channel, text, Some(question_message));
            let sent: u64 = sent["id"].as_str().unwrap().parse().unwrap();
            let started = Instant::now();
            while started.elapsed() < QUIET {
                let reply = self
                    .fake
                    .messages(channel.id)
                    .into_iter()
                    .find(|message| message.reply_to == Some(sent) && message.author_id == fake::BOT_ID);
                if let Some(reply) = reply {
                    assert!(
                        reply.pings.is_empty(),
                        "a reply MUST notify no one, not even the person it answers: {reply:?}"
                    );
                    return Seen::Reply {
                        text: markup::shown(&reply.content),
                    };
                }
                if edits_of(&self.fake, channel.id, question_message) > edits_before {
                    return Seen::Nothing;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Seen::Nothing
        }

        async fn write_privately(&self, who: Who, text: &str) -> Seen {
            let dm = self.fake.dm_channel(&user(who));
            let sent = self.fake.message(&user(who), &dm, text, None);
            let sent: u64 = sent["id"].as_str().unwrap().parse().unwrap();
            let started = Instant::now();
            while started.elapsed() < QUIET {
                let reply = self
                    .fake
                    .messages(dm.id)
                    .into_iter()
                    .find(|message| message.reply_to == Some(sent) && message.author_id == fake::BOT_ID);
                if let Some(reply) = reply {
                    assert!(reply.pings.is_empty(), "a reply MUST notify no one: {reply:?}");
                    return Seen::Reply {
                        text: markup::shown(&reply.content),
                    };
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Seen::Nothing
        }

        async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            let modal = self.modal(who, question);
            let [field] = modal.fields.as_slice() else {
                panic!("Other…'s modal has one field: {modal:?}");
            };
            self.submit(who, question, &[(&field.custom_id, text)]).await
        }

        async fn submit_form(&self, who: Who, question: &QuestionRecord, _token: &str, values: Vec<FormValue>) -> Seen {
            assert!(
                values.iter().all(|value| value.checked.is_empty()),
                "a Discord modal has no checkboxes: {values:?}"
            );
            let fields: Vec<(&str, &str)> = values
                .iter()
                .map(|value| (value.id.as_str(), value.text.as_str()))
                .collect();
            self.submit(who, question, &fields).await
        }

        /// The interactions whose first response was Discord's silent
        /// deferral (type 6), as the fake recorded them.
        fn deferrals(&self) -> Option<usize> {
            let deferred = self
                .fake
                .interactions()
                .iter()
                .filter(|interaction| interaction.replies.first() == Some(&Reply::DeferredUpdate))
                .count();
            Some(deferred)
        }

        fn alerts(&self) -> bool {
            false
        }
    }

    /// Prompts at the contract's edges through the gateway and through the
    /// interactions endpoint: every request valid by Discord's OpenAPI
    /// document, delivered, answered and edited (`conformance::edges`).
    #[tokio::test]
    async fn edge_prompts_gateway() {
        let discord = Discord::start(Mode::Gateway).await;
        assert_eq!(edges::run(&discord).await, edges::requests().len());
    }

    #[tokio::test]
    async fn edge_prompts_interactions_endpoint() {
        let discord = Discord::start(Mode::Interactions).await;
        assert_eq!(edges::run(&discord).await, edges::requests().len());
    }

    /// Reminders and notes under prompts the engine delivered, in the DM
    /// and in a server channel (`conformance::nudges`): replies that let
    /// exactly the people they mention be notified.
    #[tokio::test]
    async fn nudges() {
        let discord = Discord::start(Mode::Gateway).await;
        assert_eq!(nudges::run(&discord).await, NUDGES);
        let sent: Vec<serde_json::Value> = discord
            .fake
            .calls_to("POST /channels/{channel_id}/messages")
            .into_iter()
            .map(|call| call.body)
            .filter(|body| body.get("message_reference").is_some())
            .collect();
        assert_eq!(sent.len(), 4, "{sent:?}");
        for body in &sent {
            assert_eq!(body["message_reference"]["fail_if_not_exists"], false, "{body}");
            assert_eq!(body["allowed_mentions"]["parse"], serde_json::json!([]), "{body}");
            assert_eq!(body["allowed_mentions"]["replied_user"], false, "{body}");
        }
    }

    #[tokio::test]
    async fn inbound_gateway() {
        let discord = Discord::start(Mode::Gateway).await;
        assert_eq!(inbound::run(&discord).await, GATEWAY_SCENARIOS);
        assert_eq!(discord.runtime.check().await.unwrap(), "bot @askgate, gateway");
        // Message Content was asked for, and granted.
        let identifies = discord.fake.identifies();
        assert_eq!(
            identifies.len(),
            1,
            "one session, never identified again: {identifies:?}"
        );
        let intents = identifies[0]["intents"].as_u64().unwrap();
        assert_eq!(intents & MESSAGE_CONTENT, MESSAGE_CONTENT, "intents {intents:#b}");
        // Every interaction came by the gateway and was answered by the callback.
        assert!(
            discord
                .fake
                .interactions()
                .iter()
                .all(|interaction| interaction.acknowledged_via == Some(fake::AckVia::Callback)),
            "{:?}",
            discord.fake.interactions()
        );
    }

    #[tokio::test]
    async fn inbound_interactions_endpoint() {
        let discord = Discord::start(Mode::Interactions).await;
        assert_eq!(inbound::run(&discord).await, interactions_scenarios());
        assert_eq!(
            discord.runtime.check().await.unwrap(),
            "bot @askgate, interactions endpoint"
        );
        // No gateway, and every interaction answered in the HTTP response.
        assert!(discord.fake.gateway_connections().is_empty());
        let interactions = discord.fake.interactions();
        assert!(
            interactions
                .iter()
                .all(|interaction| interaction.acknowledged_via == Some(fake::AckVia::HttpResponse)),
            "{interactions:?}"
        );
        // Spec §4.9: a click whose signature is forged or missing gets 401.
        let endpoint = discord.endpoint.get().unwrap();
        let click = &interactions.last().unwrap().payload;
        for signature in [Signature::Forged, Signature::Missing] {
            let answer = discord.fake.post_interaction(endpoint, click, signature).await;
            assert_eq!(answer.status, Some(401), "{signature:?}: {answer:?}");
        }
    }

    /// Spec §4.9: Discord's signature covers its timestamp, which askgate
    /// holds to 5 minutes of now either way (as Slack's): a genuine click
    /// signed an hour ago, 30 days ago, a year ahead or dated `hello` — a
    /// replay of a recorded request — gets 401 and changes nothing; one
    /// signed 4 minutes ago, or now, counts.
    #[tokio::test]
    async fn a_click_dated_out_of_5_minutes_is_refused_and_changes_nothing() {
        const HOUR: i64 = 3600;
        const DAY: i64 = 24 * HOUR;
        let discord = Discord::start(Mode::Interactions).await;
        let person = inbound::Person::start(&discord).await;
        let asked = person.ask(PERSON, SINGLE).await;
        let (channel, message) = discord.question_message(&asked.record);
        let token = asked.token(ButtonAction::Choose(1));
        for signature in [
            Signature::Dated(-HOUR),
            Signature::Dated(-30 * DAY),
            Signature::Dated(365 * DAY),
            Signature::Dated(-6 * 60),
            Signature::Dated(6 * 60),
            Signature::Timestamped("hello"),
            Signature::Timestamped(""),
        ] {
            discord.fake.sign_next_with(signature);
            let click = discord.fake.click(&alice(), &channel, message, &token).await;
            let fake::Delivery::Http(answer) = &click.delivery else {
                panic!("the click went by HTTP: {click:?}");
            };
            assert_eq!(answer.status, Some(401), "{signature:?}: {answer:?}");
            assert!(click.replies.is_empty(), "{signature:?}: {click:?}");
            let now = person.current(&asked.record.id).await;
            assert_eq!(
                now.status,
                QuestionStatus::Pending,
                "{signature:?} changed the question"
            );
        }
        // Within the window: counted, once.
        discord.fake.sign_next_with(Signature::Dated(-4 * 60));
        let click = discord.fake.click(&alice(), &channel, message, &token).await;
        let fake::Delivery::Http(answer) = &click.delivery else {
            panic!("the click went by HTTP: {click:?}");
        };
        assert_eq!(answer.status, Some(200), "{answer:?}");
        let ended = person.ended_within(&asked.record.id, PATIENCE).await.unwrap();
        assert_eq!(ended.status, QuestionStatus::Answered);
        assert_eq!(ended.resolution.unwrap().by.unwrap().id, ALICE.to_string());
    }
}
