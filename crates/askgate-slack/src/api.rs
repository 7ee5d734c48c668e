//! [`Api`]: the Slack Web API methods askgate calls, on slack-morphism's
//! client, with Slack's errors kept as askgate's [`ChannelError`]s.
//!
//! slack-morphism's own rate controller is left off: a 429 comes back as an
//! error with Slack's `Retry-After`, and askgate waits it out in the
//! conversation's turn ([`askgate_adapter::SendLines`]), so a rate-limited
//! channel holds up no other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_core::ChannelError;
use hyper_rustls::HttpsConnector;

use crate::bounded::Bounded;
use hyper_util::client::legacy::connect::HttpConnector;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

/// slack-morphism's client over an HTTPS connector that also speaks plain
/// HTTP (its default one is HTTPS only, and a fake Slack is on loopback),
/// each answer read within a bound ([`Bounded`]).
pub type Connector = SlackClientHyperConnector<Bounded<HttpsConnector<HttpConnector>>>;

/// Slack's Web API root.
pub const SLACK_API: &str = "https://slack.com/api";

/// Errors that mean the message can never be sent as addressed: the
/// question is `delivery_failed` at once, with Slack's reason.
const FINAL_ERRORS: &[&str] = &[
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "user_not_found",
    "user_disabled",
    "cannot_dm_bot",
    "restricted_action",
    "missing_scope",
    "invalid_blocks",
    "msg_too_long",
    "no_text",
    "invalid_arguments",
    // The thread a reply names is gone (its message deleted).
    "invalid_thread_ts",
    "thread_not_found",
];

/// Errors that mean the bot's credentials are refused.
const AUTH_ERRORS: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "no_permission",
];

/// The Web API for one bot token. Cheap to clone.
#[derive(Clone)]
pub struct Api {
    client: Arc<SlackClient<Connector>>,
    token: SlackApiToken,
    /// Display names looked up with `users.info`, by user id.
    names: Arc<Mutex<HashMap<String, String>>>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: never printed.
        f.debug_struct("Api").finish_non_exhaustive()
    }
}

/// The connector for `api_url` (without a trailing slash): the machine's
/// root certificates, or where it has none, the Mozilla roots askgate
/// carries (webpki-roots); HTTP/1.1 only, so that [`Bounded`] bounds each
/// answer.
///
/// The TLS provider is ring, named here rather than taken from the
/// process: a build that links rustls's aws-lc-rs as well (matrix-sdk's
/// reqwest does) leaves rustls no default to pick.
pub fn connector(api_url: &str) -> Connector {
    let ring = || rustls::crypto::ring::default_provider();
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_provider_and_native_roots(ring()) {
        Ok(builder) => builder,
        Err(error) => {
            tracing::warn!(%error, "the machine's root certificates cannot be read; using the Mozilla roots askgate carries");
            // ring supports the safe default protocol versions: this cannot fail.
            match hyper_rustls::HttpsConnectorBuilder::new().with_provider_and_webpki_roots(ring()) {
                Ok(builder) => builder,
                Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
            }
        }
    };
    let https = builder.https_or_http().enable_http1().build();
    SlackClientHyperConnector::with_connector(Bounded::new(https)).with_slack_api_url(api_url.trim_end_matches('/'))
}

impl Api {
    /// The Web API at `api_url` with the bot token `token`.
    pub fn new(token: &str, api_url: &str) -> Self {
        Self {
            client: Arc::new(SlackClient::new(connector(api_url))),
            token: SlackApiToken::new(token.into()),
            names: Arc::default(),
        }
    }

    /// slack-morphism's client (Socket Mode uses it too).
    pub fn client(&self) -> &Arc<SlackClient<Connector>> {
        &self.client
    }

