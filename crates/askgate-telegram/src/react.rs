//! The engine's [`Reaction`] shown the Telegram way: a tap is always
//! answered (`answerCallbackQuery`, an alert for refusals); a typed message
//! gets a reply; Other… becomes a force-reply aimed at the person who tapped.

use askgate_core::channel::{InboundSink, Reaction};
use teloxide::payloads::{AnswerCallbackQuerySetters as _, SendMessageSetters as _};
use teloxide::prelude::Requester as _;
use teloxide::types::{ForceReply, ParseMode, ReplyParameters};
use tracing::warn;

use crate::TelegramChannel;
use crate::decode::{Ack, reference};
use crate::markup::html;

/// Shows `reaction` for the event acknowledged by `ack`.
pub async fn react(channel: &TelegramChannel, sink: &dyn InboundSink, ack: &Ack, reaction: Reaction) {
    let bot = channel.bot();
    let result = match (ack, reaction) {
        (Ack::Callback { id, .. }, Reaction::Nothing) => bot.answer_callback_query(id.clone()).await.map(drop),
        (Ack::Callback { id, .. }, Reaction::Notice { text, alert }) => bot
            .answer_callback_query(id.clone())
            .text(text)
            .show_alert(alert)
            .await
            .map(drop),
        (Ack::Callback { id, chat, .. }, Reaction::Reply { text }) => {
            let answered = bot.answer_callback_query(id.clone()).await.map(drop);
            match answered {
                Ok(()) => bot
                    .send_message(*chat, html(&text))
                    .parse_mode(ParseMode::Html)
                    .await
                    .map(drop),
                Err(error) => Err(error),
            }
        }
        (
            Ack::Callback {
                id,
                chat,
                message,
                user,
            },
            Reaction::AskFreeText {
                question,
                title,
                placeholder,
                ..
            },
        ) => {
            if let Err(error) = bot.answer_callback_query(id.clone()).await {
                Err(error)
            } else {
                // A text mention of the person who tapped, so that `selective`
                // shows the reply field to them only.
                let (user_id, name) = user;
                let text = format!(
                    "<a href=\"tg://user?id={user_id}\">{}</a>, {}:",
                    html(name),
                    html(&title)
                );
                let sent = bot
                    .send_message(*chat, text)
                    .parse_mode(ParseMode::Html)
                    .reply_parameters(ReplyParameters::new(*message).allow_sending_without_reply())
                    .reply_markup(ForceReply::new().selective().input_field_placeholder(Some(placeholder)))
                    .await;
                match sent {
                    Ok(sent) => {
                        sink.attach(channel_name(channel), &question, reference(sent.chat.id, sent.id))
                            .await;
                        Ok(())
                    }
                    Err(error) => Err(error),
                }
            }
        }
        (Ack::Message { .. }, Reaction::Nothing | Reaction::AskFreeText { .. }) => Ok(()),
        (Ack::Message { chat, message }, Reaction::Notice { text, .. } | Reaction::Reply { text }) => bot
            .send_message(*chat, html(&text))
            .parse_mode(ParseMode::Html)
            .reply_parameters(ReplyParameters::new(*message).allow_sending_without_reply())
            .await
            .map(drop),
    };
    if let Err(error) = result {
        warn!(channel = channel_name(channel), %error, "could not acknowledge a Telegram update");
    }
}

fn channel_name(channel: &TelegramChannel) -> &str {
    askgate_core::Channel::name(channel)
}
