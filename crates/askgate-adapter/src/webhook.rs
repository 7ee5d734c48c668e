//! Webhook routes in askgate's own HTTP server, authenticated before
//! anything is decoded (`docs/adapter-spec.md` §4.8): a request that fails
//! its [`Verifier`] gets 401 and changes nothing.
//!
//! Each platform proves its requests its own way (Telegram a secret header,
//! Discord an Ed25519 signature, Slack an HMAC over a timestamped body); the
//! route, the 401 and its log line are written once, here.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tracing::warn;

/// Why a webhook request was not accepted as the platform's. The reason is
/// for the log; the caller only ever sees 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unverified(pub &'static str);

/// Checks that a webhook request comes from the platform.
pub trait Verifier: Send + Sync + 'static {
    /// `Ok` when `headers` and the raw `body` prove the platform sent it.
    fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Unverified>;
}

/// A shared secret the platform sends in a header on every request
/// (Telegram's `X-Telegram-Bot-Api-Secret-Token`), compared in constant time.
#[derive(Clone)]
pub struct SecretHeader {
    header: HeaderName,
    secret: Arc<str>,
}

impl SecretHeader {
    /// Requests must carry `secret` in `header`.
    pub fn new(header: HeaderName, secret: &str) -> Self {
        Self {
            header,
            secret: Arc::from(secret),
        }
    }
}

impl std::fmt::Debug for SecretHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret itself is never printed.
        f.debug_struct("SecretHeader")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl Verifier for SecretHeader {
    fn verify(&self, headers: &HeaderMap, _body: &[u8]) -> Result<(), Unverified> {
        let presented = headers
            .get(&self.header)
            .map(axum::http::HeaderValue::as_bytes)
            .unwrap_or_default();
        if constant_time_eq::constant_time_eq(presented, self.secret.as_bytes()) {
            Ok(())
        } else {
            Err(Unverified("the secret header is missing or wrong"))
        }
    }
}

/// The largest webhook body askgate reads: platforms send a few kilobytes
/// (a Slack interaction with a whole message is the largest, under 100 KB).
/// A larger body is refused with 413 before anything else is looked at.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// `POST path` for channel `channel`: each request's body bounded by
/// [`MAX_BODY_BYTES`], verified by `verifier`, then given to `handler` with
/// its headers and raw body.
pub fn route<V, H, Fut>(channel: &str, path: &str, verifier: V, handler: H) -> Router
where
    V: Verifier,
    H: Fn(HeaderMap, Bytes) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    let verifier = Arc::new(verifier);
    let channel: Arc<str> = Arc::from(channel);
    Router::new().route(
        path,
        post(move |headers: HeaderMap, body: Bytes| {
            let (verifier, channel, handler) = (Arc::clone(&verifier), Arc::clone(&channel), handler.clone());
            async move {
                if let Err(reason) = verifier.verify(&headers, &body) {
                    warn!(channel = %channel, %reason, "a webhook request was refused");
                    return StatusCode::UNAUTHORIZED.into_response();
                }
                handler(headers, body).await
            }
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES)),
    )
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    use super::*;

    async fn status(router: &Router, secret: Option<&str>) -> StatusCode {
        let mut request = Request::post("/hook");
        if let Some(secret) = secret {
            request = request.header("x-secret", secret);
        }
        let request = request.body(Body::from("{}")).unwrap_or_else(|_| unreachable!());
        router
            .clone()
            .oneshot(request)
            .await
            .map_or(StatusCode::IM_A_TEAPOT, |r| r.status())
    }

    #[tokio::test]
    async fn only_requests_with_the_secret_reach_the_handler() {
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), "s3cret-value");
        assert!(!format!("{verifier:?}").contains("s3cret"));
        let router = route("test", "/hook", verifier, |_, body: Bytes| async move {
            assert_eq!(&body[..], b"{}");
            StatusCode::ACCEPTED.into_response()
        });
        assert_eq!(status(&router, Some("s3cret-value")).await, StatusCode::ACCEPTED);
        assert_eq!(status(&router, Some("s3cret-valuE")).await, StatusCode::UNAUTHORIZED);
        assert_eq!(status(&router, None).await, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn an_oversized_body_is_refused_before_anything_else() {
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), "s3cret-value");
        let router = route("test", "/hook", verifier, |_, _| async move {
            panic!("an oversized body never reaches the handler")
        });
        let request = Request::post("/hook")
            .header("x-secret", "s3cret-value")
            .body(Body::from(vec![b'x'; MAX_BODY_BYTES + 1]))
            .unwrap_or_else(|_| unreachable!());
        let answer = router.oneshot(request).await.map(|r| r.status());
        assert_eq!(answer.ok(), Some(StatusCode::PAYLOAD_TOO_LARGE));
    }
}
