//! The public data types of the fake Slack: the calls it records, the
//! failures a test queues, people and channels, what a person sees of a
//! message and a modal, what the fake sends the app (deliveries, Socket
//! Mode connections and frames), HTTP answers, and the error of a wait that
//! ran out of time.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Which token a Web API call carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// The bot token, [`BOT_TOKEN`](super::BOT_TOKEN).
    Bot,
    /// The app-level token, [`APP_TOKEN`](super::APP_TOKEN).
    App,
    /// A token the fake did not issue.
    Invalid,
    /// None (no `Authorization: Bearer`, no `token` form field).
    Missing,
}

/// One Web API call the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The method, e.g. `chat.postMessage` (whatever followed `/api/`).
    pub method: String,
    /// The token it carried.
    pub token: TokenKind,
    /// The arguments: the JSON body as sent, or the form fields and query
    /// parameters as an object of strings (with `blocks`, `view` and
    /// `attachments` parsed from their JSON text, and `token` left out).
    pub body: Value,
    /// When it came.
    pub at: Instant,
}

/// How the next call of a method fails. Each failure is used once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// `429 Too Many Requests` with `Retry-After` (whole seconds, rounded
    /// up) and `{"ok": false, "error": "ratelimited"}`; the call takes no effect.
    RateLimited {
        /// How long Slack asks to wait.
        retry_after: Duration,
    },
    /// HTTP 200 with `{"ok": false, "error": …}`, e.g. `channel_not_found`;
    /// the call takes no effect.
    Error(&'static str),
    /// This HTTP status (e.g. 500, 503) with a text body, as Slack's edge
    /// answers when something is down; the call takes no effect.
    Status(u16),
    /// The call takes effect at once, but its answer comes after this delay.
    Slow(Duration),
    /// The connection is dropped without an answer; the call takes no effect.
    Drop,
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

/// A person in the fake's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Person {
    /// The user id, `U…`.
    pub id: String,
    /// The username (`name` in payloads).
    pub name: String,
}

/// What a conversation is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelKind {
    /// A public channel (`channel_type` `channel`).
    Public,
    /// A private channel (`channel_type` `group`).
    Private,
    /// The bot's DM with a person (`channel_type` `im`).
    Im {
        /// The person.
        user: String,
    },
}

/// A conversation as the fake knows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackChannel {
    /// `C…` for channels, `D…` for DMs.
    pub id: String,
    /// The name without `#` (`directmessage` for a DM).
    pub name: String,
    /// Public, private or a DM.
    pub kind: ChannelKind,
    /// The people in it (a DM: its person).
    pub members: Vec<String>,
    /// Whether the bot is in it (always in its DMs).
    pub bot_member: bool,
    /// Whether it was archived.
    pub archived: bool,
}

impl SlackChannel {
    /// The `channel_type` of its events: `channel`, `group` or `im`.
    pub fn channel_type(&self) -> &'static str {
        match self.kind {
            ChannelKind::Public => "channel",
            ChannelKind::Private => "group",
            ChannelKind::Im { .. } => "im",
        }
    }
}

/// Someone a message notifies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ping {
    /// `<!channel>`: everyone in the channel.
    Channel,
    /// `<!here>`: everyone active in the channel.
    Here,
    /// `<!everyone>`: the whole workspace.
    Everyone,
    /// `<@U…>`: one person.
    User(String),
    /// `<!subteam^S…>`: a user group.
    Subteam(String),
}

/// A link in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Where it goes.
    pub url: String,
    /// The text shown instead of the URL (`<url|label>`), if any.
    pub label: Option<String>,
    /// Whether Slack would unfurl it (a preview): a link in the message's
    /// `text` unless `unfurl_links` was `false`; never one in blocks.
    pub unfurls: bool,
}

