//! Decoding timeline events, with the Matrix spec's and MSC3381's own
//! samples (client-server API, "m.room.message", "Rich replies",
//! "Threading"; MSC3381 "Chat Polls") as the homeserver sends them.

use askgate_core::channel::{ConversationKind, InboundKind, MessageRef};
use askgate_matrix::decode::{Update, decode};
use serde_json::{Value, json};

const BOT: &str = "@askgate:example.org";
const ROOM: &str = "!636q39766251:example.com";

fn update(event: Value) -> Update {
    Update {
        room: ROOM.into(),
        kind: ConversationKind::Group,
        sender_name: Some("Alice".into()),
        event,
    }
}

fn message(id: &str) -> MessageRef {
    MessageRef {
        conversation: ROOM.into(),
        message: id.into(),
    }
}

/// The spec's `m.room.message` example (`m.text`), as `/sync` delivers it.
fn text_message(content: &Value) -> Value {
    json!({
        "content": content,
        "event_id": "$143273582443PhrSn:example.org",
        "origin_server_ts": 1_432_735_824_653_u64,
        "room_id": ROOM,
        "sender": "@example:example.org",
        "type": "m.room.message",
        "unsigned": {"age": 1234}
    })
}

#[test]
fn a_text_message_is_a_typed_reply_from_its_sender() {
    let event = text_message(&json!({"body": "This is an example text message", "msgtype": "m.text"}));
    let (inbound, ack) = decode(&update(event), BOT).expect("a message");
    assert_eq!(inbound.event_id, "$143273582443PhrSn:example.org");
    assert_eq!(inbound.user.id, "@example:example.org");
    assert_eq!(inbound.user.display_name, "Alice");
    assert_eq!(inbound.conversation, ROOM);
    assert_eq!(inbound.thread, None);
    assert_eq!(
        inbound.kind,
        InboundKind::TextReply {
            message: message("$143273582443PhrSn:example.org"),
            text: "This is an example text message".into(),
            reply_to: None
        }
    );
    assert_eq!(ack.reply_to, "$143273582443PhrSn:example.org");
}

#[test]
fn a_rich_reply_names_the_message_it_answers_without_its_quoted_fallback() {
    // The spec's rich reply, with the fallback older clients still send.
    let event = text_message(&json!({
        "msgtype": "m.text",
        "body": "> <@alice:example.org> This is the original body\n\nThis is where the reply goes",
        "m.relates_to": {"m.in_reply_to": {"event_id": "$another_event"}}
    }));
    let (inbound, _) = decode(&update(event), BOT).expect("a reply");
    let InboundKind::TextReply { text, reply_to, .. } = inbound.kind else {
        panic!("a typed reply: {:?}", inbound.kind)
    };
    assert_eq!(text, "This is where the reply goes");
    assert_eq!(reply_to, Some(message("$another_event")));
}

#[test]
fn a_thread_message_is_in_its_thread_and_its_fallback_reply_is_no_reply() {
    // The spec's threaded event, falling back to a reply to the thread's latest event.
    let event = text_message(&json!({
        "body": "This is a thread message",
        "msgtype": "m.text",
        "m.relates_to": {
            "rel_type": "m.thread",
            "event_id": "$root",
            "is_falling_back": true,
            "m.in_reply_to": {"event_id": "$latest"}
        }
    }));
    let (inbound, ack) = decode(&update(event.clone()), BOT).expect("a thread message");
    assert_eq!(inbound.thread.as_deref(), Some("$root"));
    assert!(
        matches!(inbound.kind, InboundKind::TextReply { reply_to: None, .. }),
        "{:?}",
        inbound.kind
    );
    assert_eq!(ack.thread.as_deref(), Some("$root"));
    // A real reply inside the thread.
    let mut reply = event;
    reply["content"]["m.relates_to"]["is_falling_back"] = json!(false);
    let (inbound, _) = decode(&update(reply), BOT).expect("a reply in a thread");
    assert!(
        matches!(&inbound.kind, InboundKind::TextReply { reply_to: Some(to), .. } if to.message == "$latest"),
        "{:?}",
        inbound.kind
    );
}

