//! The interaction routes, as Discord answers them: the first response
//! (`POST /interactions/{id}/{token}/callback`, or the body of the answer to
//! an HTTP interaction), follow-ups and the original response through the
//! interaction's webhook. One first response an interaction, within 3 s
//! (`10062 Unknown interaction` after, `40060` for a second); the webhook
//! lives 15 minutes and only once the interaction is acknowledged
//! (`10015 Unknown Webhook` otherwise).

use std::time::Duration;

use serde_json::Value;

use super::APPLICATION_ID;
use super::messages::{Draft, EPHEMERAL, LOADING};
use super::server::{Answer, ApiError};
use super::state::{State, within};
use super::types::{AckVia, InteractionKind, Reply, modal_of, rows_of};
use super::validate::{self, Form};

/// How long Discord waits for an interaction's first response.
pub const INTERACTION_RESPONSE_WINDOW: Duration = Duration::from_secs(3);
/// How long an interaction's token (its webhook) stays valid.
pub const INTERACTION_TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);

impl State {
    /// `POST /interactions/{id}/{token}/callback`.
    pub(crate) fn callback(&mut self, id: u64, token: &str, body: &Value) -> Result<Answer, ApiError> {
        self.respond(id, Some(token), body, AckVia::Callback)
            .map(|()| Answer::NoContent)
    }

    /// An interaction's first response, through the callback route or as
    /// the body of the answer to an HTTP interaction.
    pub(crate) fn respond(&mut self, id: u64, token: Option<&str>, body: &Value, via: AckVia) -> Result<(), ApiError> {
        let interaction = self.interactions.get(&id).ok_or_else(ApiError::unknown_interaction)?;
        if token.is_some_and(|token| token != interaction.record.token) {
            return Err(ApiError::unknown_interaction());
        }
        if interaction.acknowledged().is_some() {
            return Err(ApiError::already_acknowledged());
        }
        if !within(interaction.created, INTERACTION_RESPONSE_WINDOW) {
            return Err(ApiError::unknown_interaction());
        }
        let record = interaction.record.clone();
        let kind = body.get("type").and_then(Value::as_u64);
        let allowed: &[u64] = match record.kind {
            InteractionKind::Ping => &[1],
            InteractionKind::Component => &[4, 5, 6, 7, 9],
            InteractionKind::ModalSubmit if record.message_id.is_some() => &[4, 5, 6, 7],
            InteractionKind::ModalSubmit => &[4, 5],
        };
        let Some(kind) = kind.filter(|kind| allowed.contains(kind)) else {
            let choices: Vec<String> = allowed.iter().map(u64::to_string).collect();
            let mut form = Form::default();
            // A Python tuple, as Discord words it: `(1,)`, `(4, 5)`.
            let listed = match choices.as_slice() {
                [one] => format!("{one},"),
                _ => choices.join(", "),
            };
            form.error("type", "BASE_TYPE_CHOICES", format!("Value must be one of ({listed})."));
            return form.finish();
        };
        let data = body.get("data").filter(|data| !data.is_null());
        let empty = Value::Object(serde_json::Map::new());
        let data = data.unwrap_or(&empty);
        let channel_id = record.channel_id.unwrap_or_default();
        let ephemeral_for = (data.get("flags").and_then(Value::as_u64).unwrap_or(0) & EPHEMERAL != 0)
            .then_some(record.user_id)
            .flatten();
        let (reply, original) = match kind {
            1 => (Reply::Pong, None),
            4 => {
                if validate::is_empty(data) {
                    return Err(ApiError::empty_message());
                }
                let draft = Draft {
                    channel_id,
                    interaction: true,
                    ephemeral_for,
                    extra_flags: 0,
                };
                let message_id = self.store_bot_message(&draft, data, None);
                let seen = self.messages.get(&message_id).map(super::state::Stored::seen);
                let reply = Reply::Message {
                    message_id,
                    content: seen.as_ref().map(|seen| seen.content.clone()).unwrap_or_default(),
                    rows: seen.map(|seen| seen.rows).unwrap_or_default(),
                    ephemeral: ephemeral_for.is_some(),
                };
                (reply, Some(message_id))
            }
            5 => {
                let draft = Draft {
                    channel_id,
                    interaction: true,
                    ephemeral_for,
                    extra_flags: LOADING,
                };
                let placeholder = self.store_bot_message(&draft, &Value::Null, None);
                let reply = Reply::Deferred {
                    ephemeral: ephemeral_for.is_some(),
                };
                (reply, Some(placeholder))
            }
            6 => (Reply::DeferredUpdate, record.message_id),
            7 => {
                let message_id = record.message_id.ok_or_else(ApiError::unknown_message)?;
                let message = self.edit_bot_message(message_id, data)?;
                let reply = Reply::UpdatedMessage {
                    message_id,
                    content: message["content"].as_str().unwrap_or_default().to_owned(),
                    rows: rows_of(&message),
                };
                (reply, Some(message_id))
            }
            _ => (Reply::Modal(modal_of(data)), None),
        };
        if let Some(interaction) = self.interactions.get_mut(&id) {
            interaction.record.acknowledged_via = Some(via);
            interaction.record.replies.push(reply);
            interaction.original = original;
        }
        Ok(())
    }

