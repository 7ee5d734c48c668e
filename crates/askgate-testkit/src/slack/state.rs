//! What the fake knows: people and conversations, messages, modals and
//! trigger ids, the deliveries to the app and where each stands, the Socket
//! Mode connections, the calls and queued failures, and the settings a test
//! changed. Also the ids and `ts` values it stamps things with, and the
//! `event_callback` wrapper every event goes out in.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::Notify;

use super::mrkdwn::Mentions;
use super::ratelimit::PostingLimit;
use super::socket::SocketState;
use super::types::{
    Call, ChannelKind, Delivery, DeliveryKind, DeliveryStatus, Failure, OpenedView, Person, SeenMessage, SlackChannel,
    ViewOutcome,
};
use super::{ACK_TIMEOUT, APP_ID, BOT_ID, BOT_USER_ID, DISCONNECT_GRACE, RETRY_PAUSE, TEAM_ID, TRIGGER_LIFETIME};
use crate::fake::{Recorder, Requests};

/// What the servers, the delivery tasks and the handles share.
pub(crate) struct Shared {
    /// The state; its waiters are woken whenever something is recorded.
    pub(crate) state: Recorder<State>,
    /// Wakes the delivery tasks after a change.
    pub(crate) wake: Notify,
    /// The client for HTTP deliveries and signed posts (timeouts per request).
    pub(crate) client: reqwest::Client,
}

impl Shared {
    /// Changes the state, then wakes the waiters and the delivery tasks.
    pub(crate) fn change<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        let result = self.state.record(change);
        self.wake.notify_waiters();
        result
    }
}

/// What a test can change.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// How long an envelope or an HTTP delivery waits for its acknowledgement.
    pub(crate) ack_timeout: Duration,
    /// How long a trigger id works after its interaction was sent.
    pub(crate) trigger_lifetime: Duration,
    /// How long a connection told to disconnect stays open at most.
    pub(crate) disconnect_grace: Duration,
    /// The pause before an HTTP event is retried.
    pub(crate) retry_pause: Duration,
    /// Whether the bot's own messages come back as `message` events.
    pub(crate) echo_bot_messages: bool,
    /// Whether the app was deactivated (`account_inactive`).
    pub(crate) deactivated: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            ack_timeout: ACK_TIMEOUT,
            trigger_lifetime: TRIGGER_LIFETIME,
            disconnect_grace: DISCONNECT_GRACE,
            retry_pause: RETRY_PAUSE,
            echo_bot_messages: true,
            deactivated: false,
        }
    }
}

/// Where deliveries go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    Socket,
    Http {
        events_url: String,
        interactivity_url: String,
    },
}

/// A message the fake keeps, with what it does not put in the object.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) json: Value,
    pub(crate) channel: String,
    pub(crate) ephemeral_for: Option<String>,
    pub(crate) by_bot: bool,
    pub(crate) unfurl_links: Option<bool>,
    pub(crate) unfurl_media: Option<bool>,
    pub(crate) link_names: bool,
    pub(crate) mentions: Mentions,
}

impl Stored {
    pub(crate) fn ts(&self) -> &str {
        self.json["ts"].as_str().unwrap_or_default()
    }

    pub(crate) fn seen(&self) -> SeenMessage {
        let text = |key: &str| self.json.get(key).and_then(Value::as_str).map(str::to_owned);
        SeenMessage {
            ts: self.ts().to_owned(),
            channel: self.channel.clone(),
            user: text("user"),
            bot_id: text("bot_id"),
            text: text("text").unwrap_or_default(),
            blocks: self.json.get("blocks").cloned().unwrap_or(Value::Null),
            thread_ts: text("thread_ts"),
            edited: self.json.get("edited").is_some(),
            ephemeral_for: self.ephemeral_for.clone(),
            pings: self.mentions.pings.clone(),
            links: self.mentions.links.clone(),
            channel_refs: self.mentions.channels.clone(),
            unfurl_links: self.unfurl_links,
            unfurl_media: self.unfurl_media,
            json: self.json.clone(),
        }
    }
}

/// A trigger id the fake issued.
#[derive(Debug, Clone)]
pub(crate) struct Trigger {
    pub(crate) user: String,
    /// When its interaction was first sent (it works from then on).
    pub(crate) sent: Option<Instant>,
    pub(crate) used: bool,
}

/// A `response_url` the fake issued with a click.
#[derive(Debug, Clone)]
pub(crate) struct ResponseUrl {
    pub(crate) channel: String,
    pub(crate) message_ts: String,
    pub(crate) user: String,
    pub(crate) uses: u32,
    pub(crate) issued: Instant,
}

