//! HTTP delivery: events and interactions reach an app's request URLs
//! signed as Slack signs them (slack-morphism's verifier agrees), in the
//! shapes slack-morphism decodes; a failed event comes again with Slack's
//! retry headers; `url_verification`, and forged, missing and stale
//! signatures.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_testkit::fake::Loopback;
use askgate_testkit::slack::{DeliveryStatus, FakeSlack, SIGNING_SECRET, SignatureMode, Via, ViewOutcome, sign};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;

use super::{WAIT, question, world};

/// What the app does with the next request.
#[derive(Debug, Clone)]
enum Reply {
    Status(u16),
    Sleep(Duration),
    Json(Value),
}

/// One request the app received.
#[derive(Debug, Clone)]
struct Hit {
    path: String,
    headers: HashMap<String, String>,
    body: String,
    verified: bool,
}

#[derive(Default)]
struct App {
    hits: Mutex<Vec<Hit>>,
    script: Mutex<VecDeque<Reply>>,
}

/// An app that verifies every request with slack-morphism's verifier (401
/// if it fails), answers `url_verification`, and otherwise as scripted.
async fn receive(State(app): State<Arc<App>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body = String::from_utf8_lossy(&body).into_owned();
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or_default().to_owned()))
        .collect();
    let slack_morphism = SlackEventSignatureVerifier::new(&SIGNING_SECRET.to_owned().into());
    let verified = match (
        headers.get(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
        headers.get(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
    ) {
        (Some(hash), Some(ts)) => slack_morphism.verify(hash, &body, ts).is_ok(),
        _ => false,
    };
    app.hits.lock().unwrap().push(Hit {
        path: uri.path().to_owned(),
        headers,
        body: body.clone(),
        verified,
    });
    if !verified {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if let Ok(SlackPushEvent::UrlVerification(challenge)) = serde_json::from_str::<SlackPushEvent>(&body) {
        return axum::Json(json!({ "challenge": challenge.challenge })).into_response();
    }
    let reply = app.script.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Status(status)) => StatusCode::from_u16(status).unwrap().into_response(),
        Some(Reply::Sleep(delay)) => {
            tokio::time::sleep(delay).await;
            StatusCode::OK.into_response()
        }
        Some(Reply::Json(value)) => axum::Json(value).into_response(),
        None => StatusCode::OK.into_response(),
    }
}

async fn app() -> (Arc<App>, Loopback, String) {
    let app = Arc::new(App::default());
    let server = Loopback::serve(Router::new().fallback(receive).with_state(Arc::clone(&app)))
        .await
        .unwrap();
    let base = format!("http://{}", server.addr());
    (app, server, base)
}