#[test]
fn a_poll_response_is_a_tap_on_its_answer_in_either_namespace() {
    // MSC3381's response (stable names), and the unstable form clients send.
    let stable = json!({
        "type": "m.poll.response",
        "sender": "@bob:example.org",
        "event_id": "$vote1",
        "content": {
            "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll_start_event_id"},
            "m.selections": ["poutine"]
        }
    });
    let unstable = json!({
        "type": "org.matrix.msc3381.poll.response",
        "sender": "@bob:example.org",
        "event_id": "$vote2",
        "content": {
            "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll_start_event_id"},
            "org.matrix.msc3381.poll.response": {"answers": ["poutine"]}
        }
    });
    for event in [stable, unstable] {
        let (inbound, ack) = decode(&update(event), BOT).expect("a vote");
        assert_eq!(
            inbound.kind,
            InboundKind::ButtonPressed {
                token: "poutine".into(),
                message: message("$poll_start_event_id")
            }
        );
        assert_eq!(inbound.user.id, "@bob:example.org");
        assert_eq!(ack.reply_to, "$poll_start_event_id", "a reaction replies to the poll");
    }
    // "Can be empty to denote no selection": a vote taken back is nothing.
    let unvote = json!({
        "type": "m.poll.response",
        "sender": "@bob:example.org",
        "event_id": "$vote3",
        "content": {
            "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll_start_event_id"},
            "m.selections": []
        }
    });
    assert_eq!(decode(&update(unvote), BOT), None);
}

#[test]
fn commands_greetings_and_what_askgate_ignores() {
    let typed = |body: &str| text_message(&json!({"body": body, "msgtype": "m.text"}));
    for (body, text) in [
        ("!skip", "/skip"),
        ("/skip", "/skip"),
        ("!link", "/link"),
        ("!Skip", "/skip"),
    ] {
        let (inbound, _) = decode(&update(typed(body)), BOT).expect("a command");
        assert!(
            matches!(&inbound.kind, InboundKind::TextReply { text: said, .. } if said == text),
            "{body}: {:?}",
            inbound.kind
        );
    }
    for body in ["!start", "/help"] {
        let (inbound, _) = decode(&update(typed(body)), BOT).expect("a greeting");
        assert!(matches!(inbound.kind, InboundKind::Greeting { .. }), "{body}");
    }
    // Its own events, edits, notices, state, anything still encrypted.
    let mut own = typed("hello");
    own["sender"] = json!(BOT);
    let edit = text_message(&json!({
        "body": "* fixed", "msgtype": "m.text",
        "m.new_content": {"body": "fixed", "msgtype": "m.text"},
        "m.relates_to": {"rel_type": "m.replace", "event_id": "$original"}
    }));
    let notice = text_message(&json!({"body": "a bot said", "msgtype": "m.notice"}));
    let state = json!({"type": "m.room.member", "state_key": "@bob:example.org", "sender": "@bob:example.org",
        "event_id": "$m", "content": {"membership": "join"}});
    let encrypted = json!({"type": "m.room.encrypted", "sender": "@bob:example.org", "event_id": "$e",
        "content": {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEn…"}});
    for event in [own, edit, notice, state, encrypted] {
        assert_eq!(decode(&update(event.clone()), BOT), None, "{event}");
    }
    // An image is something said that is no text.
    let image = text_message(
        &json!({"body": "filename.jpg", "msgtype": "m.image", "url": "mxc://example.org/JWEIFJgwEIhweiWJE"}),
    );
    let (inbound, _) = decode(&update(image), BOT).expect("an image");
    assert!(matches!(inbound.kind, InboundKind::NonText { .. }));
}