/// A delivery and what the fake needs to send it again.
#[derive(Debug, Clone)]
pub(crate) struct DeliveryState {
    pub(crate) record: Delivery,
    pub(crate) accepts_response_payload: bool,
    /// The retry number the next attempt carries.
    pub(crate) next_retry: u32,
    /// The reason the next attempt gives for being a retry.
    pub(crate) retry_reason: String,
    /// When the pending attempt went out, and on which connection.
    pub(crate) sent_at: Option<Instant>,
    pub(crate) connection: Option<usize>,
    pub(crate) trigger: Option<String>,
    /// For a `view_submission`: the view, and what became of it.
    pub(crate) view: Option<String>,
    pub(crate) outcome: Option<ViewOutcome>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) requests: Requests<Call, Failure>,
    pub(crate) config: Config,
    counter: u64,
    last_ts: u64,
    pub(crate) users: BTreeMap<String, Person>,
    pub(crate) channels: BTreeMap<String, SlackChannel>,
    pub(crate) messages: Vec<Stored>,
    pub(crate) views: Vec<OpenedView>,
    pub(crate) triggers: HashMap<String, Trigger>,
    pub(crate) deliveries: Vec<DeliveryState>,
    pub(crate) mode: Option<Mode>,
    pub(crate) socket: SocketState,
    pub(crate) limit: Option<PostingLimit>,
    pub(crate) response_urls: HashMap<String, ResponseUrl>,
    /// `http://127.0.0.1:PORT`, once the Web API server is bound.
    pub(crate) api_base: String,
    /// `ws://127.0.0.1:PORT`, once the Socket Mode server is bound.
    pub(crate) socket_base: String,
    pub(crate) closed: bool,
    /// Every call refused as Slack's published spec refuses it, described
    /// ([`super::FakeSlack::violations`]).
    pub(crate) violations: Vec<String>,
}

impl State {
    /// A fresh number, for ids.
    pub(crate) fn number(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// A fresh id with this prefix, shaped as Slack's (`U0AG000001`).
    pub(crate) fn id(&mut self, prefix: &str) -> String {
        format!("{prefix}0AG{:06}", self.number())
    }

    /// A short id, as Slack gives blocks and elements (`x8Kq`).
    pub(crate) fn short_id(&mut self) -> String {
        const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        self.counter += 1;
        let mut n = self.counter.wrapping_mul(2_654_435_761) % (62 * 62 * 62 * 62);
        let mut id = String::new();
        for _ in 0..4 {
            id.push(char::from(DIGITS[usize::try_from(n % 62).unwrap_or_default()]));
            n /= 62;
        }
        id
    }

    /// A fresh `ts`: now, in seconds with six decimals, above every earlier one.
    pub(crate) fn ts(&mut self) -> String {
        let micros = unix_micros().max(self.last_ts + 1);
        self.last_ts = micros;
        format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000)
    }

    pub(crate) fn user_named(&self, name: &str) -> Option<String> {
        self.users
            .values()
            .find(|user| user.name == name)
            .map(|user| user.id.clone())
    }

    /// The bot's DM with a person, opened if need be.
    pub(crate) fn dm_with(&mut self, user: &str) -> String {
        if let Some(channel) = self
            .channels
            .values()
            .find(|channel| channel.kind == ChannelKind::Im { user: user.to_owned() })
        {
            return channel.id.clone();
        }
        let id = self.id("D");
        self.channels.insert(
            id.clone(),
            SlackChannel {
                id: id.clone(),
                name: "directmessage".to_owned(),
                kind: ChannelKind::Im { user: user.to_owned() },
                members: vec![user.to_owned()],
                bot_member: true,
                archived: false,
            },
        );
        id
    }

    /// The conversation a `channel` argument names: its id, `#name` or
    /// name, or a person's id (their DM with the bot).
    pub(crate) fn resolve(&mut self, channel: &str) -> Option<String> {
        if self.channels.contains_key(channel) {
            return Some(channel.to_owned());
        }
        if (channel.starts_with('U') || channel.starts_with('W')) && self.users.contains_key(channel) {
            return Some(self.dm_with(channel));
        }
        let name = channel.strip_prefix('#').unwrap_or(channel);
        self.channels
            .values()
            .find(|known| known.name == name && !matches!(known.kind, ChannelKind::Im { .. }))
            .map(|known| known.id.clone())
    }

    /// Who a message notifies and what it links to.
    pub(crate) fn mentions(&self, message: &Value, link_names: bool, unfurl_links: Option<bool>) -> Mentions {
        let user_named = |name: &str| self.user_named(name);
        let mut found = Mentions::default();
        if let Some(text) = message.get("text").and_then(Value::as_str) {
            found.scan(text, link_names, unfurl_links != Some(false), &user_named);
        }
        if let Some(blocks) = message.get("blocks") {
            found.scan_blocks(blocks, link_names, &user_named);
        }
        found
    }

