//! A stop with events unsaved: matrix-sdk has taken the batch (its sync
//! token moved on) but askgate's store had not, so askgate's token is the
//! older one. The next start must take those events, with nothing newer
//! happening in the room to bring them, and take each once.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_adapter::Secret;
use askgate_core::channel::{Destination, InboundError, InboundEvent, InboundKind, InboundSink, MessageRef, Reaction};
use askgate_core::{Locale, QuestionId};
use askgate_matrix::{Login, MatrixChannel, MatrixSettings, sync};
use askgate_testkit::synapse::Synapse;
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::oneshot;

use crate::person::Person;

/// A store that keeps typed texts and the cursor, and fails while `fail`.
#[derive(Default)]
struct Store {
    fail: AtomicBool,
    /// Every text offered, stored or not: (text, stored).
    offered: Mutex<Vec<(String, bool)>>,
    cursor: Mutex<Option<String>>,
}

impl Store {
    fn stored(&self, text: &str) -> usize {
        let offered = self.offered.lock().unwrap();
        offered.iter().filter(|(seen, stored)| seen == text && *stored).count()
    }

    fn offered(&self, text: &str) -> bool {
        self.offered.lock().unwrap().iter().any(|(seen, _)| seen == text)
    }

    async fn until(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(tokio::time::Instant::now() < deadline, "{what} within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[async_trait]
impl InboundSink for Store {
    async fn handle(&self, _channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
        let InboundKind::TextReply { text, .. } = event.kind else {
            return Ok(Reaction::Nothing);
        };
        let stored = !self.fail.load(Ordering::SeqCst);
        self.offered.lock().unwrap().push((text, stored));
        if stored {
            Ok(Reaction::Nothing)
        } else {
            Err(InboundError::Unavailable {
                reason: "the test made the store fail".into(),
                notice: Locale::En.chrome().not_saved().to_owned(),
            })
        }
    }

    async fn attach(&self, _channel: &str, _question: &QuestionId, _message: MessageRef) {}

    async fn cursor(&self, _channel: &str) -> Option<String> {
        self.cursor.lock().unwrap().clone()
    }

    async fn save_cursor(&self, _channel: &str, cursor: &str) {
        *self.cursor.lock().unwrap() = Some(cursor.to_owned());
    }

    fn stranger(&self, _channel: &str, _destination: &Destination) -> Option<Locale> {
        None
    }
}

#[tokio::test]
async fn events_a_stop_left_unsaved_are_taken_at_the_next_start_once() {
    let synapse = Synapse::shared();
    let account = synapse.register(&Synapse::unique_localpart("askgate"), false).await;
    let data = tempfile::tempdir().unwrap();
    let channel = || {
        Arc::new(MatrixChannel::new(MatrixSettings {
            name: "mx".into(),
            homeserver: synapse.url(),
            user_id: account.user_id.clone(),
            login: Login::Token(Secret::new(account.access_token.clone())),
            device_id: Some(account.device_id.clone()),
            store_dir: Some(data.path().join("mx")),
        }))
    };
    let store = Arc::new(Store::default());
    let alice = Person::new(synapse, "alice", "Alice").await;

    let (stop, stopped) = oneshot::channel::<()>();
    let first = tokio::spawn(sync::run(channel(), store.clone(), async {
        let _ = stopped.await;
    }));
    let room = alice.create_room("Restart", &[&account.user_id], true, false).await;
    // Sent before the bot's keys are up, the first message would be
    // encrypted for none of its devices (it timed out once under load).
    assert!(
        alice
            .sees_join(room.as_str(), &account.user_id, Duration::from_secs(30))
            .await,
        "the bot joins the room it is invited to"
    );
    let text = |body: &str| json!({"msgtype": "m.text", "body": body});
    alice
        .send(room.as_str(), "m.room.message", text("before the stop"))
        .await;
    store
        .until("the bot joins and stores a message", |s| {
            s.stored("before the stop") == 1
        })
        .await;

    // The store fails: matrix-sdk has the batch, askgate's token stays.
    store.fail.store(true, Ordering::SeqCst);
    let cursor = store.cursor.lock().unwrap().clone();
    alice
        .send(room.as_str(), "m.room.message", text("unsaved at the stop"))
        .await;
    store
        .until("the message is offered and not stored", |s| {
            s.offered("unsaved at the stop")
        })
        .await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the loop stops")
        .unwrap();
    assert_eq!(*store.cursor.lock().unwrap(), cursor, "nothing unsaved was passed over");

    // Started again, with nothing newer in the room: the message is taken.
    store.fail.store(false, Ordering::SeqCst);
    let (stop, stopped) = oneshot::channel::<()>();
    let second = tokio::spawn(sync::run(channel(), store.clone(), async {
        let _ = stopped.await;
    }));
    store
        .until("the unsaved message is taken after the start", |s| {
            s.stored("unsaved at the stop") == 1
        })
        .await;
    assert_ne!(*store.cursor.lock().unwrap(), cursor, "the token moves past it");
    // And once only: what followed (a sync from the new token) brings
    // neither it nor the message stored before the stop again.
    alice
        .send(room.as_str(), "m.room.message", text("after the start"))
        .await;
    store
        .until("a newer message is taken", |s| s.stored("after the start") == 1)
        .await;
    assert_eq!(store.stored("unsaved at the stop"), 1);
    assert_eq!(store.stored("before the stop"), 1);
    stop.send(()).unwrap();
    second.await.unwrap();
}
