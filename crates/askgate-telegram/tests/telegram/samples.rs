//! Decoding `Update`s that Telegram itself documents, and updates captured
//! from Telegram by teloxide's maintainers, with the adapter's real
//! `decode`. The files are in `tests/samples/`, unchanged unless a comment
//! below says otherwise; where each comes from is in `tests/samples/README.md`.
//!
//! Telegram's own samples (core.telegram.org/bots/webhooks, "Testing your
//! bot with updates") date from 2015 and lack two fields Telegram has sent
//! on every update since: `is_bot` on a `User` (Bot API 3.0) and
//! `chat_instance` on a `CallbackQuery`. Without them teloxide, as any client
//! that follows today's Bot API, reads the update as one it does not know;
//! those two fields are added, and nothing else is changed.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use askgate_core::channel::{ConversationKind, InboundKind, MessageRef, UserRef};
use askgate_telegram::{Ack, decode};
use teloxide::types::{ChatId, MessageId, Update};

fn sample(name: &str) -> Update {
    let path = format!("{}/tests/samples/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let json = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    serde_json::from_str(&json).unwrap_or_else(|error| panic!("{name} is not an Update: {error}"))
}

fn message(conversation: &str, message: &str) -> MessageRef {
    MessageRef {
        conversation: conversation.to_owned(),
        message: message.to_owned(),
    }
}

/// core.telegram.org/bots/webhooks, "Message with text" (with `is_bot`
/// added): `/start` in a private chat greets the bot.
#[test]
fn the_documented_text_message_is_a_greeting() {
    let decoded = decode(&sample("webhooks_message_text"), None).expect("a message is decoded");
    assert_eq!(decoded.event.event_id, "10000");
    assert_eq!(
        decoded.event.user,
        UserRef {
            id: "1111111".into(),
            display_name: "Test Firstname Test Lastname".into(),
        }
    );
    assert_eq!(decoded.event.conversation, "1111111");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Direct);
    assert_eq!(decoded.event.thread, None);
    assert_eq!(
        decoded.event.kind,
        InboundKind::Greeting {
            message: message("1111111", "1365")
        }
    );
    assert_eq!(
        decoded.ack,
        Ack::Message {
            chat: ChatId(1_111_111),
            message: MessageId(1365),
        }
    );
}

/// core.telegram.org/bots/webhooks, "Message with a reply" (with `is_bot`
/// added): the same `/start`, as a reply; a greeting is one whatever it
/// replies to.
#[test]
fn the_documented_reply_is_a_greeting_too() {
    let update = sample("webhooks_message_reply");
    let replied = match &update.kind {
        teloxide::types::UpdateKind::Message(message) => message.reply_to_message().map(|replied| replied.id),
        other => panic!("expected a message, got {other:?}"),
    };
    assert_eq!(replied, Some(MessageId(1334)));
    let decoded = decode(&update, None).expect("a reply is decoded");
    assert_eq!(decoded.event.user.id, "1111111");
    assert_eq!(
        decoded.event.kind,
        InboundKind::Greeting {
            message: message("1111111", "1365")
        }
    );
}

/// core.telegram.org/bots/webhooks, "Callback query" (with `is_bot` and
/// `chat_instance` added): a tap on a message sent in inline mode
/// (`inline_message_id`, no `message`). askgate sends no inline-mode
/// messages, so the tap is no event of its.
#[test]
fn the_documented_callback_query_on_an_inline_message_is_ignored() {
    let update = sample("webhooks_callback_query");
    let teloxide::types::UpdateKind::CallbackQuery(query) = &update.kind else {
        panic!("expected a callback query, got {:?}", update.kind);
    };
    assert_eq!(query.data.as_deref(), Some("Data from button callback"));
    assert_eq!(query.inline_message_id.as_deref(), Some("1234csdbsk4839"));
    assert_eq!(decode(&update, None), None);
}

/// teloxide-core's `update::test::message`: a private text message as
/// Telegram sent it.
#[test]
fn a_captured_private_message_is_a_direct_text_reply() {
    let decoded = decode(&sample("teloxide_private_text"), Some("askgate_test_bot")).expect("a message is decoded");
    assert_eq!(decoded.event.event_id, "892252934");
    assert_eq!(
        decoded.event.user,
        UserRef {
            id: "218485655".into(),
            display_name: "Waffle".into(),
        }
    );
    assert_eq!(decoded.event.conversation, "218485655");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Direct);
    assert_eq!(
        decoded.event.kind,
        InboundKind::TextReply {
            message: message("218485655", "6557"),
            text: "hello there".into(),
            reply_to: None,
        }
    );
}

/// teloxide-core's `update::test::issue_1107`: in a supergroup without
/// topics, a command that replies to another message carries the
/// `message_thread_id` of that reply chain. It names the message it
/// replies to, is no thread, and a command other than `/skip` is no text
/// answer.
#[test]
fn a_captured_supergroup_reply_names_what_it_replies_to() {
    let decoded = decode(&sample("teloxide_supergroup_reply"), None).expect("a reply is decoded");
    assert_eq!(decoded.event.event_id, "439432600");
    assert_eq!(decoded.event.user.id, "5964236329");
    assert_eq!(decoded.event.user.display_name, "the Cable Guy");
    assert_eq!(decoded.event.conversation, "-1001293752024");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
    assert_eq!(decoded.event.thread, None);
    assert_eq!(
        decoded.event.kind,
        InboundKind::NonText {
            message: message("-1001293752024", "134546"),
            reply_to: Some(message("-1001293752024", "134545")),
        }
    );
}

/// teloxide-core's `message::tests::topic_message`, a `Message` (its
/// `update_id` of 1 is ours, to make it an `Update`): text in a forum
/// topic, replying to the topic's first message.
#[test]
fn a_captured_forum_topic_message_carries_its_thread() {
    let decoded = decode(&sample("teloxide_topic_reply"), None).expect("a topic message is decoded");
    assert_eq!(decoded.event.event_id, "1");
    assert_eq!(decoded.event.user.id, "1253681278");
    assert_eq!(decoded.event.user.display_name, "вафель'");
    assert_eq!(decoded.event.conversation, "-1001847508954");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
    assert_eq!(decoded.event.thread.as_deref(), Some("4"));
    assert_eq!(
        decoded.event.kind,
        InboundKind::TextReply {
            message: message("-1001847508954", "5"),
            text: "blah".into(),
            reply_to: Some(message("-1001847508954", "4")),
        }
    );
}