/// A message as a person sees it now.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenMessage {
    /// Its `ts`, which is its id in the channel.
    pub ts: String,
    /// The conversation.
    pub channel: String,
    /// Who wrote it (the bot's user id for the bot's messages).
    pub user: Option<String>,
    /// The bot's id, for the bot's messages.
    pub bot_id: Option<String>,
    /// The `text` (escaped, as Slack stores it).
    pub text: String,
    /// The blocks as stored (with Slack's `block_id`s), or `null`.
    pub blocks: Value,
    /// The thread it is in, if any.
    pub thread_ts: Option<String>,
    /// Whether it was edited.
    pub edited: bool,
    /// For an ephemeral message, the only person who sees it.
    pub ephemeral_for: Option<String>,
    /// Who it notifies (text and `mrkdwn` in blocks).
    pub pings: Vec<Ping>,
    /// The links in it.
    pub links: Vec<Link>,
    /// The channels it links to (`<#C…>`).
    pub channel_refs: Vec<String>,
    /// `unfurl_links` as sent.
    pub unfurl_links: Option<bool>,
    /// `unfurl_media` as sent.
    pub unfurl_media: Option<bool>,
    /// The whole message object.
    pub json: Value,
}

impl SeenMessage {
    /// The buttons of its `actions` blocks and section accessories, in order.
    pub fn buttons(&self) -> Vec<Value> {
        let mut found = Vec::new();
        for block in self.blocks.as_array().into_iter().flatten() {
            let elements = block.get("elements").and_then(Value::as_array).into_iter().flatten();
            for element in elements.chain(block.get("accessory")) {
                if element["type"] == "button" {
                    found.push(element.clone());
                }
            }
        }
        found
    }
}

/// A click on a button, as the fake sent it to the app.
#[derive(Debug, Clone, PartialEq)]
pub struct Click {
    /// Its delivery (see [`FakeSlack::delivery`](super::FakeSlack::delivery)).
    pub delivery: usize,
    /// Who clicked.
    pub user: String,
    /// Where.
    pub channel: String,
    /// The message clicked.
    pub message_ts: String,
    /// The button's `action_id`.
    pub action_id: String,
    /// Its block's `block_id`.
    pub block_id: String,
    /// The button's `value`, from the stored message.
    pub value: Option<String>,
    /// The trigger id, for `views.open`.
    pub trigger_id: String,
    /// The `response_url`, served by the fake.
    pub response_url: String,
    /// The `block_actions` payload.
    pub payload: Value,
}

/// What a person puts in an input of a modal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Text typed into a `plain_text_input`.
    Text(String),
    /// The `value`s of the options chosen (checkboxes, radio buttons, a select).
    Options(Vec<String>),
}

impl Input {
    /// Typed text.
    pub fn text(text: &str) -> Self {
        Self::Text(text.to_owned())
    }

    /// Chosen options, by value.
    pub fn options<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        Self::Options(values.into_iter().map(str::to_owned).collect())
    }
}

impl From<&str> for Input {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// A submitted modal, as the fake sent it to the app.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Its delivery.
    pub delivery: usize,
    /// The view submitted.
    pub view_id: String,
    /// Who submitted it.
    pub user: String,
    /// The `view_submission` payload.
    pub payload: Value,
}

/// A modal the app opened, as the fake keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedView {
    /// `V…`.
    pub id: String,
    /// The trigger id it was opened with (pushed and updated views: the
    /// submission's).
    pub trigger_id: String,
    /// Who sees it.
    pub user: String,
    /// The view as `views.open` answered it (with `state` and `hash`).
    pub json: Value,
    /// Whether it is still open.
    pub open: bool,
    /// The errors shown on it after a submission, by `block_id`.
    pub errors: BTreeMap<String, String>,
}

/// What became of a submitted modal.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewOutcome {
    /// Acknowledged without a payload (or with `{}`): the modal closed.
    Closed,
    /// `response_action: errors`: shown by `block_id`; the modal stays.
    Errors(BTreeMap<String, String>),
    /// `response_action: update`, with the new view.
    Updated(Value),
    /// `response_action: push`, with the pushed view.
    Pushed(Value),
    /// `response_action: clear`: every view of the stack closed.
    Cleared,
    /// Slack showed the person an error instead: no acknowledgement in
    /// time, an HTTP error, or an answer Slack cannot use. The modal stays.
    Rejected(String),
}

/// Whether a delivery carries an event or an interaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryKind {
    /// An `event_callback` (Socket Mode `events_api`).
    Event,
    /// An interaction payload (Socket Mode `interactive`).
    Interaction,
}

