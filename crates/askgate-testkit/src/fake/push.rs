//! Requests a fake pushes to the server under test, as a platform delivers
//! webhooks: one at a time, in order, each until a 2xx answer.
//!
//! The fake keeps the queue; [`push_in_order`] asks it for the next push
//! after every attempt and after every change it announces, so a push that
//! failed is simply the head of the queue again after a pause.

use std::io;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use tokio::sync::Notify;

/// One request to push: a body and its headers, to `POST` to a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// Where.
    pub url: String,
    /// The headers, `Content-Type` included.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Why a push got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAnswer {
    /// None came within the client's timeout.
    Timeout,
    /// Nothing listens at the address.
    Refused,
    /// The connection was reset.
    Reset,
    /// Anything else, as the HTTP client put it.
    Other(String),
}

/// What a fake has to push next.
#[derive(Debug)]
pub enum Next<T> {
    /// This push, with the fake's note on it, given back with the outcome.
    Push(Push, T),
    /// Nothing for now: ask again when the fake announces a change.
    Idle,
    /// The fake is closing: pushing is over.
    Stop,
}

/// One push attempt and its outcome.
#[derive(Debug)]
pub struct Pushed<T> {
    /// What was pushed.
    pub push: Push,
    /// The fake's note on it.
    pub note: T,
    /// When the request was sent.
    pub at: Instant,
    /// The status of the answer, or why none came.
    pub outcome: Result<StatusCode, NoAnswer>,
}

impl<T> Pushed<T> {
    /// Whether the push was acknowledged (a 2xx answer); anything else is
    /// to be tried again.
    pub fn acknowledged(&self) -> bool {
        self.outcome.as_ref().is_ok_and(StatusCode::is_success)
    }
}

/// An HTTP client for pushes, which gives up on an answer after `timeout`.
pub fn push_client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        // Pushes go to a local address; a proxy from the environment must not intercept them.
        .no_proxy()
        // A connection per attempt: a server under test that restarts or
        // shuts down gracefully is neither held open nor sent a stale
        // connection.
        .pool_max_idle_per_host(0)
        .build()
}

/// Where a push to `url` goes when `base` (`http://127.0.0.1:PORT`) stands
/// in for its host: `base` with the path and query of `url`, as a reverse
/// proxy at `url`'s public address would forward it.
pub fn forward_url(base: &str, url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let without_fragment = after_scheme.split('#').next().unwrap_or_default();
    let path = without_fragment
        .find(['/', '?'])
        .map_or("", |at| &without_fragment[at..]);
    let slash = if path.starts_with('/') { "" } else { "/" };
    format!("{}{slash}{path}", base.trim_end_matches('/'))
}

/// Pushes what `next` gives, one at a time, and hands every attempt to
/// `record`; after an attempt that was not acknowledged, waits `retry_pause`
/// before asking `next` again. `next` is asked again whenever `changed` is
/// notified while it has nothing. Returns when `next` says
/// [`Next::Stop`].
pub async fn push_in_order<T>(
    client: &reqwest::Client,
    changed: &Notify,
    retry_pause: Duration,
    mut next: impl FnMut() -> Next<T>,
    mut record: impl FnMut(Pushed<T>),
) {
    loop {
        // Created before `next` looks, so that no change after it is missed.
        let change = changed.notified();
        let (push, note) = match next() {
            Next::Push(push, note) => (push, note),
            Next::Idle => {
                change.await;
                continue;
            }
            Next::Stop => return,
        };
        drop(change);
        let at = Instant::now();
        let outcome = send(client, &push).await;
        let pushed = Pushed {
            push,
            note,
            at,
            outcome,
        };
        let acknowledged = pushed.acknowledged();
        record(pushed);
        if !acknowledged {
            tokio::time::sleep(retry_pause).await;
        }
    }
}

