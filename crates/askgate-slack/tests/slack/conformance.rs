//! The adapter conformance suite (`askgate_testkit::conformance`, the rules
//! of `docs/adapter-spec.md`) run against the fake Slack: the outbound half
//! on [`SlackChannel`], the inbound half with the real engine and store
//! behind the adapter, in both of its inbound modes (Socket Mode, and the
//! HTTP endpoints).
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use askgate_core::channel::{Channel, ChannelError, Destination, Outgoing};
use askgate_core::render::TextPrompt;
use askgate_core::{Presentation, QuestionId};
use askgate_slack::SlackChannel;
use askgate_slack::api::Api;
use askgate_testkit::conformance::{self, PlatformUnderTest, Shown};
use askgate_testkit::slack::{Failure, FakeSlack, Person, SeenMessage};
use async_trait::async_trait;
use serde_json::Value;

/// The channel's configured name.
const NAME: &str = "sl";

/// A fake Slack that knows Alice, Bob and the release channel they are in.
async fn start_fake() -> (FakeSlack, Person, Person, String) {
    let fake = FakeSlack::start().await;
    let alice = fake.user("U0ALICE001", "alice");
    let bob = fake.user("U0BOB00001", "bob");
    let room = fake.channel("releases", &[&alice, &bob]).id;
    (fake, alice, bob, room)
}

/// Slack's mrkdwn as a person sees it: entities decoded, and a formatting
/// mark that starts a word (after the start, a space or punctuation) shown
/// as formatting, i.e. not at all. A mark after anything else (a letter, a
/// zero-width space) is literal, as in Slack.
fn rendered(mrkdwn: &str) -> String {
    let decoded = mrkdwn.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let chars: Vec<char> = decoded.chars().collect();
    let mut out = String::new();
    for (index, c) in chars.iter().enumerate() {
        let before = index.checked_sub(1).map(|i| chars[i]);
        let after = chars.get(index + 1).copied();
        let opens = before.is_none_or(|b| b.is_whitespace() || "([{\"'".contains(b))
            && after.is_some_and(|a| !a.is_whitespace());
        let closes = before.is_some_and(|b| !b.is_whitespace() && b != '\u{200B}')
            && after.is_none_or(|a| a.is_whitespace() || ".,;:!?)]}\"'".contains(a));
        if "*_~`".contains(*c) && (opens || closes) {
            continue;
        }
        out.push(*c);
    }
    out
}

/// The text of a message's blocks (sections and context), as shown.
fn shown_text(message: &SeenMessage) -> String {
    let mut parts = Vec::new();
    for block in message.blocks.as_array().into_iter().flatten() {
        if let Some(text) = block["text"]["text"].as_str() {
            parts.push(rendered(text));
        }
        for element in block["elements"].as_array().into_iter().flatten() {
            if element["type"] == "mrkdwn" || element["type"] == "plain_text" {
                parts.push(rendered(element["text"].as_str().unwrap_or_default()));
            }
        }
    }
    if parts.is_empty() {
        return rendered(&message.text);
    }
    parts.join("\n")
}

