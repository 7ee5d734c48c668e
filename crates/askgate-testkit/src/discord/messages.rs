//! Messages as Discord makes them: the message object a send returns and
//! stores (id, author, timestamps, components as sent, the mentions the
//! content makes), edits, `enforce_nonce`, and who a message notifies under
//! `allowed_mentions`.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::server::ApiError;
use super::state::{Origin, State, Stored, timestamp_now, within};
use super::types::{DiscordChannel, DiscordUser, Ping};
use super::validate::{self, IS_COMPONENTS_V2};
use super::{APPLICATION_ID, FakeDiscord, bot_user};

/// How long a nonce with `enforce_nonce` finds the message it made:
/// Discord says "the past few minutes".
pub const NONCE_WINDOW: Duration = Duration::from_secs(5 * 60);

/// The message flags a bot may set on a message: `SUPPRESS_EMBEDS` (1 << 2),
/// EPHEMERAL (1 << 6, interaction responses only), `SUPPRESS_NOTIFICATIONS`
/// (1 << 12), `IS_COMPONENTS_V2` (1 << 15).
const SETTABLE_FLAGS: u64 = (1 << 2) | (1 << 6) | (1 << 12) | IS_COMPONENTS_V2;
pub(crate) const EPHEMERAL: u64 = 1 << 6;
/// The flag of a deferred response's placeholder ("… is thinking").
pub(crate) const LOADING: u64 = 1 << 7;

/// What a bot message is made of besides its body.
pub(crate) struct Draft {
    pub(crate) channel_id: u64,
    /// Sent as a response or follow-up to an interaction (by its webhook).
    pub(crate) interaction: bool,
    /// Only this user sees it.
    pub(crate) ephemeral_for: Option<u64>,
    /// Extra flags the fake sets (LOADING).
    pub(crate) extra_flags: u64,
}

impl State {
    /// `POST /channels/{channel_id}/messages` after the channel checks:
    /// validates, honours `enforce_nonce`, stores and returns the message.
    pub(crate) fn create_message(&mut self, channel_id: u64, body: &Value) -> Result<Value, ApiError> {
        if validate::is_empty(body) {
            return Err(ApiError::empty_message());
        }
        let nonce = body.get("nonce").and_then(|nonce| match nonce {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        });
        let enforce = body.get("enforce_nonce").and_then(Value::as_bool).unwrap_or(false);
        if let (Some(nonce), true) = (&nonce, enforce)
            && let Some((id, _)) = self
                .nonces
                .get(&(channel_id, nonce.clone()))
                .filter(|(_, at)| within(*at, NONCE_WINDOW))
            && let Some(stored) = self.messages.get(id)
        {
            return Ok(stored.json.clone());
        }
        let reference = match body.get("message_reference").filter(|value| !value.is_null()) {
            Some(reference) => self.reference(channel_id, reference)?,
            None => None,
        };
        let draft = Draft {
            channel_id,
            interaction: false,
            ephemeral_for: None,
            extra_flags: 0,
        };
        let id = self.store_bot_message(&draft, body, reference);
        if let Some(nonce) = nonce {
            if let Some(stored) = self.messages.get_mut(&id) {
                stored.json["nonce"] = body["nonce"].clone();
            }
            if enforce {
                self.nonces.insert((channel_id, nonce), (id, std::time::Instant::now()));
            }
        }
        Ok(self
            .messages
            .get(&id)
            .map(|stored| stored.json.clone())
            .unwrap_or_default())
    }

    /// The message a `message_reference` names, or the error Discord gives
    /// for one it cannot find (unless `fail_if_not_exists` is false).
    fn reference(&self, channel_id: u64, reference: &Value) -> Result<Option<u64>, ApiError> {
        let id = reference
            .get("message_id")
            .and_then(|id| {
                id.as_str()
                    .map(str::to_owned)
                    .or_else(|| id.as_u64().map(|id| id.to_string()))
            })
            .and_then(|id| id.parse::<u64>().ok());
        let in_channel = reference
            .get("channel_id")
            .and_then(Value::as_str)
            .and_then(|id| id.parse::<u64>().ok())
            .unwrap_or(channel_id);
        let found = id.filter(|id| in_channel == channel_id && self.message_in(channel_id, *id).is_some());
        let fail = reference
            .get("fail_if_not_exists")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        match found {
            Some(id) => Ok(Some(id)),
            None if !fail => Ok(None),
            None => {
                let mut form = validate::Form::default();
                form.error("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message");
                form.finish().map(|()| None)
            }
        }
    }

