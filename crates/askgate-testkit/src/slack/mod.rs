//! A fake Slack on `127.0.0.1:0`: the Web API, Socket Mode, and signed
//! HTTP delivery of events and interactions.
//!
//! [`FakeSlack::start`] binds two fresh ports that belong to the test (no
//! globals, no fixed ports), one for the Web API and one for Socket Mode,
//! and stops serving when the last clone of the handle is dropped. Point
//! slack-morphism at it with
//! `SlackClientHyperConnector::with_connector(connector).with_slack_api_url(&fake.api_url())`,
//! where the connector reaches plain HTTP (`HttpsConnectorBuilder::new().with_native_roots()?.https_or_http().enable_http1().build()`):
//! slack-morphism joins method names onto the URL with a `/`, as onto its
//! `SLACK_API_URI_STR` (`https://slack.com/api`), so [`FakeSlack::api_url`]
//! is `http://127.0.0.1:PORT/api`. `apps.connections.open` answers the
//! Socket Mode URL, `ws://127.0.0.1:PORT/link/?ticket=…&app_id=…`.
//!
//! # What it answers
//!
//! The Web API ([`METHODS`]): `POST` or `GET` `/api/<method>`, arguments
//! from a JSON body (token in `Authorization: Bearer`) or a form body and
//! the query string (token there too, as `token`). Errors are HTTP 200 with
//! `{"ok": false, "error": …}`; a rate limit is HTTP 429 with
//! `Retry-After` and `{"ok": false, "error": "ratelimited"}`; an unknown
//! method is `unknown_method` with `req_method`. Tokens: [`BOT_TOKEN`] for
//! every method but `apps.connections.open`, which takes [`APP_TOKEN`];
//! the other kind is `not_allowed_token_type`, none `not_authed`, another
//! `invalid_auth`, and after [`FakeSlack::deactivate`] `account_inactive`.
//!
//! - `auth.test`; `api.test` (echoes its arguments); `users.info`.
//! - `apps.connections.open`: a single-use ticket in the Socket Mode URL.
//! - `conversations.open` with one user (`users` a comma-separated string,
//!   as Slack documents it): the same `D…` every time for them
//!   (`user_not_found` for a stranger; group DMs are `not_supported`).
//! - `chat.postMessage` to a `C…`, a `D…`, a `#name` or a user id (then
//!   into their DM): `channel_not_found`, `not_in_channel` (a public
//!   channel the bot is not in; a private one is `channel_not_found`),
//!   `is_archived`, `no_text`, `msg_too_long` (over 40,000 characters),
//!   `invalid_blocks_format`, and `invalid_blocks` with Slack's `errors`
//!   and `response_metadata.messages`, each naming its JSON pointer. The
//!   answer carries the message object, with a fresh, increasing `ts`.
//! - `chat.update` (the bot's own messages: `cant_update_message`,
//!   `message_not_found`; `blocks` left out keep the old ones, `[]` removes
//!   them), `chat.delete`, `chat.postEphemeral` (`user_not_in_channel`,
//!   answers `message_ts`).
//! - `views.open`: see "Modals" below.
//! - A click's `response_url` (served by the fake, five uses in 30 minutes):
//!   a JSON body posts a message (ephemeral for the person unless
//!   `response_type` is `in_channel`), or replaces or deletes the clicked
//!   message (`replace_original`, `delete_original`).
//!
//! Socket Mode: a connection gets `hello` (`num_connections`,
//! `connection_info.app_id`, `debug_info.host`); events come as
//! `events_api` envelopes with `retry_attempt` and `retry_reason`,
//! interactions as `interactive` envelopes (`accepts_response_payload`
//! true only for `view_submission`); the app acknowledges each with
//! `{"envelope_id": …}`, with a `payload` where accepted.
//!
//! # Checked against Slack's own specs
//!
//! Every call is checked against the documents vendored in
//! `crates/askgate-testkit/spec/slack/` (its README names their sources,
//! versions and licence):
//!
//! - The Web API's OpenAPI document (`slack_web_openapi_v2.json`, from
//!   `slackapi/slack-api-specs`), with the methods and arguments Slack has
//!   documented since (`web-api-additions.json`, each with its page): the
//!   method must be one Slack documents (else `unknown_method`); its
//!   required arguments must be there, no argument it does not document may
//!   be, and each must have its documented type — a string argument given
//!   as a JSON array (`conversations.open` `users`, a comma-separated
//!   string) is refused. A violation is `invalid_arguments` with
//!   `response_metadata.messages` (`[ERROR] missing required field:
//!   channel`, `[ERROR] must be a string [json-pointer:/users]`). Each
//!   method's arguments become a JSON Schema checked with `jsonschema`.
//! - Block Kit, which that document does not model, against the limits
//!   table `block-kit-limits.json` written from Slack's Block Kit reference
//!   pages (each limit with its page): block and element types, required
//!   fields, text object types, every length (section text 3000, header
//!   150, button text 75, `action_id` 255, `value` 2000, placeholder 150,
//!   label 2000, option text 75 and value 150, modal title 24,
//!   `private_metadata` 3000, …) and count (50 blocks in a message, 100 in a
//!   modal, 25 `actions` elements, 10 `context` elements, 10 checkboxes, …).
//!   Lengths are counted in UTF-16 code units (an emoji outside the Basic
//!   Multilingual Plane counts 2), the stricter reading of Slack's
//!   "characters". Messages answer `invalid_blocks` with Slack's `errors`
//!   and `response_metadata.messages`; `views.open` answers
//!   `invalid_arguments` with the messages (`[ERROR] must be less than 151
//!   characters [json-pointer:/view/blocks/0/element/placeholder/text]`).
//!   What the table cannot say is checked in code: `block_id`s unique in a
//!   message or view, `action_id`s unique in a block, a modal's `type` and
//!   its `submit` when it has inputs.
//!
//! # How closely it follows Slack
//!
//! - Block Kit (above): the pointers are exact; the length and count
//!   messages are Slack's (`must be less than 76 characters`, `no more
//!   than 50 items allowed`), other wording is close to Slack's but not
//!   guaranteed. Slack's `block_id`s and `action_id`s are added to what came
//!   without, and `emoji: true` to `plain_text`.
//! - Who a message notifies and what it links to is read as Slack reads
//!   `mrkdwn` ([`SeenMessage::pings`], [`SeenMessage::links`]): `<!channel>`,
//!   `<!here>`, `<!everyone>`, `<@U…>`, `<!subteam^…>`, `<#C…>`,
//!   `<url|label>`, bare URLs; with `link_names` (or `parse: full`) also
//!   bare `@here`, `@channel`, `@everyone` and `@name`. Escaped text
//!   (`&lt;!channel&gt;`) and `plain_text` objects notify no one. A link in
//!   the `text` unfurls unless `unfurl_links` is `false` (counted
//!   conservatively: Slack unfurls fewer); one in blocks never does.
//! - The bot's own messages come back to the app as `message` events with
//!   `bot_id` (no `subtype`), and its edits as `message_changed`, in
//!   conversations it is in, as Slack sends them; see
//!   [`FakeSlack::echo_bot_messages`]. A person's message in a channel the
//!   bot is not in is not sent at all.
//! - An event not acknowledged within the window ([`ACK_TIMEOUT`], see
//!   [`FakeSlack::set_ack_timeout`]) is sent again, up to [`MAX_RETRIES`]
//!   times: by Socket Mode as a new envelope with `retry_attempt` + 1 and
//!   `retry_reason` `timeout` (also when its connection closed first, then
//!   on the next connection); by HTTP with `X-Slack-Retry-Num` and
//!   `X-Slack-Retry-Reason` (`http_timeout`, `http_error`,
//!   `connection_failed`). Interactions are not retried, as on Slack: the
//!   person sees an error. Slack retries HTTP events after about a minute;
//!   the fake after [`RETRY_PAUSE`].
//! - Approximations: deliveries made while nothing is connected wait for a
//!   connection (Slack drops interactions and queues events); HTTP events go
//!   one at a time, in order; `mrkdwn: false` still counts mentions.
//! - Threads: `chat.postMessage`'s `thread_ts` must name a message of the
//!   conversation that is no reply itself ("Avoid using a reply's `ts`
//!   value; use its parent instead", the method's document): anything else
//!   is `invalid_thread_ts` (Slack is reported to answer so, or to lose the
//!   reply), kept as a violation. [`FakeSlack::replies_to`] reads a thread's
//!   replies back with their text and whom they notify.
//!
//! # Modals
//!
//! `views.open` takes a trigger id the fake issued with an interaction,
//! once (`exchanged_trigger_id` after), within [`TRIGGER_LIFETIME`] of the
//! interaction being sent (`expired_trigger_id`; see
//! [`FakeSlack::set_trigger_lifetime`]); any other is
//! `invalid_trigger_id`. The view is checked against the Block Kit table
//! (above); a bad one is, as on Slack, `invalid_arguments` with the
//! reasons in `response_metadata.messages`.
//! The answer is the view with its `id`, `state`, `hash` and ids.
//!
//! # Failures
//!
//! [`FakeSlack::fail_next`] makes the next call of a method fail (see
//! [`Failure`]): a 429 with `Retry-After`, any `ok: false` error, an HTTP
//! status, a slow answer, a dropped connection. [`FakeSlack::limit_posting`]
//! enforces Slack's posting limit per channel. In Socket Mode,
//! [`FakeSlack::send_disconnect`] sends `disconnect` (the connection closes
//! once the app has connected again, or after [`DISCONNECT_GRACE`]), and
//! [`FakeSlack::drop_socket`] drops the connections without a close frame.
//!
//! # What a person does
//!
//! [`FakeSlack::user`] and [`FakeSlack::add_user`] make people,
//! [`FakeSlack::channel`] and [`FakeSlack::private_channel`] channels (the
//! bot in them unless [`FakeSlack::remove_bot`]), [`FakeSlack::dm`] a DM.
//! [`FakeSlack::click`] sends `block_actions` for a button of a stored
//! message (its `value` as stored, a trigger id, a `response_url` the fake
//! serves; an `action_id` the message lacks goes as a forged click); [`FakeSlack::message`] and [`FakeSlack::edit_message`] send
//! `message` events; [`FakeSlack::submit_view`] sends `view_submission`
//! for an open modal, and [`FakeSlack::wait_for_outcome`] tells what the
//! acknowledgement did (closed, errors shown, updated, pushed, cleared, or
//! refused). [`FakeSlack::redeliver`] sends an event again as a retry.
//! Everything goes by Socket Mode unless [`FakeSlack::deliver_over_http`]
//! names the app's request URLs: then events are posted as JSON and
//! interactions as `payload=<json>`, signed with [`SIGNING_SECRET`] (see
//! [`sign`]); [`FakeSlack::post_signed`] POSTs anything signed, forged,
//! unsigned or stale, and [`FakeSlack::verify_url`] does the
//! `url_verification` handshake.
//!
//! # Where things are
//!
//! - `mod.rs`: the constants and [`FakeSlack`]: set-up, settings, Socket
//!   Mode controls, signed posts. `person.rs`: what a person does (the
//!   handle's methods and the payloads), and `response_url`s.
//!   `inspect.rs`: what happened, and waits.
//! - `types.rs`: the public data types.
//! - `server.rs`: the HTTP side: paths, tokens, arguments, failures, error
//!   shapes, lifetime. `methods.rs`: the Web API methods. `views.rs`:
//!   modals and what a submission's answer does.
//! - `spec.rs`: the vendored specs, read once; the arguments check.
//!   `blocks.rs`: Block Kit walked against the limits table, and ids.
//!   `mrkdwn.rs`: mentions and links.
//!   `ratelimit.rs`: the posting limit.
//! - `state.rs`: what the fake knows. `socket.rs`: Socket Mode and the
//!   delivery clock. `http.rs`: signing and HTTP delivery.
//!
//! What is not Slack's (serving on a loopback port, dropping connections,
//! recording, queued failures, waits, pushes until acknowledged) is in
//! [`crate::fake`].

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

