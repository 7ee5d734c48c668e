//! Test doubles for askgate's own tests.
//!
//! [`FakeChannel`] is a channel that records everything the engine asks of it
//! and can be told to fail, so that engine tests exercise the real engine and
//! the real store with no platform. The fake platforms, each on
//! `127.0.0.1:0` and owned by its test: [`telegram::FakeTelegram`] (the Bot
//! API, with real `Update` samples), [`discord::FakeDiscord`] (REST, the
//! gateway and HTTP interactions), [`slack::FakeSlack`] (the Web API, Socket
//! Mode and signed HTTP delivery); what they share is in [`fake`].
//! [`conformance`] is the suite every adapter runs against its fake;
//! [`bench`](mod@bench) what the benchmarks share; [`postgres`] a test's own
//! schema on the test PostgreSQL; [`process`] an outside program run within a
//! time bound; [`synapse`] a real Synapse homeserver
//! (Matrix) on `127.0.0.1`, installed into a virtualenv under the target
//! directory. Nothing here is used outside tests.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, Destination, MessageRef, Nudge, Outgoing};
use askgate_core::render::{ButtonLimits, FormLimits, FreeTextInput};
use askgate_core::{Capabilities, Presentation, Summary};
use async_trait::async_trait;
use tokio::sync::Notify;

pub mod bench;
pub mod conformance;
pub mod discord;
pub mod fake;
pub mod postgres;
pub mod process;
pub mod slack;
pub mod synapse;
pub mod telegram;

/// One call the engine made on a [`FakeChannel`].
#[derive(Debug, Clone, PartialEq, Eq)]
// A recording for tests: a few calls each, so their size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Call {
    /// `deliver`, with what was delivered and the messages it "sent".
    Deliver {
        /// Where.
        to: Destination,
        /// What.
        presentation: Presentation,
        /// How many messages earlier attempts had sent already.
        already_sent: usize,
        /// The messages the fake reported.
        delivery: Delivery,
    },
    /// `finish`: the message edited into its summary.
    Finish {
        /// The delivery that was edited.
        delivery: Delivery,
        /// The summary.
        summary: String,
    },
    /// `nudge`: a reminder, an escalation's word, a note to an admin.
    Nudge {
        /// Where.
        to: Destination,
        /// The message it replied to.
        reply_to: Option<MessageRef>,
        /// The text.
        text: String,
        /// The platform ids of the people it mentioned.
        mention: Vec<String>,
    },
}

/// A channel that records calls and answers as it is told.
#[derive(Debug, Clone)]
pub struct FakeChannel {
    name: String,
    /// [`Channel::display_name`]: its name unless told otherwise
    /// ([`FakeChannel::displayed_as`]).
    display_name: String,
    capabilities: Capabilities,
    /// [`Channel::sends_nothing`], as askgate's own page.
    sends_nothing: bool,
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    calls: Mutex<Vec<Call>>,
    failures: Mutex<VecDeque<ChannelError>>,
    /// Failures of the next edits into summaries, in order.
    finish_failures: Mutex<VecDeque<ChannelError>>,
    /// A failure after this many parts of the next delivery went out.
    part_failure: Mutex<Option<(usize, ChannelError)>>,
    /// The conversation deliveries report instead of the destination's (a
    /// DM opened for a user id has an id of its own).
    delivered_to: Mutex<Option<String>>,
    /// How long a delivery takes to return after its messages are "sent".
    hold: Mutex<Option<std::time::Duration>>,
    next_message: Mutex<u64>,
    /// Direct conversation → the user it is with ([`FakeChannel::direct`]).
    people: Mutex<HashMap<String, String>>,
    /// Every `deliver` call, failed ones too.
    attempts: std::sync::atomic::AtomicUsize,
    changed: Notify,
}

impl FakeChannel {
    /// A fake with native buttons (as a chat platform has them).
    pub fn with_buttons(name: &str) -> Self {
        Self::new(
            name,
            Capabilities::text(4096)
                .with_buttons(ButtonLimits::new(25, 80, 64))
                .with_edits()
                .with_free_text(FreeTextInput::Modal)
                .with_private_notices(),
        )
    }

    /// A fake with buttons and forms (as Discord and Slack have them), where
    /// typed replies arrive or, with `typed_replies` false, never do.
    pub fn with_forms(name: &str, typed_replies: bool) -> Self {
        let capabilities = Capabilities::text(4096)
            .with_buttons(ButtonLimits::new(25, 80, 100))
            .with_edits()
            .with_free_text(FreeTextInput::Modal)
            .with_private_notices()
            .with_forms(FormLimits::new(5, 45, 45, 100));
        let capabilities = if typed_replies {
            capabilities
        } else {
            capabilities.without_typed_replies()
        };
        Self::new(name, capabilities)
    }

    /// A fake with these capabilities.
    pub fn new(name: &str, capabilities: Capabilities) -> Self {
        Self {
            name: name.to_owned(),
            display_name: name.to_owned(),
            capabilities,
            sends_nothing: false,
            state: Arc::default(),
        }
    }

    /// A fake that, like askgate's own page, sends nothing
    /// ([`Channel::sends_nothing`]): the engine should never call it.
    pub fn sending_nothing(name: &str) -> Self {
        Self {
            sends_nothing: true,
            ..Self::with_buttons(name)
        }
    }

    /// A fake whose platform people call `display_name` (a Telegram-like
    /// fake called `Telegram`): what summaries name it.
    #[must_use]
    pub fn displayed_as(mut self, display_name: &str) -> Self {
        display_name.clone_into(&mut self.display_name);
        self
    }

