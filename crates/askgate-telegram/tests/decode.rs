//! Decoding real `Update` payloads (samples from the Bot API documentation,
//! kept in the testkit) into askgate's normalized events.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use askgate_core::channel::{ConversationKind, InboundKind};
use askgate_telegram::{Ack, decode};
use askgate_testkit::telegram::telegram_payload;
use teloxide::types::Update;

fn update(name: &str) -> Update {
    serde_json::from_str(telegram_payload(name)).unwrap_or_else(|error| panic!("{name} is not an Update: {error}"))
}

#[test]
fn a_callback_query_is_a_button_press_with_its_token() {
    let decoded = decode(&update("callback_query")).expect("a tap is decoded");
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
    let decoded = decode(&update("message_private")).expect("a message is decoded");
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
    let decoded = decode(&update("message_group_reply")).expect("a reply is decoded");
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
    let InboundKind::TextReply { reply_to, .. } = &decoded.event.kind else {
        panic!("expected a text reply, got {:?}", decoded.event.kind);
    };
    let reply_to = reply_to.as_ref().expect("the replied-to message");
    assert_eq!(reply_to.conversation, decoded.event.conversation);
}

#[test]
fn a_sticker_is_not_text() {
    let decoded = decode(&update("sticker")).expect("a sticker is decoded");
    assert!(
        matches!(decoded.event.kind, InboundKind::NonText { .. }),
        "{:?}",
        decoded.event.kind
    );
}

#[test]
fn a_forum_topic_message_carries_its_thread() {
    let decoded = decode(&update("forum_topic_message")).expect("a topic message is decoded");
    assert!(decoded.event.thread.is_some());
    assert_eq!(decoded.event.conversation_kind, ConversationKind::Group);
}

#[test]
fn edits_and_unknown_kinds_are_ignored() {
    assert_eq!(decode(&update("edited_message")), None);
    assert_eq!(decode(&update("unknown_kind")), None);
}