mod blocks;
mod http;
mod inspect;
mod methods;
mod mrkdwn;
mod person;
mod ratelimit;
mod server;
mod socket;
mod spec;
mod state;
mod types;
mod views;

pub use http::{interaction_body, sign};
pub use methods::METHODS;
use server::Server;
use state::{Mode, Shared, State};
pub use types::{
    Attempt, Call, ChannelKind, Click, Delivery, DeliveryKind, DeliveryStatus, Direction, Failure, HttpAnswer, Input,
    Link, OpenedView, Person, Ping, SeenMessage, SignatureMode, SlackChannel, SocketConnection, SocketFrame,
    Submission, TokenKind, UrlVerification, Via, ViewOutcome, WaitTimeout,
};

/// The workspace's id.
pub const TEAM_ID: &str = "T0AGTEAM01";
/// The workspace's name, as `auth.test` answers it.
pub const TEAM_NAME: &str = "askgate-test";
/// The workspace's domain (`askgate-test.slack.com`).
pub const TEAM_DOMAIN: &str = "askgate-test";
/// The app's id.
pub const APP_ID: &str = "A0AGAPP001";
/// The bot's id (`bot_id` of its messages).
pub const BOT_ID: &str = "B0AGBOT001";
/// The bot's user id.
pub const BOT_USER_ID: &str = "U0AGBOT001";
/// The bot's name.
pub const BOT_NAME: &str = "askgate";
/// The bot token the fake accepts.
pub const BOT_TOKEN: &str = "xoxb-1234567890123-1234567890124-AskgateFakeSlackBotTok1";
/// The app-level token the fake accepts (for `apps.connections.open`).
pub const APP_TOKEN: &str =
    "xapp-1-A0AGAPP001-1234567890125-a5f0c2e4b6d8f0a1c3e5b7d9f1a3c5e7a5f0c2e4b6d8f0a1c3e5b7d9f1a3c5e7";
