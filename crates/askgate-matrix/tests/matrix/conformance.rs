//! The adapter conformance suites (`askgate_testkit::conformance`, the
//! rules of `docs/adapter-spec.md`) run against a real Synapse: the bot is
//! a Synapse user, and the people are Synapse users on devices of their
//! own, whose direct rooms with the bot are end-to-end encrypted.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use askgate_adapter::Inbound;
use askgate_core::Presentation;
use askgate_core::QuestionId;
use askgate_core::channel::{Channel, Destination, InboundEvent, InboundSink, MessageRef, Outgoing, UserRef};
use askgate_core::render::TextPrompt;
use askgate_engine::{Engine, Recipient};
use askgate_matrix::{Login, MatrixChannel, MatrixSettings};
use askgate_store::QuestionRecord;
use askgate_testkit::conformance::inbound::{self, GROUP, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
use askgate_testkit::conformance::nudges::{self, Posted};
use askgate_testkit::conformance::{self, PlatformUnderTest, Shown, edges};
use askgate_testkit::synapse::Synapse;
use async_trait::async_trait;
use matrix_sdk::ruma::OwnedRoomId;
use serde_json::{Value, json};

use crate::person::{POLL_END, Person, reply_to};
use crate::view;

const CHANNEL: &str = "mx";
/// How long a reply queued for its room's turn may take to show.
const QUIET: Duration = Duration::from_secs(5);

/// The bot: a new Synapse user, and its channel.
pub(crate) async fn bot(synapse: &Synapse) -> MatrixChannel {
    let account = synapse.register(&Synapse::unique_localpart("askgate"), false).await;
    MatrixChannel::new(MatrixSettings {
        name: CHANNEL.into(),
        homeserver: synapse.url(),
        user_id: account.user_id,
        login: Login::Token(askgate_adapter::Secret::new(account.access_token)),
        device_id: Some(account.device_id),
        store_dir: None,
    })
}

struct Outbound {
    synapse: &'static Synapse,
    person: Person,
    channel: MatrixChannel,
    /// A room where only its creator may post: the homeserver refuses the bot.
    muted: OwnedRoomId,
    refuse: AtomicBool,
}

#[async_trait]
impl PlatformUnderTest for Outbound {
    fn channel(&self) -> &dyn Channel {
        &self.channel
    }

    /// The person: askgate opens an encrypted direct room with them.
    fn destination(&self) -> Destination {
        let conversation = if self.refuse.swap(false, Ordering::SeqCst) {
            self.muted.to_string()
        } else {
            self.person.id().to_owned()
        };
        Destination {
            conversation,
            thread: None,
        }
    }

    async fn shown(&self, conversation: &str, message: &str) -> Shown {
        let events = view::events(&self.person, conversation).await;
        view::shown(&events, message).expect("the person sees the message")
    }

    fn refuse_next_send(&self) {
        self.refuse.store(true, Ordering::SeqCst);
    }

    /// Synapse's own `M_LIMIT_EXCEEDED`: the bot may send one message a
    /// second from now on, and a first message takes this second's.
    async fn rate_limit_next_send(&self) -> Duration {
        self.synapse.limit_messages(self.channel.user_id(), 1, 1).await;
        let question = QuestionId::parse("01JMATRIXRATELIMITFILLER").unwrap();
        let filler = Presentation::Text(TextPrompt::new(vec!["This second's message".into()]));
        self.channel
            .deliver(&Outgoing::new(&question, &self.destination(), &filler))
            .await
            .unwrap();
        // Synapse names the rest of the second: more than half of it, sent
        // straight after.
        Duration::from_millis(500)
    }

    async fn texts(&self, conversation: &str) -> Vec<String> {
        view::events(&self.person, conversation)
            .await
            .iter()
            .filter_map(|event| event["content"]["body"].as_str().map(str::to_owned))
            .collect()
    }
}

#[tokio::test]
async fn the_matrix_adapter_conforms() {
    let synapse = Synapse::shared();
    let channel = bot(synapse).await;
    let person = Person::new(synapse, "alice", "Alice").await;
    let muted = person
        .create_room("Announcements", &[channel.user_id()], false, true)
        .await;
    channel
        .room(muted.as_str())
        .await
        .expect("the bot joins the muted room");
    conformance::run(&Outbound {
        synapse,
        person,
        channel,
        muted,
        refuse: AtomicBool::new(false),
    })
    .await;
}

/// The inbound suite: Alice (the person) and Bob (a stranger) on devices
/// of their own, the bot syncing, the real engine and store behind it.
struct People {
    synapse: &'static Synapse,
    channel: Arc<MatrixChannel>,
    alice: Person,
    bob: Person,
    /// Alice's room with the bot and Bob: the group recipient's.
    room: OwnedRoomId,
    engine: OnceLock<Engine>,
}

/// Every scenario but Answer…: Matrix has no forms.
fn scenarios() -> Vec<&'static str> {
    inbound::every_scenario_but(&["answer_opens_a_form_whose_submission_answers"])
}