    /// Builds, stores and returns the id of a message from the bot.
    pub(crate) fn store_bot_message(&mut self, draft: &Draft, body: &Value, reference: Option<u64>) -> u64 {
        let id = self.snowflake();
        let content = body.get("content").and_then(Value::as_str).unwrap_or_default();
        let referenced = reference.and_then(|id| self.messages.get(&id)).cloned();
        let replied_author = referenced
            .as_ref()
            .and_then(|stored| stored.json.pointer("/author/id"))
            .and_then(Value::as_str)
            .and_then(|id| id.parse().ok());
        let allowed = body.get("allowed_mentions").filter(|value| !value.is_null()).cloned();
        // Discord parses every kind of mention in a plain message, only users
        // in interaction responses and webhook messages.
        let default_parse: &[&str] = if draft.interaction {
            &["users"]
        } else {
            &["users", "roles", "everyone"]
        };
        let pings = pings(content, allowed.as_ref(), default_parse, replied_author);
        let flags = body.get("flags").and_then(Value::as_u64).unwrap_or(0) & SETTABLE_FLAGS;
        let flags = if draft.ephemeral_for.is_some() {
            flags | EPHEMERAL
        } else {
            flags & !EPHEMERAL
        } | draft.extra_flags;
        let mut message = Map::new();
        message.insert("type".into(), json!(if reference.is_some() { 19 } else { 0 }));
        message.insert("channel_id".into(), json!(draft.channel_id.to_string()));
        message.insert("content".into(), json!(content));
        message.insert("attachments".into(), json!([]));
        message.insert("embeds".into(), array_or_empty(body.get("embeds")));
        message.insert("timestamp".into(), json!(timestamp_now()));
        message.insert("edited_timestamp".into(), Value::Null);
        message.insert("flags".into(), json!(flags));
        message.insert("components".into(), array_or_empty(body.get("components")));
        message.insert("id".into(), json!(id.to_string()));
        message.insert("author".into(), bot_user());
        self.insert_mentions(&mut message, &pings);
        message.insert("pinned".into(), json!(false));
        message.insert(
            "tts".into(),
            json!(body.get("tts").and_then(Value::as_bool).unwrap_or(false)),
        );
        if draft.interaction {
            message.insert("webhook_id".into(), json!(APPLICATION_ID.to_string()));
            message.insert("application_id".into(), json!(APPLICATION_ID.to_string()));
        }
        if let (Some(reference), Some(referenced)) = (reference, referenced) {
            message.insert(
                "message_reference".into(),
                self.reference_json(draft.channel_id, reference),
            );
            message.insert("referenced_message".into(), without_reference(referenced.json));
        }
        self.messages.insert(
            id,
            Stored {
                json: Value::Object(message),
                channel_id: draft.channel_id,
                origin: Origin::Bot,
                ephemeral_for: draft.ephemeral_for,
                allowed_mentions: allowed,
                pings,
            },
        );
        self.announce("MESSAGE_CREATE", id);
        id
    }

