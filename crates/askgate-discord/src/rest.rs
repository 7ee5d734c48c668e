//! Discord's REST API, the few calls askgate makes, over reqwest.
//!
//! Written here rather than through serenity's `Http`: with serenity's own
//! rate limiter on, requests cannot be pointed at another base URL (a fake
//! Discord, a proxy), and with it off, serenity's error drops the 429 body's
//! `retry_after` and the `Retry-After` header — askgate must honour Discord's
//! delay itself (`askgate_adapter::SendLines` waits it out). Responses are
//! serenity's model types; the gateway and the interaction models are
//! serenity's too.

use std::time::Duration;

use askgate_adapter::cause::bounded;
use askgate_adapter::read::{MAX_ANSWER_BYTES, ReadError, read_capped};
use askgate_core::ChannelError;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Discord's public API.
pub const DISCORD_API: &str = "https://discord.com";

/// The `User-Agent` Discord requires on every HTTP request
/// (`DiscordBot ($url, $versionNumber)`, "API Reference", User Agent):
/// requests without one may be refused at its edge.
pub const USER_AGENT: &str = concat!(
    "DiscordBot (",
    env!("CARGO_PKG_REPOSITORY"),
    ", ",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// How long one REST call may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Discord's JSON error codes that mean "never, for this recipient".
const REFUSED_FOR_GOOD: &[(i64, &str)] = &[
    (10003, "Unknown Channel"),
    (10013, "Unknown User"),
    (50001, "Missing Access"),
    (50007, "Cannot send messages to this user"),
    (50013, "Missing Permissions"),
];

/// A client of Discord's REST API for one bot.
#[derive(Clone)]
pub struct Rest {
    client: reqwest::Client,
    base: String,
    /// `Bot <token>`, the value of every request's `Authorization` header.
    authorization: String,
}

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is never printed.
        f.debug_struct("Rest").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Rest {
    /// A client for the bot with `token`, against `base` (`https://discord.com`
    /// or a fake's `http://127.0.0.1:PORT`).
    pub fn new(token: &str, base: &str) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(REQUEST_TIMEOUT)
            .user_agent(USER_AGENT)
            .build()
            .unwrap_or_default();
        Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            authorization: format!("Bot {}", token.trim()),
        }
    }

    /// `GET path` (under `/api/v10`), decoded as `T`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ChannelError> {
        self.call(Method::GET, path, None).await.map(|(value, _)| value)
    }

    /// `POST path` with a JSON body, decoded as `T`.
    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, ChannelError> {
        self.call(Method::POST, path, Some(body)).await.map(|(value, _)| value)
    }

    /// `POST path`, and how long the route's bucket needs before the next
    /// request when this one used its last place (`X-RateLimit-Remaining: 0`,
    /// `X-RateLimit-Reset-After`): Discord's own pacing, kept to before a 429.
    pub async fn post_paced<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<(T, Option<Duration>), ChannelError> {
        self.call(Method::POST, path, Some(body)).await
    }

    /// `PATCH path` with a JSON body, decoded as `T`.
    pub async fn patch<T: DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, ChannelError> {
        self.call(Method::PATCH, path, Some(body)).await.map(|(value, _)| value)
    }

    /// `POST path` whose answer has no body that matters (204 or 200).
    pub async fn post_empty(&self, path: &str, body: &Value) -> Result<(), ChannelError> {
        self.call::<serde::de::IgnoredAny>(Method::POST, path, Some(body))
            .await
            .map(|_| ())
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(T, Option<Duration>), ChannelError> {
        let url = format!("{}/api/v10{path}", self.base);
        let mut request = self
            .client
            .request(method, &url)
            .header(reqwest::header::AUTHORIZATION, &self.authorization);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| ChannelError::Unavailable {
            // Without the URL (none holds a secret here, but it says nothing).
            reason: askgate_adapter::cause::with_cause(&error.without_url()),
        })?;
        let status = response.status();
        let retry_header = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<f64>().ok());
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.parse::<f64>().ok())
        };
        let exhausted = header("x-ratelimit-remaining") == Some(0.0);
        let pause = header("x-ratelimit-reset-after")
            .filter(|_| exhausted)
            .map(|seconds| Duration::from_secs_f64(seconds.clamp(0.0, 3600.0)));
        // At most MAX_ANSWER_BYTES, whatever Discord (or a proxy) sends:
        // more is a failure of Discord's, retried as a 5xx is.
        let bytes = read_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|error| ChannelError::Unavailable {
                reason: match error {
                    ReadError::Failed(error) => askgate_adapter::cause::with_cause(&error.without_url()),
                    too_large => format!("Discord (HTTP {}): {too_large}", status.as_u16()),
                },
            })?;
        if status.is_success() {
            if bytes.is_empty() {
                // A 204: decode "nothing" as null, which `IgnoredAny` and `Option` accept.
                return serde_json::from_value::<T>(Value::Null)
                    .map(|value| (value, pause))
                    .map_err(|error| undecodable(&error));
            }
            return serde_json::from_slice::<T>(&bytes)
                .map(|value| (value, pause))
                .map_err(|error| undecodable(&error));
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Err(error_of(status, &body, retry_header))
    }
}

