//! The Message Content intent: whether typed replies arrive is decided from
//! the application's flags (`GET /applications/@me`) and the admin's
//! `message_content` key, at the runtime's check, before the channel is used.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use askgate_adapter::config::{AdapterKind, ConfigCheck, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_discord::Discord;
use askgate_discord::runtime::{MessageContent, message_content, message_content_granted};
use askgate_testkit::discord::FakeDiscord;

/// `GATEWAY_MESSAGE_CONTENT`: a verified application's intent.
const VERIFIED: u64 = 1 << 18;
/// `GATEWAY_MESSAGE_CONTENT_LIMITED`: the Developer Portal's switch of an
/// application in fewer than 100 servers.
const LIMITED: u64 = 1 << 19;
/// Flags that are not the intent: `APPLICATION_COMMAND_BADGE`,
/// `GATEWAY_GUILD_MEMBERS_LIMITED`, `GATEWAY_PRESENCE`.
const OTHERS: u64 = (1 << 23) | (1 << 15) | (1 << 12);

#[test]
fn either_message_content_flag_grants_the_intent_and_no_other_flag_does() {
    assert!(message_content_granted(VERIFIED));
    assert!(message_content_granted(LIMITED));
    assert!(message_content_granted(VERIFIED | LIMITED | OTHERS));
    assert!(!message_content_granted(0));
    assert!(!message_content_granted(OTHERS));
}

/// The rule: the admin's `false` always wins; unset follows the flags;
/// `true` against flags that refuse it is a configuration problem.
#[test]
fn the_admins_key_and_the_flags_decide_the_intent() {
    for flags in [0, OTHERS, VERIFIED, LIMITED] {
        assert_eq!(message_content(Some(false), flags), MessageContent::Off, "{flags:#x}");
    }
    for flags in [VERIFIED, LIMITED, LIMITED | OTHERS] {
        assert_eq!(message_content(None, flags), MessageContent::On, "{flags:#x}");
        assert_eq!(message_content(Some(true), flags), MessageContent::On, "{flags:#x}");
    }
    for flags in [0, OTHERS] {
        assert_eq!(message_content(None, flags), MessageContent::NotGranted, "{flags:#x}");
        assert_eq!(
            message_content(Some(true), flags),
            MessageContent::Refused,
            "{flags:#x}"
        );
    }
    assert!(MessageContent::On.asked());
    for other in [MessageContent::Off, MessageContent::NotGranted, MessageContent::Refused] {
        assert!(!other.asked(), "{other:?}");
    }
}

/// The runtime of `[channels.dc]` with `extra` keys, in gateway mode, against `fake`.
fn runtime(fake: &FakeDiscord, extra: &str) -> std::sync::Arc<dyn ChannelRuntime> {
    let env = |name: &str| (name == "DC").then(|| fake.token().to_owned());
    let mut check = ConfigCheck::new(&env);
    let table: toml::Table = toml::from_str(&format!(
        "token = \"${{DC}}\"\napi_url = \"{}\"\n{extra}",
        fake.api_url()
    ))
    .unwrap();
    let settings = Discord
        .channel(&mut check, "dc", table, ServerContext::default())
        .unwrap_or_else(|| panic!("{:?}", check.problems()));
    settings.start()
}

#[tokio::test]
async fn without_the_intent_the_channel_declares_no_typed_replies_and_says_why() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let runtime = runtime(&fake, "");
    let said = runtime.check().await.unwrap();
    assert_eq!(
        said,
        "bot @askgate, gateway, without typed replies: the Message Content intent is not enabled for this \
         application, so text prompts carry Answer… and Skip; to take typed replies, enable Message Content \
         Intent in the Developer Portal (your application → Bot → Privileged Gateway Intents)"
    );
    assert!(!runtime.channel().capabilities().typed_replies);
    assert_eq!(fake.calls_to("GET /applications/@me").len(), 1);
}

#[tokio::test]
async fn with_either_flag_typed_replies_stay() {
    for flags in [VERIFIED, LIMITED] {
        let fake = FakeDiscord::start().await;
        fake.set_application_flags(flags | OTHERS);
        let runtime = runtime(&fake, "");
        assert_eq!(runtime.check().await.unwrap(), "bot @askgate, gateway", "{flags:#x}");
        assert!(runtime.channel().capabilities().typed_replies, "{flags:#x}");
    }
}

#[tokio::test]
async fn message_content_true_without_the_intent_is_a_problem_naming_the_key_not_the_token() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let refused = runtime(&fake, "message_content = true").check().await.unwrap_err();
    // A refusal for good: `serve` leaves the channel refused, not retried.
    assert!(!refused.is_retryable(), "{refused}");
    let problem = refused.into_problem();
    assert_eq!(problem.key, "channels.dc.message_content");
    let said = problem.to_string();
    assert!(said.contains("Message Content intent is not enabled"), "{said}");
    assert!(said.contains("Privileged Gateway Intents"), "{said}");
    let secret = fake.token().rsplit('.').next().unwrap();
    assert!(!said.contains(secret), "{said}");
}

#[tokio::test]
async fn message_content_false_turns_typed_replies_off_whatever_the_flags() {
    let fake = FakeDiscord::start().await;
    let runtime = runtime(&fake, "message_content = false");
    assert!(!runtime.channel().capabilities().typed_replies);
    assert_eq!(
        runtime.check().await.unwrap(),
        "bot @askgate, gateway, without typed replies (message_content = false)"
    );
    assert!(!runtime.channel().capabilities().typed_replies);
}

/// In interactions mode typed messages never arrive: the flags are not read.
#[tokio::test]
async fn the_interactions_endpoint_reads_no_flags() {
    let fake = FakeDiscord::start().await;
    fake.allow_privileged_intents(0);
    let key = format!("mode = \"interactions\"\npublic_key = \"{}\"", fake.public_key());
    let env = |name: &str| (name == "DC").then(|| fake.token().to_owned());
    let mut check = ConfigCheck::new(&env);
    let table: toml::Table =
        toml::from_str(&format!("token = \"${{DC}}\"\napi_url = \"{}\"\n{key}", fake.api_url())).unwrap();
    let runtime = Discord
        .channel(
            &mut check,
            "dc",
            table,
            ServerContext::new(Some("https://askgate.example.com")),
        )
        .unwrap()
        .start();
    assert_eq!(runtime.check().await.unwrap(), "bot @askgate, interactions endpoint");
    assert!(!runtime.channel().capabilities().typed_replies);
    assert!(fake.calls_to("GET /applications/@me").is_empty());
}