    /// The message with this `ts` in this channel (ephemeral ones included).
    pub(crate) fn message_at(&self, channel: &str, ts: &str) -> Option<usize> {
        self.messages
            .iter()
            .position(|stored| stored.channel == channel && stored.ts() == ts)
    }

    /// The bot as `bot_profile`.
    pub(crate) fn bot_profile() -> Value {
        json!({
            "id": BOT_ID,
            "app_id": APP_ID,
            "user_id": BOT_USER_ID,
            "name": super::BOT_NAME,
            "icons": { "image_36": "https://a.slack-edge.com/80588/img/plugins/app/bot_36.png" },
            "deleted": false,
            "updated": 1_700_000_000,
            "team_id": TEAM_ID,
        })
    }

    /// Queues an event for the app, in its `event_callback`; returns the delivery.
    pub(crate) fn event(&mut self, event: Value) -> usize {
        let event_id = self.id("Ev");
        let mut payload = json!({
            "token": super::VERIFICATION_TOKEN,
            "team_id": TEAM_ID,
            "context_team_id": TEAM_ID,
            "context_enterprise_id": null,
            "api_app_id": APP_ID,
            "event": null,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": unix_micros() / 1_000_000,
            "authorizations": [{
                "enterprise_id": null,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "is_bot": true,
                "is_enterprise_install": false,
            }],
            "is_ext_shared_channel": false,
            "event_context": format!("4-{event_id}"),
        });
        payload["event"] = event;
        self.deliver(DeliveryKind::Event, payload, false, None, None, 0, "")
    }

    /// Queues a delivery; returns its id.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver(
        &mut self,
        kind: DeliveryKind,
        payload: Value,
        accepts_response_payload: bool,
        trigger: Option<String>,
        view: Option<String>,
        retry: u32,
        retry_reason: &str,
    ) -> usize {
        let id = self.deliveries.len();
        let event_id = payload.get("event_id").and_then(Value::as_str).map(str::to_owned);
        self.deliveries.push(DeliveryState {
            record: Delivery {
                id,
                kind,
                payload,
                event_id,
                attempts: Vec::new(),
                status: DeliveryStatus::Queued,
            },
            accepts_response_payload,
            next_retry: retry,
            retry_reason: retry_reason.to_owned(),
            sent_at: None,
            connection: None,
            trigger,
            view,
            outcome: None,
        });
        self.pump_socket(Instant::now());
        id
    }

    /// Sends the app a `message` event for a stored message, as Slack does
    /// for every message in a conversation the bot is in (its own included,
    /// unless a test turned that off).
    pub(crate) fn message_event(&mut self, index: usize, event: Value) {
        let stored = &self.messages[index];
        if stored.ephemeral_for.is_some() || (stored.by_bot && !self.config.echo_bot_messages) {
            return;
        }
        let Some(channel) = self.channels.get(&stored.channel) else {
            return;
        };
        if !channel.bot_member {
            return;
        }
        self.event(event);
    }

    /// The `message` event of a stored message.
    pub(crate) fn message_event_json(&self, index: usize) -> Value {
        let stored = &self.messages[index];
        let mut event = stored.json.clone();
        event["channel"] = json!(stored.channel);
        event["event_ts"] = stored.json["ts"].clone();
        event["channel_type"] = json!(self.channel_type(&stored.channel));
        event
    }

    pub(crate) fn channel_type(&self, channel: &str) -> &'static str {
        self.channels.get(channel).map_or("channel", SlackChannel::channel_type)
    }

    /// Each delivery as `id: status`, for a wait's failure message.
    pub(crate) fn delivery_summaries(&self) -> Vec<String> {
        self.deliveries
            .iter()
            .map(|delivery| {
                let status = match &delivery.record.status {
                    DeliveryStatus::Queued => "queued".to_owned(),
                    DeliveryStatus::AwaitingAck => "awaiting ack".to_owned(),
                    DeliveryStatus::Acked { late, .. } => if *late { "acked late" } else { "acked" }.to_owned(),
                    DeliveryStatus::Failed(why) => format!("failed: {why}"),
                };
                let kind = delivery.record.payload["type"].as_str().unwrap_or_default();
                format!("{} ({kind}): {status}", delivery.record.id)
            })
            .collect()
    }
}

pub(crate) fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
}

pub(crate) fn unix_seconds() -> u64 {
    unix_micros() / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::State;

    #[test]
    fn ts_values_grow_and_look_like_slack_s() {
        let mut state = State::default();
        let first = state.ts();
        let second = state.ts();
        assert!(second > first, "{first} < {second}");
        let (seconds, micros) = first.split_once('.').unwrap_or_default();
        assert_eq!(seconds.len(), 10);
        assert_eq!(micros.len(), 6);
        assert_eq!(state.id("C"), "C0AG000001");
        assert_eq!(state.short_id().len(), 4);
    }
}
