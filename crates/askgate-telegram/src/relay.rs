//! Telegram's answers read within a bound, through askgate's relay on
//! loopback ([`askgate_adapter::relay`]): teloxide reads every answer whole
//! (`Response::text`) with the reqwest client it is given, so the bot talks
//! to the relay, which reads each answer within [`MAX_ANSWER_BYTES`].
//!
//! When a call gets no usable answer (larger than the bound, a 5xx, or no
//! answer), the relay answers the bot a short text that is not Telegram's
//! JSON, starting with [`FAILED`], which [`crate::error::channel_error`]
//! turns into [`askgate_core::ChannelError::Unavailable`] with its reason
//! (retried as a 5xx is). The token travels in each call's path.

use std::time::Duration;

use askgate_adapter::cause::bounded;
use askgate_adapter::read::MAX_ANSWER_BYTES;
use askgate_adapter::relay::{Failure, Relayed, pass_on};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

pub(crate) use askgate_adapter::relay::Relay;

/// How a relay's own answer starts when the call did not get a usable
/// answer from Telegram: never the start of Telegram's JSON.
pub(crate) const FAILED: &str = "askgate relay: ";

/// The Bot API, as the relay serves it.
pub(crate) struct Telegram;

impl Relayed for Telegram {
    /// The token is in the path.
    const HEADERS: &'static [HeaderName] = &[];
    const TIMEOUT: Duration = Duration::from_secs(90);

    fn limit(&self, _path: &str) -> usize {
        MAX_ANSWER_BYTES
    }

    fn failed(&self, failure: Failure) -> Response {
        match failure {
            // No answer: said at once (a 5xx would make teloxide wait 10 s first).
            Failure::NoAnswer(reason) => failed(StatusCode::OK, &reason),
            Failure::TooLarge { status, reason } => {
                let shown = if status.is_server_error() {
                    status
                } else {
                    StatusCode::BAD_GATEWAY
                };
                failed(shown, &format!("Telegram (HTTP {}): {reason}", shown.as_u16()))
            }
            _ => failed(StatusCode::OK, "the call was too large to forward"),
        }
    }

    fn answered(&self, status: StatusCode, content_type: Option<HeaderValue>, body: Vec<u8>) -> Response {
        if status.is_server_error() {
            // Telegram failing, not refusing: teloxide would read its error
            // JSON as a refusal for good.
            let said = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|json| json["description"].as_str().map(bounded));
            let reason = match said {
                Some(said) => format!("Telegram answered HTTP {}: {said}", status.as_u16()),
                None => format!("Telegram answered HTTP {}", status.as_u16()),
            };
            return failed(status, &reason);
        }
        pass_on(status, content_type, body)
    }
}

/// The relay's own answer: [`FAILED`] and why, which is not Telegram's JSON.
fn failed(status: StatusCode, reason: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{FAILED}{}", bounded(reason)),
    )
        .into_response()
}
