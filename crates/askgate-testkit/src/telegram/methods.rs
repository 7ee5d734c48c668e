//! The Bot API methods the fake answers, as Telegram answers them: what each
//! checks beyond the vendored description (which `validate.rs` has checked
//! already), what it changes in the state and what it returns.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::entities::{Entity, format_text, set_text};
use super::server::{ApiError, as_int, boolean, int, object, string, string_list};
use super::state::{Origin, Shared, State, unix_now};
use super::{BOT_FIRST_NAME, BOT_ID, BOT_USERNAME, MESSAGE_NOT_MODIFIED, TgChat, Webhook, bot_user};

/// Telegram refuses a larger inline keyboard (`REPLY_MARKUP_TOO_LONG`); the
/// Bot API description states no number (see `spec/telegram/README.md`).
const MAX_KEYBOARD_BUTTONS: usize = 100;
const CALLBACK_QUERY_INVALID: &str =
    "Bad Request: query is too old and response timeout expired or query ID is invalid";

/// What a method answers: its `result`, or an error.
pub(crate) type Answer = Result<Value, ApiError>;

fn get_me() -> Value {
    json!({
        "id": BOT_ID,
        "is_bot": true,
        "first_name": BOT_FIRST_NAME,
        "username": BOT_USERNAME,
        "can_join_groups": true,
        "can_read_all_group_messages": false,
        "supports_inline_queries": false,
        "can_connect_to_business": false,
        "has_main_web_app": false,
    })
}

impl Shared {
    pub(crate) async fn call(&self, method: &str, params: &Value) -> Answer {
        match method {
            "getMe" => Ok(get_me()),
            "getUpdates" => self.get_updates(params).await,
            _ => {
                let answer = self.state.lock().call(method, params);
                self.updates_changed.notify_waiters();
                answer
            }
        }
    }

    async fn get_updates(&self, params: &Value) -> Answer {
        let offset = int(params, "offset").unwrap_or(0);
        let limit = int(params, "limit").map_or(100, |limit| limit.clamp(1, 100));
        let limit = usize::try_from(limit).unwrap_or(100);
        let timeout = u64::try_from(int(params, "timeout").unwrap_or(0)).unwrap_or(0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        let generation = {
            let mut state = self.state.lock();
            if state.webhook.is_some() {
                return Err(webhook_conflict());
            }
            if let Some(allowed) = string_list(params, "allowed_updates") {
                state.allowed_updates = Some(allowed);
            }
            state.confirm(offset);
            state.poll_generation += 1;
            state.poll_generation
        };
        // An older long poll, if any, now ends with a conflict.
        self.updates_changed.notify_waiters();
        loop {
            let changed = self.updates_changed.notified();
            {
                let mut state = self.state.lock();
                if state.poll_generation != generation {
                    state.poll_conflicts += 1;
                    return Err(ApiError::conflict(
                        "Conflict: terminated by other getUpdates request; make sure that only one bot instance \
                         is running",
                    ));
                }
                if state.webhook.is_some() {
                    return Err(webhook_conflict());
                }
                let batch: Vec<Value> = state.queue.iter().take(limit).cloned().collect();
                if !batch.is_empty() || state.closed || tokio::time::Instant::now() >= deadline {
                    return Ok(Value::Array(batch));
                }
            }
            // On timeout, the next turn answers with what there is.
            let _ = tokio::time::timeout_at(deadline, changed).await;
        }
    }
}

fn webhook_conflict() -> ApiError {
    ApiError::conflict(
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook \
         first",
    )
}

impl State {
    pub(crate) fn call(&mut self, method: &str, params: &Value) -> Answer {
        match method {
            "getWebhookInfo" => Ok(self.webhook_info()),
            "setWebhook" => self.set_webhook(params),
            "deleteWebhook" => {
                self.webhook = None;
                self.last_webhook_error = None;
                if boolean(params, "drop_pending_updates") == Some(true) {
                    self.queue.clear();
                }
                Ok(Value::Bool(true))
            }
            "sendMessage" => self.send_message(params),
            "editMessageText" => self.edit_message_text(params),
            "editMessageReplyMarkup" => self.edit_message_reply_markup(params),
            "answerCallbackQuery" => self.answer_callback_query(params),
            "deleteMessage" => {
                let (chat, id) = self.target_message(params)?;
                match self.messages.remove(&(chat.id, id)) {
                    Some(_) => Ok(Value::Bool(true)),
                    None => Err(ApiError::bad_request("Bad Request: message to delete not found")),
                }
            }
            "sendChatAction" => self.resolve_chat(params).map(|_| Value::Bool(true)),
            "setMyCommands" | "deleteMyCommands" => Ok(Value::Bool(true)),
            _ => Err(ApiError::not_found()),
        }
    }