    fn session(&self) -> SlackClientSession<'_, Connector> {
        self.client.open_session(&self.token)
    }

    /// `auth.test`: who the token is.
    ///
    /// # Errors
    ///
    /// Slack's refusal (its error code), or no answer.
    pub async fn auth_test(&self) -> Result<SlackApiAuthTestResponse, SlackClientError> {
        self.session().auth_test().await
    }

    /// `conversations.open` with one user: their DM's channel id.
    ///
    /// # Errors
    ///
    /// Slack's refusal, or no answer.
    ///
    /// Slack documents `users` as a comma-separated string
    /// (`conversations.open`, "Arguments"); slack-morphism's request type
    /// sends a JSON array, so the body is written here and posted through
    /// slack-morphism's own session (its transport, token and errors).
    pub async fn open_dm(&self, user: &str) -> Result<String, ChannelError> {
        #[derive(serde::Serialize)]
        struct OpenDm<'a> {
            users: &'a str,
        }
        let opened: SlackApiConversationsOpenResponse<SlackBasicChannelInfo> = self
            .session()
            .http_session_api
            .http_post("conversations.open", &OpenDm { users: user }, None)
            .await
            .map_err(error)?;
        Ok(opened.channel.id.to_string())
    }

    /// `chat.postMessage`: the sent message's channel and `ts`.
    ///
    /// # Errors
    ///
    /// Slack's refusal, a rate limit, or no answer.
    pub async fn post(&self, request: &SlackApiChatPostMessageRequest) -> Result<(String, String), ChannelError> {
        let sent = self.session().chat_post_message(request).await.map_err(error)?;
        Ok((sent.channel.to_string(), sent.ts.to_string()))
    }

    /// `chat.update`.
    ///
    /// # Errors
    ///
    /// Slack's refusal, a rate limit, or no answer.
    pub async fn update(&self, request: &SlackApiChatUpdateRequest) -> Result<(), ChannelError> {
        self.session().chat_update(request).await.map_err(error)?;
        Ok(())
    }

    /// `chat.postEphemeral`: a message only `request.user` sees.
    ///
    /// # Errors
    ///
    /// Slack's refusal, a rate limit, or no answer.
    pub async fn post_ephemeral(&self, request: &SlackApiChatPostEphemeralRequest) -> Result<(), ChannelError> {
        self.session().chat_post_ephemeral(request).await.map_err(error)?;
        Ok(())
    }

    /// `views.open`: a modal, for an interaction's trigger id (valid 3 s).
    ///
    /// # Errors
    ///
    /// Slack's refusal (an expired trigger), or no answer.
    pub async fn open_view(&self, trigger_id: &str, view: SlackView) -> Result<(), ChannelError> {
        let request = SlackApiViewsOpenRequest::new(trigger_id.into(), view);
        self.session().views_open(&request).await.map_err(error)?;
        Ok(())
    }

    /// A person's display name (`users.info`, looked up once per user);
    /// `None` when Slack does not say (no `users:read` scope, say).
    pub async fn display_name(&self, user: &str) -> Option<String> {
        if let Some(name) = self.names.lock().unwrap_or_else(PoisonError::into_inner).get(user) {
            return Some(name.clone());
        }
        let request = SlackApiUsersInfoRequest::new(user.into());
        let info = self.session().users_info(&request).await.ok()?;
        let profile = info.user.profile.as_ref();
        let name = [
            profile.and_then(|p| p.display_name.clone()),
            profile.and_then(|p| p.real_name.clone()),
            info.user.name.clone(),
        ]
        .into_iter()
        .flatten()
        .find(|name| !name.trim().is_empty())?;
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(user.to_owned(), name.clone());
        Some(name)
    }
}

/// What Slack said, for a person: its error code (`invalid_auth`), or what
/// went wrong on the way, on one short line
/// ([`askgate_adapter::cause::bounded`]). Never a token: Slack's answers
/// carry none. Never the body of Slack's answer either: slack-morphism's
/// own text carries it whole (an error page of megabytes, a proxy's HTML).
pub fn describe(error: &SlackClientError) -> String {
    use askgate_adapter::cause::{bounded, with_cause};
    match error {
        SlackClientError::ApiError(api) => bounded(&api.code),
        SlackClientError::RateLimitError(_) => "ratelimited".into(),
        SlackClientError::HttpError(http) => format!("HTTP {}", http.status_code),
        // slack-morphism's own text wraps the cause in Debug output
        // (`Some(hyper_util::…ConnectError("dns error", …))`) and does not
        // expose it as a `source`: the cause it keeps, down to its innermost
        // one, says what happened ("failed to lookup address information").
        SlackClientError::HttpProtocolError(slack_morphism::errors::SlackClientHttpProtocolError {
            cause: Some(cause),
        })
        | SlackClientError::SystemError(slack_morphism::errors::SlackClientSystemError {
            cause: Some(cause), ..
        }) => with_cause(cause.as_ref()),
        SlackClientError::ProtocolError(protocol) => bounded(&format!(
            "Slack answered with something askgate cannot read: {}",
            protocol.json_error
        )),
        other => bounded(&other.to_string()),
    }
}

/// Slack's error as askgate's: a rate limit with its delay, refused
/// credentials, a final refusal with Slack's code, or a transient failure.
pub fn error(error: SlackClientError) -> ChannelError {
    match error {
        SlackClientError::RateLimitError(limit) => ChannelError::RateLimited {
            retry_after: limit.retry_after.unwrap_or(Duration::from_secs(1)),
        },
        SlackClientError::ApiError(api) if AUTH_ERRORS.contains(&api.code.as_str()) => ChannelError::Unauthorized,
        SlackClientError::ApiError(api) if FINAL_ERRORS.contains(&api.code.as_str()) => {
            let detail = api.errors.map(|errors| errors.join("; ")).unwrap_or_default();
            ChannelError::Rejected {
                reason: askgate_adapter::cause::bounded(&if detail.is_empty() {
                    api.code
                } else {
                    format!("{}: {detail}", api.code)
                }),
            }
        }
        SlackClientError::HttpError(http) if http.status_code.is_client_error() => ChannelError::Rejected {
            reason: format!("HTTP {}", http.status_code),
        },
        other => ChannelError::Unavailable {
            reason: describe(&other),
        },
    }
}

#[cfg(test)]
mod tests {
    use slack_morphism::errors::{SlackClientApiError, SlackClientHttpError};

    use super::*;

    #[test]
    fn slacks_answer_body_is_never_kept_and_its_words_are_one_short_line() {
        let page = format!("<html>\n{}</html>", "Bad gateway. ".repeat(100_000));
        let failed = SlackClientError::HttpError(
            SlackClientHttpError::new(hyper::StatusCode::BAD_GATEWAY).with_http_response_body(page.clone()),
        );
        assert_eq!(describe(&failed), "HTTP 502 Bad Gateway");
        let ChannelError::Unavailable { reason } = error(failed) else {
            panic!("a 502 is retryable");
        };
        assert_eq!(reason, "HTTP 502 Bad Gateway");

        let code = format!("channel_not_found\n{}", "x".repeat(10_000));
        let refused = SlackClientError::ApiError(SlackClientApiError::new(code).with_http_response_body(page));
        let described = describe(&refused);
        assert!(described.len() <= 300 && !described.contains('\n'), "{described}");
    }
}
