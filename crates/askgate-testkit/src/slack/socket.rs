//! Socket Mode: a WebSocket server (tokio-tungstenite, JSON text frames) on
//! a loopback port of its own. `apps.connections.open` issues a single-use
//! ticket; a connection with it gets `hello`; deliveries go out as
//! envelopes (`events_api`, `interactive`) on the newest connection not told
//! to disconnect, and the app acknowledges each with `{"envelope_id": …}`
//! (and a `payload` where the envelope accepts one). An event not
//! acknowledged in time, or whose connection closed first, goes out again
//! (`retry_attempt` + 1, `retry_reason` `timeout`), up to three retries; an
//! interaction is not retried, as on Slack (the person sees an error).
//! `disconnect` is sent on demand; the connection then closes when the app
//! has connected again, or after a grace period.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use super::state::{Mode, Shared, State};
use super::types::{Attempt, DeliveryKind, DeliveryStatus, Direction, SocketConnection, SocketFrame, Via};
use super::{APP_ID, MAX_RETRIES};

/// How often the delivery task looks for timeouts.
const TICK: Duration = Duration::from_millis(20);
/// The host Slack names in `debug_info`.
const HOST: &str = "applink-askgate-fake-1";

/// What a connection's task is told to do.
#[derive(Debug)]
pub(crate) enum Out {
    Frame(String),
    Close,
    Drop,
}

/// One connection, as the state knows it.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) info: SocketConnection,
    tx: Option<UnboundedSender<Out>>,
    /// When it was told to disconnect.
    draining_since: Option<Instant>,
}

/// Socket Mode's part of the state.
#[derive(Debug, Default)]
pub(crate) struct SocketState {
    pub(crate) connections: Vec<Conn>,
    /// Issued tickets, and whether each was used.
    tickets: HashMap<String, bool>,
    pub(crate) frames: Vec<SocketFrame>,
}

impl SocketState {
    /// A fresh ticket for a connection URL.
    pub(crate) fn issue_ticket(&mut self, ticket: String) {
        self.tickets.insert(ticket, false);
    }

    /// Uses a ticket; false if it was never issued or already used.
    fn redeem(&mut self, ticket: &str) -> bool {
        match self.tickets.get_mut(ticket) {
            Some(used) if !*used => {
                *used = true;
                true
            }
            _ => false,
        }
    }

    /// The connection new envelopes go to: the newest open one not told to
    /// disconnect.
    pub(crate) fn live(&self) -> Option<usize> {
        self.connections
            .iter()
            .rposition(|conn| !conn.info.closed && conn.draining_since.is_none())
    }

    fn open_count(&self) -> usize {
        self.connections.iter().filter(|conn| !conn.info.closed).count()
    }

    fn send(&mut self, connection: usize, frame: Value) {
        if let Some(tx) = self.connections.get(connection).and_then(|conn| conn.tx.as_ref()) {
            let _ = tx.send(Out::Frame(frame.to_string()));
        }
        self.frames.push(SocketFrame {
            connection,
            direction: Direction::Sent,
            json: frame,
        });
    }

    fn tell(&mut self, connection: usize, out: Out) {
        if let Some(conn) = self.connections.get_mut(connection) {
            if let Some(tx) = conn.tx.take() {
                let _ = tx.send(out);
            }
            conn.info.closed = true;
        }
    }

    /// Sends `disconnect` on every open connection not yet told; returns how many.
    pub(crate) fn disconnect(&mut self, reason: &str, now: Instant) -> usize {
        let told: Vec<usize> = (0..self.connections.len())
            .filter(|&at| !self.connections[at].info.closed && self.connections[at].draining_since.is_none())
            .collect();
        for &at in &told {
            self.send(
                at,
                json!({ "type": "disconnect", "reason": reason, "debug_info": { "host": HOST } }),
            );
            let conn = &mut self.connections[at];
            conn.draining_since = Some(now);
            conn.info.disconnect_reason = Some(reason.to_owned());
        }
        told.len()
    }

    /// Drops every open connection without a close frame; returns how many.
    pub(crate) fn drop_all(&mut self) -> usize {
        let open: Vec<usize> = (0..self.connections.len())
            .filter(|&at| !self.connections[at].info.closed)
            .collect();
        for &at in &open {
            self.tell(at, Out::Drop);
        }
        open.len()
    }
}

