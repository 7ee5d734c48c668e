//! [`TelegramChannel`]: what Telegram can show, and sending and editing prompts.

use std::sync::{Arc, OnceLock};

use askgate_adapter::SendLines;
use askgate_adapter::deliver::deliver_parts;
use askgate_adapter::nudge;
use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, Destination, MessageRef, Nudge, Outgoing};
use askgate_core::render::{ButtonLimits, FreeTextInput, Measure};
use askgate_core::{Capabilities, Presentation, Summary};
use async_trait::async_trait;
use teloxide::adaptors::Throttle;
use teloxide::adaptors::throttle::Limits;
use teloxide::payloads::{EditMessageTextSetters as _, SendMessageSetters as _};
use teloxide::prelude::{Requester as _, RequesterExt as _};
use teloxide::types::{
    ChatId, InlineKeyboardMarkup, LinkPreviewOptions, Message, MessageId, ParseMode, Recipient, ReplyParameters,
    ThreadId, Update,
};
use teloxide::{ApiError, Bot, RequestError};

use crate::decode::{Decoded, decode};
use crate::error::channel_error;
use crate::limits;
use crate::relay::{Relay, Telegram};
use crate::render::{finished_html, keyboard, nudge_html};

/// Telegram's published limits for sending (Bots FAQ, "My bot is hitting
/// limits"): about 30 messages a second overall, one a second in a chat, 20 a
/// minute in a group. teloxide's `Throttle` holds one per-minute limit for
/// every chat that is not a supergroup or channel, so private chats get the
/// group figure too: a person receives at most 20 messages a minute, which
/// no one answering questions comes near. (teloxide's default would allow
/// supergroups only 10.)
const SEND_LIMITS: Limits = Limits {
    messages_per_sec_overall: 30,
    messages_per_sec_chat: 1,
    messages_per_min_chat: 20,
    messages_per_min_channel_or_supergroup: 20,
};

/// What people call the platform: summaries of questions answered here
/// name it ("Answered by Alice in Telegram").
pub const DISPLAY_NAME: &str = "Telegram";

/// What Telegram can show: messages of [`limits::MESSAGE_TEXT`] counted
/// after parsing ([`limits::measure`]), inline keyboards (one option a row,
/// then Other… and Skip: far below Telegram's 100 buttons), edits, a
/// force-reply for Other…, callback alerts; typed replies arrive; no forms.
pub fn capabilities() -> Capabilities {
    Capabilities::text(limits::MESSAGE_TEXT.max)
        .with_measure(Measure::new(limits::measure))
        .with_buttons(ButtonLimits::new(
            100,
            limits::BUTTON_TEXT.max,
            limits::CALLBACK_DATA.max,
        ))
        .with_edits()
        .with_free_text(FreeTextInput::ForceReply)
        .with_private_notices()
}

/// A Telegram bot as an askgate channel.
#[derive(Debug, Clone)]
pub struct TelegramChannel {
    name: String,
    bot: Throttle<Bot>,
    capabilities: Capabilities,
    /// The bot's username, once [`TelegramChannel::check`] asked Telegram.
    username: Arc<OnceLock<String>>,
    /// The messages waiting for their chat's turn.
    lines: SendLines,
    /// The relay the bot's calls go through, serving while a clone of the
    /// channel lives.
    _relay: Option<Arc<Relay>>,
}

impl TelegramChannel {
    /// A channel named `name` for the bot with this token. `api_url` points it
    /// at another Bot API server (tests use the testkit's fake). Sending is
    /// queued within Telegram's limits ([`SEND_LIMITS`]), never dropped; a 429
    /// that gets through anyway is waited out and the message sent again.
    ///
    /// Must be called inside a tokio runtime: the queue runs as a task.
    pub fn new(name: &str, token: &str, api_url: Option<reqwest::Url>) -> Self {
        let api_url = api_url.unwrap_or_else(|| {
            reqwest::Url::parse(teloxide::net::TELEGRAM_API_URL).expect("teloxide's API URL is a URL")
        });
        // Every answer read within a bound, through a relay (`relay`).
        let (bot, relay) = match Relay::start(&api_url, Telegram) {
            Ok(relay) => {
                // teloxide's own settings (5 s to connect, 17 s a call), with
                // no proxy between it and the relay on loopback.
                let client = teloxide::net::default_reqwest_settings()
                    .no_proxy()
                    .build()
                    .unwrap_or_default();
                let bot = Bot::with_client(token, client).set_api_url(relay.url().clone());
                (bot, Some(Arc::new(relay)))
            }
            Err(error) => {
                tracing::warn!(channel = name, %error, "could not start the relay that bounds Telegram's answers; reading them directly");
                (Bot::new(token).set_api_url(api_url), None)
            }
        };
        Self {
            name: name.to_owned(),
            bot: bot.throttle(SEND_LIMITS),
            capabilities: capabilities(),
            username: Arc::default(),
            lines: SendLines::default(),
            _relay: relay,
        }
    }

    /// The bot behind the channel (for reactions and polling).
    pub fn bot(&self) -> &Throttle<Bot> {
        &self.bot
    }

    /// Checks the token with `getMe`; the bot's username on success, which
    /// the channel keeps to recognise commands addressed to it.
    pub async fn check(&self) -> Result<String, ChannelError> {
        let me = self.bot.get_me().await.map_err(|error| channel_error(&error))?;
        let username = me.username().to_owned();
        // A second check finds the same bot: the first answer stays.
        let _ = self.username.set(username.clone());
        Ok(username)
    }

