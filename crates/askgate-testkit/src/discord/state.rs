//! What the fake knows: the users and channels it has seen (threads with
//! their parent channel), the messages by id, the nonces of recent sends, the interactions and what became of them,
//! the gateway's sessions, and the failures and refusals a test set up. Also
//! the snowflakes and timestamps it stamps things with.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ed25519_dalek::SigningKey;
use serde_json::Value;

use super::gateway::GatewayState;
use super::types::{
    AckVia, Call, ChannelKind, DiscordChannel, DiscordUser, Failure, InteractionRecord, Ping, SeenMessage, Signature,
    rows_of,
};
use super::{FakeDiscord, MEMBER_PERMISSIONS};
use crate::fake::{Recorder, Requests};

/// Discord's channel type of a public thread (`PUBLIC_THREAD`).
pub(crate) const PUBLIC_THREAD: u8 = 11;

/// How long a thread stays active without messages, in minutes (one day,
/// Discord's default for a thread started in a text channel).
const AUTO_ARCHIVE_MINUTES: u64 = 1440;

impl FakeDiscord {
    /// Opens a public thread (channel type 11) with id `id` in the guild
    /// text channel `parent`, and tells the fake about it. A thread is a
    /// channel of its own: the bot posts to `/channels/{thread id}/messages`,
    /// a person's messages and interactions there carry the thread's id as
    /// `channel_id`, and an interaction's `channel` names the parent in
    /// `parent_id`, as on Discord.
    ///
    /// # Panics
    ///
    /// If `parent` is a DM: threads live in guild channels.
    pub fn add_thread(&self, parent: &DiscordChannel, id: u64, name: &str) -> DiscordChannel {
        let guild_id = parent
            .guild_id()
            .unwrap_or_else(|| panic!("channel {} is a DM: a thread needs a guild channel", parent.id));
        let thread = DiscordChannel::guild(id, guild_id, name);
        let mut state = self.state();
        state.channels.insert(parent.id, parent.clone());
        state.channels.insert(id, thread.clone());
        state.threads.insert(id, parent.id);
        thread
    }
}

/// Discord's epoch, the first second of 2015, in Unix milliseconds.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// What the REST server, the gateway and the handles share.
pub(crate) struct Shared {
    /// The state; its waiters are woken whenever something is recorded.
    pub(crate) state: Recorder<State>,
    /// The application's Ed25519 key, which signs HTTP interactions.
    pub(crate) signing_key: SigningKey,
    /// `ws://127.0.0.1:PORT`, what `GET /gateway` answers.
    pub(crate) gateway_url: String,
    /// The client that POSTs interactions to an HTTP endpoint.
    pub(crate) client: reqwest::Client,
}

/// Who wrote a stored message: only the bot's can be edited by the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Bot,
    Person,
}

/// A message the fake keeps, with what it does not put in the object.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) json: Value,
    pub(crate) channel_id: u64,
    pub(crate) origin: Origin,
    pub(crate) ephemeral_for: Option<u64>,
    pub(crate) allowed_mentions: Option<Value>,
    pub(crate) pings: Vec<Ping>,
}

impl Stored {
    pub(crate) fn seen(&self) -> SeenMessage {
        let id_of = |value: Option<&Value>| value.and_then(Value::as_str).and_then(|id| id.parse().ok());
        SeenMessage {
            id: id_of(self.json.get("id")).unwrap_or_default(),
            channel_id: self.channel_id,
            author_id: id_of(self.json.pointer("/author/id")).unwrap_or_default(),
            content: self.json["content"].as_str().unwrap_or_default().to_owned(),
            rows: rows_of(&self.json),
            edited: !self.json["edited_timestamp"].is_null(),
            ephemeral_for: self.ephemeral_for,
            allowed_mentions: self.allowed_mentions.clone(),
            pings: self.pings.clone(),
            reply_to: id_of(self.json.pointer("/message_reference/message_id")),
            json: self.json.clone(),
        }
    }
}