    /// The interaction whose webhook this is: the application's, a token
    /// still valid, and an interaction already acknowledged.
    fn webhook_interaction(&self, application: u64, token: &str) -> Result<u64, ApiError> {
        if application != APPLICATION_ID {
            return Err(ApiError::unknown_webhook());
        }
        self.interactions
            .values()
            .find(|interaction| {
                interaction.record.token == token
                    && interaction.acknowledged().is_some()
                    && within(interaction.created, INTERACTION_TOKEN_LIFETIME)
            })
            .map(|interaction| interaction.record.id)
            .ok_or_else(ApiError::unknown_webhook)
    }

    /// `POST /webhooks/{application_id}/{token}`: a follow-up message.
    pub(crate) fn follow_up(&mut self, application: u64, token: &str, body: &Value) -> Result<Value, ApiError> {
        let id = self.webhook_interaction(application, token)?;
        if validate::is_empty(body) {
            return Err(ApiError::empty_message());
        }
        let record = self.interactions.get(&id).map(|interaction| interaction.record.clone());
        let Some(record) = record else {
            return Err(ApiError::unknown_webhook());
        };
        let ephemeral_for = (body.get("flags").and_then(Value::as_u64).unwrap_or(0) & EPHEMERAL != 0)
            .then_some(record.user_id)
            .flatten();
        let draft = Draft {
            channel_id: record.channel_id.unwrap_or_default(),
            interaction: true,
            ephemeral_for,
            extra_flags: 0,
        };
        let message_id = self.store_bot_message(&draft, body, None);
        let message = self
            .messages
            .get(&message_id)
            .map(|stored| stored.json.clone())
            .unwrap_or_default();
        if let Some(interaction) = self.interactions.get_mut(&id) {
            interaction.follow_ups.push(message_id);
            interaction.record.replies.push(Reply::FollowUp {
                message_id,
                content: message["content"].as_str().unwrap_or_default().to_owned(),
                rows: rows_of(&message),
                ephemeral: ephemeral_for.is_some(),
            });
        }
        Ok(message)
    }

    /// `GET`, `PATCH` or `DELETE /webhooks/{application_id}/{token}/messages/{@original|id}`.
    pub(crate) fn webhook_message(
        &mut self,
        method: &str,
        application: u64,
        token: &str,
        message: Option<u64>,
        body: &Value,
    ) -> Result<Answer, ApiError> {
        let id = self.webhook_interaction(application, token)?;
        let interaction = self.interactions.get(&id).ok_or_else(ApiError::unknown_webhook)?;
        let target = match message {
            None => interaction.original,
            Some(message) => Some(message)
                .filter(|message| interaction.original == Some(*message) || interaction.follow_ups.contains(message)),
        };
        let target = target
            .filter(|target| self.messages.contains_key(target))
            .ok_or_else(ApiError::unknown_message)?;
        match method {
            "GET" => Ok(Answer::Json(
                self.messages
                    .get(&target)
                    .map(|stored| stored.json.clone())
                    .unwrap_or_default(),
            )),
            "DELETE" => {
                self.delete_message(target);
                Ok(Answer::NoContent)
            }
            _ => {
                let message = self.edit_bot_message(target, body)?;
                if let Some(interaction) = self.interactions.get_mut(&id) {
                    interaction.record.replies.push(Reply::Edited {
                        message_id: target,
                        content: message["content"].as_str().unwrap_or_default().to_owned(),
                        rows: rows_of(&message),
                    });
                }
                Ok(Answer::Json(message))
            }
        }
    }
}