impl People {
    async fn start() -> Self {
        let synapse = Synapse::shared();
        let channel = Arc::new(bot(synapse).await);
        let alice = Person::new(synapse, "alice", "Alice").await;
        let bob = Person::new(synapse, "bob", "Bob").await;
        let room = alice
            .create_room("Release team", &[channel.user_id(), bob.id()], false, false)
            .await;
        bob.joined(&room).await;
        Self {
            synapse,
            channel,
            alice,
            bob,
            room,
            engine: OnceLock::new(),
        }
    }

    fn person(&self, who: Who) -> &Person {
        match who {
            Who::Recipient => &self.alice,
            Who::Stranger => &self.bob,
        }
    }

    /// The room and event of a question's prompt.
    fn prompt(question: &QuestionRecord) -> MessageRef {
        question.delivery().unwrap().messages[0].clone()
    }

    /// What `who` sees after sending `event`: the bot's reply to it (a
    /// notice or a message), or nothing (the prompt ended instead, or
    /// nothing within [`QUIET`] after the event was taken).
    async fn seen_after(&self, who: Who, room: &str, event: &str, prompt: &str) -> Seen {
        let person = self.person(who);
        let reply = person
            .wait_for(room, PATIENCE, |seen| {
                seen["sender"] == json!(self.channel.user_id()) && reply_to(seen).as_deref() == Some(event)
                    || ends(seen, prompt)
            })
            .await;
        let Some(reply) = reply else {
            return Seen::Nothing;
        };
        if ends(&reply, prompt) {
            // The prompt ended; a reply may still follow in the room's turn.
            let late = person
                .wait_for(room, QUIET, |seen| {
                    seen["sender"] == json!(self.channel.user_id()) && reply_to(seen).as_deref() == Some(event)
                })
                .await;
            return late.map_or(Seen::Nothing, |late| said(&late));
        }
        said(&reply)
    }

    /// Waits until the engine knows `message` belongs to `question`.
    async fn attached(&self, message: &MessageRef, question: &QuestionId) {
        let engine = self.engine.get().expect("the suite connected the engine");
        tokio::time::timeout(PATIENCE, async {
            while engine
                .store()
                .question_for_message(CHANNEL, message)
                .await
                .unwrap()
                .as_ref()
                != Some(question)
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("Other…'s message is attached to its question");
    }

    /// The bot's message that asks `who` for their own words under `prompt`.
    fn free_text_prompt(&self, who: Who, room: &str, prompt: &str) -> Option<String> {
        let name = match who {
            Who::Recipient => "Alice",
            Who::Stranger => "Bob",
        };
        self.person(who)
            .events(room)
            .into_iter()
            .rev()
            .find(|seen| {
                seen["sender"] == json!(self.channel.user_id())
                    && reply_to(seen).as_deref() == Some(prompt)
                    && seen["content"]["body"]
                        .as_str()
                        .is_some_and(|body| body.starts_with(name) && body.ends_with("reply to this message."))
            })
            .and_then(|seen| seen["event_id"].as_str().map(str::to_owned))
    }
}

/// Whether `event` ends prompt `prompt`: its poll's end, or its edit.
fn ends(event: &Value, prompt: &str) -> bool {
    let relates = &event["content"]["m.relates_to"];
    relates["event_id"] == json!(prompt)
        && (event["type"] == json!(POLL_END) || relates["rel_type"] == json!("m.replace"))
}

/// What a bot message shows: a notice (`m.notice`, as every notice looks
/// on Matrix: no alerts) or a reply.
fn said(event: &Value) -> Seen {
    let text = event["content"]["body"].as_str().unwrap_or_default().to_owned();
    if event["content"]["msgtype"] == json!("m.notice") {
        Seen::Notice { text, alert: false }
    } else {
        Seen::Reply { text }
    }
}

#[async_trait]
impl PersonPlatform for People {
    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    fn recipients(&self) -> Vec<Recipient> {
        vec![
            recipient(PERSON, "Alice", CHANNEL, self.alice.id(), &[]),
            recipient(GROUP, "Release team", CHANNEL, self.room.as_str(), &[self.alice.id()]),
        ]
    }

    async fn connect(&self, engine: Engine, sink: Arc<dyn InboundSink>) {
        self.engine.set(engine).unwrap();
        // The sync loop ends with the test's runtime.
        tokio::spawn(askgate_matrix::sync::run(
            self.channel.clone(),
            sink,
            std::future::pending(),
        ));
    }

    async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
        let prompt = Self::prompt(question);
        let person = self.person(who);
        // A stranger in the person's direct room: no homeserver lets one in
        // uninvited, so the person invites them (a direct room can gain a
        // member), and they leave again once they saw what came of it.
        let visiting = !person.is_in(&prompt.conversation);
        if visiting {
            self.alice.invite(&prompt.conversation, person.id()).await;
            person
                .joined(<&matrix_sdk::ruma::RoomId>::try_from(prompt.conversation.as_str()).unwrap())
                .await;
        }
        let seen = self.vote(who, question, token).await;
        if visiting {
            person.leave(&prompt.conversation).await;
        }
        seen
    }

    async fn type_reply(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
        let prompt = Self::prompt(question);
        self.reply(who, &prompt, &prompt.message, text).await
    }

    async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
        let prompt = Self::prompt(question);
        let asked = self
            .free_text_prompt(who, &prompt.conversation, &prompt.message)
            .expect("Other… asked for their own words");
        self.reply(who, &prompt, &asked, text).await
    }
    async fn write_privately(&self, who: Who, text: &str) -> Seen {
        let person = self.person(who);
        let room = person.create_room("", &[self.channel.user_id()], false, false).await;
        // The bot joins the invitation in its sync.
        assert!(
            person.sees_join(room.as_str(), self.channel.user_id(), PATIENCE).await,
            "the bot joins a room it is invited to"
        );
        let said_now = person
            .send(
                room.as_str(),
                "m.room.message",
                json!({"msgtype": "m.text", "body": text}),
            )
            .await;
        let reply = person
            .wait_for(room.as_str(), PATIENCE, |seen| {
                seen["sender"] == json!(self.channel.user_id()) && reply_to(seen).as_deref() == Some(said_now.as_str())
            })
            .await;
        reply.map_or(Seen::Nothing, |reply| said(&reply))
    }