    // --- webhooks ---

    fn webhook_info(&self) -> Value {
        let pending = self.queue.len();
        match &self.webhook {
            None => json!({ "url": "", "has_custom_certificate": false, "pending_update_count": pending }),
            Some(webhook) => {
                let mut info = json!({
                    "url": webhook.url,
                    "has_custom_certificate": false,
                    "pending_update_count": pending,
                    "ip_address": "127.0.0.1",
                    "max_connections": webhook.max_connections.unwrap_or(40),
                });
                if let Some((date, message)) = &self.last_webhook_error {
                    info["last_error_date"] = json!(date);
                    info["last_error_message"] = json!(message);
                }
                if let Some(allowed) = &webhook.allowed_updates {
                    info["allowed_updates"] = json!(allowed);
                }
                info
            }
        }
    }

    fn set_webhook(&mut self, params: &Value) -> Answer {
        let url = string(params, "url").unwrap_or_default();
        // Its length is the description's; the characters are stated in prose.
        let secret_token = string(params, "secret_token").filter(|secret| !secret.is_empty());
        if let Some(secret) = &secret_token {
            let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if !secret.chars().all(allowed) {
                return Err(ApiError::invalid(
                    "Bad Request: secret token contains unallowed characters",
                ));
            }
        }
        let drop_pending_updates = boolean(params, "drop_pending_updates") == Some(true);
        if drop_pending_updates {
            self.queue.clear();
        }
        let allowed_updates = string_list(params, "allowed_updates");
        if let Some(allowed) = &allowed_updates {
            self.allowed_updates = Some(allowed.clone());
        }
        self.last_webhook_error = None;
        self.webhook = (!url.is_empty()).then(|| Webhook {
            url,
            secret_token,
            drop_pending_updates,
            allowed_updates,
            max_connections: int(params, "max_connections"),
        });
        Ok(Value::Bool(true))
    }

    fn resolve_chat(&mut self, params: &Value) -> Result<TgChat, ApiError> {
        let id = match params.get("chat_id") {
            None | Some(Value::Null) => return Err(ApiError::bad_request("Bad Request: chat_id is empty")),
            Some(id) => as_int(id).ok_or_else(|| ApiError::bad_request("Bad Request: chat not found"))?,
        };
        Ok(self.chats.entry(id).or_insert_with(|| TgChat::guess(id)).clone())
    }

    fn target_message(&mut self, params: &Value) -> Result<(TgChat, i64), ApiError> {
        if params.get("inline_message_id").is_some() {
            return Err(ApiError::bad_request(
                "Bad Request: the fake Telegram server does not model inline messages",
            ));
        }
        let chat = self.resolve_chat(params)?;
        let id = int(params, "message_id")
            .ok_or_else(|| ApiError::bad_request("Bad Request: message identifier is not specified"))?;
        Ok((chat, id))
    }

    fn send_message(&mut self, params: &Value) -> Answer {
        let chat = self.resolve_chat(params)?;
        let (text, entities) = format_text("sendMessage", params)?;
        let markup = shown_markup(params)?;
        let reply = self.reply_target(&chat, params)?;
        let thread = int(params, "message_thread_id");
        let id = self.next_message_id(chat.id);
        let mut message = self.new_message(&chat, id, bot_user(), thread, reply);
        set_text(&mut message, text, &entities);
        self.name_mentioned(&mut message);
        if let Some(options) = object(params, "link_preview_options") {
            message.insert("link_preview_options".into(), options);
        }
        if boolean(params, "protect_content") == Some(true) {
            message.insert("has_protected_content".into(), true.into());
        }
        if let Some(markup) = markup {
            message.insert("reply_markup".into(), markup);
        }
        let message = Value::Object(message);
        self.store(chat.id, &message, Origin::Bot);
        self.send_times.entry(chat.id).or_default().push(Instant::now());
        Ok(message)
    }

    /// The message a send replies to (`reply_parameters`). Its
    /// `allow_sending_without_reply` is "always False for replies in
    /// another chat or forum topic" (the description's words): a reply in a
    /// forum topic to a message that is not there is refused even with it.
    fn reply_target(&self, chat: &TgChat, params: &Value) -> Result<Option<Value>, ApiError> {
        let Some(reply) = object(params, "reply_parameters") else {
            return Ok(None);
        };
        let Some(id) = int(&reply, "message_id") else {
            return Ok(None);
        };
        if reply.get("chat_id").is_some_and(|other| as_int(other) != Some(chat.id)) {
            return Err(ApiError::bad_request(
                "Bad Request: the fake Telegram server does not model replies to another chat",
            ));
        }
        let in_topic = chat.is_forum && int(params, "message_thread_id").is_some();
        let allowed = boolean(&reply, "allow_sending_without_reply") == Some(true) && !in_topic;
        match self.messages.get(&(chat.id, id)) {
            Some(stored) => Ok(Some(stored.json.clone())),
            None if allowed => Ok(None),
            None => Err(ApiError::bad_request("Bad Request: message to be replied not found")),
        }
    }

