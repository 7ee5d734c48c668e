//! The JSON body extractor: every way a body can be wrong becomes an
//! [`ApiError`] with a stable code (never axum's plain-text rejections).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use askgate_core::text::{Limit, excerpt};

use crate::AppState;
use crate::error::ApiError;

/// The most characters of serde's account of a body it could not read that
/// an error passes on: enough for "unknown field `x`, expected `answers` at
/// line 1 column 9" with a name of a few dozen characters.
const SERDE_MESSAGE_CHARS: usize = 160;

/// A JSON request body.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                value
                    .split(';')
                    .next()
                    .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
            });
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON with \"Content-Type: application/json\".",
            ));
        }
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                let limit = state.0.max_body_bytes;
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!(
                        "The request body is larger than askgate takes: at most {limit} bytes (server.max_body_bytes)."
                    ),
                )
            } else {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_body",
                    format!("The request body could not be read: {rejection}."),
                )
            }
        })?;
        serde_json::from_slice(&bytes).map(Self).map_err(|error| {
            // serde's sentence quotes the body (an unknown field's name, a
            // string of the wrong type): each quote is cut to an excerpt,
            // and the sentence to its start.
            let said = excerpt_quotes(&excerpt_quotes(&error.to_string(), '`'), '"');
            let said = Limit::code_points(SERDE_MESSAGE_CHARS).ellipsize(&said);
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("The body is not valid JSON: {said}."),
            )
        })
    }
}

/// `said` with what stands between each pair of `quote`s cut to an excerpt.
fn excerpt_quotes(said: &str, quote: char) -> String {
    let mut shortened = String::with_capacity(said.len().min(1024));
    for (index, part) in said.split(quote).enumerate() {
        if index > 0 {
            shortened.push(quote);
        }
        if index % 2 == 1 {
            shortened.push_str(&excerpt(part));
        } else {
            shortened.push_str(part);
        }
    }
    shortened
}
