//! The REST routes a bot uses outside interactions, as Discord answers
//! them: the gateway URL, the bot user and its application, DM channels, and
//! sending, fetching, editing and deleting messages, with Discord's refusals
//! (unknown channel or message, no access, a user who takes no DMs from the
//! bot, an edit of someone else's message).

use serde_json::{Value, json};

use super::ratelimit::Bucket;
use super::server::{Answer, ApiError, Route};
use super::state::State;
use super::types::{ChannelKind, DiscordChannel};
use super::{APPLICATION_ID, BOT_ID, BOT_USERNAME, bot_user};

/// Identifies a gateway session may still start within the day, as
/// `GET /gateway/bot` reports them.
const SESSION_STARTS_PER_DAY: u64 = 1000;

impl State {
    /// Answers a matched request.
    pub(crate) fn answer(
        &mut self,
        method: &str,
        route: &Route,
        body: &Value,
        gateway_url: &str,
        public_key: &str,
    ) -> Result<Answer, ApiError> {
        match route {
            Route::Gateway => Ok(Answer::Json(json!({ "url": gateway_url }))),
            Route::GatewayBot => Ok(Answer::Json(json!({
                "url": gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": SESSION_STARTS_PER_DAY,
                    "remaining": SESSION_STARTS_PER_DAY.saturating_sub(self.gateway.identified()),
                    "reset_after": 86_400_000,
                    "max_concurrency": 1,
                },
            }))),
            Route::Me => Ok(Answer::Json(current_user())),
            Route::Application => Ok(Answer::Json(self.application(public_key))),
            Route::DmChannels => self.open_dm(body).map(Answer::Json),
            Route::ChannelMessages { channel } => {
                self.check_send(*channel)?;
                match self.channel_limits.take(*channel) {
                    None => self.create_message(*channel, body).map(Answer::Json),
                    Some(Bucket::Taken(headers)) => self
                        .create_message(*channel, body)
                        .map(|message| Answer::JsonWithHeaders(message, headers)),
                    Some(Bucket::Exhausted(retry_after)) => {
                        Err(ApiError::rate_limited(retry_after.as_secs_f64(), false))
                    }
                }
            }
            Route::ChannelMessage { channel, message } => self.channel_message(method, *channel, *message, body),
            Route::Callback { interaction, token } => self.callback(*interaction, token, body),
            Route::Webhook { application, token } => self.follow_up(*application, token, body).map(Answer::Json),
            Route::WebhookMessage {
                application,
                token,
                message,
            } => self.webhook_message(method, *application, token, *message, body),
        }
    }

    /// The application object of `GET /applications/@me` (and its `OAuth2`
    /// twin): `verify_key` is the public key that checks HTTP interactions.
    fn application(&self, public_key: &str) -> Value {
        json!({
            "id": APPLICATION_ID.to_string(),
            "name": BOT_USERNAME,
            "icon": null,
            "description": "",
            "summary": "",
            "type": null,
            "hook": true,
            "bot_public": false,
            "bot_require_code_grant": false,
            "verify_key": public_key,
            "flags": self.gateway.application_flags(),
            "owner": {
                "id": "80351110224678912",
                "username": "askgate-owner",
                "avatar": null,
                "discriminator": "0",
                "public_flags": 0,
                "flags": 0,
                "global_name": "askgate owner",
            },
            "team": null,
            "redirect_uris": [],
            "interactions_endpoint_url": self.interactions_url,
            "role_connections_verification_url": null,
            "tags": [],
            "approximate_guild_count": 1,
            "approximate_user_install_count": 0,
            "bot": current_user(),
            "integration_types_config": { "0": {} },
        })
    }

    /// `POST /users/@me/channels`: the DM channel with `recipient_id`, the
    /// same one every time.
    fn open_dm(&mut self, body: &Value) -> Result<Value, ApiError> {
        let recipient = body.get("recipient_id").and_then(|id| {
            id.as_str()
                .and_then(|id| id.parse::<u64>().ok())
                .or_else(|| id.as_u64())
        });
        let Some(recipient) = recipient else {
            let mut form = super::validate::Form::default();
            form.error("recipient_id", "BASE_TYPE_REQUIRED", "This field is required");
            return form.finish().map(|()| Value::Null);
        };
        let channel = self.dm_channel(recipient);
        Ok(self.channel_json(&channel))
    }

    /// Whether the bot may post in this channel: it must exist, the bot must
    /// have access, and a DM's user must take messages from it.
    fn check_send(&self, channel_id: u64) -> Result<&DiscordChannel, ApiError> {
        let channel = self.check_access(channel_id)?;
        if let ChannelKind::Dm { recipient } = channel.kind
            && self.refusing_dms.contains(&recipient)
        {
            return Err(ApiError::cannot_message_user());
        }
        Ok(channel)
    }

    fn check_access(&self, channel_id: u64) -> Result<&DiscordChannel, ApiError> {
        let channel = self.channels.get(&channel_id).ok_or_else(ApiError::unknown_channel)?;
        if self.no_access.contains(&channel_id) {
            return Err(ApiError::missing_access());
        }
        Ok(channel)
    }

    fn channel_message(&mut self, method: &str, channel: u64, message: u64, body: &Value) -> Result<Answer, ApiError> {
        self.check_access(channel)?;
        // Ephemeral messages cannot be reached through the channel.
        let stored = self
            .message_in(channel, message)
            .filter(|stored| stored.ephemeral_for.is_none())
            .ok_or_else(ApiError::unknown_message)?;
        match method {
            "GET" => Ok(Answer::Json(stored.json.clone())),
            "DELETE" => {
                if stored.origin != super::state::Origin::Bot {
                    // A bot without Manage Messages cannot delete others' messages.
                    return Err(ApiError::missing_access());
                }
                self.delete_message(message);
                Ok(Answer::NoContent)
            }
            _ => self.edit_bot_message(message, body).map(Answer::Json),
        }
    }
}

/// The bot user, as `GET /users/@me` returns it.
fn current_user() -> Value {
    let mut user = bot_user();
    for (key, value) in [
        ("verified", json!(true)),
        ("mfa_enabled", json!(false)),
        ("locale", json!("en-US")),
        ("premium_type", json!(0)),
        ("email", Value::Null),
        ("bio", json!("")),
    ] {
        user[key] = value;
    }
    debug_assert_eq!(user["id"], BOT_ID.to_string());
    user
}
