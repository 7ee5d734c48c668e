//! `type = "telegram"` in askgate's configuration: the channel's keys and
//! its recipients' addressing, each problem reported with its key.

use askgate_adapter::config::{AdapterKind, ConfigCheck, ServerContext};
use askgate_telegram::Telegram;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap_or_else(|error| panic!("{error}"))
}

fn keys(check: &ConfigCheck<'_>) -> Vec<String> {
    check.problems().iter().map(|p| p.key.clone()).collect()
}

#[test]
fn a_channel_is_read_with_its_token_from_the_environment() {
    let env = |name: &str| (name == "TG").then(|| "123456:AAbb-cc_DD".to_owned());
    let mut check = ConfigCheck::new(&env);
    let settings = Telegram
        .channel(&mut check, "tg", table("token = \"${TG}\""), ServerContext::default())
        .expect("valid");
    assert_eq!((settings.name(), settings.kind()), ("tg", "telegram"));
    assert!(!format!("{settings:?}").contains("AAbb"), "the token is never printed");
    assert!(check.problems().is_empty());
}

#[test]
fn every_channel_problem_is_reported_without_the_secrets() {
    let env = |_: &str| None;
    let mut check = ConfigCheck::new(&env);
    let bad =
        table("token = \"not-a-token\"\nmode = \"webhook\"\nsecret_token = \"short\"\napi_url = \"nope\"\nextra = 1");
    assert!(
        Telegram
            .channel(&mut check, "tg", bad, ServerContext::default())
            .is_none()
    );
    assert!(
        Telegram
            .channel(&mut check, "tg2", table(""), ServerContext::default())
            .is_none()
    );
    assert_eq!(
        keys(&check),
        [
            "channels.tg.extra",
            "channels.tg.mode",
            "channels.tg.secret_token",
            "channels.tg.token",
            "channels.tg.api_url",
            "channels.tg2.token"
        ]
    );
    let printed: String = check.problems().iter().map(ToString::to_string).collect();
    assert!(
        !printed.contains("not-a-token") && !printed.contains("\"short\""),
        "{printed}"
    );
}

#[test]
fn recipients_are_chats_by_number_or_string_and_groups_list_their_answerers() {
    let env = |_: &str| None;
    let mut check = ConfigCheck::new(&env);
    let alice = Telegram
        .recipient(&mut check, "alice", table("chat_id = 42"))
        .expect("a private chat");
    assert_eq!(alice.destination.conversation, "42");
    assert!(alice.answerers.is_empty());
    let ops = Telegram
        .recipient(
            &mut check,
            "ops",
            table("chat_id = \"-100\"\ntopic = 7\nanswerers = [42, \"43\"]"),
        )
        .expect("a group with answerers");
    assert_eq!(
        (ops.destination.conversation.as_str(), ops.destination.thread.as_deref()),
        ("-100", Some("7"))
    );
    assert_eq!(ops.answerers, ["42", "43"]);
    assert!(Telegram.recipient(&mut check, "nochat", table("")).is_none());
    assert!(
        Telegram
            .recipient(&mut check, "group", table("chat_id = -100"))
            .is_none()
    );
    assert!(Telegram.recipient(&mut check, "typo", table("chat = 1")).is_none());
    assert_eq!(
        keys(&check),
        [
            "recipients.nochat.chat_id",
            "recipients.group.answerers",
            "recipients.typo.chat",
            "recipients.typo.chat_id"
        ]
    );
}

#[tokio::test]
async fn the_recipient_block_told_to_a_stranger_configures_that_chat() {
    use askgate_core::channel::ConversationKind::{Direct, Group};
    use askgate_testkit::conformance::introduce::{greeting, the_block_configures_its_conversation as configures};
    let channel = askgate_telegram::TelegramChannel::new("chat", "1:x", None);
    let alice = ("1001", "Alice");
    assert!(configures(&Telegram, &channel, &greeting(Direct, "1001", None, alice)).contains("chat_id = 1001"));
    let group = configures(&Telegram, &channel, &greeting(Group, "-2002", None, alice));
    assert!(group.ends_with("chat_id = -2002\nanswerers = [1001]"), "{group}");
    let topic = configures(&Telegram, &channel, &greeting(Group, "-1003", Some("55"), alice));
    assert!(
        topic.ends_with("chat_id = -1003\ntopic = 55\nanswerers = [1001]"),
        "{topic}"
    );
}

/// A Telegram that cannot be reached is described by what happened (here
/// the connection refused), and never with the token.
#[tokio::test]
async fn telegram_out_of_reach_is_described_by_its_cause_without_the_token() {
    let channel = askgate_telegram::TelegramChannel::new(
        "tg",
        "123456:SecretNeverShown",
        Some("http://127.0.0.1:9".parse().unwrap()),
    );
    let error = channel.check().await.expect_err("nothing listens on port 9");
    let said = error.to_string();
    assert!(said.contains("error sending request: Connection refused"), "{said}");
    assert!(!said.contains("SecretNeverShown"), "{said}");
}

/// While the webhook secret is rotated, several are listed: each is
/// checked with its key, and the same one twice is a problem.
#[test]
fn several_webhook_secrets_may_be_listed_while_one_is_rotated() {
    let env = |name: &str| (name == "TG").then(|| "123456:AAbb-cc_DD".to_owned());
    let url = ServerContext::new(Some("https://askgate.example.com"));
    let new = "n".repeat(32);
    let old = "o".repeat(32);
    let mut check = ConfigCheck::new(&env);
    let listed = table(&format!(
        "token = \"${{TG}}\"\nmode = \"webhook\"\nsecret_tokens = [\"{new}\", \"{old}\"]"
    ));
    assert!(Telegram.channel(&mut check, "tg", listed, url).is_some());
    assert!(check.problems().is_empty(), "{:?}", check.problems());
    let repeated = table(&format!(
        "token = \"${{TG}}\"\nmode = \"webhook\"\nsecret_tokens = [\"{new}\", \"short\", \"{new}\"]"
    ));
    Telegram.channel(&mut check, "tg2", repeated, url);
    assert_eq!(
        keys(&check),
        ["channels.tg2.secret_tokens[1]", "channels.tg2.secret_tokens[2]"]
    );
    assert!(!format!("{:?}", check.problems()).contains(&new));
}
