//! A fake Discord on `127.0.0.1:0`: the REST API, the gateway and HTTP
//! interactions.
//!
//! [`FakeDiscord::start`] binds two fresh ports that belong to the test (no
//! globals, no fixed ports), one for REST and one for the gateway, and stops
//! serving when the last clone of the handle is dropped. Point serenity at
//! it with
//! `HttpBuilder::new(fake.token()).proxy(fake.api_url()).ratelimiter_disabled(true).application_id(APPLICATION_ID.into()).build()`:
//! serenity replaces `https://discord.com` with the proxy, so
//! [`FakeDiscord::api_url`] is the bare root `http://127.0.0.1:PORT`
//! (requests go to `/api/v10/…`), and only with the rate limiter off does it
//! use the proxy at all. A `Client` built on that `Http` asks
//! `GET /gateway` for the gateway URL, [`FakeDiscord::gateway_url`].
//!
//! # What it answers
//!
//! REST, with `Authorization: Bot <TOKEN>` (another token is
//! `401 {"message": "401: Unauthorized", "code": 0}`; the interaction and
//! webhook routes take no token, as on Discord): the [`ROUTES`], i.e.
//! `GET /gateway` and `/gateway/bot`, `GET /users/@me`,
//! `GET /applications/@me` (`verify_key` is [`FakeDiscord::public_key`]),
//! `POST /users/@me/channels`, messages (`POST`, `GET`, `PATCH`, `DELETE`),
//! the interaction callback, follow-ups and `@original`.
//!
//! The gateway (`ws://127.0.0.1:PORT`, plain JSON text frames whatever the
//! client asks for): op 10 Hello (interval [`DEFAULT_HEARTBEAT_INTERVAL`]
//! unless [`FakeDiscord::set_heartbeat_interval`]), op 2 Identify → READY
//! (`s` 1, the bot user, a session id, `resume_gateway_url` at `/resume` on
//! the same port, `guilds: []`, the application's id and flags), op 1 → op 11,
//! dispatches with increasing `s`, op 6 Resume → the dispatches after its
//! `seq` again (from an earlier one after
//! [`FakeDiscord::replay_on_next_resume_from`]), then RESUMED. The
//! application's `flags` follow the allowed privileged intents unless
//! [`FakeDiscord::set_application_flags`] sets them.
//!
//! # How closely it follows Discord
//!
//! - Messages are full message objects (snowflake ids that carry the time,
//!   the bot as `author`, `timestamp`, components and embeds as sent,
//!   `mentions`, `mention_roles`, `mention_everyone`, `nonce`,
//!   `message_reference` with `referenced_message` for replies), stored per
//!   channel and returned as a person sees them ([`SeenMessage`]).
//! - Every REST request needs Discord's `User-Agent: DiscordBot ($url,
//!   $versionNumber)` (API Reference, User Agent), the interaction and
//!   webhook routes too; without it Discord's edge answers `403 {"message":
//!   "internal network error", "code": 40333}` (Opcodes and Status Codes:
//!   "Cloudflare is blocking your request…"), and so does the fake.
//! - Every request is checked against Discord's own OpenAPI document, API
//!   v10, vendored in `spec/discord/` (its README says from where): the
//!   method and path are an operation of the document (else `404: Not
//!   Found`, or `405: Method Not Allowed` for a known path), the bot token
//!   is asked for where the operation's `security` asks for it, and the path
//!   parameters (snowflakes), the query parameters and the JSON body are
//!   validated with the `jsonschema` crate against the operation's schemas:
//!   required fields, types, enums, every length (in code points, as
//!   Discord counts) and count the document states, and, stricter than
//!   Discord (which ignores them), no field or query parameter it does not
//!   name (`UNKNOWN_FIELD`; a `null` counts as absent). An operation of the
//!   document that the fake does not serve (see [`ROUTES`]) is `404: Not
//!   Found` after these checks. Where the documentation is stricter than the
//!   document (message content 2000 characters, five components in a
//!   modal), the documentation's limit is applied to the document on load
//!   (`spec/discord/added-limits.json`). A violation is `400 50035 Invalid
//!   Form Body` with Discord's `_errors` tree by field path and Discord's
//!   codes (`BASE_TYPE_MAX_LENGTH` "Must be 80 or fewer in length.",
//!   `BASE_TYPE_REQUIRED`, `BASE_TYPE_CHOICES`, `UNION_TYPE_CHOICES`, …),
//!   every violation at once. The answer to an HTTP interaction is checked
//!   as the callback route's body.
//! - What the document cannot state is checked by hand (`validate.rs`): at
//!   most [`MAX_ACTION_ROWS`] action rows and nothing else at the top of a
//!   message without `IS_COMPONENTS_V2` (flag `1 << 15`), a select menu or
//!   text input alone in its row, each button style's fields (a link has a
//!   `url` and no `custom_id`, …, a label or an emoji), custom ids unique in
//!   a message, `allowed_mentions` with `parse` exclusive of `users` /
//!   `roles`. A body with nothing to show is `50006 Cannot send an empty
//!   message`, bad JSON `50109`. Approximations: the codes of the fake's
//!   own rules and of rare type errors are Discord-like, not confirmed.
//! - `allowed_mentions` decides who a message notifies ([`Ping`]), as the
//!   documentation's examples say: without it every mention in a message
//!   notifies, only user mentions in interaction responses and follow-ups;
//!   a reply notifies its author unless `replied_user` is false (its default
//!   once `allowed_mentions` is given). Edits notify no one; an edit that
//!   changes the content has its mentions worked out again under the edit's
//!   own `allowed_mentions`, else the defaults (not the create's), as
//!   Discord's Edit Message docs say. A backslash-escaped mention
//!   (`\@everyone`, `\<@id>`) is text; [`FakeDiscord::mentioned_by`] applies
//!   the rule to any text.
//! - Threads: [`FakeDiscord::add_thread`] opens a public thread (type 11) in a
//!   guild channel: a channel with its own id, whose messages and
//!   interactions carry that id as `channel_id`, an interaction's `channel`
//!   naming the parent in `parent_id`.
//! - A nonce with `enforce_nonce` returns the message it already made in the
//!   channel within [`NONCE_WINDOW`] and creates nothing.
//! - An unknown channel is `404 10003 Unknown Channel`, an unknown (or
//!   ephemeral) message `10008`; [`FakeDiscord::refuse_dms`] makes a user's DM
//!   `403 50007 Cannot send messages to this user`, and
//!   [`FakeDiscord::deny_access`] a channel `403 50001 Missing Access`; the
//!   bot cannot edit a person's message (`50005`).
//! - An interaction takes one first response, within
//!   [`INTERACTION_RESPONSE_WINDOW`] (`404 10062 Unknown interaction` after,
//!   `400 40060 Interaction has already been acknowledged.` for a second):
//!   type 1 to a PING; 4, 5, 6, 7 or 9 to a click; 4 and 5 (and 6 and 7 if
//!   opened from a message) to a modal submit; any other type is `50035`.
//!   Its webhook (follow-ups, `@original`) works once it is acknowledged,
//!   for [`INTERACTION_TOKEN_LIFETIME`] (`10015 Unknown Webhook` otherwise).
//! - The gateway tells of the bot's own messages too, as Discord does:
//!   `MESSAGE_CREATE` for each message it sends (interaction responses and
//!   follow-ups included), `MESSAGE_UPDATE` for each edit, `MESSAGE_DELETE`;
//!   not for ephemeral ones, and only to a live session (they are dropped
//!   while there is none).
//! - Gateway intents apply: `MESSAGE_CREATE` only with `GUILD_MESSAGES` (guild)
//!   or `DIRECT_MESSAGES` (DM), and without `MESSAGE_CONTENT` a guild message's
//!   content, embeds, attachments and components are empty unless it
//!   mentions the bot. Asking for a privileged intent the application may
//!   not use (see [`FakeDiscord::allow_privileged_intents`]) closes with 4014.
//! - Approximations: the error for a callback type that does not fit the
//!   interaction, the nonce window, and the heartbeat (not enforced: a
//!   client that stops heartbeating is not disconnected). Frames are plain
//!   JSON text whatever the client asks for (`compress` in Identify,
//!   `compress=zlib-stream` in the URL). What a person does while no session
//!   is alive (before the first Identify, or after an invalidated one) is
//!   held and dispatched after the next READY, where Discord would drop it,
//!   so that a test need not race the client's start-up.
//!
//! # Failures
//!
//! [`FakeDiscord::fail_next`] makes the next request on a route fail; see
//! [`Failure`]: Discord's 429 with `retry_after`, `Retry-After` and the
//! `X-RateLimit-*` headers (per route or global), a 5xx, any Discord error, a
//! slow answer, a dropped connection. serenity 0.12 turns Discord's 429
//! into an error with status 429 and code -1 (the 429 body has no `code`, so
//! serenity cannot decode it) and keeps neither `retry_after` nor the
//! headers; a request built with serenity's `Request::build` and sent with
//! one's own reqwest client sees them. On the gateway,
//! [`FakeDiscord::disconnect`] drops or closes the connection (with a close
//! code), [`FakeDiscord::invalidate_session`] sends op 9,
//! [`FakeDiscord::request_reconnect`] op 7.
//!
//! # What a person does
//!
//! [`FakeDiscord::click`], [`FakeDiscord::submit_modal`] and
//! [`FakeDiscord::message`] build the payloads Discord sends (a guild
//! interaction with `guild_id` and `member.user`, a DM one with `user`; a
//! reply with `message_reference` and `referenced_message`). Messages always
//! come by gateway (`MESSAGE_CREATE`); interactions by gateway
//! (`INTERACTION_CREATE`) unless [`FakeDiscord::deliver_interactions_to`]
//! names the bot's HTTP interactions endpoint: then they are sent there
//! signed with the application's Ed25519 key (public half:
//! [`FakeDiscord::public_key`]), and the answer's body is taken as the first
//! response, as Discord does. [`FakeDiscord::ping`] sends Discord's PING.
//! [`FakeDiscord::interaction`] tells what the person saw of the answers
//! ([`Reply`]: a message, ephemeral or not, a modal, "thinking", an update).
//! [`FakeDiscord::post_interaction`] POSTs any payload with a valid, forged
//! or missing signature.
//!
//! [`discord_payload`] gives real payload samples from Discord's
//! documentation for decoding tests.
//!
//! # Where things are
//!
//! - `mod.rs`: the constants and [`FakeDiscord`]: set-up, inspection, waits,
//!   failures.
//! - `types.rs`: the public data types.
//! - `server.rs`: the HTTP side: routes, the token, bodies, failures, error
//!   shapes, lifetime. `rest.rs`: the non-interaction routes.
//!   `http.rs`: the HTTP way in, the callback and the interaction webhook.
//! - `state.rs`: what the fake knows. `messages.rs`: message objects,
//!   nonces, mentions and pings. `spec.rs`: requests checked against the
//!   vendored OpenAPI document. `validate.rs`: the `50035` error tree and
//!   the rules the document cannot state.
//! - `gateway.rs`: the WebSocket server and its sessions.
//! - `signing.rs`: the application key and signed HTTP delivery.
//! - `person.rs`: what a person does. `payloads.rs`: the samples.
//!
//! What is not Discord's (serving on a loopback port, dropping connections,
//! recording, queued failures, waits) is in [`crate::fake`].

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};

