//! What the fake knows: the update queue, the users, chats and messages it
//! has seen, and the callback queries it is owed answers to; and what a
//! person's actions (a tap, a message, an edit) add to it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::entities::{plain_text, set_text};
use super::{Call, Failure, TgChat, TgChatKind, TgUser, Webhook, WebhookDelivery, bot_user};
use crate::fake::{Recorder, Requests};

const FIRST_UPDATE_ID: i64 = 730_000_001;
const TOPIC_ICON_COLOR: u32 = 7_322_096;

/// What the server, the delivery task and the handles share.
#[derive(Default)]
pub(crate) struct Shared {
    /// The state; its waiters are woken when a call or a webhook delivery
    /// attempt is recorded.
    pub(crate) state: Recorder<State>,
    /// The queue, the webhook or the delivery base changed.
    pub(crate) updates_changed: Notify,
}

/// Who a stored message is from: only the bot's can be edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Bot,
    Person,
    Service,
}

#[derive(Debug)]
pub(crate) struct Stored {
    pub(crate) json: Value,
    pub(crate) origin: Origin,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) requests: Requests<Call, Failure>,
    pub(crate) queue: VecDeque<Value>,
    pub(crate) next_update_id: i64,
    pub(crate) allowed_updates: Option<Vec<String>>,
    pub(crate) poll_generation: u64,
    /// Long polls ended by a newer one (two bot instances polling at once).
    pub(crate) poll_conflicts: usize,
    pub(crate) webhook: Option<Webhook>,
    /// Where webhook deliveries go instead of the webhook URL's host.
    pub(crate) webhook_base: Option<String>,
    pub(crate) deliveries: Vec<WebhookDelivery>,
    /// The Unix time and description of the last failed delivery.
    pub(crate) last_webhook_error: Option<(u64, String)>,
    pub(crate) users: HashMap<i64, TgUser>,
    pub(crate) chats: HashMap<i64, TgChat>,
    pub(crate) messages: BTreeMap<(i64, i64), Stored>,
    pub(crate) next_message_ids: HashMap<i64, i64>,
    pub(crate) send_times: HashMap<i64, Vec<Instant>>,
    pub(crate) callbacks: HashMap<String, bool>,
    pub(crate) next_callback: u64,
    /// Each request refused as invalid, described.
    pub(crate) violations: Vec<String>,
    pub(crate) closed: bool,
}

impl Default for State {
    fn default() -> Self {
        Self {
            requests: Requests::default(),
            queue: VecDeque::new(),
            next_update_id: FIRST_UPDATE_ID,
            allowed_updates: None,
            poll_generation: 0,
            poll_conflicts: 0,
            webhook: None,
            webhook_base: None,
            deliveries: Vec::new(),
            last_webhook_error: None,
            users: HashMap::new(),
            chats: HashMap::new(),
            messages: BTreeMap::new(),
            next_message_ids: HashMap::new(),
            send_times: HashMap::new(),
            callbacks: HashMap::new(),
            next_callback: 0,
            violations: Vec::new(),
            closed: false,
        }
    }
}

impl Shared {
    /// Records a call and takes the failure queued for its method.
    pub(crate) fn record(&self, call: Call, sent_as: &str) -> Option<Failure> {
        self.state
            .record(|state| state.requests.record(call, &sent_as.to_ascii_lowercase()))
    }
}

impl State {
    // --- updates ---

    pub(crate) fn confirm(&mut self, offset: i64) {
        if offset > 0 {
            self.queue.retain(|update| update_id(update) >= offset);
        } else if offset < 0 {
            let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            let excess = self.queue.len().saturating_sub(keep);
            self.queue.drain(..excess);
        }
    }

    fn allows(&self, kind: &str) -> bool {
        match &self.allowed_updates {
            Some(allowed) if !allowed.is_empty() => allowed.iter().any(|allowed| allowed == kind),
            _ => !matches!(kind, "chat_member" | "message_reaction" | "message_reaction_count"),
        }
    }

    fn queue_update(&mut self, kind: &str, payload: Value) -> Value {
        let id = self.next_update_id;
        self.next_update_id += 1;
        let mut update = Map::new();
        update.insert("update_id".into(), id.into());
        update.insert(kind.into(), payload);
        let update = Value::Object(update);
        if self.allows(kind) {
            self.queue.push_back(update.clone());
        }
        update
    }

