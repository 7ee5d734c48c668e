//! The inbound driver: one event from a platform, decoded, handed to the
//! engine, shown, and only then acknowledged — the same steps for a polled
//! update, a webhook request, a gateway dispatch or a socket envelope.
//!
//! An adapter implements [`Inbound`] (how to decode an event, how to show a
//! reaction, whether its platform delivers an unacknowledged event again)
//! and calls [`Driver::take`] for each event; it acknowledges the platform
//! (moves its cursor, answers 200, acks the envelope) only after `take`
//! returned `Ok`. Where the platform never delivers an event again, a failure
//! to store it is shown to the person as a "not saved, try again" notice and
//! `take` returns `Ok`: holding back the acknowledgement would help no one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use askgate_core::channel::{Destination, InboundError, InboundEvent, InboundKind, InboundSink, Reaction};
use async_trait::async_trait;
use tracing::{info, warn};

use crate::introduce::{self, Introduction};

/// What a platform's inbound side needs to be driven.
#[async_trait]
pub trait Inbound: Send + Sync + 'static {
    /// One event as the platform delivers it (a Telegram `Update`, a Discord
    /// interaction, a Slack envelope's payload).
    type Update: Send + Sync;
    /// What showing a reaction to the event needs (a callback query id, an
    /// interaction token, the message to reply to).
    type Ack: Send + Sync + 'static;

    /// The channel's configured name (the `channel` field of every log line).
    fn name(&self) -> &str;

    /// The normalized event in `update`, and what acknowledging it needs;
    /// `None` for an update askgate ignores. Decides nothing.
    fn decode(&self, update: &Self::Update) -> Option<(InboundEvent, Self::Ack)>;

    /// Whether the platform delivers `event` again when it was not
    /// acknowledged (a Telegram update, a Slack Events API message) or
    /// never (a Discord interaction, a Slack click or modal submission).
    /// The driver holds back the acknowledgement of an event it could not
    /// store only where this holds, and tells the person otherwise; the
    /// conformance suite checks the platform behaves as declared.
    fn redelivers(&self, event: &InboundEvent) -> bool;

    /// How long the platform waits for the first response to an event
    /// (Discord and Slack: 3 s); `None` when it does not mind.
    fn first_response_within(&self) -> Option<Duration> {
        None
    }

    /// Tells the platform that a response will follow (Discord's deferred
    /// response), when the engine has not decided within
    /// [`Inbound::first_response_within`].
    async fn defer(&self, _ack: &Self::Ack) {}

    /// Shows `reaction` the platform's way (`docs/adapter-spec.md` §4.7);
    /// `sink` takes what showing it produced (a force-reply message to
    /// [`InboundSink::attach`]).
    async fn react(&self, ack: Self::Ack, reaction: Reaction, sink: &Arc<dyn InboundSink>);

    /// The recipient keys that address the conversation of `event`
    /// ([`crate::introduce`]): what a conversation that is no recipient's
    /// is told to configure. `None` where the adapter cannot say, and then
    /// it is told nothing.
    fn introduction(&self, _event: &InboundEvent) -> Option<Introduction> {
        None
    }
}

/// What [`Driver::take`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Not an event askgate acts on: acknowledge it.
    Ignored,
    /// Applied and shown: acknowledge it.
    Handled,
    /// Not stored, on a platform that will not deliver it again: the person
    /// was told to try again; acknowledge it.
    NotSaved,
}

/// How often a conversation that is no recipient's is told its block
/// unasked: once, then again only after this long (someone typing into the
/// bot's DM would otherwise get the block after every message). A greeting
/// (`/start`, `@askgate id`) is always answered: it asks for it.
pub const INTRODUCE_EVERY: Duration = Duration::from_secs(10 * 60);

/// Conversations told their block, and when, kept at most this many (the
/// oldest go first).
const INTRODUCED_KEPT: usize = 10_000;

/// When each conversation (and thread) was last told its block.
type Told = HashMap<(String, Option<String>), Instant>;

/// Drives events of one channel into the engine. Cheap to clone.
pub struct Driver<I: Inbound> {
    inbound: Arc<I>,
    sink: Arc<dyn InboundSink>,
    /// When each conversation (and thread) was last told its block.
    introduced: Arc<Mutex<Told>>,
}

impl<I: Inbound> Clone for Driver<I> {
    fn clone(&self) -> Self {
        Self {
            inbound: Arc::clone(&self.inbound),
            sink: Arc::clone(&self.sink),
            introduced: Arc::clone(&self.introduced),
        }
    }
}