    /// Sends `request` to `chat` in its turn ([`SendLines`]): after the
    /// messages queued for it before, without holding up other chats.
    pub(crate) async fn in_turn<R>(&self, chat: &Recipient, request: R) -> Result<Message, ChannelError>
    where
        R: IntoFuture<Output = Result<Message, RequestError>> + Clone + Send + Sync + 'static,
        R::IntoFuture: Send,
    {
        self.lines
            .send(&turn_key(chat), move || {
                let request = request.clone();
                async move { request.await.map_err(|error| channel_error(&error)) }
            })
            .await
    }

    /// Queues a message for `chat` in its turn, and returns at once.
    pub(crate) fn queue(&self, chat: &Recipient, send: impl Future<Output = ()> + Send + 'static) {
        self.lines.queue(&turn_key(chat), send);
    }

    /// The event in an update for this bot (see [`decode`]).
    pub fn decode(&self, update: &Update) -> Option<Decoded> {
        decode(update, self.username.get().map(String::as_str))
    }

    async fn send(
        &self,
        to: &Destination,
        text: &str,
        keyboard: Option<InlineKeyboardMarkup>,
        reply_to: Option<MessageId>,
    ) -> Result<MessageRef, ChannelError> {
        let chat = recipient(&to.conversation)?;
        let mut request = self
            .bot
            .send_message(chat.clone(), text)
            .parse_mode(ParseMode::Html)
            .link_preview_options(no_preview());
        if let Some(thread) = thread_id(to.thread.as_deref())? {
            request = request.message_thread_id(thread);
        }
        if let Some(keyboard) = keyboard {
            request = request.reply_markup(keyboard);
        }
        if let Some(message) = reply_to {
            request = request.reply_parameters(ReplyParameters::new(message).allow_sending_without_reply());
        }
        let sent = self.in_turn(&chat, request).await?;
        Ok(MessageRef {
            conversation: sent.chat.id.to_string(),
            message: sent.id.0.to_string(),
        })
    }
}

/// The line a chat's messages wait in: its id, or its `@username`.
fn turn_key(chat: &Recipient) -> String {
    match chat {
        Recipient::Id(id) => id.0.to_string(),
        Recipient::ChannelUsername(name) => name.clone(),
    }
}

pub(crate) fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions {
        is_disabled: true,
        url: None,
        prefer_small_media: false,
        prefer_large_media: false,
        show_above_text: false,
    }
}

/// The Telegram recipient of a conversation id: a numeric chat id, or a
/// public `@channelname`.
fn recipient(conversation: &str) -> Result<Recipient, ChannelError> {
    if let Ok(id) = conversation.parse::<i64>() {
        return Ok(Recipient::Id(ChatId(id)));
    }
    if conversation.starts_with('@') {
        return Ok(Recipient::ChannelUsername(conversation.to_owned()));
    }
    Err(ChannelError::Rejected {
        reason: format!("\"{conversation}\" is not a Telegram chat id"),
    })
}

fn thread_id(thread: Option<&str>) -> Result<Option<ThreadId>, ChannelError> {
    thread
        .map(|thread| {
            thread
                .parse::<i32>()
                .map(|id| ThreadId(MessageId(id)))
                .map_err(|_| ChannelError::Rejected {
                    reason: format!("\"{thread}\" is not a Telegram topic id"),
                })
        })
        .transpose()
}

fn message_id(message: &MessageRef) -> Result<(Recipient, MessageId), ChannelError> {
    let id = message.message.parse::<i32>().map_err(|_| ChannelError::Rejected {
        reason: format!("\"{}\" is not a Telegram message id", message.message),
    })?;
    Ok((recipient(&message.conversation)?, MessageId(id)))
}

#[async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        DISPLAY_NAME
    }

    /// A private chat's id is its user's id, and a user's id is positive
    /// (a group's is negative, a channel is `-100…` or `@name`).
    fn direct_person(&self, destination: &Destination) -> Option<String> {
        let id: i64 = destination.conversation.parse().ok()?;
        (id > 0).then(|| destination.conversation.clone())
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        deliver_parts(outgoing, |index| async move {
            match outgoing.prompt {
                // Within the limit already: core measured it ([`limits::measure`]).
                Presentation::Buttons(buttons) => {
                    self.send(
                        outgoing.to,
                        &limits::message_html(&buttons.text),
                        Some(keyboard(buttons)),
                        None,
                    )
                    .await
                }
                Presentation::Text(text) => {
                    let part = text.parts.get(index).map_or("", String::as_str);
                    self.send(outgoing.to, &limits::message_html(part), None, None).await
                }
                other => Err(ChannelError::Rejected {
                    reason: format!("this adapter cannot show {other:?}"),
                }),
            }
        })
        .await
    }

    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        let Some(first) = delivery.messages.first() else {
            return Ok(());
        };
        let (chat, message) = message_id(first)?;
        let text = finished_html(prompt.part_text(0), summary);
        // Without reply_markup the edit removes the keyboard.
        match self
            .bot
            .edit_message_text(chat, message, text)
            .parse_mode(ParseMode::Html)
            .link_preview_options(no_preview())
            .await
        {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(error) => Err(channel_error(&error)),
        }
    }

    /// One message in the conversation (and topic) of `nudge.to`, a reply to
    /// `nudge.reply_to` in its chat when given (sent even if that message is
    /// gone), in the chat's turn like any message.
    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        let html = nudge_html(nudge.text, nudge.mention)?;
        let (to, reply_to) = match nudge.reply_to {
            Some(message) => {
                let (_, id) = message_id(message)?;
                let to = Destination {
                    conversation: message.conversation.clone(),
                    thread: nudge.to.thread.clone(),
                };
                (to, Some(id))
            }
            None => (nudge.to.clone(), None),
        };
        nudge::logged(&self.name, self.send(&to, &html, None, reply_to).await)
    }
}
