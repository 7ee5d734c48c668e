//! The channel contract between the engine and a platform adapter
//! (`docs/adapter-spec.md` states it as MUST/SHOULD rules).
//!
//! Outbound, the engine calls a [`Channel`]: deliver a [`Presentation`] (an
//! [`Outgoing`] prompt), then edit it into its summary. Inbound, the adapter decodes each
//! platform event into an [`InboundEvent`] and hands it to an [`InboundSink`]
//! (the engine), which answers with a [`Reaction`] that the adapter shows in
//! its platform's way — a callback answer, an ephemeral message, a modal, a form.
//! The adapter never decides what a reply means.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Locale;
use crate::form::{Form, FormValue};
use crate::layout::Summary;
use crate::render::{Capabilities, Presentation};
use crate::token::QuestionId;

/// Where a prompt goes: a conversation, and optionally a thread in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Destination {
    /// The platform's conversation id: a Telegram chat id, a Discord channel
    /// id, a Slack channel id, a web recipient's name.
    pub conversation: String,
    /// A thread inside it: a Telegram forum topic (`message_thread_id`), a
    /// Slack thread (`thread_ts`), a Discord thread channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// A message the platform stored, as the adapter can find it again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRef {
    /// The conversation it is in.
    pub conversation: String,
    /// The platform's message id (Telegram `message_id`, Discord snowflake,
    /// Slack `ts`).
    pub message: String,
}

/// What [`Channel::deliver`] sent: every message of the prompt, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Delivery {
    /// The messages; the first is the one edited into the summary. Its
    /// conversation is the question's conversation: where taps and replies
    /// come from (a Discord DM or a Slack IM has an id of its own, not the
    /// user id the recipient was configured with).
    pub messages: Vec<MessageRef>,
    /// Whether every part of the prompt went out. A delivery cut short by an
    /// error is kept (so that the messages already sent are neither sent
    /// again nor forgotten) and completed by the next attempt.
    #[serde(default = "complete", skip_serializing_if = "is_complete")]
    pub complete: bool,
}

// Deliveries stored before `complete` existed were all complete.
fn complete() -> bool {
    true
}

// `&bool` is serde's signature for `skip_serializing_if`.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_complete(complete: &bool) -> bool {
    *complete
}

impl Delivery {
    /// A complete delivery of these messages.
    pub fn new(messages: Vec<MessageRef>) -> Self {
        Self {
            messages,
            complete: true,
        }
    }

    /// The messages that went out before an error stopped the delivery.
    pub fn partial(messages: Vec<MessageRef>) -> Self {
        Self {
            messages,
            complete: false,
        }
    }

    /// The delivery of a channel that sends nothing
    /// ([`Channel::sends_nothing`]): one entry, named by the question, in
    /// the destination's conversation.
    pub fn in_place(question: &QuestionId, to: &Destination) -> Self {
        Self::new(vec![MessageRef {
            conversation: to.conversation.clone(),
            message: question.to_string(),
        }])
    }

    /// The conversation the prompt was delivered to (its first message's).
    pub fn conversation(&self) -> Option<&str> {
        self.messages.first().map(|m| m.conversation.as_str())
    }
}

/// A prompt to deliver, as [`Channel::deliver`] receives it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Outgoing<'a> {
    /// The question: the idempotency key of the delivery (with the part's
    /// index), for platforms that take one (Discord's `nonce`).
    pub question: &'a QuestionId,
    /// Where.
    pub to: &'a Destination,
    /// What.
    pub prompt: &'a Presentation,
    /// The messages an earlier attempt sent already, in order: the adapter
    /// sends only the parts after them, and returns them with the rest.
    pub sent: &'a [MessageRef],
}

impl<'a> Outgoing<'a> {
    /// A first attempt: nothing sent yet.
    pub fn new(question: &'a QuestionId, to: &'a Destination, prompt: &'a Presentation) -> Self {
        Self {
            question,
            to,
            prompt,
            sent: &[],
        }
    }

    /// A later attempt, after these messages went out.
    #[must_use]
    pub fn after(mut self, sent: &'a [MessageRef]) -> Self {
        self.sent = sent;
        self
    }

