//! Slack events in askgate's terms: a button click (`block_actions`), a
//! modal submission (`view_submission`), or a typed message (an Events API
//! `message`). Decoding decides nothing: which question a message belongs
//! to, and whether its sender may answer, is the engine's business.

use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef, UserRef};
use askgate_core::form::FormValue;
use slack_morphism::prelude::*;

use crate::render::{CHECKBOXES_SUFFIX, OTHER_FIELD, Origin};

/// One event from Slack, as Socket Mode or the HTTP endpoints deliver it.
#[derive(Debug, Clone)]
pub enum Update {
    /// An interaction (a click, a modal submission).
    Interaction {
        /// slack-morphism's model of the payload.
        event: Box<SlackInteractionEvent>,
        /// The acting person's display name, where askgate looked it up.
        name: Option<String>,
    },
    /// An Events API event.
    Event {
        /// slack-morphism's model of the `event_callback`.
        callback: Box<SlackPushEventCallback>,
        /// The sender's display name, where askgate looked it up.
        name: Option<String>,
    },
}

impl Update {
    /// The acting person's user id, to look their name up; `None` for an
    /// update askgate ignores (a bot's message, an edit), which needs none.
    pub fn user(&self) -> Option<String> {
        decode(self).map(|(event, _)| event.user.id)
    }

    /// With the acting person's display name.
    #[must_use]
    pub fn named(self, display_name: Option<String>) -> Self {
        match self {
            Self::Interaction { event, .. } => Self::Interaction {
                event,
                name: display_name,
            },
            Self::Event { callback, .. } => Self::Event {
                callback,
                name: display_name,
            },
        }
    }
}

/// Where a reaction to an event is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// What kind of event it was.
    pub kind: AckKind,
    /// The conversation it happened in.
    pub channel: String,
    /// The person who acted.
    pub user: String,
    /// The thread it happened in, if any.
    pub thread_ts: Option<String>,
    /// Whether several people see the conversation (not a DM).
    pub group: bool,
}

/// What kind of event an [`Ack`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckKind {
    /// A click: a modal opens with its trigger id (valid for 3 s).
    Click {
        /// The interaction's trigger id.
        trigger_id: String,
    },
    /// A modal's submission.
    Submission,
    /// A typed message.
    Message,
}

impl Ack {
    /// Where a modal opened for this event sends its submission's reactions.
    pub fn origin(&self) -> Origin {
        Origin {
            conversation: self.channel.clone(),
            group: self.group,
            thread_ts: self.thread_ts.clone(),
        }
    }
}

/// The event in an update, or `None` for what askgate ignores (a bot's
/// message, an edit, a modal closed, an event of another type).
pub fn decode(update: &Update) -> Option<(InboundEvent, Ack)> {
    match update {
        Update::Interaction { event, name } => match event.as_ref() {
            SlackInteractionEvent::BlockActions(click) => decode_click(click, name.as_deref()),
            SlackInteractionEvent::ViewSubmission(submission) => decode_submission(submission, name.as_deref()),
            _ => None,
        },
        Update::Event { callback, name } => match &callback.event {
            SlackEventCallbackBody::Message(message) => decode_message(callback, message, name.as_deref()),
            _ => None,
        },
    }
}

/// A DM's id starts with `D`; anything else is seen by several people.
fn is_group(channel: &str) -> bool {
    !channel.starts_with('D')
}

fn kind(group: bool) -> ConversationKind {
    if group {
        ConversationKind::Group
    } else {
        ConversationKind::Direct
    }
}

fn user(id: &str, looked_up: Option<&str>, fallback: Option<&str>) -> UserRef {
    let display_name = [looked_up, fallback]
        .into_iter()
        .flatten()
        .find(|name| !name.trim().is_empty())
        .unwrap_or(id);
    UserRef {
        id: id.to_owned(),
        display_name: display_name.to_owned(),
    }
}

fn decode_click(click: &SlackInteractionBlockActionsEvent, name: Option<&str>) -> Option<(InboundEvent, Ack)> {
    let person = click.user.as_ref()?;
    let action = click.actions.as_ref()?.first()?;
    // A button in a message's blocks, or (in older apps) its attachments.
    let (message_ts, container_channel) = match &click.container {
        SlackInteractionActionContainer::Message(container) => (&container.message_ts, &container.channel_id),
        SlackInteractionActionContainer::MessageAttachment(container) => (&container.message_ts, &container.channel_id),
        SlackInteractionActionContainer::View(_) => return None,
    };
    let channel = click
        .channel
        .as_ref()
        .map(|channel| channel.id.to_string())
        .or_else(|| container_channel.as_ref().map(ToString::to_string))?;
    let token = action.value.clone().unwrap_or_else(|| action.action_id.to_string());
    let message_ts = message_ts.to_string();
    let thread_ts = click
        .message
        .as_ref()
        .and_then(|message| message.origin.thread_ts.as_ref())
        .map(ToString::to_string);
    let group = is_group(&channel);
    let action_ts = action
        .action_ts
        .as_ref()
        .map_or_else(|| click.trigger_id.to_string(), ToString::to_string);
    let event = InboundEvent {
        event_id: format!("{channel}:{message_ts}:{action_ts}"),
        user: user(
            person.id.as_ref(),
            name,
            person.name.as_deref().or(person.username.as_deref()),
        ),
        conversation: channel.clone(),
        conversation_kind: kind(group),
        thread: None,
        kind: InboundKind::ButtonPressed {
            token,
            message: MessageRef {
                conversation: channel.clone(),
                message: message_ts,
            },
        },
    };
    let ack = Ack {
        kind: AckKind::Click {
            trigger_id: click.trigger_id.to_string(),
        },
        channel,
        user: person.id.to_string(),
        thread_ts,
        group,
    };
    Some((event, ack))
}

