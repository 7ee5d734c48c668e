//! What a person does, as Discord tells the bot: a click on a button
//! (`MESSAGE_COMPONENT`), a submitted modal (`MODAL_SUBMIT`), a message (with a
//! reply), and Discord's own PING of an HTTP endpoint. Each builds a
//! payload shaped as Discord API v10 sends it (a guild interaction carries
//! `guild_id` and `member.user`, a DM one `user`; a fresh id and token), and
//! an interaction goes out by gateway dispatch or by signed HTTP POST, as
//! the test chose.

use serde_json::{Value, json};

use super::messages::member;
use super::spec;
use super::state::{InteractionState, State};
use super::types::{
    AckVia, Delivery, DiscordChannel, DiscordUser, HttpAnswer, InteractionKind, InteractionRecord, Reply, Signature,
};
use super::validate::{self, Form};
use super::{APP_PERMISSIONS, APPLICATION_ID, FakeDiscord, signing};

/// The interaction callback in Discord's OpenAPI document.
const CALLBACK: &str = "/interactions/{interaction_id}/{interaction_token}/callback";

/// The attachment size limit interactions carry (10 MiB, Discord's default).
const ATTACHMENT_SIZE_LIMIT: u64 = 10 * 1024 * 1024;

impl FakeDiscord {
    /// A person clicks a component of a message the fake knows: an
    /// `INTERACTION_CREATE` of type 3 (`component_type` 2 for a button) with
    /// the message as it is now. Any `custom_id` is accepted, so a test can
    /// forge one. Returns the interaction once delivered: by gateway, as
    /// soon as it is dispatched; by HTTP, with the endpoint's answer taken as
    /// its first response.
    ///
    /// # Panics
    ///
    /// If the message is not in that channel, or is ephemeral for someone else.
    pub async fn click(
        &self,
        user: &DiscordUser,
        channel: &DiscordChannel,
        message_id: u64,
        custom_id: &str,
    ) -> InteractionRecord {
        let id = self.shared.state.record(|state| {
            let stored = state
                .message_in(channel.id, message_id)
                .unwrap_or_else(|| panic!("no message {message_id} in channel {} to click", channel.id));
            assert!(
                stored.ephemeral_for.is_none_or(|owner| owner == user.id),
                "message {message_id} is ephemeral for someone else"
            );
            let message = stored.json.clone();
            let (component_id, kind) = component_position(&message, custom_id);
            let mut data = json!({ "component_type": kind, "custom_id": custom_id, "id": component_id });
            if kind != 2 {
                data["values"] = json!([]);
            }
            state.new_interaction(InteractionKind::Component, Some((user, channel)), data, Some(message))
        });
        self.deliver(id).await
    }

