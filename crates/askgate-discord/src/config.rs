//! The Discord part of askgate's configuration: `[channels.<name>]` with
//! `type = "discord"`, and the addressing keys of its recipients.

use std::sync::Arc;

use askgate_adapter::config::{AdapterKind, Address, ChannelSettings, ConfigCheck, Secret, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_core::Capabilities;
use askgate_core::channel::Destination;
use serde::Deserialize;

use crate::channel::USER_PREFIX;
use crate::http::hex32;
use crate::rest::{DISCORD_API, Rest};
use crate::runtime::{DiscordRuntime, Mode};
use crate::{DiscordChannel, gateway};

/// The kind of channel this crate adds: `type = "discord"` in a channel's
/// table, and the name the registry and logs know it by.
pub const KIND: &str = "discord";

/// `type = "discord"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discord;

#[derive(Debug, Deserialize)]
struct ChannelKeys {
    token: Option<String>,
    mode: Option<String>,
    public_key: Option<String>,
    api_url: Option<String>,
    message_content: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct RecipientKeys {
    user_id: Option<Id>,
    channel_id: Option<Id>,
    thread_id: Option<Id>,
    answerers: Option<Vec<Id>>,
}

/// A Discord id (a snowflake), written as a number or a string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Id {
    Number(u64),
    Text(String),
}

impl Id {
    /// The id as text, if it is a snowflake (digits only).
    fn snowflake(&self) -> Option<String> {
        let text = match self {
            Self::Number(id) => id.to_string(),
            Self::Text(id) => id.trim().to_owned(),
        };
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then_some(text)
    }
}

/// A checked Discord channel.
#[derive(Debug, Clone)]
pub struct DiscordSettings {
    name: String,
    token: Secret,
    api_url: String,
    /// The application's public key (hex), in interactions mode.
    public_key: Option<String>,
    /// The `message_content` key; `None` when not set (the application's
    /// flags decide, at the runtime's check).
    message_content: Option<bool>,
}

impl DiscordSettings {
    /// Gateway settings with `token` against `api_url`, for tests and tools;
    /// `message_content` as the key would set it (`None`: not set).
    pub fn gateway(name: &str, token: &str, api_url: &str, message_content: Option<bool>) -> Self {
        Self {
            name: name.to_owned(),
            token: Secret::new(token.to_owned()),
            api_url: api_url.to_owned(),
            public_key: None,
            message_content,
        }
    }

    /// The running channel these settings describe.
    pub fn runtime(&self) -> DiscordRuntime {
        let rest = Rest::new(self.token.expose(), &self.api_url);
        // Typed messages arrive only over the gateway, and only with the
        // Message Content intent. Unless the admin turned it off, it is taken
        // as granted until the runtime's check has read the application's
        // flags, which decides before the channel is used.
        let typed = self.public_key.is_none() && self.message_content != Some(false);
        let channel = Arc::new(DiscordChannel::new(&self.name, rest, typed));
        let mode = match &self.public_key {
            Some(key) => Mode::Interactions {
                public_key: key.clone(),
            },
            None => Mode::Gateway(gateway::GatewaySettings {
                token: self.token.expose().to_owned(),
                api_url: self.api_url.clone(),
                message_content: self.message_content,
            }),
        };
        DiscordRuntime::new(channel, mode)
    }
}

impl ChannelSettings for DiscordSettings {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn start(&self) -> Arc<dyn ChannelRuntime> {
        Arc::new(self.runtime())
    }
}

impl AdapterKind for Discord {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn display_name(&self) -> &'static str {
        crate::channel::DISPLAY_NAME
    }

    /// With typed replies: the gateway with the Message Content intent, the
    /// default (without them a text prompt carries Answer… and Skip).
    fn preview_capabilities(&self) -> Capabilities {
        crate::channel::capabilities(true)
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
        let token = check.platform_secret(
            &key("token"),
            keys.token.as_deref(),
            "a Discord channel needs its bot token.",
            "add token = \"${DISCORD_BOT_TOKEN}\" and export the token from the Developer Portal (Bot → Reset Token).",
        );
        let mode = check.choice(&key("mode"), keys.mode.as_deref(), &["gateway", "interactions"]);
        let public_key = if mode == Some("interactions") {
            check.requires_public_url(&key("mode"), server, "Discord", "gateway");
            let value = keys
                .public_key
                .as_deref()
                .and_then(|value| check.value(&key("public_key"), value));
            let valid = value.filter(|value| hex32(value).is_some());
            if valid.is_none() {
                check.problem(
                    &key("public_key"),
                    "interactions mode needs the application's public key (64 hex digits) to verify Discord's signatures.",
                    "copy PUBLIC KEY from the Developer Portal (General Information).",
                );
                return None;
            }
            valid
        } else {
            None
        };
        let api_url = match keys.api_url.as_deref() {
            Some(url) => check.http_url(&key("api_url"), url)?,
            None => DISCORD_API.to_owned(),
        };
        mode?;
        Some(Box::new(DiscordSettings {
            name: name.to_owned(),
            token: token?,
            api_url,
            public_key,
            message_content: keys.message_content,
        }))
    }

    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address> {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let keys: RecipientKeys = check.table(&format!("recipients.{name}"), table)?;
        let mut snowflake = |field: &str, id: Option<&Id>| match id.map(Id::snowflake) {
            Some(None) => {
                check.problem(
                    &key(field),
                    "this is not a Discord id (a snowflake: digits only).",
                    "copy the id with Developer Mode on (right-click → Copy ID).",
                );
                None
            }
            other => other.flatten(),
        };
        let user = snowflake("user_id", keys.user_id.as_ref());
        let channel = snowflake("channel_id", keys.channel_id.as_ref());
        let thread = snowflake("thread_id", keys.thread_id.as_ref());
        let mut answerers = Vec::new();
        for id in keys.answerers.iter().flatten() {
            answerers.extend(snowflake("answerers", Some(id)));
        }
        match (user, channel) {
            (Some(user), None) if thread.is_none() => Some(Address {
                destination: Destination {
                    conversation: format!("{USER_PREFIX}{user}"),
                    thread: None,
                },
                answerers,
            }),
            (None, Some(channel)) if !answerers.is_empty() => Some(Address {
                destination: Destination {
                    conversation: channel,
                    thread,
                },
                answerers,
            }),
            (None, Some(_)) => {
                check.problem(
                    &key("answerers"),
                    "in a server channel anyone could answer.",
                    "list the Discord user ids allowed to answer: answerers = [\"123456789012345678\"].",
                );
                None
            }
            _ => {
                check.problem(
                    &key("user_id"),
                    "a Discord recipient is a user (askgate opens the DM) or a channel, not both and not neither.",
                    "add user_id = \"<user id>\", or channel_id = \"<channel id>\" (optionally thread_id) with answerers.",
                );
                None
            }
        }
    }
}
