//! Discord's inbound side for the shared driver ([`askgate_adapter::Inbound`]),
//! and the engine's [`Reaction`] shown the Discord way: an interaction gets
//! exactly one first response within 3 s — an ephemeral message for a
//! notice, a modal for Other… and Answer…, a silent acknowledgement
//! otherwise — and anything after it is a follow-up; a typed message gets a
//! reply, sent in its channel's turn.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_adapter::{Inbound, Introduction};
use askgate_core::channel::{ConversationKind, Destination, InboundEvent, InboundSink, Reaction};
use askgate_core::form::Form;
use askgate_core::request::MAX_FREE_TEXT_CHARS;
use async_trait::async_trait;
use serde_json::{Value, json};
use serenity::model::application::Interaction;
use tokio::sync::oneshot;
use tracing::warn;

use crate::DiscordChannel;
use crate::channel::USER_PREFIX;
use crate::decode::{Ack, OTHER_FIELD, Update, decode};
use crate::limits;
use crate::render::message_body;
use crate::rest::Rest;

/// Discord wants the first response within 3 s; this leaves room for the
/// network.
const FIRST_RESPONSE_WITHIN: Duration = Duration::from_secs(2);

/// Interaction response types (Discord's interaction docs).
const MESSAGE: u8 = 4;
const DEFERRED_UPDATE: u8 = 6;
const MODAL: u8 = 9;

/// Ephemeral: only the person who acted sees the message.
const EPHEMERAL: u64 = 1 << 6;

/// Where an interaction's responses go: the first exactly once (as the HTTP
/// answer to Discord's request, or by the callback endpoint), the rest as
/// follow-ups.
pub struct Responder {
    id: String,
    token: String,
    application_id: String,
    rest: Rest,
    first: Mutex<First>,
}

enum First {
    /// The HTTP request Discord made is waiting for this answer.
    Http(oneshot::Sender<Value>),
    /// The interaction came by the gateway: answer by the callback endpoint.
    Rest,
    /// Answered already.
    Done,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The interaction token is a credential for 15 minutes: not printed.
        f.debug_struct("Responder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Responder {
    /// A responder for an interaction that came over the gateway.
    pub fn over_rest(interaction: &Interaction, rest: Rest) -> Arc<Self> {
        Arc::new(Self::new(interaction, rest, First::Rest))
    }

    /// A responder for an interaction that came to the interactions
    /// endpoint; the receiver gets the first response, for the HTTP answer.
    pub fn over_http(interaction: &Interaction, rest: Rest) -> (Arc<Self>, oneshot::Receiver<Value>) {
        let (sender, receiver) = oneshot::channel();
        (Arc::new(Self::new(interaction, rest, First::Http(sender))), receiver)
    }

    fn new(interaction: &Interaction, rest: Rest, first: First) -> Self {
        let (id, token, application_id) = match interaction {
            Interaction::Component(i) => (i.id.to_string(), i.token.clone(), i.application_id.to_string()),
            Interaction::Modal(i) => (i.id.to_string(), i.token.clone(), i.application_id.to_string()),
            Interaction::Command(i) | Interaction::Autocomplete(i) => {
                (i.id.to_string(), i.token.clone(), i.application_id.to_string())
            }
            Interaction::Ping(i) => (i.id.to_string(), i.token.clone(), i.application_id.to_string()),
            _ => (interaction.id().to_string(), String::new(), String::new()),
        };
        Self {
            id,
            token,
            application_id,
            rest,
            first: Mutex::new(first),
        }
    }

    /// Sends `response` as the first response, or, when one went already
    /// (a deferral), what it says as a follow-up.
    async fn respond(&self, response: Value) {
        let first = std::mem::replace(
            &mut *self.first.lock().unwrap_or_else(PoisonError::into_inner),
            First::Done,
        );
        let outcome = match first {
            First::Http(sender) => {
                // The HTTP request may have timed out meanwhile: nothing more to do then.
                let _ = sender.send(response);
                Ok(())
            }
            First::Rest => {
                let path = format!("/interactions/{}/{}/callback", self.id, self.token);
                self.rest.post_empty(&path, &response).await
            }
            First::Done => self.follow_up(&response).await,
        };
        if let Err(error) = outcome {
            warn!(event = %self.id, %error, "could not respond to a Discord interaction");
        }
    }

    /// After a deferral, a message response becomes an ephemeral follow-up;
    /// a modal can no longer be opened (Discord allows one only as the first
    /// response), so its title is said instead.
    async fn follow_up(&self, response: &Value) -> Result<(), askgate_core::ChannelError> {
        let content = match response["type"].as_u64() {
            Some(t) if t == u64::from(MESSAGE) => response["data"]["content"].clone(),
            Some(t) if t == u64::from(MODAL) => {
                json!(limits::content(response["data"]["title"].as_str().unwrap_or_default()))
            }
            _ => return Ok(()),
        };
        let body = json!({"content": content, "flags": EPHEMERAL, "allowed_mentions": {"parse": []}});
        let path = format!("/webhooks/{}/{}", self.application_id, self.token);
        self.rest.post_empty(&path, &body).await
    }
}

/// A notice only the acting person sees.
fn ephemeral(text: &str) -> Value {
    let mut data = message_body(text, Vec::new(), None);
    data["flags"] = json!(EPHEMERAL);
    json!({"type": MESSAGE, "data": data})
}

/// A paragraph field that takes what askgate takes: Discord stops the
/// person typing more than askgate's limit of one's own words.
/// Its label and placeholder are cut to Discord's limits (plain text: no
/// markdown there, nothing to escape).
fn text_input(custom_id: &str, label: &str, placeholder: &str) -> Value {
    let mut input = json!({
        "type": 4, "custom_id": custom_id, "style": 2,
        "label": limits::TEXT_INPUT_LABEL.ellipsize(label),
        "required": true, "max_length": MAX_FREE_TEXT_CHARS,
    });
    let placeholder = limits::TEXT_INPUT_PLACEHOLDER.ellipsize(placeholder);
    if !placeholder.is_empty() {
        input["placeholder"] = json!(placeholder);
    }
    json!({"type": 1, "components": [input]})
}

fn modal(custom_id: &str, title: &str, rows: Vec<Value>) -> Value {
    json!({"type": MODAL, "data": {
        "custom_id": custom_id,
        "title": limits::MODAL_TITLE.ellipsize(title),
        "components": Value::Array(rows),
    }})
}

/// Answer…'s form as a modal: one paragraph field per question.
fn form_modal(form: &Form) -> Value {
    let rows = form
        .fields
        .iter()
        .map(|field| text_input(&field.id, &field.label, &field.placeholder))
        .collect();
    modal(&form.token, &form.title, rows)
}

/// Discord's message flag that shows a message's links without embeds.
const SUPPRESS_EMBEDS: u64 = 1 << 2;

/// The response an interaction gets for `reaction`.
pub(crate) fn interaction_response(reaction: &Reaction) -> Value {
    match reaction {
        Reaction::Notice { text, .. } | Reaction::Reply { text } => ephemeral(text),
        Reaction::AskFreeText {
            token,
            title,
            placeholder,
            ..
        } => modal(token, title, vec![text_input(OTHER_FIELD, title, placeholder)]),
        Reaction::AskForm { form, .. } => form_modal(form),
        // Nothing to say (or a reaction this adapter does not know): the
        // mandatory acknowledgement only.
        _ => json!({"type": DEFERRED_UPDATE}),
    }
}

#[async_trait]
impl Inbound for DiscordChannel {
    type Update = Update;
    type Ack = Ack;

