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
//! `sendChatAction`, `setMyCommands`, `deleteMyCommands`. Another method of
//! the Bot API is checked like these, then answered `404 Not Found`.
//!
//! # How closely it follows Telegram
//!
//! - Every request is checked against the Bot API's own description,
//!   vendored in `spec/telegram/api.json` (Bot API 10.1, from
//!   `PaulSonOfLars/telegram-bot-api-spec`; see `spec/telegram/README.md`)
//!   before any method sees it: the method exists (else `404 Not Found`),
//!   required parameters are present, none is unknown, every value has one
//!   of its documented types, down through nested objects
//!   (`InlineKeyboardMarkup`, `InlineKeyboardButton`, `ReplyParameters`,
//!   `LinkPreviewOptions`, `ForceReply`, `BotCommand`, …), `Array of X`,
//!   unions (`Integer or String`) and abstract types (`BotCommandScope`),
//!   and every length and item count the descriptions state, read from
//!   their prose: `answerCallbackQuery.text` 0–200 characters,
//!   `input_field_placeholder` 1–64 characters, `callback_data` 1–64 bytes,
//!   `BotCommand` 1–32 and 1–256 characters, `setWebhook.secret_token` 1–256
//!   characters, at most 100 commands, and a message's `text` 1–4096
//!   characters after entity parsing. Characters are Unicode code points, as
//!   Telegram counts them. An inline button needs exactly one action.
//!   Violations are `400 Bad Request: …` in Telegram's words where they are
//!   known (`chat_id is empty`, `message text is empty`, `text must be
//!   non-empty`, `message is too long`, `MESSAGE_TOO_LONG` for an edit and
//!   a callback answer, `BUTTON_DATA_INVALID`, `can't parse inline keyboard
//!   button: …`, `secret token is too long`) and in the Bot API server's
//!   style elsewhere (`parameter "x" is required`, `field "x" must be of
//!   type Boolean`, `field "x" must be 1-64 characters long, not 65`).
//!   Stricter than Telegram, on purpose: an unknown parameter or field is
//!   refused (`unknown parameter "x"`; Telegram ignores it), and so is a
//!   top-level value of the wrong type (Telegram reads it as 0 or empty).
//!   Added to the description: at most 100 inline buttons (`reply markup is
//!   too long`). Every such refusal is kept, described, for
//!   [`FakeTelegram::violations`].
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
//! - A sent message is a full `Message`: a `message_id` counted per chat, the
//!   bot as `from`, `chat`, `date`, `text`, `entities`, an inline keyboard as
//!   `reply_markup` (a `force_reply` or reply keyboard is not echoed, as on
//!   Telegram), `reply_to_message` (without its own `reply_to_message`) and the
//!   thread: in a forum, `message_thread_id` with `is_topic_message`, and a
//!   message in a topic that replies to nothing else replies to the topic's
//!   `forum_topic_created` message; in other supergroups a reply carries the
//!   `message_thread_id` of the message it answers (Telegram's reply threads).
//! - `reply_parameters` names a message of the same chat: one the fake does
//!   not have is `400 Bad Request: message to be replied not found` unless
//!   `allow_sending_without_reply` (then the message replies to nothing),
//!   which is "always False for replies in another chat or forum topic"
//!   (the description): in a forum topic the refusal stands. A reply to
//!   another chat (`chat_id`) is not modelled and refused.
//! - An HTML `<a href="tg://user?id=…">` is a `text_mention` entity whose
//!   `user` is the person the fake knows by that id (from their updates);
//!   [`FakeTelegram::replies_to`] and [`FakeTelegram::bot_messages_in`]
//!   read the bot's messages back with their text and whom they mention
//!   ([`TgMessage`]).
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
//! [`telegram_payload`] gives `Update` samples shaped as Telegram sends them,
//! for decoding tests (the samples Telegram documents, and ones captured
//! from it, are in `askgate-telegram`'s `tests/samples/`).
//!
//! # Where things are
//!
//! - `mod.rs`: the constants and [`FakeTelegram`], the handle a test holds:
//!   what a person does, what the bot did, failures to queue, waits.
//! - `types.rs`: the public data types ([`Call`], [`Failure`], [`TgUser`],
//!   [`TgChat`], [`Webhook`], [`WebhookDelivery`], [`WaitTimeout`]).
//! - `server.rs`: the HTTP side: paths, the token, parameters, the error
//!   envelope, and the server's lifetime.
//! - `spec.rs`: the vendored Bot API description, and the limits its prose
//!   states; `validate.rs`: every request checked against it, and the
//!   refusal worded as Telegram words it.
//! - `methods.rs`: the Bot API methods.
//! - `state.rs`: what the fake knows (updates, chats, messages), and what a
//!   person's actions add to it.
//! - `entities.rs` and `html.rs`: the text of a message as Telegram stores it,
//!   and the HTML parse mode.
//! - `http.rs`: the HTTP way in, webhook delivery.
//! - `payloads.rs`: the `Update` samples.
//!
//! What is not Telegram's (serving on a loopback port, dropping connections,
//! recording, queued failures, waits, pushes until acknowledged) is in
//! [`crate::fake`].

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod entities;
mod html;
mod http;
mod methods;
mod payloads;
mod server;
mod spec;
mod state;
mod types;
mod validate;

