//! Decoding real Discord payloads (the samples of Discord's documentation in
//! `askgate_testkit::discord::payloads`) into askgate's normalized events.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use askgate_core::channel::{ConversationKind, InboundKind, MessageRef};
use askgate_discord::decode::{Ack, OTHER_FIELD, Update, decode};
use askgate_discord::react::Responder;
use askgate_discord::rest::Rest;
use askgate_testkit::discord::discord_payload;
use serenity::model::application::Interaction;
use serenity::model::channel::Message;

fn interaction(name: &str) -> Update {
    let interaction: Interaction = serde_json::from_str(discord_payload(name)).unwrap();
    let responder = Responder::over_rest(&interaction, Rest::new("token", "http://127.0.0.1:9"));
    Update::Interaction {
        interaction: Box::new(interaction),
        responder,
    }
}

fn message(name: &str) -> Update {
    let message: Message = serde_json::from_str(discord_payload(name)).unwrap();
    Update::Message(Box::new(message))
}

#[test]
fn a_button_click_in_a_server_channel_is_a_group_tap_on_its_message() {
    let (event, ack) = decode(&interaction("component_guild")).expect("a click");
    assert_eq!(event.event_id, "846462639134605312");
    assert_eq!(event.user.id, "53908232506183680");
    assert_eq!(event.conversation, "345626669114982999");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    let InboundKind::ButtonPressed { token, message } = event.kind else {
        panic!("a click is a tap: {:?}", event.kind);
    };
    assert_eq!(token, "click_one");
    assert_eq!(message.message, "844397162624450620");
    assert!(matches!(ack, Ack::Interaction(_)));
}

#[test]
fn a_button_click_in_a_dm_is_direct() {
    let (event, _) = decode(&interaction("component_dm")).expect("a click");
    assert_eq!(event.conversation_kind, ConversationKind::Direct);
    assert_eq!(event.user.display_name, "Mason");
}

#[test]
fn a_modal_submission_is_a_form_named_by_its_fields() {
    let (event, _) = decode(&interaction("modal_submit")).expect("a submission");
    assert_eq!(event.conversation, "772908445358620702");
    let InboundKind::FormSubmitted { token, values } = event.kind else {
        panic!("a modal of named fields is a form: {:?}", event.kind);
    };
    assert_eq!(token, "cool_modal");
    assert_eq!(values.len(), 1);
    assert_eq!((values[0].id.as_str(), values[0].text.as_str()), ("name", "John"));
    // Other…'s modal has the one field askgate names itself: free text.
    let text = discord_payload("modal_submit")
        .replace("\"custom_id\": \"name\"", &format!("\"custom_id\": \"{OTHER_FIELD}\""));
    let other: Interaction = serde_json::from_str(&text).unwrap();
    let responder = Responder::over_rest(&other, Rest::new("token", "http://127.0.0.1:9"));
    let update = Update::Interaction {
        interaction: Box::new(other),
        responder: Arc::clone(&responder),
    };
    let (event, _) = decode(&update).unwrap();
    assert!(
        matches!(&event.kind, InboundKind::FreeTextSubmitted { token, .. } if token == "cool_modal"),
        "{:?}",
        event.kind
    );
}

#[test]
fn a_ping_is_not_an_event() {
    assert!(decode(&interaction("ping")).is_none());
}

#[test]
fn a_reply_names_the_message_it_replies_to() {
    let (event, ack) = decode(&message("message_create_reply")).expect("a message");
    assert_eq!(event.event_id, "334385686279651329");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    let InboundKind::TextReply { text, reply_to, .. } = event.kind else {
        panic!("text: {:?}", event.kind);
    };
    assert_eq!(text, "Supa Hot indeed");
    assert_eq!(
        reply_to,
        Some(MessageRef {
            conversation: "290926798999357250".into(),
            message: "334385199974967042".into(),
        })
    );
    assert!(matches!(ack, Ack::Message { message_id, .. } if message_id == "334385686279651329"));
}

#[test]
fn a_dm_message_is_direct_and_a_bots_message_is_ignored() {
    let (event, _) = decode(&message("message_create_dm")).expect("a message");
    assert_eq!(event.conversation_kind, ConversationKind::Direct);
    let bot = discord_payload("message_create_dm").replacen("\"username\"", "\"bot\": true, \"username\"", 1);
    let bot: Message = serde_json::from_str(&bot).unwrap();
    assert!(decode(&Update::Message(Box::new(bot))).is_none());
}

#[test]
fn a_mention_of_the_bot_saying_start_is_a_greeting_unless_it_replies() {
    let with = |name: &str, content: &str| {
        let mut value: serde_json::Value = serde_json::from_str(discord_payload(name)).unwrap();
        value["content"] = content.into();
        let message: Message = serde_json::from_str(&value.to_string()).unwrap();
        decode(&Update::Message(Box::new(message))).expect("a message").0.kind
    };
    assert!(matches!(
        with("message_create_dm", "<@1234567890> start"),
        InboundKind::Greeting { .. }
    ));
    assert!(matches!(
        with("message_create_dm", "/start"),
        InboundKind::Greeting { .. }
    ));
    assert!(matches!(
        with("message_create_dm", "start"),
        InboundKind::TextReply { .. }
    ));
    // A reply to a question is an answer, whatever it says.
    assert!(matches!(
        with("message_create_reply", "<@1234567890> start"),
        InboundKind::TextReply { .. }
    ));
}
