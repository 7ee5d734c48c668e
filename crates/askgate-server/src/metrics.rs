//! Prometheus metrics: questions by channel, surface and status, the
//! pending gauge, time to answer, deliveries and delivery errors, whether
//! each channel is up, the store's failed writes, the build, and HTTP
//! requests ([`http`]). Fed by the engine's [`Observer`] hooks, the
//! channels' states ([`crate::ChannelStates`]), the store's counts (read at
//! each scrape) and a middleware on the router.

pub(crate) mod http;

use std::sync::{Mutex, PoisonError};

use askgate_core::ChannelError;
use askgate_engine::Observer;
use askgate_store::{QuestionRecord, QuestionStatus, WriteFailure, WriteFailures};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabel {
    channel: String,
}

/// Where a question was asked (`channel`, its first surface) and where it
/// was acted on (`surface`: the channel it was answered or skipped on, or
/// [`NO_SURFACE`]).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SurfaceLabels {
    channel: String,
    surface: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndedLabels {
    channel: String,
    surface: String,
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    channel: String,
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

/// The reasons of `askgate_delivery_errors_total`.
const DELIVERY_ERRORS: [&str; 5] = ["rejected", "unauthorized", "rate_limited", "unavailable", "other"];

/// The reason label of a failed delivery: one of [`DELIVERY_ERRORS`].
fn delivery_error_reason(error: &ChannelError) -> &'static str {
    match error {
        ChannelError::Rejected { .. } => "rejected",
        ChannelError::Unauthorized => "unauthorized",
        ChannelError::RateLimited { .. } => "rate_limited",
        ChannelError::Unavailable { .. } => "unavailable",
        _ => "other",
    }
}

/// The surface of a question that ended without anyone acting on it
/// (expired, cancelled, not delivered).
const NO_SURFACE: &str = "none";

type HistogramFamily = Family<SurfaceLabels, Histogram, fn() -> Histogram>;

/// askgate's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    created: Family<ChannelLabel, Counter>,
    ended: Family<EndedLabels, Counter>,
    pending: Gauge,
    time_to_answer: HistogramFamily,
    deliveries: Family<ChannelLabel, Counter>,
    delivery_errors: Family<ErrorLabels, Counter>,
    surfaces_failed: Family<ChannelLabel, Counter>,
    channel_up: Family<ChannelLabel, Gauge>,
    /// Follows the store's own counts ([`Metrics::note_store_failures`]);
    /// the lock makes two scrapes at once add each failure once.
    store_write_failures: Mutex<Family<ReasonLabel, Counter>>,
    pub(crate) http: http::HttpMetrics,
}

