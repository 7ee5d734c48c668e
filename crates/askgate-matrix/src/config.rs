//! The Matrix part of askgate's configuration: `[channels.<name>]` with
//! `type = "matrix"`, and the addressing keys of its recipients.

use std::path::PathBuf;
use std::sync::Arc;

use askgate_adapter::Introduction;
use askgate_adapter::config::{AdapterKind, Address, ChannelSettings, ConfigCheck, Secret, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_core::Capabilities;
use askgate_core::channel::{ConversationKind, Destination, InboundEvent};
use serde::Deserialize;

use crate::MatrixChannel;
use crate::runtime::MatrixRuntime;

/// The kind of channel this crate adds: `type = "matrix"` in a channel's
/// table, and the name the registry and logs know it by.
pub const KIND: &str = "matrix";

/// `type = "matrix"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Matrix;

#[derive(Debug, Deserialize)]
struct ChannelKeys {
    homeserver: Option<String>,
    user_id: Option<String>,
    access_token: Option<String>,
    password: Option<String>,
    device_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RecipientKeys {
    user_id: Option<String>,
    room_id: Option<String>,
    thread: Option<String>,
    answerers: Option<Vec<String>>,
}

/// A checked Matrix channel.
#[derive(Debug, Clone)]
pub struct MatrixSettings {
    /// The channel's configured name.
    pub name: String,
    /// The homeserver's client-server API base (`https://matrix.example.org`).
    pub homeserver: String,
    /// The bot's own user id (`@askgate:example.org`).
    pub user_id: String,
    /// How the bot signs in.
    pub login: Login,
    /// The device the access token belongs to; asked of the homeserver
    /// (`whoami`) when not configured.
    pub device_id: Option<String>,
    /// Where the encryption keys and room state are kept; `None` keeps
    /// them in memory (tests), which a restart loses.
    pub store_dir: Option<PathBuf>,
}

/// How the bot signs in to its homeserver.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Login {
    /// The access token of a login made elsewhere (with its device).
    Token(Secret),
    /// The bot's password: askgate logs in once, as a device of its own, and
    /// keeps that session in the channel's folder (`session.json`), so that
    /// every later start is the same device with the same keys.
    Password(Secret),
}

impl Login {
    /// The configuration key the credential is at (for problems).
    pub fn key(&self) -> &'static str {
        match self {
            Self::Token(_) => "access_token",
            Self::Password(_) => "password",
        }
    }
}

impl ChannelSettings for MatrixSettings {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn start(&self) -> Arc<dyn ChannelRuntime> {
        Arc::new(MatrixRuntime::new(Arc::new(MatrixChannel::new(self.clone()))))
    }
}

