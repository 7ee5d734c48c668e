//! Socket Mode: slack-morphism's listener connects, gets `hello`, receives
//! events and interactions and acknowledges them; an event it does not
//! acknowledge comes again; `disconnect` and a dropped connection make it
//! connect again, and nothing is lost.

use std::time::{Duration, Instant};

use askgate_testkit::slack::{APP_ID, BOT_ID, DeliveryStatus, Direction, FakeSlack, SocketFrame, TEAM_ID, Via};
use serde_json::Value;
use slack_morphism::prelude::*;

use super::{Listener, WAIT, question, world};

/// The frames the fake sent of this envelope `type`.
fn sent(fake: &FakeSlack, kind: &str) -> Vec<SocketFrame> {
    fake.socket_frames()
        .into_iter()
        .filter(|frame| frame.direction == Direction::Sent && frame.json["type"] == kind)
        .collect()
}

/// Waits until `done` holds, checking every few milliseconds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn slack_morphism_gets_hello_events_and_clicks_and_acknowledges_them() {
    let world = world().await;
    let fake = &world.fake;
    let mut listener = Listener::start(fake).await;
    let hello = listener.hello().await;
    assert_eq!(hello["num_connections"], 1);
    assert_eq!(hello["connection_info"]["app_id"], APP_ID);
    assert!(hello["debug_info"]["host"].is_string());
    assert_eq!(fake.calls_to("apps.connections.open").len(), 1);

    // The bot's own post comes back as an event, which an app must ignore.
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let own = listener
        .expect("the bot's own message", |seen| match seen {
            super::Seen::Push(push) => match &push.event {
                SlackEventCallbackBody::Message(message) => Some(message.clone()),
                _ => None,
            },
            _ => None,
        })
        .await;
    assert_eq!(own.sender.bot_id.unwrap().0, BOT_ID);
    assert_eq!(own.origin.ts.0, ts);

    let said = fake.message(&world.alice, &world.general.id, "<@U0AGBOT001> ship it", None);
    let (push, message) = listener.person_message().await;
    assert_eq!(push.team_id.0, TEAM_ID);
    assert_eq!(push.api_app_id.0, APP_ID);
    assert_eq!(message.origin.ts.0, said);
    assert_eq!(message.origin.channel.unwrap().0, world.general.id);
    assert_eq!(message.origin.channel_type.unwrap().0, "channel");
    assert_eq!(message.sender.user.unwrap().0, world.alice.id);
    assert_eq!(message.content.unwrap().text.as_deref(), Some("<@U0AGBOT001> ship it"));

    let click = fake.click(&world.alice, &world.general.id, &ts, "approve");
    let SlackInteractionEvent::BlockActions(actions) = listener.interaction().await else {
        panic!("not block_actions");
    };
    assert_eq!(actions.user.unwrap().id.0, world.alice.id);
    assert_eq!(actions.trigger_id.0, click.trigger_id);
    let action = &actions.actions.unwrap()[0];
    assert_eq!(action.action_id.0, "approve");
    assert_eq!(action.value.as_deref(), Some("q1:yes"), "the value as stored");
    assert_eq!(action.block_id.as_ref().unwrap().0, "answers");
    let SlackInteractionActionContainer::Message(container) = actions.container else {
        panic!("not a message container");
    };
    assert_eq!(container.message_ts.0, ts);
    assert_eq!(actions.message.unwrap().origin.ts.0, ts);

    let acked = fake.wait_for_ack(click.delivery, WAIT).await.unwrap();
    assert_eq!(
        acked.status,
        DeliveryStatus::Acked {
            payload: None,
            late: false
        }
    );
    let Via::Socket { envelope_id, .. } = &acked.attempts[0].via else {
        panic!("not sent by Socket Mode");
    };
    let interactive = sent(fake, "interactive");
    assert_eq!(interactive[0].json["accepts_response_payload"], false);
    assert!(
        fake.socket_frames()
            .iter()
            .any(|frame| frame.direction == Direction::Received && frame.json["envelope_id"] == envelope_id.as_str()),
        "the ack is recorded"
    );
    let events = sent(fake, "events_api");
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].json["retry_attempt"], 0);
    assert_eq!(events[1].json["accepts_response_payload"], false);
    listener.stop().await;
}