    /// A person submits a modal with these values: an `INTERACTION_CREATE` of
    /// type 5 with one action row per text input. If the bot opened a modal
    /// with this `custom_id` for them, its fields come in its order (those
    /// not given empty) and the interaction carries the message of the
    /// component that opened it; otherwise the fields come as given.
    pub async fn submit_modal(
        &self,
        user: &DiscordUser,
        channel: &DiscordChannel,
        custom_id: &str,
        fields: &[(&str, &str)],
    ) -> InteractionRecord {
        let id = self.shared.state.record(|state| {
            let opened = state.interactions.values().rev().find_map(|interaction| {
                let modal = interaction.record.replies.iter().find_map(|reply| match reply {
                    Reply::Modal(modal) if modal.custom_id == custom_id => Some(modal.clone()),
                    _ => None,
                })?;
                (interaction.record.user_id == Some(user.id)).then_some((modal, interaction.record.message_id))
            });
            let order: Vec<String> = match &opened {
                Some((modal, _)) => modal.fields.iter().map(|field| field.custom_id.clone()).collect(),
                None => fields.iter().map(|(id, _)| (*id).to_owned()).collect(),
            };
            let rows: Vec<Value> = order
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let value = fields
                        .iter()
                        .find(|(id, _)| id == input)
                        .map_or("", |(_, value)| *value);
                    json!({
                        "type": 1,
                        "id": 2 * i + 1,
                        "components": [{ "type": 4, "id": 2 * i + 2, "custom_id": input, "value": value }],
                    })
                })
                .collect();
            let message = opened
                .and_then(|(_, message)| message)
                .and_then(|message| state.messages.get(&message))
                .map(|stored| stored.json.clone());
            let data = json!({ "custom_id": custom_id, "components": rows });
            state.new_interaction(InteractionKind::ModalSubmit, Some((user, channel)), data, message)
        });
        self.deliver(id).await
    }

    /// A person writes a message, optionally as a reply to a message in the
    /// channel (`message_reference` and `referenced_message`, and a ping of
    /// its author): a `MESSAGE_CREATE` dispatch (Discord sends messages only
    /// by gateway), with `guild_id`, `member` and `channel_type` in a guild.
    /// Returns the event's `d`.
    pub fn message(&self, user: &DiscordUser, channel: &DiscordChannel, content: &str, reply_to: Option<u64>) -> Value {
        self.shared.state.record(|state| {
            state.remember_user(user);
            state.channels.insert(channel.id, channel.clone());
            let message = state.person_message(user, channel, content, reply_to);
            let event = state.gateway_message(&message, channel.id);
            state.gateway.dispatch("MESSAGE_CREATE", event.clone());
            event
        })
    }

    /// Discord checks the HTTP interactions endpoint: a PING (type 1),
    /// which the endpoint must answer with `{"type": 1}`.
    ///
    /// # Panics
    ///
    /// If no endpoint was named with
    /// [`FakeDiscord::deliver_interactions_to`].
    pub async fn ping(&self) -> InteractionRecord {
        let id = self.shared.state.record(|state| {
            assert!(
                state.interactions_url.is_some(),
                "a PING goes to an HTTP interactions endpoint; name one with deliver_interactions_to"
            );
            state.new_interaction(InteractionKind::Ping, None, Value::Null, None)
        });
        self.deliver(id).await
    }

    /// Sends a recorded interaction: by gateway dispatch, or signed to the
    /// HTTP endpoint, taking a 2xx answer's body as its first response.
    async fn deliver(&self, id: u64) -> InteractionRecord {
        let (url, payload, signature) = self.shared.state.record(|state| {
            let url = state.interactions_url.clone();
            let signature = state.next_signatures.pop_front().unwrap_or(Signature::Valid);
            let payload = state
                .interactions
                .get(&id)
                .map(|i| i.record.payload.clone())
                .unwrap_or_default();
            if url.is_none() {
                let seq = state.gateway.dispatch("INTERACTION_CREATE", payload.clone());
                if let Some(interaction) = state.interactions.get_mut(&id) {
                    interaction.record.delivery = Delivery::Gateway { seq };
                }
            }
            (url, payload, signature)
        });
        if let Some(url) = url {
            let key = &self.shared.signing_key;
            let mut answer = signing::post(&self.shared.client, key, &url, &payload, signature).await;
            self.shared.state.record(|state| {
                take_http_response(state, id, &mut answer);
                if let Some(interaction) = state.interactions.get_mut(&id) {
                    interaction.record.delivery = Delivery::Http(answer);
                }
            });
        }
        self.interaction(id)
            .unwrap_or_else(|| panic!("interaction {id} was recorded"))
    }
}

/// Takes the body of a 2xx answer to an HTTP interaction as its first
/// response, as Discord does, and notes why not when it cannot.
fn take_http_response(state: &mut State, id: u64, answer: &mut HttpAnswer) {
    if answer.error.is_some() {
        return;
    }
    let status = answer.status.unwrap_or_default();
    if !(200..300).contains(&status) {
        answer.error = Some(format!("the endpoint answered {status}: the interaction failed"));
        return;
    }
    let acknowledged = state
        .interactions
        .get(&id)
        .is_some_and(|interaction| interaction.acknowledged().is_some());
    if answer.body.get("type").is_none() {
        if !acknowledged {
            answer.error = Some("the answer is no interaction response: the interaction failed".to_owned());
        }
        return;
    }
    // The answer is checked as the callback route's body would be.
    let mut form = Form::default();
    spec::check_body("POST", CALLBACK, &answer.body, &mut form);
    validate::rules("create_interaction_response", &answer.body, &mut form);
    let taken = form
        .finish()
        .and_then(|()| state.respond(id, None, &answer.body, AckVia::HttpResponse));
    if let Err(error) = taken {
        if error.is_violation() {
            let violation = format!("the answer to an HTTP interaction: {}", error.body());
            state.violations.push(violation);
        }
        answer.error = Some(format!("Discord refuses the response: {}", error.body()));
    }
}

