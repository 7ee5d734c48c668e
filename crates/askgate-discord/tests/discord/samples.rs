//! Discord's own documented payloads (`tests/samples/`, sources in
//! `tests/samples/README.md`) decoded by the adapter's real decoder, as the
//! gateway and the interactions endpoint deliver them: a button click in a
//! server channel and in a DM, a modal submission, a PING, and
//! `MESSAGE_CREATE` dispatches in a server channel and in a DM.
//!
//! The interaction examples are from 2021, before Discord added fields it
//! now always sends and serenity 0.12 requires; [`as_sent_today`] adds
//! those, and only those, as the current Interaction Structure describes
//! them. Nothing else is changed: the ids, users and custom ids are the
//! documentation's (the decoder takes any `custom_id`; the engine, not the
//! decoder, reads askgate's token format).

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use askgate_core::channel::{ConversationKind, InboundKind, MessageRef};
use askgate_discord::decode::{Ack, Update, decode};
use askgate_discord::react::Responder;
use askgate_discord::rest::Rest;
use serde_json::{Value, json};
use serenity::model::application::Interaction;
use serenity::model::event::{Event, GatewayEvent};

fn sample(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// An interaction example with the fields the Interaction Structure
/// (Receiving and Responding) now lists as always sent, which serenity 0.12
/// requires and the 2021 examples predate: `entitlements`,
/// `attachment_size_limit`, `authorizing_integration_owners`,
/// `app_permissions`, `locale` (all types but PING), and a guild member's
/// `flags` (Guild Member Object). Values are the documentation's: the
/// permissions of its user-installable-app tutorial, the 10 MiB default
/// upload limit.
fn as_sent_today(mut interaction: Value) -> Value {
    let fields = interaction.as_object_mut().unwrap();
    fields.entry("entitlements").or_insert(json!([]));
    fields.entry("attachment_size_limit").or_insert(json!(10_485_760));
    fields.entry("authorizing_integration_owners").or_insert(json!({}));
    if fields["type"] != 1 {
        fields.entry("app_permissions").or_insert(json!("442368"));
        fields.entry("locale").or_insert(json!("en-US"));
    }
    if let Some(member) = fields.get_mut("member").and_then(Value::as_object_mut) {
        member.entry("flags").or_insert(json!(0));
    }
    interaction
}

/// An interaction sample as the gateway or the endpoint delivers it.
fn interaction(name: &str) -> Update {
    let interaction: Interaction = serde_json::from_value(as_sent_today(sample(name))).unwrap();
    let responder = Responder::over_rest(&interaction, Rest::new("token", "http://127.0.0.1:9"));
    Update::Interaction {
        interaction: Box::new(interaction),
        responder,
    }
}

/// A `MESSAGE_CREATE` dispatch sample, read as serenity's gateway reads it.
fn dispatch(name: &str) -> Update {
    let event: GatewayEvent = serde_json::from_value(sample(name)).unwrap();
    let GatewayEvent::Dispatch(_, Event::MessageCreate(created)) = event else {
        panic!("{name} is a MESSAGE_CREATE dispatch: {event:?}");
    };
    Update::Message(Box::new(created.message))
}

#[test]
fn the_documented_button_click_in_a_server_channel_is_a_group_tap() {
    let (event, ack) = decode(&interaction("component_guild.json")).expect("a click is an event");
    assert_eq!(event.event_id, "846462639134605312");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("53908232506183680", "Mason")
    );
    assert_eq!(event.conversation, "345626669114982999");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    assert_eq!(
        event.kind,
        InboundKind::ButtonPressed {
            token: "click_one".to_owned(),
            message: MessageRef {
                conversation: "345626669114982402".to_owned(),
                message: "844397162624450620".to_owned(),
            },
        }
    );
    assert!(matches!(ack, Ack::Interaction(_)));
}

#[test]
fn the_documented_button_click_from_a_dm_is_direct() {
    let (event, ack) = decode(&interaction("component_dm.json")).expect("a click is an event");
    assert_eq!(event.event_id, "846462639134605312");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("53908232506183680", "Mason")
    );
    assert_eq!(event.conversation, "345626669114982402");
    assert_eq!(event.conversation_kind, ConversationKind::Direct);
    assert!(matches!(&event.kind, InboundKind::ButtonPressed { token, .. } if token == "click_one"));
    assert!(matches!(ack, Ack::Interaction(_)));
}

#[test]
fn the_documented_modal_submission_is_a_form_of_its_fields() {
    let (event, _) = decode(&interaction("modal_submit.json")).expect("a submission is an event");
    assert_eq!(event.event_id, "847587388497854464");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("53908232506183680", "Mason")
    );
    assert_eq!(event.conversation, "772908445358620702");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    let InboundKind::FormSubmitted { token, values } = event.kind else {
        panic!("a modal of named fields is a form: {:?}", event.kind);
    };
    assert_eq!(token, "cool_modal");
    let fields: Vec<(&str, &str)> = values
        .iter()
        .map(|value| (value.id.as_str(), value.text.as_str()))
        .collect();
    assert_eq!(fields, [("name", "John")]);
}

#[test]
fn a_ping_is_no_event() {
    let update = interaction("ping.json");
    assert!(
        matches!(&update, Update::Interaction { interaction, .. } if matches!(**interaction, Interaction::Ping(_)))
    );
    assert!(decode(&update).is_none());
}

#[test]
fn the_documented_message_in_a_server_channel_is_a_group_text_reply() {
    let (event, ack) = decode(&dispatch("message_create_guild.json")).expect("a message is an event");
    assert_eq!(event.event_id, "334385199974967042");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("53908099506183680", "Mason")
    );
    assert_eq!(event.conversation, "290926798999357250");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    assert_eq!(
        event.kind,
        InboundKind::TextReply {
            message: MessageRef {
                conversation: "290926798999357250".to_owned(),
                message: "334385199974967042".to_owned(),
            },
            text: "Supa Hot".to_owned(),
            reply_to: None,
        }
    );
    assert!(
        matches!(ack, Ack::Message { channel_id, message_id } if channel_id == "290926798999357250" && message_id == "334385199974967042")
    );
}

#[test]
fn the_documented_message_in_a_dm_is_direct() {
    let (event, _) = decode(&dispatch("message_create_dm.json")).expect("a message is an event");
    assert_eq!(event.conversation_kind, ConversationKind::Direct);
    assert!(matches!(&event.kind, InboundKind::TextReply { text, reply_to: None, .. } if text == "Supa Hot"));
}