    /// The users of the `text_mention` entities in `message`, filled in as
    /// Telegram fills them: the person the fake knows by that id, or a user
    /// with that id and no name.
    fn name_mentioned(&self, message: &mut Map<String, Value>) {
        let Some(Value::Array(entities)) = message.get_mut("entities") else {
            return;
        };
        for entity in entities.iter_mut().filter(|entity| entity["type"] == "text_mention") {
            let Some(id) = entity.pointer("/user/id").and_then(Value::as_i64) else {
                continue;
            };
            if let Some(user) = self.users.get(&id) {
                let mut user = user.to_json();
                // Only an update's sender carries their language.
                if let Value::Object(fields) = &mut user {
                    fields.remove("language_code");
                }
                entity["user"] = user;
            }
        }
    }

    fn editable(&mut self, params: &Value) -> Result<&mut Map<String, Value>, ApiError> {
        let (chat, id) = self.target_message(params)?;
        let stored = self
            .messages
            .get_mut(&(chat.id, id))
            .ok_or_else(|| ApiError::bad_request("Bad Request: message to edit not found"))?;
        match (&mut stored.json, stored.origin) {
            (Value::Object(message), Origin::Bot) => Ok(message),
            _ => Err(ApiError::bad_request("Bad Request: message can't be edited")),
        }
    }

    fn edit_message_text(&mut self, params: &Value) -> Answer {
        let (text, entities) = format_text("editMessageText", params)?;
        let markup = shown_markup(params)?;
        let preview = object(params, "link_preview_options");
        let message = self.editable(params)?;
        if !message.contains_key("text") {
            return Err(ApiError::bad_request(
                "Bad Request: there is no text in the message to edit",
            ));
        }
        let entities_json: Vec<Value> = entities.iter().map(Entity::to_json).collect();
        let same_text = message.get("text").and_then(Value::as_str) == Some(text.as_str());
        let same_entities = message
            .get("entities")
            .map_or(&[][..], |e| e.as_array().map_or(&[][..], Vec::as_slice))
            == entities_json.as_slice();
        if same_text && same_entities && message.get("reply_markup") == markup.as_ref() {
            return Err(ApiError::bad_request(MESSAGE_NOT_MODIFIED));
        }
        set_text(message, text, &entities);
        message.insert("edit_date".into(), unix_now().into());
        if let Some(preview) = preview {
            message.insert("link_preview_options".into(), preview);
        }
        set_markup(message, markup);
        Ok(Value::Object(message.clone()))
    }

    fn edit_message_reply_markup(&mut self, params: &Value) -> Answer {
        let markup = shown_markup(params)?;
        let message = self.editable(params)?;
        if message.get("reply_markup") == markup.as_ref() {
            return Err(ApiError::bad_request(MESSAGE_NOT_MODIFIED));
        }
        message.insert("edit_date".into(), unix_now().into());
        set_markup(message, markup);
        Ok(Value::Object(message.clone()))
    }

    fn answer_callback_query(&mut self, params: &Value) -> Answer {
        let id = string(params, "callback_query_id").unwrap_or_default();
        match self.callbacks.get_mut(&id) {
            Some(answered) if !*answered => {
                *answered = true;
                Ok(Value::Bool(true))
            }
            _ => Err(ApiError::bad_request(CALLBACK_QUERY_INVALID)),
        }
    }
}

/// What a message shows of its `reply_markup`: an inline keyboard with
/// buttons, or nothing (a `force_reply` or reply keyboard is not echoed, as on
/// Telegram).
fn shown_markup(params: &Value) -> Result<Option<Value>, ApiError> {
    let Some(keyboard) = object(params, "reply_markup").and_then(|markup| markup.get("inline_keyboard").cloned())
    else {
        return Ok(None);
    };
    let buttons: usize = keyboard
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .map(Vec::len)
        .sum();
    if buttons > MAX_KEYBOARD_BUTTONS {
        return Err(ApiError::invalid("Bad Request: reply markup is too long"));
    }
    Ok((buttons > 0).then(|| json!({ "inline_keyboard": keyboard })))
}

fn set_markup(message: &mut Map<String, Value>, markup: Option<Value>) {
    match markup {
        Some(markup) => message.insert("reply_markup".into(), markup),
        None => message.remove("reply_markup"),
    };
}
