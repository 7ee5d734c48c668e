//! A person on Matrix, as the tests drive one: a matrix-sdk client logged
//! in to the test Synapse as a real device (its own keys, so it reads and
//! writes encrypted rooms), syncing in the background, joining every room
//! it is invited to, and keeping every event it sees, decrypted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_testkit::synapse::{Account, Synapse};
use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::api::client::room::create_room;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, RoomId};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// The poll events people's clients send and show (MSC3381's, as Element
/// does), written here from the proposal, not taken from the adapter.
pub(crate) const POLL_START: &str = "org.matrix.msc3381.poll.start";
/// A poll's end.
pub(crate) const POLL_END: &str = "org.matrix.msc3381.poll.end";
/// A vote.
pub(crate) const POLL_RESPONSE: &str = "org.matrix.msc3381.poll.response";

/// The events each room showed the person, oldest first.
type Seen = Arc<Mutex<HashMap<String, Vec<Value>>>>;

/// A person with a device of their own.
pub(crate) struct Person {
    pub(crate) client: Client,
    pub(crate) account: Account,
    seen: Seen,
    sync: JoinHandle<()>,
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl Person {
    /// A new user on `synapse` named `display_name`, logged in on a device
    /// of their own, syncing.
    pub(crate) async fn new(synapse: &Synapse, prefix: &str, display_name: &str) -> Self {
        let account = synapse.register(&Synapse::unique_localpart(prefix), false).await;
        let client = Client::builder()
            .homeserver_url(synapse.url())
            .build()
            .await
            .expect("a client");
        client
            .matrix_auth()
            .login_username(&account.user_id, &account.password)
            .initial_device_display_name(display_name)
            .send()
            .await
            .expect("the person logs in");
        client
            .account()
            .set_display_name(Some(display_name))
            .await
            .expect("the display name is set");
        // The first sync uploads the device's keys: others can encrypt for it.
        client.sync_once(SyncSettings::default()).await.expect("a first sync");
        let seen: Seen = Arc::default();
        let sync = tokio::spawn(sync(client.clone(), Arc::clone(&seen)));
        Self {
            client,
            account,
            seen,
            sync,
        }
    }

    /// The person's user id.
    pub(crate) fn id(&self) -> &str {
        &self.account.user_id
    }

    /// A room of the person's, with `invite` invited, encrypted or not;
    /// `muted`: only its creator may send in it.
    pub(crate) async fn create_room(&self, name: &str, invite: &[&str], encrypted: bool, muted: bool) -> OwnedRoomId {
        let mut request = create_room::v3::Request::new();
        request.name = Some(name.to_owned());
        request.invite = invite
            .iter()
            .map(|id| OwnedUserId::try_from(*id).expect("a user id"))
            .collect();
        let mut initial = Vec::new();
        if encrypted {
            initial.push(
                json!({"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}),
            );
        }
        request.initial_state = initial
            .into_iter()
            .map(|event| serde_json::from_value(event).expect("a state event"))
            .collect();
        if muted {
            request.power_level_content_override =
                Some(serde_json::from_value(json!({"events_default": 100})).expect("power levels"));
        }
        self.client
            .create_room(request)
            .await
            .expect("the room is created")
            .room_id()
            .to_owned()
    }

    /// Sends an event of `event_type` to `room`; its id.
    pub(crate) async fn send(&self, room: &str, event_type: &str, content: Value) -> String {
        let room_id = <&RoomId>::try_from(room).expect("a room id");
        let room = self.joined(room_id).await;
        room.send_raw(event_type, content)
            .await
            .expect("the event is sent")
            .response
            .event_id
            .to_string()
    }

    /// Whether the person is in `room`.
    pub(crate) fn is_in(&self, room: &str) -> bool {
        <&RoomId>::try_from(room)
            .ok()
            .and_then(|room_id| self.client.get_room(room_id))
            .is_some_and(|room| room.state() == matrix_sdk::RoomState::Joined)
    }

    /// Invites `user` to `room`, which the person is in.
    pub(crate) async fn invite(&self, room: &str, user: &str) {
        let room = self.joined(<&RoomId>::try_from(room).expect("a room id")).await;
        let user = OwnedUserId::try_from(user).expect("a user id");
        room.invite_user_by_id(&user).await.expect("the invitation is sent");
    }

    /// Leaves `room`.
    pub(crate) async fn leave(&self, room: &str) {
        let room = self.joined(<&RoomId>::try_from(room).expect("a room id")).await;
        room.leave().await.expect("the person leaves");
    }

    /// Votes for the answer `token` of poll `poll` in `room`, as a client
    /// does; the vote's id.
    pub(crate) async fn vote(&self, room: &str, poll: &str, token: &str) -> String {
        self.send(
            room,
            POLL_RESPONSE,
            json!({
                "m.relates_to": {"rel_type": "m.reference", "event_id": poll},
                POLL_RESPONSE: {"answers": [token]},
            }),
        )
        .await
    }

    /// Waits until the person is in `room` (an invitation accepted).
    pub(crate) async fn joined(&self, room_id: &RoomId) -> matrix_sdk::Room {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(room) = self.client.get_room(room_id)
                    && room.state() == matrix_sdk::RoomState::Joined
                {
                    return room;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the person joins the room")
    }

    /// Waits, at most `within`, for an event of any room that `found`
    /// picks: the room, and the event.
    #[allow(
        dead_code,
        reason = "the end-to-end test (tests/e2e/matrix.rs) uses it, the adapter's suites do not"
    )]
    pub(crate) async fn wait_anywhere(
        &self,
        within: Duration,
        found: impl Fn(&Value) -> bool,
    ) -> Option<(String, Value)> {
        tokio::time::timeout(within, async {
            loop {
                let rooms = self.seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
                for (room, events) in rooms {
                    if let Some(event) = events.into_iter().find(|event| found(event)) {
                        return (room, event);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .ok()
    }

    /// Every event `room` showed the person so far, oldest first.
    pub(crate) fn events(&self, room: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(room)
            .cloned()
            .unwrap_or_default()
    }

    /// Waits, at most `within`, for an event of `room` after event `after`
    /// that `found` picks.
    pub(crate) async fn wait_after(
        &self,
        room: &str,
        after: &str,
        within: Duration,
        found: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        tokio::time::timeout(within, async {
            loop {
                let events = self.events(room);
                if let Some(at) = events.iter().position(|event| event["event_id"] == json!(after))
                    && let Some(event) = events[at + 1..].iter().find(|event| found(event))
                {
                    return event.clone();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .ok()
    }

    /// Waits, at most `within`, until the person sees `user` join `room`:
    /// whether they did. A bot joins an invitation in its sync, after its
    /// device's keys are uploaded: only then can a message of an encrypted
    /// room be encrypted for it.
    pub(crate) async fn sees_join(&self, room: &str, user: &str, within: Duration) -> bool {
        self.wait_for(room, within, |seen| {
            seen["type"] == json!("m.room.member")
                && seen["state_key"] == json!(user)
                && seen["content"]["membership"] == json!("join")
        })
        .await
        .is_some()
    }

    /// Waits, at most `within`, for an event of `room` that `found` picks.
    pub(crate) async fn wait_for(&self, room: &str, within: Duration, found: impl Fn(&Value) -> bool) -> Option<Value> {
        tokio::time::timeout(within, async {
            loop {
                if let Some(event) = self.events(room).into_iter().find(|event| found(event)) {
                    return event;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .ok()
    }
}

/// Syncs until aborted: joins invitations, keeps every timeline event.
async fn sync(client: Client, seen: Seen) {
    loop {
        let settings = SyncSettings::default().timeout(Duration::from_millis(500));
        let Ok(response) = client.sync_once(settings).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        for room_id in response.rooms.invited.keys() {
            let _ = client.join_room_by_id(room_id).await;
        }
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        for (room_id, update) in &response.rooms.joined {
            let events = seen.entry(room_id.to_string()).or_default();
            for event in &update.timeline.events {
                if let Ok(event) = serde_json::from_str::<Value>(event.raw().json().get()) {
                    events.push(event);
                }
            }
        }
    }
}

/// The id of the event `event` relates to with `rel_type`.
pub(crate) fn related(event: &Value, rel_type: &str) -> Option<String> {
    let relates = &event["content"]["m.relates_to"];
    (relates["rel_type"] == json!(rel_type))
        .then(|| relates["event_id"].as_str().map(str::to_owned))
        .flatten()
}

/// The event `event` replies to.
pub(crate) fn reply_to(event: &Value) -> Option<String> {
    event["content"]["m.relates_to"]["m.in_reply_to"]["event_id"]
        .as_str()
        .map(str::to_owned)
}
