//! The Web API methods the fake answers, checked and answered as Slack
//! does: the method and its arguments against the vendored Web API
//! document (`unknown_method`; `invalid_arguments` for a missing required,
//! unknown or mistyped argument, see [`super::spec`]), the token each takes,
//! the conversation a `channel` argument names, whether the bot may post
//! there, message content (`no_text`, `msg_too_long`, `invalid_blocks` with
//! Slack's errors), and the message objects and answers of `chat.*`.
//! `views.open` is in `views.rs`.

use std::time::Instant;

use serde_json::{Value, json};

use super::blocks;
use super::server::ApiError;
use super::spec::{block_kit, check_arguments, documents};
use super::state::{State, Stored};
use super::types::{ChannelKind, TokenKind};
use super::{APP_ID, BOT_ID, BOT_NAME, BOT_USER_ID, TEAM_DOMAIN, TEAM_ID, TEAM_NAME};

/// The methods the fake answers (any other is `unknown_method`: one Slack
/// does not document as Slack answers it, one it does because the fake does
/// not model it), and
/// `response_url` for the click URLs, as [`FakeSlack::fail_next`](super::FakeSlack::fail_next)
/// names them.
pub const METHODS: &[&str] = &[
    "api.test",
    "auth.test",
    "apps.connections.open",
    "conversations.open",
    "users.info",
    "chat.postMessage",
    "chat.update",
    "chat.delete",
    "chat.postEphemeral",
    "views.open",
    "response_url",
];

/// The token a method takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Nothing,
    Bot,
    App,
}

fn needs(method: &str) -> Option<Needs> {
    Some(match method {
        "api.test" => Needs::Nothing,
        "apps.connections.open" => Needs::App,
        "auth.test" | "conversations.open" | "users.info" | "chat.postMessage" | "chat.update" | "chat.delete"
        | "chat.postEphemeral" | "views.open" => Needs::Bot,
        _ => return None,
    })
}

/// A string argument (a number is taken as its text, as Slack does).
pub(crate) fn text_arg(args: &Value, key: &str) -> Option<String> {
    match args.get(key)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A boolean argument: `true`/`false`, or `"true"`/`"1"`/`"false"`/`"0"` from a form.
pub(crate) fn bool_arg(args: &Value, key: &str) -> Option<bool> {
    match args.get(key)? {
        Value::Bool(value) => Some(*value),
        Value::String(text) => match text.as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        },
        Value::Number(number) => Some(number.as_u64() != Some(0)),
        _ => None,
    }
}

/// What a message shows: checked, with its blocks as Slack stores them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Content {
    pub(crate) text: Option<String>,
    pub(crate) blocks: Option<Value>,
    pub(crate) attachments: Option<Value>,
}

/// A message to store.
#[derive(Debug, Clone, Default)]
pub(crate) struct Post {
    pub(crate) channel: String,
    pub(crate) content: Content,
    pub(crate) thread_ts: Option<String>,
    pub(crate) ephemeral_for: Option<String>,
    pub(crate) unfurl_links: Option<bool>,
    pub(crate) unfurl_media: Option<bool>,
    pub(crate) link_names: bool,
}

impl Post {
    /// The options of a `chat.*` call.
    pub(crate) fn from_args(channel: String, content: Content, args: &Value) -> Self {
        Self {
            channel,
            content,
            thread_ts: text_arg(args, "thread_ts").filter(|ts| !ts.is_empty()),
            ephemeral_for: None,
            unfurl_links: bool_arg(args, "unfurl_links"),
            unfurl_media: bool_arg(args, "unfurl_media"),
            link_names: bool_arg(args, "link_names") == Some(true)
                || text_arg(args, "parse").as_deref() == Some("full"),
        }
    }
}

