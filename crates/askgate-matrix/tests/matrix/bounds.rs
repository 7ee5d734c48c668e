//! What askgate reads of a homeserver is bounded: matrix-sdk reaches it
//! through askgate's relay (`askgate_matrix::relay`), which reads each
//! answer within 2 MiB (a `/sync` within 32 MiB). A homeserver that answers
//! more costs askgate no more, and the channel says why it got no answer.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use askgate_adapter::Secret;
use askgate_core::channel::ChannelError;
use askgate_matrix::{Login, MatrixChannel, MatrixSettings};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

/// A homeserver whose `whoami` answers 3 MiB: a valid JSON string, had
/// anyone read it whole.
async fn oversized_homeserver() -> (String, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let whoami = |State(asked): State<Arc<AtomicUsize>>| async move {
        asked.fetch_add(1, Ordering::SeqCst);
        let padding = "x".repeat(3 * 1024 * 1024);
        let body = format!(r#"{{"user_id":"@bot:hs","device_id":"DEV","padding":"{padding}"}}"#);
        (StatusCode::OK, [("content-type", "application/json")], body)
    };
    let app = Router::new()
        .route(
            "/_matrix/client/versions",
            get(|| async { axum::Json(json!({"versions": ["v1.11", "v1.12"]})) }),
        )
        .route("/_matrix/client/v3/account/whoami", get(whoami))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"})),
            )
                .into_response()
        })
        .with_state(Arc::clone(&asked));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, asked)
}

#[tokio::test]
async fn an_answer_larger_than_the_bound_is_not_read_and_said_so() {
    let (homeserver, asked) = oversized_homeserver().await;
    let channel = MatrixChannel::new(MatrixSettings {
        name: "mx".into(),
        homeserver,
        user_id: "@bot:hs".into(),
        login: Login::Token(Secret::new("syt_secret_token".into())),
        device_id: Some("DEV".into()),
        store_dir: None,
    });
    let refused = channel.check().await.unwrap_err();
    let ChannelError::Unavailable { reason } = &refused else {
        panic!("too large an answer is the homeserver failing, for now: {refused:?}");
    };
    assert!(reason.contains("larger than 2 MiB"), "{reason}");
    assert!(!reason.contains("syt_secret_token"), "{reason}");
    assert!(reason.len() < 1024, "the reason is a few words: {reason}");
    assert!(asked.load(Ordering::SeqCst) >= 1, "the homeserver was asked");
}
