//! Webhook routes in askgate's own HTTP server, authenticated before
//! anything is decoded (`docs/adapter-spec.md` §4.8): a request that fails
//! its [`Verifier`] gets 401 and changes nothing. What the headers alone can
//! prove wrong ([`Verifier::check_headers`]: a missing or wrong secret
//! header, missing or malformed signature headers, a stale timestamp) is
//! refused before a byte of the body is read, so that a client that is not
//! the platform cannot hold a connection by declaring a body it never sends.
//!
//! Each platform proves its requests its own way (Telegram a secret header,
//! Discord an Ed25519 signature, Slack an HMAC over a timestamped body); the
//! route, the 401 and its log line are written once, here.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest as _, Request};
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
    /// `Err` when `headers` alone show the platform did not send the
    /// request; checked before the body is read. The default finds nothing
    /// wrong: a verifier that needs the body says so in [`Verifier::verify`].
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), Unverified> {
        let _ = headers;
        Ok(())
    }

    /// `Ok` when `headers` and the raw `body` prove the platform sent it.
    fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Unverified>;
}

/// A shared secret the platform sends in a header on every request
/// (Telegram's `X-Telegram-Bot-Api-Secret-Token`), compared in constant time.
/// Several secrets while one is rotated: any of them is accepted.
#[derive(Clone)]
pub struct SecretHeader {
    header: HeaderName,
    secrets: Arc<[Box<str>]>,
}

impl SecretHeader {
    /// Requests must carry one of `secrets` in `header`.
    pub fn new(header: HeaderName, secrets: &[&str]) -> Self {
        Self {
            header,
            secrets: secrets.iter().map(|secret| Box::from(*secret)).collect(),
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
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), Unverified> {
        let presented = headers
            .get(&self.header)
            .map(axum::http::HeaderValue::as_bytes)
            .unwrap_or_default();
        // Every secret is compared, so that timing tells nothing of which matched.
        let matched = self.secrets.iter().fold(false, |matched, secret| {
            constant_time_eq::constant_time_eq(presented, secret.as_bytes()) | matched
        });
        if matched {
            Ok(())
        } else {
            Err(Unverified("the secret header is missing or wrong"))
        }
    }

    fn verify(&self, headers: &HeaderMap, _body: &[u8]) -> Result<(), Unverified> {
        // The body proves nothing more; the route has checked the headers
        // already, and checking them again keeps `verify` whole on its own.
        self.check_headers(headers)
    }
}

/// The largest webhook body askgate reads: platforms send a few kilobytes
/// (a Slack interaction with a whole message is the largest, under 100 KB).
/// A larger body is refused with 413 once the headers pass, before it is read.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// `POST path` for channel `channel`: each request's headers checked by
/// `verifier` ([`Verifier::check_headers`]) before its body is read, the
/// body bounded by [`MAX_BODY_BYTES`] and verified with the headers, then
/// given to `handler` with its headers and raw body.
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
        post(move |request: Request| {
            let (verifier, channel, handler) = (Arc::clone(&verifier), Arc::clone(&channel), handler.clone());
            async move {
                let refused = |reason: Unverified| {
                    warn!(channel = %channel, %reason, "a webhook request was refused");
                    StatusCode::UNAUTHORIZED.into_response()
                };
                if let Err(reason) = verifier.check_headers(request.headers()) {
                    return refused(reason);
                }
                let headers = request.headers().clone();
                // 413 past the limit, 400 for a body cut off (by the
                // server's body deadline, or a client gone).
                let body = match Bytes::from_request(request, &()).await {
                    Ok(body) => body,
                    Err(rejection) => return rejection.into_response(),
                };
                if let Err(reason) = verifier.verify(&headers, &body) {
                    return refused(reason);
                }
                handler(headers, body).await
            }
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES)),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), &["s3cret-value"]);
        assert!(!format!("{verifier:?}").contains("s3cret"));
        let router = route("test", "/hook", verifier, |_, body: Bytes| async move {
            assert_eq!(&body[..], b"{}");
            StatusCode::ACCEPTED.into_response()
        });
        assert_eq!(status(&router, Some("s3cret-value")).await, StatusCode::ACCEPTED);
        assert_eq!(status(&router, Some("s3cret-valuE")).await, StatusCode::UNAUTHORIZED);
        assert_eq!(status(&router, None).await, StatusCode::UNAUTHORIZED);
    }

    /// While a secret is rotated both the new and the old one are accepted,
    /// and nothing else.
    #[tokio::test]
    async fn any_listed_secret_is_accepted_while_one_is_rotated() {
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), &["new-secret", "old-secret"]);
        let debug = format!("{verifier:?}");
        assert!(
            !debug.contains("new-secret") && !debug.contains("old-secret"),
            "{debug}"
        );
        let router = route("test", "/hook", verifier, |_, _| async move {
            StatusCode::ACCEPTED.into_response()
        });
        assert_eq!(status(&router, Some("new-secret")).await, StatusCode::ACCEPTED);
        assert_eq!(status(&router, Some("old-secret")).await, StatusCode::ACCEPTED);
        assert_eq!(
            status(&router, Some("new-secretold-secret")).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(status(&router, Some("")).await, StatusCode::UNAUTHORIZED);
    }

    /// A body that never arrives: a client that declared one and sends nothing.
    struct NeverSent;

    impl axum::body::HttpBody for NeverSent {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _context: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            std::task::Poll::Pending
        }
    }

    #[tokio::test]
    async fn the_headers_are_checked_before_a_byte_of_the_body_is_read() {
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), &["s3cret-value"]);
        let router = route("test", "/hook", verifier, |_, _| async move {
            panic!("a request whose body never came never reaches the handler")
        });
        let request = |secret: Option<&str>| {
            let mut request = Request::post("/hook");
            if let Some(secret) = secret {
                request = request.header("x-secret", secret);
            }
            request.body(Body::new(NeverSent)).unwrap_or_else(|_| unreachable!())
        };
        for refused in [None, Some("wrong")] {
            let answer = tokio::time::timeout(Duration::from_secs(1), router.clone().oneshot(request(refused))).await;
            let status = answer.ok().and_then(Result::ok).map(|response| response.status());
            assert_eq!(status, Some(StatusCode::UNAUTHORIZED), "secret {refused:?}");
        }
        // With the secret, the route waits for the body (the server's body
        // deadline ends that wait).
        let waiting = tokio::time::timeout(
            Duration::from_millis(200),
            router.oneshot(request(Some("s3cret-value"))),
        )
        .await;
        assert!(waiting.is_err(), "the body was not waited for");
    }

    #[tokio::test]
    async fn an_oversized_body_is_refused_before_anything_else() {
        let verifier = SecretHeader::new(HeaderName::from_static("x-secret"), &["s3cret-value"]);
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