    /// How many messages the prompt is.
    pub fn part_count(&self) -> usize {
        match self.prompt {
            Presentation::Buttons(_) => 1,
            Presentation::Text(text) => text.parts.len(),
        }
    }
}

/// A delivery that failed, with what it had sent before it did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
#[non_exhaustive]
pub struct DeliveryError {
    /// Why it stopped.
    pub error: ChannelError,
    /// Every message of the prompt that is out, the earlier attempts'
    /// included ([`Delivery::partial`]).
    pub delivery: Delivery,
}

impl DeliveryError {
    /// `error`, after these messages went out.
    pub fn new(error: ChannelError, sent: Vec<MessageRef>) -> Self {
        Self {
            error,
            delivery: Delivery::partial(sent),
        }
    }
}

impl From<ChannelError> for DeliveryError {
    /// An error before anything was sent.
    fn from(error: ChannelError) -> Self {
        Self::new(error, Vec::new())
    }
}

/// The person behind an inbound event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserRef {
    /// The platform's stable user id.
    pub id: String,
    /// How the platform names them, for summaries ("Answered by Alice").
    pub display_name: String,
}

impl UserRef {
    /// The person with platform id `id`, named `display_name`.
    pub fn new(id: impl Into<String>, display_name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            display_name: display_name.into(),
        }
    }
}

/// The kind of conversation an event came from (spec §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationKind {
    /// One person and the bot: an unthreaded reply answers the newest
    /// pending question there.
    Direct,
    /// Several people: only a reply to the question's message counts.
    Group,
}

/// One event from a platform, decoded and normalized by its adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundEvent {
    /// The platform's id for this delivery (Telegram `update_id`, a Discord
    /// interaction id, a Slack `event_id`), so that a redelivery is known.
    pub event_id: String,
    /// Who acted.
    pub user: UserRef,
    /// Where.
    pub conversation: String,
    /// Direct or group.
    pub conversation_kind: ConversationKind,
    /// The thread it is in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// What happened.
    pub kind: InboundKind,
}

/// What happened, in platform-neutral terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum InboundKind {
    /// A tap on one of askgate's buttons, with the button's token as sent.
    ButtonPressed {
        /// The payload (`callback_data`, `custom_id`, `action_id` / value).
        token: String,
        /// The message the button is on.
        message: MessageRef,
    },
    /// A typed message.
    TextReply {
        /// The message itself.
        message: MessageRef,
        /// Its text, as typed.
        text: String,
        /// The message it replies to (Telegram reply, Discord reply,
        /// Slack thread parent), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<MessageRef>,
    },
    /// Text submitted through a free-text input askgate opened (a modal).
    FreeTextSubmitted {
        /// The token of the Other… button that opened it.
        token: String,
        /// What the person typed.
        text: String,
    },
    /// A form submitted (Answer…): one value per question field.
    FormSubmitted {
        /// The token of the Answer… button that opened it.
        token: String,
        /// The fields as submitted, named by question id.
        values: Vec<FormValue>,
    },
    /// The person greeted the bot or asked what it is, rather than answer:
    /// Telegram's `/start` or `/help`, a mention of the bot saying `start`
    /// ([`crate::channel`] leaves which words count to the adapter). Where
    /// the conversation is no recipient's, the adapter answers it with the
    /// recipient block to configure (`docs/adapter-spec.md` §4.10); otherwise
    /// the engine reads it as a message that is no answer.
    Greeting {
        /// The message itself.
        message: MessageRef,
    },
    /// A message with no text (a sticker, a photo, a voice note).
    NonText {
        /// The message itself.
        message: MessageRef,
        /// The message it replies to, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<MessageRef>,
    },
}

