//! What an injected failure does to one request.
//!
//! Each platform has its own failure type for tests to queue (its error
//! bodies differ: Telegram's `{"ok": false, …}`, Discord's and Slack's own);
//! its fake turns one into a [`Fault`], and [`answer`] does the rest, the same
//! for every platform.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Connection;

/// How one request fails.
#[derive(Debug)]
pub enum Fault {
    /// This answer instead of the request's own, and the request takes no
    /// effect: the platform's 429 with its retry-after, a 5xx, a refusal.
    Respond(Response),
    /// The request takes effect at once, but its answer comes after this delay.
    Slow(Duration),
    /// The connection is dropped without an answer, and the request takes no
    /// effect.
    Disconnect,
}

/// Answers one request with `fault` applied: `call` (what the request does
/// and answers) runs only if the fault lets the request take effect.
/// `connection` is the request's, for [`Fault::Disconnect`].
pub async fn answer(
    fault: Option<Fault>,
    connection: Option<&Connection>,
    call: impl Future<Output = Response>,
) -> Response {
    match fault {
        None => call.await,
        Some(Fault::Respond(response)) => response,
        Some(Fault::Slow(delay)) => {
            let response = call.await;
            tokio::time::sleep(delay).await;
            response
        }
        Some(Fault::Disconnect) => {
            if let Some(connection) = connection {
                connection.disconnect();
            }
            // Only sent if there was no connection to drop.
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// What a huge answer is made of, sent again and again.
static BLOCK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// An answer of `status` whose body is `bytes` long (`x` after `x`, chunked,
/// no `Content-Length`), made as it is sent: nothing of it is held, and it
/// stops when the client goes away. A platform, or a proxy in front of it,
/// answering with an error page of gigabytes.
pub fn huge_answer(status: StatusCode, content_type: &'static str, bytes: u64) -> Response {
    let chunks = futures_util::stream::unfold(bytes, |left| async move {
        if left == 0 {
            return None;
        }
        let size = usize::try_from(left).unwrap_or(usize::MAX).min(BLOCK.len());
        let chunk: Result<Bytes, Infallible> = Ok(Bytes::from_static(&BLOCK[..size]));
        Some((chunk, left - size as u64))
    });
    (
        status,
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(chunks),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use axum::Router;
    use axum::extract::{Request, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};

    use super::{Fault, answer};
    use crate::fake::{Connection, Loopback, Recorder, Requests};

    /// A platform's own failures, as a test queues them.
    #[derive(Debug, Clone, Copy)]
    enum Failure {
        TooManyRequests { retry_after: u32 },
        Slow(Duration),
        Disconnect,
    }

    impl Failure {
        fn fault(self) -> Fault {
            match self {
                Self::TooManyRequests { retry_after } => Fault::Respond(
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        [("retry-after", retry_after.to_string())],
                        "slow down",
                    )
                        .into_response(),
                ),
                Self::Slow(delay) => Fault::Slow(delay),
                Self::Disconnect => Fault::Disconnect,
            }
        }
    }

    /// The requests by path, and how many took effect.
    type Fake = Arc<Recorder<(Requests<String, Failure>, usize)>>;

    async fn handle(State(fake): State<Fake>, request: Request) -> Response {
        let path = request.uri().path().to_owned();
        let failure = fake.record(|(requests, _)| requests.record(path.clone(), &path));
        let connection = Connection::of(request.extensions());
        answer(failure.map(Failure::fault), connection.as_ref(), async {
            fake.record(|(_, effects)| *effects += 1);
            "done".into_response()
        })
        .await
    }

    async fn start() -> (Fake, Loopback, String) {
        let fake: Fake = Arc::default();
        let server = Loopback::serve(Router::new().fallback(handle).with_state(Arc::clone(&fake)))
            .await
            .unwrap();
        let url = format!("http://{}/send", server.addr());
        (fake, server, url)
    }

    async fn send(url: &str) -> reqwest::Result<(StatusCode, Option<String>, String)> {
        let client = reqwest::Client::builder().no_proxy().build()?;
        let response = client.post(url).send().await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|value| value.to_str().unwrap_or_default().to_owned());
        Ok((status, retry_after, response.text().await?))
    }

    fn effects(fake: &Fake) -> usize {
        fake.lock().1
    }

    #[tokio::test]
    async fn a_queued_answer_replaces_one_request_and_is_then_cleared() {
        let (fake, _server, url) = start().await;
        fake.lock()
            .0
            .fail_next("/send", Failure::TooManyRequests { retry_after: 3 });

        let refused = send(&url).await.unwrap();
        assert_eq!(
            refused,
            (
                StatusCode::TOO_MANY_REQUESTS,
                Some("3".to_owned()),
                "slow down".to_owned()
            )
        );
        assert_eq!(effects(&fake), 0, "a refused request takes no effect");

        let retried = send(&url).await.unwrap();
        assert_eq!(retried, (StatusCode::OK, None, "done".to_owned()));
        assert_eq!(effects(&fake), 1);
        assert_eq!(fake.lock().0.calls().len(), 2, "both requests are recorded");
    }

    #[tokio::test]
    async fn a_slow_answer_comes_late_but_the_request_takes_effect_at_once() {
        let (fake, _server, url) = start().await;
        let delay = Duration::from_millis(500);
        fake.lock().0.fail_next("/send", Failure::Slow(delay));

        let started = Instant::now();
        let sending = tokio::spawn({
            let url = url.clone();
            async move { send(&url).await }
        });
        fake.wait(
            Duration::from_secs(5),
            |(_, effects)| (*effects == 1).then_some(()),
            |_| (),
        )
        .await
        .unwrap();
        assert!(started.elapsed() < delay, "the request takes effect before the delay");
        let (status, _, body) = sending.await.unwrap().unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::OK, "done"));
        assert!(started.elapsed() >= delay, "the answer comes after it");
    }

    #[tokio::test]
    async fn a_dropped_connection_gets_no_answer_and_takes_no_effect() {
        let (fake, _server, url) = start().await;
        fake.lock().0.fail_next("/send", Failure::Disconnect);

        let dropped = send(&url).await;
        assert!(dropped.is_err(), "no answer: {dropped:?}");
        assert_eq!(effects(&fake), 0);

        assert_eq!(
            send(&url).await.unwrap().0,
            StatusCode::OK,
            "the next request is answered"
        );
        assert_eq!(effects(&fake), 1);
    }
}