    pub(crate) fn queue_raw(&mut self, update: Value) -> Value {
        let update = match update.get("update_id").and_then(Value::as_i64) {
            Some(id) => {
                self.next_update_id = self.next_update_id.max(id + 1);
                update
            }
            None => {
                let id = self.next_update_id;
                self.next_update_id += 1;
                let mut with_id = Map::new();
                with_id.insert("update_id".into(), id.into());
                if let Value::Object(fields) = update {
                    with_id.extend(fields);
                }
                Value::Object(with_id)
            }
        };
        let id = update_id(&update);
        let at = self
            .queue
            .iter()
            .position(|queued| update_id(queued) > id)
            .unwrap_or(self.queue.len());
        self.queue.insert(at, update.clone());
        update
    }

    // --- chats and messages ---

    pub(crate) fn remember(&mut self, user: &TgUser, chat: &TgChat) {
        self.users.insert(user.id, user.clone());
        self.chats.insert(chat.id, chat.clone());
    }

    fn chat_json(&self, chat: &TgChat) -> Value {
        let mut json = Map::new();
        json.insert("id".into(), chat.id.into());
        match chat.kind {
            TgChatKind::Private => {
                if let Some(user) = self.users.get(&chat.id) {
                    json.insert("first_name".into(), user.first_name.clone().into());
                    if let Some(username) = &user.username {
                        json.insert("username".into(), username.clone().into());
                    }
                }
            }
            TgChatKind::Group | TgChatKind::Supergroup => {
                if let Some(title) = &chat.title {
                    json.insert("title".into(), title.clone().into());
                }
            }
        }
        json.insert("type".into(), chat.kind.as_str().into());
        if chat.kind == TgChatKind::Supergroup && chat.is_forum {
            json.insert("is_forum".into(), true.into());
        }
        Value::Object(json)
    }

    pub(crate) fn next_message_id(&mut self, chat: i64) -> i64 {
        let next = self.next_message_ids.entry(chat).or_insert(1);
        let id = *next;
        *next += 1;
        id
    }

    pub(crate) fn store(&mut self, chat: i64, message: &Value, origin: Origin) {
        let id = message.get("message_id").and_then(Value::as_i64).unwrap_or_default();
        let next = self.next_message_ids.entry(chat).or_insert(1);
        *next = (*next).max(id + 1);
        self.messages.insert(
            (chat, id),
            Stored {
                json: message.clone(),
                origin,
            },
        );
    }

    pub(crate) fn store_and_queue(&mut self, chat: i64, kind: &str, message: Map<String, Value>) -> Value {
        let message = Value::Object(message);
        self.store(chat, &message, Origin::Person);
        self.queue_update(kind, message)
    }

    pub(crate) fn store_topic(&mut self, chat: &TgChat, id: i64, name: &str) -> Value {
        let topic = json!({
            "message_id": id,
            "message_thread_id": id,
            "from": bot_user(),
            "chat": self.chat_json(chat),
            "date": unix_now(),
            "forum_topic_created": { "name": name, "icon_color": TOPIC_ICON_COLOR },
            "is_topic_message": true,
        });
        self.store(chat.id, &topic, Origin::Service);
        topic
    }

    /// The first message of a forum topic, made up if the fake has not seen it.
    fn topic_root(&mut self, chat: &TgChat, thread: i64) -> Value {
        match self.messages.get(&(chat.id, thread)) {
            Some(stored) => stored.json.clone(),
            None => self.store_topic(chat, thread, &format!("Topic {thread}")),
        }
    }

    /// The thread a new message lands in, and whether it is a forum topic.
    fn thread_for(chat: &TgChat, requested: Option<i64>, reply: Option<&Value>) -> Option<(i64, bool)> {
        let thread_of = |message: &Value| message.get("message_thread_id").and_then(Value::as_i64);
        match (chat.kind, chat.is_forum) {
            (TgChatKind::Supergroup, true) => requested
                .or_else(|| {
                    reply
                        .filter(|message| message.get("is_topic_message") == Some(&Value::Bool(true)))
                        .and_then(thread_of)
                })
                .map(|thread| (thread, true)),
            (TgChatKind::Supergroup, false) => reply
                .map(|message| {
                    thread_of(message)
                        .unwrap_or_else(|| message.get("message_id").and_then(Value::as_i64).unwrap_or_default())
                })
                .or(requested)
                .map(|thread| (thread, false)),
            _ => None,
        }
    }

