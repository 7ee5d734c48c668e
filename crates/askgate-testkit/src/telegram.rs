//! A fake Telegram Bot API server on `127.0.0.1:0`.
//!
//! [`FakeTelegram::start`] binds a fresh port that belongs to the test (no
//! globals, no fixed ports) and stops serving when the last clone of the
//! handle is dropped. Point teloxide at it with
//! `Bot::new(fake.token()).set_api_url(fake.api_url().parse()?)`: teloxide
//! appends `bot{token}/{Method}` to the URL's path, so [`FakeTelegram::api_url`]
//! is the bare root, `http://127.0.0.1:PORT/`.
//!
//! # What it answers
//!
//! `POST` or `GET /bot{token}/{method}`, with the method name matched
//! case-insensitively (teloxide sends `SendMessage`). Parameters come from the
//! query string and from a JSON, form-urlencoded or multipart (text fields)
//! body. A token other than [`TOKEN`] gets `401 Unauthorized`; a method the
//! fake does not know gets `404 Not Found`, both with Telegram's own bodies.
//!
//! Methods: `getMe`, `getUpdates` (long polling), `getWebhookInfo`,
//! `setWebhook`, `deleteWebhook`, `sendMessage`, `editMessageText`,
//! `editMessageReplyMarkup`, `answerCallbackQuery`, `deleteMessage`,
//! `sendChatAction`, `setMyCommands`, `deleteMyCommands`.
//!
//! # How closely it follows Telegram
//!
//! - `getUpdates` returns the queued updates from `offset` on and forgets
//!   those below it (a negative offset keeps only the last `-offset`), waits
//!   up to `timeout` seconds but wakes as soon as an update is injected,
//!   answers an older long poll with `409 Conflict: terminated by other
//!   getUpdates request` when a newer one arrives, and refuses to poll while a
//!   webhook is set. `allowed_updates` is remembered and applies to updates
//!   created after it, as on Telegram (updates injected with
//!   [`FakeTelegram::raw`] are always queued).
//! - `parse_mode = HTML` is parsed as Telegram parses it: only Telegram's tags,
//!   `&lt;` `&gt;` `&amp;` `&quot;` and numeric references; an unescaped `<`
//!   or an unknown tag is `400 Bad Request: can't parse entities: …`. The
//!   stored text is the text after parsing, trimmed, with its `entities`
//!   (UTF-16 offsets), including the `mention` entities Telegram finds for
//!   `@username` in plain text. `MarkdownV2` and `Markdown` are accepted but
//!   not parsed (the text is stored as sent).
//! - Text over 4096 characters after parsing is `message is too long`, empty
//!   text is `message text is empty`; inline keyboard buttons must carry an
//!   action, and `callback_data` must be 1–64 bytes (`BUTTON_DATA_INVALID`).
//! - A sent message is a full `Message`: a `message_id` counted per chat, the
//!   bot as `from`, `chat`, `date`, `text`, `entities`, an inline keyboard as
//!   `reply_markup` (a `force_reply` or reply keyboard is not echoed, as on
//!   Telegram), `reply_to_message` (without its own `reply_to_message`) and the
//!   thread: in a forum, `message_thread_id` with `is_topic_message`, and a
//!   message in a topic that replies to nothing else replies to the topic's
//!   `forum_topic_created` message; in other supergroups a reply carries the
//!   `message_thread_id` of the message it answers (Telegram's reply threads).
//! - An edit that changes neither text, entities nor keyboard is
//!   `400` [`MESSAGE_NOT_MODIFIED`]; an edit without `reply_markup` removes the
//!   keyboard; a callback query can be answered once.
//! - Messages to a chat id the fake has not seen go to a chat it makes up
//!   (positive: private, `-100…`: supergroup, other negative: group); call
//!   [`FakeTelegram::add_chat`] first for a forum, or to give a title.
//!
//! Error descriptions that teloxide turns into named errors are Telegram's
//! verbatim: `Unauthorized`, `Not Found`, [`MESSAGE_NOT_MODIFIED`],
//! `Bad Request: chat not found`, `Bad Request: message to edit not found`,
//! `Bad Request: message to be replied not found`. Others are close to
//! Telegram's but not guaranteed to match it.
//!
//! # Failures
//!
//! [`FakeTelegram::fail_next`] makes the next call of a method fail; see
//! [`Failure`]. teloxide sleeps 10 s after any HTTP 5xx, so prefer
//! [`Failure::OkFalse`] (HTTP 200 with `"ok": false`) unless a test is about
//! the 5xx path.
//!
//! # What a person does
//!
//! [`FakeTelegram::tap`], [`FakeTelegram::message`], [`FakeTelegram::sticker`],
//! [`FakeTelegram::edited_message`] and [`FakeTelegram::raw`] each make an
//! `Update` with the next `update_id`, queue it and return it. The queue is
//! what `getUpdates` returns or, with a webhook, what the fake delivers.
//!
//! # Webhook delivery
//!
//! Telegram POSTs updates to the `setWebhook` URL, a public HTTPS address that
//! a test cannot serve. [`FakeTelegram::deliver_webhooks_to`] names the
//! address that stands in for it, as a reverse proxy would: with the base
//! `http://127.0.0.1:PORT` and the webhook `https://askgate.test/telegram/tg`,
//! updates go to `http://127.0.0.1:PORT/telegram/tg` (query included). A later
//! call moves delivery to a new base, e.g. after the server under test
//! restarted on another port.
//!
//! While a webhook is set and a base is known, a task of the fake delivers
//! the queued updates as Telegram does: the oldest first, one at a time, as a
//! JSON body with `X-Telegram-Bot-Api-Secret-Token` when `setWebhook` gave a
//! `secret_token`. Only a 2xx answer takes the update off the queue; any other
//! status, a refused connection or no answer within 10 s leaves it at the head,
//! to be sent again after a short pause, so every update arrives at least once
//! and in order. `getWebhookInfo` then reports `last_error_date` and
//! `last_error_message` (`Wrong response from the webhook: 500 Internal Server
//! Error`, `Connection refused`, `Read timeout expired`) until the webhook is
//! set again or deleted. `deleteWebhook` stops delivery and leaves the
//! updates queued for `getUpdates`. Without a base, a webhook only keeps the
//! updates queued, and a test may POST them itself.
//!
//! [`FakeTelegram::webhook_deliveries`] lists every attempt;
//! [`FakeTelegram::wait_for_delivery`] waits until an update is acknowledged.
//!
//! [`telegram_payload`] gives real `Update` samples, as the Bot API
//! documentation shows them, for decoding tests.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State as AxumState};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::{IncomingStream, Listener};
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The bot token the fake accepts (the Bot API documentation's example token).
pub const TOKEN: &str = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11";
/// The bot's user id: the number before the colon of [`TOKEN`].
pub const BOT_ID: i64 = 123_456;
/// The bot's username, as `getMe` reports it.
pub const BOT_USERNAME: &str = "askgate_test_bot";
/// The bot's first name.
pub const BOT_FIRST_NAME: &str = "askgate";
/// What Telegram answers (with 400) to an edit that changes nothing.
pub const MESSAGE_NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and \
     reply markup are exactly the same as a current content and reply markup of the message";
/// Longest message text, in characters after entity parsing.
pub const MAX_MESSAGE_CHARS: usize = 4096;
/// Longest `callback_data`, in bytes.
pub const MAX_CALLBACK_DATA_BYTES: usize = 64;

/// How long a webhook delivery waits for an answer before it counts as failed.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause before a failed webhook delivery is tried again: short, so that
/// tests of retries are quick, but not a busy loop against a dead port.
pub const WEBHOOK_RETRY_PAUSE: Duration = Duration::from_millis(100);

const FIRST_UPDATE_ID: i64 = 730_000_001;
const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
const MAX_KEYBOARD_BUTTONS: usize = 100;
const TOPIC_ICON_COLOR: u32 = 7_322_096;
const CALLBACK_QUERY_INVALID: &str =
    "Bad Request: query is too old and response timeout expired or query ID is invalid";

/// The methods the fake answers, spelled as the Bot API documentation spells them.
const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "getWebhookInfo",
    "setWebhook",
    "deleteWebhook",
    "sendMessage",
    "editMessageText",
    "editMessageReplyMarkup",
    "answerCallbackQuery",
    "deleteMessage",
    "sendChatAction",
    "setMyCommands",
    "deleteMyCommands",
];

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
    fn guess(id: i64) -> Self {
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
    /// [`FakeTelegram::deliver_webhooks_to`] with the webhook URL's path.
    pub url: String,
    /// The HTTP status of the answer; `None` when the connection failed or
    /// no answer came within [`WEBHOOK_TIMEOUT`].
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

/// A fake Telegram Bot API server owned by one test. Clones share the server;
/// it stops when the last clone is dropped.
#[derive(Clone)]
pub struct FakeTelegram {
    shared: Arc<Shared>,
    server: Arc<Server>,
}

impl fmt::Debug for FakeTelegram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeTelegram")
            .field("addr", &self.server.addr)
            .finish_non_exhaustive()
    }
}