fn undecodable(error: &serde_json::Error) -> ChannelError {
    ChannelError::Unavailable {
        reason: bounded(&format!("Discord answered with something askgate cannot read: {error}")),
    }
}

/// Discord's error answer in askgate's terms.
pub fn error_of(status: StatusCode, body: &Value, retry_header: Option<f64>) -> ChannelError {
    let code = body["code"].as_i64().unwrap_or_default();
    let message = body["message"].as_str().unwrap_or("no message");
    if status == StatusCode::TOO_MANY_REQUESTS {
        let seconds = body["retry_after"].as_f64().or(retry_header).unwrap_or(1.0);
        return ChannelError::RateLimited {
            retry_after: Duration::from_secs_f64(seconds.clamp(0.0, 3600.0)),
        };
    }
    if status == StatusCode::UNAUTHORIZED {
        return ChannelError::Unauthorized;
    }
    if let Some((code, name)) = REFUSED_FOR_GOOD.iter().find(|(known, _)| *known == code) {
        return ChannelError::Rejected {
            reason: format!("Discord refused: {name} ({code})"),
        };
    }
    if status.is_server_error() {
        return ChannelError::Unavailable {
            reason: format!("Discord answered {status}"),
        };
    }
    // Discord's message is outside text: one short line.
    ChannelError::Rejected {
        reason: format!(
            "Discord refused: {} ({code}, HTTP {})",
            bounded(message),
            status.as_u16()
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_user_agent_names_a_url_and_a_version_as_discord_requires() {
        let inner = USER_AGENT
            .strip_prefix("DiscordBot (")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_default();
        let (url, version) = inner.split_once(", ").unwrap_or_default();
        assert!(url.starts_with("https://"), "{USER_AGENT}");
        assert_eq!(version, env!("CARGO_PKG_VERSION"), "{USER_AGENT}");
    }

    #[test]
    fn discords_answers_map_onto_channel_errors() {
        assert_eq!(
            error_of(
                StatusCode::TOO_MANY_REQUESTS,
                &json!({"message": "You are being rate limited.", "retry_after": 1.5, "global": false}),
                None
            ),
            ChannelError::RateLimited {
                retry_after: Duration::from_millis(1500)
            }
        );
        assert_eq!(
            error_of(StatusCode::TOO_MANY_REQUESTS, &Value::Null, Some(3.0)),
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(3)
            }
        );
        assert_eq!(
            error_of(
                StatusCode::UNAUTHORIZED,
                &json!({"message": "401: Unauthorized", "code": 0}),
                None
            ),
            ChannelError::Unauthorized
        );
        for code in [50007, 10003, 50001] {
            assert!(matches!(
                error_of(StatusCode::FORBIDDEN, &json!({"code": code, "message": "x"}), None),
                ChannelError::Rejected { reason } if reason.contains(&code.to_string())
            ));
        }
        assert!(error_of(StatusCode::BAD_GATEWAY, &Value::Null, None).is_retryable());
    }

    #[test]
    fn discords_message_is_kept_as_one_short_line() {
        let message = format!("Missing\nAccess {}", "x".repeat(100_000));
        let ChannelError::Rejected { reason } =
            error_of(StatusCode::BAD_REQUEST, &json!({"code": 1, "message": message}), None)
        else {
            panic!("a 400 is a refusal");
        };
        assert!(reason.starts_with("Discord refused: Missing Access xxx"), "{reason}");
        assert!(reason.len() < 400 && !reason.contains('\n'), "{reason}");
    }
}
