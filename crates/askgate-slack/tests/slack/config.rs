//! `type = "slack"` in askgate's configuration: the channel's keys and its
//! recipients' addressing, each problem reported with its key.

use askgate_adapter::config::{AdapterKind, ConfigCheck, ServerContext};
use askgate_slack::Slack;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap_or_else(|error| panic!("{error}"))
}

fn keys(check: &ConfigCheck<'_>) -> Vec<String> {
    check.problems().iter().map(|p| p.key.clone()).collect()
}

fn env(name: &str) -> Option<String> {
    match name {
        "BOT" => Some("xoxb-1-secret-bot-token".into()),
        "APP" => Some("xapp-1-secret-app-token".into()),
        "SIGNING" => Some("secret-signing-value".into()),
        _ => None,
    }
}

#[test]
fn socket_mode_is_the_default_and_http_needs_a_signing_secret_and_a_url() {
    let mut check = ConfigCheck::new(&env);
    let socket = Slack
        .channel(
            &mut check,
            "work",
            table("bot_token = \"${BOT}\"\napp_token = \"${APP}\""),
            ServerContext::default(),
        )
        .expect("valid");
    assert_eq!((socket.name(), socket.kind()), ("work", "slack"));
    let printed = format!("{socket:?}");
    assert!(
        !printed.contains("secret-bot-token") && !printed.contains("secret-app-token"),
        "{printed}"
    );
    let http = Slack
        .channel(
            &mut check,
            "hooks",
            table("bot_token = \"${BOT}\"\nmode = \"http\"\nsigning_secret = \"${SIGNING}\""),
            ServerContext::new(Some("https://askgate.example.com")),
        )
        .expect("valid");
    assert!(!format!("{http:?}").contains("secret-signing-value"));
    assert!(check.problems().is_empty(), "{:?}", check.problems());
}

#[test]
fn every_channel_problem_is_reported_with_its_key() {
    let mut check = ConfigCheck::new(&env);
    // No bot token, no app token, an unknown key.
    assert!(
        Slack
            .channel(&mut check, "a", table("extra = 1"), ServerContext::default())
            .is_none()
    );
    // Tokens of the wrong kind.
    let swapped = table("bot_token = \"${APP}\"\napp_token = \"${BOT}\"");
    assert!(
        Slack
            .channel(&mut check, "b", swapped, ServerContext::default())
            .is_none()
    );
    // HTTP without a signing secret or a public URL; a bad mode; a bad URL.
    let http = table("bot_token = \"${BOT}\"\nmode = \"http\"");
    assert!(Slack.channel(&mut check, "c", http, ServerContext::default()).is_none());
    let odd = table("bot_token = \"${BOT}\"\nmode = \"webhook\"\napi_url = \"ftp://x\"");
    assert!(Slack.channel(&mut check, "d", odd, ServerContext::default()).is_none());
    // An unset variable.
    let unset = table("bot_token = \"${NOPE}\"\napp_token = \"${APP}\"");
    assert!(
        Slack
            .channel(&mut check, "e", unset, ServerContext::default())
            .is_none()
    );
    assert_eq!(
        keys(&check),
        [
            "channels.a.extra",
            "channels.a.bot_token",
            "channels.a.app_token",
            "channels.b.bot_token",
            "channels.b.app_token",
            "channels.c.mode",
            "channels.c.signing_secret",
            "channels.d.mode",
            "channels.d.api_url",
            "channels.e.bot_token",
        ]
    );
    let printed = format!("{:?}", check.problems());
    assert!(
        !printed.contains("secret-bot-token") && !printed.contains("secret-app-token"),
        "{printed}"
    );
}