    /// Makes the next deliveries fail with these errors, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = ChannelError>) {
        lock(&self.state.failures).extend(errors);
    }

    /// Makes the next edits into summaries fail with these errors, in order
    /// (a failed edit is not recorded as a [`Call::Finish`]).
    pub fn fail_next_finishes(&self, errors: impl IntoIterator<Item = ChannelError>) {
        lock(&self.state.finish_failures).extend(errors);
    }

    /// Makes the next delivery fail with `error` after its first `parts`
    /// messages went out.
    pub fn fail_after_parts(&self, parts: usize, error: ChannelError) {
        *lock(&self.state.part_failure) = Some((parts, error));
    }

    /// Makes deliveries report `conversation` as where they went.
    pub fn deliver_into(&self, conversation: &str) {
        *lock(&self.state.delivered_to) = Some(conversation.to_owned());
    }

    /// Makes deliveries return `hold` after their messages are recorded as
    /// sent, as a platform's answer that is still on its way: a person can
    /// see (and tap) the prompt before askgate has stored where it went.
    pub fn hold_deliveries(&self, hold: std::time::Duration) {
        *lock(&self.state.hold) = Some(hold);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }

    /// Makes a recipient's destination `conversation` the direct
    /// conversation of user `user`: with no `answerers`, only they may
    /// answer there ([`Channel::direct_person`]). A fake names no one
    /// otherwise.
    pub fn direct(&self, conversation: &str, user: &str) {
        lock(&self.state.people).insert(conversation.to_owned(), user.to_owned());
    }

    /// How many times the engine asked for a delivery, failed ones (which
    /// leave no [`Call`]) included.
    pub fn delivery_attempts(&self) -> usize {
        self.state.attempts.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The deliveries so far.
    pub fn deliveries(&self) -> Vec<(Presentation, Delivery)> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Deliver {
                    presentation, delivery, ..
                } => Some((presentation, delivery)),
                Call::Finish { .. } | Call::Nudge { .. } => None,
            })
            .collect()
    }

    /// The summaries messages were edited into so far.
    pub fn summaries(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Finish { summary, .. } => Some(summary),
                Call::Deliver { .. } | Call::Nudge { .. } => None,
            })
            .collect()
    }

    /// The nudges sent so far: (where, the message replied to, the text,
    /// the people mentioned).
    pub fn nudges(&self) -> Vec<(Destination, Option<MessageRef>, String, Vec<String>)> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Nudge {
                    to,
                    reply_to,
                    text,
                    mention,
                } => Some((to, reply_to, text, mention)),
                Call::Deliver { .. } | Call::Finish { .. } => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the calls so far.
    pub async fn wait_for(&self, done: impl Fn(&[Call]) -> bool) {
        loop {
            let changed = self.state.changed.notified();
            if done(&lock(&self.state.calls)) {
                return;
            }
            changed.await;
        }
    }

    fn record(&self, call: Call) {
        lock(&self.state.calls).push(call);
        self.state.changed.notify_waiters();
    }

    fn message(&self, conversation: &str) -> MessageRef {
        let mut next = lock(&self.state.next_message);
        *next += 1;
        MessageRef {
            conversation: conversation.to_owned(),
            message: next.to_string(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl Channel for FakeChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        &self.display_name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn sends_nothing(&self) -> bool {
        self.sends_nothing
    }

    fn direct_person(&self, destination: &Destination) -> Option<String> {
        lock(&self.state.people).get(&destination.conversation).cloned()
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        self.state.attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let failure = lock(&self.state.failures).pop_front();
        if let Some(error) = failure {
            self.state.changed.notify_waiters();
            return Err(DeliveryError::new(error, outgoing.sent.to_vec()));
        }
        let conversation = lock(&self.state.delivered_to)
            .clone()
            .unwrap_or_else(|| outgoing.to.conversation.clone());
        let part_failure = lock(&self.state.part_failure).take();
        let mut sent = outgoing.sent.to_vec();
        for index in sent.len()..outgoing.part_count() {
            if let Some((parts, error)) = &part_failure
                && index >= *parts
            {
                self.record(Call::Deliver {
                    to: outgoing.to.clone(),
                    presentation: outgoing.prompt.clone(),
                    already_sent: outgoing.sent.len(),
                    delivery: Delivery::partial(sent.clone()),
                });
                return Err(DeliveryError::new(error.clone(), sent));
            }
            sent.push(self.message(&conversation));
        }
        let delivery = Delivery::new(sent);
        self.record(Call::Deliver {
            to: outgoing.to.clone(),
            presentation: outgoing.prompt.clone(),
            already_sent: outgoing.sent.len(),
            delivery: delivery.clone(),
        });
        let hold = *lock(&self.state.hold);
        if let Some(hold) = hold {
            tokio::time::sleep(hold).await;
        }
        Ok(delivery)
    }

    async fn finish(&self, delivery: &Delivery, _prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        if let Some(error) = lock(&self.state.finish_failures).pop_front() {
            return Err(error);
        }
        self.record(Call::Finish {
            delivery: delivery.clone(),
            summary: summary.full().to_owned(),
        });
        Ok(())
    }

    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        if self.sends_nothing {
            return Ok(());
        }
        self.record(Call::Nudge {
            to: nudge.to.clone(),
            reply_to: nudge.reply_to.cloned(),
            text: nudge.text.to_owned(),
            mention: nudge.mention.iter().map(|person| person.id.clone()).collect(),
        });
        Ok(())
    }
}