    /// The head of a new message: id, thread, sender, chat, date, reply.
    pub(crate) fn new_message(
        &mut self,
        chat: &TgChat,
        id: i64,
        from: Value,
        thread: Option<i64>,
        reply: Option<Value>,
    ) -> Map<String, Value> {
        let thread = Self::thread_for(chat, thread, reply.as_ref());
        let reply = match (reply, thread) {
            (Some(reply), _) => Some(reply),
            (None, Some((thread, true))) if thread != id => Some(self.topic_root(chat, thread)),
            (None, _) => None,
        };
        let mut message = Map::new();
        message.insert("message_id".into(), id.into());
        if let Some((thread, _)) = thread {
            message.insert("message_thread_id".into(), thread.into());
        }
        message.insert("from".into(), from);
        message.insert("chat".into(), self.chat_json(chat));
        message.insert("date".into(), unix_now().into());
        if let Some(mut reply) = reply {
            if let Value::Object(fields) = &mut reply {
                fields.remove("reply_to_message");
            }
            message.insert("reply_to_message".into(), reply);
        }
        if thread.is_some_and(|(_, topic)| topic) {
            message.insert("is_topic_message".into(), true.into());
        }
        message
    }

    pub(crate) fn person_message(
        &mut self,
        user: &TgUser,
        chat: &TgChat,
        reply_to: Option<i64>,
        thread: Option<i64>,
    ) -> Map<String, Value> {
        let reply = reply_to.and_then(|id| self.messages.get(&(chat.id, id)).map(|stored| stored.json.clone()));
        let id = self.next_message_id(chat.id);
        self.new_message(chat, id, user.to_json(), thread, reply)
    }

    pub(crate) fn edit_person_message(&mut self, user: &TgUser, chat: &TgChat, message_id: i64, text: &str) -> Value {
        let (text, entities) = plain_text(text);
        let message = match self.messages.get_mut(&(chat.id, message_id)) {
            Some(stored) => {
                if let Value::Object(message) = &mut stored.json {
                    set_text(message, text, &entities);
                    message.insert("edit_date".into(), unix_now().into());
                }
                stored.json.clone()
            }
            None => {
                let mut message = self.new_message(chat, message_id, user.to_json(), None, None);
                message.insert("edit_date".into(), unix_now().into());
                set_text(&mut message, text, &entities);
                let message = Value::Object(message);
                self.store(chat.id, &message, Origin::Person);
                message
            }
        };
        self.queue_update("edited_message", message)
    }

    pub(crate) fn tap(&mut self, user: &TgUser, chat: &TgChat, message_id: i64, data: &str) -> Value {
        let message = match self.messages.get(&(chat.id, message_id)) {
            Some(stored) => stored.json.clone(),
            None => json!({ "chat": self.chat_json(chat), "message_id": message_id, "date": 0 }),
        };
        self.next_callback += 1;
        let id = format!("{}{:06}", user.id.unsigned_abs(), self.next_callback);
        self.callbacks.insert(id.clone(), false);
        let chat_instance = chat.id.wrapping_mul(-2_654_435_761).wrapping_sub(97_531).to_string();
        let query = json!({
            "id": id,
            "from": user.to_json(),
            "message": message,
            "chat_instance": chat_instance,
            "data": data,
        });
        self.queue_update("callback_query", query)
    }
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

pub(crate) fn update_id(update: &Value) -> i64 {
    update.get("update_id").and_then(Value::as_i64).unwrap_or_default()
}

pub(crate) fn sticker_json() -> Value {
    json!({
        "width": 512,
        "height": 512,
        "emoji": "\u{1F44D}",
        "set_name": "AskgateTestStickers",
        "is_animated": false,
        "is_video": false,
        "type": "regular",
        "thumbnail": {
            "file_id": "AAMCAgADGQEAAQ2hZ2eC1xkAAZ8Ld5QAAc3XlPmmiNsFAAJ3AQACVp29CiqXDJ0ZBfbZAQAHbQADNgQ",
            "file_unique_id": "AQADdwEAAladvQpy",
            "file_size": 5452,
            "width": 128,
            "height": 128
        },
        "file_id": "CAACAgIAAxkBAAENoWdngtcZAAGfC3eUAAHN15T5pojbBQACdwEAAladvQoqlwydGQX22TYE",
        "file_unique_id": "AgADdwEAAladvQo",
        "file_size": 23_456
    })
}