/// The signing secret HTTP deliveries are signed with.
pub const SIGNING_SECRET: &str = "a5f0c2e4b6d8f0a1c3e5b7d9f1a3c5e7";
/// The deprecated verification token payloads carry as `token`.
pub const VERIFICATION_TOKEN: &str = "AskgateFakeVerifyTok001";

/// How long Slack waits for an acknowledgement (Socket Mode and HTTP).
pub const ACK_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a trigger id works after its interaction was sent.
pub const TRIGGER_LIFETIME: Duration = Duration::from_secs(3);
/// How long a connection told to disconnect stays open at most.
pub const DISCONNECT_GRACE: Duration = Duration::from_secs(10);
/// The pause before an HTTP event is sent again.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How often an event is retried before Slack gives up.
pub const MAX_RETRIES: u32 = 3;
/// How long a `response_url` works.
pub const RESPONSE_URL_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// How often a `response_url` works.
pub const RESPONSE_URL_USES: u32 = 5;

/// A fake Slack owned by one test. Clones share it; it stops when the last
/// clone is dropped.
#[derive(Clone)]
pub struct FakeSlack {
    shared: Arc<Shared>,
    server: Arc<Server>,
}

impl fmt::Debug for FakeSlack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeSlack")
            .field("api", &self.server.addr())
            .field("socket", &self.server.socket_addr())
            .finish_non_exhaustive()
    }
}