impl FakeTelegram {
    /// Starts a fake on `127.0.0.1:0`.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound, or no HTTP client built for webhook
    /// delivery.
    pub async fn start() -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the fake Telegram server binds 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound listener has a local address");
        let shared = Arc::new(Shared::default());
        let conns: Arc<Mutex<Vec<Weak<Conn>>>> = Arc::default();
        let listener = FakeListener {
            inner: listener,
            conns: Arc::clone(&conns),
        };
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared))
            .into_make_service_with_connect_info::<ConnHandle>();
        let task = tokio::spawn(async move {
            // The server only ends when its task is aborted.
            let _ = axum::serve(listener, app).await;
        });
        let client = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT)
            // The base is a local address; a proxy from the environment must not intercept it.
            .no_proxy()
            // A connection per attempt: a server under test that restarts or
            // shuts down gracefully is neither held open nor sent a stale
            // connection.
            .pool_max_idle_per_host(0)
            .build()
            .expect("an HTTP client without TLS can be built");
        // The task holds the state, not the handle: it cannot keep the fake alive.
        let delivery = tokio::spawn(deliver_webhooks(Arc::clone(&shared), client));
        Self {
            server: Arc::new(Server {
                addr,
                task,
                delivery,
                conns,
                shared: Arc::clone(&shared),
            }),
            shared,
        }
    }

    /// The URL to give `Bot::set_api_url`: `http://127.0.0.1:PORT/`.
    pub fn api_url(&self) -> String {
        format!("http://{}/", self.server.addr)
    }

    /// The address the fake listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// The token the fake accepts: [`TOKEN`].
    pub fn token(&self) -> &str {
        TOKEN
    }

    /// The bot as a Bot API `User` object (the `from` of its messages).
    pub fn bot_user(&self) -> Value {
        bot_user()
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    /// The calls of one method so far (matched case-insensitively).
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        calls_to(&self.state().calls, method)
    }

    /// Waits until the fake has had at least `n` calls of `method`, and
    /// returns the calls of that method.
    pub async fn wait_for_call(&self, method: &str, n: usize, timeout: Duration) -> Result<Vec<Call>, WaitTimeout> {
        let waited_for = format!("{n} call(s) to {method}");
        self.wait(timeout, waited_for, |state| {
            let calls = calls_to(&state.calls, method);
            (calls.len() >= n).then_some(calls)
        })
        .await
    }

    /// Waits until `done` holds for the calls so far, and returns them.
    pub async fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&[Call]) -> bool,
    ) -> Result<Vec<Call>, WaitTimeout> {
        self.wait(timeout, "a condition on the calls".to_owned(), |state| {
            done(&state.calls).then(|| state.calls.clone())
        })
        .await
    }

    /// Has the fake POST queued updates to `base` (`http://127.0.0.1:PORT`)
    /// plus the path and query of the `setWebhook` URL, while a webhook is
    /// set; see the [module documentation](self#webhook-delivery). Calling it
    /// again moves delivery to the new base from the next attempt on.
    pub fn deliver_webhooks_to(&self, base: &str) {
        self.state().webhook_base = Some(base.to_owned());
        self.shared.updates_changed.notify_waiters();
    }

    /// Every webhook delivery attempt so far, in order.
    pub fn webhook_deliveries(&self) -> Vec<WebhookDelivery> {
        self.state().deliveries.clone()
    }

    /// Waits until the webhook acknowledged (2xx) the update with this
    /// `update_id`, and returns every attempt to deliver it, the failed ones
    /// first.
    pub async fn wait_for_delivery(
        &self,
        update_id: i64,
        timeout: Duration,
    ) -> Result<Vec<WebhookDelivery>, WaitTimeout> {
        let waited_for = format!("the webhook to acknowledge update {update_id}");
        self.wait(timeout, waited_for, |state| {
            let attempts: Vec<WebhookDelivery> = state
                .deliveries
                .iter()
                .filter(|delivery| delivery.update_id == update_id)
                .cloned()
                .collect();
            attempts.iter().any(WebhookDelivery::acknowledged).then_some(attempts)
        })
        .await
    }

    /// Waits until `done` holds for the webhook delivery attempts so far, and
    /// returns them.
    pub async fn wait_for_deliveries(
        &self,
        timeout: Duration,
        done: impl Fn(&[WebhookDelivery]) -> bool,
    ) -> Result<Vec<WebhookDelivery>, WaitTimeout> {
        self.wait(timeout, "a condition on the webhook deliveries".to_owned(), |state| {
            done(&state.deliveries).then(|| state.deliveries.clone())
        })
        .await
    }

    /// Waits until `check` finds what it looks for in the state, woken by
    /// every recorded call and delivery attempt.
    async fn wait<T>(
        &self,
        timeout: Duration,
        waited_for: String,
        check: impl Fn(&State) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Created before the check, so that nothing recorded after it is missed.
            let changed = self.shared.recorded.notified();
            if let Some(found) = check(&self.state()) {
                return Ok(found);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let state = self.state();
                if let Some(found) = check(&state) {
                    return Ok(found);
                }
                return Err(WaitTimeout {
                    waited_for,
                    timeout,
                    calls: state.calls.clone(),
                    deliveries: state.deliveries.clone(),
                });
            }
        }
    }

    /// Makes the next call of `method` (any case) fail this way. Failures for
    /// one method queue up and are used one a call.
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.state()
            .failures
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(failure);
    }

    /// The messages the bot sent and has not deleted, as they are now (after
    /// edits), by chat id, in the order they were sent.
    pub fn messages(&self) -> BTreeMap<i64, Vec<Value>> {
        let mut by_chat: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
        for ((chat, _), stored) in &self.state().messages {
            if stored.origin == Origin::Bot {
                by_chat.entry(*chat).or_default().push(stored.json.clone());
            }
        }
        by_chat
    }

    /// Any message the fake knows (the bot's, a person's, a topic's first
    /// message), as it is now.
    pub fn stored_message(&self, chat_id: i64, message_id: i64) -> Option<Value> {
        self.state()
            .messages
            .get(&(chat_id, message_id))
            .map(|stored| stored.json.clone())
    }

    /// When each message the bot sent to this chat was accepted.
    pub fn send_times(&self, chat_id: i64) -> Vec<Instant> {
        self.state().send_times.get(&chat_id).cloned().unwrap_or_default()
    }

    /// The webhook the bot set, if any.
    pub fn webhook(&self) -> Option<Webhook> {
        self.state().webhook.clone()
    }

    /// The `allowed_updates` the bot last asked for (`getUpdates` or `setWebhook`).
    pub fn allowed_updates(&self) -> Option<Vec<String>> {
        self.state().allowed_updates.clone()
    }

    /// The updates not yet confirmed by a `getUpdates` offset or acknowledged
    /// by the webhook.
    pub fn pending_updates(&self) -> Vec<Value> {
        self.state().queue.iter().cloned().collect()
    }

    /// Tells the fake about a chat (its type, title, whether it is a forum)
    /// before the bot sends to it.
    pub fn add_chat(&self, chat: &TgChat) {
        self.state().chats.insert(chat.id, chat.clone());
    }

    /// Creates a topic in a forum, as its first message (`forum_topic_created`),
    /// and returns its `message_thread_id`.
    pub fn create_topic(&self, chat: &TgChat, name: &str) -> i64 {
        let mut state = self.state();
        state.chats.insert(chat.id, chat.clone());
        let id = state.next_message_id(chat.id);
        state.store_topic(chat, id, name);
        id
    }

    /// A person taps an inline button of a message: a `callback_query` update
    /// with the stored message (or, for a message the fake does not know, an
    /// inaccessible message with `date` 0), `chat_instance` and `data`. Any
    /// `data` is accepted, so a test can forge one.
    pub fn tap(&self, user: &TgUser, chat: &TgChat, message_id: i64, data: &str) -> Value {
        self.inject(|state| {
            state.remember(user, chat);
            state.tap(user, chat, message_id, data)
        })
    }

    /// A person sends a text message, optionally as a reply to a message the
    /// fake knows (filled in as `reply_to_message`, without its own
    /// `reply_to_message`) and in a forum topic.
    pub fn message(
        &self,
        user: &TgUser,
        chat: &TgChat,
        text: &str,
        reply_to: Option<i64>,
        thread: Option<i64>,
    ) -> Value {
        self.inject(|state| {
            state.remember(user, chat);
            let mut message = state.person_message(user, chat, reply_to, thread);
            let (text, entities) = plain_text(text);
            set_text(&mut message, text, &entities);
            state.store_and_queue(chat.id, "message", message)
        })
    }

    /// A person sends a sticker, optionally as a reply.
    pub fn sticker(&self, user: &TgUser, chat: &TgChat, reply_to: Option<i64>) -> Value {
        self.inject(|state| {
            state.remember(user, chat);
            let mut message = state.person_message(user, chat, reply_to, None);
            message.insert("sticker".into(), sticker_json());
            state.store_and_queue(chat.id, "message", message)
        })
    }

    /// A person edits their message to this text: an `edited_message` update
    /// with `edit_date`. A message the fake does not know is made up with this id.
    pub fn edited_message(&self, user: &TgUser, chat: &TgChat, message_id: i64, text: &str) -> Value {
        self.inject(|state| {
            state.remember(user, chat);
            state.edit_person_message(user, chat, message_id, text)
        })
    }

    /// Queues any update, e.g. a kind askgate does not handle. A missing
    /// `update_id` is given the next one.
    ///
    /// # Panics
    ///
    /// If `update` is not a JSON object.
    pub fn raw(&self, update: Value) -> Value {
        assert!(update.is_object(), "an update is a JSON object, not {update}");
        self.inject(|state| state.queue_raw(update))
    }

    fn inject(&self, make: impl FnOnce(&mut State) -> Value) -> Value {
        let update = make(&mut self.state());
        self.shared.updates_changed.notify_waiters();
        update
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }
}