mod gateway;
mod http;
mod messages;
mod payloads;
mod person;
mod ratelimit;
mod rest;
mod server;
mod signing;
mod spec;
mod state;
mod types;
mod validate;

pub use gateway::DEFAULT_HEARTBEAT_INTERVAL;
pub use http::{INTERACTION_RESPONSE_WINDOW, INTERACTION_TOKEN_LIFETIME};
pub use messages::NONCE_WINDOW;
pub use payloads::{DISCORD_PAYLOADS, discord_payload};
pub use server::ROUTES;
use server::Server;
use state::{Shared, State};
pub use types::{
    AckVia, Call, ChannelKind, Component, Delivery, Disconnect, DiscordChannel, DiscordUser, Failure,
    GatewayConnection, GatewayFrame, HttpAnswer, InteractionKind, InteractionRecord, Modal, ModalField, Ping, Reply,
    SeenMessage, Signature, WaitTimeout,
};

/// The bot token the fake accepts (shaped as Discord's: the bot id in
/// base64, a timestamp part and an HMAC part).
pub const TOKEN: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GhWk3a.askgate-fake-discord-bot-token-0000000";
/// The bot's user id (the id in [`TOKEN`]).
pub const BOT_ID: u64 = 1_234_567_890_123_456_789;
/// The application's id: a bot's application has its user's id.
pub const APPLICATION_ID: u64 = BOT_ID;
/// The bot's username.
pub const BOT_USERNAME: &str = "askgate";
/// Most action rows at the top of a message without `IS_COMPONENTS_V2`
/// ("Legacy messages allow up to 5 action rows as top-level components",
/// Components reference): a rule the OpenAPI document cannot state, where
/// it says 40 components of any kind.
pub const MAX_ACTION_ROWS: usize = 5;

