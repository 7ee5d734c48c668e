//! The sync loop: `/sync` long-polls the homeserver; invitations are
//! accepted; each timeline event is taken by the shared driver (decoded,
//! handed to the engine, shown), and only once every event of a batch is
//! stored is the batch's sync token saved, so that a restart neither loses
//! nor replays an answer. matrix-sdk decrypts the events of encrypted rooms
//! as it processes the batch.
//!
//! An event the engine could not store stays at the head of the backlog,
//! with the rest of its batch behind it, and is taken again (with the
//! backoff) before anything newer: matrix-sdk hands a batch over once, so
//! the loop keeps it rather than asking the homeserver again.
//!
//! After a crash or a stop with events unsaved, askgate's token is older
//! than matrix-sdk's own, and a sync from it would bring nothing back
//! (matrix-sdk skips a response whose token it already has). So the first
//! sync after a start catches up instead: each joined room's events between
//! the two tokens are read with `/messages` (decrypted like a sync's) and
//! taken like a batch, and rooms the bot was invited to are joined.
//!
//! The first sync of a channel with no saved token starts from now: the
//! rooms' history is not read as answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::Driver;
use askgate_adapter::backoff::{backoff, retry_delay};
use askgate_core::channel::{ChannelError, ConversationKind, InboundError, InboundSink};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::{RoomId, UInt, UserId};
use matrix_sdk::store::{StateStoreDataKey, StateStoreDataValue};
use matrix_sdk::sync::SyncResponse;
use matrix_sdk::{Client, Room, RoomMemberships};
use serde_json::Value;
use tracing::{info, warn};

use crate::MatrixChannel;
use crate::decode::Update;
use crate::error::channel_error;

/// How long one `/sync` waits for events.
const SYNC_WAIT: Duration = Duration::from_secs(25);

/// The event type of an event matrix-sdk could not decrypt.
const ENCRYPTED: &str = "m.room.encrypted";

/// Events asked for in one `/messages` page while catching up.
const CATCH_UP_PAGE: u32 = 100;

/// Most pages read from one room while catching up: a bound on what a
/// start reads, far above what a crash between two saves leaves behind.
const CATCH_UP_PAGES: usize = 50;

/// A batch's events not yet stored, and the token to save once they are.
#[derive(Default)]
struct Backlog {
    updates: VecDeque<Update>,
    token: Option<String>,
}

/// Syncs until `shutdown` completes.
pub async fn run(channel: Arc<MatrixChannel>, sink: Arc<dyn InboundSink>, shutdown: impl Future<Output = ()>) {
    let name = askgate_core::Channel::name(channel.as_ref()).to_owned();
    let driver = Driver::new(Arc::clone(&channel), Arc::clone(&sink));
    channel.set_synced(false);
    tokio::pin!(shutdown);
    let mut cursor = sink.cursor(&name).await;
    info!(channel = %name, resumed = cursor.is_some(), "syncing with the Matrix homeserver");
    let mut backlog = Backlog::default();
    let mut caught_up = cursor.is_none();
    let mut failures = 0;
    loop {
        let pause = if backlog.token.is_some() {
            match drain(&driver, &mut backlog).await {
                Ok(token) => {
                    sink.save_cursor(&name, &token).await;
                    cursor = Some(token);
                    channel.set_synced(true);
                    failures = 0;
                    continue;
                }
                Err(error) => {
                    let pause = backoff(failures);
                    warn!(channel = %name, %error, ?pause, "an event could not be stored; taking it again");
                    pause
                }
            }
        } else {
            match channel.client().await {
                Ok(client) if !caught_up => {
                    let ours = cursor.clone().unwrap_or_default();
                    let caught = tokio::select! {
                        () = &mut shutdown => return,
                        caught = catch_up(&name, client, &ours) => caught,
                    };
                    match caught {
                        Ok(caught) => {
                            caught_up = true;
                            if let Some(caught) = caught {
                                backlog = caught;
                            }
                            continue;
                        }
                        Err(error) => retrying(
                            &name,
                            &channel_error(&error),
                            failures,
                            "catching up with the homeserver failed",
                        ),
                    }
                }
                Ok(client) => {
                    let settings = match &cursor {
                        Some(token) => SyncSettings::default().token(token.clone()).timeout(SYNC_WAIT),
                        None => SyncSettings::default().timeout(Duration::ZERO),
                    };
                    let synced = tokio::select! {
                        () = &mut shutdown => return,
                        synced = client.sync_once(settings) => synced,
                    };
                    match synced {
                        Ok(response) => {
                            backlog = batch(&name, client, response, cursor.is_none()).await;
                            continue;
                        }
                        Err(error) => retrying(
                            &name,
                            &channel_error(&error),
                            failures,
                            "syncing with the homeserver failed",
                        ),
                    }
                }
                Err(error) => retrying(&name, &error, failures, "could not start the Matrix session"),
            }
        };
        failures += 1;
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(pause.max(Duration::from_millis(100))) => {}
        }
    }
}

