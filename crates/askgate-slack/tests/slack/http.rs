//! The HTTP endpoints' gate, on Slack's own `url_verification` sample: the
//! v0 signature over the raw body, its 5-minute window, replays, and the
//! challenge answered — before anything reaches the engine.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use askgate_adapter::Driver;
use askgate_core::QuestionId;
use askgate_core::channel::{InboundError, InboundEvent, InboundSink, MessageRef, Reaction};
use askgate_slack::SlackChannel;
use askgate_slack::api::Api;
use askgate_testkit::slack::sign;
use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// An engine that must not be reached.
struct Untouched;

#[async_trait]
impl InboundSink for Untouched {
    async fn handle(&self, _channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
        panic!("nothing may reach the engine: {event:?}")
    }

    async fn attach(&self, _channel: &str, _question: &QuestionId, _message: MessageRef) {}

    async fn cursor(&self, _channel: &str) -> Option<String> {
        None
    }

    async fn save_cursor(&self, _channel: &str, _cursor: &str) {}

    fn stranger(
        &self,
        _channel: &str,
        destination: &askgate_core::channel::Destination,
    ) -> Option<askgate_core::Locale> {
        panic!("nothing may reach the engine: a stranger check at {destination:?}")
    }
}

fn router() -> axum::Router {
    // The Web API is never called here.
    let channel = SlackChannel::new("work", Api::new("xoxb-unused", "http://127.0.0.1:9"));
    let driver = Driver::new(Arc::new(channel), Arc::new(Untouched));
    askgate_slack::http::router("/slack/work", driver, &[SECRET])
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn sample() -> Vec<u8> {
    let path = format!("{}/tests/samples/url_verification.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(path).unwrap()
}

async fn post(router: &axum::Router, body: &[u8], signature: Option<(u64, String)>) -> (StatusCode, String) {
    let mut request = Request::post("/slack/work/events").header("content-type", "application/json");
    if let Some((timestamp, signature)) = signature {
        request = request
            .header("x-slack-request-timestamp", timestamp.to_string())
            .header("x-slack-signature", signature);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_vec())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn slack_s_challenge_is_answered_only_when_signed_fresh_and_once() {
    let router = router();
    let body = sample();
    let challenge = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["challenge"]
        .as_str()
        .unwrap()
        .to_owned();
    // Unsigned, forged (another secret), over another body, stale (6 minutes).
    let t = now();
    let stale = t - 360;
    for (what, signature) in [
        ("forged", Some((t, sign("not-the-secret", t, &body)))),
        ("another body", Some((t, sign(SECRET, t, b"{}")))),
        ("stale", Some((stale, sign(SECRET, stale, &body)))),
        ("unsigned", None),
    ] {
        let (status, _) = post(&router, &body, signature).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}");
    }
    // Signed now: the challenge comes back.
    let signed = (t, sign(SECRET, t, &body));
    let (status, answer) = post(&router, &body, Some(signed.clone())).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["challenge"], challenge.as_str());
    // The very same request again is a replay.
    let (status, _) = post(&router, &body, Some(signed)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a replay");
    // Not a Slack event at all, but signed: refused as a bad request.
    let junk = br#"{"type":"nonsense"}"#;
    let (status, _) = post(&router, junk, Some((t, sign(SECRET, t, junk)))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
