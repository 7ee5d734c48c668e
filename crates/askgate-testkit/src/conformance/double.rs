//! [`TestDouble`]: a small in-memory chat platform with an adapter of its
//! own, for the inbound suite to run against without any network, and to
//! show that the suite catches an adapter that breaks the acknowledgement
//! rule (`docs/adapter-spec.md` §4.6).
//!
//! Its adapter is built like a real one: it implements [`Channel`] (over a
//! [`FakeChannel`]: buttons, edits, modals, private notices, forms) and
//! [`Inbound`], and a pump hands each queued event to
//! [`askgate_adapter::Driver::take`], taking it off the queue only once
//! `take` returned `Ok` — unless [`DoubleSettings::acknowledge_before_handle`]
//! breaks it. A person's actions queue events; what the driver shows for
//! each ([`Inbound::react`]) is what that person saw.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_adapter::{Driver, Inbound, Introduction};
use askgate_core::channel::{
    Channel, ChannelError, ConversationKind, Delivery, DeliveryError, InboundEvent, InboundKind, InboundSink,
    MessageRef, Nudge, Outgoing, Reaction, UserRef,
};
use askgate_core::form::FormValue;
use askgate_core::{Capabilities, Limit, Presentation, Summary};
use askgate_engine::{Engine, Recipient};
use askgate_store::QuestionRecord;
use async_trait::async_trait;
use tokio::sync::watch;

use super::inbound::{GROUP, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
use super::nudges::Posted;
use super::outbound::Shown;
use crate::FakeChannel;

/// The channel's configured name.
const NAME: &str = "double";
/// The person's direct conversation with the bot.
const DIRECT: &str = "dm-alice";
/// The group where the recipient [`GROUP`] is asked.
const ROOM: &str = "room-release";
/// The pause before an unacknowledged event is delivered again.
const REDELIVERY_PAUSE: Duration = Duration::from_millis(100);

fn user(who: Who) -> UserRef {
    match who {
        Who::Recipient => UserRef {
            id: "u-alice".into(),
            display_name: "Alice".into(),
        },
        Who::Stranger => UserRef {
            id: "u-mallory".into(),
            display_name: "Mallory".into(),
        },
    }
}

/// How the double behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoubleSettings {
    /// Whether an event not acknowledged is delivered again (Telegram, the
    /// Slack Events API) or never (a Discord interaction).
    pub redelivers: bool,
    /// The platform's first-response budget (Discord's 3 s), if any.
    pub first_response_within: Option<Duration>,
    /// The deliberate bug: the event is taken off the queue (acknowledged)
    /// before the driver's `take` returned, so an event the engine could not
    /// store is lost.
    pub acknowledge_before_handle: bool,
    /// Whether the adapter implements `Channel::nudge`; without it, the
    /// trait's default sends nothing (the bug the nudge suite catches).
    pub nudges: bool,
}

impl Default for DoubleSettings {
    /// A correct platform that redelivers and has no budget.
    fn default() -> Self {
        Self {
            redelivers: true,
            first_response_within: None,
            acknowledge_before_handle: false,
            nudges: true,
        }
    }
}

/// One event as the double's platform delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoubleUpdate {
    id: u64,
    user: UserRef,
    conversation: String,
    kind: InboundKind,
}

/// What showing a reaction to an update needs: the update, and who acted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoubleAck {
    update: u64,
    user: String,
}

/// The double: its platform and its adapter. Clones share one platform.
#[derive(Debug, Clone)]
pub struct TestDouble {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    settings: DoubleSettings,
    channel: FakeChannel,
    /// Events not yet acknowledged, the oldest first.
    queue: Mutex<VecDeque<DoubleUpdate>>,
    /// What the acting person saw, by update id.
    shown: Mutex<HashMap<u64, Seen>>,
    /// The token of the modal or form open for a person, by (user id, question id).
    open: Mutex<HashMap<(String, String), String>>,
    deferrals: AtomicUsize,
    next_update: AtomicU64,
    next_message: AtomicU64,
    /// Bumped whenever the queue or what was shown changes.
    changes: watch::Sender<u64>,
}

impl TestDouble {
    /// A double that behaves as `settings` say.
    pub fn new(settings: DoubleSettings) -> Self {
        let (changes, _) = watch::channel(0);
        let channel = FakeChannel::with_forms(NAME, true);
        channel.direct(DIRECT, &user(Who::Recipient).id);
        Self {
            shared: Arc::new(Shared {
                settings,
                channel,
                queue: Mutex::new(VecDeque::new()),
                shown: Mutex::new(HashMap::new()),
                open: Mutex::new(HashMap::new()),
                deferrals: AtomicUsize::new(0),
                next_update: AtomicU64::new(1),
                next_message: AtomicU64::new(1),
                changes,
            }),
        }
    }