/// Where a delivery stands.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryStatus {
    /// Waiting for a connection (or an HTTP endpoint) to take it.
    Queued,
    /// Sent, not acknowledged yet.
    AwaitingAck,
    /// Acknowledged: the ack's `payload` (Socket Mode) or the answer's body
    /// (HTTP), if any; `late` if after the acknowledgement window.
    Acked {
        /// What came with the acknowledgement.
        payload: Option<Value>,
        /// Whether it came after the window (Slack had given up by then).
        late: bool,
    },
    /// Given up: why.
    Failed(String),
}

/// How one attempt of a delivery went out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A Socket Mode envelope on this connection.
    Socket {
        /// The connection's index.
        connection: usize,
        /// The envelope's id.
        envelope_id: String,
    },
    /// A signed HTTP POST.
    Http {
        /// Where.
        url: String,
        /// The answer's status, once known (`None` without an answer).
        status: Option<u16>,
        /// Why no answer came, if so.
        error: Option<String>,
    },
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// When it went out.
    pub at: Instant,
    /// Its `retry_attempt` / `X-Slack-Retry-Num` (0 for a first attempt).
    pub retry: u32,
    /// How.
    pub via: Via,
}

/// Something the fake sends the app: an event or an interaction, with its
/// attempts and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Its index, in the order made.
    pub id: usize,
    /// Event or interaction.
    pub kind: DeliveryKind,
    /// The payload (`event_callback`, `block_actions`, `view_submission`).
    pub payload: Value,
    /// The `event_id` of an event.
    pub event_id: Option<String>,
    /// Every attempt so far.
    pub attempts: Vec<Attempt>,
    /// Where it stands.
    pub status: DeliveryStatus,
}

/// One Socket Mode connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConnection {
    /// Its index, in the order opened.
    pub id: usize,
    /// The ticket of its URL.
    pub ticket: String,
    /// When it opened.
    pub opened: Instant,
    /// Whether it has closed.
    pub closed: bool,
    /// The `reason` of the `disconnect` it was sent, if any.
    pub disconnect_reason: Option<String>,
}

/// Which way a Socket Mode frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the fake to the app.
    Sent,
    /// From the app to the fake.
    Received,
}

/// A Socket Mode text frame.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketFrame {
    /// The connection's index.
    pub connection: usize,
    /// Which way.
    pub direction: Direction,
    /// The frame (a string if it was not JSON).
    pub json: Value,
}

/// How [`FakeSlack::post_signed`](super::FakeSlack::post_signed) signs a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureMode {
    /// As Slack does, now.
    Valid,
    /// With another secret.
    Forged,
    /// Without `X-Slack-Signature` and `X-Slack-Request-Timestamp`.
    Missing,
    /// Validly, with a timestamp this long ago.
    Stale(Duration),
}

/// What came back from an HTTP POST.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    /// The status, if an answer came.
    pub status: Option<u16>,
    /// The body as text.
    pub body: String,
    /// The body as JSON, if it was.
    pub json: Option<Value>,
    /// Why no answer came, if so.
    pub error: Option<String>,
}

/// What came of a `url_verification`.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlVerification {
    /// The challenge sent.
    pub challenge: String,
    /// The answer.
    pub answer: HttpAnswer,
}

impl UrlVerification {
    /// Whether Slack would accept the answer: a 2xx with the challenge as
    /// the body, as `{"challenge": …}`, or as the form field `challenge`.
    pub fn passed(&self) -> bool {
        let Some(status) = self.answer.status else {
            return false;
        };
        let body = self.answer.body.trim();
        (200..300).contains(&status)
            && (body == self.challenge
                || self.answer.json.as_ref().and_then(|json| json["challenge"].as_str()) == Some(&self.challenge)
                || body == format!("challenge={}", self.challenge))
    }
}

/// A wait that ran out of time, with what the fake had seen by then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTimeout {
    /// What was waited for.
    pub waited_for: String,
    /// How long.
    pub timeout: Duration,
    /// The methods of the calls received by then.
    pub methods: Vec<String>,
    /// Where each delivery stood, as `id: status`.
    pub deliveries: Vec<String>,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waited {:?} for {} on the fake Slack; calls so far: {:?}; deliveries: {:?}",
            self.timeout, self.waited_for, self.methods, self.deliveries
        )
    }
}

impl std::error::Error for WaitTimeout {}