/// An interaction and what the fake needs to answer its callback and webhooks.
#[derive(Debug, Clone)]
pub(crate) struct InteractionState {
    pub(crate) record: InteractionRecord,
    pub(crate) created: Instant,
    /// The message `@original` names: the response message (types 4 and 5)
    /// or the clicked message (types 6 and 7).
    pub(crate) original: Option<u64>,
    /// The follow-up messages, which its webhook may edit too.
    pub(crate) follow_ups: Vec<u64>,
}

impl InteractionState {
    pub(crate) fn acknowledged(&self) -> Option<AckVia> {
        self.record.acknowledged_via
    }
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) requests: Requests<Call, Failure>,
    last_snowflake: u64,
    pub(crate) users: HashMap<u64, DiscordUser>,
    pub(crate) channels: HashMap<u64, DiscordChannel>,
    /// Thread → its parent channel. A thread is a channel of its own (in
    /// [`State::channels`], a guild channel with its own id) whose messages
    /// and interactions carry the thread's id as `channel_id`.
    pub(crate) threads: HashMap<u64, u64>,
    pub(crate) dm_channels: HashMap<u64, u64>,
    pub(crate) messages: BTreeMap<u64, Stored>,
    /// (channel, nonce) → (message, when), for `enforce_nonce`.
    pub(crate) nonces: HashMap<(u64, String), (u64, Instant)>,
    pub(crate) refusing_dms: HashSet<u64>,
    pub(crate) no_access: HashSet<u64>,
    pub(crate) interactions: BTreeMap<u64, InteractionState>,
    pub(crate) interactions_url: Option<String>,
    /// How the next HTTP interactions are signed, the first first; then
    /// validly ([`FakeDiscord::sign_next_with`](super::FakeDiscord::sign_next_with)).
    pub(crate) next_signatures: VecDeque<Signature>,
    pub(crate) gateway: GatewayState,
    /// Discord's per-channel message bucket, when a test asked for it.
    pub(crate) channel_limits: super::ratelimit::ChannelLimits,
    /// Every request refused as Discord's spec refuses it (the User-Agent,
    /// an operation the document lacks, an invalid form body), described.
    pub(crate) violations: Vec<String>,
}

impl State {
    /// A fresh snowflake: the time since Discord's epoch in the top bits, and
    /// always above the last one, so that ids sort in creation order.
    pub(crate) fn snowflake(&mut self) -> u64 {
        let since_epoch = unix_millis().saturating_sub(DISCORD_EPOCH_MS);
        let id = (since_epoch << 22) | (1 << 17);
        self.last_snowflake = id.max(self.last_snowflake + 1);
        self.last_snowflake
    }

    /// The user with this id; one the fake has not seen is made up.
    pub(crate) fn user(&self, id: u64) -> DiscordUser {
        self.users
            .get(&id)
            .cloned()
            .unwrap_or_else(|| DiscordUser::new(id, &format!("user{id}")))
    }

    pub(crate) fn remember_user(&mut self, user: &DiscordUser) {
        self.users.insert(user.id, user.clone());
    }

    /// The DM channel with this user, opened if there is none yet.
    pub(crate) fn dm_channel(&mut self, user_id: u64) -> DiscordChannel {
        let id = match self.dm_channels.get(&user_id) {
            Some(id) => *id,
            None => {
                let id = self.snowflake();
                self.dm_channels.insert(user_id, id);
                self.channels.insert(
                    id,
                    DiscordChannel {
                        id,
                        kind: ChannelKind::Dm { recipient: user_id },
                    },
                );
                id
            }
        };
        DiscordChannel {
            id,
            kind: ChannelKind::Dm { recipient: user_id },
        }
    }

    /// Discord's channel type: 1 for a DM, 0 for a guild text channel, 11
    /// for a (public) thread.
    pub(crate) fn channel_type(&self, channel: &DiscordChannel) -> u8 {
        if self.threads.contains_key(&channel.id) {
            PUBLIC_THREAD
        } else {
            channel.channel_type()
        }
    }

