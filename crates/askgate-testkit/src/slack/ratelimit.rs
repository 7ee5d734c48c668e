//! Slack's posting limit, when a test asks for it: about one message a
//! second in a channel, with short bursts tolerated. A bucket per channel
//! holds up to `burst` messages and refills one every `per_channel`; a post
//! to an empty bucket is answered `429` with how long until it refills.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The buckets of every channel.
#[derive(Debug)]
pub(crate) struct PostingLimit {
    per_channel: Duration,
    burst: usize,
    buckets: HashMap<String, (f64, Instant)>,
}

impl PostingLimit {
    pub(crate) fn new(per_channel: Duration, burst: usize) -> Self {
        Self {
            per_channel,
            burst: burst.max(1),
            buckets: HashMap::new(),
        }
    }

    /// Takes one message from the channel's bucket, or says how long until
    /// one is there.
    pub(crate) fn take(&mut self, channel: &str, now: Instant) -> Result<(), Duration> {
        #[allow(clippy::cast_precision_loss)]
        let burst = self.burst as f64;
        let per = self.per_channel.as_secs_f64();
        let (tokens, last) = self.buckets.entry(channel.to_owned()).or_insert((burst, now));
        let refilled = if per > 0.0 {
            now.duration_since(*last).as_secs_f64() / per
        } else {
            burst
        };
        *tokens = (*tokens + refilled).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) * per))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::PostingLimit;

    #[test]
    fn a_burst_passes_then_the_channel_waits_and_others_do_not() {
        let mut limit = PostingLimit::new(Duration::from_secs(1), 2);
        let now = Instant::now();
        assert_eq!(limit.take("C1", now), Ok(()));
        assert_eq!(limit.take("C1", now), Ok(()));
        let wait = limit.take("C1", now).unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1));
        assert_eq!(limit.take("C2", now), Ok(()), "another channel has its own bucket");
        assert_eq!(limit.take("C1", now + Duration::from_secs(1)), Ok(()));
    }
}
