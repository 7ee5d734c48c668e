//! HTTP request metrics: every request counted and timed by the route that
//! served it, its method and its status, by a middleware on askgate's router
//! and on the routes merged beside it (the channels' webhooks).
//!
//! The route is axum's template (`/web/{key}/api/state`), never the path
//! itself: paths hold page keys, which are secrets, and are unbounded; a
//! request that no route matched is `unmatched`. The duration runs until
//! the response's headers are ready: a long wait (`POST /v1/ask`, which
//! answers at once and sends spaces while it waits, or a server-sent event
//! stream) counts then, not when its body ends.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Metrics;

/// The route of a request that no route matched.
pub(crate) const UNMATCHED: &str = "unmatched";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: String,
}

type DurationFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// The HTTP families of [`Metrics`].
#[derive(Debug)]
pub(crate) struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: DurationFamily,
}

fn duration_buckets() -> Histogram {
    // 5 ms (a page's state) to 60 s; slower lands in +Inf.
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ])
}

impl HttpMetrics {
    /// The families, registered in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let duration: DurationFamily = Family::new_with_constructor(duration_buckets);
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template (\"unmatched\" when none matched), method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Seconds from a request's arrival to its response's headers (a long wait or an event stream counts \
             when it starts answering, not when its body ends), by route template, method and status",
            duration.clone(),
        );
        Self { requests, duration }
    }

    fn observe(&self, labels: &RequestLabels, seconds: f64) {
        self.requests.get_or_create(labels).inc();
        self.duration.get_or_create(labels).observe(seconds);
    }
}

/// The method as a label: the standard ones by name, any other `other`
/// (a client may send any token as a method: a label must stay bounded).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// The middleware: counts and times each request once its response is ready.
pub(crate) async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_owned(), |matched| matched.as_str().to_owned());
    let method = method_label(request.method());
    let response = next.run(request).await;
    let labels = RequestLabels {
        route,
        method,
        status: response.status().as_u16().to_string(),
    };
    metrics.http.observe(&labels, started.elapsed().as_secs_f64());
    response
}
