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
//! the loop keeps it rather than asking the homeserver again. After a crash
//! the saved token is older than matrix-sdk's own, and the next sync from it
//! brings the unsaved events again, once anything newer has happened in the
//! bot's rooms (matrix-sdk skips a response whose token it already has).
//!
//! The first sync of a channel with no saved token starts from now: the
//! rooms' history is not read as answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::Driver;
use askgate_adapter::backoff::{backoff, retry_delay};
use askgate_core::channel::{ConversationKind, InboundError, InboundSink};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::UserId;
use matrix_sdk::sync::SyncResponse;
use matrix_sdk::{Client, RoomMemberships};
use serde_json::Value;
use tracing::{info, warn};

use crate::MatrixChannel;
use crate::decode::Update;
use crate::error::channel_error;

/// How long one `/sync` waits for events.
const SYNC_WAIT: Duration = Duration::from_secs(25);

/// The event type of an event matrix-sdk could not decrypt.
const ENCRYPTED: &str = "m.room.encrypted";

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
                        Err(error) => {
                            let error = channel_error(&error);
                            let pause = retry_delay(&error, failures);
                            warn!(channel = %name, %error, ?pause, "syncing with the homeserver failed; retrying");
                            pause
                        }
                    }
                }
                Err(error) => {
                    let pause = retry_delay(&error, failures);
                    warn!(channel = %name, %error, ?pause, "could not start the Matrix session; retrying");
                    pause
                }
            }
        };
        failures += 1;
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(pause.max(Duration::from_millis(100))) => {}
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
        match client.join_room_by_id(room_id).await {
            Ok(_) => info!(channel = %name, room = %room_id, "joined a room the bot was invited to"),
            Err(error) => {
                let error = channel_error(&error);
                warn!(channel = %name, room = %room_id, %error, "could not join a room the bot was invited to");
            }
        }
    }
    let mut backlog = Backlog {
        updates: VecDeque::new(),
        token: Some(response.next_batch),
    };
    if first {
        return backlog;
    }
    for (room_id, update) in &response.rooms.joined {
        let Some(room) = client.get_room(room_id) else {
            continue;
        };
        // A room the bot shares with one person is direct, whether or not
        // anyone marked it so (`m.direct`). The members are counted from the
        // room's state (the sync's `summary` counts come with lazy loading
        // only).
        let members = room
            .members_no_sync(RoomMemberships::ACTIVE)
            .await
            .map_or(usize::MAX, |members| members.len());
        let direct = room.is_direct().await.unwrap_or(false) || members <= 2;
        let kind = if direct {
            ConversationKind::Direct
        } else {
            ConversationKind::Group
        };
        for timeline_event in &update.timeline.events {
            let Ok(event) = serde_json::from_str::<Value>(timeline_event.raw().json().get()) else {
                continue;
            };
            if event.get("type").and_then(Value::as_str) == Some(ENCRYPTED) {
                let event_id = event.get("event_id").and_then(Value::as_str).unwrap_or_default();
                warn!(
                    channel = %name,
                    room = %room_id,
                    event = event_id,
                    "an event could not be decrypted (its room key never reached askgate's device); it is not read"
                );
                continue;
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
            backlog.updates.push_back(Update {
                room: room_id.to_string(),
                kind,
                sender_name,
                event,
            });
        }
    }
    backlog
}
