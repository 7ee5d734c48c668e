//! What a person does, as Slack tells the app: a click on a button (a
//! `block_actions` interaction with the message as stored, a trigger id and
//! a `response_url`), a message and an edit (`message` events, with the
//! `rich_text` block a Slack client sends), and a submitted modal (a
//! `view_submission` with the state of its inputs). Also what a
//! `response_url` does when the app POSTs to it.

use std::time::Instant;

use serde_json::{Map, Value, json};

use super::methods::{Post, bool_arg, text_arg};
use super::mrkdwn::rich_text;
use super::state::Mode;
use super::state::{ResponseUrl, State, Trigger};
use super::types::{Click, DeliveryKind, Input, Person, Submission};
use super::{APP_ID, FakeSlack, RESPONSE_URL_LIFETIME, RESPONSE_URL_USES, TEAM_DOMAIN, TEAM_ID, VERIFICATION_TOKEN};

impl FakeSlack {
    /// A person clicks a button (any element with this `action_id`) of a
    /// message: `block_actions` goes to the app, with the button's `value`
    /// as stored. The returned [`Click`] has its trigger id and delivery, to
    /// look up what the person saw. An `action_id` the message does not have
    /// is sent as given, without a value, as a forged or stale click would be.
    ///
    /// # Panics
    ///
    /// If there is no such message, or it is ephemeral for someone else.
    pub fn click(&self, person: &Person, channel: &str, message_ts: &str, action_id: &str) -> Click {
        self.shared
            .change(|state| state.click(person, channel, message_ts, action_id))
    }

    /// A person writes in a conversation (a channel id or name, a DM id),
    /// in a thread if `thread_ts` is given: the message is stored and, if
    /// the bot is in the conversation, a `message` event goes to the app.
    /// Returns its `ts`. `text` is what Slack stores (`<@U…>` for mentions).
    ///
    /// # Panics
    ///
    /// If there is no such conversation.
    pub fn message(&self, person: &Person, channel: &str, text: &str, thread_ts: Option<&str>) -> String {
        self.shared
            .change(|state| state.person_message(person, channel, text, thread_ts))
    }

    /// A person edits their message: a `message_changed` event.
    ///
    /// # Panics
    ///
    /// If there is no such message by them.
    pub fn edit_message(&self, person: &Person, channel: &str, ts: &str, text: &str) {
        self.shared.change(|state| state.person_edit(person, channel, ts, text));
    }

    /// A person submits an open modal with these inputs, by `block_id`
    /// (inputs not named are left empty): `view_submission` goes to the app.
    ///
    /// # Panics
    ///
    /// If the view is not open for them, an input named is not in it, or
    /// the values would not pass Slack's client (a required input left
    /// empty, an unknown option, text outside `min_length`/`max_length`).
    pub fn submit_view<K: AsRef<str>, V: Into<Input>>(
        &self,
        person: &Person,
        view_id: &str,
        values: impl IntoIterator<Item = (K, V)>,
    ) -> Submission {
        let values = inputs(values);
        self.shared.change(|state| state.submit(person, view_id, &values))
    }

    /// Sends an event again, as Slack retries it (`retry_attempt` or
    /// `X-Slack-Retry-Num` one above its last attempt's); returns the new
    /// delivery.
    ///
    /// # Panics
    ///
    /// If no event had this `event_id`.
    pub fn redeliver(&self, event_id: &str) -> usize {
        self.shared.change(|state| {
            let delivery = state
                .deliveries
                .iter()
                .rev()
                .find(|delivery| delivery.record.event_id.as_deref() == Some(event_id))
                .unwrap_or_else(|| panic!("no event {event_id} to deliver again"));
            let retry = delivery.record.attempts.last().map_or(0, |attempt| attempt.retry) + 1;
            let payload = delivery.record.payload.clone();
            let reason = match state.mode {
                Some(Mode::Http { .. }) => "http_timeout",
                _ => "timeout",
            };
            state.deliver(DeliveryKind::Event, payload, false, None, None, retry, reason)
        })
    }
}

impl State {
    /// A person as interaction payloads name them.
    fn user_json(person: &Person) -> Value {
        json!({ "id": person.id, "username": person.name, "name": person.name, "team_id": TEAM_ID })
    }

    fn trigger(&mut self, user: &str) -> String {
        let n = self.short_id();
        let trigger_id = format!(
            "{}.{}.{:x}{n}",
            7_000_000_000_u64 + u64::try_from(self.deliveries.len()).unwrap_or_default(),
            1_234_567_890_123_u64,
            super::state::unix_micros()
        );
        self.triggers.insert(
            trigger_id.clone(),
            Trigger {
                user: user.to_owned(),
                sent: None,
                used: false,
            },
        );
        trigger_id
    }