/// How the engine wants an inbound event acknowledged.
///
/// A reaction that changes nothing (Other…, Answer…, a refusal) is decided
/// without a store write: Discord and Slack want a modal as the first
/// response to a tap, within 3 seconds (`docs/adapter-spec.md` §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reaction {
    /// Acknowledge silently (a tap still gets its platform acknowledgement).
    Nothing,
    /// A short notice only the acting person sees: a Telegram callback answer
    /// (an alert when `alert`), a Discord or Slack ephemeral message. On a
    /// typed message without private notices, a reply to it.
    Notice {
        /// The notice.
        text: String,
        /// Whether it must interrupt (a refusal) rather than flash by.
        alert: bool,
    },
    /// A reply in the conversation, to the person's message (a partial answer
    /// confirmed, a message that is not an answer).
    Reply {
        /// The reply.
        text: String,
    },
    /// Open a free-text input for the acting person (Other…): a Telegram
    /// force-reply aimed at them, or a Discord / Slack modal.
    AskFreeText {
        /// The question it belongs to; a force-reply message sent for it is
        /// reported back with [`InboundSink::attach`].
        question: QuestionId,
        /// The token a modal submission carries back.
        token: String,
        /// The input's title.
        title: String,
        /// The input's placeholder.
        placeholder: String,
        /// The label of the button that sends it (where the input is a dialog).
        submit: String,
    },
    /// Open a form with one field per question for the acting person
    /// (Answer…): a Discord modal, a Slack view. Its submission comes back as
    /// [`InboundKind::FormSubmitted`] with the form's token.
    AskForm {
        /// The question it belongs to.
        question: QuestionId,
        /// The form.
        form: Form,
    },
    /// A reply in the conversation that shows `snippet` as a block of code
    /// (monospaced, copied as is) after `text`: the recipient block a
    /// conversation that is no recipient's is told to configure.
    Introduce {
        /// What the conversation is told, as a sentence.
        text: String,
        /// The configuration to paste (TOML), shown verbatim.
        snippet: String,
    },
}

/// Why a channel could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The platform refused for good: unknown chat, bot blocked, no access.
    /// The question resolves as `delivery_failed` at once.
    #[error("the platform refused: {reason}")]
    Rejected {
        /// The platform's reason, with no secret in it.
        reason: String,
    },
    /// The bot's credentials were refused.
    #[error("the platform refused the bot's credentials")]
    Unauthorized,
    /// Rate limited: try again after the platform's delay.
    #[error("rate limited by the platform; retry after {retry_after:?}")]
    RateLimited {
        /// How long the platform asked to wait.
        retry_after: Duration,
    },
    /// A passing failure (timeout, 5xx, dropped connection): try again.
    #[error("the platform is unavailable: {reason}")]
    Unavailable {
        /// What failed.
        reason: String,
    },
}

impl ChannelError {
    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Unavailable { .. })
    }
}

/// A short message that follows a question: a reminder under its prompt, a
/// word on an earlier copy that it was escalated, a note to an admin that a
/// question could not reach its person ([`Channel::nudge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Nudge<'a> {
    /// Where: the conversation (and thread) of the question's copy, or an
    /// admin's recipient's destination.
    pub to: &'a Destination,
    /// The message it replies to (the prompt's first message): a Telegram
    /// reply, a Discord reply, a Slack thread reply. `None`: a message of its
    /// own in `to`.
    pub reply_to: Option<&'a MessageRef>,
    /// askgate's own words, plain: the adapter escapes them for its markup.
    pub text: &'a str,
    /// The people it mentions, before the text, by platform user id (the
    /// display name is what a platform that mentions by link shows). Only
    /// these are mentioned: everything else in the message stays inert.
    pub mention: &'a [UserRef],
}

impl<'a> Nudge<'a> {
    /// A nudge of `text` to `to`, replying to nothing and mentioning nobody.
    pub fn new(to: &'a Destination, text: &'a str) -> Self {
        Self {
            to,
            reply_to: None,
            text,
            mention: &[],
        }
    }

    /// The same nudge as a reply to `message`.
    #[must_use]
    pub fn replying_to(mut self, message: Option<&'a MessageRef>) -> Self {
        self.reply_to = message;
        self
    }

    /// The same nudge, mentioning `people`.
    #[must_use]
    pub fn mentioning(mut self, people: &'a [UserRef]) -> Self {
        self.mention = people;
        self
    }
}