impl State {
    fn socket_open(&mut self, ticket: String, tx: UnboundedSender<Out>, now: Instant) -> usize {
        let id = self.socket.connections.len();
        self.socket.connections.push(Conn {
            info: SocketConnection {
                id,
                ticket,
                opened: now,
                closed: false,
                disconnect_reason: None,
            },
            tx: Some(tx),
            draining_since: None,
        });
        let count = self.socket.open_count();
        self.socket.send(
            id,
            json!({
                "type": "hello",
                "num_connections": count,
                "debug_info": { "host": HOST, "build_number": 1, "approximate_connection_time": 18_060 },
                "connection_info": { "app_id": APP_ID },
            }),
        );
        // The app has connected again: the connections told to disconnect go.
        let draining: Vec<usize> = (0..id)
            .filter(|&at| {
                !self.socket.connections[at].info.closed && self.socket.connections[at].draining_since.is_some()
            })
            .collect();
        for at in draining {
            self.socket.tell(at, Out::Close);
        }
        self.pump_socket(now);
        id
    }

    fn socket_closed(&mut self, connection: usize, now: Instant) {
        if let Some(conn) = self.socket.connections.get_mut(connection) {
            conn.info.closed = true;
            conn.tx = None;
        }
        self.pump_socket(now);
    }

    fn socket_text(&mut self, connection: usize, text: &str, now: Instant) {
        let json = serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        self.socket.frames.push(SocketFrame {
            connection,
            direction: Direction::Received,
            json: json.clone(),
        });
        if let Some(envelope_id) = json.get("envelope_id").and_then(Value::as_str) {
            let payload = json.get("payload").filter(|payload| !payload.is_null()).cloned();
            self.socket_ack(envelope_id, payload, now);
        }
    }

    fn socket_ack(&mut self, envelope_id: &str, payload: Option<Value>, now: Instant) {
        let ack_timeout = self.config.ack_timeout;
        let Some(index) = self.deliveries.iter().position(|delivery| {
            delivery
                .record
                .attempts
                .iter()
                .any(|attempt| matches!(&attempt.via, Via::Socket { envelope_id: id, .. } if id == envelope_id))
        }) else {
            return;
        };
        let delivery = &mut self.deliveries[index];
        if matches!(delivery.record.status, DeliveryStatus::Acked { .. }) {
            return;
        }
        let late = matches!(delivery.record.status, DeliveryStatus::Failed(_))
            || delivery
                .sent_at
                .is_some_and(|sent| now.duration_since(sent) > ack_timeout);
        delivery.record.status = DeliveryStatus::Acked { payload, late };
        delivery.sent_at = None;
        self.settled(index);
    }

    /// Sends what can go out by Socket Mode now, retries what timed out or
    /// lost its connection, and closes connections past their grace.
    /// Returns whether anything changed.
    pub(crate) fn pump_socket(&mut self, now: Instant) -> bool {
        let mut changed = false;
        let ack_timeout = self.config.ack_timeout;
        for index in 0..self.deliveries.len() {
            let delivery = &mut self.deliveries[index];
            if delivery.record.status == DeliveryStatus::AwaitingAck
                && let (Some(connection), Some(sent)) = (delivery.connection, delivery.sent_at)
            {
                let closed = self.socket.connections[connection].info.closed;
                let timed_out = now.duration_since(sent) > ack_timeout;
                if closed || timed_out {
                    changed = true;
                    delivery.connection = None;
                    delivery.sent_at = None;
                    let why = if timed_out {
                        format!("no acknowledgement within {ack_timeout:?}")
                    } else {
                        "the connection closed before the acknowledgement".to_owned()
                    };
                    if delivery.record.kind == DeliveryKind::Interaction {
                        delivery.record.status = DeliveryStatus::Failed(why);
                        self.settled(index);
                    } else if delivery.next_retry >= MAX_RETRIES {
                        delivery.record.status = DeliveryStatus::Failed(format!("{why}, after {MAX_RETRIES} retries"));
                    } else {
                        delivery.next_retry += 1;
                        "timeout".clone_into(&mut delivery.retry_reason);
                        delivery.record.status = DeliveryStatus::Queued;
                    }
                }
            }
            if self.deliveries[index].record.status == DeliveryStatus::Queued
                && self.mode.as_ref().is_none_or(|mode| *mode == Mode::Socket)
                && let Some(connection) = self.socket.live()
            {
                self.send_envelope(index, connection, now);
                changed = true;
            }
        }
        let grace = self.config.disconnect_grace;
        let expired: Vec<usize> = (0..self.socket.connections.len())
            .filter(|&at| {
                let conn = &self.socket.connections[at];
                !conn.info.closed
                    && conn
                        .draining_since
                        .is_some_and(|since| now.duration_since(since) > grace)
            })
            .collect();
        for at in expired {
            self.socket.tell(at, Out::Close);
            changed = true;
        }
        changed
    }