#[test]
fn a_recipient_is_a_user_or_a_channel_with_its_answerers() {
    let mut check = ConfigCheck::new(&env);
    let user = Slack
        .recipient(&mut check, "alice", table("user_id = \"U0123ABCD\""))
        .expect("valid");
    assert_eq!(user.destination.conversation, "U0123ABCD");
    assert_eq!(user.answerers, ["U0123ABCD"], "only the user answers in their DM");
    let channel = Slack
        .recipient(
            &mut check,
            "ops",
            table("channel_id = \"C0123ABCD\"\nanswerers = [\"U0123ABCD\", \"W0456EFGH\"]"),
        )
        .expect("valid");
    assert_eq!(channel.destination.conversation, "C0123ABCD");
    assert_eq!(channel.answerers, ["U0123ABCD", "W0456EFGH"]);
    assert!(check.problems().is_empty(), "{:?}", check.problems());

    assert!(
        Slack
            .recipient(&mut check, "r1", table("channel_id = \"C0123ABCD\""))
            .is_none()
    );
    assert!(
        Slack
            .recipient(&mut check, "r2", table("user_id = \"alice\""))
            .is_none()
    );
    assert!(
        Slack
            .recipient(
                &mut check,
                "r3",
                table("user_id = \"U0123ABCD\"\nchannel_id = \"C0123ABCD\"")
            )
            .is_none()
    );
    assert!(
        Slack
            .recipient(
                &mut check,
                "r4",
                table("channel_id = \"#general\"\nanswerers = [\"U1\"]")
            )
            .is_none()
    );
    assert_eq!(
        keys(&check),
        [
            "recipients.r1.answerers",
            "recipients.r2.user_id",
            "recipients.r2.user_id",
            "recipients.r3.user_id",
            "recipients.r4.channel_id",
            "recipients.r4.answerers",
            "recipients.r4.user_id",
        ]
    );
}

#[tokio::test]
async fn the_recipient_block_told_to_a_stranger_configures_that_conversation() {
    use askgate_core::channel::ConversationKind::{Direct, Group};
    use askgate_testkit::conformance::introduce::{greeting, the_block_configures_its_conversation as configures};
    let channel = askgate_slack::SlackChannel::new(
        "chat",
        askgate_slack::api::Api::new("xoxb-unused", "http://127.0.0.1:9"),
    );
    let alice = ("U0ALICE01", "Alice");
    // A DM (`D…`) is addressed by the person: askgate opens the DM itself.
    let dm = configures(&Slack, &channel, &greeting(Direct, "D0DM00001", None, alice));
    assert!(dm.ends_with("user_id = \"U0ALICE01\""), "{dm}");
    let room = configures(&Slack, &channel, &greeting(Group, "C0ROOM001", None, alice));
    assert!(
        room.ends_with("channel_id = \"C0ROOM001\"\nanswerers = [\"U0ALICE01\"]"),
        "{room}"
    );
}

/// A Slack that cannot be reached is described by what happened (here the
/// connection refused), not by the client library's Debug output.
#[tokio::test]
async fn slack_out_of_reach_is_described_by_its_cause() {
    let api = askgate_slack::api::Api::new("xoxb-unused", "http://127.0.0.1:9");
    let error = api.auth_test().await.expect_err("nothing listens on port 9");
    let detail = askgate_slack::api::describe(&error);
    assert!(detail.to_lowercase().contains("connection refused"), "{detail}");
    assert!(!detail.contains("Some(") && !detail.contains("hyper"), "{detail}");
}

/// While the signing secret is rotated, several are listed (each checked
/// with its key); both spellings at once, or an empty list, is a problem.
#[test]
fn several_signing_secrets_may_be_listed_while_one_is_rotated() {
    let url = ServerContext::new(Some("https://askgate.example.com"));
    let mut check = ConfigCheck::new(&env);
    let listed =
        table("bot_token = \"${BOT}\"\nmode = \"http\"\nsigning_secrets = [\"${SIGNING}\", \"older-signing-value\"]");
    assert!(Slack.channel(&mut check, "ok", listed, url).is_some());
    assert!(check.problems().is_empty(), "{:?}", check.problems());
    let both = table(
        "bot_token = \"${BOT}\"\nmode = \"http\"\nsigning_secret = \"${SIGNING}\"\nsigning_secrets = [\"${SIGNING}\"]",
    );
    assert!(Slack.channel(&mut check, "both", both, url).is_none());
    let empty = table("bot_token = \"${BOT}\"\nmode = \"http\"\nsigning_secrets = []");
    assert!(Slack.channel(&mut check, "empty", empty, url).is_none());
    let unset = table("bot_token = \"${BOT}\"\nmode = \"http\"\nsigning_secrets = [\"${SIGNING}\", \"${NOPE}\"]");
    assert!(Slack.channel(&mut check, "unset", unset, url).is_none());
    assert_eq!(
        keys(&check),
        [
            "channels.both.signing_secrets",
            "channels.empty.signing_secrets",
            "channels.unset.signing_secrets[1]"
        ]
    );
}