#[tokio::test]
async fn an_event_not_acknowledged_comes_again_as_a_retry() {
    let world = world().await;
    let fake = &world.fake;
    fake.echo_bot_messages(false);
    fake.set_ack_timeout(Duration::from_millis(800));
    let mut listener = Listener::start(fake).await;
    listener.hello().await;
    *listener.handlers.refuse_events.lock().unwrap() = 1;

    let said = fake.message(&world.alice, &world.general.id, "hello?", None);
    let (first, message) = listener.person_message().await;
    assert_eq!(message.origin.ts.0, said);
    let delivery = fake.deliveries().pop().unwrap();
    let delivery = fake.wait_for_ack(delivery.id, WAIT).await.unwrap();
    assert_eq!(delivery.attempts.iter().map(|a| a.retry).collect::<Vec<_>>(), [0, 1]);
    let envelopes = sent(fake, "events_api");
    assert_eq!(envelopes.len(), 2);
    assert_eq!(envelopes[1].json["retry_attempt"], 1);
    assert_eq!(envelopes[1].json["retry_reason"], "timeout");
    assert_ne!(envelopes[0].json["envelope_id"], envelopes[1].json["envelope_id"]);
    assert_eq!(
        envelopes[1].json["payload"]["event_id"], first.event_id.0,
        "the same event, in a new envelope"
    );

    // A redelivery on demand is a retry of the same event too.
    let again = fake.redeliver(&first.event_id.0);
    let (second, _) = listener.person_message().await;
    assert_eq!(second.event_id, first.event_id);
    let again = fake.wait_for_ack(again, WAIT).await.unwrap();
    assert_eq!(again.attempts[0].retry, 2);
    listener.stop().await;
}

#[tokio::test]
async fn disconnect_and_a_dropped_socket_make_slack_morphism_connect_again() {
    let world = world().await;
    let fake = &world.fake;
    fake.echo_bot_messages(false);
    let mut listener = Listener::start(fake).await;
    listener.hello().await;

    assert_eq!(fake.send_disconnect("refresh_requested"), 1);
    listener.hello().await;
    let connections = fake.wait_for_connections(2, WAIT).await.unwrap();
    assert_eq!(connections[0].disconnect_reason.as_deref(), Some("refresh_requested"));
    eventually("the old connection closing", || fake.connections()[0].closed).await;
    let frame: Vec<Value> = sent(fake, "disconnect").into_iter().map(|frame| frame.json).collect();
    assert_eq!(frame[0]["reason"], "refresh_requested");
    assert_eq!(
        fake.calls_to("apps.connections.open").len(),
        2,
        "a fresh URL for each connection"
    );

    fake.message(&world.alice, &world.general.id, "after refresh", None);
    let (_, message) = listener.person_message().await;
    assert_eq!(message.content.unwrap().text.as_deref(), Some("after refresh"));
    // Its acknowledgement is on its way; a drop before it arrives would (rightly) send it again.
    let delivered = fake.deliveries().pop().unwrap();
    fake.wait_for_ack(delivered.id, WAIT).await.unwrap();

    // Dropped without a close frame; what is said meanwhile waits for the next connection.
    assert_eq!(fake.drop_socket(), 1);
    let said = fake.message(&world.alice, &world.general.id, "while away", None);
    fake.wait_for_connections(3, WAIT).await.unwrap();
    let (_, message) = listener.person_message().await;
    assert_eq!(message.origin.ts.0, said);
    assert!(fake.connections()[1].closed);
    listener.stop().await;
}
