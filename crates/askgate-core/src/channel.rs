//! The channel contract between the engine and a platform adapter
//! (`docs/adapter-spec.md` states it as MUST/SHOULD rules).
//!
//! Outbound, the engine calls a [`Channel`]: deliver a [`Presentation`], edit
//! it into its summary, post a short reply. Inbound, the adapter decodes each
//! platform event into an [`InboundEvent`] and hands it to an [`InboundSink`]
//! (the engine), which answers with a [`Reaction`] that the adapter shows in
//! its platform's way — a callback answer, an ephemeral message, a modal.
//! The adapter never decides what a reply means.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The messages; the first is the one edited into the summary.
    pub messages: Vec<MessageRef>,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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

/// A platform adapter, as the engine uses it.
#[async_trait]
pub trait Channel: Send + Sync + 'static {
    /// The channel's name in the configuration, for logs (`channel` field).
    fn name(&self) -> &str;

    /// What the platform can show; the engine renders with it.
    fn capabilities(&self) -> &Capabilities;

    /// Sends a prompt. The adapter escapes all text for its markup and
    /// disables mentions; it returns every message it sent, in order.
    async fn deliver(&self, to: &Destination, prompt: &Presentation) -> Result<Delivery, ChannelError>;

    /// Edits a delivered prompt in place into its ended form: the buttons
    /// removed, `summary` added under the original text. Never deletes.
    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &str) -> Result<(), ChannelError>;

    /// Posts a short reply in a conversation, threaded to `reply_to` when given.
    async fn post(
        &self,
        to: &Destination,
        reply_to: Option<&MessageRef>,
        text: &str,
    ) -> Result<MessageRef, ChannelError>;
}

/// Why an inbound event could not be applied. The event's effect is not
/// stored: the adapter MUST NOT acknowledge it to the platform (no cursor
/// moved past it, no HTTP 200), so that the platform delivers it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InboundError {
    /// askgate could not store the event's effect (its store failed); trying
    /// the same event again later can succeed.
    #[error("the event could not be stored: {reason}")]
    Unavailable {
        /// What failed, for the log.
        reason: String,
    },
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
}