    /// The events not yet acknowledged.
    pub fn unacknowledged(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// How often the adapter deferred its first response.
    pub fn deferred(&self) -> usize {
        self.shared.deferrals.load(Ordering::SeqCst)
    }

    fn changed(&self) {
        self.shared.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// `who` does `kind` in `conversation`: an event is queued; returns its id.
    fn act(&self, who: Who, conversation: &str, kind: InboundKind) -> u64 {
        let id = self.shared.next_update.fetch_add(1, Ordering::SeqCst);
        lock(&self.shared.queue).push_back(DoubleUpdate {
            id,
            user: user(who),
            conversation: conversation.to_owned(),
            kind,
        });
        self.changed();
        id
    }

    /// What the person who caused update `id` saw, once the adapter showed
    /// it; [`Seen::Nothing`] if it showed nothing within [`PATIENCE`].
    async fn seen(&self, id: u64) -> Seen {
        let mut changes = self.shared.changes.subscribe();
        let shown = async {
            loop {
                if let Some(seen) = lock(&self.shared.shown).get(&id) {
                    return seen.clone();
                }
                if changes.changed().await.is_err() {
                    return Seen::Nothing;
                }
            }
        };
        tokio::time::timeout(PATIENCE, shown).await.unwrap_or(Seen::Nothing)
    }

    /// Where `question` was delivered, and its first message.
    fn message_of(question: &QuestionRecord) -> MessageRef {
        question
            .delivery()
            .and_then(|delivery| delivery.messages.first().cloned())
            .unwrap_or_else(|| panic!("question {} was not delivered", question.id))
    }

    fn open_token(&self, who: Who, question: &QuestionRecord) -> String {
        lock(&self.shared.open)
            .get(&(user(who).id, question.id.to_string()))
            .cloned()
            .unwrap_or_else(|| panic!("nothing is open for {who:?} on question {}", question.id))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the queued events in order, each through the driver, and
/// acknowledges one only once `take` returned `Ok`; an event not
/// acknowledged is delivered again after a pause, or, on a platform that
/// never redelivers, dropped.
async fn pump(driver: Driver<TestDouble>) {
    let double = Arc::clone(driver.inbound());
    let settings = double.shared.settings;
    let mut changes = double.shared.changes.subscribe();
    loop {
        let next = {
            let mut queue = lock(&double.shared.queue);
            if settings.acknowledge_before_handle {
                queue.pop_front()
            } else {
                queue.front().cloned()
            }
        };
        let Some(update) = next else {
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        };
        let taken = driver.take(&update).await;
        if taken.is_ok() || !settings.redelivers {
            lock(&double.shared.queue).retain(|queued| queued.id != update.id);
            double.changed();
        } else {
            tokio::time::sleep(REDELIVERY_PAUSE).await;
        }
    }
}

#[async_trait]
impl Channel for TestDouble {
    fn name(&self) -> &str {
        NAME
    }

    fn display_name(&self) -> &str {
        self.shared.channel.display_name()
    }

    fn capabilities(&self) -> &Capabilities {
        self.shared.channel.capabilities()
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        self.shared.channel.deliver(outgoing).await
    }

    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        self.shared.channel.finish(delivery, prompt, summary).await
    }

    fn direct_person(&self, destination: &askgate_core::channel::Destination) -> Option<String> {
        self.shared.channel.direct_person(destination)
    }

    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        if !self.shared.settings.nudges {
            return Ok(());
        }
        // As a platform would: each person mentioned once, the text within
        // the double's message limit (it has no markup to escape).
        let mut mention: Vec<UserRef> = Vec::new();
        for person in nudge.mention {
            if !mention.iter().any(|known| known.id == person.id) {
                mention.push(person.clone());
            }
        }
        let text = Limit::code_points(self.capabilities().max_message_chars).ellipsize(nudge.text);
        let sent = Nudge::new(nudge.to, &text)
            .replying_to(nudge.reply_to)
            .mentioning(&mention);
        self.shared.channel.nudge(&sent).await
    }
}

#[async_trait]
impl Inbound for TestDouble {
    type Update = DoubleUpdate;
    type Ack = DoubleAck;

    fn name(&self) -> &str {
        NAME
    }

    fn decode(&self, update: &DoubleUpdate) -> Option<(InboundEvent, DoubleAck)> {
        let conversation_kind = if update.conversation == ROOM {
            ConversationKind::Group
        } else {
            ConversationKind::Direct
        };
        let event = InboundEvent {
            event_id: update.id.to_string(),
            user: update.user.clone(),
            conversation: update.conversation.clone(),
            conversation_kind,
            thread: None,
            kind: update.kind.clone(),
        };
        let ack = DoubleAck {
            update: update.id,
            user: update.user.id.clone(),
        };
        Some((event, ack))
    }

    fn redelivers(&self, _event: &InboundEvent) -> bool {
        self.shared.settings.redelivers
    }

    /// A conversation is addressed by its id (`conversation`); in a group
    /// the writer answers.
    fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
        let mut keys = vec![("conversation", toml::Value::String(event.conversation.clone()))];
        if event.conversation_kind == ConversationKind::Group {
            keys.push((
                "answerers",
                toml::Value::Array(vec![toml::Value::String(event.user.id.clone())]),
            ));
        }
        Some(Introduction {
            destination: askgate_core::channel::Destination {
                conversation: event.conversation.clone(),
                thread: None,
            },
            keys,
        })
    }

    fn first_response_within(&self) -> Option<Duration> {
        self.shared.settings.first_response_within
    }

    async fn defer(&self, _ack: &DoubleAck) {
        self.shared.deferrals.fetch_add(1, Ordering::SeqCst);
    }

    async fn react(&self, ack: DoubleAck, reaction: Reaction, _sink: &Arc<dyn InboundSink>) {
        let seen = match reaction {
            Reaction::Notice { text, alert } => Seen::Notice { text, alert },
            Reaction::Reply { text } => Seen::Reply { text },
            Reaction::Introduce { text, snippet } => Seen::Reply {
                text: format!("{text}\n{snippet}"),
            },
            Reaction::AskFreeText { question, token, .. } => {
                lock(&self.shared.open).insert((ack.user, question.to_string()), token);
                Seen::FreeTextInput
            }
            Reaction::AskForm { question, form } => {
                lock(&self.shared.open).insert((ack.user, question.to_string()), form.token);
                Seen::Form {
                    fields: form.fields.into_iter().map(|field| field.id).collect(),
                }
            }
            // Nothing, or a kind this adapter does not know: only the acknowledgement.
            _ => Seen::Nothing,
        };
        lock(&self.shared.shown).insert(ack.update, seen);
        self.changed();
    }
}

#[async_trait]
impl PersonPlatform for TestDouble {
    fn redelivers(&self, event: &InboundEvent) -> bool {
        Inbound::redelivers(self, event)
    }

    fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(self.clone())
    }

    fn recipients(&self) -> Vec<Recipient> {
        vec![
            recipient(PERSON, "Alice", NAME, DIRECT, &[]),
            recipient(GROUP, "Release team", NAME, ROOM, &[&user(Who::Recipient).id]),
        ]
    }

    async fn connect(&self, _engine: Engine, sink: Arc<dyn InboundSink>) {
        tokio::spawn(pump(Driver::new(Arc::new(self.clone()), sink)));
    }

    async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
        let message = Self::message_of(question);
        let kind = InboundKind::ButtonPressed {
            token: token.to_owned(),
            message: message.clone(),
        };
        let id = self.act(who, &message.conversation, kind);
        self.seen(id).await
    }

    async fn type_reply(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
        let replied = Self::message_of(question);
        let sent = self.shared.next_message.fetch_add(1, Ordering::SeqCst);
        let kind = InboundKind::TextReply {
            message: MessageRef {
                conversation: replied.conversation.clone(),
                message: format!("person-{sent}"),
            },
            text: text.to_owned(),
            reply_to: Some(replied.clone()),
        };
        let id = self.act(who, &replied.conversation, kind);
        self.seen(id).await
    }

    async fn write_privately(&self, who: Who, text: &str) -> Seen {
        let conversation = format!("dm-{}", user(who).id);
        let sent = self.shared.next_message.fetch_add(1, Ordering::SeqCst);
        let kind = InboundKind::TextReply {
            message: MessageRef {
                conversation: conversation.clone(),
                message: format!("person-{sent}"),
            },
            text: text.to_owned(),
            reply_to: None,
        };
        let id = self.act(who, &conversation, kind);
        self.seen(id).await
    }

    async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
        // The modal carries back the token it was opened with.
        let kind = InboundKind::FreeTextSubmitted {
            token: self.open_token(who, question),
            text: text.to_owned(),
        };
        let id = self.act(who, &Self::message_of(question).conversation, kind);
        self.seen(id).await
    }

    async fn submit_form(&self, who: Who, question: &QuestionRecord, _token: &str, values: Vec<FormValue>) -> Seen {
        // The form carries back the token it was opened with (its custom id).
        let kind = InboundKind::FormSubmitted {
            token: self.open_token(who, question),
            values,
        };
        let id = self.act(who, &Self::message_of(question).conversation, kind);
        self.seen(id).await
    }

    fn deferrals(&self) -> Option<usize> {
        self.shared.settings.first_response_within.map(|_| self.deferred())
    }

    /// The double keeps no platform messages to read back.
    async fn shown(&self, _message: &MessageRef) -> Option<Shown> {
        None
    }

    fn user(&self, who: Who) -> UserRef {
        user(who)
    }

    /// The double keeps its nudges as its messages (its prompts are not
    /// read back): each in the conversation of the message it replies to,
    /// or of its destination, with no markup and the people it mentioned.
    async fn posted(&self, conversation: &str) -> Option<Vec<Posted>> {
        let posted = self
            .shared
            .channel
            .nudges()
            .into_iter()
            .enumerate()
            .filter(|(_, (to, reply_to, ..))| {
                reply_to
                    .as_ref()
                    .map_or(&to.conversation, |message| &message.conversation)
                    == conversation
            })
            .map(|(index, (_, reply_to, text, mentions))| Posted {
                message: format!("nudge-{index}"),
                reply_to: reply_to.map(|message| message.message),
                text,
                mentions,
            })
            .collect();
        Some(posted)
    }

    /// The double is no platform: no published spec to break.
    fn violations(&self) -> Vec<String> {
        Vec::new()
    }
}