    fn redelivers(&self, event: &InboundEvent) -> bool {
        Inbound::redelivers(&*self.channel, event)
    }

    fn alerts(&self) -> bool {
        false
    }

    async fn shown(&self, message: &MessageRef) -> Option<Shown> {
        let events = view::events(&self.alice, &message.conversation).await;
        view::shown(&events, &message.message)
    }

    fn user(&self, who: Who) -> UserRef {
        let person = self.person(who);
        UserRef::new(person.id(), if who == Who::Recipient { "Alice" } else { "Bob" })
    }

    async fn posted(&self, conversation: &str) -> Option<Vec<Posted>> {
        let events = view::events(&self.alice, conversation).await;
        Some(view::posted(&events, self.channel.user_id()))
    }

    /// A real homeserver refuses what is invalid itself: every refusal
    /// is an error the adapter saw.
    fn violations(&self) -> Vec<String> {
        let _ = self.synapse;
        Vec::new()
    }
}

impl People {
    /// `who` votes for the answer `token` on the question's poll, and sees
    /// the bot's reply to the poll after the vote (a notice, a message, or
    /// Other…'s request for their own words).
    async fn vote(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
        let prompt = Self::prompt(question);
        let person = self.person(who);
        let vote = person.vote(&prompt.conversation, &prompt.message, token).await;
        // A reaction to a vote is a reply to the poll, after the vote.
        let reply = person
            .wait_after(&prompt.conversation, &vote, PATIENCE, |seen| {
                seen["sender"] == json!(self.channel.user_id())
                    && reply_to(seen).as_deref() == Some(prompt.message.as_str())
            })
            .await;
        let Some(reply) = reply else {
            return Seen::Nothing;
        };
        if let Some(free_text) = self.free_text_prompt(who, &prompt.conversation, &prompt.message)
            && reply["event_id"] == json!(free_text)
        {
            let message = MessageRef {
                conversation: prompt.conversation.clone(),
                message: free_text,
            };
            self.attached(&message, &question.id).await;
            return Seen::FreeTextInput;
        }
        said(&reply)
    }
}

impl People {
    /// `who` replies to `to` with `text` in the prompt's room (in its
    /// thread, where it has one), and sees what follows.
    async fn reply(&self, who: Who, prompt: &MessageRef, to: &str, text: &str) -> Seen {
        let person = self.person(who);
        let event = person
            .send(
                &prompt.conversation,
                "m.room.message",
                json!({"msgtype": "m.text", "body": text, "m.relates_to": {"m.in_reply_to": {"event_id": to}}}),
            )
            .await;
        self.seen_after(who, &prompt.conversation, &event, &prompt.message)
            .await
    }
}

#[tokio::test]
async fn inbound() {
    let people = People::start().await;
    assert_eq!(inbound::run(&people).await, scenarios());
}

/// Prompts at the contract's edges, delivered, answered and ended
/// (`conformance::edges`).
#[tokio::test]
async fn edge_prompts() {
    let people = People::start().await;
    assert_eq!(edges::run(&people).await, edges::requests().len());
}

/// Reminders and notes under prompts the engine delivered
/// (`conformance::nudges`): replies mentioning exactly their people.
#[tokio::test]
async fn nudges() {
    let people = People::start().await;
    assert_eq!(nudges::run(&people).await, nudges::EVERY_NUDGE);
}
