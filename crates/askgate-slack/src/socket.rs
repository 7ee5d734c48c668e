//! Socket Mode: askgate holds Slack's WebSocket (slack-morphism's listener:
//! `apps.connections.open` with the app-level token, `hello`, envelopes,
//! a new connection on a `disconnect` envelope or a dropped socket).
//!
//! An envelope is acknowledged only after its event went through the
//! shared driver: an event whose effect could not be stored is left
//! unacknowledged, and Slack sends it again.

use std::sync::Arc;

use askgate_adapter::Driver;
use askgate_adapter::config::Secret;
use askgate_adapter::runtime::Shutdown;
use slack_morphism::prelude::*;
use tracing::{info, warn};

use crate::SlackChannel;
use crate::decode::Update;
use crate::react::{take, take_interaction};

/// What the listener's callbacks (plain functions) find in its user state.
#[derive(Clone)]
struct State {
    driver: Driver<SlackChannel>,
    name: Arc<str>,
}

async fn state(states: &SlackClientEventsUserState) -> Option<State> {
    states.read().await.get_user_state::<State>().cloned()
}

async fn on_push(
    event: SlackPushEventCallback,
    _client: Arc<SlackClient<crate::api::Connector>>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let Some(state) = state(&states).await else {
        return Ok(());
    };
    let update = Update::Event {
        callback: Box::new(event),
        name: None,
    };
    take(&state.driver, update).await.map(|_| ()).map_err(|error| {
        warn!(channel = %state.name, %error, "an event was not stored; Slack will send it again");
        error.into()
    })
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<SlackClient<crate::api::Connector>>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackInteractionResponse> {
    if let Some(state) = state(&states).await {
        let update = Update::Interaction {
            event: Box::new(event),
            name: None,
        };
        // Acknowledged within Slack's 3 s, whatever the engine is doing.
        take_interaction(state.driver, update).await;
    }
    // An empty acknowledgement closes a submitted modal.
    Ok(SlackInteractionResponse::Empty)
}

/// A callback's error leaves its envelope unacknowledged (Slack sends it
/// again); the error was logged where it happened.
fn on_error(
    _error: Box<dyn std::error::Error + Send + Sync>,
    _client: Arc<SlackClient<crate::api::Connector>>,
    _states: SlackClientEventsUserState,
) -> HttpStatusCode {
    HttpStatusCode::SERVICE_UNAVAILABLE
}

/// Holds the Socket Mode connection for `driver`'s channel until `shutdown`.
pub async fn run(driver: Driver<SlackChannel>, app_token: Secret, shutdown: Shutdown) {
    let name: Arc<str> = Arc::from(askgate_core::Channel::name(driver.inbound().as_ref()));
    let client = Arc::clone(driver.inbound().api().client());
    let environment = Arc::new(
        SlackClientEventsListenerEnvironment::new(client)
            .with_error_handler(on_error)
            .with_user_state(State {
                driver,
                name: Arc::clone(&name),
            }),
    );
    let callbacks = SlackSocketModeListenerCallbacks::new()
        .with_push_events(on_push)
        .with_interaction_events(on_interaction);
    // One connection: an envelope goes to one of them anyway, and Slack
    // holds what is not acknowledged. A new connection is tried every few
    // seconds while Slack cannot be reached.
    let config = SlackClientSocketModeConfig::new()
        .with_max_connections_count(1)
        .with_initial_backoff_in_seconds(1)
        .with_reconnect_timeout_in_seconds(3);
    let listener = SlackClientSocketModeListener::new(&config, environment, callbacks);
    let token = SlackApiToken::new(app_token.expose().into());
    if let Err(error) = listener.listen_for(&token).await {
        let error = crate::api::describe(&error);
        warn!(channel = %name, %error, "could not set up Slack's Socket Mode");
        return;
    }
    listener.start().await;
    info!(channel = %name, "listening on Slack's Socket Mode");
    shutdown.wait().await;
    listener.shutdown().await;
}