/// The permissions a member has in the fake's guilds (the documentation's
/// example value).
pub(crate) const MEMBER_PERMISSIONS: &str = "17179869183";
/// The bot's permissions in a channel (`app_permissions`): view channel,
/// send messages, embed links, read message history, use external emojis.
pub(crate) const APP_PERMISSIONS: &str = "442368";

/// A fake Discord owned by one test. Clones share it; it stops when the
/// last clone is dropped.
#[derive(Clone)]
pub struct FakeDiscord {
    shared: Arc<Shared>,
    server: Arc<Server>,
}

impl fmt::Debug for FakeDiscord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeDiscord")
            .field("api", &self.server.addr())
            .field("gateway", &self.server.gateway_addr())
            .finish_non_exhaustive()
    }
}

impl FakeDiscord {
    /// Starts a fake on two ports of `127.0.0.1`.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound, or no HTTP client built.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("the fake Discord gateway binds 127.0.0.1:0");
        let gateway_addr = listener.local_addr().expect("a bound listener knows its address");
        let gateway_url = format!("ws://{gateway_addr}");
        let mut state = State::default();
        state.gateway.resume_url = format!("{gateway_url}/resume");
        let shared = Arc::new(Shared {
            state: crate::fake::Recorder::new(state),
            signing_key: signing::application_key(),
            gateway_url,
            client: signing::interactions_client().expect("an HTTP client without TLS can be built"),
        });
        let server = Server::start(Arc::clone(&shared), listener).await;
        Self {
            shared,
            server: Arc::new(server),
        }
    }

    /// The URL to give serenity's `HttpBuilder::proxy`: `http://127.0.0.1:PORT`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// The gateway's URL, as `GET /gateway` answers it: `ws://127.0.0.1:PORT`.
    pub fn gateway_url(&self) -> String {
        self.shared.gateway_url.clone()
    }

    /// The address of the REST server.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The bot token the fake accepts: [`TOKEN`].
    pub fn token(&self) -> &str {
        TOKEN
    }

    /// The application's public key, 64 hex digits, as the developer portal
    /// shows it: what askgate verifies HTTP interactions with.
    pub fn public_key(&self) -> String {
        signing::public_key_hex(&self.shared.signing_key)
    }

    /// The headers Discord would sign this body with now
    /// (`X-Signature-Ed25519`, `X-Signature-Timestamp`).
    pub fn signature_headers(&self, body: &[u8], signature: Signature) -> Vec<(String, String)> {
        signing::signature_headers(&self.shared.signing_key, body, signature)
    }

    /// The bot as a user object (the `author` of its messages).
    pub fn bot_user(&self) -> Value {
        bot_user()
    }

    // --- set-up ---

    /// Tells the fake about a guild channel (DM channels open themselves).
    pub fn add_channel(&self, channel: &DiscordChannel) {
        self.state().channels.insert(channel.id, channel.clone());
    }

    /// Tells the fake a user's names, for the objects it puts them in
    /// (a user it has not seen is `user{id}`).
    pub fn add_user(&self, user: &DiscordUser) {
        self.state().remember_user(user);
    }

    /// The DM channel between the bot and this user, opened if need be, as
    /// `POST /users/@me/channels` opens it; for a person acting in a DM.
    pub fn dm_channel(&self, user: &DiscordUser) -> DiscordChannel {
        let mut state = self.state();
        state.remember_user(user);
        state.dm_channel(user.id)
    }

    /// Makes messages to this user's DM fail with `403 50007 Cannot send
    /// messages to this user` (DMs closed, or the bot blocked).
    pub fn refuse_dms(&self, user_id: u64) {
        self.state().refusing_dms.insert(user_id);
    }

    /// Makes every request on this channel fail with `403 50001 Missing Access`.
    pub fn deny_access(&self, channel_id: u64) {
        self.state().no_access.insert(channel_id);
    }

    /// Delivers interactions to this HTTP endpoint (signed POSTs) instead of
    /// the gateway, as when the application names an interactions endpoint URL.
    pub fn deliver_interactions_to(&self, url: &str) {
        self.state().interactions_url = Some(url.to_owned());
    }

    /// Delivers interactions by gateway again.
    pub fn deliver_interactions_by_gateway(&self) {
        self.state().interactions_url = None;
    }

    /// The heartbeat interval the next Hello names.
    pub fn set_heartbeat_interval(&self, interval: Duration) {
        self.state().gateway.heartbeat_interval = interval;
    }

    /// The privileged intents (`GUILD_MEMBERS` `1 << 1`, `GUILD_PRESENCES`
    /// `1 << 8`, `MESSAGE_CONTENT` `1 << 15`) the application may ask for; all
    /// of them unless set. Asking for another closes the gateway with 4014.
    pub fn allow_privileged_intents(&self, intents: u64) {
        self.state().gateway.privileged_allowed = intents & gateway::PRIVILEGED_INTENTS;
    }

    /// The application's `flags` (`GET /applications/@me`, READY's
    /// `application`) from now on, e.g. `1 << 18` (`GATEWAY_MESSAGE_CONTENT`)
    /// or `0`; by default the "limited" flag of each privileged intent
    /// [`FakeDiscord::allow_privileged_intents`] allows. The gateway still
    /// goes by the allowed intents.
    pub fn set_application_flags(&self, flags: u64) {
        self.state().gateway.flags = Some(flags);
    }

    /// Makes the next Resume replay every dispatch of the session from `s`
    /// = `from` on, also those the client had received (its `seq` is past
    /// them): a dispatch delivered twice, which a client must apply once.
    pub fn replay_on_next_resume_from(&self, from: u64) {
        self.state().gateway.replay_from = Some(from);
    }

    /// Makes the next request on `route` (one of [`ROUTES`], e.g.
    /// `POST /channels/{channel_id}/messages`) fail this way. Failures for
    /// one route queue up and are used one a request.
    ///
    /// # Panics
    ///
    /// If `route` is not one of [`ROUTES`].
    pub fn fail_next(&self, route: &str, failure: Failure) {
        assert!(ROUTES.contains(&route), "no route {route:?}; the routes are {ROUTES:?}");
        self.state().requests.fail_next(route, failure);
    }

    /// Signs the next interaction sent to the HTTP endpoint (a click, a
    /// submitted modal, a PING) as `signature` says, a stale or forged one
    /// say, instead of validly now; several calls queue up, one for each.
    pub fn sign_next_with(&self, signature: Signature) {
        self.state().next_signatures.push_back(signature);
    }

    /// Makes an interaction older, e.g. past the 3 s of its first response,
    /// without a test waiting that long.
    pub fn age_interaction(&self, id: u64, by: Duration) {
        if let Some(interaction) = self.state().interactions.get_mut(&id) {
            interaction.created = interaction.created.checked_sub(by).unwrap_or(interaction.created);
        }
    }

    /// Enforces Discord's per-channel message bucket from now on: at most
    /// `limit` messages in any `window` in one channel (Discord: 5 in 5 s),
    /// each answered with its `X-RateLimit-*` headers, a 429 past it.
    pub fn limit_channel_messages(&self, limit: usize, window: Duration) {
        self.state().channel_limits.set(limit, window);
    }

    // --- what happened ---

    /// When each message the bucket took in `channel_id` was created (with
    /// [`FakeDiscord::limit_channel_messages`] on).
    pub fn message_times(&self, channel_id: u64) -> Vec<std::time::Instant> {
        self.state().channel_limits.times(channel_id)
    }

    /// Every REST request so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state().requests.calls().to_vec()
    }

    /// The requests on one route so far.
    pub fn calls_to(&self, route: &str) -> Vec<Call> {
        calls_to(self.state().requests.calls(), route)
    }

    /// The messages of a channel as a person sees them now, in order;
    /// ephemeral ones are included, with [`SeenMessage::ephemeral_for`].
    pub fn messages(&self, channel_id: u64) -> Vec<SeenMessage> {
        self.state()
            .messages
            .values()
            .filter(|stored| stored.channel_id == channel_id)
            .map(state::Stored::seen)
            .collect()
    }

    /// The messages of a channel that reply to message `message_id`
    /// (`message_reference`), in order, as a person sees them: with their
    /// content, `allowed_mentions` and whom they notified
    /// ([`SeenMessage::pings`]).
    pub fn replies_to(&self, channel_id: u64, message_id: u64) -> Vec<SeenMessage> {
        self.messages(channel_id)
            .into_iter()
            .filter(|message| message.reply_to == Some(message_id))
            .collect()
    }

    /// One message, wherever it is.
    pub fn message_by_id(&self, message_id: u64) -> Option<SeenMessage> {
        self.state().messages.get(&message_id).map(state::Stored::seen)
    }

    /// The DM channel the bot opened with this user, if any.
    pub fn dm_channel_id(&self, user_id: u64) -> Option<u64> {
        self.state().dm_channels.get(&user_id).copied()
    }

    /// Every interaction a person caused, in order.
    pub fn interactions(&self) -> Vec<InteractionRecord> {
        self.state()
            .interactions
            .values()
            .map(|interaction| interaction.record.clone())
            .collect()
    }

    /// One interaction, with what the person saw of the answers so far.
    pub fn interaction(&self, id: u64) -> Option<InteractionRecord> {
        self.state()
            .interactions
            .get(&id)
            .map(|interaction| interaction.record.clone())
    }

    // --- the gateway ---

    /// Every gateway connection so far.
    pub fn gateway_connections(&self) -> Vec<GatewayConnection> {
        let state = self.state();
        state.gateway.connections.iter().map(|conn| conn.info.clone()).collect()
    }

    /// Every frame the gateway received, in order.
    pub fn gateway_frames(&self) -> Vec<GatewayFrame> {
        self.state().gateway.received.clone()
    }

    /// Every frame the gateway sent, in order.
    pub fn gateway_sent(&self) -> Vec<GatewayFrame> {
        self.state().gateway.sent.clone()
    }

    /// The `d` of every Identify received (token, intents, `compress`, shard, …).
    pub fn identifies(&self) -> Vec<Value> {
        self.gateway_frames()
            .into_iter()
            .filter(|frame| frame.op == Some(2))
            .map(|frame| frame.json["d"].clone())
            .collect()
    }

    /// The live session's id, if one is alive.
    pub fn session_id(&self) -> Option<String> {
        self.state().gateway.session().map(|(id, _)| id)
    }

    /// Sends any dispatch in the live session (held until READY without
    /// one); returns its `s`.
    pub fn dispatch(&self, kind: &str, data: Value) -> Option<u64> {
        self.shared.state.record(|state| state.gateway.dispatch(kind, data))
    }

    /// Ends the gateway connection of the live session (see [`Disconnect`]);
    /// its dispatches wait for a Resume. False if no connection was open.
    pub fn disconnect(&self, how: Disconnect) -> bool {
        self.shared.state.record(|state| state.gateway.disconnect(how))
    }

    /// Sends op 9 Invalid Session; unless `resumable`, the session ends and
    /// the client must identify again. False if no connection was open.
    pub fn invalidate_session(&self, resumable: bool) -> bool {
        self.shared
            .state
            .record(|state| state.gateway.invalidate_session(resumable))
    }

    /// Sends op 7 Reconnect: the client should resume on a new connection.
    pub fn request_reconnect(&self) -> bool {
        self.shared.state.record(|state| state.gateway.send_op(7))
    }

    /// Sends op 1: the client should heartbeat at once.
    pub fn request_heartbeat(&self) -> bool {
        self.shared.state.record(|state| state.gateway.send_op(1))
    }

    /// POSTs any interaction payload to an endpoint as Discord would, with
    /// a valid, forged or missing signature, and returns the answer. Nothing
    /// is recorded.
    pub async fn post_interaction(&self, url: &str, payload: &Value, signature: Signature) -> HttpAnswer {
        signing::post(&self.shared.client, &self.shared.signing_key, url, payload, signature).await
    }

    // --- waits ---

    /// Waits until the fake has had at least `n` requests on `route`, and
    /// returns them.
    pub async fn wait_for_call(&self, route: &str, n: usize, timeout: Duration) -> Result<Vec<Call>, WaitTimeout> {
        self.wait(timeout, format!("{n} request(s) on {route}"), |state| {
            let calls = calls_to(state.requests.calls(), route);
            (calls.len() >= n).then_some(calls)
        })
        .await
    }

    /// Waits until the gateway has received at least `n` frames with this
    /// op, and returns them.
    pub async fn wait_for_frames(
        &self,
        op: u64,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<GatewayFrame>, WaitTimeout> {
        self.wait(timeout, format!("{n} gateway frame(s) with op {op}"), |state| {
            let frames: Vec<GatewayFrame> = state
                .gateway
                .received
                .iter()
                .filter(|frame| frame.op == Some(op))
                .cloned()
                .collect();
            (frames.len() >= n).then_some(frames)
        })
        .await
    }

    /// Waits until a session is alive and a connection carries it (after
    /// READY or RESUMED), and returns its id.
    pub async fn wait_for_session(&self, timeout: Duration) -> Result<String, WaitTimeout> {
        self.wait(timeout, "a connected gateway session".to_owned(), |state| {
            state
                .gateway
                .session()
                .and_then(|(id, connected)| connected.then_some(id))
        })
        .await
    }

    /// Waits until a message of the channel satisfies `found`, and returns it.
    pub async fn wait_for_message(
        &self,
        channel_id: u64,
        timeout: Duration,
        found: impl Fn(&SeenMessage) -> bool,
    ) -> Result<SeenMessage, WaitTimeout> {
        self.wait(timeout, format!("a message in channel {channel_id}"), |state| {
            state
                .messages
                .values()
                .filter(|stored| stored.channel_id == channel_id)
                .map(state::Stored::seen)
                .find(|seen| found(seen))
        })
        .await
    }

    /// Waits until an interaction has had at least `n` replies, and returns them.
    pub async fn wait_for_replies(&self, id: u64, n: usize, timeout: Duration) -> Result<Vec<Reply>, WaitTimeout> {
        self.wait(timeout, format!("{n} repl(ies) to interaction {id}"), |state| {
            let replies = &state.interactions.get(&id)?.record.replies;
            (replies.len() >= n).then(|| replies.clone())
        })
        .await
    }

    async fn wait<T>(
        &self,
        timeout: Duration,
        waited_for: String,
        check: impl Fn(&State) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        self.shared
            .state
            .wait(timeout, check, |state| WaitTimeout {
                waited_for,
                timeout,
                routes: state.requests.calls().iter().map(|call| call.route.clone()).collect(),
                gateway_ops: state.gateway.received.iter().map(|frame| frame.op).collect(),
            })
            .await
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock()
    }

    /// Every request refused as Discord's published spec refuses it, since
    /// the fake started: no `DiscordBot` User-Agent, an operation Discord's
    /// OpenAPI document lacks, an invalid form body (`50035`), an invalid
    /// answer to an HTTP interaction. Each described with the error body.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }
}

/// The bot as a Discord user object.
pub fn bot_user() -> Value {
    json!({
        "id": BOT_ID.to_string(),
        "username": BOT_USERNAME,
        "avatar": null,
        "discriminator": "4821",
        "public_flags": 0,
        "flags": 0,
        "bot": true,
        "banner": null,
        "accent_color": null,
        "global_name": null,
        "avatar_decoration_data": null,
        "collectibles": null,
        "banner_color": null,
        "clan": null,
        "primary_guild": null,
    })
}

fn calls_to(calls: &[Call], route: &str) -> Vec<Call> {
    calls.iter().filter(|call| call.route == route).cloned().collect()
}