impl<I: Inbound> Driver<I> {
    /// A driver of `inbound`'s events into `sink` (the engine).
    pub fn new(inbound: Arc<I>, sink: Arc<dyn InboundSink>) -> Self {
        Self {
            inbound,
            sink,
            introduced: Arc::default(),
        }
    }

    /// The adapter's inbound side.
    pub fn inbound(&self) -> &Arc<I> {
        &self.inbound
    }

    /// The engine.
    pub fn sink(&self) -> &Arc<dyn InboundSink> {
        &self.sink
    }

    /// Decodes `update`, hands it to the engine and shows the reaction.
    /// `Err` means the event's effect is not stored and the platform will
    /// deliver it again: the caller MUST NOT acknowledge it.
    pub async fn take(&self, update: &I::Update) -> Result<Taken, InboundError> {
        let Some((event, ack)) = self.inbound.decode(update) else {
            return Ok(Taken::Ignored);
        };
        if let Some(introduce) = self.introduce(&event) {
            self.inbound.react(ack, introduce, &self.sink).await;
            return Ok(Taken::Handled);
        }
        let redelivers = self.inbound.redelivers(&event);
        match self.handle(event, &ack).await {
            Ok(reaction) => {
                self.inbound.react(ack, reaction, &self.sink).await;
                Ok(Taken::Handled)
            }
            Err(error) if redelivers => Err(error),
            Err(error) => {
                warn!(channel = self.inbound.name(), %error, "an event could not be stored and will not come again; the person is asked to retry");
                let notice = Reaction::Notice {
                    text: error.notice().to_owned(),
                    alert: true,
                };
                self.inbound.react(ack, notice, &self.sink).await;
                Ok(Taken::NotSaved)
            }
        }
    }

    /// The recipient block for a conversation that is no recipient's and
    /// wrote to the bot (`docs/adapter-spec.md` §4.10), decided from the
    /// configuration alone: nothing is stored, and the engine never sees
    /// the event. Logged, so the admin finds the ids in the log too.
    /// [`Reaction::Nothing`] (only the acknowledgement) for a stranger's
    /// conversation told within [`INTRODUCE_EVERY`] that did not ask;
    /// `None` when the event is for the engine.
    fn introduce(&self, event: &InboundEvent) -> Option<Reaction> {
        if !introduce::is_introduced(event) {
            return None;
        }
        let introduction = self.inbound.introduction(event)?;
        let locale = self.sink.stranger(self.inbound.name(), &introduction.destination)?;
        let asked = matches!(event.kind, InboundKind::Greeting { .. });
        if !self.due(&introduction.destination, asked) {
            return Some(Reaction::Nothing);
        }
        let snippet = introduce::snippet(self.inbound.name(), event, &introduction.keys);
        info!(
            channel = self.inbound.name(),
            conversation = %introduction.destination.conversation,
            thread = introduction.destination.thread.as_deref().unwrap_or(""),
            user = %event.user.id,
            recipient = %snippet,
            "a conversation that is no recipient's wrote to the bot; it was told the recipient block to configure"
        );
        Some(Reaction::Introduce {
            text: locale.chrome().introduce().to_owned(),
            snippet,
        })
    }

    /// Whether `destination` is to be told its block now (asked for, or
    /// not told within [`INTRODUCE_EVERY`]), noting that it is.
    fn due(&self, destination: &Destination, asked: bool) -> bool {
        let now = Instant::now();
        let key = (destination.conversation.clone(), destination.thread.clone());
        let mut introduced = self.introduced.lock().unwrap_or_else(PoisonError::into_inner);
        if !asked
            && introduced
                .get(&key)
                .is_some_and(|told| now.duration_since(*told) < INTRODUCE_EVERY)
        {
            return false;
        }
        if introduced.len() >= INTRODUCED_KEPT {
            introduced.retain(|_, told| now.duration_since(*told) < INTRODUCE_EVERY);
            if introduced.len() >= INTRODUCED_KEPT
                && let Some(oldest) = introduced
                    .iter()
                    .min_by_key(|(_, told)| **told)
                    .map(|(key, _)| key.clone())
            {
                introduced.remove(&oldest);
            }
        }
        introduced.insert(key, now);
        true
    }

