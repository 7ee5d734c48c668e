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

impl Ack {
    /// The chat the event happened in.
    pub fn chat(&self) -> ChatId {
        match self {
            Self::Callback { chat, .. } | Self::Message { chat, .. } => *chat,
        }
    }
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
/// joins, reactions, channel posts, kinds it does not know, commands meant
/// for another bot). `bot_username` is this bot's (from `getMe`), to tell
/// `/skip@this_bot` from `/skip@another_bot` in a group; when unknown, a
/// command is taken whoever it names.
pub fn decode(update: &Update, bot_username: Option<&str>) -> Option<Decoded> {
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
        UpdateKind::Message(message) => decode_message(event_id, message, bot_username),
        _ => None,
    }
}

fn decode_message(event_id: String, message: &Message, bot_username: Option<&str>) -> Option<Decoded> {
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
    // `/start`, `/help` — with a deep link's payload after it or not: a
    // person talking to the bot, not answering; where the chat is no
    // recipient's, it is told how to become one.
    if let Some(text) = message.text()
        && let Some(greeting) = command(text.split_whitespace().next().unwrap_or_default())
        && greeting.is_for(bot_username)
        && GREETINGS.iter().any(|name| greeting.name.eq_ignore_ascii_case(name))
    {
        return Some(Decoded {
            event: event(event_id, from, message, InboundKind::Greeting { message: this }),
            ack: Ack::Message {
                chat: message.chat.id,
                message: message.id,
            },
        });
    }
    let text = match (&common.media_kind, message.text()) {
        (MediaKind::Text(_), Some(text)) => match command(text) {
            Some(command) if !command.is_for(bot_username) => return None,
            Some(command) if command.name.eq_ignore_ascii_case("skip") => Some("/skip".to_owned()),
            // The person asking for their page link: the engine answers it.
            Some(command) if command.name.eq_ignore_ascii_case("link") => Some("/link".to_owned()),
            Some(_) => None,
            None => Some(text.to_owned()),
        },
        _ => None,
    };
    let kind = match text {
        Some(text) => InboundKind::TextReply {
            message: this,
            text,
            reply_to,
        },
        None => InboundKind::NonText {
            message: this,
            reply_to,
        },
    };
    Some(Decoded {
        event: event(event_id, from, message, kind),
        ack: Ack::Message {
            chat: message.chat.id,
            message: message.id,
        },
    })
}

/// The bot commands that greet it rather than answer.
const GREETINGS: [&str; 2] = ["start", "help"];

fn event(event_id: String, from: &User, message: &Message, kind: InboundKind) -> InboundEvent {
    InboundEvent {
        event_id,
        user: user(from),
        conversation: message.chat.id.to_string(),
        conversation_kind: kind_of(&message.chat),
        // A forum topic; a reply chain in a group without topics has a
        // thread id too, but no topic to post to.
        thread: message
            .thread_id
            .filter(|_| message.is_topic_message)
            .map(|thread| thread.0.0.to_string()),
        kind,
    }
}

/// A message that is nothing but a bot command: `/skip`, or in a group
/// `/skip@askgate_bot` (Telegram's own syntax: up to 32 letters, digits and
/// underscores). A command with more text after it is read as text, but
/// for the greetings (`/start ref`, a deep link's payload).
struct Command<'a> {
    name: &'a str,
    addressee: Option<&'a str>,
}

impl Command<'_> {
    fn is_for(&self, bot_username: Option<&str>) -> bool {
        match (self.addressee, bot_username) {
            (Some(addressee), Some(bot)) => addressee.eq_ignore_ascii_case(bot),
            _ => true,
        }
    }
}

fn command(text: &str) -> Option<Command<'_>> {
    let word = |part: &str, max: usize| {
        !part.is_empty() && part.len() <= max && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let body = text.trim().strip_prefix('/')?;
    let (name, addressee) = match body.split_once('@') {
        Some((name, addressee)) => (name, Some(addressee)),
        None => (body, None),
    };
    (word(name, 32) && addressee.is_none_or(|addressee| word(addressee, 32))).then_some(Command { name, addressee })
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
