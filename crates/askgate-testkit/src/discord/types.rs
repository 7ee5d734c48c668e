//! The public data types of the fake: the requests it records, the failures
//! a test queues, the users and channels it puts in payloads, what a person
//! sees of a message and of the answers to their interactions, the gateway's
//! connections and frames, and the error of a wait that ran out of time.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

/// One REST request the fake received with the bot's token (or, for the
/// interaction and webhook routes, which Discord does not authenticate, with
/// any).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `GET`, `POST`, `PATCH`, `DELETE`.
    pub method: String,
    /// The path after `/api/v10`, e.g. `/channels/123/messages`.
    pub path: String,
    /// The route it matched, as [`FakeDiscord::fail_next`](super::FakeDiscord::fail_next)
    /// names it, e.g. `POST /channels/{channel_id}/messages`; for a path the
    /// fake does not know, the method and the path.
    pub route: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The JSON body (`payload_json` of a multipart body); `null` without one.
    pub body: Value,
}

/// How the next request on a route fails. Each failure is used once.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// `429` with `{"message": "You are being rate limited.", "retry_after":
    /// …, "global": false}`, `Retry-After` and the `X-RateLimit-*` headers
    /// (scope `user`), as Discord answers a route's rate limit.
    RateLimited {
        /// Seconds to wait, as in the body (`Retry-After` is rounded up).
        retry_after: f64,
    },
    /// The same with `"global": true`, `X-RateLimit-Global: true` and scope
    /// `global`: the bot's global limit.
    GlobalRateLimited {
        /// Seconds to wait.
        retry_after: f64,
    },
    /// A 5xx with Discord's `{"message": "500: Internal Server Error", "code": 0}`.
    ServerError {
        /// The status, e.g. 500 or 503.
        status: u16,
    },
    /// Any Discord error: this status, JSON error code and message.
    Error {
        /// The HTTP status.
        status: u16,
        /// The JSON error code (e.g. 50013).
        code: u64,
        /// The message (e.g. `Missing Permissions`).
        message: String,
    },
    /// The request takes effect at once, but its answer comes after this delay.
    Slow(Duration),
    /// The connection is dropped without an answer, and the request takes no
    /// effect.
    Disconnect,
    /// This HTTP status with a body of `bytes` bytes, made as it is sent
    /// and never held (a proxy's error page of gigabytes); the request
    /// takes no effect.
    Huge {
        /// The HTTP status.
        status: u16,
        /// How long the body is.
        bytes: u64,
    },
}

/// A Discord user, as the fake puts them in payloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscordUser {
    /// The user id (a snowflake).
    pub id: u64,
    /// The unique username (lowercase, no discriminator).
    pub username: String,
    /// The display name, if set.
    pub global_name: Option<String>,
}

impl DiscordUser {
    /// A user without a display name.
    pub fn new(id: u64, username: &str) -> Self {
        Self {
            id,
            username: username.to_owned(),
            global_name: None,
        }
    }

    /// The same user with this display name.
    #[must_use]
    pub fn with_global_name(mut self, global_name: &str) -> Self {
        self.global_name = Some(global_name.to_owned());
        self
    }

    /// The user as a Discord user object (discriminator `0`, as for every
    /// user who picked a unique username).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id.to_string(),
            "username": self.username,
            "avatar": null,
            "discriminator": "0",
            "public_flags": 0,
            "flags": 0,
            "banner": null,
            "accent_color": null,
            "global_name": self.global_name,
            "avatar_decoration_data": null,
            "collectibles": null,
            "banner_color": null,
            "clan": null,
            "primary_guild": null,
        })
    }
}

/// A channel the bot can send to: a guild text channel or a DM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscordChannel {
    /// The channel id (a snowflake); a DM channel's id differs from the
    /// user's id.
    pub id: u64,
    /// What kind of channel it is.
    pub kind: ChannelKind,
}

