//! HTTP mode: Slack POSTs events to `/slack/<channel>/events` and
//! interactions to `/slack/<channel>/interactivity` in askgate's own server.
//!
//! Every request's `X-Slack-Signature` is checked on the raw body before
//! anything is read (slack-morphism's `SlackEventSignatureVerifier`: HMAC
//! SHA-256 with the signing secret, the timestamp within 5 minutes); a
//! forged, missing or stale one gets 401, and so does a request answered
//! already (the same signature again: a replay). Slack's own retries are
//! never refused so: it retries only a request that got no 2xx (and only
//! answered requests are remembered), and seconds later, which gives the
//! retry another timestamp and so another signature.
//! The `url_verification` challenge is answered. An event is answered 200
//! only once its effect is stored (otherwise 503, and Slack retries); a
//! click within Slack's 3 seconds, whatever the engine is doing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use askgate_adapter::Driver;
use askgate_adapter::webhook::{Unverified, Verifier, route};
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Json, Response};
use serde_json::json;
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use tracing::warn;

use crate::SlackChannel;
use crate::decode::Update;
use crate::react::{take, take_interaction};

/// How long a signature counts as seen: Slack refuses timestamps older.
const REPLAY_WINDOW: Duration = Duration::from_secs(300);

/// Slack's v0 request signature, by any of the app's signing secrets
/// (several while one is rotated: the new one and the one Slack may still
/// sign with).
pub struct Signature(Vec<SlackEventSignatureVerifier>);

impl Signature {
    /// A verifier for the app's signing secrets.
    pub fn new(signing_secrets: &[&str]) -> Self {
        Self(
            signing_secrets
                .iter()
                .map(|secret| SlackEventSignatureVerifier::new(&SlackSigningSecret((*secret).to_owned())))
                .collect(),
        )
    }
}

/// Whether `text` is `digits` hexadecimal digits.
fn is_hex(text: &str, digits: usize) -> bool {
    text.len() == digits && text.bytes().all(|byte| byte.is_ascii_hexdigit())
}

impl Verifier for Signature {
    /// The signature headers present and well formed (`v0=` and 64 hex
    /// digits), and the timestamp within 5 minutes of now: a request that
    /// fails these is refused before its body is read.
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), Unverified> {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let (Some(signature), Some(timestamp)) = (header("x-slack-signature"), header("x-slack-request-timestamp"))
        else {
            return Err(Unverified("the signature headers are missing"));
        };
        if !signature.strip_prefix("v0=").is_some_and(|hex| is_hex(hex, 64)) {
            return Err(Unverified("the signature is not a v0 signature"));
        }
        let Ok(sent) = timestamp.trim().parse::<u64>() else {
            return Err(Unverified("the timestamp is not a number of seconds"));
        };
        // The system clock, as slack-morphism's verifier reads it for the
        // same window once the body is there.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if now.abs_diff(sent) > REPLAY_WINDOW.as_secs() {
            return Err(Unverified("the timestamp is not within 5 minutes"));
        }
        Ok(())
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Unverified> {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let (Some(signature), Some(timestamp)) = (header("x-slack-signature"), header("x-slack-request-timestamp"))
        else {
            return Err(Unverified("the signature headers are missing"));
        };
        let body = std::str::from_utf8(body).map_err(|_| Unverified("the body is not UTF-8"))?;
        // Every secret is tried, so that timing tells nothing of which matched.
        let matched = self.0.iter().fold(false, |matched, secret| {
            secret.verify(signature, body, timestamp).is_ok() | matched
        });
        if matched {
            Ok(())
        } else {
            Err(Unverified(
                "the signature does not match, or its timestamp is not within 5 minutes",
            ))
        }
    }
}

/// Signatures of requests answered already, for [`REPLAY_WINDOW`].
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<HashMap<String, Instant>>>);

impl Seen {
    /// Whether `headers`' signature was answered already.
    fn replayed(&self, headers: &HeaderMap) -> bool {
        let Some(signature) = headers.get("x-slack-signature").and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        seen.retain(|_, at| now.duration_since(*at) < REPLAY_WINDOW);
        seen.contains_key(signature)
    }

    fn answered(&self, headers: &HeaderMap) {
        if let Some(signature) = headers.get("x-slack-signature").and_then(|v| v.to_str().ok()) {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(signature.to_owned(), Instant::now());
        }
    }
}

/// The events and interactivity routes under `base` (e.g. `/slack/work`).
pub fn router(base: &str, driver: Driver<SlackChannel>, signing_secrets: &[&str]) -> Router {
    let name = askgate_core::Channel::name(driver.inbound().as_ref()).to_owned();
    let seen = Seen::default();
    let events = {
        let (driver, name, seen) = (driver.clone(), name.clone(), seen.clone());
        route(
            &name.clone(),
            &format!("{base}/events"),
            Signature::new(signing_secrets),
            move |headers, body| {
                let (driver, name, seen) = (driver.clone(), name.clone(), seen.clone());
                async move { event(&driver, &name, &seen, &headers, &body).await }
            },
        )
    };
    let interactions = route(
        &name.clone(),
        &format!("{base}/interactivity"),
        Signature::new(signing_secrets),
        move |headers, body| {
            let (driver, name, seen) = (driver.clone(), name.clone(), seen.clone());
            async move { interaction(driver, &name, &seen, &headers, &body).await }
        },
    );
    events.merge(interactions)
}

