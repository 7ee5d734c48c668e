//! [`TelegramChannel`]: what Telegram can show, and sending and editing prompts.

use askgate_core::channel::{Channel, ChannelError, Delivery, Destination, MessageRef};
use askgate_core::render::{ButtonLimits, FreeTextInput};
use askgate_core::{Capabilities, Presentation};
use async_trait::async_trait;
use teloxide::adaptors::Throttle;
use teloxide::adaptors::throttle::Limits;
use teloxide::payloads::{EditMessageTextSetters as _, SendMessageSetters as _};
use teloxide::prelude::{Requester as _, RequesterExt as _};
use teloxide::types::{
    ChatId, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, MessageId, ParseMode, Recipient,
    ReplyParameters, ThreadId,
};
use teloxide::{ApiError, Bot, RequestError};

use crate::error::channel_error;
use crate::markup::html;

/// Telegram's `callback_data` limit, in bytes.
const CALLBACK_DATA_BYTES: usize = 64;

/// Telegram's message limit is 4096 characters after entity parsing; the
/// margin is for the invisible characters that defuse `@mentions`.
const MAX_MESSAGE_CHARS: usize = 4000;

/// A Telegram bot as an askgate channel.
#[derive(Debug, Clone)]
pub struct TelegramChannel {
    name: String,
    bot: Throttle<Bot>,
    capabilities: Capabilities,
}

impl TelegramChannel {
    /// A channel named `name` for the bot with this token. `api_url` points it
    /// at another Bot API server (tests use the testkit's fake). Sending is
    /// queued within Telegram's limits (about 30 messages a second overall,
    /// one a second per chat, 20 a minute per group), never dropped.
    ///
    /// Must be called inside a tokio runtime: the queue runs as a task.
    pub fn new(name: &str, token: &str, api_url: Option<reqwest::Url>) -> Self {
        let mut bot = Bot::new(token);
        if let Some(url) = api_url {
            bot = bot.set_api_url(url);
        }
        Self {
            name: name.to_owned(),
            bot: bot.throttle(Limits::default()),
            capabilities: Capabilities {
                buttons: Some(ButtonLimits {
                    // One option a row, then Other… and Skip: far below Telegram's 100.
                    max_buttons: 100,
                    max_label_chars: 64,
                    max_token_bytes: CALLBACK_DATA_BYTES,
                }),
                max_message_chars: MAX_MESSAGE_CHARS,
                edit_messages: true,
                free_text_input: FreeTextInput::ForceReply,
                private_notices: true,
            },
        }
    }

    /// The bot behind the channel (for reactions and polling).
    pub fn bot(&self) -> &Throttle<Bot> {
        &self.bot
    }

    /// Checks the token with `getMe`; the bot's username on success.
    pub async fn check(&self) -> Result<String, ChannelError> {
        let me = self.bot.get_me().await.map_err(|error| channel_error(&error))?;
        Ok(me.username().to_owned())
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
            .send_message(chat, text)
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
        let sent = request.await.map_err(|error| channel_error(&error))?;
        Ok(MessageRef {
            conversation: sent.chat.id.to_string(),
            message: sent.id.0.to_string(),
        })
    }
}

fn no_preview() -> LinkPreviewOptions {
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

/// One option a row, then Other… and Skip side by side.
fn keyboard(prompt: &askgate_core::render::ButtonPrompt) -> InlineKeyboardMarkup {
    let mut rows: Vec<Vec<InlineKeyboardButton>> = prompt
        .options
        .iter()
        .map(|option| {
            vec![InlineKeyboardButton::callback(
                option.label.clone(),
                option.token.clone(),
            )]
        })
        .collect();
    let mut last = Vec::new();
    if let Some(other) = &prompt.other {
        last.push(InlineKeyboardButton::callback(other.label.clone(), other.token.clone()));
    }
    last.push(InlineKeyboardButton::callback(
        prompt.skip.label.clone(),
        prompt.skip.token.clone(),
    ));
    rows.push(last);
    InlineKeyboardMarkup::new(rows)
}

/// The text a prompt's first message shows.
fn first_text(prompt: &Presentation) -> &str {
    match prompt {
        Presentation::Buttons(buttons) => &buttons.text,
        Presentation::Text(text) => text.parts.first().map_or("", String::as_str),
    }
}

#[async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, to: &Destination, prompt: &Presentation) -> Result<Delivery, ChannelError> {
        let messages = match prompt {
            Presentation::Buttons(buttons) => vec![
                self.send(to, &html(&buttons.text), Some(keyboard(buttons)), None)
                    .await?,
            ],
            Presentation::Text(text) => {
                let mut sent = Vec::with_capacity(text.parts.len());
                for part in &text.parts {
                    sent.push(self.send(to, &html(part), None, None).await?);
                }
                sent
            }
        };
        Ok(Delivery { messages })
    }

    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &str) -> Result<(), ChannelError> {
        let Some(first) = delivery.messages.first() else {
            return Ok(());
        };
        let (chat, message) = message_id(first)?;
        let text = format!("{}\n\n<b>{}</b>", html(first_text(prompt)), html(summary));
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

    async fn post(
        &self,
        to: &Destination,
        reply_to: Option<&MessageRef>,
        text: &str,
    ) -> Result<MessageRef, ChannelError> {
        let reply_to = reply_to.map(message_id).transpose()?.map(|(_, id)| id);
        self.send(to, &html(text), None, reply_to).await
    }
}
