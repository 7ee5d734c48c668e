//! `read_capped` against a real server streaming a body of a gigabyte:
//! the read stops at the limit, and the process's peak memory hardly moves.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::time::{Duration, Instant};

use askgate_adapter::read::{MAX_ANSWER_BYTES, ReadError, read_capped};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

const GIGABYTE: u64 = 1 << 30;

static BLOCK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// A body of `bytes` bytes made as it is sent, never held.
fn lazy_body(bytes: u64) -> Body {
    Body::from_stream(futures_util::stream::unfold(bytes, |left| async move {
        (left > 0).then(|| {
            let size = usize::try_from(left).unwrap_or(usize::MAX).min(BLOCK.len());
            let chunk: Result<Bytes, Infallible> = Ok(Bytes::from_static(&BLOCK[..size]));
            (chunk, left - size as u64)
        })
    }))
}

async fn serve() -> String {
    let app = Router::new()
        .route(
            "/huge",
            get(|| async { (axum::http::StatusCode::BAD_GATEWAY, lazy_body(GIGABYTE)) }),
        )
        .route(
            "/said-huge",
            get(|| async { ([(header::CONTENT_LENGTH, GIGABYTE.to_string())], lazy_body(GIGABYTE)).into_response() }),
        )
        .route("/small", get(|| async { "{\"ok\":true}" }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// This process's peak resident memory (`VmHWM`), in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_gigabyte_answer_is_read_no_further_than_the_limit() {
    let base = serve().await;
    let client = reqwest::Client::new();
    let small = read_capped(
        client.get(format!("{base}/small")).send().await.unwrap(),
        MAX_ANSWER_BYTES,
    )
    .await;
    assert_eq!(small.unwrap(), b"{\"ok\":true}");

    let before = peak_kib();
    let started = Instant::now();
    for path in ["/huge", "/said-huge"] {
        let response = client.get(format!("{base}{path}")).send().await.unwrap();
        let read = read_capped(response, MAX_ANSWER_BYTES).await;
        assert!(
            matches!(
                read,
                Err(ReadError::TooLarge {
                    limit: MAX_ANSWER_BYTES
                })
            ),
            "{path}: {read:?}"
        );
    }
    let grown = peak_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "the peak grew by {grown} KiB reading past the limit");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped at the limit, not at the end: {:?}",
        started.elapsed()
    );
}