/// A platform adapter, as the engine uses it.
#[async_trait]
pub trait Channel: Send + Sync + 'static {
    /// The channel's name in the configuration, for logs (`channel` field).
    fn name(&self) -> &str;

    /// What people call the platform (`Telegram`): the summary of a question
    /// answered there names it ("Answered by Alice in Telegram"), so that
    /// askgate itself names no platform. askgate's own page is worded by
    /// askgate in each reader's language instead ([`crate::Place::Page`]).
    fn display_name(&self) -> &str;

    /// What the platform can show; the engine renders with it.
    fn capabilities(&self) -> &Capabilities;

    /// Sends a prompt: the parts after `outgoing.sent`, in order. The
    /// adapter escapes all text for its markup and disables mentions; it
    /// returns every message of the prompt (`outgoing.sent` first). When an
    /// error stops it, the error carries every message that is out, so that
    /// the next attempt resumes instead of posting the prompt twice.
    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError>;

    /// Edits a delivered prompt in place into its ended form: the buttons
    /// removed, the longest form of `summary` that fits the message
    /// ([`Summary::within`], counted after escaping) added under the original
    /// text, which gives way where both do not fit. Never deletes.
    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError>;

    /// Sends a [`Nudge`]: one short message, a reply to `nudge.reply_to`
    /// when given (in its thread), mentioning exactly `nudge.mention`. The
    /// default sends nothing: a channel with no messages of its own
    /// (askgate's page shows a reminder itself). Every chat adapter
    /// implements it.
    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        let _ = nudge;
        Ok(())
    }

    /// Whether delivering sends nothing anywhere and ending edits nothing:
    /// askgate's own page, which shows every question from the store. The
    /// engine then stores [`Delivery::in_place`] with the question, in the
    /// question's own commit, and calls neither [`Channel::deliver`] nor
    /// [`Channel::finish`]: no commit is spent on bookkeeping that a crash
    /// could not lose.
    fn sends_nothing(&self) -> bool {
        false
    }

    /// The platform user id of the one person a recipient's `destination`
    /// is a direct conversation with, as configured (a Telegram private
    /// chat, whose id is its user's; a Discord or Slack user askgate opens
    /// the DM with); `None` for a group, a channel, or a destination that
    /// names no person. The engine takes answers in a direct conversation
    /// of a recipient with no `answerers` from that person only (spec §6),
    /// and from no one where this is `None`: a platform that lets no
    /// stranger into a private chat is not relied on to.
    fn direct_person(&self, destination: &Destination) -> Option<String> {
        let _ = destination;
        None
    }
}

/// Why an inbound event could not be applied. The event's effect is not
/// stored: the adapter MUST NOT acknowledge it to the platform (no cursor
/// moved past it, no HTTP 200), so that the platform delivers it again. A
/// platform that never delivers an event again (a Discord interaction, a
/// Slack button click) shows the person [`InboundError::notice`] instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboundError {
    /// askgate could not store the event's effect (its store failed); trying
    /// the same event again later can succeed.
    #[error("the event could not be stored: {reason}")]
    Unavailable {
        /// What failed, for the log.
        reason: String,
        /// What to tell the person, in their language ("could not be saved,
        /// please try again").
        notice: String,
    },
}

impl InboundError {
    /// The notice to show the person whose event was not saved.
    pub fn notice(&self) -> &str {
        match self {
            Self::Unavailable { notice, .. } => notice,
        }
    }
}

/// Where an adapter hands inbound events: the engine.
#[async_trait]
pub trait InboundSink: Send + Sync + 'static {
    /// Applies one event, durably, and says how to acknowledge it. The
    /// adapter acknowledges the platform (and moves its cursor past the
    /// event) only after this returned `Ok`; on `Err` it acknowledges
    /// nothing and lets the platform deliver the event again.
    async fn handle(&self, channel: &str, event: InboundEvent) -> Result<Reaction, InboundError>;

    /// Records that `message` belongs to `question` too (a force-reply sent
    /// for Other…), so that a reply to it answers the question.
    async fn attach(&self, channel: &str, question: &QuestionId, message: MessageRef);

    /// The channel's saved position in its platform's event stream (a
    /// Telegram update offset), if it saved one.
    async fn cursor(&self, channel: &str) -> Option<String>;

    /// Saves the channel's position; an adapter moves it past an event only
    /// after [`InboundSink::handle`] returned for it.
    async fn save_cursor(&self, channel: &str, cursor: &str);

    /// Whether no recipient on `channel` is addressed at `destination` (a
    /// recipient of a whole group covers its threads), and if so the
    /// language to tell that conversation how to become one. Decided from
    /// the configuration alone, with no store access.
    fn stranger(&self, channel: &str, destination: &Destination) -> Option<Locale>;
}
