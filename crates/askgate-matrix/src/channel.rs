//! [`MatrixChannel`]: what Matrix can show, and sending prompts, ending
//! polls and editing messages, in each room's turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_adapter::SendLines;
use askgate_adapter::deliver::{deliver_parts, idempotency_key};
use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, Destination, MessageRef, Nudge, Outgoing};
use askgate_core::render::{ButtonLimits, FreeTextInput, Measure};
use askgate_core::{Capabilities, Presentation, Summary};
use async_trait::async_trait;
use matrix_sdk::ruma::{OwnedRoomId, OwnedTransactionId, RoomId, UserId};
use matrix_sdk::{Client, Room};
use serde_json::Value;
use tokio::sync::{OnceCell, watch};

use crate::config::MatrixSettings;
use crate::error::{channel_error, http_error};
use crate::limits;
use crate::render::{self, MESSAGE, POLL_END, POLL_START, Relation};
use crate::session::Session;

/// What people call the platform: summaries of questions answered here
/// name it ("Answered by Alice in Matrix").
pub const DISPLAY_NAME: &str = "Matrix";

/// How long resolving a person's direct room waits for the first sync,
/// which tells which rooms askgate already shares with them.
const FIRST_SYNC_WAIT: Duration = Duration::from_secs(30);

/// What Matrix can show: plain-text messages of [`limits::MESSAGE_TEXT`]
/// bytes ([`limits::measure`]), a one-question prompt as a poll (its
/// answers the options, then Other… and Skip), edits, and Other… answered
/// by replying to askgate's message; typed replies arrive; no private
/// notices (a refusal is a reply), no forms.
pub fn capabilities() -> Capabilities {
    Capabilities::text(limits::MESSAGE_TEXT)
        .with_measure(Measure::new(limits::measure))
        .with_buttons(ButtonLimits::new(
            limits::POLL_ANSWERS,
            limits::POLL_ANSWER_TEXT.max,
            limits::POLL_ANSWER_ID,
        ))
        .with_edits()
        .with_free_text(FreeTextInput::ForceReply)
}

/// A Matrix account as an askgate channel. Cheap to clone: clones share
/// the client, the send lines and what they learnt.
#[derive(Debug, Clone)]
pub struct MatrixChannel {
    settings: MatrixSettings,
    capabilities: Capabilities,
    /// The client (and the relay it reaches the homeserver through), built
    /// and its session restored on first use: a homeserver out of reach at
    /// start stops nothing.
    session: Arc<OnceCell<Session>>,
    /// Each room's messages in order, without holding up other rooms.
    lines: SendLines,
    /// The direct room of each person askgate wrote to.
    dms: Arc<Mutex<HashMap<String, OwnedRoomId>>>,
    /// `Some(false)` while the sync loop has not finished its first sync,
    /// `Some(true)` after; `None` without a sync loop.
    synced: Arc<watch::Sender<Option<bool>>>,
}

impl MatrixChannel {
    /// The channel of `settings`. Nothing is sent before it is used.
    pub fn new(settings: MatrixSettings) -> Self {
        Self {
            settings,
            capabilities: capabilities(),
            session: Arc::default(),
            lines: SendLines::default(),
            dms: Arc::default(),
            synced: Arc::new(watch::Sender::new(None)),
        }
    }

    /// The channel's settings.
    pub fn settings(&self) -> &MatrixSettings {
        &self.settings
    }

    /// The bot's own user id.
    pub fn user_id(&self) -> &str {
        &self.settings.user_id
    }

    /// The client, with the bot's session; built on first use.
    pub async fn client(&self) -> Result<&Client, ChannelError> {
        let session = self
            .session
            .get_or_try_init(|| crate::session::connect(&self.settings))
            .await?;
        Ok(&session.client)
    }

    /// Checks the session with `whoami`: who the bot is, on which
    /// homeserver.
    pub async fn check(&self) -> Result<String, ChannelError> {
        let client = self.client().await?;
        let me = client.whoami().await.map_err(|error| http_error(&error))?;
        if me.user_id.as_str() != self.settings.user_id {
            return Err(ChannelError::Rejected {
                reason: format!("the access token is {}'s, not {}'s", me.user_id, self.settings.user_id),
            });
        }
        let device = me
            .device_id
            .map(|device| format!(", device {device}"))
            .unwrap_or_default();
        Ok(format!("{} on {}{device}", me.user_id, self.settings.homeserver))
    }

    /// The sync loop's side: its first sync is under way (`false`) or done.
    pub(crate) fn set_synced(&self, synced: bool) {
        self.synced.send_replace(Some(synced));
    }

    /// Waits, within [`FIRST_SYNC_WAIT`], until the sync loop has synced
    /// once (at once without a sync loop).
    async fn first_sync(&self) {
        let mut synced = self.synced.subscribe();
        let _ = tokio::time::timeout(FIRST_SYNC_WAIT, synced.wait_for(|synced| *synced != Some(false))).await;
    }

