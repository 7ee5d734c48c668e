//! Discord events in askgate's terms: a button click or a modal submission
//! (an interaction), or a typed message. Decoding decides nothing: which
//! question a message belongs to, and whether its sender may answer, is the
//! engine's business.

use std::sync::Arc;

use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef, UserRef};
use askgate_core::form::FormValue;
use serenity::model::application::{ActionRowComponent, Interaction};
use serenity::model::channel::Message;
use serenity::model::user::User;

use crate::react::Responder;

/// The custom id of the one text field of Other…'s modal. It contains a
/// colon, which no question id can: a form's fields are named by question id.
pub const OTHER_FIELD: &str = "askgate:answer";

/// One event from Discord, as the gateway or the interactions endpoint
/// delivers it.
#[derive(Debug)]
pub enum Update {
    /// An interaction, and where its first response goes.
    Interaction {
        /// The interaction (serenity's model of Discord's payload).
        interaction: Box<Interaction>,
        /// How to respond to it.
        responder: Arc<Responder>,
    },
    /// A message posted in a channel the bot sees (gateway `MESSAGE_CREATE`).
    Message(Box<Message>),
}

/// What acknowledging an event needs.
#[derive(Debug, Clone)]
pub enum Ack {
    /// An interaction: it must be responded to within 3 s, once; later
    /// messages are follow-ups.
    Interaction(Arc<Responder>),
    /// A typed message: a reaction is a reply to it.
    Message {
        /// The channel it is in.
        channel_id: String,
        /// The message.
        message_id: String,
    },
}

/// The event in an update, or `None` for updates askgate ignores (a bot's
/// message, a slash command, a `PING`).
pub fn decode(update: &Update) -> Option<(InboundEvent, Ack)> {
    match update {
        Update::Interaction { interaction, responder } => {
            decode_interaction(interaction).map(|event| (event, Ack::Interaction(Arc::clone(responder))))
        }
        Update::Message(message) => decode_message(message),
    }
}

fn decode_interaction(interaction: &Interaction) -> Option<InboundEvent> {
    match interaction {
        Interaction::Component(component) => Some(InboundEvent {
            event_id: component.id.to_string(),
            user: user(&component.user),
            conversation: component.channel_id.to_string(),
            conversation_kind: kind(component.guild_id.is_some()),
            thread: None,
            kind: InboundKind::ButtonPressed {
                token: component.data.custom_id.clone(),
                message: MessageRef {
                    conversation: component.message.channel_id.to_string(),
                    message: component.message.id.to_string(),
                },
            },
        }),
        Interaction::Modal(modal) => {
            let fields: Vec<(String, String)> = modal
                .data
                .components
                .iter()
                .flat_map(|row| &row.components)
                .filter_map(|component| match component {
                    ActionRowComponent::InputText(input) => {
                        Some((input.custom_id.clone(), input.value.clone().unwrap_or_default()))
                    }
                    _ => None,
                })
                .collect();
            let token = modal.data.custom_id.clone();
            let submitted = match fields.as_slice() {
                [(id, text)] if id == OTHER_FIELD => InboundKind::FreeTextSubmitted {
                    token,
                    text: text.clone(),
                },
                _ => InboundKind::FormSubmitted {
                    token,
                    values: fields.iter().map(|(id, text)| FormValue::typed(id, text)).collect(),
                },
            };
            Some(InboundEvent {
                event_id: modal.id.to_string(),
                user: user(&modal.user),
                conversation: modal.channel_id.to_string(),
                conversation_kind: kind(modal.guild_id.is_some()),
                thread: None,
                kind: submitted,
            })
        }
        _ => None,
    }
}

fn decode_message(message: &Message) -> Option<(InboundEvent, Ack)> {
    if message.author.bot {
        return None;
    }
    let this = MessageRef {
        conversation: message.channel_id.to_string(),
        message: message.id.to_string(),
    };
    let reply_to = message.message_reference.as_ref().and_then(|reference| {
        Some(MessageRef {
            conversation: reference.channel_id.to_string(),
            message: reference.message_id?.to_string(),
        })
    });
    let kind = if message.content.trim().is_empty() {
        // An attachment, a sticker, or a message whose content the bot may
        // not read: nothing to read as an answer.
        InboundKind::NonText {
            message: this,
            reply_to,
        }
    } else if reply_to.is_none() && askgate_adapter::introduce::is_greeting(&message.content) {
        // `@askgate start`, `/start`: the person greets the bot.
        InboundKind::Greeting { message: this }
    } else {
        InboundKind::TextReply {
            message: this,
            text: message.content.clone(),
            reply_to,
        }
    };
    let event = InboundEvent {
        event_id: message.id.to_string(),
        user: user(&message.author),
        conversation: message.channel_id.to_string(),
        conversation_kind: kind_of_message(message),
        thread: None,
        kind,
    };
    let ack = Ack::Message {
        channel_id: message.channel_id.to_string(),
        message_id: message.id.to_string(),
    };
    Some((event, ack))
}

fn kind_of_message(message: &Message) -> ConversationKind {
    kind(message.guild_id.is_some())
}

/// In a guild, a channel (or a thread) several people see; otherwise a DM.
fn kind(in_guild: bool) -> ConversationKind {
    if in_guild {
        ConversationKind::Group
    } else {
        ConversationKind::Direct
    }
}

fn user(user: &User) -> UserRef {
    UserRef {
        id: user.id.to_string(),
        display_name: user.display_name().to_owned(),
    }
}