/// The kind of a [`DiscordChannel`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelKind {
    /// A DM (channel type 1) with this user.
    Dm {
        /// The user at the other end.
        recipient: u64,
    },
    /// A text channel (type 0) of a guild.
    Guild {
        /// The guild.
        guild_id: u64,
        /// The channel's name, without `#`.
        name: String,
    },
}

impl DiscordChannel {
    /// A guild text channel; tell the fake with
    /// [`FakeDiscord::add_channel`](super::FakeDiscord::add_channel).
    pub fn guild(id: u64, guild_id: u64, name: &str) -> Self {
        Self {
            id,
            kind: ChannelKind::Guild {
                guild_id,
                name: name.to_owned(),
            },
        }
    }

    /// The guild it belongs to; `None` for a DM.
    pub fn guild_id(&self) -> Option<u64> {
        match &self.kind {
            ChannelKind::Guild { guild_id, .. } => Some(*guild_id),
            ChannelKind::Dm { .. } => None,
        }
    }

    /// Discord's channel type: 0 for a guild text channel, 1 for a DM.
    pub fn channel_type(&self) -> u8 {
        match self.kind {
            ChannelKind::Guild { .. } => 0,
            ChannelKind::Dm { .. } => 1,
        }
    }
}

/// One component of a message as a person sees it: a button or a select menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The component type: 2 for a button, 3 and 5–8 for select menus.
    pub kind: u8,
    /// The label of a button.
    pub label: Option<String>,
    /// The `custom_id` a click sends back (not for link buttons).
    pub custom_id: Option<String>,
    /// The button style: 1 primary, 2 secondary, 3 success, 4 danger, 5 link.
    pub style: Option<u8>,
    /// The URL of a link button.
    pub url: Option<String>,
    /// Whether it is disabled.
    pub disabled: bool,
}

/// A mention in a message that notifies someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ping {
    /// `@everyone`.
    Everyone,
    /// `@here`.
    Here,
    /// `<@id>` or `<@!id>`.
    User(u64),
    /// `<@&id>`.
    Role(u64),
    /// The author of the message this one replies to.
    RepliedUser(u64),
}

/// A message as a person sees it (after edits).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenMessage {
    /// The message id.
    pub id: u64,
    /// The channel.
    pub channel_id: u64,
    /// Who wrote it.
    pub author_id: u64,
    /// The text.
    pub content: String,
    /// The action rows and their components.
    pub rows: Vec<Vec<Component>>,
    /// Whether it was edited after it was sent.
    pub edited: bool,
    /// Whether only one person sees it (an ephemeral interaction response),
    /// and who.
    pub ephemeral_for: Option<u64>,
    /// `allowed_mentions` as the bot sent it.
    pub allowed_mentions: Option<Value>,
    /// Who was notified when it was sent (edits notify no one).
    pub pings: Vec<Ping>,
    /// The message it replies to.
    pub reply_to: Option<u64>,
    /// The message object, as `GET` returns it.
    pub json: Value,
}

impl SeenMessage {
    /// Every component, row after row.
    pub fn components(&self) -> Vec<&Component> {
        self.rows.iter().flatten().collect()
    }

    /// The component with this `custom_id`.
    pub fn component(&self, custom_id: &str) -> Option<&Component> {
        self.components()
            .into_iter()
            .find(|component| component.custom_id.as_deref() == Some(custom_id))
    }
}

/// What kind of interaction a person caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InteractionKind {
    /// Type 1: Discord checking an HTTP interactions endpoint.
    Ping,
    /// Type 3: a click on a button (or a select menu).
    Component,
    /// Type 5: a submitted modal.
    ModalSubmit,
}

/// How an interaction reached the bot.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// An `INTERACTION_CREATE` dispatch with this sequence number; `None`
    /// while no gateway session exists (it is sent after the next READY).
    Gateway {
        /// The dispatch's `s`.
        seq: Option<u64>,
    },
    /// A signed POST to the interactions endpoint, and its answer.
    Http(HttpAnswer),
}