/// Real `Update` samples as the Bot API documentation shows them, by name:
/// `callback_query`, `callback_query_inaccessible`, `message_private`,
/// `message_group_reply`, `message_supergroup_reply`, `edited_message`,
/// `sticker`, `forum_topic_message`, `message_reaction` (a kind askgate does
/// not handle) and `unknown_kind` (a kind no client knows yet).
pub const TELEGRAM_PAYLOADS: &[(&str, &str)] = &[
    (
        "callback_query",
        include_str!("../tests/payloads/telegram/callback_query.json"),
    ),
    (
        "callback_query_inaccessible",
        include_str!("../tests/payloads/telegram/callback_query_inaccessible.json"),
    ),
    (
        "message_private",
        include_str!("../tests/payloads/telegram/message_private.json"),
    ),
    (
        "message_group_reply",
        include_str!("../tests/payloads/telegram/message_group_reply.json"),
    ),
    (
        "message_supergroup_reply",
        include_str!("../tests/payloads/telegram/message_supergroup_reply.json"),
    ),
    (
        "edited_message",
        include_str!("../tests/payloads/telegram/edited_message.json"),
    ),
    ("sticker", include_str!("../tests/payloads/telegram/sticker.json")),
    (
        "forum_topic_message",
        include_str!("../tests/payloads/telegram/forum_topic_message.json"),
    ),
    (
        "message_reaction",
        include_str!("../tests/payloads/telegram/message_reaction.json"),
    ),
    (
        "unknown_kind",
        include_str!("../tests/payloads/telegram/unknown_kind.json"),
    ),
];

/// One `Update` sample from [`TELEGRAM_PAYLOADS`], by name (`.json` optional).
///
/// # Panics
///
/// If there is no sample with that name.
pub fn telegram_payload(name: &str) -> &'static str {
    let name = name.strip_suffix(".json").unwrap_or(name);
    match TELEGRAM_PAYLOADS.iter().find(|(sample, _)| *sample == name) {
        Some((_, payload)) => payload,
        None => {
            let names: Vec<&str> = TELEGRAM_PAYLOADS.iter().map(|(sample, _)| *sample).collect();
            panic!("no Telegram payload sample named {name:?}; there are {names:?}")
        }
    }
}

/// The bot as a Bot API `User` object.
pub fn bot_user() -> Value {
    json!({
        "id": BOT_ID,
        "is_bot": true,
        "first_name": BOT_FIRST_NAME,
        "username": BOT_USERNAME,
    })
}

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

fn calls_to(calls: &[Call], method: &str) -> Vec<Call> {
    calls
        .iter()
        .filter(|call| call.method.eq_ignore_ascii_case(method))
        .cloned()
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

// ---------------------------------------------------------------------------
// State

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// A call or a webhook delivery attempt was recorded.
    recorded: Notify,
    /// The queue, the webhook or the delivery base changed.
    updates_changed: Notify,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Bot,
    Person,
    Service,
}