impl State {
    /// Records a new interaction and returns its id.
    fn new_interaction(
        &mut self,
        kind: InteractionKind,
        who: Option<(&DiscordUser, &DiscordChannel)>,
        data: Value,
        message: Option<Value>,
    ) -> u64 {
        let id = self.snowflake();
        let token = format!(
            "aW50ZXJhY3Rpb246{id}OmFza2dhdGU6{:016x}",
            id.rotate_left(23) ^ 0x5bd1_e995
        );
        let mut payload = json!({
            "application_id": APPLICATION_ID.to_string(),
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
            "entitlements": [],
            "id": id.to_string(),
            "token": token,
            "type": match kind {
                InteractionKind::Ping => 1,
                InteractionKind::Component => 3,
                InteractionKind::ModalSubmit => 5,
            },
            "version": 1,
        });
        if kind == InteractionKind::Ping {
            payload["authorizing_integration_owners"] = json!({});
        }
        if let Some((user, channel)) = who {
            self.remember_user(user);
            self.channels.insert(channel.id, channel.clone());
            payload["app_permissions"] = json!(APP_PERMISSIONS);
            payload["channel"] = self.channel_json(channel);
            payload["channel_id"] = json!(channel.id.to_string());
            payload["data"] = data;
            payload["entitlement_sku_ids"] = json!([]);
            payload["locale"] = json!("en-US");
            match channel.guild_id() {
                Some(guild_id) => {
                    payload["authorizing_integration_owners"] = json!({ "0": guild_id.to_string() });
                    payload["context"] = json!(0);
                    payload["guild"] = json!({ "id": guild_id.to_string(), "locale": "en-US", "features": [] });
                    payload["guild_id"] = json!(guild_id.to_string());
                    payload["guild_locale"] = json!("en-US");
                    payload["member"] = member(Some(user.to_json()));
                }
                None => {
                    // A guild-installed app used in a DM: the owner is guild "0".
                    payload["authorizing_integration_owners"] = json!({ "0": "0" });
                    payload["context"] = json!(1);
                    payload["user"] = user.to_json();
                }
            }
            if let Some(message) = message {
                payload["message"] = message;
            }
        }
        let message_id = payload
            .pointer("/message/id")
            .and_then(Value::as_str)
            .and_then(|id| id.parse().ok());
        let record = InteractionRecord {
            id,
            token,
            kind,
            user_id: who.map(|(user, _)| user.id),
            channel_id: who.map(|(_, channel)| channel.id),
            message_id,
            custom_id: payload
                .pointer("/data/custom_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            payload,
            delivery: if self.interactions_url.is_some() {
                Delivery::Http(HttpAnswer {
                    status: None,
                    body: Value::Null,
                    error: Some("not answered yet".to_owned()),
                })
            } else {
                Delivery::Gateway { seq: None }
            },
            acknowledged_via: None,
            replies: Vec::new(),
        };
        self.interactions.insert(
            id,
            InteractionState {
                record,
                created: std::time::Instant::now(),
                original: None,
                follow_ups: Vec::new(),
            },
        );
        id
    }
}

/// The numeric `id` Discord gives the component with this `custom_id`
/// (components are numbered in order, rows included, from 1), and its type.
fn component_position(message: &Value, custom_id: &str) -> (u64, u64) {
    let mut number = 0;
    for row in message["components"].as_array().into_iter().flatten() {
        number += 1;
        for component in row["components"].as_array().into_iter().flatten() {
            number += 1;
            if component["custom_id"].as_str() == Some(custom_id) {
                let id = component["id"].as_u64().unwrap_or(number);
                return (id, component["type"].as_u64().unwrap_or(2));
            }
        }
    }
    (number + 1, 2)
}