/// Waits until the app has received `n` requests on `path`.
async fn hits(app: &App, path: &str, n: usize) -> Vec<Hit> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let found: Vec<Hit> = app
            .hits
            .lock()
            .unwrap()
            .iter()
            .filter(|hit| hit.path == path)
            .cloned()
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} request(s) on {path} within {WAIT:?}; got {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn deliver_to(fake: &FakeSlack, base: &str) {
    fake.deliver_over_http(&format!("{base}/slack/events"), &format!("{base}/slack/interactions"));
}

#[tokio::test]
async fn events_and_clicks_come_signed_in_shapes_slack_morphism_reads() {
    let world = world().await;
    let fake = &world.fake;
    let (app, _server, base) = app().await;
    fake.echo_bot_messages(false);
    deliver_to(fake, &base);

    let said = fake.message(&world.alice, &world.general.id, "hello", None);
    let event = hits(&app, "/slack/events", 1).await.remove(0);
    assert!(event.verified, "slack-morphism's verifier accepts the signature");
    assert_eq!(event.headers["content-type"], "application/json");
    assert!(!event.headers.contains_key("x-slack-retry-num"));
    let SlackPushEvent::EventCallback(callback) = serde_json::from_str(&event.body).unwrap() else {
        panic!("not an event_callback");
    };
    let SlackEventCallbackBody::Message(message) = callback.event else {
        panic!("not a message event");
    };
    assert_eq!(message.origin.ts.0, said);

    let ts = world.post(&world.general.id, "Deploy?", Some(question())).await;
    let click = fake.click(&world.bob, &world.general.id, &ts, "deny");
    let interaction = hits(&app, "/slack/interactions", 1).await.remove(0);
    assert!(interaction.verified);
    assert_eq!(interaction.headers["content-type"], "application/x-www-form-urlencoded");
    let payload = interaction.body.strip_prefix("payload=").unwrap();
    let payload: String = url_decode(payload);
    let SlackInteractionEvent::BlockActions(actions) = serde_json::from_str(&payload).unwrap() else {
        panic!("not block_actions");
    };
    assert_eq!(actions.actions.unwrap()[0].value.as_deref(), Some("q1:no"));
    assert_eq!(actions.trigger_id.0, click.trigger_id);
    let delivery = fake.wait_for_ack(click.delivery, WAIT).await.unwrap();
    assert_eq!(
        delivery.status,
        DeliveryStatus::Acked {
            payload: None,
            late: false
        }
    );
}

fn url_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' => {
                out.push(u8::from_str_radix(&text[at + 1..at + 3], 16).unwrap());
                at += 2;
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_failed_event_comes_again_with_slack_s_retry_headers() {
    let world = world().await;
    let fake = &world.fake;
    let (app, _server, base) = app().await;
    fake.echo_bot_messages(false);
    fake.set_ack_timeout(Duration::from_millis(800));
    fake.set_retry_pause(Duration::from_millis(10));
    app.script
        .lock()
        .unwrap()
        .extend([Reply::Status(500), Reply::Sleep(Duration::from_millis(1500))]);
    deliver_to(fake, &base);

    fake.message(&world.alice, &world.general.id, "are you there?", None);
    let attempts = hits(&app, "/slack/events", 3).await;
    let retry = |hit: &Hit| {
        (
            hit.headers.get("x-slack-retry-num").cloned(),
            hit.headers.get("x-slack-retry-reason").cloned(),
        )
    };
    assert_eq!(retry(&attempts[0]), (None, None));
    assert_eq!(retry(&attempts[1]), (Some("1".into()), Some("http_error".into())));
    assert_eq!(retry(&attempts[2]), (Some("2".into()), Some("http_timeout".into())));
    assert!(attempts.iter().all(|hit| hit.verified && hit.body == attempts[0].body));

    let delivery = fake.deliveries().pop().unwrap();
    let delivery = fake.wait_for_ack(delivery.id, WAIT).await.unwrap();
    assert_eq!(delivery.attempts.len(), 3);
    assert!(matches!(&delivery.attempts[0].via, Via::Http { status: Some(500), .. }));
    assert!(matches!(
        &delivery.attempts[1].via,
        Via::Http {
            status: None,
            error: Some(_),
            ..
        }
    ));
}

#[tokio::test]
async fn url_verification_and_forged_missing_and_stale_signatures() {
    let fake = FakeSlack::start().await;
    let (app, _server, base) = app().await;
    let url = format!("{base}/slack/events");
    let verification = fake.verify_url(&url).await;
    assert!(verification.passed(), "{verification:?}");

    let body = br#"{"type":"event_callback"}"#;
    let answer = |mode| fake.post_signed(&url, body, "application/json", mode);
    assert_eq!(answer(SignatureMode::Valid).await.status, Some(200));
    assert_eq!(answer(SignatureMode::Forged).await.status, Some(401));
    assert_eq!(answer(SignatureMode::Missing).await.status, Some(401));
    assert_eq!(
        answer(SignatureMode::Stale(Duration::from_secs(600))).await.status,
        Some(401)
    );
    let stale = app.hits.lock().unwrap().last().cloned().unwrap();
    let timestamp: u64 = stale.headers["x-slack-request-timestamp"].parse().unwrap();
    assert_eq!(
        stale.headers["x-slack-signature"],
        sign(SIGNING_SECRET, timestamp, body),
        "a stale request is validly signed, only old"
    );
}

#[tokio::test]
async fn a_modal_submitted_over_http_takes_the_answer_s_body() {
    let world = world().await;
    let fake = &world.fake;
    let (app, _server, base) = app().await;
    fake.echo_bot_messages(false);
    deliver_to(fake, &base);
    let ts = world.post(&world.general.id, "Why?", Some(question())).await;
    let click = fake.click(&world.alice, &world.general.id, &ts, "deny");
    fake.wait_for_ack(click.delivery, WAIT).await.unwrap();
    let view = super::modals::open_reason_modal(&world, &click.trigger_id).await;

    app.script.lock().unwrap().push_back(Reply::Json(
        json!({ "response_action": "errors", "errors": { "reason": "Say more" } }),
    ));
    let submission = fake.submit_view(&world.alice, &view, [("reason", "no")]);
    let outcome = fake.wait_for_outcome(&submission, WAIT).await.unwrap();
    assert_eq!(
        outcome,
        ViewOutcome::Errors([("reason".to_owned(), "Say more".to_owned())].into())
    );
    assert!(fake.view(&view).unwrap().open);

    let submission = fake.submit_view(&world.alice, &view, [("reason", "it is broken")]);
    assert_eq!(
        fake.wait_for_outcome(&submission, WAIT).await.unwrap(),
        ViewOutcome::Closed
    );
    assert!(!fake.view(&view).unwrap().open);
}