    fn send_envelope(&mut self, index: usize, connection: usize, now: Instant) {
        let envelope_id = self.envelope_id();
        let delivery = &mut self.deliveries[index];
        let mut frame = json!({
            "envelope_id": envelope_id,
            "payload": delivery.record.payload,
            "type": match delivery.record.kind {
                DeliveryKind::Event => "events_api",
                DeliveryKind::Interaction => "interactive",
            },
            "accepts_response_payload": delivery.accepts_response_payload,
        });
        if delivery.record.kind == DeliveryKind::Event {
            frame["retry_attempt"] = json!(delivery.next_retry);
            frame["retry_reason"] = json!(delivery.retry_reason);
        }
        delivery.record.attempts.push(Attempt {
            at: now,
            retry: delivery.next_retry,
            via: Via::Socket {
                connection,
                envelope_id,
            },
        });
        delivery.record.status = DeliveryStatus::AwaitingAck;
        delivery.sent_at = Some(now);
        delivery.connection = Some(connection);
        if let Some(trigger) = delivery.trigger.clone()
            && let Some(trigger) = self.triggers.get_mut(&trigger)
        {
            trigger.sent.get_or_insert(now);
        }
        self.socket.send(connection, frame);
    }

    /// A fresh envelope id, shaped as Slack's (a UUID).
    #[allow(clippy::cast_possible_truncation)]
    fn envelope_id(&mut self) -> String {
        let n = u128::from(self.number());
        let mixed = n.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (mixed >> 96) as u32,
            (mixed >> 80) as u16,
            (mixed >> 68) as u16 & 0xfff,
            (mixed >> 52) as u16 & 0xfff,
            (mixed as u64) & 0xffff_ffff_ffff,
        )
    }
}

/// Accepts connections and runs the delivery clock until aborted; aborting
/// it drops every connection.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let mut posts = JoinSet::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let woken = shared.wake.notified();
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors, most likely: wait rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            Some(_) = posts.join_next(), if !posts.is_empty() => {}
            () = woken => {}
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        let (changed, due) = {
            let mut state = shared.state.lock();
            let changed = state.pump_socket(now);
            (changed, state.due_http_interactions(now))
        };
        if changed || !due.is_empty() {
            shared.state.notify();
        }
        for post in due {
            posts.spawn(super::http::post_interaction(Arc::clone(&shared), post));
        }
    }
}

/// One WebSocket connection: the handshake (its ticket checked), `hello`,
/// then the app's frames into the state and the state's frames out, in order.
async fn connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut ticket = None;
    // tungstenite's handshake callback fixes the error type.
    #[allow(clippy::result_large_err)]
    let check_ticket = |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
        let query = request.uri().query().unwrap_or_default();
        let given = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("ticket="))
            .unwrap_or_default()
            .to_owned();
        if request.uri().path().starts_with("/link") && shared.state.lock().socket.redeem(&given) {
            ticket = Some(given);
            Ok(response)
        } else {
            let mut refused = ErrorResponse::new(Some("invalid or used ticket".to_owned()));
            *refused.status_mut() = StatusCode::UNAUTHORIZED;
            Err(refused)
        }
    };
    let Ok(socket) = tokio_tungstenite::accept_hdr_async(stream, check_ticket).await else {
        return;
    };
    let ticket = ticket.unwrap_or_default();
    let (tx, mut rx) = unbounded_channel();
    let id = shared.change(|state| state.socket_open(ticket, tx, Instant::now()));
    let (mut sink, mut frames) = socket.split();
    loop {
        tokio::select! {
            frame = frames.next() => match frame {
                Some(Ok(Message::Text(text))) => shared.change(|state| state.socket_text(id, &text, Instant::now())),
                Some(Ok(Message::Binary(bytes))) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    shared.change(|state| state.socket_text(id, &text, Instant::now()));
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
                Some(Out::Close) => {
                    let _ = sink.send(Message::Close(None)).await;
                    break;
                }
                // Dropping the socket ends the TCP connection without a close frame.
                Some(Out::Drop) | None => break,
            },
        }
    }
    shared.change(|state| state.socket_closed(id, Instant::now()));
}
