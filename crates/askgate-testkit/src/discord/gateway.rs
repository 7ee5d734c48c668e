//! The fake gateway: a WebSocket server (tokio-tungstenite, plain JSON text
//! frames) on a loopback port of its own, with Discord's session lifecycle:
//! op 10 Hello on connect; op 2 Identify → a session and op 0 READY (s = 1);
//! op 1 Heartbeat → op 11; dispatches with increasing `s`, logged per
//! session; op 6 Resume on a new connection → the dispatches after `seq`
//! again (from an earlier `s` once a test asked for a duplicate replay),
//! then RESUMED; op 9 Invalid Session and op 7 Reconnect on demand;
//! and Discord's close codes (4001 unknown opcode, 4002 decode error, 4003
//! not authenticated, 4004 authentication failed, 4005 already
//! authenticated, 4013 invalid intents, 4014 disallowed intents).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::state::{Shared, State};
use super::types::{Disconnect, GatewayConnection, GatewayFrame};
use super::{APPLICATION_ID, BOT_ID, TOKEN, bot_user};

/// The heartbeat interval Discord's Hello usually names.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(41_250);

/// Gateway intents the fake looks at.
pub(crate) const GUILD_MESSAGES: u64 = 1 << 9;
pub(crate) const DIRECT_MESSAGES: u64 = 1 << 12;
pub(crate) const MESSAGE_CONTENT: u64 = 1 << 15;
/// The privileged intents: `GUILD_MEMBERS`, `GUILD_PRESENCES`, `MESSAGE_CONTENT`.
pub(crate) const PRIVILEGED_INTENTS: u64 = (1 << 1) | (1 << 8) | MESSAGE_CONTENT;
/// Every intent bit Discord defines (up to `DIRECT_MESSAGE_POLLS`, 1 << 25).
const KNOWN_INTENTS: u64 = (1 << 26) - 1;

/// What a connection's task is told to do.
#[derive(Debug)]
pub(crate) enum Out {
    Frame(String),
    Close(u16, &'static str),
    Drop,
}

/// One connection, as the state knows it.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) info: GatewayConnection,
    tx: Option<UnboundedSender<Out>>,
    session: Option<usize>,
}

/// A session: what Identify started and Resume continues.
#[derive(Debug)]
struct Session {
    id: String,
    intents: u64,
    seq: u64,
    /// Every dispatch of the session, for replay on resume.
    log: Vec<Value>,
    connection: Option<usize>,
    /// False once invalidated or superseded by a newer Identify.
    alive: bool,
}

/// The gateway's part of the fake's state.
#[derive(Debug)]
pub(crate) struct GatewayState {
    pub(crate) heartbeat_interval: Duration,
    /// The privileged intents the application may ask for.
    pub(crate) privileged_allowed: u64,
    pub(crate) connections: Vec<Conn>,
    pub(crate) received: Vec<GatewayFrame>,
    pub(crate) sent: Vec<GatewayFrame>,
    sessions: Vec<Session>,
    /// Dispatches made while no session was alive, sent after the next READY.
    held: Vec<(String, Value)>,
    /// The READY's `resume_gateway_url`.
    pub(crate) resume_url: String,
    /// The application's flags as a test set them, instead of those
    /// [`Self::privileged_allowed`] implies.
    pub(crate) flags: Option<u64>,
    /// Where the next Resume's replay starts (`s` at least this), whatever
    /// `seq` it names: dispatches the client has seen, sent again.
    pub(crate) replay_from: Option<u64>,
}

impl Default for GatewayState {
    fn default() -> Self {
        Self {
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            privileged_allowed: PRIVILEGED_INTENTS,
            connections: Vec::new(),
            received: Vec::new(),
            sent: Vec::new(),
            sessions: Vec::new(),
            held: Vec::new(),
            resume_url: String::new(),
            flags: None,
            replay_from: None,
        }
    }
}

impl GatewayState {
    /// How many sessions were started (Identify accepted).
    pub(crate) fn identified(&self) -> u64 {
        u64::try_from(self.sessions.len()).unwrap_or(u64::MAX)
    }

    /// The application's flags: as set by the test, or else the "limited"
    /// flag of each privileged intent it may use (as an unverified app has
    /// them).
    pub(crate) fn application_flags(&self) -> u64 {
        if let Some(flags) = self.flags {
            return flags;
        }
        let mut flags = 1 << 23; // APPLICATION_COMMAND_BADGE
        for (intent, flag) in [(1 << 8, 1 << 13), (1 << 1, 1 << 15), (MESSAGE_CONTENT, 1 << 19)] {
            if self.privileged_allowed & intent != 0 {
                flags |= flag;
            }
        }
        flags
    }