impl State {
    /// Answers one Web API call.
    pub(crate) fn api(
        &mut self,
        method: &str,
        token: TokenKind,
        args: &Value,
        now: Instant,
    ) -> Result<Value, ApiError> {
        let Some(needs) = needs(method).filter(|_| documents(method)) else {
            return Err(ApiError::new("unknown_method").with("req_method", json!(method)));
        };
        if needs != Needs::Nothing {
            match token {
                TokenKind::Missing => return Err(ApiError::new("not_authed")),
                TokenKind::Invalid => return Err(ApiError::new("invalid_auth")),
                _ if self.config.deactivated => return Err(ApiError::new("account_inactive")),
                TokenKind::Bot if needs == Needs::App => return Err(ApiError::new("not_allowed_token_type")),
                TokenKind::App if needs == Needs::Bot => return Err(ApiError::new("not_allowed_token_type")),
                _ => {}
            }
        }
        check_arguments(method, args).map_err(|errors| ApiError::new("invalid_arguments").with_messages(&errors))?;
        match method {
            "api.test" => Ok(json!({ "args": args })),
            "auth.test" => Ok(json!({
                "url": format!("https://{TEAM_DOMAIN}.slack.com/"),
                "team": TEAM_NAME,
                "user": BOT_NAME,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
                "is_enterprise_install": false,
            })),
            "apps.connections.open" => {
                let ticket = self.id("ticket-");
                self.socket.issue_ticket(ticket.clone());
                Ok(json!({ "url": format!("{}/link/?ticket={ticket}&app_id={APP_ID}", self.socket_base) }))
            }
            "conversations.open" => self.open_conversation(args),
            "users.info" => self.user_info(args),
            "chat.postMessage" => self.post_message(args, now),
            "chat.update" => self.update_message(args),
            "chat.delete" => self.delete_message(args),
            "chat.postEphemeral" => self.post_ephemeral(args),
            "views.open" => self.open_view(args, now),
            _ => Err(ApiError::new("unknown_method").with("req_method", json!(method))),
        }
    }

    /// The conversation a `channel` argument names.
    fn channel_arg(&mut self, args: &Value) -> Result<String, ApiError> {
        text_arg(args, "channel")
            .and_then(|channel| self.resolve(&channel))
            .ok_or_else(|| ApiError::new("channel_not_found"))
    }

    /// Whether the bot may post in a conversation: not archived, and in it
    /// (a public channel it is not in is `not_in_channel`, a private one it
    /// cannot see).
    fn may_post(&self, channel: &str) -> Result<(), ApiError> {
        let Some(known) = self.channels.get(channel) else {
            return Err(ApiError::new("channel_not_found"));
        };
        if known.archived {
            return Err(ApiError::new("is_archived"));
        }
        match known.kind {
            _ if known.bot_member => Ok(()),
            ChannelKind::Public => Err(ApiError::new("not_in_channel")),
            _ => Err(ApiError::new("channel_not_found")),
        }
    }