    /// A channel as `POST /users/@me/channels` answers it and as
    /// interactions carry it; a thread with its parent in `parent_id`, its
    /// starter as `owner_id` (the bot) and its `thread_metadata`.
    pub(crate) fn channel_json(&self, channel: &DiscordChannel) -> Value {
        let last_message_id = self
            .messages
            .iter()
            .rev()
            .find(|(_, stored)| stored.channel_id == channel.id)
            .map_or(Value::Null, |(id, _)| Value::String(id.to_string()));
        let mut json = match &channel.kind {
            ChannelKind::Dm { recipient } => serde_json::json!({
                "id": channel.id.to_string(),
                "type": 1,
                "last_message_id": last_message_id,
                "flags": 0,
                "recipients": [self.user(*recipient).to_json()],
            }),
            ChannelKind::Guild { guild_id, name } => serde_json::json!({
                "id": channel.id.to_string(),
                "type": 0,
                "last_message_id": last_message_id,
                "flags": 0,
                "guild_id": guild_id.to_string(),
                "name": name,
                "parent_id": null,
                "rate_limit_per_user": 0,
                "topic": null,
                "position": 0,
                "nsfw": false,
                "permissions": MEMBER_PERMISSIONS,
            }),
        };
        if let (Some(parent), Some(fields)) = (self.threads.get(&channel.id), json.as_object_mut()) {
            // A snowflake carries its creation time: the thread opened then.
            let opened = timestamp((channel.id >> 22) + DISCORD_EPOCH_MS);
            fields.insert("type".into(), Value::from(PUBLIC_THREAD));
            fields.insert("parent_id".into(), Value::String(parent.to_string()));
            fields.insert("owner_id".into(), Value::String(super::BOT_ID.to_string()));
            let sent = self
                .messages
                .values()
                .filter(|stored| stored.channel_id == channel.id && stored.ephemeral_for.is_none())
                .count();
            fields.insert("message_count".into(), Value::from(sent));
            fields.insert("member_count".into(), Value::from(1));
            fields.insert("total_message_sent".into(), Value::from(sent));
            fields.remove("topic");
            fields.remove("position");
            fields.insert(
                "thread_metadata".into(),
                serde_json::json!({
                    "archived": false,
                    "auto_archive_duration": AUTO_ARCHIVE_MINUTES,
                    "archive_timestamp": opened,
                    "locked": false,
                    "create_timestamp": opened,
                }),
            );
        }
        json
    }

    /// The message with this id in this channel.
    pub(crate) fn message_in(&self, channel_id: u64, message_id: u64) -> Option<&Stored> {
        self.messages
            .get(&message_id)
            .filter(|stored| stored.channel_id == channel_id)
    }
}

pub(crate) fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// Now, as Discord writes timestamps: `2017-07-11T17:27:07.299000+00:00`.
pub(crate) fn timestamp_now() -> String {
    timestamp(unix_millis())
}

/// A Unix time in milliseconds as an ISO 8601 timestamp in UTC.
pub(crate) fn timestamp(millis: u64) -> String {
    let days = millis / 86_400_000;
    let in_day = millis % 86_400_000;
    let (year, month, day) = civil_from_days(days);
    let (hours, minutes) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (seconds, fraction) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{fraction:03}000+00:00")
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Whether `since` is at most `window` ago.
pub(crate) fn within(since: Instant, window: Duration) -> bool {
    since.elapsed() <= window
}

#[cfg(test)]
mod tests {
    use super::{State, timestamp};

    #[test]
    fn timestamps_are_written_as_discord_writes_them() {
        assert_eq!(timestamp(1_499_794_027_299), "2017-07-11T17:27:07.299000+00:00");
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(timestamp(1_709_251_199_000), "2024-02-29T23:59:59.000000+00:00");
    }

    #[test]
    fn snowflakes_grow_and_carry_the_time() {
        let mut state = State::default();
        let first = state.snowflake();
        let second = state.snowflake();
        assert!(second > first);
        let millis = (first >> 22) + super::DISCORD_EPOCH_MS;
        assert!(millis.abs_diff(super::unix_millis()) < 60_000);
    }
}
