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
use askgate_matrix::{Login, MatrixChannel, MatrixRuntime, MatrixSettings};
use askgate_testkit::synapse::Synapse;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::OwnedUserId;
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
        login: Login::Token(Secret::new("syt_not_a_token".into())),
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

/// Whether a person's client finds `device` of `user` signed by its owner's
/// cross-signing identity, as the homeserver serves their keys.
async fn signed_by_owner(synapse: &Synapse, user: &str, device: &str) -> bool {
    let alice = Person::new(synapse, "alice", "Alice").await;
    let user = OwnedUserId::try_from(user).unwrap();
    let encryption = alice.client.encryption();
    // A keys query for the bot: its devices and its identity.
    encryption.request_user_identity(&user).await.unwrap();
    let device = encryption
        .get_device(&user, device.into())
        .await
        .unwrap()
        .expect("Alice's client knows the bot's device");
    device.is_cross_signed_by_owner()
}

#[tokio::test]
async fn the_bot_s_device_is_signed_by_its_own_identity() {
    let synapse = Synapse::shared();
    let channel = bot(synapse).await;
    let client = channel.client().await.unwrap();
    // Made at the first start (with an access token: no password to give,
    // which the homeserver does not ask for a first identity).
    client.encryption().wait_for_e2ee_initialization_tasks().await;
    // A sync uploads the device's keys, if nothing did before.
    client
        .sync_once(SyncSettings::default().timeout(Duration::ZERO))
        .await
        .unwrap();
    let device = client.device_id().unwrap().to_string();
    assert!(signed_by_owner(synapse, channel.user_id(), &device).await);
}

/// The device in what `check` found (`@bot:hs on http://…, device ABC`).
fn device(found: &str) -> &str {
    found.rsplit_once("device ").map_or("", |(_, device)| device)
}

#[tokio::test]
async fn a_password_logs_in_once_and_every_start_after_is_the_same_device() {
    use std::os::unix::fs::PermissionsExt as _;
    let synapse = Synapse::shared();
    let account = synapse.register(&Synapse::unique_localpart("askgate"), false).await;
    let data = tempfile::tempdir().unwrap();
    let folder = data.path().join("channels").join("mx");
    let settings = |password: &str| MatrixSettings {
        name: "mx".into(),
        homeserver: synapse.url(),
        user_id: account.user_id.clone(),
        login: Login::Password(Secret::new(password.to_owned())),
        device_id: None,
        store_dir: Some(folder.clone()),
    };
    let logged_in = MatrixChannel::new(settings(&account.password));
    let first = logged_in.check().await.unwrap();
    assert!(!device(&first).is_empty(), "{first}");
    let client = logged_in.client().await.unwrap();
    client.encryption().wait_for_e2ee_initialization_tasks().await;
    assert!(
        signed_by_owner(synapse, &account.user_id, device(&first)).await,
        "the logged-in device is signed by the identity made with the password"
    );
    assert_ne!(
        device(&first),
        account.device_id,
        "askgate logged in as a device of its own"
    );
    let kept = folder.join("session.json");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the kept session is askgate's user's only");
    // Started again: the kept session, not a new login (the password is
    // not even asked).
    let again = MatrixChannel::new(settings("not the password")).check().await.unwrap();
    assert_eq!(device(&again), device(&first), "{again}");
    // A wrong password, where nothing is kept, is the admin's to fix.
    std::fs::remove_file(&kept).unwrap();
    let runtime = MatrixRuntime::new(Arc::new(MatrixChannel::new(settings("not the password"))));
    let Err(CheckError::Refused(problem)) = runtime.check().await else {
        panic!("a wrong password is refused");
    };
    assert_eq!(problem.key, "channels.mx.password");
    assert!(!problem.to_string().contains(&account.password), "{problem}");
}
