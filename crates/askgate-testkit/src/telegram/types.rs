//! The public data types of the fake: the calls it records, the failures a
//! test queues, the users and chats it puts in updates, the webhook and its
//! delivery attempts, and the error of a wait that ran out of time.

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// One request the fake received with the right token.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The method, spelled as the Bot API documentation spells it
    /// (`sendMessage`, whatever the case it was sent in); an unknown method
    /// as sent, with its first letter lowercased.
    pub method: String,
    /// The parameters: the JSON body, or the form or query fields as an object.
    pub body: Value,
}

/// How the next call of a method fails. Each failure is used once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// `429 Too Many Requests: retry after N`, with `parameters.retry_after`.
    TooManyRequests {
        /// Seconds the client must wait.
        retry_after: u32,
    },
    /// `400` with this description (e.g. `Bad Request: chat not found`).
    BadRequest(String),
    /// `403` with this description (e.g. `Forbidden: bot was blocked by the user`).
    Forbidden(String),
    /// `500 Internal Server Error`. teloxide sleeps 10 s after any 5xx.
    ServerError,
    /// HTTP 200 with `"ok": false`, this `error_code` and description: the
    /// error reaches teloxide without its 5xx sleep.
    OkFalse {
        /// The `error_code` in the body.
        code: u16,
        /// The `description` in the body.
        description: String,
    },
    /// The call takes effect at once, but its answer comes after this delay.
    Slow(Duration),
    /// The connection is dropped without an answer (after the call took no effect).
    Disconnect,
    /// This HTTP status with a body of `bytes` bytes, made as it is sent
    /// and never held (a proxy's error page of gigabytes); the call takes
    /// no effect.
    Huge {
        /// The HTTP status.
        status: u16,
        /// How long the body is.
        bytes: u64,
    },
}

/// A Telegram user, as the fake puts them in updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TgUser {
    /// The user id.
    pub id: i64,
    /// The first name.
    pub first_name: String,
    /// The username, without `@`.
    pub username: Option<String>,
}

impl TgUser {
    /// A user without a username.
    pub fn new(id: i64, first_name: &str) -> Self {
        Self {
            id,
            first_name: first_name.to_owned(),
            username: None,
        }
    }

    /// The same user with this username (without `@`).
    #[must_use]
    pub fn with_username(mut self, username: &str) -> Self {
        self.username = Some(username.to_owned());
        self
    }

    /// The user as a Bot API `User` object.
    pub fn to_json(&self) -> Value {
        let mut user = Map::new();
        user.insert("id".into(), self.id.into());
        user.insert("is_bot".into(), false.into());
        user.insert("first_name".into(), self.first_name.clone().into());
        if let Some(username) = &self.username {
            user.insert("username".into(), username.clone().into());
        }
        user.insert("language_code".into(), "en".into());
        Value::Object(user)
    }
}

/// The type of a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TgChatKind {
    /// A one-to-one chat with a user.
    Private,
    /// A basic group.
    Group,
    /// A supergroup (a forum when [`TgChat::is_forum`]).
    Supergroup,
}

impl TgChatKind {
    /// The Bot API's name for it: `private`, `group` or `supergroup`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Group => "group",
            Self::Supergroup => "supergroup",
        }
    }
}

/// A Telegram chat, as the fake puts it in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TgChat {
    /// The chat id: a user's id for a private chat, negative for groups,
    /// `-100…` for supergroups.
    pub id: i64,
    /// Private, group or supergroup.
    pub kind: TgChatKind,
    /// The title of a group or supergroup.
    pub title: Option<String>,
    /// Whether a supergroup has topics.
    pub is_forum: bool,
}

impl TgChat {
    /// The private chat with this user (its id is the user's id).
    pub fn private(user_id: i64) -> Self {
        Self {
            id: user_id,
            kind: TgChatKind::Private,
            title: None,
            is_forum: false,
        }
    }

    /// A basic group (use a negative id such as `-4_012_345_678`).
    pub fn group(id: i64, title: &str) -> Self {
        Self {
            id,
            kind: TgChatKind::Group,
            title: Some(title.to_owned()),
            is_forum: false,
        }
    }

    /// A supergroup without topics (use an id such as `-1_001_234_567_890`).
    pub fn supergroup(id: i64, title: &str) -> Self {
        Self {
            id,
            kind: TgChatKind::Supergroup,
            title: Some(title.to_owned()),
            is_forum: false,
        }
    }

    /// A supergroup with topics (use an id such as `-1_001_234_567_890`).
    pub fn forum(id: i64, title: &str) -> Self {
        Self {
            is_forum: true,
            ..Self::supergroup(id, title)
        }
    }

