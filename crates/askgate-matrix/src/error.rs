//! matrix-sdk's errors in askgate's terms. The access token travels in a
//! header, never in a URL, so no error text holds it; the homeserver's own
//! words are cut to one short line all the same.

use std::time::Duration;

use askgate_adapter::cause::bounded;
use askgate_core::ChannelError;
use matrix_sdk::ruma::api::error::ErrorKind;
use matrix_sdk::{Error, HttpError};

/// How long to wait on a 429 that does not say.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The [`ChannelError`] for a failed matrix-sdk call.
pub fn channel_error(error: &Error) -> ChannelError {
    match error {
        Error::Http(http) => http_error(http),
        other => ChannelError::Unavailable {
            reason: bounded(&other.to_string()),
        },
    }
}

/// The [`ChannelError`] for a failed request to the homeserver.
pub fn http_error(error: &HttpError) -> ChannelError {
    let Some(api) = error.as_client_api_error() else {
        // No answer from the homeserver (refused, timed out, not its JSON).
        return ChannelError::Unavailable {
            reason: bounded(&error.to_string()),
        };
    };
    let status = api.status_code.as_u16();
    match error.client_api_error_kind() {
        Some(ErrorKind::UnknownToken(_) | ErrorKind::MissingToken) => ChannelError::Unauthorized,
        Some(ErrorKind::LimitExceeded(data)) => ChannelError::RateLimited {
            retry_after: retry_after(data.retry_after.as_ref()),
        },
        _ if status == 429 => ChannelError::RateLimited {
            retry_after: DEFAULT_RETRY_AFTER,
        },
        _ if status == 401 => ChannelError::Unauthorized,
        _ if status >= 500 => ChannelError::Unavailable {
            reason: bounded(&error.to_string()),
        },
        _ => ChannelError::Rejected {
            reason: bounded(&error.to_string()),
        },
    }
}

fn retry_after(after: Option<&matrix_sdk::ruma::api::error::RetryAfter>) -> Duration {
    use matrix_sdk::ruma::api::error::RetryAfter;
    match after {
        Some(RetryAfter::Delay(delay)) => *delay,
        Some(RetryAfter::DateTime(at)) => at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
        None => DEFAULT_RETRY_AFTER,
    }
}
