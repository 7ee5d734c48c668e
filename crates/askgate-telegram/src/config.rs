//! The Telegram part of askgate's configuration: `[channels.<name>]` with
//! `type = "telegram"`, and the addressing keys of its recipients.

use std::sync::Arc;

use askgate_adapter::Introduction;
use askgate_adapter::config::{AdapterKind, Address, ChannelSettings, ConfigCheck, Secret, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_core::Capabilities;
use askgate_core::channel::{ConversationKind, Destination, InboundEvent};
use serde::Deserialize;

use crate::TelegramChannel;
use crate::runtime::TelegramRuntime;

/// The kind of channel this crate adds: `type = "telegram"` in a channel's
/// table, and the name the registry and logs know it by.
pub const KIND: &str = "telegram";

/// `type = "telegram"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Telegram;

#[derive(Debug, Deserialize)]
struct ChannelKeys {
    token: Option<String>,
    mode: Option<String>,
    api_url: Option<String>,
    secret_token: Option<String>,
    secret_tokens: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct RecipientKeys {
    chat_id: Option<Id>,
    topic: Option<Id>,
    answerers: Option<Vec<Id>>,
}

/// A Telegram id, written as a number (`42`) or a string (`"42"`, `"@channel"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    fn text(&self) -> String {
        match self {
            Self::Number(id) => id.to_string(),
            Self::Text(id) => id.trim().to_owned(),
        }
    }
}

/// A checked Telegram channel.
#[derive(Debug, Clone)]
pub struct TelegramSettings {
    name: String,
    token: Secret,
    api_url: Option<reqwest::Url>,
    /// Webhook mode's secrets (the first registered, any accepted); empty
    /// in polling mode.
    webhook_secrets: Vec<Secret>,
}

impl TelegramSettings {
    /// Settings for polling with `token`, against `api_url` (the real Bot API
    /// when `None`).
    pub fn polling(name: &str, token: &str, api_url: Option<reqwest::Url>) -> Self {
        Self {
            name: name.to_owned(),
            token: Secret::new(token.to_owned()),
            api_url,
            webhook_secrets: Vec::new(),
        }
    }
}

impl ChannelSettings for TelegramSettings {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn start(&self) -> Arc<dyn ChannelRuntime> {
        let channel = TelegramChannel::new(&self.name, self.token.expose(), self.api_url.clone());
        Arc::new(TelegramRuntime::new(Arc::new(channel), self.webhook_secrets.clone()))
    }
}

impl AdapterKind for Telegram {
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
        let webhook_secrets = match check.choice(&key("mode"), keys.mode.as_deref(), &["polling", "webhook"]) {
            Some("webhook") => {
                check.requires_public_url(&key("mode"), server, "Telegram", "polling");
                if keys.secret_token.is_none() && keys.secret_tokens.is_none() {
                    check.problem(
                        &key("secret_token"),
                        "webhook mode needs a secret that Telegram sends with every update.",
                        "add secret_token = \"${TELEGRAM_WEBHOOK_SECRET}\" (32 or more letters, digits, '-' or '_').",
                    );
                }
                check.secrets(
                    (&key("secret_token"), keys.secret_token.as_deref()),
                    (&key("secret_tokens"), keys.secret_tokens.as_deref()),
                )
            }
            _ => Vec::new(),
        };
        let token = check.platform_secret(
            &key("token"),
            keys.token.as_deref(),
            "a Telegram channel needs its bot token.",
            "add token = \"${TELEGRAM_BOT_TOKEN}\" and export the token BotFather gave you.",
        );
        let token = token.filter(|token| {
            let well_formed = is_bot_token(token.expose());
            if !well_formed {
                check.problem(
                    &key("token"),
                    "this is not a Telegram bot token (digits, a colon, then letters, digits, '-' or '_').",
                    "copy the token BotFather gave you.",
                );
            }
            well_formed
        });
        let api_url = keys
            .api_url
            .as_deref()
            .and_then(|url| check.http_url(&key("api_url"), url))
            .and_then(|url| {
                let parsed = reqwest::Url::parse(&url).ok();
                if parsed.is_none() {
                    check.problem(
                        &key("api_url"),
                        format!("\"{url}\" is not a URL."),
                        "correct it, or remove it to use Telegram's.",
                    );
                }
                parsed
            });
        Some(Box::new(TelegramSettings {
            name: name.to_owned(),
            token: token?,
            api_url,
            webhook_secrets,
        }))
    }

    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address> {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let keys: RecipientKeys = check.table(&format!("recipients.{name}"), table)?;
        let Some(chat) = keys.chat_id.as_ref().map(Id::text) else {
            check.problem(
                &key("chat_id"),
                "a Telegram recipient needs the chat to write to.",
                "add chat_id = <the chat id> (a person's user id for a private chat).",
            );
            return None;
        };
        let answerers: Vec<String> = keys.answerers.iter().flatten().map(Id::text).collect();
        // A group chat id is negative (a channel is `@name`): there, who may answer must be said.
        let group = chat.starts_with('-') || chat.starts_with('@');
        if group && answerers.is_empty() {
            check.problem(
                &key("answerers"),
                "in a group anyone could answer.",
                "list the Telegram user ids allowed to answer: answerers = [123456789].",
            );
            return None;
        }
        Some(Address {
            destination: Destination {
                conversation: chat,
                thread: keys.topic.as_ref().map(Id::text),
            },
            answerers,
        })
    }
}

/// The recipient keys that address the conversation of `event` — what
/// [`Telegram::recipient`] reads back into the same destination: `chat_id`,
/// a forum topic's `topic`, and in a group the writer's id in `answerers`.
pub(crate) fn introduction(event: &InboundEvent) -> Introduction {
    let id = |text: &str| {
        text.parse::<i64>()
            .map_or_else(|_| toml::Value::String(text.to_owned()), toml::Value::Integer)
    };
    let mut keys = vec![("chat_id", id(&event.conversation))];
    if let Some(topic) = &event.thread {
        keys.push(("topic", id(topic)));
    }
    if event.conversation_kind == ConversationKind::Group {
        keys.push(("answerers", toml::Value::Array(vec![id(&event.user.id)])));
    }
    Introduction {
        destination: Destination {
            conversation: event.conversation.clone(),
            thread: event.thread.clone(),
        },
        keys,
    }
}

/// Digits, a colon, then letters, digits, `-` or `_`.
fn is_bot_token(token: &str) -> bool {
    token.split_once(':').is_some_and(|(id, secret)| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_digit())
            && !secret.is_empty()
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}