    async fn handle(&self, event: InboundEvent, ack: &I::Ack) -> Result<Reaction, InboundError> {
        let handling = self.sink.handle(self.inbound.name(), event);
        let Some(budget) = self.inbound.first_response_within() else {
            return handling.await;
        };
        tokio::pin!(handling);
        tokio::select! {
            handled = &mut handling => handled,
            () = tokio::time::sleep(budget) => {
                self.inbound.defer(ack).await;
                handling.await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use askgate_core::QuestionId;
    use askgate_core::channel::{ConversationKind, Destination, InboundKind, MessageRef, UserRef};

    use super::*;

    /// A platform whose updates are event ids (`"ignore"` decodes to nothing)
    /// and which records what it was asked to show.
    struct Recording {
        redelivers: bool,
        budget: Option<Duration>,
        shown: Mutex<Vec<String>>,
    }

    impl Recording {
        fn new(redelivers: bool, budget: Option<Duration>) -> Arc<Self> {
            Arc::new(Self {
                redelivers,
                budget,
                shown: Mutex::new(Vec::new()),
            })
        }

        fn shown(&self) -> Vec<String> {
            self.shown
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        }

        fn show(&self, what: String) {
            self.shown
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(what);
        }
    }

    #[async_trait]
    impl Inbound for Recording {
        type Update = &'static str;
        type Ack = &'static str;

        fn name(&self) -> &'static str {
            "test"
        }

        fn decode(&self, update: &&'static str) -> Option<(InboundEvent, &'static str)> {
            let message = MessageRef {
                conversation: "c".into(),
                message: "m".into(),
            };
            // "hello", "hi" and "known": a typed message in a DM no
            // recipient has, another, and one a recipient has; "greet" a
            // greeting in a DM no recipient has; anything else a tap.
            let (conversation, kind) = match *update {
                "ignore" => return None,
                "hello" | "hi" | "known" => (
                    *update,
                    InboundKind::TextReply {
                        message,
                        text: "hello".into(),
                        reply_to: None,
                    },
                ),
                "greet" => ("greet", InboundKind::Greeting { message }),
                _ => (
                    "c",
                    InboundKind::ButtonPressed {
                        token: "ag1:q:0".into(),
                        message,
                    },
                ),
            };
            let event = InboundEvent {
                event_id: (*update).to_owned(),
                user: UserRef {
                    id: "1".into(),
                    display_name: "Alice".into(),
                },
                conversation: conversation.into(),
                conversation_kind: ConversationKind::Direct,
                thread: None,
                kind,
            };
            Some((event, *update))
        }

        fn redelivers(&self, _event: &InboundEvent) -> bool {
            self.redelivers
        }

        fn first_response_within(&self) -> Option<Duration> {
            self.budget
        }

        async fn defer(&self, ack: &&'static str) {
            self.show(format!("deferred {ack}"));
        }

        async fn react(&self, ack: &'static str, reaction: Reaction, _sink: &Arc<dyn InboundSink>) {
            let what = match reaction {
                Reaction::Notice { text, .. } => text,
                Reaction::Introduce { snippet, .. } => snippet,
                other => format!("{other:?}"),
            };
            self.show(format!("{ack}: {what}"));
        }

        fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
            Some(Introduction {
                destination: Destination {
                    conversation: event.conversation.clone(),
                    thread: None,
                },
                keys: vec![("chat_id", toml::Value::String(event.conversation.clone()))],
            })
        }
    }

    /// An engine stand-in: takes `delay` per event, fails events named "fail".
    struct Sink {
        delay: Duration,
    }

    #[async_trait]
    impl InboundSink for Sink {
        async fn handle(&self, _channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
            tokio::time::sleep(self.delay).await;
            if event.event_id == "fail" {
                return Err(InboundError::Unavailable {
                    reason: "disk full".into(),
                    notice: "not saved, try again".into(),
                });
            }
            Ok(Reaction::Notice {
                text: "Answer submitted".into(),
                alert: false,
            })
        }

        async fn attach(&self, _channel: &str, _question: &QuestionId, _message: MessageRef) {}

        async fn cursor(&self, _channel: &str) -> Option<String> {
            None
        }

        async fn save_cursor(&self, _channel: &str, _cursor: &str) {}

        /// Only conversation "known" is a recipient's.
        fn stranger(&self, _channel: &str, destination: &Destination) -> Option<askgate_core::Locale> {
            (destination.conversation != "known").then_some(askgate_core::Locale::En)
        }
    }

    fn driver(inbound: &Arc<Recording>, delay: Duration) -> Driver<Recording> {
        Driver::new(Arc::clone(inbound), Arc::new(Sink { delay }))
    }

    #[tokio::test]
    async fn a_handled_event_is_shown_and_an_ignored_one_is_not() {
        let inbound = Recording::new(true, None);
        let driver = driver(&inbound, Duration::ZERO);
        assert_eq!(driver.take(&"ignore").await, Ok(Taken::Ignored));
        assert_eq!(driver.take(&"tap").await, Ok(Taken::Handled));
        assert_eq!(inbound.shown(), ["tap: Answer submitted"]);
    }

    #[tokio::test]
    async fn a_conversation_no_recipient_has_is_told_its_block_without_the_engine() {
        let inbound = Recording::new(true, None);
        // The engine stand-in takes an hour: the introduction never waits for it.
        let driver = driver(&inbound, Duration::from_secs(3600));
        let taken = tokio::time::timeout(Duration::from_secs(5), driver.take(&"hello")).await;
        assert_eq!(taken, Ok(Ok(Taken::Handled)));
        assert_eq!(
            inbound.shown(),
            ["hello: [recipients.alice]\nchannel = \"test\"\ndisplay_name = \"Alice\"\nchat_id = \"hello\""]
        );
        // A recipient's conversation goes to the engine as always.
        let quick = Recording::new(true, None);
        assert_eq!(driver_of(&quick).take(&"known").await, Ok(Taken::Handled));
        assert_eq!(quick.shown(), ["known: Answer submitted"]);
    }

    /// Someone typing into the bot's DM gets the block once, not after
    /// every message; asking for it (a greeting) always gets it.
    #[tokio::test]
    async fn a_stranger_is_told_the_block_once_unasked_and_whenever_they_ask() {
        let inbound = Recording::new(true, None);
        let driver = driver_of(&inbound);
        for _ in 0..3 {
            assert_eq!(driver.take(&"hello").await, Ok(Taken::Handled));
        }
        let shown = inbound.shown();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(shown[0].starts_with("hello: [recipients.alice]"), "{shown:?}");
        assert_eq!(shown[1..], ["hello: Nothing", "hello: Nothing"]);
        // Another conversation is told its own block.
        assert_eq!(driver.take(&"hi").await, Ok(Taken::Handled));
        assert!(
            inbound.shown()[3].starts_with("hi: [recipients.alice]"),
            "{:?}",
            inbound.shown()
        );
        // A greeting asks for it: told again at once.
        assert_eq!(driver.take(&"greet").await, Ok(Taken::Handled));
        assert!(
            inbound.shown()[4].starts_with("greet: [recipients.alice]"),
            "{:?}",
            inbound.shown()
        );
        assert_eq!(driver.take(&"greet").await, Ok(Taken::Handled));
        assert!(
            inbound.shown()[5].starts_with("greet: [recipients.alice]"),
            "{:?}",
            inbound.shown()
        );
    }

    fn driver_of(inbound: &Arc<Recording>) -> Driver<Recording> {
        driver(inbound, Duration::ZERO)
    }

    #[tokio::test]
    async fn an_unstored_event_is_not_acknowledged_where_the_platform_redelivers() {
        let inbound = Recording::new(true, None);
        let result = driver(&inbound, Duration::ZERO).take(&"fail").await;
        assert!(matches!(result, Err(InboundError::Unavailable { .. })), "{result:?}");
        assert!(
            inbound.shown().is_empty(),
            "nothing shown: the platform will send it again"
        );
    }

    #[tokio::test]
    async fn an_unstored_event_the_platform_will_not_redeliver_tells_the_person_to_retry() {
        let inbound = Recording::new(false, None);
        assert_eq!(
            driver(&inbound, Duration::ZERO).take(&"fail").await,
            Ok(Taken::NotSaved)
        );
        assert_eq!(inbound.shown(), ["fail: not saved, try again"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_engine_is_deferred_within_the_budget_then_answered() {
        let inbound = Recording::new(false, Some(Duration::from_millis(2500)));
        let started = tokio::time::Instant::now();
        assert_eq!(
            driver(&inbound, Duration::from_secs(5)).take(&"tap").await,
            Ok(Taken::Handled)
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(inbound.shown(), ["deferred tap", "tap: Answer submitted"]);
        // A quick engine is not deferred.
        let quick = Recording::new(false, Some(Duration::from_millis(2500)));
        driver(&quick, Duration::from_millis(10)).take(&"tap").await.ok();
        assert_eq!(quick.shown(), ["tap: Answer submitted"]);
    }
}