/// POSTs one push: the status of the answer, or why none came.
async fn send(client: &reqwest::Client, push: &Push) -> Result<StatusCode, NoAnswer> {
    let mut request = client.post(&push.url);
    for (name, value) in &push.headers {
        request = request.header(name, value);
    }
    match request.body(push.body.clone()).send().await {
        Ok(response) => Ok(response.status()),
        Err(error) => Err(no_answer(&error)),
    }
}

fn no_answer(error: &reqwest::Error) -> NoAnswer {
    if error.is_timeout() {
        return NoAnswer::Timeout;
    }
    // reqwest names neither a refused nor a reset connection; the I/O error
    // at the bottom of its sources does.
    let mut innermost: &(dyn std::error::Error + 'static) = error;
    while let Some(source) = innermost.source() {
        if let Some(io_error) = source.downcast_ref::<io::Error>() {
            match io_error.kind() {
                io::ErrorKind::ConnectionRefused => return NoAnswer::Refused,
                io::ErrorKind::ConnectionReset => return NoAnswer::Reset,
                _ => {}
            }
        }
        innermost = source;
    }
    NoAnswer::Other(innermost.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use axum::Router;
    use axum::body::Bytes;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use tokio::net::TcpListener;
    use tokio::sync::Notify;

    use super::{Next, NoAnswer, Push, Pushed, forward_url, push_client, push_in_order};
    use crate::fake::Loopback;

    const PAUSE: Duration = Duration::from_millis(10);

    /// A receiver that answers with the scripted statuses, then 200, and
    /// keeps what it was sent.
    #[derive(Default)]
    struct Receiver {
        script: Mutex<VecDeque<StatusCode>>,
        hits: Mutex<Vec<(Option<String>, Bytes)>>,
    }

    async fn receive(State(receiver): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
        let secret = headers.get("x-secret").map(|value| value.to_str().unwrap().to_owned());
        receiver.hits.lock().unwrap().push((secret, body));
        receiver.script.lock().unwrap().pop_front().unwrap_or(StatusCode::OK)
    }

    fn push(url: &str, body: &str) -> Push {
        Push {
            url: url.to_owned(),
            headers: vec![
                ("content-type".to_owned(), "text/plain".to_owned()),
                ("x-secret".to_owned(), "s3cret".to_owned()),
            ],
            body: body.as_bytes().to_vec(),
        }
    }

    /// Pushes `bodies` to `url`, each until acknowledged, and returns every
    /// attempt as (note, status).
    async fn push_all(url: &str, bodies: &[&str]) -> Vec<(usize, Result<StatusCode, NoAnswer>)> {
        let client = push_client(Duration::from_secs(5)).unwrap();
        let queue: Mutex<VecDeque<(usize, Push)>> =
            Mutex::new(bodies.iter().map(|body| push(url, body)).enumerate().collect());
        let attempts = Mutex::new(Vec::new());
        let next = || match queue.lock().unwrap().front() {
            Some((note, push)) => Next::Push(push.clone(), *note),
            None => Next::Stop,
        };
        let record = |pushed: Pushed<usize>| {
            if pushed.acknowledged() {
                queue.lock().unwrap().pop_front();
            }
            attempts.lock().unwrap().push((pushed.note, pushed.outcome));
        };
        let idle = Notify::new();
        let pushing = push_in_order(&client, &idle, PAUSE, next, record);
        tokio::time::timeout(Duration::from_secs(5), pushing).await.unwrap();
        attempts.into_inner().unwrap()
    }

    #[tokio::test]
    async fn pushes_are_sent_in_order_each_until_acknowledged() {
        let receiver = Arc::new(Receiver::default());
        receiver
            .script
            .lock()
            .unwrap()
            .extend([StatusCode::SERVICE_UNAVAILABLE, StatusCode::FOUND]);
        let app = Router::new().fallback(receive).with_state(Arc::clone(&receiver));
        let server = Loopback::serve(app).await.unwrap();

        let attempts = push_all(&format!("http://{}/hook", server.addr()), &["first", "second"]).await;

        assert_eq!(
            attempts,
            [
                (0, Ok(StatusCode::SERVICE_UNAVAILABLE)),
                (0, Ok(StatusCode::FOUND)),
                (0, Ok(StatusCode::OK)),
                (1, Ok(StatusCode::OK)),
            ],
            "only a 2xx acknowledges; the next waits for it"
        );
        let hits = receiver.hits.lock().unwrap().clone();
        let secret = Some("s3cret".to_owned());
        assert_eq!(
            hits,
            [
                (secret.clone(), Bytes::from("first")),
                (secret.clone(), Bytes::from("first")),
                (secret.clone(), Bytes::from("first")),
                (secret, Bytes::from("second")),
            ]
        );
    }

    #[tokio::test]
    async fn a_refused_push_is_tried_again() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let client = push_client(Duration::from_secs(5)).unwrap();
        let mut tries = 0;
        let next = || {
            tries += 1;
            if tries > 2 {
                Next::Stop
            } else {
                Next::Push(push(&format!("http://{addr}/hook"), "lost"), ())
            }
        };
        let mut outcomes = Vec::new();
        push_in_order(&client, &Notify::new(), PAUSE, next, |pushed| {
            outcomes.push(pushed.outcome);
        })
        .await;
        assert_eq!(outcomes, [Err(NoAnswer::Refused), Err(NoAnswer::Refused)]);
    }

    #[tokio::test]
    async fn a_push_without_an_answer_in_time_times_out() {
        let app = Router::new().fallback(std::future::pending::<StatusCode>);
        let server = Loopback::serve(app).await.unwrap();
        let client = push_client(Duration::from_millis(100)).unwrap();
        let mut tries = 0;
        let next = || {
            tries += 1;
            if tries > 1 {
                Next::Stop
            } else {
                Next::Push(push(&format!("http://{}/hook", server.addr()), "slow"), ())
            }
        };
        let mut outcomes = Vec::new();
        push_in_order(&client, &Notify::new(), PAUSE, next, |pushed| {
            outcomes.push(pushed.outcome);
        })
        .await;
        assert_eq!(outcomes, [Err(NoAnswer::Timeout)]);
    }

    #[tokio::test]
    async fn an_idle_fake_is_asked_again_when_it_announces_a_change() {
        let changed = Arc::new(Notify::new());
        let ready = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(AtomicUsize::new(0));
        let client = push_client(Duration::from_secs(5)).unwrap();
        let pushing = tokio::spawn({
            let (changed, ready, asked) = (Arc::clone(&changed), Arc::clone(&ready), Arc::clone(&asked));
            async move {
                let next = || {
                    asked.fetch_add(1, Ordering::SeqCst);
                    if ready.load(Ordering::SeqCst) {
                        Next::Stop
                    } else {
                        Next::Idle
                    }
                };
                push_in_order(&client, &changed, PAUSE, next, |_: Pushed<()>| {}).await;
            }
        });
        while asked.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            asked.load(Ordering::SeqCst),
            1,
            "an idle fake is not asked again before a change"
        );
        ready.store(true, Ordering::SeqCst);
        changed.notify_waiters();
        tokio::time::timeout(Duration::from_secs(5), pushing)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_forwarded_url_keeps_the_path_and_query_on_the_new_base() {
        let base = "http://127.0.0.1:8080";
        assert_eq!(
            forward_url(base, "https://askgate.test/telegram/tg?x=1#frag"),
            "http://127.0.0.1:8080/telegram/tg?x=1"
        );
        assert_eq!(
            forward_url("http://127.0.0.1:8080/", "https://askgate.test/hook"),
            "http://127.0.0.1:8080/hook"
        );
        assert_eq!(forward_url(base, "https://askgate.test"), "http://127.0.0.1:8080/");
        assert_eq!(
            forward_url(base, "https://askgate.test?x=1"),
            "http://127.0.0.1:8080/?x=1"
        );
    }
}