/// The answer of an HTTP endpoint to a POST from the fake.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    /// The status; `None` when no answer came (refused, reset, or not within
    /// the 3 s Discord waits).
    pub status: Option<u16>,
    /// The body: JSON if it parses, else the text as a JSON string; `null` if empty.
    pub body: Value,
    /// Why no answer came, or why Discord would not take the body as the
    /// interaction's response (then the person sees "This interaction failed").
    pub error: Option<String>,
}

/// How an interaction was first acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckVia {
    /// `POST /interactions/{id}/{token}/callback`.
    Callback,
    /// The body of the answer to Discord's HTTP POST.
    HttpResponse,
}

/// A field of a modal, as the person sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModalField {
    /// The text input's `custom_id`.
    pub custom_id: String,
    /// Its label.
    pub label: String,
    /// 1 short, 2 paragraph.
    pub style: u8,
    /// Whether it must be filled.
    pub required: bool,
    /// The pre-filled value.
    pub value: Option<String>,
    /// The placeholder.
    pub placeholder: Option<String>,
    /// The minimum length.
    pub min_length: Option<u64>,
    /// The maximum length.
    pub max_length: Option<u64>,
}

/// A modal the bot opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modal {
    /// The modal's `custom_id`, sent back on submit.
    pub custom_id: String,
    /// Its title.
    pub title: String,
    /// Its text inputs, in order.
    pub fields: Vec<ModalField>,
}

/// What the person who caused an interaction saw of one answer to it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Type 1, to a PING.
    Pong,
    /// Type 4: a message (only they see it when ephemeral, flag 64).
    Message {
        /// The message.
        message_id: u64,
        /// Its text.
        content: String,
        /// Its components.
        rows: Vec<Vec<Component>>,
        /// Whether only they see it.
        ephemeral: bool,
    },
    /// Type 5: "… is thinking", a message to come.
    Deferred {
        /// Whether the message to come is ephemeral.
        ephemeral: bool,
    },
    /// Type 6: nothing visible; the clicked message may be edited later.
    DeferredUpdate,
    /// Type 7: the message with the component, updated in place.
    UpdatedMessage {
        /// The message.
        message_id: u64,
        /// Its text after the update.
        content: String,
        /// Its components after the update.
        rows: Vec<Vec<Component>>,
    },
    /// Type 9: a modal opened.
    Modal(Modal),
    /// A follow-up message (`POST /webhooks/{application_id}/{token}`).
    FollowUp {
        /// The message.
        message_id: u64,
        /// Its text.
        content: String,
        /// Its components.
        rows: Vec<Vec<Component>>,
        /// Whether only they see it.
        ephemeral: bool,
    },
    /// An edit of the original response or of a follow-up
    /// (`PATCH /webhooks/{application_id}/{token}/messages/…`).
    Edited {
        /// The message.
        message_id: u64,
        /// Its text after the edit.
        content: String,
        /// Its components after the edit.
        rows: Vec<Vec<Component>>,
    },
}

/// One interaction a person caused, and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionRecord {
    /// The interaction id.
    pub id: u64,
    /// Its token (for the callback and the webhooks).
    pub token: String,
    /// What kind.
    pub kind: InteractionKind,
    /// Who (none for a PING).
    pub user_id: Option<u64>,
    /// Where.
    pub channel_id: Option<u64>,
    /// The message of the clicked component (or of the component that opened the modal).
    pub message_id: Option<u64>,
    /// The clicked component's or the submitted modal's `custom_id`.
    pub custom_id: Option<String>,
    /// The interaction object as it was delivered.
    pub payload: Value,
    /// How it was delivered.
    pub delivery: Delivery,
    /// How it was first acknowledged, if it was.
    pub acknowledged_via: Option<AckVia>,
    /// What the person saw, in order.
    pub replies: Vec<Reply>,
}

/// A WebSocket connection to the fake gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConnection {
    /// Its number, from 0 in the order of connecting.
    pub id: usize,
    /// The path and query it asked for (e.g. `/?v=10`; `/resume?v=10` at
    /// the READY's `resume_gateway_url`).
    pub path: String,
    /// Whether it has closed.
    pub closed: bool,
}

