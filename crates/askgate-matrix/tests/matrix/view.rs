//! What people see of a room, read back from the homeserver through a
//! person's own device (`/messages`, decrypted there): a message with its
//! latest edit, a poll with its answers until it is ended.

use std::time::Duration;

use askgate_testkit::conformance::Shown;
use askgate_testkit::conformance::nudges::Posted;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::{RoomId, UInt};
use serde_json::{Value, json};

use crate::person::{POLL_END, POLL_START, Person, related, reply_to};

const TEXT: &str = "org.matrix.msc1767.text";

/// The room's latest events, oldest first, as `person` reads them: every
/// one decrypted (waiting, within a bound, for a room key still on its way).
pub(crate) async fn events(person: &Person, room: &str) -> Vec<Value> {
    let room_id = <&RoomId>::try_from(room).expect("a room id");
    let room = person.joined(room_id).await;
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let mut options = MessagesOptions::backward();
            options.limit = UInt::from(200_u32);
            let messages = room.messages(options).await.expect("the room's messages");
            let events: Vec<Value> = messages
                .chunk
                .iter()
                .rev()
                .filter_map(|event| serde_json::from_str(event.raw().json().get()).ok())
                .collect();
            if events.iter().all(|event| event["type"] != json!("m.room.encrypted")) {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    read.expect("every event of the room is decrypted by the person's device")
}

/// Event `message` of `events` as it shows now.
pub(crate) fn shown(events: &[Value], message: &str) -> Option<Shown> {
    let event = events.iter().find(|event| event["event_id"] == json!(message))?;
    let content = &event["content"];
    if event["type"] == json!(POLL_START) {
        let ended = events
            .iter()
            .find(|end| end["type"] == json!(POLL_END) && related(end, "m.reference").as_deref() == Some(message));
        if let Some(end) = ended {
            return Some(Shown {
                text: end["content"]["body"].as_str().unwrap_or_default().to_owned(),
                buttons: Vec::new(),
                mentions: mentions(&end["content"]).len(),
            });
        }
        let poll = &content[POLL_START];
        let buttons = poll["answers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|answer| {
                (
                    answer[TEXT].as_str().unwrap_or_default().to_owned(),
                    answer["id"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        return Some(Shown {
            text: poll["question"][TEXT].as_str().unwrap_or_default().to_owned(),
            buttons,
            mentions: mentions(content).len(),
        });
    }
    let edited = events
        .iter()
        .rfind(|edit| edit["sender"] == event["sender"] && related(edit, "m.replace").as_deref() == Some(message));
    let now = edited.map_or(content, |edit| &edit["content"]["m.new_content"]);
    Some(Shown {
        text: now["body"].as_str().unwrap_or_default().to_owned(),
        buttons: Vec::new(),
        mentions: mentions(now).len(),
    })
}

/// Whom a content notifies: its `m.mentions` user ids, and `@room`.
pub(crate) fn mentions(content: &Value) -> Vec<String> {
    let mut people: Vec<String> = content["m.mentions"]["user_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    if content["m.mentions"]["room"] == json!(true) {
        people.push("@room".into());
    }
    people
}

/// The messages `sender` posted in `events`, as `conformance::nudges` reads them.
pub(crate) fn posted(events: &[Value], sender: &str) -> Vec<Posted> {
    events
        .iter()
        .filter(|event| {
            event["sender"] == json!(sender)
                && event["type"] == json!("m.room.message")
                && related(event, "m.replace").is_none()
        })
        .map(|event| {
            let content = &event["content"];
            let in_thread_fallback = content["m.relates_to"]["is_falling_back"] == json!(true);
            Posted {
                message: event["event_id"].as_str().unwrap_or_default().to_owned(),
                reply_to: reply_to(event).filter(|_| !in_thread_fallback),
                text: content["body"].as_str().unwrap_or_default().to_owned(),
                mentions: mentions(content),
            }
        })
        .collect()
}