    /// The room a destination's events go to: the room itself, which the
    /// bot joins if it was only invited; or the person's direct room,
    /// reused (one askgate shares with them and no one else) or opened
    /// (encrypted, as Element opens them).
    pub async fn room(&self, conversation: &str) -> Result<Room, ChannelError> {
        let client = self.client().await?;
        if let Ok(room_id) = <&RoomId>::try_from(conversation) {
            if let Some(room) = client.get_room(room_id)
                && room.state() == matrix_sdk::RoomState::Joined
            {
                return Ok(room);
            }
            return client
                .join_room_by_id(room_id)
                .await
                .map_err(|error| match channel_error(&error) {
                    ChannelError::Rejected { reason } => ChannelError::Rejected {
                        reason: format!("askgate is not in room {room_id}: invite the bot to it ({reason})"),
                    },
                    other => other,
                });
        }
        let user = <&UserId>::try_from(conversation).map_err(|_| ChannelError::Rejected {
            reason: format!("\"{conversation}\" is neither a Matrix room id nor a user id"),
        })?;
        let known = self
            .dms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(conversation)
            .cloned();
        if let Some(room) = known.and_then(|room| client.get_room(&room)) {
            return Ok(room);
        }
        self.first_sync().await;
        let room = match client.get_dm_room(user) {
            Some(room) => room,
            None => client.create_dm(user).await.map_err(|error| channel_error(&error))?,
        };
        self.dms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(conversation.to_owned(), room.room_id().to_owned());
        Ok(room)
    }

    /// Sends an event of `event_type` to `room` in its turn, with
    /// `transaction` as its transaction id when given (the homeserver
    /// answers a second send of one with the first's event: a retry never
    /// posts twice); the event's reference.
    pub(crate) async fn send(
        &self,
        room: Room,
        event_type: &'static str,
        content: Value,
        transaction: Option<String>,
    ) -> Result<MessageRef, ChannelError> {
        let conversation = room.room_id().to_string();
        self.lines
            .send(&conversation, move || {
                let (room, content, transaction) = (room.clone(), content.clone(), transaction.clone());
                async move { send_event(room, event_type, content, transaction).await }
            })
            .await
    }

    /// Sends an event to `room` now: for a caller that has the room's turn
    /// already ([`MatrixChannel::queue`]).
    pub(crate) async fn send_now(
        &self,
        room: Room,
        event_type: &'static str,
        content: Value,
    ) -> Result<MessageRef, ChannelError> {
        send_event(room, event_type, content, None).await
    }

    /// Queues `send` for `room`'s turn, and returns at once.
    pub(crate) fn queue(&self, room: &str, send: impl Future<Output = ()> + Send + 'static) {
        self.lines.queue(room, send);
    }
}

/// Sends one event with matrix-sdk (which encrypts it in an encrypted
/// room, sharing the room key with the room's devices first).
async fn send_event(
    room: Room,
    event_type: &'static str,
    content: Value,
    transaction: Option<String>,
) -> Result<MessageRef, ChannelError> {
    let mut send = room.send_raw(event_type, content);
    if let Some(transaction) = transaction {
        send = send.with_transaction_id(&OwnedTransactionId::from(transaction));
    }
    let response = send.await.map_err(|error| channel_error(&error))?.response;
    Ok(MessageRef {
        conversation: room.room_id().to_string(),
        message: response.event_id.to_string(),
    })
}

#[async_trait]
impl Channel for MatrixChannel {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn display_name(&self) -> &str {
        DISPLAY_NAME
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// A person's user id (`@alice:example.org`): the direct room askgate
    /// opens with them; a room id names no one.
    fn direct_person(&self, destination: &Destination) -> Option<String> {
        destination
            .conversation
            .starts_with('@')
            .then(|| destination.conversation.clone())
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        let room = match self.room(&outgoing.to.conversation).await {
            Ok(room) => room,
            Err(error) => return Err(DeliveryError::new(error, outgoing.sent.to_vec())),
        };
        let relation = Relation::at(outgoing.to);
        deliver_parts(outgoing, |index| {
            let room = room.clone();
            async move {
                let transaction = Some(idempotency_key(outgoing, index));
                match outgoing.prompt {
                    Presentation::Buttons(buttons) => {
                        self.send(room, POLL_START, render::poll(buttons, relation), transaction)
                            .await
                    }
                    Presentation::Text(_) => {
                        let part = outgoing.prompt.part_text(index);
                        self.send(room, MESSAGE, render::message(part, relation), transaction)
                            .await
                    }
                    other => Err(ChannelError::Rejected {
                        reason: format!("this adapter cannot show {other:?}"),
                    }),
                }
            }
        })
        .await
    }

    /// A poll is ended (`m.poll.end`, its text the finished prompt), which
    /// closes it in every client; a text prompt's first message is edited
    /// (`m.replace`) into the finished prompt.
    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        let Some(first) = delivery.messages.first() else {
            return Ok(());
        };
        let room = self.room(&first.conversation).await?;
        let text = render::finished_text(prompt.part_text(0), summary);
        let transaction = Some(format!("finish-{}", first.message));
        let sent = match prompt {
            Presentation::Buttons(_) => {
                self.send(room, POLL_END, render::poll_end(&first.message, &text), transaction)
                    .await
            }
            _ => {
                self.send(room, MESSAGE, render::edit(&first.message, &text), transaction)
                    .await
            }
        };
        sent.map(drop)
    }

    /// One message in the room (and thread) of `nudge.to`, a reply to
    /// `nudge.reply_to` when given, mentioning exactly `nudge.mention`.
    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        let relation = Relation {
            thread: nudge.to.thread.as_deref(),
            reply_to: nudge.reply_to.map(|message| message.message.as_str()),
        };
        let content = render::nudge(nudge.text, nudge.mention, relation)?;
        let conversation = nudge
            .reply_to
            .map_or(nudge.to.conversation.as_str(), |message| message.conversation.as_str());
        let sent = match self.room(conversation).await {
            Ok(room) => self.send(room, MESSAGE, content, None).await,
            Err(error) => Err(error),
        };
        askgate_adapter::nudge::logged(&self.settings.name, sent)
    }
}