impl FakeSlack {
    /// Starts a fake on two ports of `127.0.0.1`.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound, or no HTTP client built.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared {
            state: crate::fake::Recorder::new(State::default()),
            wake: Notify::new(),
            client: reqwest::Client::builder()
                // The app is a local address; a proxy from the environment must not intercept it.
                .no_proxy()
                .pool_max_idle_per_host(0)
                .build()
                .expect("an HTTP client without TLS can be built"),
        });
        let server = Server::start(Arc::clone(&shared)).await;
        Self {
            shared,
            server: Arc::new(server),
        }
    }

    /// The URL to give slack-morphism's `with_slack_api_url`:
    /// `http://127.0.0.1:PORT/api` (method names are joined on with `/`).
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.server.addr())
    }

    /// The Socket Mode server, `ws://127.0.0.1:PORT` (connections need a
    /// ticket from `apps.connections.open`).
    pub fn socket_url(&self) -> String {
        format!("ws://{}", self.server.socket_addr())
    }

    /// The address of the Web API server.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// [`BOT_TOKEN`].
    pub fn bot_token(&self) -> &'static str {
        BOT_TOKEN
    }

    /// [`APP_TOKEN`].
    pub fn app_token(&self) -> &'static str {
        APP_TOKEN
    }

    /// [`SIGNING_SECRET`].
    pub fn signing_secret(&self) -> &'static str {
        SIGNING_SECRET
    }

    // --- set-up ---

    /// A person with this id (`U…`) and username.
    pub fn user(&self, id: &str, name: &str) -> Person {
        let person = Person {
            id: id.to_owned(),
            name: name.to_owned(),
        };
        self.shared
            .change(|state| state.users.insert(person.id.clone(), person.clone()));
        person
    }

    /// A person with a fresh id.
    pub fn add_user(&self, name: &str) -> Person {
        let id = self.shared.change(|state| state.id("U"));
        self.user(&id, name)
    }

    /// A public channel with these people and the bot in it.
    pub fn channel(&self, name: &str, members: &[&Person]) -> SlackChannel {
        self.new_channel(name, members, ChannelKind::Public)
    }

    /// A private channel with these people and the bot in it.
    pub fn private_channel(&self, name: &str, members: &[&Person]) -> SlackChannel {
        self.new_channel(name, members, ChannelKind::Private)
    }

    fn new_channel(&self, name: &str, members: &[&Person], kind: ChannelKind) -> SlackChannel {
        self.shared.change(|state| {
            for person in members {
                state.users.insert(person.id.clone(), (*person).clone());
            }
            let channel = SlackChannel {
                id: state.id("C"),
                name: name.to_owned(),
                kind,
                members: members.iter().map(|person| person.id.clone()).collect(),
                bot_member: true,
                archived: false,
            };
            state.channels.insert(channel.id.clone(), channel.clone());
            channel
        })
    }

    /// The bot's DM with a person (`D…`), opened if need be.
    pub fn dm(&self, person: &Person) -> String {
        self.shared.change(|state| {
            state.users.insert(person.id.clone(), person.clone());
            state.dm_with(&person.id)
        })
    }

    /// Adds a person to a channel.
    pub fn join(&self, channel: &str, person: &Person) {
        self.edit_channel(channel, |known| {
            if !known.members.contains(&person.id) {
                known.members.push(person.id.clone());
            }
        });
    }

    /// Takes the bot out of a channel: posting there is `not_in_channel`
    /// (`channel_not_found` if private), and its messages send no events.
    pub fn remove_bot(&self, channel: &str) {
        self.edit_channel(channel, |known| known.bot_member = false);
    }

    /// Puts the bot back in a channel.
    pub fn add_bot(&self, channel: &str) {
        self.edit_channel(channel, |known| known.bot_member = true);
    }

    /// Archives a channel: posting there is `is_archived`.
    pub fn archive(&self, channel: &str) {
        self.edit_channel(channel, |known| known.archived = true);
    }

    fn edit_channel(&self, channel: &str, edit: impl FnOnce(&mut SlackChannel)) {
        self.shared.change(|state| {
            let known = state
                .channels
                .get_mut(channel)
                .unwrap_or_else(|| panic!("no channel {channel}"));
            edit(known);
        });
    }

    /// Deactivates the app: every call with its tokens is `account_inactive`.
    pub fn deactivate(&self) {
        self.shared.change(|state| state.config.deactivated = true);
    }

    /// Enforces Slack's posting limit from now on: in each channel, a burst
    /// of `burst` messages, then one every `per_channel` (Slack: about one a
    /// second); a post past it is `429` with `Retry-After`.
    pub fn limit_posting(&self, per_channel: Duration, burst: usize) {
        self.shared
            .change(|state| state.limit = Some(ratelimit::PostingLimit::new(per_channel, burst)));
    }

    /// Makes the next call of `method` (one of [`METHODS`]) fail this way.
    /// Failures for one method queue up and are used one a call.
    ///
    /// # Panics
    ///
    /// If `method` is not one of [`METHODS`].
    pub fn fail_next(&self, method: &str, failure: Failure) {
        assert!(
            METHODS.contains(&method),
            "no method {method:?}; the methods are {METHODS:?}"
        );
        self.shared.change(|state| state.requests.fail_next(method, failure));
    }

    /// How long an envelope or an HTTP delivery waits for its
    /// acknowledgement ([`ACK_TIMEOUT`] unless set). HTTP event delivery
    /// takes it up when [`FakeSlack::deliver_over_http`] is called.
    pub fn set_ack_timeout(&self, timeout: Duration) {
        self.shared.change(|state| state.config.ack_timeout = timeout);
    }

    /// How long a trigger id works after its interaction was sent
    /// ([`TRIGGER_LIFETIME`] unless set).
    pub fn set_trigger_lifetime(&self, lifetime: Duration) {
        self.shared.change(|state| state.config.trigger_lifetime = lifetime);
    }

    /// How long a connection told to disconnect stays open at most
    /// ([`DISCONNECT_GRACE`] unless set).
    pub fn set_disconnect_grace(&self, grace: Duration) {
        self.shared.change(|state| state.config.disconnect_grace = grace);
    }

    /// The pause before an HTTP event is retried ([`RETRY_PAUSE`] unless
    /// set); taken up when [`FakeSlack::deliver_over_http`] is called.
    pub fn set_retry_pause(&self, pause: Duration) {
        self.shared.change(|state| state.config.retry_pause = pause);
    }

    /// Whether the bot's own messages and edits come back as events (they
    /// do, as on Slack, unless turned off).
    pub fn echo_bot_messages(&self, echo: bool) {
        self.shared.change(|state| state.config.echo_bot_messages = echo);
    }

    /// Delivers events and interactions to the app's request URLs from now
    /// on, signed, instead of by Socket Mode (as when the app has request
    /// URLs and Socket Mode off). Must be called inside a Tokio runtime.
    pub fn deliver_over_http(&self, events_url: &str, interactivity_url: &str) {
        self.shared.change(|state| {
            state.mode = Some(Mode::Http {
                events_url: events_url.to_owned(),
                interactivity_url: interactivity_url.to_owned(),
            });
        });
        self.server.start_pusher();
    }

    /// Delivers by Socket Mode again.
    pub fn deliver_over_socket(&self) {
        self.shared.change(|state| {
            state.mode = Some(Mode::Socket);
            state.pump_socket(Instant::now());
        });
    }

    // --- Socket Mode ---

    /// Sends `{"type": "disconnect", "reason": …}` (e.g. `refresh_requested`,
    /// `link_disabled`, `warning`) on every open connection; each closes once
    /// the app has opened a new one, or after the grace period. Returns how
    /// many connections were told.
    pub fn send_disconnect(&self, reason: &str) -> usize {
        self.shared
            .change(|state| state.socket.disconnect(reason, Instant::now()))
    }

    /// Drops every open connection without a close frame; unacknowledged
    /// events go again on the next connection. Returns how many were dropped.
    pub fn drop_socket(&self) -> usize {
        self.shared.change(|state| {
            let dropped = state.socket.drop_all();
            state.pump_socket(Instant::now());
            dropped
        })
    }

    // --- HTTP ---

    /// The headers Slack would sign this body with now.
    pub fn signature_headers(&self, body: &[u8], mode: SignatureMode) -> Vec<(String, String)> {
        http::signature_headers(body, mode)
    }

    /// POSTs any body to a URL as Slack would, signed as asked, and returns
    /// the answer (waiting for it up to the acknowledgement window). Nothing
    /// is recorded.
    pub async fn post_signed(&self, url: &str, body: &[u8], content_type: &str, mode: SignatureMode) -> HttpAnswer {
        let timeout = self.shared.state.lock().config.ack_timeout;
        http::send(&self.shared.client, url, body, content_type, mode, timeout).await
    }

    /// Slack's `url_verification`: POSTs a challenge to the Events API
    /// request URL, signed, and returns what came back.
    pub async fn verify_url(&self, url: &str) -> UrlVerification {
        let challenge = {
            let mut state = self.shared.state.lock();
            format!("{}{}", state.short_id(), state.ts().replace('.', ""))
        };
        let body = http::url_verification(&challenge);
        let answer = self
            .post_signed(url, &body, "application/json", SignatureMode::Valid)
            .await;
        UrlVerification { challenge, answer }
    }
}
