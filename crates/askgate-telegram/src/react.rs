//! Telegram's inbound side for the shared driver ([`askgate_adapter::Inbound`]),
//! and the engine's [`Reaction`] shown the Telegram way: a tap is always
//! answered (`answerCallbackQuery`, an alert for refusals); a typed message
//! gets a reply; Other… becomes a force-reply aimed at the person who tapped.
//!
//! A tap is answered at once. A reply waits for its chat's turn
//! ([`askgate_adapter::SendLines`]), which after a burst of questions to one
//! person can take minutes, so it is queued rather than awaited: the poller
//! must meanwhile go on taking everyone else's taps.

use std::sync::Arc;

use askgate_adapter::{Inbound, Introduction};
use askgate_core::Limit;
use askgate_core::channel::{InboundEvent, InboundSink, Reaction};
use askgate_core::chrome::MAX_NAME_CHARS;
use async_trait::async_trait;
use teloxide::RequestError;
use teloxide::payloads::{AnswerCallbackQuerySetters as _, SendMessageSetters as _};
use teloxide::prelude::Requester as _;
use teloxide::types::{ForceReply, ParseMode, ReplyParameters, Update};
use tracing::warn;

use crate::TelegramChannel;
use crate::channel::no_preview;
use crate::decode::{Ack, Decoded, reference};
use crate::limits;
use crate::markup::html;

#[async_trait]
impl Inbound for TelegramChannel {
    type Update = Update;
    type Ack = Ack;

    fn name(&self) -> &str {
        channel_name(self)
    }

    fn decode(&self, update: &Update) -> Option<(InboundEvent, Ack)> {
        TelegramChannel::decode(self, update).map(|Decoded { event, ack }| (event, ack))
    }

    /// An update is delivered again until it is confirmed (the polling
    /// offset moved past it, or the webhook answered 2xx).
    fn redelivers(&self, _event: &InboundEvent) -> bool {
        true
    }

    async fn react(&self, ack: Ack, reaction: Reaction, sink: &Arc<dyn InboundSink>) {
        react(self, sink, ack, reaction).await;
    }

    fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
        Some(crate::config::introduction(event))
    }
}

/// Shows `reaction` for the event acknowledged by `ack`. A tap's
/// `answerCallbackQuery` is sent before this returns: Telegram shows a
/// spinner until then and wants it within seconds, and it is not rate
/// limited. A message (a reply, Other…'s force-reply) is queued for its
/// chat's turn, and this returns without waiting for it.
pub async fn react(channel: &TelegramChannel, sink: &Arc<dyn InboundSink>, ack: Ack, reaction: Reaction) {
    if let Ack::Callback { id, .. } = &ack {
        let mut answer = channel.bot().answer_callback_query(id.clone());
        if let Reaction::Notice { text, alert } = &reaction {
            // A notice names people (whom a question is for): cut to what
            // Telegram takes. Callback answers are plain text, not parsed.
            answer = answer
                .text(limits::CALLBACK_ANSWER_TEXT.ellipsize(text))
                .show_alert(*alert);
        }
        if let Err(error) = answer.await {
            let error = crate::error::channel_error(&error);
            warn!(channel = channel_name(channel), %error, "could not answer a tap");
        }
    }
    let follow_up = match (&ack, reaction) {
        // Telegram has no forms (its capabilities declare none): nothing asks for one.
        (_, Reaction::Nothing | Reaction::AskForm { .. })
        | (Ack::Callback { .. }, Reaction::Notice { .. } | Reaction::Introduce { .. })
        | (Ack::Message { .. }, Reaction::AskFreeText { .. }) => return,
        (_, reaction) => reaction,
    };
    let (sender, sink) = (channel.clone(), Arc::clone(sink));
    channel.queue(&ack.chat().into(), async move {
        if let Err(error) = send(&sender, sink.as_ref(), &ack, follow_up).await {
            let error = crate::error::channel_error(&error);
            warn!(channel = channel_name(&sender), %error, "could not reply to a Telegram update");
        }
    });
}

/// Sends the message a reaction calls for; this is the chat's turn already.
async fn send(
    channel: &TelegramChannel,
    sink: &dyn InboundSink,
    ack: &Ack,
    reaction: Reaction,
) -> Result<(), RequestError> {
    let bot = channel.bot();
    match (ack, reaction) {
        (
            Ack::Callback {
                chat, message, user, ..
            },
            Reaction::AskFreeText {
                question,
                title,
                placeholder,
                ..
            },
        ) => {
            // A text mention of the person who tapped, so that `selective`
            // shows the reply field to them only.
            let (user_id, name) = user;
            let text = format!(
                "<a href=\"tg://user?id={user_id}\">{}</a>, {}:",
                html(&Limit::code_points(MAX_NAME_CHARS).ellipsize(name)),
                html(&title)
            );
            let placeholder = limits::INPUT_FIELD_PLACEHOLDER.ellipsize(&placeholder);
            let sent = bot
                .send_message(*chat, text)
                .parse_mode(ParseMode::Html)
                .reply_parameters(ReplyParameters::new(*message).allow_sending_without_reply())
                .reply_markup(
                    ForceReply::new()
                        .selective()
                        .input_field_placeholder((!placeholder.is_empty()).then_some(placeholder)),
                )
                .await?;
            sink.attach(channel_name(channel), &question, reference(sent.chat.id, sent.id))
                .await;
            Ok(())
        }
        (Ack::Callback { chat, .. }, Reaction::Reply { text }) => bot
            .send_message(*chat, limits::message_html(&text))
            .parse_mode(ParseMode::Html)
            .link_preview_options(no_preview())
            .await
            .map(drop),
        (Ack::Message { chat, message }, Reaction::Introduce { text, snippet }) => bot
            .send_message(
                *chat,
                format!(
                    "{}\n<pre><code class=\"language-toml\">{}</code></pre>",
                    html(&text),
                    teloxide::utils::html::escape(&snippet)
                ),
            )
            .parse_mode(ParseMode::Html)
            .reply_parameters(ReplyParameters::new(*message).allow_sending_without_reply())
            .await
            .map(drop),
        (Ack::Message { chat, message }, Reaction::Notice { text, .. } | Reaction::Reply { text }) => bot
            .send_message(*chat, limits::message_html(&text))
            .parse_mode(ParseMode::Html)
            // No preview of a link askgate writes (a person's page link
            // above all: a preview would have Telegram fetch it).
            .link_preview_options(no_preview())
            .reply_parameters(ReplyParameters::new(*message).allow_sending_without_reply())
            .await
            .map(drop),
        // Nothing to send: `react` queues only reactions that send.
        _ => Ok(()),
    }
}

fn channel_name(channel: &TelegramChannel) -> &str {
    askgate_core::Channel::name(channel)
}
