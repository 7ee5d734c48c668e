//! The Synapse harness (`askgate_testkit::synapse`) runs a real Matrix
//! homeserver: two users it registers share a room and a message over the
//! client-server API, and a wrong password is refused as Matrix refuses it.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use askgate_testkit::synapse::{Account, Synapse};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Long enough for anything Synapse does here; the tests wait for events, not time.
const WAIT: Duration = Duration::from_secs(10);

/// A request as `account`, which must succeed: its JSON answer.
async fn call(synapse: &Synapse, account: &Account, method: Method, path: &str, body: Option<Value>) -> Value {
    let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let mut request = client
        .request(method.clone(), format!("{}{path}", synapse.url()))
        .bearer_auth(&account.access_token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{method} {path}: {answer}");
    answer
}

#[tokio::test]
async fn synapse_carries_a_message_between_two_users_and_refuses_a_wrong_password() {
    let synapse = Synapse::shared();
    let alice = synapse.register(&Synapse::unique_localpart("alice"), true).await;
    let bob = synapse.register(&Synapse::unique_localpart("bob"), false).await;
    assert!(alice.user_id.ends_with(":localhost"), "{alice:?}");
    let admin = format!("/_synapse/admin/v1/users/{}/admin", alice.user_id);
    assert_eq!(call(synapse, &alice, Method::GET, &admin, None).await["admin"], true);

    let created = json!({ "invite": [bob.user_id], "preset": "private_chat" });
    let room = call(
        synapse,
        &alice,
        Method::POST,
        "/_matrix/client/v3/createRoom",
        Some(created),
    )
    .await;
    let room = room["room_id"].as_str().unwrap().to_owned();
    let join = format!("/_matrix/client/v3/join/{room}");
    call(synapse, &bob, Method::POST, &join, Some(json!({}))).await;
    let synced = call(synapse, &bob, Method::GET, "/_matrix/client/v3/sync?timeout=0", None).await;
    let mut since = synced["next_batch"].as_str().unwrap().to_owned();

    let send_path = format!("/_matrix/client/v3/rooms/{room}/send/m.room.message/txn-1");
    let text = json!({ "msgtype": "m.text", "body": "Deploy?" });
    let sent = call(synapse, &alice, Method::PUT, &send_path, Some(text)).await;
    let event_id = sent["event_id"].as_str().unwrap();

    let deadline = Instant::now() + WAIT;
    let seen = loop {
        assert!(Instant::now() < deadline, "bob never saw {event_id} in {room}");
        let path = format!("/_matrix/client/v3/sync?since={since}&timeout=2000");
        let synced = call(synapse, &bob, Method::GET, &path, None).await;
        let timeline = &synced["rooms"]["join"][&room]["timeline"]["events"];
        let event = timeline
            .as_array()
            .into_iter()
            .flatten()
            .find(|event| event["event_id"] == event_id);
        if let Some(event) = event {
            break event.clone();
        }
        synced["next_batch"].as_str().unwrap().clone_into(&mut since);
    };
    assert_eq!(seen["sender"], alice.user_id.as_str());
    assert_eq!(seen["type"], "m.room.message");
    assert_eq!(seen["content"]["body"], "Deploy?");

    let refused = synapse.try_login(&alice.user_id, "not-the-password").await.unwrap_err();
    assert_eq!(
        (refused.status, refused.errcode.as_str()),
        (403, "M_FORBIDDEN"),
        "{refused}"
    );
    let again = synapse.login(&alice.user_id, &alice.password).await;
    assert_eq!(again.user_id, alice.user_id);
    assert_ne!(again.device_id, alice.device_id, "a login is a new device");
}
