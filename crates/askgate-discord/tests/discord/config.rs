//! `type = "discord"` in askgate's configuration: the channel's keys and its
//! recipients' addressing, each problem reported with its key.

use askgate_adapter::config::{AdapterKind, ConfigCheck, ServerContext};
use askgate_discord::Discord;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap_or_else(|error| panic!("{error}"))
}

fn keys(check: &ConfigCheck<'_>) -> Vec<String> {
    check.problems().iter().map(|p| p.key.clone()).collect()
}

const PUBLIC_KEY: &str = "4f8a2c1d5e6b7a8f9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";

#[test]
fn gateway_is_the_default_and_interactions_need_a_public_key_and_url() {
    let env = |name: &str| (name == "DC").then(|| "MTIz.secret-bot-token".to_owned());
    let mut check = ConfigCheck::new(&env);
    let gateway = Discord
        .channel(&mut check, "dc", table("token = \"${DC}\""), ServerContext::default())
        .expect("valid");
    assert_eq!((gateway.name(), gateway.kind()), ("dc", "discord"));
    assert!(
        !format!("{gateway:?}").contains("secret-bot-token"),
        "the token is never printed"
    );
    let with_key = format!("token = \"${{DC}}\"\nmode = \"interactions\"\npublic_key = \"{PUBLIC_KEY}\"");
    assert!(
        Discord
            .channel(
                &mut check,
                "http",
                table(&with_key),
                ServerContext::new(Some("https://askgate.example.com"))
            )
            .is_some()
    );
    assert!(check.problems().is_empty(), "{:?}", check.problems());
}

#[test]
fn every_channel_problem_is_reported_with_its_key() {
    let env = |_: &str| None;
    let mut check = ConfigCheck::new(&env);
    let bad = table("mode = \"interactions\"\npublic_key = \"not-hex\"\nextra = 1");
    assert!(
        Discord
            .channel(&mut check, "dc", bad, ServerContext::default())
            .is_none()
    );
    let odd = table("token = \"t\"\nmode = \"webhook\"\napi_url = \"ftp://x\"");
    assert!(
        Discord
            .channel(&mut check, "dc2", odd, ServerContext::default())
            .is_none()
    );
    assert_eq!(
        keys(&check),
        [
            "channels.dc.extra",
            "channels.dc.token",
            "channels.dc.mode",
            "channels.dc.public_key",
            "channels.dc2.mode",
            "channels.dc2.api_url"
        ]
    );
}

#[test]
fn a_recipient_is_a_user_or_a_channel_with_its_answerers() {
    let env = |_: &str| None;
    let mut check = ConfigCheck::new(&env);
    let bob = Discord
        .recipient(&mut check, "bob", table("user_id = \"123456789012345678\""))
        .expect("a user");
    assert_eq!(bob.destination.conversation, "user:123456789012345678");
    let release = Discord
        .recipient(
            &mut check,
            "release",
            table("channel_id = 223456789012345678\nthread_id = \"3\"\nanswerers = [\"1\", 2]"),
        )
        .expect("a channel with answerers");
    assert_eq!(
        (
            release.destination.conversation.as_str(),
            release.destination.thread.as_deref()
        ),
        ("223456789012345678", Some("3"))
    );
    assert_eq!(release.answerers, ["1", "2"]);
    assert!(Discord.recipient(&mut check, "open", table("channel_id = 5")).is_none());
    assert!(
        Discord
            .recipient(&mut check, "both", table("channel_id = 5\nuser_id = 6"))
            .is_none()
    );
    assert!(
        Discord
            .recipient(&mut check, "name", table("user_id = \"@bob\""))
            .is_none()
    );
    assert_eq!(
        keys(&check),
        [
            "recipients.open.answerers",
            "recipients.both.user_id",
            "recipients.name.user_id",
            "recipients.name.user_id"
        ]
    );
}

#[tokio::test]
async fn the_recipient_block_told_to_a_stranger_configures_that_conversation() {
    use askgate_core::channel::ConversationKind::{Direct, Group};
    use askgate_discord::rest::Rest;
    use askgate_testkit::conformance::introduce::{greeting, the_block_configures_its_conversation as configures};
    let channel = askgate_discord::DiscordChannel::new("chat", Rest::new("unused", "http://127.0.0.1:9"), true);
    let alice = ("80351110224678912", "Alice");
    // A DM is addressed by the person: askgate opens the DM itself.
    let dm = configures(
        &Discord,
        &channel,
        &greeting(Direct, "1110000000000000001", None, alice),
    );
    assert!(dm.ends_with("user_id = \"80351110224678912\""), "{dm}");
    // A server channel or a thread (a channel of its own) by its id.
    let room = configures(&Discord, &channel, &greeting(Group, "1110000000000000002", None, alice));
    assert!(
        room.ends_with("channel_id = \"1110000000000000002\"\nanswerers = [\"80351110224678912\"]"),
        "{room}"
    );
}

/// A Discord that cannot be reached is described by what happened (here the
/// connection refused), and never with the token.
#[tokio::test]
async fn discord_out_of_reach_is_described_by_its_cause_without_the_token() {
    let rest = askgate_discord::rest::Rest::new("SecretNeverShown", "http://127.0.0.1:9");
    let error = rest
        .get::<serde_json::Value>("/users/@me")
        .await
        .expect_err("nothing listens on port 9");
    let said = error.to_string();
    assert!(said.contains("Connection refused"), "{said}");
    assert!(!said.contains("SecretNeverShown"), "{said}");
}