impl AdapterKind for Matrix {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn display_name(&self) -> &'static str {
        crate::channel::DISPLAY_NAME
    }

    fn preview_capabilities(&self) -> Capabilities {
        crate::channel::capabilities()
    }

    fn channel(
        &self,
        check: &mut ConfigCheck<'_>,
        name: &str,
        table: toml::Table,
        server: ServerContext<'_>,
    ) -> Option<Box<dyn ChannelSettings>> {
        let key = |field: &str| format!("channels.{name}.{field}");
        let keys: ChannelKeys = check.table(&format!("channels.{name}"), table)?;
        let homeserver = match keys.homeserver.as_deref() {
            Some(url) => check.http_url(&key("homeserver"), url),
            None => {
                check.problem(
                    &key("homeserver"),
                    "a Matrix channel needs its homeserver's address.",
                    "add homeserver = \"https://matrix.example.org\" (the client-server API, as in Element's settings).",
                );
                None
            }
        };
        let user_id = match keys.user_id.as_deref() {
            Some(id) => check.value(&key("user_id"), id).filter(|id| {
                let valid = is_user_id(id);
                if !valid {
                    check.problem(
                        &key("user_id"),
                        format!("\"{id}\" is not a Matrix user id."),
                        "write the bot's full id, as @askgate:example.org.",
                    );
                }
                valid
            }),
            None => {
                check.problem(
                    &key("user_id"),
                    "a Matrix channel needs the bot's user id.",
                    "add user_id = \"@askgate:example.org\".",
                );
                None
            }
        };
        let login = match (keys.access_token.as_deref(), keys.password.as_deref()) {
            (Some(_), Some(_)) => {
                check.problem(
                    &key("password"),
                    "access_token and password are both set.",
                    "keep one: an access token of a login made elsewhere, or the password for askgate to log in once.",
                );
                None
            }
            (None, Some(password)) => check
                .required_secret(
                    &key("password"),
                    Some(password),
                    "",
                    "export the bot's password",
                    "the password",
                )
                .map(Login::Password),
            (token, None) => check
                .platform_secret(
                    &key("access_token"),
                    token,
                    "a Matrix channel needs the bot's access token (or its password, for askgate to log in once).",
                    "add access_token = \"${MATRIX_ACCESS_TOKEN}\" and export the token of the bot's login, or password = \"${MATRIX_PASSWORD}\" (docs/channels/matrix.md).",
                )
                .map(Login::Token),
        };
        let device_id = keys
            .device_id
            .as_deref()
            .and_then(|id| check.value(&key("device_id"), id));
        Some(Box::new(MatrixSettings {
            name: name.to_owned(),
            homeserver: homeserver?.trim_end_matches('/').to_owned(),
            user_id: user_id?,
            login: login?,
            device_id,
            store_dir: server.channel_dir(name),
        }))
    }

    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address> {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let keys: RecipientKeys = check.table(&format!("recipients.{name}"), table)?;
        let answerers: Vec<String> = keys.answerers.iter().flatten().map(|id| id.trim().to_owned()).collect();
        for (index, answerer) in answerers.iter().enumerate() {
            if !is_user_id(answerer) {
                check.problem(
                    &format!("recipients.{name}.answerers[{index}]"),
                    format!("\"{answerer}\" is not a Matrix user id."),
                    "list full user ids, as \"@alice:example.org\".",
                );
            }
        }
        let thread = keys.thread.map(|thread| thread.trim().to_owned());
        if let Some(thread) = &thread
            && !thread.starts_with('$')
        {
            check.problem(
                &key("thread"),
                format!("\"{thread}\" is not a Matrix event id."),
                "write the id of the thread's first message, as \"$abc…\".",
            );
        }
        let conversation = match (keys.user_id, keys.room_id) {
            (Some(user), None) if keys.answerers.is_none() && thread.is_none() => {
                let user = user.trim().to_owned();
                if !is_user_id(&user) {
                    check.problem(
                        &key("user_id"),
                        format!("\"{user}\" is not a Matrix user id."),
                        "write the person's full id, as \"@alice:example.org\".",
                    );
                    return None;
                }
                user
            }
            (Some(_), None) => {
                check.problem(
                    &key("user_id"),
                    "a person is written to in a direct room askgate opens, where only they answer.",
                    "remove answerers and thread, or address a room with room_id instead.",
                );
                return None;
            }
            (None, Some(room)) => {
                let room = room.trim().to_owned();
                // `!opaque:server`, or since room version 12 `!` and a hash.
                if matrix_sdk::ruma::RoomId::parse(&room).is_err() || room.chars().any(char::is_whitespace) {
                    check.problem(
                        &key("room_id"),
                        format!("\"{room}\" is not a Matrix room id."),
                        "write the room's id, as \"!abc:example.org\" (Element: Room settings, Advanced).",
                    );
                    return None;
                }
                if answerers.is_empty() {
                    check.problem(
                        &key("answerers"),
                        "in a room anyone could answer.",
                        "list the Matrix user ids allowed to answer: answerers = [\"@alice:example.org\"].",
                    );
                    return None;
                }
                room
            }
            _ => {
                check.problem(
                    &key("user_id"),
                    "a Matrix recipient is a person (askgate opens a direct room) or a room, not both and not neither.",
                    "add user_id = \"@alice:example.org\", or room_id = \"!abc:example.org\" with answerers.",
                );
                return None;
            }
        };
        Some(Address {
            destination: Destination { conversation, thread },
            answerers,
        })
    }
}

/// The recipient keys that address the conversation of `event` — what
/// [`Matrix::recipient`] reads back into the same destination: the
/// person's `user_id` in a direct room, or the room's `room_id` (and
/// `thread`) with the writer in `answerers`.
pub(crate) fn introduction(event: &InboundEvent) -> Introduction {
    let text = |id: &str| toml::Value::String(id.to_owned());
    match event.conversation_kind {
        ConversationKind::Direct => Introduction {
            destination: Destination {
                conversation: event.user.id.clone(),
                thread: None,
            },
            keys: vec![("user_id", text(&event.user.id))],
        },
        ConversationKind::Group => {
            let mut keys = vec![("room_id", text(&event.conversation))];
            if let Some(thread) = &event.thread {
                keys.push(("thread", text(thread)));
            }
            keys.push(("answerers", toml::Value::Array(vec![text(&event.user.id)])));
            Introduction {
                destination: Destination {
                    conversation: event.conversation.clone(),
                    thread: event.thread.clone(),
                },
                keys,
            }
        }
    }
}

/// `@localpart:server`, as the spec's user identifiers (with a server name
/// that may carry a port).
pub fn is_user_id(id: &str) -> bool {
    matrix_sdk::ruma::UserId::parse(id).is_ok() && !id.chars().any(char::is_whitespace)
}
