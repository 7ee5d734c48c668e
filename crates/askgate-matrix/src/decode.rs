//! Timeline events in askgate's terms: a message (a reply, a thread
//! message), a poll response. Decoding decides nothing: which question an
//! event belongs to, and whether its sender may answer, is the engine's
//! business.

use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef, UserRef};
use serde_json::{Map, Value};

/// One timeline event as the sync loop hands it over: the decrypted event
/// (JSON), in its room, with what the room's state says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The room.
    pub room: String,
    /// A direct room (askgate and one person) or a room of several.
    pub kind: ConversationKind,
    /// The sender's display name in the room, where it has one.
    pub sender_name: Option<String>,
    /// The event, as the homeserver sent it (decrypted).
    pub event: Value,
}

/// What showing a reaction to an event needs: where to reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The room.
    pub room: String,
    /// The event a reply answers: the person's message, or the poll they
    /// answered.
    pub reply_to: String,
    /// The thread it happened in.
    pub thread: Option<String>,
    /// The person, as their name and id.
    pub user: UserRef,
}

/// The poll response event types: MSC3381's, which clients send, and the
/// stable name.
const POLL_RESPONSES: [&str; 2] = ["org.matrix.msc3381.poll.response", "m.poll.response"];

/// Commands a person may type, with `!` as Matrix bots are told, or `/`.
const GREETINGS: [&str; 2] = ["start", "help"];

/// The event in `update`, or `None` for events askgate ignores: its own
/// (`bot`), edits, state, notices, reactions, redactions, an emptied poll
/// vote, anything still encrypted.
pub fn decode(update: &Update, bot: &str) -> Option<(InboundEvent, Ack)> {
    let event = update.event.as_object()?;
    let sender = event.get("sender")?.as_str()?;
    if sender == bot || event.contains_key("state_key") {
        return None;
    }
    let event_id = event.get("event_id")?.as_str()?.to_owned();
    let kind = event.get("type")?.as_str()?;
    let content = event.get("content")?.as_object()?;
    let relates_to = content.get("m.relates_to").and_then(Value::as_object);
    let rel_type = relates_to.and_then(|r| r.get("rel_type")).and_then(Value::as_str);
    let related = relates_to.and_then(|r| r.get("event_id")).and_then(Value::as_str);
    let thread = (rel_type == Some("m.thread"))
        .then(|| related.map(str::to_owned))
        .flatten();
    let user = UserRef {
        id: sender.to_owned(),
        display_name: update
            .sender_name
            .clone()
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| sender.to_owned()),
    };
    let message = |id: &str| MessageRef {
        conversation: update.room.clone(),
        message: id.to_owned(),
    };
    let (kind, reply_to) = if POLL_RESPONSES.contains(&kind) {
        let poll = related.filter(|_| rel_type == Some("m.reference"))?;
        let token = selection(content)?;
        (
            InboundKind::ButtonPressed {
                token,
                message: message(poll),
            },
            poll.to_owned(),
        )
    } else if kind == "m.room.message" {
        if rel_type == Some("m.replace") {
            return None;
        }
        // A reply: in a thread, only one that is not the thread's fallback.
        let falling_back = relates_to
            .and_then(|r| r.get("is_falling_back"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let reply_to = relates_to
            .and_then(|r| r.get("m.in_reply_to"))
            .and_then(|reply| reply.get("event_id"))
            .and_then(Value::as_str)
            .filter(|_| !(thread.is_some() && falling_back))
            .map(message);
        let this = message(&event_id);
        let kind = match content.get("msgtype").and_then(Value::as_str) {
            Some("m.notice") => return None,
            Some("m.text" | "m.emote") => {
                let text = without_reply_fallback(body(content)?, reply_to.is_some());
                match command(text) {
                    Some(name) if GREETINGS.contains(&name.as_str()) => InboundKind::Greeting { message: this },
                    Some(name) if name == "skip" || name == "link" => InboundKind::TextReply {
                        message: this,
                        text: format!("/{name}"),
                        reply_to,
                    },
                    _ => InboundKind::TextReply {
                        message: this,
                        text: text.to_owned(),
                        reply_to,
                    },
                }
            }
            _ => InboundKind::NonText {
                message: this,
                reply_to,
            },
        };
        (kind, event_id.clone())
    } else {
        return None;
    };
    let inbound = InboundEvent {
        event_id,
        user: user.clone(),
        conversation: update.room.clone(),
        conversation_kind: update.kind,
        thread: thread.clone(),
        kind,
    };
    let ack = Ack {
        room: update.room.clone(),
        reply_to,
        thread,
        user,
    };
    Some((inbound, ack))
}

/// The one answer of a poll response (MSC3381's `answers`, or the stable
/// `m.selections`); `None` for a vote taken back (no answer).
fn selection(content: &serde_json::Map<String, Value>) -> Option<String> {
    let answers = content
        .get(POLL_RESPONSES[0])
        .and_then(|response| response.get("answers"))
        .or_else(|| content.get("m.selections"))?
        .as_array()?;
    answers.first()?.as_str().map(str::to_owned)
}

/// A reply's text without the quote of the message it replies to, which
/// clients before Matrix 1.13 put in front (`> <@bob:x> …` lines, then a
/// blank line).
fn without_reply_fallback(text: &str, is_reply: bool) -> &str {
    if !is_reply || !text.starts_with("> ") {
        return text;
    }
    let mut rest = text;
    while let Some(line_end) = rest.find('\n') {
        if !rest.starts_with('>') {
            break;
        }
        rest = &rest[line_end + 1..];
    }
    rest.strip_prefix('\n').unwrap_or(rest)
}

/// A message that is nothing but a command: `!skip`, `/start`.
fn command(text: &str) -> Option<String> {
    let text = text.trim();
    let name = text.strip_prefix('!').or_else(|| text.strip_prefix('/'))?;
    (!name.is_empty() && name.len() <= 32 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then(|| name.to_ascii_lowercase())
}

/// A message's text: `body`, or MSC1767's text block.
fn body(content: &Map<String, Value>) -> Option<&str> {
    content
        .get("body")
        .or_else(|| content.get(crate::render::TEXT))
        .and_then(Value::as_str)
}
