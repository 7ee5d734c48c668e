//! What a Matrix event says and shows, as pure functions of what core
//! decided: a prompt's poll, a text part, a finished prompt (a poll ended,
//! a message edited), a nudge. Nothing here talks to the homeserver
//! ([`crate::channel`] sends).
//!
//! Every content is plain text (`body`, never `formatted_body`) with
//! `m.mentions`: empty, but for a nudge's people. Agent text and a
//! person's words go through [`defuse`] as well.
//!
//! Polls are MSC3381's: the spec's stable `m.poll.*` types need extensible
//! events, which no stable room version has, so clients (Element Web,
//! Element X) send and show the `org.matrix.msc3381.poll.*` events. askgate
//! sends those, and reads responses in both namespaces ([`crate::decode`]).

use std::fmt::Write as _;

use askgate_adapter::finish::finished;
use askgate_adapter::nudge;
use askgate_core::channel::{ChannelError, Destination, UserRef};
use askgate_core::render::ButtonPrompt;
use askgate_core::{Limit, Summary};
use serde_json::{Value, json};

use crate::limits::{self, measure};
use crate::markup::defuse;

/// The event type of a poll askgate sends.
pub const POLL_START: &str = "org.matrix.msc3381.poll.start";
/// The event type that ends a poll.
pub const POLL_END: &str = "org.matrix.msc3381.poll.end";
/// The event type of a message.
pub const MESSAGE: &str = "m.room.message";

/// The plain-text block of MSC1767, which MSC3381 polls carry.
pub(crate) const TEXT: &str = "org.matrix.msc1767.text";

/// The longest name a nudge shows for a person it mentions.
const MENTION_NAME: Limit = Limit::code_points(64);

/// How an event relates to others: in a thread (`thread`, the thread's
/// root), and a reply to `reply_to`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relation<'a> {
    /// The thread's root event.
    pub thread: Option<&'a str>,
    /// The event this one replies to.
    pub reply_to: Option<&'a str>,
}

impl<'a> Relation<'a> {
    /// In `to`'s thread, replying to nothing.
    pub fn at(to: &'a Destination) -> Self {
        Self {
            thread: to.thread.as_deref(),
            reply_to: None,
        }
    }

    /// `m.relates_to`, or `None` when the event stands alone. In a thread
    /// the reply is the thread's own (`is_falling_back` when it replies to
    /// nothing but the thread), as the spec's threading module writes it.
    fn json(self) -> Option<Value> {
        match (self.thread, self.reply_to) {
            (Some(thread), reply_to) => Some(json!({
                "rel_type": "m.thread",
                "event_id": thread,
                "is_falling_back": reply_to.is_none(),
                "m.in_reply_to": {"event_id": reply_to.unwrap_or(thread)},
            })),
            (None, Some(reply_to)) => Some(json!({"m.in_reply_to": {"event_id": reply_to}})),
            (None, None) => None,
        }
    }
}

/// An `m.text` message: `text` as written (defused), mentioning no one.
pub fn message(text: &str, relation: Relation<'_>) -> Value {
    let mut content = json!({
        "msgtype": "m.text",
        "body": defuse(text),
        "m.mentions": {},
    });
    relate(&mut content, relation);
    content
}

/// An `m.notice`, as the spec has bots send what they say of their own
/// accord (a refusal, "Answer submitted"), which clients show apart and
/// bots do not answer: `text` as written (defused), mentioning no one.
pub fn notice(text: &str, relation: Relation<'_>) -> Value {
    let mut content = message(text, relation);
    content["msgtype"] = Value::from("m.notice");
    content
}

/// A reply with a block to copy: `text`, then `snippet` as it is (TOML,
/// which has no mention in it: ids are quoted values).
pub fn introduction(text: &str, snippet: &str, relation: Relation<'_>) -> Value {
    let mut content = json!({
        "msgtype": "m.text",
        "body": format!("{}\n\n{snippet}", defuse(text)),
        "m.mentions": {},
    });
    relate(&mut content, relation);
    content
}