fn shown(message: &SeenMessage) -> Shown {
    Shown {
        text: shown_text(message),
        buttons: message
            .buttons()
            .iter()
            .map(|button: &Value| {
                (
                    button["text"]["text"].as_str().unwrap_or_default().to_owned(),
                    button["value"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect(),
        mentions: message.pings.len(),
    }
}

/// The outbound half: [`SlackChannel`] posting to `destination` on the fake.
struct Outbound {
    fake: FakeSlack,
    channel: SlackChannel,
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
        let seen = self.fake.message_at(conversation, message).unwrap_or_else(|| {
            panic!("the delivery MUST name the conversation the message is in: {conversation}/{message}")
        });
        assert_eq!(seen.unfurl_links, Some(false), "links never unfurl: {seen:?}");
        assert_eq!(seen.unfurl_media, Some(false), "media never unfurls: {seen:?}");
        shown(&seen)
    }

    fn refuse_next_send(&self) {
        self.fake
            .fail_next("chat.postMessage", Failure::Error("channel_not_found"));
    }

    async fn rate_limit_next_send(&self) -> Duration {
        // Slack names whole seconds (`Retry-After`).
        let wait = Duration::from_secs(1);
        self.fake
            .fail_next("chat.postMessage", Failure::RateLimited { retry_after: wait });
        wait
    }

    async fn texts(&self, conversation: &str) -> Vec<String> {
        self.fake
            .messages(conversation)
            .iter()
            .map(|seen| shown(seen).text)
            .collect()
    }
}

fn outbound(fake: FakeSlack, conversation: &str) -> Outbound {
    let channel = SlackChannel::new(NAME, Api::new(fake.bot_token(), &fake.api_url()));
    Outbound {
        fake,
        channel,
        destination: Destination {
            conversation: conversation.into(),
            thread: None,
        },
    }
}

/// To a person by user id: askgate opens the DM, whose id is not the user's.
#[tokio::test]
async fn the_slack_adapter_conforms_in_a_dm() {
    let (fake, alice, _, _) = start_fake().await;
    let outbound = outbound(fake, &alice.id);
    conformance::run(&outbound).await;
    let dm = outbound.fake.dm(&alice);
    assert!(dm.starts_with('D'), "{dm}");
    assert_eq!(
        outbound.fake.calls_to("conversations.open").len(),
        1,
        "the DM is opened once"
    );
    let messages = outbound.fake.messages(&dm);
    assert!(!messages.is_empty());
    assert!(messages.iter().all(|message| message.pings.is_empty()), "{messages:?}");
    refusals_are_final(&outbound).await;
}

/// `not_in_channel`, `is_archived`, a revoked token are final (a 429 is
/// the shared suite's scenario).
async fn refusals_are_final(outbound: &Outbound) {
    let prompt = Presentation::Text(TextPrompt::new(vec!["refused".into()]));
    for (code, id) in [
        ("not_in_channel", "01JSLACKNOTINCHANNEL0000"),
        ("is_archived", "01JSLACKISARCHIVED000000"),
    ] {
        outbound.fake.fail_next("chat.postMessage", Failure::Error(code));
        let question = QuestionId::parse(id).unwrap();
        let refused = outbound
            .channel
            .deliver(&Outgoing::new(&question, &outbound.destination, &prompt))
            .await
            .unwrap_err();
        assert!(
            matches!(&refused.error, ChannelError::Rejected { reason } if reason.contains(code)),
            "{refused:?}"
        );
        assert!(!refused.error.is_retryable());
    }
    outbound
        .fake
        .fail_next("chat.postMessage", Failure::Error("invalid_auth"));
    let question = QuestionId::parse("01JSLACKINVALIDAUTH00000").unwrap();
    let refused = outbound
        .channel
        .deliver(&Outgoing::new(&question, &outbound.destination, &prompt))
        .await
        .unwrap_err();
    assert_eq!(refused.error, ChannelError::Unauthorized);
}

/// In a channel: the question is a message there.
#[tokio::test]
async fn the_slack_adapter_conforms_in_a_channel() {
    let (fake, _, _, room) = start_fake().await;
    let outbound = outbound(fake, &room);
    conformance::run(&outbound).await;
    assert!(outbound.fake.calls_to("conversations.open").is_empty());
    assert!(!outbound.fake.messages(&room).is_empty());
}

/// The inbound suite (`conformance::inbound`): a person in Slack, with the
/// real engine and store behind the adapter, over Socket Mode and over the
/// HTTP endpoints.
mod inbound {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use askgate_adapter::Inbound;
    use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
    use askgate_core::QuestionId;
    use askgate_core::channel::{Channel, InboundEvent, InboundSink, UserRef};
    use askgate_core::form::FormValue;
    use askgate_engine::{Engine, Recipient};
    use askgate_slack::render::{CHECKBOXES_SUFFIX, OTHER_FIELD};
    use askgate_slack::{SlackRuntime, SlackSettings};
    use askgate_store::QuestionRecord;
    use askgate_testkit::conformance::inbound::{self, GROUP, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
    use askgate_testkit::conformance::nudges::{self, Posted};
    use askgate_testkit::conformance::{Shown, edges};
    use askgate_testkit::slack::{
        DeliveryKind, DeliveryStatus, FakeSlack, Input, OpenedView, Person, Ping, SeenMessage,
    };
    use async_trait::async_trait;
    use tokio::sync::watch;

    use super::{NAME, rendered, shown_text, start_fake};

    /// How long a reply to a typed message may take to go out in its
    /// conversation's turn (posts there are a second apart).
    const QUIET: Duration = Duration::from_secs(5);

    const SCENARIOS: [&str; 12] = inbound::EVERY_SCENARIO;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Socket,
        Http,
    }

    struct Slack {
        fake: FakeSlack,
        alice: Person,
        bob: Person,
        room: String,
        runtime: Arc<SlackRuntime>,
        mode: Mode,
        /// Dropped with the test: Socket Mode stops.
        stop: watch::Sender<bool>,
        /// The modal last opened for each person on each question.
        views: Mutex<HashMap<(String, QuestionId), OpenedView>>,
    }

    impl Slack {
        async fn start(mode: Mode) -> Self {
            let (fake, alice, bob, room) = start_fake().await;
            let settings = match mode {
                Mode::Socket => SlackSettings::socket(NAME, fake.bot_token(), fake.app_token(), &fake.api_url()),
                Mode::Http => SlackSettings::http(NAME, fake.bot_token(), fake.signing_secret(), &fake.api_url()),
            };
            let (stop, _) = watch::channel(false);
            Self {
                runtime: Arc::new(settings.runtime()),
                fake,
                alice,
                bob,
                room,
                mode,
                stop,
                views: Mutex::new(HashMap::new()),
            }
        }

        fn person(&self, who: Who) -> &Person {
            match who {
                Who::Recipient => &self.alice,
                Who::Stranger => &self.bob,
            }
        }

        /// The conversation and `ts` of a question's message.
        fn question_message(&self, question: &QuestionRecord) -> (String, String) {
            let message = &question.delivery().unwrap().messages[0];
            if message.conversation != self.room {
                assert_eq!(
                    message.conversation,
                    self.fake.dm(&self.alice),
                    "the question went to the DM askgate opened"
                );
            }
            (message.conversation.clone(), message.message.clone())
        }

        /// What `who` saw after delivery `delivery` was made at `since`: a
        /// modal opened with `trigger_id`, a new ephemeral message, or nothing.
        async fn seen(
            &self,
            who: Who,
            delivery: usize,
            ephemerals_before: usize,
            trigger_id: Option<&str>,
            since: Instant,
        ) -> (Seen, Option<OpenedView>) {
            let acked = self.fake.wait_for_ack(delivery, PATIENCE).await.unwrap();
            assert!(
                matches!(acked.status, DeliveryStatus::Acked { late: false, .. }),
                "Slack MUST be acknowledged within 3 s: {acked:?}"
            );
            // Acknowledged before the engine decided (a slow store): what
            // it shows comes later.
            let grace = if since.elapsed() > Duration::from_secs(2) {
                PATIENCE
            } else {
                Duration::from_millis(500)
            };
            let deadline = Instant::now() + grace;
            let user = &self.person(who).id;
            loop {
                if let Some(view) = trigger_id.and_then(|trigger| self.fake.view_for_trigger(trigger)) {
                    let blocks = view.json["blocks"].as_array().cloned().unwrap_or_default();
                    let ids: Vec<String> = blocks
                        .iter()
                        .filter_map(|block| block["block_id"].as_str())
                        .filter(|id| !id.ends_with(CHECKBOXES_SUFFIX))
                        .map(str::to_owned)
                        .collect();
                    let seen = if ids == [OTHER_FIELD] {
                        Seen::FreeTextInput
                    } else {
                        Seen::Form { fields: ids }
                    };
                    return (seen, Some(view));
                }
                let ephemerals = self.fake.ephemerals_for(user);
                if let Some(notice) = ephemerals.get(ephemerals_before) {
                    assert!(notice.pings.is_empty(), "a notice MUST notify no one: {notice:?}");
                    return (
                        Seen::Notice {
                            text: rendered(&notice.text),
                            alert: false,
                        },
                        None,
                    );
                }
                if Instant::now() > deadline {
                    return (Seen::Nothing, None);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }

        fn view(&self, who: Who, question: &QuestionRecord) -> OpenedView {
            self.views
                .lock()
                .unwrap()
                .get(&(self.person(who).id.clone(), question.id.clone()))
                .cloned()
                .unwrap_or_else(|| panic!("no modal is open for {who:?} on question {}", question.id))
        }

        async fn submit(&self, who: Who, question: &QuestionRecord, inputs: Vec<(String, Input)>) -> Seen {
            let view = self.view(who, question);
            let person = self.person(who);
            let before = self.fake.ephemerals_for(&person.id).len();
            let started = Instant::now();
            let submission = self.fake.submit_view(person, &view.id, inputs);
            let (seen, _) = self.seen(who, submission.delivery, before, None, started).await;
            seen
        }
    }

    fn edited(fake: &FakeSlack, channel: &str, ts: &str) -> bool {
        fake.message_at(channel, ts).is_some_and(|message| message.edited)
    }

    #[async_trait]
    impl PersonPlatform for Slack {
        fn redelivers(&self, event: &InboundEvent) -> bool {
            Inbound::redelivers(&**self.runtime.slack(), event)
        }

        fn channel(&self) -> Arc<dyn Channel> {
            self.runtime.channel()
        }

        fn recipients(&self) -> Vec<Recipient> {
            vec![
                recipient(PERSON, "Alice", NAME, &self.alice.id, &[]),
                recipient(GROUP, "Release team", NAME, &self.room, &[&self.alice.id]),
            ]
        }

        async fn connect(&self, _engine: Engine, sink: Arc<dyn InboundSink>) {
            match self.mode {
                Mode::Socket => {
                    assert!(
                        self.runtime.routes(sink.clone()).is_none(),
                        "Socket Mode mounts no route"
                    );
                    let runtime = Arc::clone(&self.runtime);
                    tokio::spawn(runtime.run(sink, Shutdown::new(self.stop.subscribe())));
                    self.fake
                        .wait_for_connections(1, PATIENCE)
                        .await
                        .expect("askgate connects to Socket Mode");
                }
                Mode::Http => {
                    let router = self.runtime.routes(sink).expect("HTTP mode mounts routes");
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let base = format!("http://{}/slack/{NAME}", listener.local_addr().unwrap());
                    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
                    let verified = self.fake.verify_url(&format!("{base}/events")).await;
                    assert!(
                        verified.passed(),
                        "the url_verification challenge is answered: {verified:?}"
                    );
                    self.fake
                        .deliver_over_http(&format!("{base}/events"), &format!("{base}/interactivity"));
                }
            }
        }

        async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
            let (channel, ts) = self.question_message(question);
            let person = self.person(who);
            let before = self.fake.ephemerals_for(&person.id).len();
            let started = Instant::now();
            let click = self.fake.click(person, &channel, &ts, token);
            let (seen, view) = self
                .seen(who, click.delivery, before, Some(&click.trigger_id), started)
                .await;
            if let Some(view) = view {
                self.views
                    .lock()
                    .unwrap()
                    .insert((person.id.clone(), question.id.clone()), view);
            }
            seen
        }

        async fn type_reply(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            let (channel, question_ts) = self.question_message(question);
            let person = self.person(who);
            let before = self.fake.ephemerals_for(&person.id).len();
            let was_edited = edited(&self.fake, &channel, &question_ts);
            let sent = self.fake.message(person, &channel, text, Some(&question_ts));
            let started = Instant::now();
            while started.elapsed() < QUIET {
                let reply = self.fake.messages(&channel).into_iter().find(|message: &SeenMessage| {
                    message.bot_id.is_some()
                        && message.thread_ts.as_deref() == Some(question_ts.as_str())
                        && message.ts.as_str() > sent.as_str()
                        && message.ephemeral_for.is_none()
                });
                if let Some(reply) = reply {
                    assert!(reply.pings.is_empty(), "a reply MUST notify no one: {reply:?}");
                    return Seen::Reply {
                        text: rendered(&reply.text),
                    };
                }
                if let Some(notice) = self.fake.ephemerals_for(&person.id).get(before) {
                    return Seen::Notice {
                        text: rendered(&notice.text),
                        alert: false,
                    };
                }
                if !was_edited && edited(&self.fake, &channel, &question_ts) {
                    return Seen::Nothing;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Seen::Nothing
        }

        async fn write_privately(&self, who: Who, text: &str) -> Seen {
            let person = self.person(who);
            let dm = self.fake.dm(person);
            let sent = self.fake.message(person, &dm, text, None);
            let started = Instant::now();
            while started.elapsed() < QUIET {
                let reply = self.fake.messages(&dm).into_iter().find(|message: &SeenMessage| {
                    message.bot_id.is_some() && message.ts.as_str() > sent.as_str() && message.ephemeral_for.is_none()
                });
                if let Some(reply) = reply {
                    assert!(reply.pings.is_empty(), "a reply MUST notify no one: {reply:?}");
                    return Seen::Reply {
                        text: rendered(&reply.text),
                    };
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Seen::Nothing
        }

        async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            self.submit(who, question, vec![(OTHER_FIELD.to_owned(), Input::text(text))])
                .await
        }

        async fn submit_form(&self, who: Who, question: &QuestionRecord, _token: &str, values: Vec<FormValue>) -> Seen {
            let mut inputs = Vec::new();
            for value in values {
                if !value.text.is_empty() {
                    inputs.push((value.id.clone(), Input::text(&value.text)));
                }
                if !value.checked.is_empty() {
                    let checked: Vec<String> = value.checked.iter().map(ToString::to_string).collect();
                    inputs.push((
                        format!("{}{CHECKBOXES_SUFFIX}", value.id),
                        Input::options(checked.iter().map(String::as_str)),
                    ));
                }
            }
            self.submit(who, question, inputs).await
        }

        fn alerts(&self) -> bool {
            false
        }

        /// An ephemeral message needs its user in the conversation.
        fn notices_outside_conversations(&self) -> bool {
            false
        }

        async fn shown(&self, message: &askgate_core::channel::MessageRef) -> Option<Shown> {
            let seen = self.fake.message_at(&message.conversation, &message.message)?;
            Some(super::shown(&seen))
        }

        fn violations(&self) -> Vec<String> {
            self.fake.violations()
        }

        fn user(&self, who: Who) -> UserRef {
            let person = self.person(who);
            UserRef {
                id: person.id.clone(),
                display_name: person.name.clone(),
            }
        }

        /// The bot's messages everyone in the conversation sees, thread
        /// replies included (a reply names its thread's parent), rendered
        /// as Slack shows them, with whom each notifies.
        async fn posted(&self, conversation: &str) -> Option<Vec<Posted>> {
            let posted = self
                .fake
                .messages(conversation)
                .into_iter()
                .filter(|message| message.bot_id.is_some() && message.ephemeral_for.is_none())
                .map(|message| Posted {
                    reply_to: message.thread_ts.clone().filter(|parent| *parent != message.ts),
                    text: shown_text(&message),
                    mentions: message
                        .pings
                        .iter()
                        .map(|ping| match ping {
                            Ping::User(id) => id.clone(),
                            Ping::Subteam(id) => format!("<!subteam^{id}>"),
                            Ping::Channel => "<!channel>".to_owned(),
                            Ping::Here => "<!here>".to_owned(),
                            Ping::Everyone => "<!everyone>".to_owned(),
                        })
                        .collect(),
                    message: message.ts,
                })
                .collect();
            Some(posted)
        }
    }

    /// Prompts at the contract's edges over Socket Mode: every request valid
    /// by Slack's Web API spec and Block Kit limits, delivered, answered and
    /// edited (`conformance::edges`).
    #[tokio::test]
    async fn edge_prompts() {
        let slack = Slack::start(Mode::Socket).await;
        assert_eq!(edges::run(&slack).await, edges::requests().len());
    }

    /// Every nudge scenario: Slack has channels.
    const NUDGES: [&str; 5] = nudges::EVERY_NUDGE;

    /// Reminders and notes under prompts the engine delivered, in the DM
    /// and in a channel (`conformance::nudges`): thread replies with
    /// `<@U…>`, links never unfurled.
    #[tokio::test]
    async fn nudges() {
        let slack = Slack::start(Mode::Socket).await;
        assert_eq!(nudges::run(&slack).await, NUDGES);
        let threaded: Vec<_> = slack
            .fake
            .calls_to("chat.postMessage")
            .into_iter()
            .map(|call| call.body)
            .filter(|body| body.get("thread_ts").is_some())
            .collect();
        assert_eq!(threaded.len(), 4, "{threaded:?}");
        for body in &threaded {
            assert_eq!(body["unfurl_links"], false, "{body}");
            assert!(body.get("blocks").is_none_or(serde_json::Value::is_null), "{body}");
        }
    }

    async fn run(mode: Mode) -> Slack {
        let slack = Slack::start(mode).await;
        assert_eq!(inbound::run(&slack).await, SCENARIOS);
        // Every click and submission was acknowledged in time, none twice.
        let interactions: Vec<_> = slack
            .fake
            .deliveries()
            .into_iter()
            .filter(|delivery| delivery.kind == DeliveryKind::Interaction)
            .collect();
        assert!(!interactions.is_empty());
        for delivery in &interactions {
            assert!(
                matches!(delivery.status, DeliveryStatus::Acked { late: false, .. }),
                "{delivery:?}"
            );
        }
        slack
    }

    #[tokio::test]
    async fn inbound_socket_mode() {
        let slack = run(Mode::Socket).await;
        assert_eq!(
            slack.runtime.check().await.unwrap(),
            "bot @askgate in askgate-test, Socket Mode"
        );
        assert_eq!(slack.fake.connections().len(), 1, "one connection, never dropped");
    }

    #[tokio::test]
    async fn inbound_http_endpoints() {
        let slack = run(Mode::Http).await;
        assert_eq!(
            slack.runtime.check().await.unwrap(),
            "bot @askgate in askgate-test, HTTP endpoints"
        );
        assert!(slack.fake.connections().is_empty(), "no Socket Mode");
    }
}
