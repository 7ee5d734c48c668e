//! `/metrics` of the real `askgate serve`, end to end: after a question
//! answered on the web page while its agent waited on `POST /v1/ask`, one
//! skipped there and one cancelled by its agent, every family askgate
//! exports is there with the values those requests must have left
//! (`docs/deploy.md`, "Metrics", lists them).

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{AGENT_TOKEN, ME_KEY, Server, metric};

/// How long the waiting agent may take to get its result once answered.
const PROMPTLY: Duration = Duration::from_secs(10);

fn prompt() -> Value {
    json!({
        "to": "me",
        "questions": [{
            "id": "deploy",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": [{"label": "Staging"}, {"label": "Production"}]
        }],
        "timeoutSeconds": 600
    })
}

fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("the resource has an id").to_owned()
}

/// The sample's value, failing with the whole text when it is missing.
fn value(text: &str, sample: &str) -> f64 {
    metric(text, sample).unwrap_or_else(|| panic!("no sample {sample} in:\n{text}"))
}

/// The value of a sample that counts (a counter, a gauge, a bucket).
fn count(text: &str, sample: &str) -> u64 {
    let value = value(text, sample);
    assert!(value >= 0.0 && value.fract() == 0.0, "{sample} is {value}, not a count");
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // A whole number, checked.
    let count = value as u64;
    count
}

fn requests(route: &str, method: &str, status: u16) -> String {
    format!("askgate_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}")
}

fn ended(surface: &str, status: &str) -> String {
    format!("askgate_questions_ended_total{{channel=\"web\",surface=\"{surface}\",status=\"{status}\"}}")
}

#[tokio::test]
async fn every_family_is_exported_with_the_values_a_few_questions_leave() {
    let server = Server::start();
    let started = Instant::now();

    // Answered on the page while the agent waits on POST /v1/ask.
    let mut asked = server.ask_waiting(&prompt()).await;
    server.pending_on_page(ME_KEY, 1).await;
    let (status, body) = server.web_choose(ME_KEY, &asked.id, "deploy", 1).await;
    assert_eq!(status, 200, "{body}");
    let result = asked.result(PROMPTLY).await;
    assert_eq!(result["status"], "answered", "{result}");
    // Skipped on the page.
    let skipped = id_of(&server.create(&prompt()).await);
    let (status, body) = server.web_skip(ME_KEY, &skipped).await;
    assert_eq!(status, 200, "{body}");
    // Cancelled by its agent: nobody acted on it.
    let cancelled = id_of(&server.create(&prompt()).await);
    let (status, body) = server
        .post_json(
            &format!("/v1/questions/{cancelled}/cancel"),
            Some(AGENT_TOKEN),
            &json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // A path no route serves, holding what could be a secret.
    let (status, _) = server.get("/web-typo/not-a-route-secret", None).await;
    assert_eq!(status, 404);
    let elapsed = started.elapsed().as_secs_f64();

    let reply = server.get_reply("/metrics", None).await;
    assert_eq!(reply.status, 200);
    let text = reply.text.as_str();
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF:\n{text}"
    );

    // Questions.
    assert_eq!(count(text, "askgate_questions_created_total{channel=\"web\"}"), 3);
    assert_eq!(count(text, &ended("web", "answered")), 1);
    assert_eq!(count(text, &ended("web", "skipped")), 1);
    assert_eq!(count(text, &ended("none", "cancelled")), 1);
    assert_eq!(count(text, "askgate_questions_pending"), 0);
    let answer_count = "askgate_time_to_answer_seconds_count{channel=\"web\",surface=\"web\"}";
    assert_eq!(count(text, answer_count), 1);
    let answer_sum = value(
        text,
        "askgate_time_to_answer_seconds_sum{channel=\"web\",surface=\"web\"}",
    );
    assert!(
        (0.0..=elapsed).contains(&answer_sum),
        "answered in {answer_sum} s, within a test of {elapsed} s"
    );

    // Deliveries: each question shown on the page as it was stored; none
    // failed, and each reason is there at zero for the configured channel.
    assert_eq!(count(text, "askgate_deliveries_total{channel=\"web\"}"), 3);
    for reason in ["rejected", "unauthorized", "rate_limited", "unavailable", "other"] {
        let errors = format!("askgate_delivery_errors_total{{channel=\"web\",reason=\"{reason}\"}}");
        assert_eq!(count(text, &errors), 0);
    }

    // The channel, the store, the build.
    assert_eq!(count(text, "askgate_channel_up{channel=\"web\"}"), 1);
    for reason in ["full", "locked", "unavailable", "other"] {
        let failures = format!("askgate_store_write_failures_total{{reason=\"{reason}\"}}");
        assert_eq!(count(text, &failures), 0);
    }
    let build = format!("askgate_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    assert_eq!(count(text, &build), 1);

    // HTTP requests, by route template: the waiting ask counted once it
    // answered, the page's routes without their key, the stray path as
    // `unmatched`.
    assert_eq!(count(text, &requests("/v1/ask", "POST", 200)), 1);
    assert_eq!(count(text, &requests("/v1/questions", "POST", 201)), 2);
    assert_eq!(count(text, &requests("/v1/questions/{id}/cancel", "POST", 200)), 1);
    assert_eq!(
        count(text, &requests("/web/{key}/api/questions/{id}/answer", "POST", 200)),
        1
    );
    assert_eq!(
        count(text, &requests("/web/{key}/api/questions/{id}/skip", "POST", 200)),
        1
    );
    assert!(count(text, &requests("/web/{key}/api/state", "GET", 200)) >= 1);
    assert_eq!(count(text, &requests("unmatched", "GET", 404)), 1);
    let timed = "askgate_http_request_duration_seconds_count{route=\"/v1/questions\",method=\"POST\",status=\"201\"}";
    assert_eq!(count(text, timed), 2);
    let slowest =
        "askgate_http_request_duration_seconds_bucket{le=\"+Inf\",route=\"/v1/ask\",method=\"POST\",status=\"200\"}";
    assert_eq!(count(text, slowest), 1);
    for secret in [ME_KEY, AGENT_TOKEN, "not-a-route-secret"] {
        assert!(!text.contains(secret), "{secret} is in the metrics:\n{text}");
    }
}
