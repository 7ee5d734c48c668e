//! Slack's own documented payloads for the way in (`tests/samples`; its
//! README names each one's page and every edit), each parsed as the
//! adapter parses what arrives (slack-morphism's models: the Events API
//! body, the `payload` of an interaction, the `payload` of a Socket Mode
//! envelope) and decoded with the adapter's real decoder
//! ([`askgate_slack::decode::decode`]), asserting what askgate makes of it.
//! Where a sample is changed for the decoder to accept it, the change and
//! its reason are beside it.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef};
use askgate_core::form::FormValue;
use askgate_slack::decode::{Ack, AckKind, Update, decode};
use askgate_slack::render::Origin;
use serde_json::{Value, json};
use slack_morphism::prelude::*;

fn sample(name: &str) -> Value {
    let path = format!("{}/tests/samples/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// An Events API body (HTTP), as the adapter's events endpoint reads it.
fn events_api(body: Value) -> SlackPushEventCallback {
    match serde_json::from_value::<SlackPushEvent>(body).expect("an Events API body") {
        SlackPushEvent::EventCallback(callback) => callback,
        other => panic!("an event_callback: {other:?}"),
    }
}

/// An interaction payload, as the adapter's interactivity endpoint (or
/// Socket Mode's `interactive` envelope) hands it on.
fn interaction(payload: Value) -> Option<(InboundEvent, Ack)> {
    let event: SlackInteractionEvent = serde_json::from_value(payload).expect("an interaction payload");
    decode(&Update::Interaction {
        event: Box::new(event),
        name: None,
    })
}

fn event(callback: SlackPushEventCallback) -> Option<(InboundEvent, Ack)> {
    decode(&Update::Event {
        callback: Box::new(callback),
        name: None,
    })
}

#[test]
fn block_actions_is_a_press_of_the_button_s_value() {
    // https://docs.slack.dev/reference/interaction-payloads/block_actions-payload
    let (event, ack) = interaction(sample("block_actions")).expect("a click");
    assert_eq!(event.event_id, "CBR2V3XEX:1548261231.000200:1548426417.840180");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("UA8RXUSPL", "jtorrance")
    );
    assert_eq!(event.conversation, "CBR2V3XEX");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    let pressed_on = MessageRef {
        conversation: "CBR2V3XEX".into(),
        message: "1548261231.000200".into(),
    };
    assert_eq!(
        event.kind,
        InboundKind::ButtonPressed {
            token: "click_me_123".into(),
            message: pressed_on.clone(),
        }
    );
    assert_eq!(
        ack.kind,
        AckKind::Click {
            trigger_id: "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3".into()
        }
    );

    // A button in a message's blocks (askgate's) comes in a `message`
    // container: the sample's `container` as the same page describes that one.
    let mut in_blocks = sample("block_actions");
    in_blocks["container"] = json!({
        "type": "message", "message_ts": "1548261231.000200", "channel_id": "CBR2V3XEX", "is_ephemeral": false
    });
    let (event, _) = interaction(in_blocks).expect("a click");
    assert!(matches!(event.kind, InboundKind::ButtonPressed { ref message, .. } if *message == pressed_on));
}

#[test]
fn view_submission_is_the_form_s_fields_where_the_modal_was_opened() {
    // https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload
    let published = sample("view_submission");
    // The published view lacks `team_id`, which every real one carries and
    // slack-morphism requires: without it the payload does not parse.
    assert!(serde_json::from_value::<SlackInteractionEvent>(published.clone()).is_err());
    let mut payload = published;
    payload["view"]["team_id"] = json!("T1234567");
    // Another app's modal (its `private_metadata` is not askgate's) is not
    // askgate's business.
    assert!(interaction(payload.clone()).is_none());

    // As askgate's own modal comes back: its `private_metadata` says where
    // the button that opened it was (the only change).
    let origin = Origin {
        conversation: "C0PROMPT".into(),
        group: true,
        thread_ts: Some("1700000000.000100".into()),
    };
    payload["view"]["private_metadata"] = json!(serde_json::to_string(&origin).unwrap());
    let (event, ack) = interaction(payload).expect("a submission");
    assert_eq!(event.event_id, "VNHU13V36:156663117.cd33ad1f");
    assert_eq!(
        (event.user.id.as_str(), event.user.display_name.as_str()),
        ("U1234567", "example-user")
    );
    assert_eq!(
        (event.conversation.as_str(), event.conversation_kind),
        ("C0PROMPT", ConversationKind::Group)
    );
    assert_eq!(
        event.kind,
        InboundKind::FormSubmitted {
            token: "modal-with-inputs".into(),
            values: vec![
                FormValue::typed("multiline", "This is my example inputted value"),
                // A conversations_select has no text value: read as empty.
                FormValue::typed("target_channel", ""),
            ],
        }
    );
    assert_eq!(ack.kind, AckKind::Submission);
    assert_eq!(ack.thread_ts.as_deref(), Some("1700000000.000100"));
}

// The `message.im` sample itself is decoded in `tests/slack/decode.rs`.

#[test]
fn an_app_mention_is_not_read_twice() {
    // https://docs.slack.dev/reference/events/app_mention
    let callback = events_api(sample("app_mention"));
    assert_eq!(callback.event_id.to_string(), "Ev123ABC456");
    let SlackEventCallbackBody::AppMention(mention) = &callback.event else {
        panic!("an app_mention: {:?}", callback.event);
    };
    assert_eq!(mention.channel.to_string(), "C123ABC456");
    assert_eq!(mention.user.to_string(), "U061F7AUR");
    assert_eq!(
        mention.content.text.as_deref(),
        Some("<@U0LAN0Z89> is it everything a river should be?")
    );
    // askgate reads the same words from the channel's `message` event
    // (docs/channels/slack.md subscribes to `message.*` only): the mention
    // itself is ignored, so a reply is never taken twice.
    assert!(event(callback).is_none());
}

#[test]
fn socket_mode_envelopes_carry_the_same_payloads() {
    // https://docs.slack.dev/apis/events-api/using-socket-mode
    let envelope = sample("socket_events_api");
    assert_eq!(envelope["type"], "events_api");
    assert_eq!(envelope["envelope_id"], "dbdd0ef3-1543-4f94-bfb4-133d0e6c1545");
    // Socket Mode hands on the payload as SlackPushEventCallback (no
    // `SlackPushEvent` tag around it).
    let callback: SlackPushEventCallback = serde_json::from_value(envelope["payload"].clone()).unwrap();
    let (event, _) = event(callback).expect("a message");
    assert_eq!(
        (event.event_id.as_str(), event.conversation.as_str()),
        ("Ev0PV52K21", "D024BE91L")
    );
    assert!(matches!(event.kind, InboundKind::TextReply { ref text, .. } if text == "Hello hello can you hear me?"));

    let envelope = sample("socket_interactive");
    assert_eq!(
        (&envelope["type"], &envelope["accepts_response_payload"]),
        (&json!("interactive"), &json!(true))
    );
    let (event, _) = interaction(envelope["payload"].clone()).expect("a click");
    assert_eq!(event.user.id, "U123ABC456");
    assert_eq!(
        event.kind,
        InboundKind::ButtonPressed {
            token: "click_me_123".into(),
            message: MessageRef {
                conversation: "C123ABC456".into(),
                message: "1548261231.000200".into(),
            },
        }
    );
}

#[test]
fn url_verification_is_a_challenge_not_an_event() {
    // https://docs.slack.dev/reference/events/url_verification
    let SlackPushEvent::UrlVerification(verification) = serde_json::from_value(sample("url_verification")).unwrap()
    else {
        panic!("a url_verification");
    };
    assert_eq!(
        verification.challenge,
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
}