    /// The id of the live session, and whether a connection carries it now.
    pub(crate) fn session(&self) -> Option<(String, bool)> {
        self.current().map(|index| {
            let session = &self.sessions[index];
            (session.id.clone(), session.connection.is_some())
        })
    }

    fn current(&self) -> Option<usize> {
        self.sessions.iter().rposition(|session| session.alive)
    }

    fn open(&mut self, path: String, tx: UnboundedSender<Out>) -> usize {
        let id = self.connections.len();
        self.connections.push(Conn {
            info: GatewayConnection {
                id,
                path,
                closed: false,
            },
            tx: Some(tx),
            session: None,
        });
        let interval = u64::try_from(self.heartbeat_interval.as_millis()).unwrap_or(u64::MAX);
        self.send(id, json!({ "t": null, "s": null, "op": 10, "d": { "heartbeat_interval": interval, "_trace": ["[\"gateway-prd-fake-0\",{\"micros\":0.0}]"] } }));
        id
    }

    fn closed(&mut self, conn: usize) {
        let Some(connection) = self.connections.get_mut(conn) else {
            return;
        };
        connection.info.closed = true;
        connection.tx = None;
        if let Some(index) = connection.session.take()
            && self.sessions[index].connection == Some(conn)
        {
            self.sessions[index].connection = None;
        }
    }

    fn send(&mut self, conn: usize, frame: Value) {
        if let Some(tx) = self.connections.get(conn).and_then(|connection| connection.tx.as_ref()) {
            let _ = tx.send(Out::Frame(frame.to_string()));
        }
        self.sent.push(GatewayFrame {
            connection: conn,
            op: frame.get("op").and_then(Value::as_u64),
            json: frame,
        });
    }

    fn tell(&mut self, conn: usize, out: Out) {
        if let Some(tx) = self.connections.get(conn).and_then(|connection| connection.tx.as_ref()) {
            let _ = tx.send(out);
        }
    }

    /// Leaves the session of a connection without a connection.
    fn detach(&mut self, conn: usize) {
        if let Some(index) = self
            .connections
            .get_mut(conn)
            .and_then(|connection| connection.session.take())
            && self.sessions[index].connection == Some(conn)
        {
            self.sessions[index].connection = None;
        }
    }

    /// Closes a connection with a close code, as Discord does; after the
    /// codes that end a session, the session cannot be resumed.
    fn close(&mut self, conn: usize, code: u16, reason: &'static str) {
        if !resumable_after(code)
            && let Some(index) = self.connections.get(conn).and_then(|connection| connection.session)
        {
            self.sessions[index].alive = false;
        }
        self.detach(conn);
        self.tell(conn, Out::Close(code, reason));
    }

    /// Sends a dispatch in a session: the next `s`, logged for resume, and
    /// written to the session's connection if it has one. `None` if the
    /// session's intents exclude it.
    fn dispatch_to(&mut self, index: usize, kind: &str, data: &Value) -> Option<u64> {
        let session = &mut self.sessions[index];
        let data = visible(kind, data, session.intents)?;
        session.seq += 1;
        let seq = session.seq;
        let frame = json!({ "t": kind, "s": seq, "op": 0, "d": data });
        session.log.push(frame.clone());
        if let Some(conn) = session.connection {
            self.send(conn, frame);
        }
        Some(seq)
    }

    /// Sends a dispatch in the live session (see [`Self::dispatch_to`]), or
    /// holds it until the next READY while there is none.
    pub(crate) fn dispatch(&mut self, kind: &str, data: Value) -> Option<u64> {
        match self.current() {
            Some(index) => self.dispatch_to(index, kind, &data),
            None => {
                self.held.push((kind.to_owned(), data));
                None
            }
        }
    }

    /// Sends a dispatch in the live session, or drops it while there is
    /// none, as Discord drops what no session is there to receive: for the
    /// echoes of the bot's own actions, which no test waits for.
    pub(crate) fn dispatch_live(&mut self, kind: &str, data: &Value) -> Option<u64> {
        let index = self.current()?;
        self.dispatch_to(index, kind, data)
    }

    /// Ends the live session's connection; false if none is open.
    pub(crate) fn disconnect(&mut self, how: Disconnect) -> bool {
        let Some(conn) = self.live_connection() else {
            return false;
        };
        match how {
            Disconnect::Abrupt => {
                self.detach(conn);
                self.tell(conn, Out::Drop);
            }
            Disconnect::Close(code) => self.close(conn, code, "Closed by the fake Discord."),
        }
        true
    }

    /// Sends op 9 on the live session's connection; unless `resumable`, the
    /// session ends. False if no connection is open.
    pub(crate) fn invalidate_session(&mut self, resumable: bool) -> bool {
        let Some(conn) = self.live_connection() else {
            return false;
        };
        if !resumable && let Some(index) = self.current() {
            self.sessions[index].alive = false;
            self.detach(conn);
        }
        self.send(conn, json!({ "t": null, "s": null, "op": 9, "d": resumable }));
        true
    }