    /// The content of a `chat.*` call, checked as Slack checks it.
    pub(crate) fn content(&mut self, args: &Value) -> Result<Content, ApiError> {
        let text = text_arg(args, "text");
        let blocks = match args.get("blocks") {
            None | Some(Value::Null) => None,
            Some(Value::Array(blocks)) => Some(Value::Array(blocks.clone())),
            Some(_) => return Err(ApiError::new("invalid_blocks_format")),
        };
        if let Some(blocks) = &blocks
            && let Err(errors) = blocks::check_message(blocks)
        {
            return Err(ApiError::new("invalid_blocks")
                .with("errors", json!(errors))
                .with_messages(&errors));
        }
        let kit = block_kit();
        if text
            .as_ref()
            .is_some_and(|text| kit.length(text) > kit.message_text.max)
        {
            return Err(ApiError::new("msg_too_long"));
        }
        let attachments = args.get("attachments").filter(|value| value.is_array()).cloned();
        let has_blocks = blocks
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|blocks| !blocks.is_empty());
        let has_attachments = attachments
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if text.as_deref().is_none_or(|text| text.trim().is_empty()) && !has_blocks && !has_attachments {
            return Err(ApiError::new("no_text"));
        }
        let blocks = blocks.map(|mut blocks| {
            blocks::normalise(&mut blocks, &mut || self.short_id());
            blocks
        });
        Ok(Content {
            text,
            blocks,
            attachments,
        })
    }

    /// Stores a message by the bot and tells the app of it; returns its index.
    pub(crate) fn post(&mut self, post: Post) -> usize {
        let ts = self.ts();
        let mut message = json!({
            "user": BOT_USER_ID,
            "type": "message",
            "ts": ts,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "text": post.content.text.clone().unwrap_or_default(),
            "team": TEAM_ID,
            "bot_profile": State::bot_profile(),
        });
        if let Some(blocks) = post
            .content
            .blocks
            .filter(|blocks| blocks.as_array().is_some_and(|b| !b.is_empty()))
        {
            message["blocks"] = blocks;
        }
        if let Some(attachments) = post.content.attachments {
            message["attachments"] = attachments;
        }
        if let Some(thread_ts) = &post.thread_ts {
            message["thread_ts"] = json!(thread_ts);
            if let Some(parent) = self.message_at(&post.channel, thread_ts) {
                message["parent_user_id"] = self.messages[parent].json["user"].clone();
            }
        }
        if post.ephemeral_for.is_some() {
            message["subtype"] = json!("bot_message");
        }
        let mentions = self.mentions(&message, post.link_names, post.unfurl_links);
        self.messages.push(Stored {
            json: message,
            channel: post.channel,
            ephemeral_for: post.ephemeral_for,
            by_bot: true,
            unfurl_links: post.unfurl_links,
            unfurl_media: post.unfurl_media,
            link_names: post.link_names,
            mentions,
        });
        let index = self.messages.len() - 1;
        let event = self.message_event_json(index);
        self.message_event(index, event);
        index
    }

    fn post_message(&mut self, args: &Value, now: Instant) -> Result<Value, ApiError> {
        let channel = self.channel_arg(args)?;
        if let Some(limit) = &mut self.limit {
            limit.take(&channel, now).map_err(ApiError::RateLimited)?;
        }
        self.may_post(&channel)?;
        let content = self.content(args)?;
        if let Some(thread_ts) = text_arg(args, "thread_ts").filter(|ts| !ts.is_empty()) {
            self.thread_parent(&channel, &thread_ts)?;
        }
        let index = self.post(Post::from_args(channel.clone(), content, args));
        let message = self.messages[index].json.clone();
        Ok(json!({ "channel": channel, "ts": message["ts"], "message": message }))
    }

    /// Whether `thread_ts` names a message of the conversation that a reply
    /// can thread under: chat.postMessage's `thread_ts` is "another
    /// message's `ts` value … Avoid using a reply's `ts` value; use its
    /// parent instead". Slack is reported to answer `invalid_thread_ts` for
    /// such a value, or to take the reply and show it nowhere; the fake
    /// refuses it either way, so that a reply that would be lost fails a
    /// test.
    fn thread_parent(&self, channel: &str, thread_ts: &str) -> Result<(), ApiError> {
        let parent = self
            .message_at(channel, thread_ts)
            .map(|index| &self.messages[index])
            .filter(|stored| stored.ephemeral_for.is_none());
        let is_reply = |stored: &Stored| {
            stored.json["thread_ts"]
                .as_str()
                .is_some_and(|thread| thread != thread_ts)
        };
        match parent {
            Some(stored) if !is_reply(stored) => Ok(()),
            _ => Err(ApiError::new("invalid_thread_ts")),
        }
    }

    fn post_ephemeral(&mut self, args: &Value) -> Result<Value, ApiError> {
        let channel = self.channel_arg(args)?;
        let user = text_arg(args, "user")
            .filter(|user| self.users.contains_key(user))
            .ok_or_else(|| ApiError::new("user_not_found"))?;
        self.may_post(&channel)?;
        if !self.channels[&channel].members.contains(&user) {
            return Err(ApiError::new("user_not_in_channel"));
        }
        let content = self.content(args)?;
        let mut post = Post::from_args(channel, content, args);
        post.ephemeral_for = Some(user);
        let index = self.post(post);
        Ok(json!({ "message_ts": self.messages[index].json["ts"] }))
    }

    /// The bot's own message at `channel` and `ts`, for an edit or a delete.
    fn own_message(&mut self, args: &Value, not_own: &str) -> Result<(String, usize), ApiError> {
        let channel = self.channel_arg(args)?;
        let ts = text_arg(args, "ts").unwrap_or_default();
        let index = self
            .message_at(&channel, &ts)
            .filter(|&index| self.messages[index].ephemeral_for.is_none())
            .ok_or_else(|| ApiError::new("message_not_found"))?;
        if !self.messages[index].by_bot {
            return Err(ApiError::new(not_own));
        }
        if self.channels.get(&channel).is_some_and(|known| known.archived) {
            return Err(ApiError::new("is_archived"));
        }
        Ok((channel, index))
    }

    fn update_message(&mut self, args: &Value) -> Result<Value, ApiError> {
        let (channel, index) = self.own_message(args, "cant_update_message")?;
        let content = self.content(args)?;
        let edited_ts = self.ts();
        let link_names = bool_arg(args, "link_names") == Some(true);
        let previous = self.messages[index].json.clone();
        let mut message = previous.clone();
        if let Some(text) = content.text {
            message["text"] = json!(text);
        }
        if let Some(blocks) = content.blocks {
            match message.as_object_mut() {
                Some(object) if blocks.as_array().is_some_and(Vec::is_empty) => {
                    object.remove("blocks");
                }
                _ => message["blocks"] = blocks,
            }
        }
        if let Some(attachments) = content.attachments {
            message["attachments"] = attachments;
        }
        message["edited"] = json!({ "user": BOT_USER_ID, "ts": edited_ts });
        let stored = &self.messages[index];
        let unfurl_links = bool_arg(args, "unfurl_links").or(stored.unfurl_links);
        let mentions = self.mentions(&message, link_names || stored.link_names, unfurl_links);
        let stored = &mut self.messages[index];
        stored.json = message.clone();
        stored.mentions = mentions;
        stored.unfurl_links = unfurl_links;
        let event = json!({
            "type": "message",
            "subtype": "message_changed",
            "hidden": true,
            "message": message,
            "previous_message": previous,
            "channel": channel,
            "ts": edited_ts,
            "event_ts": edited_ts,
            "channel_type": self.channel_type(&channel),
        });
        self.message_event(index, event);
        Ok(json!({
            "channel": channel,
            "ts": message["ts"],
            "text": message["text"],
            "message": message,
        }))
    }

    fn delete_message(&mut self, args: &Value) -> Result<Value, ApiError> {
        let (channel, index) = self.own_message(args, "cant_delete_message")?;
        let deleted_ts = self.ts();
        let previous = self.messages[index].json.clone();
        let event = json!({
            "type": "message",
            "subtype": "message_deleted",
            "hidden": true,
            "deleted_ts": previous["ts"],
            "previous_message": previous,
            "channel": channel,
            "ts": deleted_ts,
            "event_ts": deleted_ts,
            "channel_type": self.channel_type(&channel),
        });
        self.message_event(index, event);
        self.messages.remove(index);
        Ok(json!({ "channel": channel, "ts": previous["ts"] }))
    }

    fn open_conversation(&mut self, args: &Value) -> Result<Value, ApiError> {
        if let Some(channel) = text_arg(args, "channel") {
            return match self.channels.get(&channel) {
                Some(known) if matches!(known.kind, ChannelKind::Im { .. }) => Ok(json!({
                    "no_op": true,
                    "already_open": true,
                    "channel": { "id": channel },
                })),
                _ => Err(ApiError::new("channel_not_found")),
            };
        }
        // A comma-separated string, as Slack documents `users` (an array was
        // refused with the arguments).
        let users: Vec<String> = text_arg(args, "users")
            .unwrap_or_default()
            .split(',')
            .map(|user| user.trim().to_owned())
            .filter(|user| !user.is_empty())
            .collect();
        match users.as_slice() {
            [] => Err(ApiError::new("users_list_not_supplied")),
            [user] if !self.users.contains_key(user) => Err(ApiError::new("user_not_found")),
            [user] => {
                let existed = self
                    .channels
                    .values()
                    .any(|known| known.kind == ChannelKind::Im { user: user.clone() });
                let id = self.dm_with(user);
                let channel = if bool_arg(args, "return_im") == Some(true) {
                    json!({ "id": id, "created": 1_700_000_000, "is_im": true, "is_org_shared": false,
                            "user": user, "is_user_deleted": false, "priority": 0 })
                } else {
                    json!({ "id": id })
                };
                Ok(json!({ "no_op": existed, "already_open": existed, "channel": channel }))
            }
            // Group DMs are not modelled.
            _ => Err(ApiError::new("not_supported")),
        }
    }

    fn user_info(&self, args: &Value) -> Result<Value, ApiError> {
        let id = text_arg(args, "user").unwrap_or_default();
        let (name, is_bot) = if id == BOT_USER_ID {
            (BOT_NAME.to_owned(), true)
        } else {
            let person = self.users.get(&id).ok_or_else(|| ApiError::new("user_not_found"))?;
            (person.name.clone(), false)
        };
        Ok(json!({
            "user": {
                "id": id,
                "team_id": TEAM_ID,
                "name": name,
                "deleted": false,
                "real_name": name,
                "is_bot": is_bot,
                "is_app_user": false,
                "profile": { "real_name": name, "display_name": name, "team": TEAM_ID },
            }
        }))
    }
}