    pub(crate) fn click(&mut self, person: &Person, channel: &str, message_ts: &str, action_id: &str) -> Click {
        let index = self
            .message_at(channel, message_ts)
            .unwrap_or_else(|| panic!("no message {message_ts} in {channel} to click"));
        let stored = self.messages[index].clone();
        assert!(
            stored.ephemeral_for.as_ref().is_none_or(|owner| *owner == person.id),
            "message {message_ts} is ephemeral for someone else"
        );
        // An `action_id` the message does not have is a forged (or stale)
        // click: sent as given, in the message's first actions block, without a value.
        let (block_id, element) = find_action(&stored.json, action_id).unwrap_or_else(|| {
            let block_id = stored.json["blocks"]
                .as_array()
                .and_then(|blocks| blocks.iter().find(|block| block["type"] == "actions"))
                .and_then(|block| block["block_id"].as_str())
                .map_or_else(|| self.short_id(), str::to_owned);
            let text = json!({ "type": "plain_text", "text": action_id, "emoji": true });
            (
                block_id,
                json!({ "type": "button", "action_id": action_id, "text": text }),
            )
        });
        let trigger_id = self.trigger(&person.id);
        let secret = self.short_id();
        let response_url = format!(
            "{}/actions/{TEAM_ID}/{}/{secret}",
            self.api_base,
            7_000_000_000_u64 + u64::try_from(self.response_urls.len()).unwrap_or_default()
        );
        self.response_urls.insert(
            response_url.clone(),
            ResponseUrl {
                channel: channel.to_owned(),
                message_ts: message_ts.to_owned(),
                user: person.id.clone(),
                uses: 0,
                issued: Instant::now(),
            },
        );
        let value = element.get("value").and_then(Value::as_str).map(str::to_owned);
        let mut action = json!({
            "action_id": action_id,
            "block_id": block_id,
            "text": element.get("text").cloned().unwrap_or(Value::Null),
            "type": element.get("type").cloned().unwrap_or_else(|| json!("button")),
            "action_ts": self.ts(),
        });
        for key in ["value", "style"] {
            if let Some(found) = element.get(key) {
                action[key] = found.clone();
            }
        }
        let ephemeral = stored.ephemeral_for.is_some();
        let name = self
            .channels
            .get(channel)
            .map_or_else(String::new, |known| known.name.clone());
        let mut payload = json!({
            "type": "block_actions",
            "user": State::user_json(person),
            "api_app_id": APP_ID,
            "token": VERIFICATION_TOKEN,
            "container": { "type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": ephemeral },
            "trigger_id": trigger_id,
            "team": { "id": TEAM_ID, "domain": TEAM_DOMAIN },
            "enterprise": null,
            "is_enterprise_install": false,
            "channel": { "id": channel, "name": name },
            "state": { "values": {} },
            "response_url": response_url,
            "actions": [action],
        });
        // Slack sends the message with a click, except an ephemeral one.
        if !ephemeral {
            payload["message"] = stored.json.clone();
        }
        let delivery = self.deliver(
            DeliveryKind::Interaction,
            payload.clone(),
            false,
            Some(trigger_id.clone()),
            None,
            0,
            "",
        );
        Click {
            delivery,
            user: person.id.clone(),
            channel: channel.to_owned(),
            message_ts: message_ts.to_owned(),
            action_id: action_id.to_owned(),
            block_id,
            value,
            trigger_id,
            response_url,
            payload,
        }
    }