#[derive(Debug)]
struct Stored {
    json: Value,
    origin: Origin,
}

#[derive(Debug)]
struct State {
    calls: Vec<Call>,
    failures: HashMap<String, VecDeque<Failure>>,
    queue: VecDeque<Value>,
    next_update_id: i64,
    allowed_updates: Option<Vec<String>>,
    poll_generation: u64,
    webhook: Option<Webhook>,
    /// Where webhook deliveries go instead of the webhook URL's host.
    webhook_base: Option<String>,
    deliveries: Vec<WebhookDelivery>,
    /// The Unix time and description of the last failed delivery.
    last_webhook_error: Option<(u64, String)>,
    users: HashMap<i64, TgUser>,
    chats: HashMap<i64, TgChat>,
    messages: BTreeMap<(i64, i64), Stored>,
    next_message_ids: HashMap<i64, i64>,
    send_times: HashMap<i64, Vec<Instant>>,
    callbacks: HashMap<String, bool>,
    next_callback: u64,
    closed: bool,
}

impl Default for State {
    fn default() -> Self {
        Self {
            calls: Vec::new(),
            failures: HashMap::new(),
            queue: VecDeque::new(),
            next_update_id: FIRST_UPDATE_ID,
            allowed_updates: None,
            poll_generation: 0,
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
            closed: false,
        }
    }
}

/// An error answer: HTTP status, `error_code`, `description`, `retry_after`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: u16,
    description: String,
    retry_after: Option<u32>,
}

impl ApiError {
    fn new(status: StatusCode, description: impl Into<String>) -> Self {
        Self {
            status,
            code: status.as_u16(),
            description: description.into(),
            retry_after: None,
        }
    }

    fn bad_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, description)
    }

    fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    fn conflict(description: &str) -> Self {
        Self::new(StatusCode::CONFLICT, description)
    }

    fn from_failure(failure: Failure) -> Self {
        match failure {
            Failure::TooManyRequests { retry_after } => Self {
                retry_after: Some(retry_after),
                ..Self::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too Many Requests: retry after {retry_after}"),
                )
            },
            Failure::BadRequest(description) => Self::bad_request(description),
            Failure::Forbidden(description) => Self::new(StatusCode::FORBIDDEN, description),
            Failure::OkFalse { code, description } => Self {
                code,
                ..Self::new(StatusCode::OK, description)
            },
            Failure::ServerError | Failure::Slow(_) | Failure::Disconnect => {
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "ok": false,
            "error_code": self.code,
            "description": self.description,
        });
        if let Some(retry_after) = self.retry_after {
            body["parameters"] = json!({ "retry_after": retry_after });
        }
        (self.status, Json(body)).into_response()
    }
}

type Answer = Result<Value, ApiError>;

impl Shared {
    /// Records a call and takes the failure queued for its method.
    fn record(&self, call: Call, sent_as: &str) -> Option<Failure> {
        let failure = {
            let mut state = lock(&self.state);
            state.calls.push(call);
            state
                .failures
                .get_mut(&sent_as.to_ascii_lowercase())
                .and_then(VecDeque::pop_front)
        };
        self.recorded.notify_waiters();
        failure
    }

