//! What a person does, as the payloads show it: a click (and a forged one),
//! a message in a DM and in a thread, an edit, and what the app's answer to
//! a click's `response_url` does.

use askgate_testkit::slack::{DeliveryKind, Ping};
use serde_json::{Value, json};
use slack_morphism::prelude::*;

use super::{question, world};

#[tokio::test]
async fn a_click_carries_the_message_and_a_forged_one_carries_no_value() {
    let world = world().await;
    let fake = &world.fake;
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let click = fake.click(&world.alice, &world.general.id, &ts, "approve");
    assert_eq!(click.value.as_deref(), Some("q1:yes"));
    let payload = &fake.delivery(click.delivery).unwrap().payload;
    let decoded: SlackInteractionEvent = serde_json::from_value(payload.clone()).unwrap();
    assert!(matches!(decoded, SlackInteractionEvent::BlockActions(_)));
    assert_eq!(payload["user"]["username"], "alice");
    assert_eq!(payload["channel"], json!({ "id": world.general.id, "name": "general" }));
    assert_eq!(payload["container"]["is_ephemeral"], false);
    assert_eq!(payload["message"]["ts"], ts);
    assert_eq!(payload["actions"][0]["text"]["text"], "Approve");
    assert_eq!(payload["response_url"], click.response_url);

    let forged = fake.click(&world.bob, &world.general.id, &ts, "not-a-button");
    let action = &fake.delivery(forged.delivery).unwrap().payload["actions"][0];
    assert_eq!(action["action_id"], "not-a-button");
    assert_eq!(action["block_id"], "answers");
    assert!(action.get("value").is_none() && forged.value.is_none());
}

#[tokio::test]
async fn messages_and_edits_come_as_slack_sends_them() {
    let world = world().await;
    let fake = &world.fake;
    fake.echo_bot_messages(false);
    let dm = fake.dm(&world.alice);
    let said = fake.message(
        &world.alice,
        &dm,
        "hi <@U0AGBOT001>, see <https://x.example|this>",
        None,
    );
    let parent = world.post(&world.general.id, "Deploy?", None).await;
    let reply = fake.message(&world.bob, &world.general.id, "yes", Some(&parent));
    fake.edit_message(&world.bob, &world.general.id, &reply, "no");

    let events: Vec<Value> = fake
        .deliveries()
        .into_iter()
        .filter(|delivery| delivery.kind == DeliveryKind::Event)
        .map(|delivery| delivery.payload)
        .collect();
    assert_eq!(events.len(), 3);
    for event in &events {
        let decoded: SlackPushEvent = serde_json::from_value(event.clone()).unwrap();
        let SlackPushEvent::EventCallback(callback) = decoded else {
            panic!("not an event_callback");
        };
        assert!(matches!(callback.event, SlackEventCallbackBody::Message(_)), "{event}");
    }
    let in_dm = &events[0]["event"];
    assert_eq!(in_dm["channel_type"], "im");
    assert_eq!(in_dm["ts"], said);
    let elements = &in_dm["blocks"][0]["elements"][0]["elements"];
    assert_eq!(elements[1], json!({ "type": "user", "user_id": "U0AGBOT001" }));
    assert_eq!(
        elements[3],
        json!({ "type": "link", "url": "https://x.example", "text": "this" })
    );
    assert_eq!(events[1]["event"]["thread_ts"], parent);
    assert_eq!(events[1]["event"]["parent_user_id"], "U0AGBOT001");
    let edit = &events[2]["event"];
    assert_eq!(edit["subtype"], "message_changed");
    assert_eq!(edit["message"]["text"], "no");
    assert_eq!(edit["previous_message"]["text"], "yes");
    assert_eq!(fake.messages(&dm)[0].pings, [Ping::User("U0AGBOT001".into())]);
    assert!(fake.message_at(&world.general.id, &reply).unwrap().edited);
}

#[tokio::test]
async fn a_response_url_posts_ephemerally_or_replaces_the_message() {
    let world = world().await;
    let fake = &world.fake;
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let click = fake.click(&world.alice, &world.general.id, &ts, "approve");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let answer = |body: Value| http.post(&click.response_url).json(&body).send();

    assert_eq!(answer(json!({ "text": "Noted." })).await.unwrap().status(), 200);
    assert_eq!(fake.ephemerals_for(&world.alice.id)[0].text, "Noted.");
    assert!(fake.ephemerals_for(&world.bob.id).is_empty());

    let replaced = answer(json!({ "replace_original": true, "text": "Approved by alice" }))
        .await
        .unwrap();
    assert_eq!(replaced.status(), 200);
    let seen = fake.message_at(&world.general.id, &ts).unwrap();
    assert_eq!(seen.text, "Approved by alice");
    assert!(seen.edited && seen.buttons().is_empty());
    assert_eq!(fake.calls_to("response_url").len(), 2);
}