    pub(crate) fn person_message(
        &mut self,
        person: &Person,
        channel: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> String {
        let channel = self
            .resolve(channel)
            .unwrap_or_else(|| panic!("no conversation {channel} to write in"));
        let ts = self.ts();
        let block_id = self.short_id();
        let mut message = json!({
            "user": person.id,
            "type": "message",
            "ts": ts,
            "client_msg_id": self.envelope_like_id(),
            "text": text,
            "team": TEAM_ID,
            "blocks": [rich_text(text, &block_id)],
        });
        if let Some(thread_ts) = thread_ts {
            message["thread_ts"] = json!(thread_ts);
            if let Some(parent) = self.message_at(&channel, thread_ts) {
                message["parent_user_id"] = self.messages[parent].json["user"].clone();
            }
        }
        let mentions = self.mentions(&message, false, None);
        self.messages.push(super::state::Stored {
            json: message,
            channel,
            ephemeral_for: None,
            by_bot: false,
            unfurl_links: None,
            unfurl_media: None,
            link_names: false,
            mentions,
        });
        let index = self.messages.len() - 1;
        let event = self.message_event_json(index);
        self.message_event(index, event);
        ts
    }

    pub(crate) fn person_edit(&mut self, person: &Person, channel: &str, ts: &str, text: &str) {
        let index = self
            .message_at(channel, ts)
            .filter(|&index| self.messages[index].json["user"] == person.id.as_str())
            .unwrap_or_else(|| panic!("no message {ts} by {} in {channel} to edit", person.id));
        let edited_ts = self.ts();
        let block_id = self.short_id();
        let previous = self.messages[index].json.clone();
        let mut message = previous.clone();
        message["text"] = json!(text);
        message["blocks"] = json!([rich_text(text, &block_id)]);
        message["edited"] = json!({ "user": person.id, "ts": edited_ts });
        let mentions = self.mentions(&message, false, None);
        let stored = &mut self.messages[index];
        stored.json = message.clone();
        stored.mentions = mentions;
        let event = json!({
            "type": "message",
            "subtype": "message_changed",
            "hidden": true,
            "message": message,
            "previous_message": previous,
            "channel": channel,
            "ts": edited_ts,
            "event_ts": edited_ts,
            "channel_type": self.channel_type(channel),
        });
        self.message_event(index, event);
    }

    pub(crate) fn submit(&mut self, person: &Person, view_id: &str, values: &[(String, Input)]) -> Submission {
        let view = self
            .views
            .iter()
            .find(|view| view.id == view_id && view.open)
            .unwrap_or_else(|| panic!("no open view {view_id} to submit"))
            .clone();
        assert_eq!(
            view.user, person.id,
            "view {view_id} is open for {}, not {}",
            view.user, person.id
        );
        let blocks = view.json["blocks"].as_array().cloned().unwrap_or_default();
        for (block_id, _) in values {
            assert!(
                blocks
                    .iter()
                    .any(|block| block["type"] == "input" && block["block_id"] == block_id.as_str()),
                "view {view_id} has no input block {block_id:?}"
            );
        }
        let mut state = Map::new();
        for block in blocks.iter().filter(|block| block["type"] == "input") {
            let block_id = block["block_id"].as_str().unwrap_or_default();
            let given = values.iter().find(|(id, _)| id == block_id).map(|(_, input)| input);
            let optional = block["optional"].as_bool().unwrap_or(false);
            let element = &block["element"];
            let action_id = element["action_id"].as_str().unwrap_or_default().to_owned();
            let value = input_state(element, given, optional, block_id);
            state.insert(block_id.to_owned(), json!({ action_id: value }));
        }
        let trigger_id = self.trigger(&person.id);
        let mut submitted = view.json.clone();
        submitted["state"] = json!({ "values": state });
        let payload = json!({
            "type": "view_submission",
            "team": { "id": TEAM_ID, "domain": TEAM_DOMAIN },
            "user": State::user_json(person),
            "api_app_id": APP_ID,
            "token": VERIFICATION_TOKEN,
            "trigger_id": trigger_id,
            "view": submitted,
            "response_urls": [],
            "is_enterprise_install": false,
            "enterprise": null,
        });
        let delivery = self.deliver(
            DeliveryKind::Interaction,
            payload.clone(),
            true,
            Some(trigger_id),
            Some(view_id.to_owned()),
            0,
            "",
        );
        Submission {
            delivery,
            view_id: view_id.to_owned(),
            user: person.id.clone(),
            payload,
        }
    }

    /// The app posted to a `response_url`: a new message (ephemeral unless
    /// `response_type` is `in_channel`), or the clicked message replaced or
    /// deleted. Works five times within 30 minutes, as on Slack.
    pub(crate) fn response_url(&mut self, path: &str, body: &Value) -> Result<(), String> {
        let url = format!("{}{path}", self.api_base);
        let Some(target) = self.response_urls.get_mut(&url) else {
            return Err("no_service".to_owned());
        };
        if target.uses >= RESPONSE_URL_USES || target.issued.elapsed() > RESPONSE_URL_LIFETIME {
            return Err("expired_url".to_owned());
        }
        target.uses += 1;
        let target = target.clone();
        let index = self.message_at(&target.channel, &target.message_ts);
        if bool_arg(body, "delete_original") == Some(true) {
            if let Some(index) = index {
                self.messages.remove(index);
            }
            return Ok(());
        }
        let content = self.content(body).map_err(|error| format!("{error:?}"))?;
        if bool_arg(body, "replace_original") == Some(true) {
            let index = index.ok_or_else(|| "message_not_found".to_owned())?;
            let edited_ts = self.ts();
            let stored = &self.messages[index];
            let mut message = stored.json.clone();
            message["text"] = json!(content.text.unwrap_or_default());
            match content.blocks {
                Some(blocks) => message["blocks"] = blocks,
                None => {
                    if let Some(object) = message.as_object_mut() {
                        object.remove("blocks");
                    }
                }
            }
            message["edited"] = json!({ "user": super::BOT_USER_ID, "ts": edited_ts });
            let mentions = self.mentions(&message, stored.link_names, stored.unfurl_links);
            let stored = &mut self.messages[index];
            stored.json = message;
            stored.mentions = mentions;
            return Ok(());
        }
        let in_channel = text_arg(body, "response_type").as_deref() == Some("in_channel");
        let mut post = Post::from_args(target.channel, content, body);
        if !in_channel {
            post.ephemeral_for = Some(target.user);
        }
        self.post(post);
        Ok(())
    }

    /// A UUID-shaped id, as Slack's `client_msg_id`.
    fn envelope_like_id(&mut self) -> String {
        let n = self.short_id();
        format!(
            "{:08x}-0000-4000-8000-{:0>12}",
            super::state::unix_micros() & 0xffff_ffff,
            n
        )
    }
}

/// The `block_id` and the element with this `action_id` in a message.
fn find_action(message: &Value, action_id: &str) -> Option<(String, Value)> {
    for block in message["blocks"].as_array().into_iter().flatten() {
        let elements = block.get("elements").and_then(Value::as_array).into_iter().flatten();
        for element in elements.chain(block.get("accessory")) {
            if element["action_id"] == action_id {
                let block_id = block["block_id"].as_str().unwrap_or_default().to_owned();
                return Some((block_id, element.clone()));
            }
        }
    }
    None
}

/// An input's entry in a submitted view's `state.values`.
fn input_state(element: &Value, given: Option<&Input>, optional: bool, block_id: &str) -> Value {
    let kind = element["type"].as_str().unwrap_or_default();
    let options: Vec<Value> = element["options"].as_array().cloned().unwrap_or_default();
    let chosen = |values: &[String]| -> Vec<Value> {
        for value in values {
            assert!(
                options.iter().any(|option| option["value"] == value.as_str()),
                "input {block_id:?} has no option {value:?}"
            );
        }
        options
            .iter()
            .filter(|option| values.iter().any(|value| option["value"] == value.as_str()))
            .cloned()
            .collect()
    };
    match (kind, given) {
        ("plain_text_input" | "email_text_input" | "url_text_input" | "number_input", given) => {
            let text = match given {
                Some(Input::Text(text)) => Some(text.clone()),
                None => None,
                Some(Input::Options(_)) => panic!("input {block_id:?} takes text, not options"),
            };
            let length = text.as_deref().map_or(0, |text| text.chars().count());
            assert!(optional || length > 0, "input {block_id:?} is required");
            let limit = |key: &str| element[key].as_u64().and_then(|limit| usize::try_from(limit).ok());
            if length > 0 {
                if let Some(min) = limit("min_length") {
                    assert!(
                        length >= min,
                        "input {block_id:?}: {length} characters, under its min_length {min}"
                    );
                }
                if let Some(max) = limit("max_length") {
                    assert!(
                        length <= max,
                        "input {block_id:?}: {length} characters, over its max_length {max}"
                    );
                }
            }
            json!({ "type": kind, "value": text })
        }
        ("checkboxes" | "multi_static_select", given) => {
            let values = match given {
                Some(Input::Options(values)) => chosen(values),
                None => Vec::new(),
                Some(Input::Text(_)) => panic!("input {block_id:?} takes options, not text"),
            };
            assert!(optional || !values.is_empty(), "input {block_id:?} is required");
            json!({ "type": kind, "selected_options": values })
        }
        ("radio_buttons" | "static_select", given) => {
            let values = match given {
                Some(Input::Options(values)) => chosen(values),
                None => Vec::new(),
                Some(Input::Text(_)) => panic!("input {block_id:?} takes an option, not text"),
            };
            assert!(values.len() <= 1, "input {block_id:?} takes one option");
            assert!(optional || !values.is_empty(), "input {block_id:?} is required");
            json!({ "type": kind, "selected_option": values.first().cloned().unwrap_or(Value::Null) })
        }
        (kind, _) => json!({ "type": kind }),
    }
}

/// The inputs a person gives, by `block_id`.
pub(crate) fn inputs<K: AsRef<str>, V: Into<Input>>(values: impl IntoIterator<Item = (K, V)>) -> Vec<(String, Input)> {
    values
        .into_iter()
        .map(|(key, value)| (key.as_ref().to_owned(), value.into()))
        .collect()
}
