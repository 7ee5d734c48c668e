//! Prometheus metrics: questions by channel and status, the pending gauge,
//! time to answer, delivery errors, whether each channel is up. Fed by the
//! engine's [`Observer`] hooks and the channels' states
//! ([`crate::ChannelStates`]).

use std::sync::Mutex;

use askgate_core::ChannelError;
use askgate_engine::Observer;
use askgate_store::{QuestionRecord, QuestionStatus};
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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndedLabels {
    channel: String,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    channel: String,
    kind: String,
}

type HistogramFamily = Family<ChannelLabel, Histogram, fn() -> Histogram>;

/// askgate's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    created: Family<ChannelLabel, Counter>,
    ended: Family<EndedLabels, Counter>,
    pending: Gauge,
    time_to_answer: HistogramFamily,
    delivery_errors: Family<ErrorLabels, Counter>,
    channel_up: Family<ChannelLabel, Gauge>,
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
        let delivery_errors = Family::<ErrorLabels, Counter>::default();
        let channel_up = Family::<ChannelLabel, Gauge>::default();
        let mut registry = Registry::with_prefix("askgate");
        registry.register("questions_created", "Questions accepted, by channel", created.clone());
        registry.register(
            "questions_ended",
            "Questions ended, by channel and final status",
            ended.clone(),
        );
        registry.register(
            "questions_pending",
            "Questions waiting for an answer now",
            pending.clone(),
        );
        registry.register(
            "time_to_answer_seconds",
            "Seconds from accepting a question to its answer, by channel",
            time_to_answer.clone(),
        );
        registry.register(
            "delivery_errors",
            "Failed delivery attempts, by channel and kind",
            delivery_errors.clone(),
        );
        registry.register(
            "channel_up",
            "Whether each configured channel is up with its platform (1), or connecting or refused (0)",
            channel_up.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            created,
            ended,
            pending,
            time_to_answer,
            delivery_errors,
            channel_up,
        }
    }

    /// Sets `askgate_channel_up{channel}`: 1 while the channel is up.
    pub fn set_channel_up(&self, channel: &str, up: bool) {
        self.channel_up
            .get_or_create(&ChannelLabel {
                channel: channel.to_owned(),
            })
            .set(i64::from(up));
    }

    /// Sets the pending gauge, from the store at start-up.
    pub fn set_pending(&self, count: usize) {
        self.pending.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// The metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let registry = self.registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
        // Where it was answered; a question that ended otherwise counts on
        // its first surface.
        let channel = record
            .resolution
            .as_ref()
            .and_then(|resolution| resolution.via.clone())
            .unwrap_or_else(|| record.channel().to_owned());
        self.ended
            .get_or_create(&EndedLabels {
                channel: channel.clone(),
                status: record.status.as_str().to_owned(),
            })
            .inc();
        if record.status == QuestionStatus::Answered
            && let Some(resolution) = &record.resolution
        {
            #[allow(clippy::cast_precision_loss)] // Milliseconds of an hour fit an f64 exactly.
            let seconds = (resolution.at - record.created_at).max(0) as f64 / 1000.0;
            self.time_to_answer
                .get_or_create(&ChannelLabel { channel })
                .observe(seconds);
        }
    }

    fn delivery_error(&self, channel: &str, error: &ChannelError) {
        let kind = match error {
            ChannelError::Rejected { .. } => "rejected",
            ChannelError::Unauthorized => "unauthorized",
            ChannelError::RateLimited { .. } => "rate_limited",
            ChannelError::Unavailable { .. } => "unavailable",
            _ => "other",
        };
        self.delivery_errors
            .get_or_create(&ErrorLabels {
                channel: channel.to_owned(),
                kind: kind.to_owned(),
            })
            .inc();
    }
}