    /// An edit of a bot message (the channel route, or an interaction's
    /// webhook): the fields given replace the message's, `components: []`
    /// removes them; a new content's mentions are worked out again (under
    /// the edit's `allowed_mentions`, else the defaults) but notify no one.
    pub(crate) fn edit_bot_message(&mut self, message_id: u64, body: &Value) -> Result<Value, ApiError> {
        let Some(stored) = self.messages.get(&message_id) else {
            return Err(ApiError::unknown_message());
        };
        if stored.origin != Origin::Bot {
            return Err(ApiError::not_author());
        }
        let mut message = stored.json.clone();
        for key in ["content", "components", "embeds"] {
            match body.get(key) {
                None => {}
                Some(Value::Null) if key == "content" => message[key] = json!(""),
                Some(Value::Null) => message[key] = json!([]),
                Some(value) => message[key] = value.clone(),
            }
        }
        if let Some(flags) = body.get("flags").and_then(Value::as_u64) {
            // Only SUPPRESS_EMBEDS can change on an edit; a deferred
            // response's placeholder stops loading once it is edited.
            let kept = message["flags"].as_u64().unwrap_or(0) & !(1 << 2);
            message["flags"] = json!(kept | (flags & (1 << 2)));
        }
        if let Some(flags) = message["flags"].as_u64() {
            message["flags"] = json!(flags & !LOADING);
        }
        if validate::is_empty(&message) {
            return Err(ApiError::empty_message());
        }
        // Discord works a message's mentions out again only when its content
        // is edited, under the edit's own `allowed_mentions` or else the
        // default allowances, whatever the message was created with.
        let allowed = match body.get("allowed_mentions") {
            Some(value) if !value.is_null() => Some(value.clone()),
            _ if body.get("content").is_some() => None,
            _ => stored.allowed_mentions.clone(),
        };
        message["edited_timestamp"] = json!(timestamp_now());
        if body.get("content").is_some() {
            let interaction = message.get("webhook_id").is_some();
            let default_parse: &[&str] = if interaction {
                &["users"]
            } else {
                &["users", "roles", "everyone"]
            };
            let content = message["content"].as_str().unwrap_or_default().to_owned();
            let mentions = pings(&content, allowed.as_ref(), default_parse, None);
            if let Value::Object(fields) = &mut message {
                self.insert_mentions(fields, &mentions);
            }
        }
        if let Some(stored) = self.messages.get_mut(&message_id) {
            stored.json = message.clone();
            stored.allowed_mentions = allowed;
        }
        self.announce("MESSAGE_UPDATE", message_id);
        Ok(message)
    }

    /// Deletes a message; the gateway hears of it unless it was ephemeral.
    pub(crate) fn delete_message(&mut self, message_id: u64) {
        let Some(stored) = self.messages.remove(&message_id) else {
            return;
        };
        if stored.ephemeral_for.is_some() {
            return;
        }
        let mut event = json!({ "id": message_id.to_string(), "channel_id": stored.channel_id.to_string() });
        if let Some(guild_id) = self.channels.get(&stored.channel_id).and_then(DiscordChannel::guild_id) {
            event["guild_id"] = json!(guild_id.to_string());
        }
        self.gateway.dispatch_live("MESSAGE_DELETE", &event);
    }

    /// Tells the live gateway session of a message the bot made or edited,
    /// as Discord does (`MESSAGE_CREATE`, `MESSAGE_UPDATE`), except an ephemeral one.
    fn announce(&mut self, kind: &str, message_id: u64) {
        let Some(stored) = self
            .messages
            .get(&message_id)
            .filter(|stored| stored.ephemeral_for.is_none())
        else {
            return;
        };
        let event = self.gateway_message(&stored.json, stored.channel_id);
        self.gateway.dispatch_live(kind, &event);
    }

    /// A message as the gateway sends it: with `guild_id`, the author's
    /// `member` (without `user`) and `channel_type` in a guild channel.
    pub(crate) fn gateway_message(&self, message: &Value, channel_id: u64) -> Value {
        let mut event = message.clone();
        if let Some(channel) = self.channels.get(&channel_id) {
            if let Some(guild_id) = channel.guild_id() {
                event["guild_id"] = json!(guild_id.to_string());
                event["member"] = member(None);
            }
            event["channel_type"] = json!(self.channel_type(channel));
        }
        event
    }

