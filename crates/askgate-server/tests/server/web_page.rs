//! The web page's link, against the router with the real engine and store: a
//! wrong key gets a small HTML page when a browser follows it and the API's
//! JSON 404 for anyone else, and the right key gets the page.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, agent_one, fixture_in, send_to, web_recipient};

use std::time::Duration;

use askgate_server::{ServerSettings, WebKey};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

const TOKEN: &str = "web-page-test-token-0123456789abcdefghijklm";
const ME_KEY: &str = "web-page-me-key-0123456789abcdefghijklmnopq";
/// What a browser sends when it follows a link.
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
/// The longest any one request may take.
const WITHIN: Duration = Duration::from_secs(10);

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        web_keys: vec![WebKey {
            key: ME_KEY.into(),
            recipient: "me".into(),
        }],
        ..ServerSettings::default()
    };
    fixture_in(dir, vec![web_recipient("me", "Me")], settings).await
}

/// What this suite does with the harness's fixture: a trait of its own, as
/// the server's suites share one binary, where another suite's inherent
/// method of the same name on `Fixture` would clash.
trait Suite {
    async fn get(&self, path: &str, accept: Option<&str>) -> (StatusCode, HeaderMap, String);
}

impl Suite for Fixture {
    /// `GET path` with this `Accept` (none when `None`): status, headers, body.
    async fn get(&self, path: &str, accept: Option<&str>) -> (StatusCode, HeaderMap, String) {
        let mut request = Request::get(path);
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT, accept);
        }
        let response = tokio::time::timeout(
            WITHIN,
            self.router.clone().oneshot(request.body(Body::empty()).unwrap()),
        )
        .await
        .unwrap()
        .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = tokio::time::timeout(WITHIN, response.into_body().collect())
            .await
            .unwrap()
            .unwrap()
            .to_bytes();
        (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
    }
}

fn header_of(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers.get(name).map_or("", |value| value.to_str().unwrap())
}

#[tokio::test]
async fn a_wrong_key_gets_a_small_page_in_a_browser() {
    let fixture = fixture().await;
    for wrong in [format!("/web/{ME_KEY}x"), "/web/nothing".to_owned()] {
        let (status, headers, body) = fixture.get(&wrong, Some(BROWSER_ACCEPT)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{wrong}: {body}");
        assert!(
            header_of(&headers, header::CONTENT_TYPE).starts_with("text/html"),
            "{wrong}: {headers:?}"
        );
        assert_eq!(header_of(&headers, header::VARY), "accept");
        assert_eq!(header_of(&headers, header::CACHE_CONTROL), "no-store");
        assert!(body.starts_with("<!doctype html>"), "{body}");
        assert!(body.contains("This link does not work. Ask for a new one."), "{body}");
        assert!(body.contains("此链接无效，请索取新的链接。"), "{body}");
        // Nothing of the request comes back: the page is the same for every wrong key.
        assert!(!body.contains(ME_KEY) && !body.contains("nothing"), "{body}");
    }
}

#[tokio::test]
async fn a_wrong_key_gets_json_for_api_clients() {
    let fixture = fixture().await;
    let wrong = format!("/web/{ME_KEY}x");
    for accept in [
        None,
        Some("application/json"),
        Some("*/*"),
        Some("text/html;q=0, application/json"),
    ] {
        let (status, headers, body) = fixture.get(&wrong, accept).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "Accept {accept:?}: {body}");
        assert!(
            header_of(&headers, header::CONTENT_TYPE).starts_with("application/json"),
            "Accept {accept:?}: {headers:?}"
        );
        assert_eq!(header_of(&headers, header::VARY), "accept");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "not_found", "Accept {accept:?}: {body}");
    }
    // The page's own API is JSON whatever is asked for: only the page link is a page.
    let (status, headers, _) = fixture.get(&format!("{wrong}/api/state"), Some(BROWSER_ACCEPT)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(header_of(&headers, header::CONTENT_TYPE).starts_with("application/json"));
}

#[tokio::test]
async fn the_right_key_gets_the_page() {
    let fixture = fixture().await;
    let (status, headers, body) = fixture.get(&format!("/web/{ME_KEY}"), Some(BROWSER_ACCEPT)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(header_of(&headers, header::CONTENT_TYPE).starts_with("text/html"));
    assert!(body.contains("/assets/web.js"), "{body}");
    let (status, state) = send_to(
        &fixture.router,
        Request::get(format!("/web/{ME_KEY}/api/state"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{state}");
    assert_eq!(state["recipient"]["name"], "me");
}
