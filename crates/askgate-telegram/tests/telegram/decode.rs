//! Decoding real `Update` payloads (samples from the Bot API documentation,
//! kept in the testkit) into askgate's normalized events.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use askgate_core::channel::{ConversationKind, InboundKind};
use askgate_telegram::{Ack, decode};
use askgate_testkit::telegram::{BOT_USERNAME, telegram_payload};
use teloxide::types::Update;

fn update(name: &str) -> Update {
    serde_json::from_str(telegram_payload(name)).unwrap_or_else(|error| panic!("{name} is not an Update: {error}"))
}

#[test]
fn a_callback_query_is_a_button_press_with_its_token() {
    let decoded = decode(&update("callback_query"), None).expect("a tap is decoded");
    let InboundKind::ButtonPressed { token, message } = &decoded.event.kind else {
        panic!("expected a button press, got {:?}", decoded.event.kind);
    };
    assert!(!token.is_empty());
    assert_eq!(message.conversation, decoded.event.conversation);
    assert!(matches!(decoded.ack, Ack::Callback { .. }));
    assert!(!decoded.event.user.id.is_empty() && !decoded.event.user.display_name.is_empty());
    assert_eq!(decoded.event.event_id, update("callback_query").id.0.to_string());
}

#[test]
fn a_private_message_is_a_direct_text_reply() {
    let decoded = decode(&update("message_private"), None).expect("a message is decoded");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Direct);
    let InboundKind::TextReply { text, reply_to, .. } = &decoded.event.kind else {
        panic!("expected a text reply, got {:?}", decoded.event.kind);
    };
    assert!(!text.is_empty());
    assert_eq!(*reply_to, None);
    assert!(matches!(decoded.ack, Ack::Message { .. }));
}

#[test]
fn a_group_reply_names_the_message_it_replies_to() {
    let decoded = decode(&update("message_group_reply"), None).expect("a reply is decoded");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
    let InboundKind::TextReply { reply_to, .. } = &decoded.event.kind else {
        panic!("expected a text reply, got {:?}", decoded.event.kind);
    };
    let reply_to = reply_to.as_ref().expect("the replied-to message");
    assert_eq!(reply_to.conversation, decoded.event.conversation);
}

#[test]
fn a_sticker_is_not_text() {
    let decoded = decode(&update("sticker"), None).expect("a sticker is decoded");
    assert!(
        matches!(decoded.event.kind, InboundKind::NonText { .. }),
        "{:?}",
        decoded.event.kind
    );
}

#[test]
fn a_forum_topic_message_carries_its_thread() {
    let decoded = decode(&update("forum_topic_message"), None).expect("a topic message is decoded");
    assert!(decoded.event.thread.is_some());
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
}

#[test]
fn only_a_forum_topic_is_a_thread() {
    // A reply in a supergroup without topics carries `message_thread_id` too.
    let reply = decode(&update("message_supergroup_reply"), None).expect("a reply is decoded");
    assert_eq!(reply.event.thread, None);
    let topic = decode(&update("forum_topic_message"), None).expect("a topic message is decoded");
    assert_eq!(topic.event.thread.as_deref(), Some("877"));
}

#[test]
fn edits_and_unknown_kinds_are_ignored() {
    assert_eq!(decode(&update("edited_message"), None), None);
    assert_eq!(decode(&update("unknown_kind"), None), None);
}

/// The group reply sample with its text replaced, as a person would type a
/// command in that group (Telegram marks it with a `bot_command` entity).
fn group_command(text: &str) -> Update {
    let mut update: serde_json::Value = serde_json::from_str(telegram_payload("message_group_reply")).unwrap();
    let length = text.encode_utf16().count();
    update["message"]["text"] = text.into();
    update["message"]["entities"] = serde_json::json!([{"type": "bot_command", "offset": 0, "length": length}]);
    // From text, as the adapter reads updates: teloxide's `Update` reads
    // some fields borrowed, which `from_value` cannot give.
    serde_json::from_str(&update.to_string()).unwrap()
}

fn text_of(decoded: Option<askgate_telegram::Decoded>) -> Option<String> {
    match decoded?.event.kind {
        InboundKind::TextReply { text, .. } => Some(text),
        InboundKind::NonText { .. } => None,
        other => panic!("a message decoded as {other:?}"),
    }
}

#[test]
fn skip_addressed_to_this_bot_in_a_group_is_read_as_skip() {
    let bot = Some(BOT_USERNAME);
    for typed in ["/skip@askgate_test_bot", "/skip@AskGate_Test_Bot", "/skip", "/SKIP"] {
        assert_eq!(
            text_of(decode(&group_command(typed), bot)),
            Some("/skip".to_owned()),
            "{typed}"
        );
    }
    // Before getMe answered, the bot's name is unknown: the command is taken.
    assert_eq!(
        text_of(decode(&group_command("/skip@askgate_test_bot"), None)),
        Some("/skip".to_owned())
    );
}

#[test]
fn a_command_for_another_bot_is_not_for_askgate() {
    assert_eq!(decode(&group_command("/skip@some_other_bot"), Some(BOT_USERNAME)), None);
}

#[test]
fn other_commands_are_not_answers_and_text_after_a_slash_is_text() {
    let bot = Some(BOT_USERNAME);
    // `/start` or `/help` is the person greeting the bot: not their answer
    // (a chat no recipient has is told its recipient block); another
    // command is no answer either.
    for (typed, greeting) in [
        ("/start", true),
        ("/help@askgate_test_bot", true),
        // A deep link (`t.me/bot?startgroup=ref`) sends its payload along.
        ("/start@askgate_test_bot ref-42", true),
        ("/settings", false),
    ] {
        let decoded = decode(&group_command(typed), bot).expect("a command is decoded");
        let kind = &decoded.event.kind;
        assert_eq!(
            (
                matches!(kind, InboundKind::Greeting { .. }),
                matches!(kind, InboundKind::NonText { .. })
            ),
            (greeting, !greeting),
            "{typed}: {kind:?}"
        );
    }
    for typed in [
        "/var/log should stay",
        "/skip the tests",
        "/",
        "/start@some_other_bot ref",
    ] {
        assert_eq!(text_of(decode(&group_command(typed), bot)), Some(typed.to_owned()));
    }
}