    /// A person's message, stored; as the REST API returns it (the gateway
    /// adds `guild_id`, `member` and `channel_type`).
    pub(crate) fn person_message(
        &mut self,
        user: &DiscordUser,
        channel: &DiscordChannel,
        content: &str,
        reply_to: Option<u64>,
    ) -> Value {
        let id = self.snowflake();
        let referenced = reply_to.and_then(|id| self.message_in(channel.id, id)).cloned();
        let replied_author = referenced
            .as_ref()
            .and_then(|stored| stored.json.pointer("/author/id"))
            .and_then(Value::as_str)
            .and_then(|id| id.parse().ok());
        // A person's client parses every mention, and pings the author of
        // the message replied to unless they turn it off.
        let pings = pings(content, None, &["users", "roles", "everyone"], replied_author);
        let mut message = Map::new();
        message.insert("type".into(), json!(if referenced.is_some() { 19 } else { 0 }));
        message.insert("tts".into(), json!(false));
        message.insert("timestamp".into(), json!(timestamp_now()));
        message.insert("pinned".into(), json!(false));
        message.insert("nonce".into(), json!(format!("{}", id.wrapping_add(7))));
        self.insert_mentions(&mut message, &pings);
        message.insert("id".into(), json!(id.to_string()));
        message.insert("flags".into(), json!(0));
        message.insert("embeds".into(), json!([]));
        message.insert("edited_timestamp".into(), Value::Null);
        message.insert("content".into(), json!(content));
        message.insert("components".into(), json!([]));
        message.insert("channel_id".into(), json!(channel.id.to_string()));
        message.insert("author".into(), user.to_json());
        message.insert("attachments".into(), json!([]));
        if let (Some(id), Some(referenced)) = (reply_to, referenced) {
            message.insert("message_reference".into(), self.reference_json(channel.id, id));
            message.insert("referenced_message".into(), without_reference(referenced.json));
        }
        let message = Value::Object(message);
        self.messages.insert(
            id,
            Stored {
                json: message.clone(),
                channel_id: channel.id,
                origin: Origin::Person,
                ephemeral_for: None,
                allowed_mentions: None,
                pings,
            },
        );
        message
    }

    fn reference_json(&self, channel_id: u64, message_id: u64) -> Value {
        let mut reference = json!({
            "type": 0,
            "channel_id": channel_id.to_string(),
            "message_id": message_id.to_string(),
        });
        if let Some(guild_id) = self.channels.get(&channel_id).and_then(DiscordChannel::guild_id) {
            reference["guild_id"] = json!(guild_id.to_string());
        }
        reference
    }

    /// `mentions`, `mention_roles` and `mention_everyone` for these pings.
    fn insert_mentions(&self, message: &mut Map<String, Value>, pings: &[Ping]) {
        let mut users: Vec<u64> = Vec::new();
        let mut roles: Vec<String> = Vec::new();
        let mut everyone = false;
        for ping in pings {
            match ping {
                Ping::User(id) | Ping::RepliedUser(id) => {
                    if !users.contains(id) {
                        users.push(*id);
                    }
                }
                Ping::Role(id) => roles.push(id.to_string()),
                Ping::Everyone | Ping::Here => everyone = true,
            }
        }
        let users: Vec<Value> = users
            .into_iter()
            .map(|id| {
                if id == super::BOT_ID {
                    bot_user()
                } else {
                    self.user(id).to_json()
                }
            })
            .collect();
        message.insert("mentions".into(), Value::Array(users));
        message.insert("mention_roles".into(), json!(roles));
        message.insert("mention_everyone".into(), json!(everyone));
    }
}

/// When the fake's members joined their guild.
const JOINED_AT: &str = "2024-01-15T09:30:00.000000+00:00";

/// A guild member object, with `user` when given (interactions carry it,
/// messages do not).
pub(crate) fn member(user: Option<Value>) -> Value {
    let mut member = json!({
        "avatar": null,
        "banner": null,
        "communication_disabled_until": null,
        "deaf": false,
        "flags": 0,
        "joined_at": JOINED_AT,
        "mute": false,
        "nick": null,
        "pending": false,
        "premium_since": null,
        "roles": [],
        "unusual_dm_activity_until": null,
    });
    if let Some(user) = user {
        member["permissions"] = json!(super::MEMBER_PERMISSIONS);
        member["user"] = user;
    }
    member
}

fn array_or_empty(value: Option<&Value>) -> Value {
    match value {
        Some(Value::Array(items)) => Value::Array(items.clone()),
        _ => json!([]),
    }
}

