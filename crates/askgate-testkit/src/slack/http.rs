//! HTTP delivery as Slack does it: events posted as JSON to the Events
//! API request URL, interactions as `application/x-www-form-urlencoded`
//! `payload=<json>` to the interactivity request URL, each signed
//! (`X-Slack-Request-Timestamp`, `X-Slack-Signature: v0=<hex HMAC-SHA256 of
//! "v0:{timestamp}:{body}">` with the signing secret). An event answered
//! with a non-2xx, or not within the acknowledgement window, is sent again
//! with `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`, up to three
//! retries; an interaction is sent once, and its answer's body is what
//! Slack acts on. Also signed posts of any body, the `url_verification`
//! handshake, and form encoding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::state::{Mode, Shared, State, unix_seconds};
use super::types::{Attempt, DeliveryKind, DeliveryStatus, HttpAnswer, SignatureMode, Via};
use super::{MAX_RETRIES, SIGNING_SECRET, VERIFICATION_TOKEN};
use crate::fake::{Next, NoAnswer, Push, Pushed, push_in_order};

/// The `User-Agent` of Slack's requests.
const USER_AGENT: &str = "Slackbot 1.0 (+https://api.slack.com/robots)";
/// The secret a forged signature is made with.
const FORGER_SECRET: &str = "0000000000000000000000000000beef";

