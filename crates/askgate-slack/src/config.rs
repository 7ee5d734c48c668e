//! The Slack part of askgate's configuration: `[channels.<name>]` with
//! `type = "slack"`, and the addressing keys of its recipients.

use std::sync::Arc;

use askgate_adapter::config::{AdapterKind, Address, ChannelSettings, ConfigCheck, Secret, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_core::Capabilities;
use askgate_core::channel::Destination;
use serde::Deserialize;

use crate::api::SLACK_API;
use crate::runtime::{Mode, SlackRuntime};

/// The kind of channel this crate adds: `type = "slack"` in a channel's
/// table, and the name the registry and logs know it by.
pub const KIND: &str = "slack";

/// `type = "slack"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slack;

#[derive(Debug, Deserialize)]
struct ChannelKeys {
    bot_token: Option<String>,
    mode: Option<String>,
    app_token: Option<String>,
    signing_secret: Option<String>,
    signing_secrets: Option<Vec<String>>,
    api_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RecipientKeys {
    user_id: Option<String>,
    channel_id: Option<String>,
    answerers: Option<Vec<String>>,
}

/// A checked Slack channel.
#[derive(Debug, Clone)]
pub struct SlackSettings {
    name: String,
    bot_token: Secret,
    api_url: String,
    mode: Mode,
}

impl SlackSettings {
    /// Socket Mode settings against `api_url`, for tests and tools.
    pub fn socket(name: &str, bot_token: &str, app_token: &str, api_url: &str) -> Self {
        Self {
            name: name.to_owned(),
            bot_token: Secret::new(bot_token.to_owned()),
            api_url: api_url.to_owned(),
            mode: Mode::Socket {
                app_token: Secret::new(app_token.to_owned()),
            },
        }
    }

    /// HTTP settings against `api_url`, for tests and tools.
    pub fn http(name: &str, bot_token: &str, signing_secret: &str, api_url: &str) -> Self {
        Self {
            name: name.to_owned(),
            bot_token: Secret::new(bot_token.to_owned()),
            api_url: api_url.to_owned(),
            mode: Mode::Http {
                signing_secrets: vec![Secret::new(signing_secret.to_owned())],
            },
        }
    }

    /// The running channel these settings describe.
    pub fn runtime(&self) -> SlackRuntime {
        SlackRuntime::new(&self.name, self.bot_token.expose(), &self.api_url, self.mode.clone())
    }
}

impl ChannelSettings for SlackSettings {
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

/// Whether `id` looks like a Slack id of one of `prefixes` (upper-case
/// letters and digits after the prefix letter).
fn slack_id(id: &str, prefixes: &[char]) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|first| prefixes.contains(&first))
        && id.len() >= 3
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

impl AdapterKind for Slack {
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
        let bot_token = check.platform_secret(
            &key("bot_token"),
            keys.bot_token.as_deref(),
            "a Slack channel needs its bot token (xoxb-…).",
            "add bot_token = \"${SLACK_BOT_TOKEN}\" and export the Bot User OAuth Token (OAuth & Permissions).",
        );
        if let Some(token) = &bot_token
            && !token.expose().starts_with("xoxb-")
        {
            check.problem(
                &key("bot_token"),
                "this is not a bot token: Slack's bot tokens start with xoxb-.",
                "copy the Bot User OAuth Token from OAuth & Permissions (not the app-level or a user token).",
            );
        }
        let mode = check.choice(&key("mode"), keys.mode.as_deref(), &["socket", "http"]);
        let mode = match mode {
            Some("http") => {
                check.requires_public_url(&key("mode"), server, "Slack", "socket");
                let what = "HTTP mode needs the app's signing secret to check that requests come from Slack.";
                let fix = "add signing_secret = \"${SLACK_SIGNING_SECRET}\" and export the Signing Secret (Basic Information → App Credentials).";
                let listed = check.one_or_many(
                    (&key("signing_secret"), keys.signing_secret.as_deref()),
                    (&key("signing_secrets"), keys.signing_secrets.as_deref()),
                );
                if listed.is_empty() && keys.signing_secrets.is_none() {
                    check.problem(&key("signing_secret"), what, fix);
                }
                let count = listed.len();
                let secrets: Vec<Secret> = listed
                    .into_iter()
                    .filter_map(|(key, value)| check.platform_secret(&key, Some(value), what, fix))
                    .collect();
                // Every listed secret, or no channel: each missing one is a problem.
                (count > 0 && secrets.len() == count).then_some(Mode::Http {
                    signing_secrets: secrets,
                })
            }
            Some(_) => {
                let app_token = check.platform_secret(
                    &key("app_token"),
                    keys.app_token.as_deref(),
                    "Socket Mode needs an app-level token (xapp-…) with the connections:write scope.",
                    "add app_token = \"${SLACK_APP_TOKEN}\" and create the token under Basic Information → App-Level Tokens; or use mode = \"http\".",
                );
                match app_token {
                    Some(token) if !token.expose().starts_with("xapp-") => {
                        check.problem(
                            &key("app_token"),
                            "this is not an app-level token: they start with xapp-.",
                            "create one under Basic Information → App-Level Tokens with the connections:write scope.",
                        );
                        None
                    }
                    other => other.map(|app_token| Mode::Socket { app_token }),
                }
            }
            None => None,
        };
        let api_url = match keys.api_url.as_deref() {
            Some(url) => check.http_url(&key("api_url"), url)?,
            None => SLACK_API.to_owned(),
        };
        let bot_token = bot_token.filter(|token| token.expose().starts_with("xoxb-"))?;
        Some(Box::new(SlackSettings {
            name: name.to_owned(),
            bot_token,
            api_url: api_url.trim_end_matches('/').to_owned(),
            mode: mode?,
        }))
    }

    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address> {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let keys: RecipientKeys = check.table(&format!("recipients.{name}"), table)?;
        let mut valid = |field: &str, id: Option<&str>, prefixes: &[char], what: &str| match id.map(str::trim) {
            Some(id) if slack_id(id, prefixes) => Some(id.to_owned()),
            Some(_) => {
                check.problem(
                    &key(field),
                    format!("this is not a Slack {what} id."),
                    "copy it in Slack: a member ID from the profile (⋮ → Copy member ID), a channel ID from the channel's details.",
                );
                None
            }
            None => None,
        };
        let user = valid("user_id", keys.user_id.as_deref(), &['U', 'W'], "user (U…)");
        let channel = valid("channel_id", keys.channel_id.as_deref(), &['C', 'G'], "channel (C…)");
        let mut answerers = Vec::new();
        for id in keys.answerers.iter().flatten() {
            answerers.extend(valid("answerers", Some(id), &['U', 'W'], "user (U…)"));
        }
        match (user, channel) {
            (Some(user), None) => Some(Address {
                destination: Destination {
                    conversation: user.clone(),
                    thread: None,
                },
                answerers: if answerers.is_empty() { vec![user] } else { answerers },
            }),
            (None, Some(channel)) if !answerers.is_empty() => Some(Address {
                destination: Destination {
                    conversation: channel,
                    thread: None,
                },
                answerers,
            }),
            (None, Some(_)) => {
                check.problem(
                    &key("answerers"),
                    "in a channel anyone could answer.",
                    "list the Slack member IDs allowed to answer: answerers = [\"U0123ABCD\"].",
                );
                None
            }
            _ => {
                check.problem(
                    &key("user_id"),
                    "a Slack recipient is a user (askgate opens the DM) or a channel, not both and not neither.",
                    "add user_id = \"U0123ABCD\", or channel_id = \"C0123ABCD\" with answerers.",
                );
                None
            }
        }
    }
}