/// The poll of a one-question prompt: the prompt's text as the question
/// (within [`limits::MESSAGE_TEXT`]: core measured it), one answer per
/// option, then Other… and Skip, each answer's id its button token; one
/// selection, results shown (`disclosed`). Clients without polls show the
/// fallback text: the question and the numbered answers, which a typed
/// reply can use.
pub fn poll(buttons: &ButtonPrompt, relation: Relation<'_>) -> Value {
    let question = defuse(&buttons.text);
    let labels: Vec<(&str, &str)> = buttons
        .options
        .iter()
        .map(|option| (option.token.as_str(), option.label.as_str()))
        .chain(
            buttons
                .other
                .iter()
                .map(|other| (other.token.as_str(), other.label.as_str())),
        )
        .chain(std::iter::once((
            buttons.skip.token.as_str(),
            buttons.skip.label.as_str(),
        )))
        .collect();
    let answers: Vec<Value> = labels
        .iter()
        // An answer is no message: push rules and mention matching read
        // `body` only, so a label is shown as the agent wrote it.
        .map(|(token, label)| json!({"id": token, TEXT: limits::POLL_ANSWER_TEXT.ellipsize(label)}))
        .collect();
    let mut fallback = question.clone();
    for (index, (_, label)) in labels.iter().enumerate() {
        let _ = write!(fallback, "\n{}. {}", index + 1, defuse(label));
    }
    let mut content = json!({
        POLL_START: {
            "kind": "org.matrix.msc3381.poll.disclosed",
            "max_selections": 1,
            "question": {TEXT: question, "body": question, "msgtype": "m.text"},
            "answers": answers,
        },
        TEXT: fallback,
        "body": fallback,
        "m.mentions": {},
    });
    relate(&mut content, relation);
    content
}

/// The words of a finished prompt: its text, a blank line, the summary,
/// within [`limits::MESSAGE_TEXT`].
pub fn finished_text(text: &str, summary: &Summary) -> String {
    const GAP: &str = "\n\n";
    let laid = finished(text, summary, limits::MESSAGE_TEXT, measure(GAP), measure);
    if laid.text.is_empty() {
        laid.summary
    } else {
        format!("{}{GAP}{}", laid.text, laid.summary)
    }
}

/// The end of poll `poll`: its finished text, for clients to show in its
/// place ([`finished_text`]).
pub fn poll_end(poll: &str, text: &str) -> Value {
    json!({
        "m.relates_to": {"rel_type": "m.reference", "event_id": poll},
        POLL_END: {},
        TEXT: defuse(text),
        "body": defuse(text),
        "m.mentions": {},
    })
}

/// An edit (`m.replace`) of message `event` into `text`: the new content,
/// and the fallback `* text` for clients without edits.
pub fn edit(event: &str, text: &str) -> Value {
    let text = defuse(text);
    json!({
        "msgtype": "m.text",
        "body": format!("* {text}"),
        "m.new_content": {"msgtype": "m.text", "body": text, "m.mentions": {}},
        "m.relates_to": {"rel_type": "m.replace", "event_id": event},
        "m.mentions": {},
    })
}

/// A nudge: each person of `mention` named once and notified through
/// `m.mentions.user_ids` (the only people it notifies), then `text`,
/// within [`limits::MESSAGE_TEXT`].
pub fn nudge(text: &str, mention: &[UserRef], relation: Relation<'_>) -> Result<Value, ChannelError> {
    let people = nudge::people(mention, "Matrix", crate::config::is_user_id)?;
    let mut lead = String::new();
    for person in &people {
        let name = person.display_name.trim();
        let name = MENTION_NAME.ellipsize(if name.is_empty() { &person.id } else { name });
        lead.push_str(&defuse(&name));
        lead.push_str(": ");
    }
    let room = limits::MESSAGE_TEXT.saturating_sub(measure(&lead));
    let text = askgate_core::text::shorten(&defuse(text), |text| measure(text) <= room);
    let ids: Vec<&str> = people.iter().map(|person| person.id.as_str()).collect();
    let mut content = json!({
        "msgtype": "m.text",
        "body": format!("{lead}{text}"),
        "m.mentions": {"user_ids": ids},
    });
    relate(&mut content, relation);
    Ok(content)
}

fn relate(content: &mut Value, relation: Relation<'_>) {
    if let (Some(relates_to), Some(object)) = (relation.json(), content.as_object_mut()) {
        object.insert("m.relates_to".into(), relates_to);
    }
}