    /// The chat a message to an unseen chat id goes to.
    pub(crate) fn guess(id: i64) -> Self {
        if id > 0 {
            Self::private(id)
        } else if id <= -1_000_000_000_000 {
            Self::supergroup(id, &format!("Supergroup {id}"))
        } else {
            Self::group(id, &format!("Group {id}"))
        }
    }
}

/// The webhook the bot set with `setWebhook`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The URL.
    pub url: String,
    /// `secret_token`, which Telegram would send as `X-Telegram-Bot-Api-Secret-Token`.
    pub secret_token: Option<String>,
    /// Whether `setWebhook` asked to drop pending updates.
    pub drop_pending_updates: bool,
    /// `allowed_updates`, if given.
    pub allowed_updates: Option<Vec<String>>,
    /// `max_connections`, if given.
    pub max_connections: Option<i64>,
}

/// One attempt of the fake to deliver an update to the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// The update's `update_id`.
    pub update_id: i64,
    /// Where it was sent: the base given to
    /// [`FakeTelegram::deliver_webhooks_to`](super::FakeTelegram::deliver_webhooks_to) with the webhook URL's path.
    pub url: String,
    /// The HTTP status of the answer; `None` when the connection failed or
    /// no answer came within [`WEBHOOK_TIMEOUT`](super::WEBHOOK_TIMEOUT).
    pub status: Option<u16>,
    /// When the request was sent.
    pub at: Instant,
}

impl WebhookDelivery {
    /// Whether the webhook acknowledged the update (a 2xx answer), which
    /// takes it off the queue.
    pub fn acknowledged(&self) -> bool {
        self.status.is_some_and(|status| (200..300).contains(&status))
    }
}

/// A wait on the fake's calls or webhook deliveries that ran out of time.
#[derive(Debug, Clone)]
pub struct WaitTimeout {
    /// What was waited for.
    pub waited_for: String,
    /// How long.
    pub timeout: Duration,
    /// The calls the fake had received by then.
    pub calls: Vec<Call>,
    /// The webhook deliveries the fake had attempted by then.
    pub deliveries: Vec<WebhookDelivery>,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let methods: Vec<&str> = self.calls.iter().map(|call| call.method.as_str()).collect();
        write!(
            f,
            "waited {:?} for {} on the fake Telegram server; calls so far: {methods:?}",
            self.timeout, self.waited_for
        )?;
        if !self.deliveries.is_empty() {
            let attempts: Vec<String> = self
                .deliveries
                .iter()
                .map(|delivery| {
                    let status = delivery
                        .status
                        .map_or_else(|| "no answer".to_owned(), |status| status.to_string());
                    format!("{} to {}: {status}", delivery.update_id, delivery.url)
                })
                .collect();
            write!(f, "; webhook deliveries so far: {attempts:?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for WaitTimeout {}

/// Someone a message mentions: an entity that notifies that person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TgMention {
    /// A `text_mention` (`<a href="tg://user?id=…">`): the person by id.
    User(i64),
    /// A `mention` Telegram found in the text (`@username`), without the `@`.
    Username(String),
}

/// A message of the bot's as a person sees it, for reading replies back.
#[derive(Debug, Clone, PartialEq)]
pub struct TgMessage {
    /// Its id in its chat.
    pub message_id: i64,
    /// The chat.
    pub chat_id: i64,
    /// The forum topic or reply thread it is in.
    pub thread: Option<i64>,
    /// The message it replies to (`reply_to_message`), if any.
    pub reply_to: Option<i64>,
    /// Its text after parsing (what a person reads).
    pub text: String,
    /// Who it notifies, in order.
    pub mentions: Vec<TgMention>,
    /// The message object, as stored.
    pub json: Value,
}

impl TgMessage {
    /// The message as the fake stored it.
    pub(crate) fn of(json: &Value) -> Self {
        let text = json["text"].as_str().unwrap_or_default().to_owned();
        let utf16: Vec<u16> = text.encode_utf16().collect();
        let mentions = json["entities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entity| match entity["type"].as_str() {
                Some("text_mention") => entity.pointer("/user/id").and_then(Value::as_i64).map(TgMention::User),
                Some("mention") => {
                    let offset = usize::try_from(entity["offset"].as_u64()?).ok()?;
                    let length = usize::try_from(entity["length"].as_u64()?).ok()?;
                    let name = String::from_utf16_lossy(utf16.get(offset + 1..offset + length)?);
                    Some(TgMention::Username(name))
                }
                _ => None,
            })
            .collect();
        Self {
            message_id: json["message_id"].as_i64().unwrap_or_default(),
            chat_id: json.pointer("/chat/id").and_then(Value::as_i64).unwrap_or_default(),
            thread: json["message_thread_id"].as_i64(),
            reply_to: json.pointer("/reply_to_message/message_id").and_then(Value::as_i64),
            text,
            mentions,
            json: json.clone(),
        }
    }
}