    fn name(&self) -> &str {
        askgate_core::Channel::name(self)
    }

    fn decode(&self, update: &Update) -> Option<(InboundEvent, Ack)> {
        decode(update)
    }

    /// Discord delivers an interaction once and a message once: a failure to
    /// store is told to the person instead (the driver does).
    fn redelivers(&self, _event: &InboundEvent) -> bool {
        false
    }

    fn first_response_within(&self) -> Option<Duration> {
        Some(FIRST_RESPONSE_WITHIN)
    }

    async fn defer(&self, ack: &Ack) {
        if let Ack::Interaction(responder) = ack {
            responder.respond(json!({"type": DEFERRED_UPDATE})).await;
        }
    }

    /// A DM is addressed by its person (`user_id`, askgate opens the DM); a
    /// server channel or a thread by its id, with the writer as the
    /// answerer. A thread is a channel of its own, and a message there
    /// carries only the thread's id, not its parent's: the block names the
    /// thread as `channel_id`, which askgate posts to as to any channel, and
    /// the engine knows a recipient configured with `channel_id` +
    /// `thread_id` by its thread.
    fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
        let id = |id: &str| toml::Value::String(id.to_owned());
        Some(match event.conversation_kind {
            ConversationKind::Direct => Introduction {
                destination: Destination {
                    conversation: format!("{USER_PREFIX}{}", event.user.id),
                    thread: None,
                },
                keys: vec![("user_id", id(&event.user.id))],
            },
            ConversationKind::Group => Introduction {
                destination: Destination {
                    conversation: event.conversation.clone(),
                    thread: None,
                },
                keys: vec![
                    ("channel_id", id(&event.conversation)),
                    ("answerers", toml::Value::Array(vec![id(&event.user.id)])),
                ],
            },
        })
    }

    async fn react(&self, ack: Ack, reaction: Reaction, _sink: &Arc<dyn InboundSink>) {
        match ack {
            Ack::Interaction(responder) => responder.respond(interaction_response(&reaction)).await,
            Ack::Message { channel_id, message_id } => {
                let mut body = match &reaction {
                    Reaction::Notice { text, .. } | Reaction::Reply { text } => message_body(text, Vec::new(), None),
                    Reaction::Introduce { text, snippet } => {
                        let mut body = message_body(text, Vec::new(), None);
                        // A code block, copied as is: the snippet has no backticks.
                        let said = body["content"].as_str().unwrap_or_default();
                        body["content"] = json!(format!("{said}\n```toml\n{snippet}\n```"));
                        body
                    }
                    _ => return,
                };
                // No embed of a link askgate writes (a person's page link
                // above all: an embed would have Discord fetch it).
                body["flags"] = json!(SUPPRESS_EMBEDS);
                body["message_reference"] = json!({"message_id": message_id, "fail_if_not_exists": false});
                body["allowed_mentions"] = json!({"parse": [], "replied_user": false});
                // In the channel's turn, after earlier replies there; serenity
                // handles each gateway event on a task of its own, so waiting
                // here holds up no one else.
                if let Err(error) = self.send(&channel_id, body).await {
                    warn!(channel = askgate_core::Channel::name(self), %error, "could not reply to a Discord message");
                }
            }
        }
    }
}