    async fn call(&self, method: &str, params: &Value) -> Answer {
        match method {
            "getMe" => Ok(get_me()),
            "getUpdates" => self.get_updates(params).await,
            _ => {
                let answer = lock(&self.state).call(method, params);
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
            let mut state = lock(&self.state);
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
                let state = lock(&self.state);
                if state.poll_generation != generation {
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
    fn call(&mut self, method: &str, params: &Value) -> Answer {
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

    // --- updates ---

    fn confirm(&mut self, offset: i64) {
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

    fn queue_raw(&mut self, update: Value) -> Value {
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
        let secret_token = string(params, "secret_token");
        if let Some(secret) = &secret_token {
            let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if secret.is_empty() || secret.len() > 256 || !secret.chars().all(allowed) {
                return Err(ApiError::bad_request(
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

    // --- chats and messages ---

    fn remember(&mut self, user: &TgUser, chat: &TgChat) {
        self.users.insert(user.id, user.clone());
        self.chats.insert(chat.id, chat.clone());
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

    fn next_message_id(&mut self, chat: i64) -> i64 {
        let next = self.next_message_ids.entry(chat).or_insert(1);
        let id = *next;
        *next += 1;
        id
    }

    fn store(&mut self, chat: i64, message: &Value, origin: Origin) {
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

    fn store_and_queue(&mut self, chat: i64, kind: &str, message: Map<String, Value>) -> Value {
        let message = Value::Object(message);
        self.store(chat, &message, Origin::Person);
        self.queue_update(kind, message)
    }

    fn store_topic(&mut self, chat: &TgChat, id: i64, name: &str) -> Value {
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
    fn new_message(
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

    fn person_message(
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

    fn edit_person_message(&mut self, user: &TgUser, chat: &TgChat, message_id: i64, text: &str) -> Value {
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

    fn tap(&mut self, user: &TgUser, chat: &TgChat, message_id: i64, data: &str) -> Value {
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

    fn send_message(&mut self, params: &Value) -> Answer {
        let chat = self.resolve_chat(params)?;
        let text = string(params, "text").unwrap_or_default();
        let (text, entities) = format_text(&text, params)?;
        let markup = check_reply_markup(params.get("reply_markup"), false)?;
        let reply = self.reply_target(&chat, params)?;
        let thread = int(params, "message_thread_id");
        let id = self.next_message_id(chat.id);
        let mut message = self.new_message(&chat, id, bot_user(), thread, reply);
        set_text(&mut message, text, &entities);
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

    /// The message a send replies to: `reply_parameters`, or the older
    /// `reply_to_message_id` with `allow_sending_without_reply`.
    fn reply_target(&self, chat: &TgChat, params: &Value) -> Result<Option<Value>, ApiError> {
        let (id, allow_without) = match object(params, "reply_parameters") {
            Some(reply) => (
                int(&reply, "message_id"),
                boolean(&reply, "allow_sending_without_reply"),
            ),
            None => (
                int(params, "reply_to_message_id"),
                boolean(params, "allow_sending_without_reply"),
            ),
        };
        let Some(id) = id else { return Ok(None) };
        match self.messages.get(&(chat.id, id)) {
            Some(stored) => Ok(Some(stored.json.clone())),
            None if allow_without == Some(true) => Ok(None),
            None => Err(ApiError::bad_request("Bad Request: message to be replied not found")),
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
        let text = string(params, "text").unwrap_or_default();
        let (text, entities) = format_text(&text, params)?;
        let markup = check_reply_markup(params.get("reply_markup"), true)?;
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
        let markup = check_reply_markup(params.get("reply_markup"), true)?;
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

// ---------------------------------------------------------------------------
// Webhook delivery

/// One attempt to deliver an update: where, with which secret, what.
struct Attempt {
    url: String,
    secret_token: Option<String>,
    update: Value,
}

impl State {
    /// The oldest queued update, if a webhook is set and there is a base to
    /// deliver it to.
    fn next_delivery(&self) -> Option<Attempt> {
        let webhook = self.webhook.as_ref()?;
        let base = self.webhook_base.as_deref()?;
        let update = self.queue.front()?;
        Some(Attempt {
            url: webhook_target(base, &webhook.url),
            secret_token: webhook.secret_token.clone(),
            update: update.clone(),
        })
    }

    /// Records an attempt and its outcome (a status, or why there was none);
    /// an acknowledged update leaves the queue. Returns whether it was
    /// acknowledged.
    fn record_delivery(&mut self, attempt: Attempt, at: Instant, outcome: Result<StatusCode, String>) -> bool {
        let id = update_id(&attempt.update);
        let delivery = WebhookDelivery {
            update_id: id,
            url: attempt.url,
            status: outcome.as_ref().ok().map(StatusCode::as_u16),
            at,
        };
        let acknowledged = delivery.acknowledged();
        self.deliveries.push(delivery);
        if acknowledged {
            // By id: a `raw` update with a lower id may have been queued before it meanwhile.
            if let Some(at) = self.queue.iter().position(|update| update_id(update) == id) {
                self.queue.remove(at);
            }
        } else {
            let message = match outcome {
                Ok(status) => format!("Wrong response from the webhook: {status}"),
                Err(error) => error,
            };
            self.last_webhook_error = Some((unix_now(), message));
        }
        acknowledged
    }
}

/// The delivery task: one update at a time, the oldest first, each until the
/// webhook acknowledges it.
async fn deliver_webhooks(shared: Arc<Shared>, client: reqwest::Client) {
    loop {
        // Created before the state is read, so that no change after it is missed.
        let changed = shared.updates_changed.notified();
        let next = {
            let state = lock(&shared.state);
            if state.closed {
                return;
            }
            state.next_delivery()
        };
        let Some(attempt) = next else {
            changed.await;
            continue;
        };
        drop(changed);
        let at = Instant::now();
        let outcome = post_update(&client, &attempt).await;
        let acknowledged = lock(&shared.state).record_delivery(attempt, at, outcome);
        shared.recorded.notify_waiters();
        if !acknowledged {
            tokio::time::sleep(WEBHOOK_RETRY_PAUSE).await;
        }
    }
}

/// POSTs one update: the status of the answer, or why there was none, in
/// Telegram's words where it has some.
async fn post_update(client: &reqwest::Client, attempt: &Attempt) -> Result<StatusCode, String> {
    let mut request = client.post(&attempt.url).json(&attempt.update);
    if let Some(secret) = &attempt.secret_token {
        request = request.header(SECRET_HEADER, secret);
    }
    match request.send().await {
        Ok(response) => Ok(response.status()),
        Err(error) => Err(connection_error(&error)),
    }
}

fn connection_error(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "Read timeout expired".to_owned();
    }
    let mut innermost: &(dyn std::error::Error + 'static) = error;
    while let Some(source) = innermost.source() {
        if let Some(io_error) = source.downcast_ref::<io::Error>() {
            match io_error.kind() {
                io::ErrorKind::ConnectionRefused => return "Connection refused".to_owned(),
                io::ErrorKind::ConnectionReset => return "Connection reset by peer".to_owned(),
                _ => {}
            }
        }
        innermost = source;
    }
    innermost.to_string()
}

/// Where a delivery goes: `base` with the path and query of the webhook URL,
/// as a reverse proxy at the webhook's address would forward it.
fn webhook_target(base: &str, url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let without_fragment = after_scheme.split('#').next().unwrap_or_default();
    let path = without_fragment
        .find(['/', '?'])
        .map_or("", |at| &without_fragment[at..]);
    let slash = if path.starts_with('/') { "" } else { "/" };
    format!("{}{slash}{path}", base.trim_end_matches('/'))
}

fn update_id(update: &Value) -> i64 {
    update.get("update_id").and_then(Value::as_i64).unwrap_or_default()
}

fn set_text(message: &mut Map<String, Value>, text: String, entities: &[Entity]) {
    message.insert("text".into(), text.into());
    if entities.is_empty() {
        message.remove("entities");
    } else {
        let entities = entities.iter().map(Entity::to_json).collect();
        message.insert("entities".into(), Value::Array(entities));
    }
}

fn set_markup(message: &mut Map<String, Value>, markup: Option<Value>) {
    match markup {
        Some(markup) => message.insert("reply_markup".into(), markup),
        None => message.remove("reply_markup"),
    };
}

fn sticker_json() -> Value {
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

// ---------------------------------------------------------------------------
// Parameters

fn as_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn int(params: &Value, key: &str) -> Option<i64> {
    params.get(key).and_then(as_int)
}

fn string(params: &Value, key: &str) -> Option<String> {
    match params.get(key)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn boolean(params: &Value, key: &str) -> Option<bool> {
    match params.get(key)? {
        Value::Bool(flag) => Some(*flag),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// An object or array parameter, also when a form sent it JSON-serialized.
fn object(params: &Value, key: &str) -> Option<Value> {
    match params.get(key)? {
        value @ (Value::Object(_) | Value::Array(_)) => Some(value.clone()),
        Value::String(text) => serde_json::from_str(text).ok(),
        _ => None,
    }
}

fn string_list(params: &Value, key: &str) -> Option<Vec<String>> {
    let list = object(params, key)?;
    Some(
        list.as_array()?
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
    )
}

fn parse_params(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let mut params = Map::new();
    if let Some(query) = query {
        params.extend(form_fields(query));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if body.iter().all(u8::is_ascii_whitespace) {
        // Nothing more.
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        params.extend(form_fields(&String::from_utf8_lossy(body)));
    } else if content_type.starts_with("multipart/form-data") {
        params.extend(multipart_fields(&content_type, body));
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(fields)) => params.extend(fields),
            _ => return Err(ApiError::bad_request("Bad Request: can't parse JSON object")),
        }
    }
    Ok(Value::Object(params))
}

/// A form value: JSON-serialized objects and arrays are read as JSON, the
/// rest stays text (the accessors read numbers and booleans from text).
fn form_value(text: String) -> Value {
    if text.starts_with(['{', '['])
        && let Ok(value) = serde_json::from_str(&text)
    {
        return value;
    }
    Value::String(text)
}

fn form_fields(form: &str) -> Vec<(String, Value)> {
    form.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key, true), form_value(percent_decode(value, true)))
        })
        .collect()
}

fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => match text.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                Some(byte) => {
                    out.push(byte);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text fields of a multipart body; a file part becomes its name and size.
fn multipart_fields(content_type: &str, body: &[u8]) -> Vec<(String, Value)> {
    let Some(boundary) = content_type
        .split(';')
        .find_map(|part| part.trim().strip_prefix("boundary="))
        .map(|boundary| format!("--{}", boundary.trim_matches('"')))
    else {
        return Vec::new();
    };
    let body = String::from_utf8_lossy(body);
    let mut fields = Vec::new();
    for part in body.split(boundary.as_str()).skip(1) {
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let attribute = |name: &str| {
            let start = head.find(&format!("{name}=\""))? + name.len() + 2;
            let end = head[start..].find('"')? + start;
            Some(head[start..end].to_owned())
        };
        let Some(name) = attribute("name") else { continue };
        let value = match attribute("filename") {
            Some(file) => json!({ "file_name": file, "bytes": value.len() }),
            None => form_value(value.to_owned()),
        };
        fields.push((name, value));
    }
    fields
}

// ---------------------------------------------------------------------------
// Text and keyboards

/// A message entity, with UTF-16 offsets as the Bot API counts them.
#[derive(Debug, Clone, PartialEq)]
struct Entity {
    kind: String,
    offset: usize,
    length: usize,
    extra: Map<String, Value>,
}

impl Entity {
    fn new(kind: &str, offset: usize, length: usize) -> Self {
        Self {
            kind: kind.to_owned(),
            offset,
            length,
            extra: Map::new(),
        }
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    fn from_json(value: &Value) -> Option<Self> {
        let fields = value.as_object()?;
        let offset = usize::try_from(fields.get("offset")?.as_u64()?).ok()?;
        let length = usize::try_from(fields.get("length")?.as_u64()?).ok()?;
        let kind = fields.get("type")?.as_str()?;
        let mut entity = Self::new(kind, offset, length);
        for (key, value) in fields {
            if !matches!(key.as_str(), "offset" | "length" | "type") {
                entity.extra.insert(key.clone(), value.clone());
            }
        }
        Some(entity)
    }

    fn to_json(&self) -> Value {
        let mut json = Map::new();
        json.insert("offset".into(), self.offset.into());
        json.insert("length".into(), self.length.into());
        json.insert("type".into(), self.kind.clone().into());
        json.extend(self.extra.clone());
        Value::Object(json)
    }

    fn end(&self) -> usize {
        self.offset + self.length
    }
}

fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The text of a bot's message as Telegram stores it: parsed for its
/// `parse_mode` (or with its `entities`), trimmed, with mentions found.
fn format_text(text: &str, params: &Value) -> Result<(String, Vec<Entity>), ApiError> {
    let parse_mode = string(params, "parse_mode").unwrap_or_default().to_ascii_lowercase();
    let (text, entities) = match parse_mode.as_str() {
        "" => {
            let given = object(params, "entities").unwrap_or_default();
            let given = given.as_array().map_or(&[][..], Vec::as_slice);
            (text.to_owned(), given.iter().filter_map(Entity::from_json).collect())
        }
        "html" => html::parse(text)
            .map_err(|error| ApiError::bad_request(format!("Bad Request: can't parse entities: {error}")))?,
        "markdownv2" | "markdown" => (text.to_owned(), Vec::new()),
        _ => return Err(ApiError::bad_request("Bad Request: unsupported parse_mode")),
    };
    let (text, entities) = finish_text(&text, entities);
    if text.is_empty() {
        return Err(ApiError::bad_request("Bad Request: message text is empty"));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(ApiError::bad_request("Bad Request: message is too long"));
    }
    Ok((text, entities))
}

/// A person's text: trimmed, with mentions found.
fn plain_text(text: &str) -> (String, Vec<Entity>) {
    finish_text(text, Vec::new())
}

fn finish_text(text: &str, entities: Vec<Entity>) -> (String, Vec<Entity>) {
    let trimmed = text.trim();
    let lead = utf16_len(&text[..text.len() - text.trim_start().len()]);
    let length = utf16_len(trimmed);
    let mut entities: Vec<Entity> = entities
        .into_iter()
        .filter_map(|mut entity| {
            let start = entity.offset.saturating_sub(lead);
            let end = entity.end().saturating_sub(lead).min(length);
            (end > start).then(|| {
                entity.offset = start;
                entity.length = end - start;
                entity
            })
        })
        .collect();
    let mentions = mentions(trimmed, &entities);
    entities.extend(mentions);
    entities.sort_by(|a, b| a.offset.cmp(&b.offset).then(b.length.cmp(&a.length)));
    (trimmed.to_owned(), entities)
}

/// The `mention` entities Telegram finds: `@` after a non-word character,
/// then 3 to 32 letters, digits or underscores, outside code and links.
fn mentions(text: &str, entities: &[Entity]) -> Vec<Entity> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let shielded = |offset: usize| {
        entities.iter().any(|entity| {
            matches!(
                entity.kind.as_str(),
                "code" | "pre" | "text_link" | "text_mention" | "url"
            ) && entity.offset <= offset
                && offset < entity.end()
        })
    };
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut offset = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '@' && (i == 0 || !is_word(chars[i - 1])) {
            let name = chars[i + 1..].iter().take_while(|c| is_name(**c)).count();
            let after = chars.get(i + 1 + name).copied();
            if (3..=32).contains(&name) && !after.is_some_and(is_word) && !shielded(offset) {
                found.push(Entity::new("mention", offset, name + 1));
                offset += name + 1;
                i += name + 1;
                continue;
            }
        }
        offset += c.len_utf16();
        i += 1;
    }
    found
}

const BUTTON_ACTIONS: &[&str] = &[
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
];

/// Checks `reply_markup` and returns what the sent message shows of it: an
/// inline keyboard with buttons, or nothing.
fn check_reply_markup(markup: Option<&Value>, inline_only: bool) -> Result<Option<Value>, ApiError> {
    let markup = match markup {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|_| ApiError::bad_request("Bad Request: can't parse reply keyboard markup JSON object"))?,
        Some(markup) => markup.clone(),
    };
    let Some(keyboard) = markup.get("inline_keyboard") else {
        let other = ["force_reply", "keyboard", "remove_keyboard"]
            .iter()
            .any(|key| markup.get(key).is_some());
        return match (inline_only, other) {
            (true, _) => Err(ApiError::bad_request("Bad Request: inline keyboard expected")),
            (false, true) => Ok(None),
            (false, false) => Err(ApiError::bad_request(
                "Bad Request: can't parse reply keyboard markup JSON object",
            )),
        };
    };
    let rows = keyboard
        .as_array()
        .filter(|rows| rows.iter().all(Value::is_array))
        .ok_or_else(|| ApiError::bad_request("Bad Request: field \"inline_keyboard\" must be an Array of Arrays"))?;
    let buttons: Vec<&Value> = rows.iter().filter_map(Value::as_array).flatten().collect();
    if buttons.len() > MAX_KEYBOARD_BUTTONS {
        return Err(ApiError::bad_request("Bad Request: reply markup is too long"));
    }
    for button in &buttons {
        check_button(button)?;
    }
    Ok((!buttons.is_empty()).then(|| json!({ "inline_keyboard": keyboard })))
}

fn check_button(button: &Value) -> Result<(), ApiError> {
    let invalid = |why: &str| ApiError::bad_request(format!("Bad Request: can't parse inline keyboard button: {why}"));
    if !button.get("text").is_some_and(Value::is_string) {
        return Err(invalid("Field \"text\" must be of type String"));
    }
    let actions = BUTTON_ACTIONS
        .iter()
        .filter(|action| button.get(**action).is_some())
        .count();
    if actions == 0 {
        return Err(invalid("Text buttons are unallowed in the inline keyboard"));
    }
    if let Some(data) = button.get("callback_data") {
        let bytes = data.as_str().map_or(0, str::len);
        if !(1..=MAX_CALLBACK_DATA_BYTES).contains(&bytes) {
            return Err(ApiError::bad_request("Bad Request: BUTTON_DATA_INVALID"));
        }
    }
    Ok(())
}

/// Telegram's HTML parse mode, after `TDLib`'s parser: its tags, four named
/// character references and numeric ones; anything else that starts with `<`
/// is an error.
mod html {
    use serde_json::{Value, json};

    use super::{Entity, utf16_len};

    const TAGS: &[&str] = &[
        "a",
        "b",
        "strong",
        "i",
        "em",
        "s",
        "strike",
        "del",
        "u",
        "ins",
        "tg-spoiler",
        "tg-emoji",
        "span",
        "pre",
        "code",
        "blockquote",
    ];

    struct Open {
        tag: String,
        argument: String,
        offset: usize,
    }

    struct Parser<'a> {
        text: &'a str,
        bytes: &'a [u8],
        at: usize,
        out: String,
        out_len: usize,
        open: Vec<Open>,
        entities: Vec<Entity>,
    }

    /// The text without its markup, and its entities.
    pub(super) fn parse(text: &str) -> Result<(String, Vec<Entity>), String> {
        let mut parser = Parser {
            text,
            bytes: text.as_bytes(),
            at: 0,
            out: String::with_capacity(text.len()),
            out_len: 0,
            open: Vec::new(),
            entities: Vec::new(),
        };
        parser.run()?;
        Ok((parser.out, parser.entities))
    }

    fn is_space(byte: u8) -> bool {
        matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c' | 0)
    }

    /// A character reference at the start of `text` (which starts with `&`):
    /// the character and the bytes it takes. The `;` is optional, as in `TDLib`.
    pub(super) fn reference(text: &str) -> Option<(char, usize)> {
        let bytes = text.as_bytes();
        let mut end = 1;
        let code = if bytes.get(1) == Some(&b'#') {
            let hex = bytes.get(2) == Some(&b'x');
            end = if hex { 3 } else { 2 };
            let start = end;
            while end < bytes.len() && end - start < 8 {
                let digit = if hex {
                    bytes[end].is_ascii_hexdigit()
                } else {
                    bytes[end].is_ascii_digit()
                };
                if !digit {
                    break;
                }
                end += 1;
            }
            u32::from_str_radix(text.get(start..end)?, if hex { 16 } else { 10 }).ok()?
        } else {
            while end < bytes.len() && bytes[end].is_ascii_alphabetic() {
                end += 1;
            }
            match text.get(1..end)? {
                "lt" => u32::from('<'),
                "gt" => u32::from('>'),
                "amp" => u32::from('&'),
                "quot" => u32::from('"'),
                _ => return None,
            }
        };
        let character = char::from_u32(code).filter(|c| *c != '\0')?;
        if bytes.get(end) == Some(&b';') {
            end += 1;
        }
        Some((character, end))
    }

    impl Parser<'_> {
        fn run(&mut self) -> Result<(), String> {
            while self.at < self.bytes.len() {
                match self.bytes[self.at] {
                    b'&' => match reference(&self.text[self.at..]) {
                        Some((character, length)) => {
                            self.push(character);
                            self.at += length;
                        }
                        None => {
                            self.push('&');
                            self.at += 1;
                        }
                    },
                    b'<' => {
                        let begin = self.at;
                        self.at += 1;
                        if self.bytes.get(self.at) == Some(&b'/') {
                            self.end_tag(begin)?;
                        } else {
                            self.start_tag(begin)?;
                        }
                    }
                    _ => {
                        let Some(character) = self.text[self.at..].chars().next() else {
                            break;
                        };
                        self.push(character);
                        self.at += character.len_utf8();
                    }
                }
            }
            match self.open.last() {
                Some(open) => Err(format!(
                    "Can't find end tag corresponding to start tag \"{}\"",
                    open.tag
                )),
                None => Ok(()),
            }
        }

        fn push(&mut self, character: char) {
            self.out.push(character);
            self.out_len += character.len_utf16();
        }

        fn peek(&self) -> Option<u8> {
            self.bytes.get(self.at).copied()
        }

        fn skip_spaces(&mut self) {
            while self.peek().is_some_and(|byte| is_space(byte) && byte != 0) {
                self.at += 1;
            }
        }

        fn start_tag(&mut self, begin: usize) -> Result<(), String> {
            let unclosed = || format!("Unclosed start tag at byte offset {begin}");
            let name_start = self.at;
            while self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Err(unclosed());
            }
            let tag = self.text[name_start..self.at].to_ascii_lowercase();
            if !TAGS.contains(&tag.as_str()) {
                return Err(format!("Unsupported start tag \"{tag}\" at byte offset {begin}"));
            }
            let mut argument = String::new();
            loop {
                self.skip_spaces();
                match self.peek() {
                    None => return Err(unclosed()),
                    Some(b'>') => break,
                    Some(_) => {}
                }
                let (name, value) = self.attribute(&tag, begin)?;
                match (tag.as_str(), name.as_str()) {
                    ("a", "href") | ("tg-emoji", "emoji-id") => argument = value,
                    ("code", "class") if value.starts_with("language-") => {
                        value["language-".len()..].clone_into(&mut argument);
                    }
                    ("span", "class") if value.starts_with("tg-") => value["tg-".len()..].clone_into(&mut argument),
                    ("blockquote", "expandable") => "expandable".clone_into(&mut argument),
                    _ => {}
                }
            }
            self.at += 1;
            if tag == "span" && argument != "spoiler" {
                return Err(format!(
                    "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
                ));
            }
            if tag == "tg-emoji" && argument.is_empty() {
                return Err(format!(
                    "Tag \"tg-emoji\" must have attribute \"emoji-id\" at byte offset {begin}"
                ));
            }
            self.open.push(Open {
                tag,
                argument,
                offset: self.out_len,
            });
            Ok(())
        }

        /// One `name=value` (or a bare `expandable`) inside a start tag.
        fn attribute(&mut self, tag: &str, begin: usize) -> Result<(String, String), String> {
            let unclosed = || format!("Unclosed start tag at byte offset {begin}");
            let name_start = self.at;
            while self
                .peek()
                .is_some_and(|byte| !is_space(byte) && byte != b'=' && byte != b'>')
            {
                self.at += 1;
            }
            let name = self.text[name_start..self.at].to_ascii_lowercase();
            if name.is_empty() {
                return Err(format!(
                    "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
                ));
            }
            self.skip_spaces();
            match self.peek() {
                None => return Err(unclosed()),
                Some(b'=') => self.at += 1,
                Some(_) if tag == "blockquote" && name == "expandable" => return Ok((name, String::new())),
                Some(_) => {
                    return Err(format!(
                        "Expected equal sign in declaration of an attribute of the tag \"{tag}\" at byte offset \
                         {begin}"
                    ));
                }
            }
            self.skip_spaces();
            let value = match self.peek() {
                None => return Err(unclosed()),
                Some(quote @ (b'"' | b'\'')) => self.quoted(quote),
                Some(_) => {
                    let start = self.at;
                    while self
                        .peek()
                        .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
                    {
                        self.at += 1;
                    }
                    if self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
                        return Err(format!("Unexpected end of name token at byte offset {start}"));
                    }
                    self.text[start..self.at].to_ascii_lowercase()
                }
            };
            if self.peek().is_none() {
                return Err(unclosed());
            }
            Ok((name, value))
        }

        fn quoted(&mut self, quote: u8) -> String {
            self.at += 1;
            let mut value = String::new();
            while let Some(byte) = self.peek() {
                if byte == quote {
                    self.at += 1;
                    break;
                }
                if byte == b'&'
                    && let Some((character, length)) = reference(&self.text[self.at..])
                {
                    value.push(character);
                    self.at += length;
                    continue;
                }
                let Some(character) = self.text[self.at..].chars().next() else {
                    break;
                };
                value.push(character);
                self.at += character.len_utf8();
            }
            value
        }

        fn end_tag(&mut self, begin: usize) -> Result<(), String> {
            if self.open.is_empty() {
                return Err(format!("Unexpected end tag at byte offset {begin}"));
            }
            self.at += 1;
            let name_start = self.at;
            while self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
                self.at += 1;
            }
            let name = self.text[name_start..self.at].to_ascii_lowercase();
            self.skip_spaces();
            if self.peek() != Some(b'>') {
                return Err(format!("Unclosed end tag at byte offset {begin}"));
            }
            self.at += 1;
            let Some(open) = self.open.pop() else {
                return Err(format!("Unexpected end tag at byte offset {begin}"));
            };
            if !name.is_empty() && name != open.tag {
                return Err(format!(
                    "Unmatched end tag at byte offset {begin}, expected \"</{}>\", found \"</{name}>\"",
                    open.tag
                ));
            }
            self.close(open);
            Ok(())
        }

        fn close(&mut self, open: Open) {
            let length = self.out_len - open.offset;
            // `<pre><code class="language-x">` is one `pre` entity with a language.
            if open.tag == "code"
                && !open.argument.is_empty()
                && let Some(parent) = self.open.last_mut()
                && parent.tag == "pre"
                && parent.offset == open.offset
            {
                parent.argument.clone_from(&open.argument);
                return;
            }
            if length == 0 {
                return;
            }
            let entity = |kind: &str| Entity::new(kind, open.offset, length);
            let entity = match open.tag.as_str() {
                "a" if open.argument.is_empty() => return,
                "a" => match open
                    .argument
                    .strip_prefix("tg://user?id=")
                    .and_then(|id| id.parse::<i64>().ok())
                {
                    Some(id) => {
                        entity("text_mention").with("user", json!({ "id": id, "is_bot": false, "first_name": "" }))
                    }
                    None => entity("text_link").with("url", Value::String(open.argument)),
                },
                "b" | "strong" => entity("bold"),
                "i" | "em" => entity("italic"),
                "u" | "ins" => entity("underline"),
                "s" | "strike" | "del" => entity("strikethrough"),
                "tg-spoiler" | "span" => entity("spoiler"),
                "tg-emoji" => entity("custom_emoji").with("custom_emoji_id", Value::String(open.argument)),
                "code" => entity("code"),
                "pre" if open.argument.is_empty() => entity("pre"),
                "pre" => entity("pre").with("language", Value::String(open.argument)),
                "blockquote" if open.argument == "expandable" => entity("expandable_blockquote"),
                _ => entity("blockquote"),
            };
            debug_assert!(entity.end() <= utf16_len(&self.out));
            self.entities.push(entity);
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP

async fn handle(AxumState(shared): AxumState<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let conn = parts
        .extensions
        .get::<ConnectInfo<ConnHandle>>()
        .map(|ConnectInfo(conn)| conn.clone());
    let Some((token, method)) = split_path(parts.uri.path()) else {
        return ApiError::not_found().into_response();
    };
    if token != TOKEN {
        return ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    }
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
    let params = parse_params(parts.uri.query(), &parts.headers, &body);
    let canonical = METHODS
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(&method));
    let name = canonical.map_or_else(|| lower_first(&method), str::to_owned);
    let recorded = params.as_ref().map_or(Value::Null, Clone::clone);
    let failure = shared.record(
        Call {
            method: name,
            body: recorded,
        },
        &method,
    );
    let delay = match failure {
        None => None,
        Some(Failure::Slow(delay)) => Some(delay),
        Some(Failure::Disconnect) => {
            if let Some(conn) = conn {
                conn.0.kill();
            }
            return ApiError::from_failure(Failure::Disconnect).into_response();
        }
        Some(failure) => return ApiError::from_failure(failure).into_response(),
    };
    let answer = match (params, canonical) {
        (Err(error), _) => Err(error),
        (Ok(_), None) => Err(ApiError::not_found()),
        (Ok(params), Some(method)) => shared.call(method, &params).await,
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    match answer {
        Ok(result) => Json(json!({ "ok": true, "result": result })).into_response(),
        Err(error) => error.into_response(),
    }
}

/// `/bot{token}/{method}` → (token, method).
fn split_path(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/bot")?;
    let (token, method) = rest.split_once('/')?;
    let method = method.strip_suffix('/').unwrap_or(method);
    if method.is_empty() || method.contains('/') {
        return None;
    }
    Some((percent_decode(token, false), percent_decode(method, false)))
}

fn lower_first(method: &str) -> String {
    let mut chars = method.chars();
    chars
        .next()
        .map_or_else(String::new, |first| first.to_lowercase().chain(chars).collect())
}

/// The server task, its connections and the webhook delivery task;
/// dropping it stops them all.
struct Server {
    addr: SocketAddr,
    task: JoinHandle<()>,
    delivery: JoinHandle<()>,
    conns: Arc<Mutex<Vec<Weak<Conn>>>>,
    shared: Arc<Shared>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        self.delivery.abort();
        for conn in lock(&self.conns).drain(..) {
            if let Some(conn) = conn.upgrade() {
                conn.kill();
            }
        }
        lock(&self.shared.state).closed = true;
        self.shared.updates_changed.notify_waiters();
        self.shared.recorded.notify_waiters();
    }
}

/// One accepted connection, which the fake can drop (for
/// [`Failure::Disconnect`] and on shutdown).
#[derive(Debug, Default)]
struct Conn {
    killed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Conn {
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(waker) = lock(&self.waker).take() {
            waker.wake();
        }
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    fn watch(&self, cx: &Context<'_>) {
        let mut waker = lock(&self.waker);
        if !waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
    }
}

/// The connection a request came on, as axum's `ConnectInfo`.
#[derive(Debug, Clone)]
struct ConnHandle(Arc<Conn>);

impl Connected<IncomingStream<'_, FakeListener>> for ConnHandle {
    fn connect_info(stream: IncomingStream<'_, FakeListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP stream that reads end-of-file and fails writes once killed.
struct FakeStream {
    io: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for FakeStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Ok(()));
        }
        this.conn.watch(cx);
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for FakeStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.conn.is_killed() {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

struct FakeListener {
    inner: TcpListener,
    conns: Arc<Mutex<Vec<Weak<Conn>>>>,
}

impl Listener for FakeListener {
    type Io = FakeStream;
    type Addr = ConnHandle;

    async fn accept(&mut self) -> (FakeStream, ConnHandle) {
        loop {
            match self.inner.accept().await {
                Ok((io, _)) => {
                    let _ = io.set_nodelay(true);
                    let conn = Arc::new(Conn::default());
                    {
                        let mut conns = lock(&self.conns);
                        conns.retain(|conn| conn.strong_count() > 0);
                        conns.push(Arc::downgrade(&conn));
                    }
                    let stream = FakeStream {
                        io,
                        conn: Arc::clone(&conn),
                    };
                    return (stream, ConnHandle(conn));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<ConnHandle> {
        self.inner.local_addr().map(|_| ConnHandle(Arc::default()))
    }
}
