//! [`SlackRuntime`]: a Slack channel as askgate's binary runs it —
//! `auth.test` to check the bot token, then Socket Mode, or the HTTP
//! endpoints mounted in askgate's server.

use std::sync::Arc;

use askgate_adapter::Driver;
use askgate_adapter::config::{CheckError, Problem, Secret};
use askgate_adapter::runtime::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, InboundSink};
use async_trait::async_trait;
use axum::Router;
use slack_morphism::prelude::*;

use crate::api::{self, Api};
use crate::{SlackChannel, http, socket};

/// How events reach askgate.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Socket Mode, with the app-level token (no public URL needed).
    Socket {
        /// The `xapp-` token.
        app_token: Secret,
    },
    /// Slack POSTs events and interactions to askgate's server.
    Http {
        /// The app's signing secrets: requests signed by any of them are
        /// accepted (several while the secret is rotated).
        signing_secrets: Vec<Secret>,
    },
}

/// A running Slack channel.
#[derive(Debug)]
pub struct SlackRuntime {
    channel: Arc<SlackChannel>,
    mode: Mode,
}

impl SlackRuntime {
    /// The runtime of channel `name` for `bot_token` against `api_url`, in `mode`.
    pub fn new(name: &str, bot_token: &str, api_url: &str, mode: Mode) -> Self {
        let api = Api::new(bot_token, api_url);
        Self {
            channel: Arc::new(SlackChannel::new(name, api)),
            mode,
        }
    }

    /// The channel.
    pub fn slack(&self) -> &Arc<SlackChannel> {
        &self.channel
    }

    fn path(&self) -> String {
        format!("/slack/{}", self.name())
    }
}

#[async_trait]
impl ChannelRuntime for SlackRuntime {
    fn name(&self) -> &str {
        self.channel.name()
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, CheckError> {
        let key = |field: &str| format!("channels.{}.{field}", self.name());
        let me = self.channel.api().auth_test().await.map_err(|error| {
            let fix = "reinstall the app to the workspace and copy the Bot User OAuth Token again.";
            let detail = api::describe(&error);
            let unreachable = api::error(error).is_retryable();
            Problem::from_check_detail(key("bot_token"), "Slack", "auth.test", unreachable, &detail, fix)
        })?;
        let mode = match &self.mode {
            Mode::Socket { app_token } => {
                let token = SlackApiToken::new(app_token.expose().into());
                self.channel
                    .api()
                    .client()
                    .open_session(&token)
                    .apps_connections_open(&SlackApiAppsConnectionOpenRequest::new())
                    .await
                    .map_err(|error| {
                        let detail = api::describe(&error);
                        let unreachable = api::error(error).is_retryable();
                        let fix = "create an app-level token with the connections:write scope \
                                   (Basic Information → App-Level Tokens) and turn Socket Mode on.";
                        Problem::from_check_detail(
                            key("app_token"),
                            "Slack",
                            "apps.connections.open",
                            unreachable,
                            &detail,
                            fix,
                        )
                    })?;
                "Socket Mode"
            }
            Mode::Http { .. } => "HTTP endpoints",
        };
        Ok(format!(
            "bot @{} in {}, {mode}",
            me.user.as_deref().unwrap_or("?"),
            me.team
        ))
    }

    fn routes(&self, sink: Arc<dyn InboundSink>) -> Option<Router> {
        let Mode::Http { signing_secrets } = &self.mode else {
            return None;
        };
        let driver = Driver::new(self.channel.clone(), sink);
        let secrets: Vec<&str> = signing_secrets.iter().map(Secret::expose).collect();
        Some(http::router(&self.path(), driver, &secrets))
    }

    async fn run(self: Arc<Self>, sink: Arc<dyn InboundSink>, shutdown: Shutdown) {
        if let Mode::Socket { app_token } = &self.mode {
            let driver = Driver::new(self.channel.clone(), sink);
            socket::run(driver, app_token.clone(), shutdown).await;
        }
    }
}