/// A referenced message as Discord nests it: without its own `referenced_message`.
fn without_reference(mut message: Value) -> Value {
    if let Value::Object(fields) = &mut message {
        fields.remove("referenced_message");
    }
    message
}

/// What an escaped character reads as when looking for mentions (a
/// character of Unicode's private use area, in no mention's syntax).
const ESCAPED: char = '\u{e000}';

impl FakeDiscord {
    /// Who a message the bot posts in a channel with this content and
    /// `allowed_mentions` would notify, as Discord reads it: the mentions
    /// in the content that are not escaped (`\@everyone` is text), let
    /// through by `allowed_mentions`, or without it by the defaults
    /// (everything in a channel message). The same rule as
    /// [`SeenMessage::pings`](super::SeenMessage::pings), for any text: a
    /// test can show that a text would ping without `allowed_mentions`, and
    /// that it pings no one as sent.
    pub fn mentioned_by(content: &str, allowed_mentions: Option<&Value>) -> Vec<Ping> {
        pings(content, allowed_mentions, &["users", "roles", "everyone"], None)
    }
}

/// Who a message with this content notifies: the mentions in the content
/// that `allowed_mentions` (or, without it, `default_parse`) lets through,
/// and the author of the message it replies to unless `replied_user` is
/// false (its default once `allowed_mentions` is given).
pub(crate) fn pings(content: &str, allowed: Option<&Value>, default_parse: &[&str], replied: Option<u64>) -> Vec<Ping> {
    let ids = |key: &str| -> Vec<u64> {
        allowed
            .and_then(|allowed| allowed.get(key))
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| id.as_str().and_then(|id| id.parse().ok()).or_else(|| id.as_u64()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let parse: Vec<&str> = match allowed {
        None => default_parse.to_vec(),
        Some(allowed) => allowed
            .get("parse")
            .and_then(Value::as_array)
            .map(|parse| parse.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
    };
    let (users, roles) = (ids("users"), ids("roles"));
    let mut pings: Vec<Ping> = mentions_in(content)
        .into_iter()
        .filter(|mention| match mention {
            Ping::Everyone | Ping::Here => parse.contains(&"everyone"),
            Ping::User(id) => parse.contains(&"users") || users.contains(id),
            Ping::Role(id) => parse.contains(&"roles") || roles.contains(id),
            Ping::RepliedUser(_) => false,
        })
        .collect();
    let replied_user =
        allowed.is_none_or(|allowed| allowed.get("replied_user").and_then(Value::as_bool).unwrap_or(false));
    if let Some(author) = replied
        && replied_user
        && author != super::BOT_ID
    {
        pings.push(Ping::RepliedUser(author));
    }
    pings
}

/// The mentions written in a text, in order, each once: `@everyone`,
/// `@here`, `<@id>`, `<@!id>`, `<@&id>`. A backslash before punctuation
/// makes it literal, as in Discord's markdown: `\@everyone` and
/// `\<\@123\>` mention no one.
pub(crate) fn mentions_in(content: &str) -> Vec<Ping> {
    // Each escaped character becomes one that is part of no mention.
    let mut unescaped = String::with_capacity(content.len());
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(char::is_ascii_punctuation) {
            chars.next();
            unescaped.push(ESCAPED);
        } else {
            unescaped.push(c);
        }
    }
    let content = unescaped.as_str();
    let mut found = Vec::new();
    let mut push = |ping: Ping| {
        if !found.contains(&ping) {
            found.push(ping);
        }
    };
    let mut rest = content;
    while let Some(at) = rest.find('@') {
        let before = &rest[..at];
        let after = &rest[at + 1..];
        if before.ends_with('<') {
            let (role, digits) = match after.strip_prefix('&') {
                Some(digits) => (true, digits),
                None => (false, after.strip_prefix('!').unwrap_or(after)),
            };
            let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
            if end > 0
                && digits[end..].starts_with('>')
                && let Ok(id) = digits[..end].parse()
            {
                push(if role { Ping::Role(id) } else { Ping::User(id) });
            }
        } else if after.starts_with("everyone") {
            push(Ping::Everyone);
        } else if after.starts_with("here") {
            push(Ping::Here);
        }
        rest = after;
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::state::State;
    use super::{Ping, mentions_in, pings};

    const ALL: &[&str] = &["users", "roles", "everyone"];

    #[test]
    fn mentions_are_found_in_the_text() {
        assert_eq!(
            mentions_in("@here Hello <@&1234> and <@5678> and <@!5678> 👋 @everyone <@x> <@12"),
            [Ping::Here, Ping::Role(1234), Ping::User(5678), Ping::Everyone]
        );
    }

    #[test]
    fn allowed_mentions_decide_who_is_notified_as_the_documentation_says() {
        let content = "@here Hello <@&1234> and <@5678> 👋";
        assert_eq!(
            pings(content, None, ALL, None),
            [Ping::Here, Ping::Role(1234), Ping::User(5678)]
        );
        assert_eq!(pings(content, Some(&json!({ "parse": [] })), ALL, None), []);
        assert_eq!(
            pings(
                content,
                Some(&json!({ "parse": ["users", "roles"], "users": [] })),
                ALL,
                None
            ),
            [Ping::Role(1234), Ping::User(5678)]
        );
        let content = "@everyone <@1234> <@5678> <@&789> 👋";
        assert_eq!(
            pings(
                content,
                Some(&json!({ "parse": ["everyone"], "users": ["1234", "5678"] })),
                ALL,
                None
            ),
            [Ping::Everyone, Ping::User(1234), Ping::User(5678)]
        );
        assert_eq!(
            pings(
                "<@123> Time for some memes",
                Some(&json!({ "users": ["123", "456"] })),
                ALL,
                None
            ),
            [Ping::User(123)]
        );
        // Interaction responses parse only users by default.
        assert_eq!(pings("@everyone <@1>", None, &["users"], None), [Ping::User(1)]);
    }

    #[test]
    fn a_reply_notifies_its_author_unless_allowed_mentions_says_otherwise() {
        assert_eq!(pings("ok", None, ALL, Some(42)), [Ping::RepliedUser(42)]);
        assert_eq!(pings("ok", Some(&json!({ "parse": [] })), ALL, Some(42)), []);
        assert_eq!(
            pings("ok", Some(&json!({ "parse": [], "replied_user": true })), ALL, Some(42)),
            [Ping::RepliedUser(42)]
        );
    }

    #[test]
    fn an_escaped_mention_is_text() {
        assert_eq!(
            mentions_in(r"\@everyone \@here \<\@123\> \<@&456\> <\@789> \\@here"),
            [Ping::Here],
            "only the last, whose backslash is itself escaped"
        );
    }

    #[test]
    fn an_edited_content_is_read_under_the_edits_own_allowed_mentions() {
        let mut state = State::default();
        let sent = state
            .create_message(7, &json!({"content": "hi", "allowed_mentions": {"parse": []}}))
            .unwrap_or_else(|error| panic!("{}", error.body()));
        let id: u64 = sent["id"].as_str().and_then(|id| id.parse().ok()).unwrap_or_default();
        let mentioned = |message: &serde_json::Value| {
            (
                message["mention_everyone"].clone(),
                message["mention_roles"].clone(),
                message["mentions"].as_array().map_or(0, Vec::len),
            )
        };
        let content = "@here <@&456> <@123>";
        let edited = state
            .edit_bot_message(id, &json!({"content": content, "allowed_mentions": {"parse": []}}))
            .unwrap_or_else(|error| panic!("{}", error.body()));
        assert_eq!(mentioned(&edited), (json!(false), json!([]), 0));
        // Without allowed_mentions in the edit, the defaults: not the create's.
        let edited = state
            .edit_bot_message(id, &json!({"content": content}))
            .unwrap_or_else(|error| panic!("{}", error.body()));
        assert_eq!(mentioned(&edited), (json!(true), json!(["456"]), 1));
        // An edit that leaves the content alone leaves its mentions alone.
        let edited = state
            .edit_bot_message(id, &json!({"components": []}))
            .unwrap_or_else(|error| panic!("{}", error.body()));
        assert_eq!(mentioned(&edited), (json!(true), json!(["456"]), 1));
    }
}
