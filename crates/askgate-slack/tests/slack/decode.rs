//! Decoding Slack's own payload samples (`tests/samples`, from Slack's
//! documentation; README.md there names each source) with slack-morphism's
//! models and askgate's decoder.

use askgate_core::channel::{ConversationKind, InboundKind, MessageRef};
use askgate_core::form::FormValue;
use askgate_slack::decode::{AckKind, Update, decode};
use askgate_slack::render::Origin;
use serde_json::{Value, json};
use slack_morphism::prelude::*;

fn sample(name: &str) -> Value {
    let path = format!("{}/tests/samples/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn interaction(value: Value) -> Update {
    let event: SlackInteractionEvent = serde_json::from_value(value).expect("slack-morphism parses it");
    Update::Interaction {
        event: Box::new(event),
        name: None,
    }
}

fn event(value: Value) -> Update {
    let pushed: SlackPushEvent = serde_json::from_value(value).expect("slack-morphism parses it");
    let SlackPushEvent::EventCallback(callback) = pushed else {
        panic!("an event_callback");
    };
    Update::Event {
        callback: Box::new(callback),
        name: None,
    }
}

#[test]
fn a_button_click_is_a_press_of_its_value_on_its_message() {
    let (event, ack) = decode(&interaction(sample("block_actions"))).expect("decoded");
    assert_eq!(event.user.id, "UA8RXUSPL");
    assert_eq!(
        event.user.display_name, "jtorrance",
        "the payload's name, none looked up"
    );
    assert_eq!(event.conversation, "CBR2V3XEX");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    assert_eq!(
        event.kind,
        InboundKind::ButtonPressed {
            token: "click_me_123".into(),
            message: MessageRef {
                conversation: "CBR2V3XEX".into(),
                message: "1548261231.000200".into(),
            },
        }
    );
    assert_eq!(
        ack.kind,
        AckKind::Click {
            trigger_id: "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3".into()
        }
    );
    assert_eq!((ack.channel.as_str(), ack.user.as_str()), ("CBR2V3XEX", "UA8RXUSPL"));
    // A looked-up display name wins over the username.
    let named = interaction(sample("block_actions")).named(Some("Jack Torrance".into()));
    assert_eq!(decode(&named).expect("decoded").0.user.display_name, "Jack Torrance");
}

#[test]
fn a_dm_message_is_a_direct_typed_reply() {
    let (event, ack) = decode(&event(sample("message_im"))).expect("decoded");
    assert_eq!(event.event_id, "Ev0PV52K21");
    assert_eq!(event.conversation, "D024BE91L");
    assert_eq!(event.conversation_kind, ConversationKind::Direct);
    assert_eq!(event.user.id, "U2147483697");
    assert_eq!(
        event.kind,
        InboundKind::TextReply {
            message: MessageRef {
                conversation: "D024BE91L".into(),
                message: "1355517523.000005".into(),
            },
            text: "Hello hello can you hear me?".into(),
            reply_to: None,
        }
    );
    assert_eq!((ack.kind, ack.thread_ts), (AckKind::Message, None));
}

#[test]
fn a_reply_in_a_thread_replies_to_the_thread_s_first_message() {
    let thread = MessageRef {
        conversation: "C123ABC456".into(),
        message: "1673464730.703009".into(),
    };
    // As published (also sent to the channel), and as a plain reply.
    let mut plain = sample("message_thread");
    let inner = plain["event"].as_object_mut().expect("an event");
    inner.remove("subtype");
    inner.remove("root");
    for sample in [sample("message_thread"), plain] {
        let (event, ack) = decode(&event(sample)).expect("decoded");
        assert_eq!(event.conversation_kind, ConversationKind::Group);
        let InboundKind::TextReply { reply_to, text, .. } = &event.kind else {
            panic!("a typed reply: {event:?}");
        };
        assert_eq!(text, "broadcasting this reply");
        assert_eq!(reply_to.as_ref(), Some(&thread));
        assert_eq!(ack.thread_ts.as_deref(), Some("1673464730.703009"));
    }
}

#[test]
fn edits_and_bot_messages_are_not_answers() {
    assert!(decode(&event(sample("message_changed"))).is_none());
    // Slack's sample lacks `authorizations[0].user_id`, which every real
    // event carries and slack-morphism requires.
    let mut bot = sample("message_bot");
    assert!(serde_json::from_value::<SlackPushEvent>(bot.clone()).is_err());
    bot["authorizations"][0]["user_id"] = json!("U0BOT");
    assert!(decode(&event(bot)).is_none());
}

#[test]
fn entities_in_a_typed_reply_are_read_as_typed() {
    let mut message = sample("message_im");
    message["event"]["text"] = json!("1: a &lt;b&gt; &amp; c");
    let (event, _) = decode(&event(message)).expect("decoded");
    let InboundKind::TextReply { text, .. } = event.kind else {
        panic!("a typed reply");
    };
    assert_eq!(text, "1: a <b> & c");
}

/// Slack's sample, as askgate's own modal would come back: its callback id
/// a token and its metadata where it was opened. (The published sample
/// lacks `view.team_id`, which every real payload carries and
/// slack-morphism requires.)
fn submission(blocks: Value) -> Value {
    let mut value = sample("view_submission");
    assert!(serde_json::from_value::<SlackInteractionEvent>(value.clone()).is_err());
    value["view"]["team_id"] = json!("T1234567");
    value["view"]["callback_id"] = json!("ag1:01JQUESTION00000000000000:a");
    let origin = Origin {
        conversation: "C0PROMPT".into(),
        group: true,
        thread_ts: Some("1700000000.000100".into()),
    };
    value["view"]["private_metadata"] = json!(serde_json::to_string(&origin).expect("json"));
    value["view"]["state"]["values"] = blocks;
    value
}

#[test]
fn a_form_submission_reads_each_question_s_field() {
    let values = json!({
        "deploy": {"text": {"type": "plain_text_input", "value": "canary"}},
        "notify#options": {"checked": {"type": "checkboxes", "selected_options": [
            {"text": {"type": "plain_text", "text": "Team channel"}, "value": "0"},
            {"text": {"type": "plain_text", "text": "Nobody"}, "value": "2"}
        ]}},
        "notify": {"text": {"type": "plain_text_input", "value": null}}
    });
    let (event, ack) = decode(&interaction(submission(values))).expect("decoded");
    assert_eq!(event.conversation, "C0PROMPT");
    assert_eq!(event.conversation_kind, ConversationKind::Group);
    assert_eq!(event.event_id, "VNHU13V36:156663117.cd33ad1f");
    assert_eq!(
        event.kind,
        InboundKind::FormSubmitted {
            token: "ag1:01JQUESTION00000000000000:a".into(),
            values: vec![
                FormValue::typed("deploy", "canary"),
                FormValue::typed("notify", "").with_checked(vec![0, 2]),
            ],
        }
    );
    assert_eq!(ack.kind, AckKind::Submission);
    assert_eq!(ack.thread_ts.as_deref(), Some("1700000000.000100"));
}

#[test]
fn other_s_modal_is_free_text_and_a_foreign_modal_is_ignored() {
    let values = json!({"askgate:answer": {"text": {"type": "plain_text_input", "value": "the lab cluster"}}});
    let (event, _) = decode(&interaction(submission(values))).expect("decoded");
    assert_eq!(
        event.kind,
        InboundKind::FreeTextSubmitted {
            token: "ag1:01JQUESTION00000000000000:a".into(),
            text: "the lab cluster".into(),
        }
    );
    // Another app's modal (Slack's sample as published, with its team id):
    // no askgate metadata, nothing to do.
    let mut foreign = sample("view_submission");
    foreign["view"]["team_id"] = json!("T1234567");
    assert!(decode(&interaction(foreign)).is_none());
}

#[test]
fn a_mention_of_the_bot_saying_start_is_a_greeting_unless_in_a_thread() {
    let with = |name: &str, text: &str| {
        let mut value = sample(name);
        value["event"]["text"] = text.into();
        decode(&event(value)).expect("decoded").0.kind
    };
    assert!(matches!(
        with("message_im", "<@U0BOT> start"),
        InboundKind::Greeting { .. }
    ));
    assert!(matches!(with("message_im", "start"), InboundKind::TextReply { .. }));
    // A reply in a question's thread is an answer, whatever it says.
    assert!(matches!(
        with("message_thread", "<@U0BOT> start"),
        InboundKind::TextReply { .. }
    ));
}