/// Slack's request signature of `body` at `timestamp` (Unix seconds) with
/// a signing secret: `v0=` and the hex HMAC-SHA256 of `v0:{timestamp}:{body}`.
pub fn sign(secret: &str, timestamp: u64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// The signature headers Slack would send with this body now.
pub(crate) fn signature_headers(body: &[u8], mode: SignatureMode) -> Vec<(String, String)> {
    let now = unix_seconds();
    let (secret, timestamp) = match mode {
        SignatureMode::Valid => (SIGNING_SECRET, now),
        SignatureMode::Forged => (FORGER_SECRET, now),
        SignatureMode::Stale(age) => (SIGNING_SECRET, now.saturating_sub(age.as_secs())),
        SignatureMode::Missing => return Vec::new(),
    };
    vec![
        ("X-Slack-Request-Timestamp".to_owned(), timestamp.to_string()),
        ("X-Slack-Signature".to_owned(), sign(secret, timestamp, body)),
    ]
}

/// `application/x-www-form-urlencoded`, as Slack encodes `payload=`.
pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// Reads `application/x-www-form-urlencoded` text.
pub(crate) fn form_decode(text: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(text.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

/// An interaction's body as Slack POSTs it: `payload=<json>`, form-encoded.
pub fn interaction_body(payload: &serde_json::Value) -> Vec<u8> {
    form_encode(&[("payload", &payload.to_string())]).into_bytes()
}

/// An interaction to POST.
#[derive(Debug)]
pub(crate) struct HttpPost {
    delivery: usize,
    attempt: usize,
    url: String,
    body: Vec<u8>,
    timeout: Duration,
}

impl State {
    /// The interactions to POST now (HTTP mode), marked as sent.
    pub(crate) fn due_http_interactions(&mut self, now: Instant) -> Vec<HttpPost> {
        let Some(Mode::Http { interactivity_url, .. }) = self.mode.clone() else {
            return Vec::new();
        };
        let timeout = self.config.ack_timeout;
        let mut due = Vec::new();
        for delivery in &mut self.deliveries {
            if delivery.record.kind != DeliveryKind::Interaction || delivery.record.status != DeliveryStatus::Queued {
                continue;
            }
            let body = interaction_body(&delivery.record.payload);
            delivery.record.attempts.push(Attempt {
                at: now,
                retry: 0,
                via: Via::Http {
                    url: interactivity_url.clone(),
                    status: None,
                    error: None,
                },
            });
            delivery.record.status = DeliveryStatus::AwaitingAck;
            if let Some(trigger) = delivery
                .trigger
                .as_ref()
                .and_then(|trigger| self.triggers.get_mut(trigger))
            {
                trigger.sent.get_or_insert(now);
            }
            due.push(HttpPost {
                delivery: delivery.record.id,
                attempt: delivery.record.attempts.len() - 1,
                url: interactivity_url.clone(),
                body,
                timeout,
            });
        }
        due
    }

    fn record_http_interaction(&mut self, post: &HttpPost, answer: HttpAnswer) {
        let delivery = &mut self.deliveries[post.delivery];
        if let Some(Attempt {
            via: Via::Http { status, error, .. },
            ..
        }) = delivery.record.attempts.get_mut(post.attempt)
        {
            *status = answer.status;
            error.clone_from(&answer.error);
        }
        delivery.record.status = match answer.status {
            Some(status) if (200..300).contains(&status) => DeliveryStatus::Acked {
                payload: if answer.body.trim().is_empty() {
                    None
                } else {
                    Some(answer.json.unwrap_or(Value::String(answer.body)))
                },
                late: false,
            },
            Some(status) => DeliveryStatus::Failed(format!("HTTP {status}")),
            None => DeliveryStatus::Failed(answer.error.unwrap_or_default()),
        };
        self.settled(post.delivery);
    }

    /// The next event to POST (HTTP mode): the oldest not yet acknowledged.
    fn next_event_push(&self) -> Option<(Push, (usize, u32))> {
        let Some(Mode::Http { events_url, .. }) = &self.mode else {
            return None;
        };
        let delivery = self.deliveries.iter().find(|delivery| {
            delivery.record.kind == DeliveryKind::Event && delivery.record.status == DeliveryStatus::Queued
        })?;
        let body = delivery.record.payload.to_string().into_bytes();
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("User-Agent".to_owned(), USER_AGENT.to_owned()),
        ];
        headers.extend(signature_headers(&body, SignatureMode::Valid));
        if delivery.next_retry > 0 {
            headers.push(("X-Slack-Retry-Num".to_owned(), delivery.next_retry.to_string()));
            headers.push(("X-Slack-Retry-Reason".to_owned(), delivery.retry_reason.clone()));
        }
        let push = Push {
            url: events_url.clone(),
            headers,
            body,
        };
        Some((push, (delivery.record.id, delivery.next_retry)))
    }

    fn record_event_push(&mut self, pushed: Pushed<(usize, u32)>) {
        let acknowledged = pushed.acknowledged();
        let (id, retry) = pushed.note;
        let delivery = &mut self.deliveries[id];
        let (status, error) = match &pushed.outcome {
            Ok(status) => (Some(status.as_u16()), None),
            Err(no_answer) => (None, Some(format!("{no_answer:?}"))),
        };
        delivery.record.attempts.push(Attempt {
            at: pushed.at,
            retry,
            via: Via::Http {
                url: pushed.push.url,
                status,
                error,
            },
        });
        if acknowledged {
            delivery.record.status = DeliveryStatus::Acked {
                payload: None,
                late: false,
            };
            return;
        }
        let reason = match pushed.outcome {
            Ok(_) => "http_error",
            Err(NoAnswer::Timeout) => "http_timeout",
            Err(NoAnswer::Refused) => "connection_failed",
            Err(_) => "unknown_error",
        };
        if retry >= MAX_RETRIES {
            delivery.record.status = DeliveryStatus::Failed(format!("{reason}, after {MAX_RETRIES} retries"));
        } else {
            delivery.next_retry = retry + 1;
            reason.clone_into(&mut delivery.retry_reason);
        }
    }
}

/// The task that POSTs events, one at a time, oldest first, until the fake
/// closes. It holds the state, not a handle, so it cannot keep the fake alive.
pub(crate) async fn deliver_events(shared: Arc<Shared>, client: reqwest::Client, pause: Duration) {
    let next = || {
        let state = shared.state.lock();
        if state.closed {
            return Next::Stop;
        }
        match state.next_event_push() {
            Some((push, note)) => Next::Push(push, note),
            None => Next::Idle,
        }
    };
    let record = |pushed| shared.change(|state| state.record_event_push(pushed));
    push_in_order(&client, &shared.wake, pause, next, record).await;
}

/// POSTs one interaction and records the answer.
pub(crate) async fn post_interaction(shared: Arc<Shared>, post: HttpPost) {
    let answer = send(
        &shared.client,
        &post.url,
        &post.body,
        "application/x-www-form-urlencoded",
        SignatureMode::Valid,
        post.timeout,
    )
    .await;
    shared.change(|state| state.record_http_interaction(&post, answer));
}

/// POSTs a body signed as asked, and reads the answer.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    content_type: &str,
    mode: SignatureMode,
    timeout: Duration,
) -> HttpAnswer {
    let mut request = client
        .post(url)
        .timeout(timeout)
        .header("Content-Type", content_type)
        .header("User-Agent", USER_AGENT);
    for (name, value) in signature_headers(body, mode) {
        request = request.header(name, value);
    }
    match request.body(body.to_vec()).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            match response.text().await {
                Ok(text) => HttpAnswer {
                    status: Some(status),
                    json: serde_json::from_str(&text).ok(),
                    body: text,
                    error: None,
                },
                Err(error) => HttpAnswer {
                    status: Some(status),
                    body: String::new(),
                    json: None,
                    error: Some(format!("the body could not be read: {error}")),
                },
            }
        }
        Err(error) => HttpAnswer {
            status: None,
            body: String::new(),
            json: None,
            error: Some(if error.is_timeout() {
                format!("no answer within {timeout:?}")
            } else {
                format!("no answer: {error}")
            }),
        },
    }
}

/// The `url_verification` body Slack sends with a challenge.
pub(crate) fn url_verification(challenge: &str) -> Vec<u8> {
    json!({ "token": VERIFICATION_TOKEN, "challenge": challenge, "type": "url_verification" })
        .to_string()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::{form_decode, form_encode, sign};

    #[test]
    fn the_signature_is_slack_s_documented_example() {
        // The example of Slack's "Verifying requests from Slack".
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        assert_eq!(
            sign("8f742231b10e8888abcd99yyyzzz85a5", 1_531_420_618, body),
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
    }

    #[test]
    fn forms_round_trip() {
        let encoded = form_encode(&[("payload", r#"{"a":"b c&d=é"}"#)]);
        assert_eq!(encoded, "payload=%7B%22a%22%3A%22b+c%26d%3D%C3%A9%22%7D");
        assert_eq!(
            form_decode(&encoded),
            [("payload".to_owned(), r#"{"a":"b c&d=é"}"#.to_owned())]
        );
        assert_eq!(
            form_decode("a=1&c"),
            [("a".to_owned(), "1".to_owned()), ("c".to_owned(), String::new())]
        );
    }
}