    /// Sends an op without data (7 Reconnect, 1 Heartbeat request) on the
    /// live connection; false if none is open.
    pub(crate) fn send_op(&mut self, op: u64) -> bool {
        let Some(conn) = self.live_connection() else {
            return false;
        };
        self.send(conn, json!({ "t": null, "s": null, "op": op, "d": null }));
        true
    }

    /// The connection of the live session, or else the newest open one.
    fn live_connection(&self) -> Option<usize> {
        self.current()
            .and_then(|index| self.sessions[index].connection)
            .or_else(|| self.connections.iter().rposition(|connection| !connection.info.closed))
    }
}

/// Whether a session may be resumed after the gateway closed with this code.
fn resumable_after(code: u16) -> bool {
    !matches!(code, 4004 | 4007 | 4009 | 4010..=4014)
}

/// A dispatch as a session with these intents receives it: `None` if the
/// intents exclude it; a guild message's content, embeds, attachments and
/// components emptied without `MESSAGE_CONTENT` unless the bot wrote it or is
/// mentioned in it, as Discord does.
fn visible(kind: &str, data: &Value, intents: u64) -> Option<Value> {
    if kind != "MESSAGE_CREATE" {
        return Some(data.clone());
    }
    let in_guild = data.get("guild_id").is_some();
    let needed = if in_guild { GUILD_MESSAGES } else { DIRECT_MESSAGES };
    if intents & needed == 0 {
        return None;
    }
    Some(if in_guild && intents & MESSAGE_CONTENT == 0 {
        without_content(data)
    } else {
        data.clone()
    })
}

fn without_content(message: &Value) -> Value {
    let bot = BOT_ID.to_string();
    let by_bot = message.pointer("/author/id").and_then(Value::as_str) == Some(bot.as_str());
    let mentions_bot = message
        .get("mentions")
        .and_then(Value::as_array)
        .is_some_and(|users| users.iter().any(|user| user["id"].as_str() == Some(bot.as_str())));
    let mut message = message.clone();
    if !by_bot && !mentions_bot {
        message["content"] = json!("");
        for key in ["embeds", "attachments", "components"] {
            message[key] = json!([]);
        }
    }
    if let Some(referenced) = message.get("referenced_message").filter(|value| value.is_object()) {
        message["referenced_message"] = without_content(referenced);
    }
    message
}

impl State {
    /// A text frame from a client.
    fn gateway_text(&mut self, conn: usize, text: &str) {
        let Ok(frame) = serde_json::from_str::<Value>(text) else {
            self.gateway.received.push(GatewayFrame {
                connection: conn,
                op: None,
                json: Value::String(text.to_owned()),
            });
            self.gateway.close(conn, 4002, "Error while decoding payload.");
            return;
        };
        let op = frame.get("op").and_then(Value::as_u64);
        self.gateway.received.push(GatewayFrame {
            connection: conn,
            op,
            json: frame.clone(),
        });
        let authenticated = self.gateway.connections[conn].session.is_some();
        match op {
            Some(1) => self
                .gateway
                .send(conn, json!({ "t": null, "s": null, "op": 11, "d": null })),
            Some(2) => self.identify(conn, &frame["d"]),
            Some(6) => self.resume(conn, &frame["d"]),
            Some(3 | 4 | 8 | 31) if authenticated => {}
            Some(3 | 4 | 8 | 31) => self.gateway.close(conn, 4003, "Not authenticated."),
            _ => self.gateway.close(conn, 4001, "Unknown opcode."),
        }
    }

