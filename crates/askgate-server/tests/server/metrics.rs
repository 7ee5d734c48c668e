//! `/metrics` in-process with `oneshot`: HTTP requests counted by route
//! template (never the path, which holds page keys), questions ended by
//! channel and surface, deliveries, the build, the store's failed writes.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::{Fixture, agent_one, fixture_in, one_agent_one_page, send_to, state_in, web_recipient};

use askgate_server::ServerSettings;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::routing::post;
use serde_json::{Value, json};

const TOKEN: &str = "metrics-test-token-0123456789abcdefghij";
const KEY: &str = "metrics-test-web-key-0123456789abcdefghij";

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let settings = one_agent_one_page(TOKEN, KEY);
    fixture_in(dir, vec![web_recipient("me", "Me")], settings).await
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn post_json(path: &str, token: Option<&str>, body: &Value) -> Request<Body> {
    let mut request = Request::post(path).header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Body::from(body.to_string())).unwrap()
}

fn ask_body() -> Value {
    json!({
        "to": "me",
        "questions": [{"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "A"}, {"label": "B"}]}],
    })
}

/// Asks "me" through the API; the new question's id.
async fn ask(router: &axum::Router) -> String {
    let (status, created) = send_to(router, post_json("/v1/questions", Some(TOKEN), &ask_body())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

async fn scrape(router: &axum::Router) -> String {
    let (status, Value::String(text)) = send_to(router, get("/metrics")).await else {
        panic!("metrics are text");
    };
    assert_eq!(status, StatusCode::OK);
    text
}

/// The value of the sample named `series` (name and labels, exactly as
/// rendered), if there is one.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().unwrap())
}

fn requests(route: &str, method: &str, status: u16) -> String {
    format!("askgate_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}")
}

#[tokio::test]
async fn a_request_counts_under_its_route_template_method_and_status() {
    let fixture = fixture().await;
    let router = &fixture.router;
    ask(router).await;
    ask(router).await;
    let (status, _) = send_to(router, post_json("/v1/questions", None, &ask_body())).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let text = scrape(router).await;
    assert_eq!(
        sample(&text, &requests("/v1/questions", "POST", 201)),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &requests("/v1/questions", "POST", 401)),
        Some(1.0),
        "{text}"
    );
    let timed = "askgate_http_request_duration_seconds_count{route=\"/v1/questions\",method=\"POST\",status=\"201\"}";
    assert_eq!(sample(&text, timed), Some(2.0), "{text}");
    // The scrape itself counts once it has answered: the next one shows it.
    let text = scrape(router).await;
    assert_eq!(sample(&text, &requests("/metrics", "GET", 200)), Some(1.0), "{text}");
}

#[tokio::test]
async fn a_request_no_route_matched_counts_as_unmatched_without_its_path() {
    let fixture = fixture().await;
    let router = &fixture.router;
    let (status, _) = send_to(router, get("/no/such/place-1234")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send_to(router, Request::delete("/v1/ask").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    let text = scrape(router).await;
    assert_eq!(sample(&text, &requests("unmatched", "GET", 404)), Some(1.0), "{text}");
    assert_eq!(sample(&text, &requests("/v1/ask", "DELETE", 405)), Some(1.0), "{text}");
    assert!(!text.contains("place-1234"), "{text}");
}

#[tokio::test]
async fn a_page_request_counts_under_the_template_never_the_key() {
    let fixture = fixture().await;
    let router = &fixture.router;
    let (status, _) = send_to(router, get(&format!("/web/{KEY}/api/state"))).await;
    assert_eq!(status, StatusCode::OK);
    // A wrong key is as secret as a right one (a mistyped key is close to it).
    let (status, _) = send_to(router, get("/web/a-wrong-key-0123456789/api/state")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let text = scrape(router).await;
    assert_eq!(
        sample(&text, &requests("/web/{key}/api/state", "GET", 200)),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &requests("/web/{key}/api/state", "GET", 404)),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains(KEY), "the page key is in the metrics: {text}");
    assert!(!text.contains("a-wrong-key"), "{text}");
}

#[tokio::test]
async fn extra_routes_beside_askgate_are_counted_too() {
    let fixture = fixture().await;
    let hook = axum::Router::new().route("/hooks/{name}", post(|| async { StatusCode::NO_CONTENT }));
    let router = askgate_server::app_with(fixture.state.clone(), hook);
    let (status, _) = send_to(&router, Request::post("/hooks/tg").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send_to(&router, get("/nowhere")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let text = scrape(&router).await;
    assert_eq!(
        sample(&text, &requests("/hooks/{name}", "POST", 204)),
        Some(1.0),
        "{text}"
    );
    // Once: the fallback is askgate's, timed by its own middleware alone.
    assert_eq!(sample(&text, &requests("unmatched", "GET", 404)), Some(1.0), "{text}");
}

#[tokio::test]
async fn questions_end_by_channel_and_surface_and_the_build_is_shown() {
    let fixture = fixture().await;
    let router = &fixture.router;
    let answered = ask(router).await;
    let answer = json!({"answers": {"deploy": {"options": [1]}}});
    let path = format!("/web/{KEY}/api/questions/{answered}/answer");
    let (status, body) = send_to(router, post_json(&path, None, &answer)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cancelled = ask(router).await;
    let path = format!("/v1/questions/{cancelled}/cancel");
    let (status, body) = send_to(router, post_json(&path, Some(TOKEN), &json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let text = scrape(router).await;
    let ended = |surface: &str, status: &str| {
        format!("askgate_questions_ended_total{{channel=\"web\",surface=\"{surface}\",status=\"{status}\"}}")
    };
    assert_eq!(sample(&text, &ended("web", "answered")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &ended("none", "cancelled")), Some(1.0), "{text}");
    let answered_in = "askgate_time_to_answer_seconds_count{channel=\"web\",surface=\"web\"}";
    assert_eq!(sample(&text, answered_in), Some(1.0), "{text}");
    assert_eq!(sample(&text, "askgate_questions_pending"), Some(0.0), "{text}");
    // Each question was shown on the page as it was stored.
    assert_eq!(
        sample(&text, "askgate_deliveries_total{channel=\"web\"}"),
        Some(2.0),
        "{text}"
    );
    let build = format!("askgate_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    assert_eq!(sample(&text, &build), Some(1.0), "{text}");
    for reason in ["full", "locked", "unavailable", "other"] {
        let failures = format!("askgate_store_write_failures_total{{reason=\"{reason}\"}}");
        assert_eq!(sample(&text, &failures), Some(0.0), "{text}");
    }
}

#[tokio::test]
async fn delivery_errors_count_by_reason() {
    use askgate_core::ChannelError;
    use askgate_engine::Observer as _;
    let metrics = askgate_server::Metrics::new();
    metrics.delivery_error("tg", &ChannelError::Unauthorized);
    metrics.delivery_error("tg", &ChannelError::Unauthorized);
    let text = metrics.render();
    let series = "askgate_delivery_errors_total{channel=\"tg\",reason=\"unauthorized\"}";
    assert_eq!(sample(&text, series), Some(2.0), "{text}");
}

#[tokio::test]
async fn failed_store_writes_show_once_each_whatever_the_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        ..ServerSettings::default()
    };
    let (state, _stop) = state_in(dir.path(), vec![web_recipient("me", "Me")], settings).await;
    let router = askgate_server::app(state);
    ask(&router).await;
    // A backup restored over the file: the store refuses every write.
    let path = dir.path().join("askgate.db");
    let copy = path.with_extension("restored");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    let other = "askgate_store_write_failures_total{reason=\"other\"}";
    let full = "askgate_store_write_failures_total{reason=\"full\"}";
    // Each failed write shows once, however many scrapes come between.
    for failed in 1..=2 {
        let (status, body) = send_to(&router, post_json("/v1/questions", Some(TOKEN), &ask_body())).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        for _ in 0..2 {
            let text = scrape(&router).await;
            assert_eq!(sample(&text, other), Some(f64::from(failed)), "{text}");
            assert_eq!(sample(&text, full), Some(0.0), "{text}");
        }
    }
}
