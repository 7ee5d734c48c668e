//! Telegram `Update`s in askgate's terms. Decoding decides nothing: which
//! question a message belongs to, and whether its sender may answer, is the
//! engine's business.

use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef, UserRef};
use teloxide::types::{
    CallbackQueryId, Chat, ChatId, MaybeInaccessibleMessage, MediaKind, Message, MessageId, MessageKind, Update,
    UpdateKind, User,
};

/// What acknowledging an event needs: the callback to answer, or the
/// message to reply to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// A button tap: it must be answered with `answerCallbackQuery`.
    Callback {
        /// The callback query's id.
        id: CallbackQueryId,
        /// The chat the tapped message is in.
        chat: ChatId,
        /// The tapped message.
        message: MessageId,
        /// The tapping person's id and name (a force-reply is aimed at them).
        user: (u64, String),
    },
    /// A typed message: a reaction is a reply to it.
    Message {
        /// Its chat.
        chat: ChatId,
        /// The message.
        message: MessageId,
    },
}

/// An update askgate cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The normalized event for the engine.
    pub event: InboundEvent,
    /// How to acknowledge it.
    pub ack: Ack,
}

/// The event in an update, or `None` for updates askgate ignores (edits,
/// joins, reactions, channel posts, kinds it does not know).
pub fn decode(update: &Update) -> Option<Decoded> {
    let event_id = update.id.0.to_string();
    match &update.kind {
        UpdateKind::CallbackQuery(query) => {
            let token = query.data.clone()?;
            let (chat, message) = match query.message.as_ref()? {
                MaybeInaccessibleMessage::Regular(message) => (&message.chat, message.id),
                MaybeInaccessibleMessage::Inaccessible(message) => (&message.chat, message.message_id),
            };
            Some(Decoded {
                event: InboundEvent {
                    event_id,
                    user: user(&query.from),
                    conversation: chat.id.to_string(),
                    conversation_kind: kind_of(chat),
                    thread: None,
                    kind: InboundKind::ButtonPressed {
                        token,
                        message: reference(chat.id, message),
                    },
                },
                ack: Ack::Callback {
                    id: query.id.clone(),
                    chat: chat.id,
                    message,
                    user: (query.from.id.0, query.from.full_name()),
                },
            })
        }
        UpdateKind::Message(message) => decode_message(event_id, message),
        _ => None,
    }
}

fn decode_message(event_id: String, message: &Message) -> Option<Decoded> {
    let from = message.from.as_ref()?;
    if from.is_bot {
        return None;
    }
    let MessageKind::Common(common) = &message.kind else {
        // Joins, pins, title changes: not something a person said.
        return None;
    };
    let this = reference(message.chat.id, message.id);
    let reply_to = message
        .reply_to_message()
        .map(|replied| reference(replied.chat.id, replied.id));
    let kind = match (&common.media_kind, message.text()) {
        (MediaKind::Text(_), Some(text)) => InboundKind::TextReply {
            message: this,
            text: text.to_owned(),
            reply_to,
        },
        _ => InboundKind::NonText {
            message: this,
            reply_to,
        },
    };
    Some(Decoded {
        event: InboundEvent {
            event_id,
            user: user(from),
            conversation: message.chat.id.to_string(),
            conversation_kind: kind_of(&message.chat),
            thread: message.thread_id.map(|thread| thread.0.0.to_string()),
            kind,
        },
        ack: Ack::Message {
            chat: message.chat.id,
            message: message.id,
        },
    })
}

fn user(user: &User) -> UserRef {
    UserRef {
        id: user.id.0.to_string(),
        display_name: user.full_name(),
    }
}

fn kind_of(chat: &Chat) -> ConversationKind {
    if chat.is_private() {
        ConversationKind::Direct
    } else {
        ConversationKind::Group
    }
}

/// A message as askgate refers to it: chat id and message id, as text.
pub fn reference(chat: ChatId, message: MessageId) -> MessageRef {
    MessageRef {
        conversation: chat.0.to_string(),
        message: message.0.to_string(),
    }
}