    fn identify(&mut self, conn: usize, data: &Value) {
        if self.gateway.connections[conn].session.is_some() {
            return self.gateway.close(conn, 4005, "Already authenticated.");
        }
        if !token_ok(data) {
            return self.gateway.close(conn, 4004, "Authentication failed.");
        }
        let Some(intents) = data
            .get("intents")
            .and_then(Value::as_u64)
            .filter(|intents| intents & !KNOWN_INTENTS == 0)
        else {
            return self.gateway.close(conn, 4013, "Invalid intent(s).");
        };
        if intents & PRIVILEGED_INTENTS & !self.gateway.privileged_allowed != 0 {
            return self.gateway.close(conn, 4014, "Disallowed intent(s).");
        }
        let (a, b) = (self.snowflake(), self.snowflake());
        let gateway = &mut self.gateway;
        for session in &mut gateway.sessions {
            session.alive = false;
        }
        gateway.sessions.push(Session {
            id: format!("{:016x}{:016x}", a.rotate_left(29), b),
            intents,
            seq: 0,
            log: Vec::new(),
            connection: Some(conn),
            alive: true,
        });
        let index = gateway.sessions.len() - 1;
        gateway.connections[conn].session = Some(index);
        let mut user = bot_user();
        user["verified"] = json!(true);
        user["mfa_enabled"] = json!(false);
        user["email"] = Value::Null;
        let ready = json!({
            "v": 10,
            "user_settings": {},
            "user": user,
            "session_type": "normal",
            "session_id": gateway.sessions[index].id,
            "resume_gateway_url": gateway.resume_url,
            "relationships": [],
            "private_channels": [],
            "presences": [],
            "guilds": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["rotterdam", "frankfurt"],
            "auth": {},
            "application": { "id": APPLICATION_ID.to_string(), "flags": gateway.application_flags() },
            "shard": data.get("shard").cloned().unwrap_or_else(|| json!([0, 1])),
            "_trace": ["[\"gateway-prd-fake-0\",{\"micros\":0.0}]"],
        });
        gateway.dispatch_to(index, "READY", &ready);
        for (kind, data) in std::mem::take(&mut gateway.held) {
            gateway.dispatch_to(index, &kind, &data);
        }
    }

    fn resume(&mut self, conn: usize, data: &Value) {
        if !token_ok(data) {
            return self.gateway.close(conn, 4004, "Authentication failed.");
        }
        let gateway = &mut self.gateway;
        let session_id = data.get("session_id").and_then(Value::as_str).unwrap_or_default();
        let seq = data.get("seq").and_then(Value::as_u64).unwrap_or(0);
        // A replay from earlier than `seq` sends again what the client saw.
        let after = match gateway.replay_from.take() {
            Some(from) => seq.min(from.saturating_sub(1)),
            None => seq,
        };
        let Some(index) = gateway
            .sessions
            .iter()
            .position(|session| session.alive && session.id == session_id)
        else {
            gateway.send(conn, json!({ "t": null, "s": null, "op": 9, "d": false }));
            return;
        };
        // Discord closes the session's old connection when it resumes on a new one.
        if let Some(old) = gateway.sessions[index].connection
            && old != conn
        {
            gateway.detach(old);
            gateway.tell(old, Out::Drop);
        }
        gateway.sessions[index].connection = Some(conn);
        gateway.connections[conn].session = Some(index);
        let missed: Vec<Value> = gateway.sessions[index]
            .log
            .iter()
            .filter(|frame| frame["s"].as_u64().is_some_and(|s| s > after))
            .cloned()
            .collect();
        for frame in missed {
            gateway.send(conn, frame);
        }
        gateway.dispatch_to(
            index,
            "RESUMED",
            &json!({ "_trace": ["[\"gateway-prd-fake-0\",{\"micros\":0.0}]"] }),
        );
    }
}

/// Whether an Identify or Resume carries the bot's token (serenity sends it
/// with its `Bot ` prefix, which Discord accepts).
fn token_ok(data: &Value) -> bool {
    let token = data.get("token").and_then(Value::as_str).unwrap_or_default();
    token.strip_prefix("Bot ").unwrap_or(token) == TOKEN
}

/// Accepts gateway connections until aborted; aborting it drops them all.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors, most likely: wait rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One WebSocket connection: the handshake (recording the path), then the
/// client's frames into the state and the state's frames out, in order.
async fn connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut path = String::from("/");
    // tungstenite's handshake callback fixes the error type; it is never built here.
    #[allow(clippy::result_large_err)]
    let record_path = |request: &Request, response: Response| {
        path = request.uri().to_string();
        Ok(response)
    };
    let Ok(socket) = tokio_tungstenite::accept_hdr_async(stream, record_path).await else {
        return;
    };
    let (tx, mut rx) = unbounded_channel();
    let id = shared.state.record(|state| state.gateway.open(path, tx));
    let (mut sink, mut frames) = socket.split();
    loop {
        tokio::select! {
            frame = frames.next() => match frame {
                Some(Ok(Message::Text(text))) => shared.state.record(|state| state.gateway_text(id, &text)),
                Some(Ok(Message::Binary(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    shared.state.record(|state| state.gateway_text(id, &text));
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            out = rx.recv() => match out {
                Some(Out::Frame(text)) => {
                    if sink.send(Message::Text(text)).await.is_err() {
                        break;
                    }
                }
                Some(Out::Close(code, reason)) => {
                    let frame = CloseFrame { code: CloseCode::from(code), reason: reason.into() };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    break;
                }
                // Dropping the socket closes the TCP connection without a close frame.
                Some(Out::Drop) | None => break,
            },
        }
    }
    shared.state.record(|state| state.gateway.closed(id));
}