/// How long to pause after `failures` failures ended by `error` while
/// doing `what`, said in the log.
fn retrying(name: &str, error: &ChannelError, failures: u32, what: &str) -> Duration {
    let pause = retry_delay(error, failures);
    warn!(channel = %name, %error, ?pause, "{what}; retrying");
    pause
}

/// Joins `room`, which the bot was invited to.
async fn join(name: &str, client: &Client, room: &RoomId) {
    match client.join_room_by_id(room).await {
        Ok(_) => info!(channel = %name, %room, "joined a room the bot was invited to"),
        Err(error) => {
            let error = channel_error(&error);
            warn!(channel = %name, %room, %error, "could not join a room the bot was invited to");
        }
    }
}

/// Takes the backlog's events in turn, each removed once stored; the
/// batch's token once none is left.
async fn drain(driver: &Driver<MatrixChannel>, backlog: &mut Backlog) -> Result<String, InboundError> {
    while let Some(update) = backlog.updates.front() {
        driver.take(update).await?;
        backlog.updates.pop_front();
    }
    Ok(backlog.token.take().unwrap_or_default())
}

/// Accepts the batch's invitations, and lays out its timeline events in
/// order with what the room's state says of them (none on the first sync:
/// that is history).
async fn batch(name: &str, client: &Client, response: SyncResponse, first: bool) -> Backlog {
    for room_id in response.rooms.invited.keys() {
        join(name, client, room_id).await;
    }
    let mut backlog = Backlog {
        updates: VecDeque::new(),
        token: Some(response.next_batch),
    };
    if first {
        return backlog;
    }
    for (room_id, joined) in &response.rooms.joined {
        let Some(room) = client.get_room(room_id) else {
            continue;
        };
        let kind = kind(&room).await;
        for event in &joined.timeline.events {
            backlog.updates.extend(update(name, &room, kind, event).await);
        }
    }
    backlog
}

/// Joins the rooms the bot was invited to and, when matrix-sdk's sync token
/// is ahead of askgate's `ours`, lays out every joined room's events between
/// the two, with matrix-sdk's token to save once they are stored. `None`
/// when there is nothing to catch up on.
async fn catch_up(name: &str, client: &Client, ours: &str) -> Result<Option<Backlog>, matrix_sdk::Error> {
    for room in client.invited_rooms() {
        join(name, client, room.room_id()).await;
    }
    let Some(StateStoreDataValue::SyncToken(theirs)) =
        client.state_store().get_kv_data(StateStoreDataKey::SyncToken).await?
    else {
        return Ok(None);
    };
    if theirs == ours {
        return Ok(None);
    }
    let mut backlog = Backlog {
        updates: VecDeque::new(),
        token: Some(theirs.clone()),
    };
    for room in client.joined_rooms() {
        let kind = kind(&room).await;
        let mut from = Some(ours.to_owned());
        for _ in 0..CATCH_UP_PAGES {
            let mut options = MessagesOptions::forward().from(from.as_deref());
            options.to = Some(theirs.clone());
            options.limit = UInt::from(CATCH_UP_PAGE);
            let page = room.messages(options).await?;
            for event in &page.chunk {
                backlog.updates.extend(update(name, &room, kind, event).await);
            }
            if page.chunk.is_empty() || page.end.is_none() {
                break;
            }
            from = page.end;
        }
    }
    info!(channel = %name, events = backlog.updates.len(), "caught up with the events a stop left unsaved");
    Ok(Some(backlog))
}

/// Whether `room` is a direct conversation: a room the bot shares with one
/// person is, whether or not anyone marked it so (`m.direct`). The members
/// are counted from the room's state (the sync's `summary` counts come with
/// lazy loading only).
async fn kind(room: &Room) -> ConversationKind {
    let members = room
        .members_no_sync(RoomMemberships::ACTIVE)
        .await
        .map_or(usize::MAX, |members| members.len());
    if room.is_direct().await.unwrap_or(false) || members <= 2 {
        ConversationKind::Direct
    } else {
        ConversationKind::Group
    }
}

/// One timeline event of `room`, with what the room's state says of its
/// sender; `None` for one that is not JSON or could not be decrypted.
async fn update(name: &str, room: &Room, kind: ConversationKind, timeline_event: &TimelineEvent) -> Option<Update> {
    let event = serde_json::from_str::<Value>(timeline_event.raw().json().get()).ok()?;
    if event.get("type").and_then(Value::as_str) == Some(ENCRYPTED) {
        let event_id = event.get("event_id").and_then(Value::as_str).unwrap_or_default();
        warn!(
            channel = %name,
            room = %room.room_id(),
            event = event_id,
            "an event could not be decrypted (its room key never reached askgate's device); it is not read"
        );
        return None;
    }
    let sender_name = match event.get("sender").and_then(Value::as_str).map(UserId::parse) {
        Some(Ok(sender)) => room
            .get_member_no_sync(&sender)
            .await
            .ok()
            .flatten()
            .and_then(|member| member.display_name().map(str::to_owned)),
        _ => None,
    };
    Some(Update {
        room: room.room_id().to_string(),
        kind,
        sender_name,
        event,
    })
}