fn decode_submission(
    submission: &SlackInteractionViewSubmissionEvent,
    name: Option<&str>,
) -> Option<(InboundEvent, Ack)> {
    let SlackView::Modal(modal) = &submission.view.view else {
        return None;
    };
    let token = modal.callback_id.as_ref()?.to_string();
    let origin: Origin = serde_json::from_str(modal.private_metadata.as_deref()?).ok()?;
    let values = submission.view.state_params.state.as_ref().map(|state| &state.values);
    let mut fields: Vec<FormValue> = Vec::new();
    let mut other: Option<String> = None;
    for (block, inputs) in values.into_iter().flatten() {
        let block = block.to_string();
        for value in inputs.values() {
            if block == OTHER_FIELD {
                other = Some(value.value.clone().unwrap_or_default());
                continue;
            }
            let (id, checked) = match block.strip_suffix(CHECKBOXES_SUFFIX) {
                Some(id) => {
                    let checked = value
                        .selected_options
                        .iter()
                        .flatten()
                        .filter_map(|option| option.value.parse::<usize>().ok())
                        .collect();
                    (id.to_owned(), Some(checked))
                }
                None => (block.clone(), None),
            };
            let index = if let Some(index) = fields.iter().position(|field| field.id == id) {
                index
            } else {
                fields.push(FormValue::typed(&id, ""));
                fields.len() - 1
            };
            let field = &mut fields[index];
            match checked {
                Some(checked) => *field = field.clone().with_checked(checked),
                None => field.text = value.value.clone().unwrap_or_default(),
            }
        }
    }
    // Slack gives the values as a map (in no order): sorted by question id,
    // so that one submission always reads the same.
    fields.sort_by(|a, b| a.id.cmp(&b.id));
    let kind_of = match other {
        Some(text) => InboundKind::FreeTextSubmitted { token, text },
        None => InboundKind::FormSubmitted { token, values: fields },
    };
    let person = &submission.user;
    let event = InboundEvent {
        event_id: format!(
            "{}:{}",
            submission.view.state_params.id, submission.view.state_params.hash
        ),
        user: user(
            person.id.as_ref(),
            name,
            person.name.as_deref().or(person.username.as_deref()),
        ),
        conversation: origin.conversation.clone(),
        conversation_kind: kind(origin.group),
        thread: None,
        kind: kind_of,
    };
    let ack = Ack {
        kind: AckKind::Submission,
        channel: origin.conversation,
        user: person.id.to_string(),
        thread_ts: origin.thread_ts,
        group: origin.group,
    };
    Some((event, ack))
}

fn decode_message(
    callback: &SlackPushEventCallback,
    message: &SlackMessageEvent,
    name: Option<&str>,
) -> Option<(InboundEvent, Ack)> {
    // The bot's own posts come back as events too; edits, joins and the
    // like are not answers.
    if message.sender.bot_id.is_some() {
        return None;
    }
    match &message.subtype {
        None | Some(SlackMessageEventType::ThreadBroadcast | SlackMessageEventType::FileShare) => {}
        Some(_) => return None,
    }
    let sender = message.sender.user.as_ref()?.to_string();
    let channel = message.origin.channel.as_ref()?.to_string();
    let group = match &message.origin.channel_type {
        Some(channel_type) => channel_type.0 != "im",
        None => is_group(&channel),
    };
    let ts = message.origin.ts.to_string();
    let thread_ts = message.origin.thread_ts.as_ref().map(ToString::to_string);
    let this = MessageRef {
        conversation: channel.clone(),
        message: ts.clone(),
    };
    // A reply in a thread replies to the thread's first message.
    let reply_to = thread_ts
        .as_ref()
        .filter(|thread| **thread != ts)
        .map(|thread| MessageRef {
            conversation: channel.clone(),
            message: thread.clone(),
        });
    let text = message
        .content
        .as_ref()
        .and_then(|content| content.text.clone())
        .unwrap_or_default();
    let kind_of = if text.trim().is_empty() {
        InboundKind::NonText {
            message: this,
            reply_to,
        }
    } else if reply_to.is_none() && askgate_adapter::introduce::is_greeting(&text) {
        // `@askgate start`: the person greets the bot.
        InboundKind::Greeting { message: this }
    } else {
        InboundKind::TextReply {
            message: this,
            text: unescape(&text),
            reply_to,
        }
    };
    let event = InboundEvent {
        event_id: callback.event_id.to_string(),
        user: user(&sender, name, None),
        conversation: channel.clone(),
        conversation_kind: kind(group),
        thread: None,
        kind: kind_of,
    };
    let ack = Ack {
        kind: AckKind::Message,
        channel,
        user: sender,
        thread_ts,
        group,
    };
    Some((event, ack))
}

/// A message's text as the person typed it: Slack sends `&`, `<` and `>`
/// as entities.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}