use entities::{plain_text, set_text};
pub use payloads::{TELEGRAM_PAYLOADS, telegram_payload};
use server::Server;
use state::{Origin, Shared, State, sticker_json};
pub use types::{
    Call, Failure, TgChat, TgChatKind, TgMention, TgMessage, TgUser, WaitTimeout, Webhook, WebhookDelivery,
};

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

/// How long a webhook delivery waits for an answer before it counts as failed.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause before a failed webhook delivery is tried again: short, so that
/// tests of retries are quick, but not a busy loop against a dead port.
pub const WEBHOOK_RETRY_PAUSE: Duration = Duration::from_millis(100);

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
            .field("addr", &self.server.addr())
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
        let shared = Arc::new(Shared::default());
        let server = Server::start(&shared).await;
        Self {
            server: Arc::new(server),
            shared,
        }
    }

    /// Starts a fake on `listener`: a Telegram that comes up on the address
    /// askgate was configured with after askgate started (bind a port, tell
    /// askgate, then start the fake on it).
    ///
    /// # Panics
    ///
    /// If the listener has no address, or no HTTP client can be built for
    /// webhook delivery.
    pub fn start_on(listener: tokio::net::TcpListener) -> Self {
        let shared = Arc::new(Shared::default());
        let server = Server::start_on(&shared, listener);
        Self {
            server: Arc::new(server),
            shared,
        }
    }

    /// The URL to give `Bot::set_api_url`: `http://127.0.0.1:PORT/`.
    pub fn api_url(&self) -> String {
        format!("http://{}/", self.server.addr())
    }

    /// The address the fake listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
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
        self.state().requests.calls().to_vec()
    }

    /// Every request refused so far as invalid whatever the state: by the
    /// vendored Bot API description, by a limit Telegram adds to it (more
    /// than 100 inline buttons), or by its text (`parse_mode` markup that
    /// does not parse, a text too long or empty after parsing). Each is the
    /// description Telegram answered, the method and its parameters (cut).
    /// A request the real Telegram refuses is a defect even where askgate
    /// carried on without it.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// The calls of one method so far (matched case-insensitively).
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        calls_to(self.state().requests.calls(), method)
    }

    /// Waits until the fake has had at least `n` calls of `method`, and
    /// returns the calls of that method.
    pub async fn wait_for_call(&self, method: &str, n: usize, timeout: Duration) -> Result<Vec<Call>, WaitTimeout> {
        let waited_for = format!("{n} call(s) to {method}");
        self.wait(timeout, waited_for, |state| {
            let calls = calls_to(state.requests.calls(), method);
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
            done(state.requests.calls()).then(|| state.requests.calls().to_vec())
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
        self.shared
            .state
            .wait(timeout, check, |state| WaitTimeout {
                waited_for,
                timeout,
                calls: state.requests.calls().to_vec(),
                deliveries: state.deliveries.clone(),
            })
            .await
    }

    /// Makes the next call of `method` (any case) fail this way. Failures for
    /// one method queue up and are used one a call.
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.state().requests.fail_next(&method.to_ascii_lowercase(), failure);
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

    /// The bot's messages in a chat, as a person sees them now, in the
    /// order they were sent.
    pub fn bot_messages_in(&self, chat_id: i64) -> Vec<TgMessage> {
        self.messages()
            .get(&chat_id)
            .map(|sent| sent.iter().map(TgMessage::of).collect())
            .unwrap_or_default()
    }

    /// The bot's messages in a chat that reply to message `message_id`
    /// (`reply_to_message`), in order, with their text and whom they
    /// mention. A topic's messages that reply to nothing else reply to its
    /// first message, as on Telegram.
    pub fn replies_to(&self, chat_id: i64, message_id: i64) -> Vec<TgMessage> {
        self.bot_messages_in(chat_id)
            .into_iter()
            .filter(|sent| sent.reply_to == Some(message_id))
            .collect()
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

    /// How many long polls a newer `getUpdates` ended with a conflict: more
    /// than one bot instance polling at once (what Telegram refuses).
    pub fn poll_conflicts(&self) -> usize {
        self.state().poll_conflicts
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
        self.shared.state.lock()
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

fn calls_to(calls: &[Call], method: &str) -> Vec<Call> {
    calls
        .iter()
        .filter(|call| call.method.eq_ignore_ascii_case(method))
        .cloned()
        .collect()
}