/// A frame on the fake gateway: received from the client, or sent to it.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayFrame {
    /// The connection it came or went on.
    pub connection: usize,
    /// Its `op`, if it had one.
    pub op: Option<u64>,
    /// The whole frame.
    pub json: Value,
}

/// How [`FakeDiscord::disconnect`](super::FakeDiscord::disconnect) ends the
/// gateway connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disconnect {
    /// The TCP connection is dropped, without a WebSocket close frame.
    Abrupt,
    /// A close frame with this code (e.g. 4000 "Unknown error", which the
    /// client may resume after; 4009 "Session timed out", which it may not).
    Close(u16),
}

/// The signature headers of an interaction sent to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signature {
    /// Signed with the application's key, as Discord signs.
    Valid,
    /// Signed with some other key.
    Forged,
    /// Without `X-Signature-Ed25519` and `X-Signature-Timestamp`.
    Missing,
    /// Signed with the application's key, as Discord signs, over a timestamp
    /// this many seconds from now (negative: in the past): a genuine
    /// request recorded then and played again now, or dated by a clock far
    /// ahead.
    Dated(i64),
    /// Signed with the application's key over this `X-Signature-Timestamp`
    /// exactly (`"hello"`): a genuine signature of a request no endpoint
    /// should take.
    Timestamped(&'static str),
}

/// A wait on the fake that ran out of time.
#[derive(Debug, Clone)]
pub struct WaitTimeout {
    /// What was waited for.
    pub waited_for: String,
    /// How long.
    pub timeout: Duration,
    /// The routes of the REST requests received by then.
    pub routes: Vec<String>,
    /// The ops of the gateway frames received by then.
    pub gateway_ops: Vec<Option<u64>>,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waited {:?} for {} on the fake Discord; requests so far: {:?}; gateway frames received: {:?}",
            self.timeout, self.waited_for, self.routes, self.gateway_ops
        )
    }
}

impl std::error::Error for WaitTimeout {}

/// The components of a message object as a person sees them.
pub(crate) fn rows_of(message: &Value) -> Vec<Vec<Component>> {
    let Some(rows) = message.get("components").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .map(|row| {
            row.get("components")
                .and_then(Value::as_array)
                .map(|components| components.iter().map(component_of).collect())
                .unwrap_or_default()
        })
        .collect()
}

fn component_of(component: &Value) -> Component {
    let text = |key: &str| component.get(key).and_then(Value::as_str).map(str::to_owned);
    let small = |key: &str| {
        component
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u8::try_from(n).ok())
    };
    Component {
        kind: small("type").unwrap_or_default(),
        label: text("label"),
        custom_id: text("custom_id"),
        style: small("style"),
        url: text("url"),
        disabled: component.get("disabled").and_then(Value::as_bool).unwrap_or(false),
    }
}

/// The fields of a modal's `data`, as the person sees them.
pub(crate) fn modal_of(data: &Value) -> Modal {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let fields = data
        .get("components")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|row| {
                    // An action row holds the input in `components`; a label (type 18) in `component`.
                    let input = row
                        .get("components")
                        .and_then(Value::as_array)
                        .and_then(|inputs| inputs.first())
                        .or_else(|| row.get("component"))?;
                    Some(ModalField {
                        custom_id: text(input, "custom_id").unwrap_or_default(),
                        label: text(input, "label").or_else(|| text(row, "label")).unwrap_or_default(),
                        style: input
                            .get("style")
                            .and_then(Value::as_u64)
                            .and_then(|n| u8::try_from(n).ok())
                            .unwrap_or(1),
                        required: input.get("required").and_then(Value::as_bool).unwrap_or(true),
                        value: text(input, "value"),
                        placeholder: text(input, "placeholder"),
                        min_length: input.get("min_length").and_then(Value::as_u64),
                        max_length: input.get("max_length").and_then(Value::as_u64),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Modal {
        custom_id: text(data, "custom_id").unwrap_or_default(),
        title: text(data, "title").unwrap_or_default(),
        fields,
    }
}