async fn event(driver: &Driver<SlackChannel>, name: &str, seen: &Seen, headers: &HeaderMap, body: &Bytes) -> Response {
    if seen.replayed(headers) {
        warn!(channel = %name, "a Slack request came again with the same signature; refused");
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let pushed: SlackPushEvent = match serde_json::from_slice(body) {
        Ok(pushed) => pushed,
        Err(error) => {
            warn!(channel = %name, %error, "a request to the events endpoint was not a Slack event");
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    let response = match pushed {
        SlackPushEvent::UrlVerification(verification) => {
            Json(json!({"challenge": verification.challenge})).into_response()
        }
        SlackPushEvent::EventCallback(callback) => {
            let update = Update::Event {
                callback: Box::new(callback),
                name: None,
            };
            match take(driver, update).await {
                Ok(_) => StatusCode::OK.into_response(),
                Err(error) => {
                    warn!(channel = %name, %error, "an event was not stored; Slack will send it again");
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
            }
        }
        SlackPushEvent::AppRateLimited(_) => StatusCode::OK.into_response(),
    };
    seen.answered(headers);
    response
}

async fn interaction(
    driver: Driver<SlackChannel>,
    name: &str,
    seen: &Seen,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    if seen.replayed(headers) {
        warn!(channel = %name, "a Slack request came again with the same signature; refused");
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let payload = serde_urlencoded::from_bytes::<HashMap<String, String>>(body)
        .ok()
        .and_then(|mut form| form.remove("payload"));
    let parsed = payload.as_deref().map(serde_json::from_str::<SlackInteractionEvent>);
    let Some(Ok(event)) = parsed else {
        warn!(channel = %name, "a request to the interactivity endpoint was not a Slack interaction");
        return StatusCode::BAD_REQUEST.into_response();
    };
    seen.answered(headers);
    let update = Update::Interaction {
        event: Box::new(event),
        name: None,
    };
    // Answered within Slack's 3 s, whatever the engine is doing.
    take_interaction(driver, update).await;
    // An empty 200 acknowledges a click and closes a submitted modal.
    StatusCode::OK.into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(signature: Option<&str>, timestamp: Option<String>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(signature) = signature {
            headers.insert(
                "x-slack-signature",
                HeaderValue::from_str(signature).unwrap_or_else(|_| unreachable!()),
            );
        }
        if let Some(timestamp) = timestamp {
            headers.insert(
                "x-slack-request-timestamp",
                HeaderValue::from_str(&timestamp).unwrap_or_else(|_| unreachable!()),
            );
        }
        headers
    }

    /// What the headers alone prove wrong is refused before the body is read.
    #[test]
    fn missing_malformed_or_stale_signature_headers_are_refused_from_the_headers() {
        let verifier = Signature::new(&["signing-secret"]);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let good = format!("v0={}", "a".repeat(64));
        let check = |signature: Option<&str>, timestamp: Option<String>| {
            verifier.check_headers(&headers(signature, timestamp)).is_ok()
        };
        assert!(check(Some(&good), Some(now.to_string())));
        assert!(check(Some(&good), Some((now - 290).to_string())));
        assert!(!check(None, Some(now.to_string())));
        assert!(!check(Some(&good), None));
        assert!(!check(Some("v0=nothex"), Some(now.to_string())));
        assert!(!check(Some(&format!("v1={}", "a".repeat(64))), Some(now.to_string())));
        assert!(!check(Some(&good), Some("hello".into())));
        assert!(!check(Some(&good), Some((now - 3600).to_string())));
        assert!(!check(Some(&good), Some((now + 3600).to_string())));
    }

    /// While a signing secret is rotated, a request signed by any of the
    /// listed secrets is accepted, and one signed by another is not.
    #[test]
    fn a_request_signed_by_any_listed_secret_is_accepted() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let body = br#"{"type":"event_callback"}"#;
        let signed_by = |secret: &str| {
            let signature = askgate_testkit::slack::sign(secret, now, body);
            headers(Some(&signature), Some(now.to_string()))
        };
        let rotating = Signature::new(&["new-signing-secret", "old-signing-secret"]);
        assert!(rotating.verify(&signed_by("new-signing-secret"), body).is_ok());
        assert!(rotating.verify(&signed_by("old-signing-secret"), body).is_ok());
        assert!(rotating.verify(&signed_by("another-secret"), body).is_err());
        let rotated = Signature::new(&["new-signing-secret"]);
        assert!(rotated.verify(&signed_by("old-signing-secret"), body).is_err());
    }
}
