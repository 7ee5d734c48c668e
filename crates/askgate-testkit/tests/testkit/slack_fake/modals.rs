//! Modals: slack-morphism opens one with a click's trigger id (once, and
//! only while it is fresh); a bad view is refused as Slack refuses it; a
//! person submits it and the acknowledgement shows errors, then closes it.

use std::time::Duration;

use askgate_testkit::slack::{Input, ViewOutcome};
use serde_json::{Value, json};
use slack_morphism::prelude::*;

use super::{Listener, WAIT, World, api_error, bot_token, question, world};

fn reason_modal(title: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": "reason",
        "private_metadata": "q1",
        "title": { "type": "plain_text", "text": title },
        "submit": { "type": "plain_text", "text": "Send" },
        "blocks": [
            { "type": "input", "block_id": "reason", "label": { "type": "plain_text", "text": "Why?" },
              "element": { "type": "plain_text_input", "action_id": "text", "multiline": true,
                           "placeholder": { "type": "plain_text", "text": "Tell us" } } },
            { "type": "input", "block_id": "tags", "optional": true,
              "label": { "type": "plain_text", "text": "Tags" },
              "element": { "type": "checkboxes", "action_id": "picked", "options": [
                  { "text": { "type": "plain_text", "text": "Urgent" }, "value": "urgent" },
                  { "text": { "type": "plain_text", "text": "Later" }, "value": "later" },
              ] } }
        ]
    })
}

fn open_request(trigger_id: &str, view: Value) -> SlackApiViewsOpenRequest {
    SlackApiViewsOpenRequest::new(trigger_id.to_owned().into(), serde_json::from_value(view).unwrap())
}

/// Opens the reason modal with slack-morphism; returns its id.
pub(crate) async fn open_reason_modal(world: &World, trigger_id: &str) -> String {
    let opened = world
        .client
        .open_session(&bot_token())
        .views_open(&open_request(trigger_id, reason_modal("Why not?")))
        .await
        .unwrap();
    opened.view.state_params.id.0
}

#[tokio::test]
async fn a_trigger_id_opens_one_modal_while_it_is_fresh() {
    let world = world().await;
    let fake = &world.fake;
    fake.echo_bot_messages(false);
    let mut listener = Listener::start(fake).await;
    listener.hello().await;
    let token = bot_token();
    let session = world.client.open_session(&token);
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;

    let click = fake.click(&world.alice, &world.general.id, &ts, "deny");
    let SlackInteractionEvent::BlockActions(actions) = listener.interaction().await else {
        panic!("not block_actions");
    };
    let trigger = actions.trigger_id.0;
    let too_long = session
        .views_open(&open_request(&trigger, reason_modal(&"x".repeat(25))))
        .await;
    let refused = api_error(too_long);
    assert_eq!(refused.code, "invalid_arguments");
    assert!(
        refused
            .http_response_body
            .unwrap()
            .contains("[ERROR] must be less than 25 characters [json-pointer:/view/title/text]")
    );

    let opened = session
        .views_open(&open_request(&trigger, reason_modal("Why not?")))
        .await
        .unwrap();
    let SlackView::Modal(modal) = &opened.view.view else {
        panic!("not a modal");
    };
    assert_eq!(modal.callback_id.as_ref().unwrap().0, "reason");
    assert_eq!(modal.private_metadata.as_deref(), Some("q1"));
    let view = fake.wait_for_view(&click.trigger_id, WAIT).await.unwrap();
    assert_eq!(view.id, opened.view.state_params.id.0);
    assert_eq!(view.user, world.alice.id);
    assert_eq!(view.json["blocks"][0]["element"]["action_id"], "text");

    let again = session.views_open(&open_request(&trigger, reason_modal("Again"))).await;
    assert_eq!(api_error(again).code, "exchanged_trigger_id");
    let unknown = session
        .views_open(&open_request("1.2.3", reason_modal("Why not?")))
        .await;
    assert_eq!(api_error(unknown).code, "invalid_trigger_id");

    fake.set_trigger_lifetime(Duration::from_millis(100));
    fake.click(&world.bob, &world.general.id, &ts, "deny");
    let SlackInteractionEvent::BlockActions(late) = listener.interaction().await else {
        panic!("not block_actions");
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let expired = session
        .views_open(&open_request(&late.trigger_id.0, reason_modal("Why not?")))
        .await;
    assert_eq!(api_error(expired).code, "expired_trigger_id");
    assert_eq!(fake.views().len(), 1);
    listener.stop().await;
}

#[tokio::test]
async fn a_submission_shows_the_app_s_errors_then_closes() {
    let world = world().await;
    let fake = &world.fake;
    fake.echo_bot_messages(false);
    let mut listener = Listener::start(fake).await;
    listener.hello().await;
    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let click = fake.click(&world.alice, &world.general.id, &ts, "deny");
    listener.interaction().await;
    let view = open_reason_modal(&world, &click.trigger_id).await;

    let errors: SlackViewSubmissionResponse = serde_json::from_value(json!({
        "response_action": "errors", "errors": { "reason": "Say more" }
    }))
    .unwrap();
    listener.handlers.answers.lock().unwrap().push_back(errors.into());
    let submission = fake.submit_view(
        &world.alice,
        &view,
        [("reason", Input::text("no")), ("tags", Input::options(["urgent"]))],
    );
    let SlackInteractionEvent::ViewSubmission(submitted) = listener.interaction().await else {
        panic!("not view_submission");
    };
    assert_eq!(submitted.user.id.0, world.alice.id);
    assert_eq!(submitted.view.state_params.id.0, view);
    let values = submitted.view.state_params.state.unwrap().values;
    let reason = &values[&"reason".into()][&"text".into()];
    assert_eq!(reason.value.as_deref(), Some("no"));
    let tags = values[&"tags".into()][&"picked".into()]
        .selected_options
        .clone()
        .unwrap();
    assert_eq!(
        tags.iter().map(|tag| tag.value.as_str()).collect::<Vec<_>>(),
        ["urgent"]
    );
    let SlackView::Modal(modal) = submitted.view.view else {
        panic!("not a modal");
    };
    assert_eq!(modal.private_metadata.as_deref(), Some("q1"));

    let outcome = fake.wait_for_outcome(&submission, WAIT).await.unwrap();
    assert_eq!(
        outcome,
        ViewOutcome::Errors([("reason".to_owned(), "Say more".to_owned())].into())
    );
    let shown = fake.view(&view).unwrap();
    assert!(shown.open);
    assert_eq!(shown.errors["reason"], "Say more");
    let frame = fake
        .socket_frames()
        .into_iter()
        .rev()
        .find(|frame| frame.json["type"] == "interactive")
        .unwrap();
    assert_eq!(
        frame.json["accepts_response_payload"], true,
        "a submission takes a response"
    );

    let submission = fake.submit_view(&world.alice, &view, [("reason", "the build is red")]);
    assert_eq!(
        fake.wait_for_outcome(&submission, WAIT).await.unwrap(),
        ViewOutcome::Closed
    );
    assert!(!fake.view(&view).unwrap().open);
    listener.stop().await;
}
