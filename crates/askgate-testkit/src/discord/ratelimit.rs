//! Discord's per-channel message bucket, on demand: at most `limit`
//! messages in any `window` in one channel, answered with the
//! `X-RateLimit-*` headers Discord sends, and a 429 past it.
//! ([`super::FakeDiscord::limit_channel_messages`]; off unless a test asks.)

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The bucket's answer to one message.
pub(crate) enum Bucket {
    /// Taken: the headers to send with the message.
    Taken(Vec<(&'static str, String)>),
    /// Exhausted: retry after this long.
    Exhausted(Duration),
}

/// Every channel's recent messages, when a limit is set.
#[derive(Debug, Default)]
pub(crate) struct ChannelLimits {
    limit: Option<(usize, Duration)>,
    sent: HashMap<u64, Vec<Instant>>,
}

impl ChannelLimits {
    pub(crate) fn set(&mut self, limit: usize, window: Duration) {
        self.limit = Some((limit.max(1), window));
    }

    /// Takes a place for a message in `channel` now, if there is one.
    pub(crate) fn take(&mut self, channel: u64) -> Option<Bucket> {
        let (limit, window) = self.limit?;
        let now = Instant::now();
        let sent = self.sent.entry(channel).or_default();
        let recent: Vec<Instant> = sent.iter().copied().filter(|at| now - *at < window).collect();
        let reset_after = |recent: &[Instant]| {
            recent
                .first()
                .map_or(window, |first| window.saturating_sub(now - *first))
        };
        if recent.len() >= limit {
            return Some(Bucket::Exhausted(reset_after(&recent)));
        }
        sent.push(now);
        let remaining = limit - recent.len() - 1;
        let mut window_start = recent;
        window_start.push(now);
        let reset = reset_after(&window_start);
        Some(Bucket::Taken(vec![
            ("x-ratelimit-limit", limit.to_string()),
            ("x-ratelimit-remaining", remaining.to_string()),
            ("x-ratelimit-reset-after", format!("{:.3}", reset.as_secs_f64())),
            ("x-ratelimit-bucket", format!("channel-messages-{channel}")),
        ]))
    }

    /// When each message taken in `channel` was.
    pub(crate) fn times(&self, channel: u64) -> Vec<Instant> {
        self.sent.get(&channel).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_counts_down_in_its_headers_then_refuses_until_the_window_passes() {
        let mut limits = ChannelLimits::default();
        assert!(limits.take(1).is_none(), "off unless asked for");
        limits.set(2, Duration::from_secs(60));
        let remaining = |bucket: Option<Bucket>| match bucket {
            Some(Bucket::Taken(headers)) => headers
                .iter()
                .find(|(name, _)| *name == "x-ratelimit-remaining")
                .map(|(_, value)| value.clone()),
            _ => None,
        };
        assert_eq!(remaining(limits.take(1)).as_deref(), Some("1"));
        assert_eq!(remaining(limits.take(1)).as_deref(), Some("0"));
        assert!(matches!(limits.take(1), Some(Bucket::Exhausted(after)) if after > Duration::from_secs(59)));
        assert_eq!(
            remaining(limits.take(2)).as_deref(),
            Some("1"),
            "each channel has its own bucket"
        );
        assert_eq!(limits.times(1).len(), 2);
    }
}