fn answer_buckets() -> Histogram {
    // 1 s to about 68 min: people answer in seconds to an hour.
    Histogram::new([1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0])
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every askgate metric, all at zero.
    pub fn new() -> Self {
        let created = Family::<ChannelLabel, Counter>::default();
        let ended = Family::<EndedLabels, Counter>::default();
        let pending = Gauge::default();
        let time_to_answer: HistogramFamily = Family::new_with_constructor(answer_buckets);
        let deliveries = Family::<ChannelLabel, Counter>::default();
        let delivery_errors = Family::<ErrorLabels, Counter>::default();
        let surfaces_failed = Family::<ChannelLabel, Counter>::default();
        let channel_up = Family::<ChannelLabel, Gauge>::default();
        let store_write_failures = Family::<ReasonLabel, Counter>::default();
        // Every reason shown from the start, at zero: an alert on a rate
        // needs the series before its first failure.
        for reason in WriteFailure::ALL {
            let _ = store_write_failures.get_or_create(&ReasonLabel {
                reason: reason.as_str(),
            });
        }
        let build_info = Family::<VersionLabel, Gauge>::default();
        build_info
            .get_or_create(&VersionLabel {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        let mut registry = Registry::with_prefix("askgate");
        registry.register(
            "questions_created",
            "Questions accepted, by channel (of the first surface)",
            created.clone(),
        );
        registry.register(
            "questions_ended",
            "Questions ended, by channel (of the first surface), surface (the channel answered or skipped on, \
             \"none\" when nobody acted) and final status",
            ended.clone(),
        );
        registry.register(
            "questions_pending",
            "Questions waiting for an answer now",
            pending.clone(),
        );
        registry.register(
            "time_to_answer_seconds",
            "Seconds from accepting a question to its answer, by channel (of the first surface) and surface \
             (answered on)",
            time_to_answer.clone(),
        );
        registry.register(
            "deliveries",
            "Prompts delivered to a surface, by channel",
            deliveries.clone(),
        );
        registry.register(
            "delivery_errors",
            "Failed delivery attempts, by channel and reason",
            delivery_errors.clone(),
        );
        registry.register(
            "surfaces_failed",
            "Surfaces askgate gave up delivering a question to (the platform refused it, or the channel is gone), by channel",
            surfaces_failed.clone(),
        );
        registry.register(
            "channel_up",
            "Whether each configured channel is up with its platform (1), or connecting or refused (0)",
            channel_up.clone(),
        );
        registry.register(
            "store_write_failures",
            "Store writes that failed because the database could not take them, by reason",
            store_write_failures.clone(),
        );
        registry.register("build_info", "The running askgate's version; always 1", build_info);
        let http = http::HttpMetrics::register(&mut registry);
        Self {
            registry: Mutex::new(registry),
            created,
            ended,
            pending,
            time_to_answer,
            deliveries,
            delivery_errors,
            surfaces_failed,
            channel_up,
            store_write_failures: Mutex::new(store_write_failures),
            http,
        }
    }

    /// Brings `askgate_store_write_failures_total` up to the store's own
    /// counts (`failures`, [`askgate_store::Store::write_failures`]), read
    /// before each render: the store counts, the registry only shows.
    pub fn note_store_failures(&self, failures: &WriteFailures) {
        let family = self.store_write_failures.lock().unwrap_or_else(PoisonError::into_inner);
        for reason in WriteFailure::ALL {
            let counter = family.get_or_create(&ReasonLabel {
                reason: reason.as_str(),
            });
            let shown = counter.get();
            let in_store = failures.count(reason);
            // A store opened again starts from zero: a counter never goes back.
            if in_store > shown {
                counter.inc_by(in_store - shown);
            }
        }
    }

    /// Sets `askgate_channel_up{channel}`: 1 while the channel is up. A
    /// channel's delivery counters are shown from then on, at zero until
    /// something counts: an alert on a rate needs the series before its
    /// first event.
    pub fn set_channel_up(&self, channel: &str, up: bool) {
        let label = ChannelLabel {
            channel: channel.to_owned(),
        };
        self.channel_up.get_or_create(&label).set(i64::from(up));
        let _ = self.deliveries.get_or_create(&label);
        let _ = self.surfaces_failed.get_or_create(&label);
        for reason in DELIVERY_ERRORS {
            let _ = self.delivery_errors.get_or_create(&ErrorLabels {
                channel: channel.to_owned(),
                reason,
            });
        }
    }

    /// Sets the pending gauge, from the store at start-up.
    pub fn set_pending(&self, count: usize) {
        self.pending.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// The metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

impl Observer for Metrics {
    fn question_created(&self, record: &QuestionRecord) {
        self.created
            .get_or_create(&ChannelLabel {
                channel: record.channel().to_owned(),
            })
            .inc();
        self.pending.inc();
    }

    fn question_resolved(&self, record: &QuestionRecord) {
        self.pending.dec();
        let surface = record
            .resolution
            .as_ref()
            .and_then(|resolution| resolution.via.clone())
            .unwrap_or_else(|| NO_SURFACE.to_owned());
        let channel = record.channel().to_owned();
        self.ended
            .get_or_create(&EndedLabels {
                channel: channel.clone(),
                surface: surface.clone(),
                status: record.status.as_str(),
            })
            .inc();
        if record.status == QuestionStatus::Answered
            && let Some(resolution) = &record.resolution
        {
            #[allow(clippy::cast_precision_loss)] // Milliseconds of an hour fit an f64 exactly.
            let seconds = (resolution.at - record.created_at).max(0) as f64 / 1000.0;
            self.time_to_answer
                .get_or_create(&SurfaceLabels { channel, surface })
                .observe(seconds);
        }
    }

    fn delivered(&self, channel: &str) {
        self.deliveries
            .get_or_create(&ChannelLabel {
                channel: channel.to_owned(),
            })
            .inc();
    }

    fn surface_failed(&self, channel: &str) {
        self.surfaces_failed
            .get_or_create(&ChannelLabel {
                channel: channel.to_owned(),
            })
            .inc();
    }

    fn delivery_error(&self, channel: &str, error: &ChannelError) {
        self.delivery_errors
            .get_or_create(&ErrorLabels {
                channel: channel.to_owned(),
                reason: delivery_error_reason(error),
            })
            .inc();
    }
}
