//! How long to wait before trying again: one policy for every retry askgate
//! makes against a platform (delivering a prompt, polling, a send that was
//! rate limited) or its own store (an expiry that could not be written, a
//! callback's next attempt). Here, beside [`ChannelError`], so that the
//! engine and the adapters share it without the engine depending on the
//! adapter crate (and its HTTP server and TOML parser).

use std::time::Duration;

use crate::ChannelError;

/// The first pause; it doubles with each attempt.
const FIRST: Duration = Duration::from_millis(500);

/// The doublings after which the pause stops growing (0.5 s · 2⁶ = 32 s).
const MAX_DOUBLINGS: u32 = 6;

/// The pause before the `attempt`th retry (from 0): 0.5 s, doubling, at most 32 s.
pub fn backoff(attempt: u32) -> Duration {
    FIRST * 2_u32.pow(attempt.min(MAX_DOUBLINGS))
}

/// The pause before retrying after `error`: the platform's own delay when it
/// gave one (a 429's `retry_after`), the [`backoff`] otherwise.
pub fn retry_delay(error: &ChannelError, attempt: u32) -> Duration {
    match error {
        ChannelError::RateLimited { retry_after } => *retry_after,
        _ => backoff(attempt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_up_to_32_seconds_and_a_platform_delay_wins() {
        let pauses: Vec<u128> = (0..9).map(|attempt| backoff(attempt).as_millis()).collect();
        assert_eq!(pauses, [500, 1000, 2000, 4000, 8000, 16_000, 32_000, 32_000, 32_000]);
        let limited = ChannelError::RateLimited {
            retry_after: Duration::from_secs(7),
        };
        assert_eq!(retry_delay(&limited, 5), Duration::from_secs(7));
        let down = ChannelError::Unavailable { reason: "503".into() };
        assert_eq!(retry_delay(&down, 1), Duration::from_secs(1));
    }
}
