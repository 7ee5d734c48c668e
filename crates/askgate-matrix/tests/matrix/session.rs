//! The session and threads against a real Synapse: what `check-config`
//! says of the bot, a token the homeserver refuses, and a recipient's
//! thread.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::runtime::ChannelRuntime;
use askgate_adapter::{CheckError, Secret};
use askgate_core::channel::{Channel, ChannelError, Destination, Outgoing};
use askgate_core::render::TextPrompt;
use askgate_core::{Presentation, QuestionId};
use askgate_matrix::{MatrixChannel, MatrixRuntime, MatrixSettings};
use askgate_testkit::synapse::Synapse;
use serde_json::json;

use crate::conformance::bot;
use crate::person::Person;

#[tokio::test]
async fn the_check_says_who_the_bot_is_and_a_refused_token_is_the_admin_s_to_fix() {
    let synapse = Synapse::shared();
    let channel = bot(synapse).await;
    let user = channel.user_id().to_owned();
    let found = channel.check().await.unwrap();
    assert!(
        found.contains(&user) && found.contains(&synapse.url()),
        "who, on which homeserver: {found}"
    );
    let refused = MatrixChannel::new(MatrixSettings {
        name: "mx".into(),
        homeserver: synapse.url(),
        user_id: user,
        access_token: Secret::new("syt_not_a_token".into()),
        device_id: None,
        store_dir: None,
    });
    assert_eq!(refused.check().await.unwrap_err(), ChannelError::Unauthorized);
    let runtime = MatrixRuntime::new(Arc::new(refused));
    let Err(CheckError::Refused(problem)) = runtime.check().await else {
        panic!("a refused token is the admin's to fix");
    };
    assert_eq!(problem.key, "channels.mx.access_token");
    assert!(!problem.to_string().contains("syt_not_a_token"), "{problem}");
}

#[tokio::test]
async fn a_recipient_s_thread_gets_its_prompts() {
    let synapse = Synapse::shared();
    let channel = bot(synapse).await;
    let alice = Person::new(synapse, "alice", "Alice").await;
    let room = alice.create_room("Threads", &[channel.user_id()], false, false).await;
    channel.room(room.as_str()).await.unwrap();
    let thread_root = alice
        .send(
            room.as_str(),
            "m.room.message",
            json!({"msgtype": "m.text", "body": "Release 1.2"}),
        )
        .await;
    let question = QuestionId::parse("threaded").unwrap();
    let to = Destination {
        conversation: room.to_string(),
        thread: Some(thread_root.clone()),
    };
    let prompt = Presentation::Text(TextPrompt::new(vec!["In the thread?".into()]));
    let delivery = channel.deliver(&Outgoing::new(&question, &to, &prompt)).await.unwrap();
    let sent = &delivery.messages[0].message;
    let seen = alice
        .wait_for(room.as_str(), Duration::from_secs(20), |event| {
            event["event_id"] == json!(sent)
        })
        .await
        .expect("Alice sees the prompt");
    assert_eq!(seen["content"]["m.relates_to"]["rel_type"], json!("m.thread"));
    assert_eq!(seen["content"]["m.relates_to"]["event_id"], json!(thread_root));
    assert_eq!(seen["content"]["body"], json!("In the thread?"));
}
