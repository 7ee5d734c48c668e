//! Telegram's errors in askgate's terms. teloxide already replaces the token
//! in network errors' URLs (`token:redacted`); API errors carry Telegram's
//! description only.

use askgate_adapter::cause::bounded;
use askgate_core::ChannelError;
use teloxide::{ApiError, RequestError};

/// The [`ChannelError`] for a failed Bot API request.
pub fn channel_error(error: &RequestError) -> ChannelError {
    match error {
        RequestError::RetryAfter(seconds) => ChannelError::RateLimited {
            retry_after: seconds.duration(),
        },
        RequestError::Api(ApiError::InvalidToken) => ChannelError::Unauthorized,
        RequestError::Api(api) => ChannelError::Rejected {
            // Telegram's description: one short line.
            reason: bounded(&api.to_string()),
        },
        RequestError::MigrateToChatId(chat) => ChannelError::Rejected {
            reason: format!("the group became supergroup {chat}: configure that chat id"),
        },
        RequestError::Network(error) => ChannelError::Unavailable {
            // teloxide has taken the URL, which holds the token, out of the error.
            reason: askgate_adapter::cause::with_cause(error),
        },
        // The relay's word for a call that got no usable answer (none, a
        // 5xx, one too large): Telegram failing, retried.
        RequestError::InvalidJson { raw, .. } => ChannelError::Unavailable {
            reason: match raw.strip_prefix(crate::relay::FAILED) {
                Some(reason) => bounded(reason),
                None => "Telegram answered with something that is not its JSON".into(),
            },
        },
        RequestError::Io(error) => ChannelError::Unavailable {
            reason: bounded(&error.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use teloxide::types::Seconds;

    use super::*;

    #[test]
    fn refusals_rate_limits_and_bad_tokens_are_told_apart() {
        assert_eq!(
            channel_error(&RequestError::RetryAfter(Seconds::from_seconds(7))),
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(7)
            }
        );
        assert_eq!(
            channel_error(&RequestError::Api(ApiError::InvalidToken)),
            ChannelError::Unauthorized
        );
        assert!(matches!(
            channel_error(&RequestError::Api(ApiError::ChatNotFound)),
            ChannelError::Rejected { reason } if reason.contains("chat not found")
        ));
        assert!(matches!(
            channel_error(&RequestError::Api(ApiError::BotBlocked)),
            ChannelError::Rejected { .. }
        ));
    }
}
