//! The fake Slack, driven by the real client: slack-morphism's
//! `SlackClient` against the Web API, its Socket Mode listener against
//! Socket Mode, its `SlackEventSignatureVerifier` against the signed HTTP
//! deliveries, and its models against every payload the fake sends. Where
//! slack-morphism has no say (exact JSON, headers, form bodies), reqwest or
//! a small axum app looks.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_testkit::slack::{APP_TOKEN, BOT_TOKEN, FakeSlack, Person, SlackChannel};
use serde_json::{Value, json};
use slack_morphism::errors::{SlackClientApiError, SlackClientError};
use slack_morphism::prelude::*;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

mod http_mode;
mod modals;
mod person;
mod socket_mode;
mod spec;
mod web_api;

/// Long enough for anything the fake does; the tests wait for events, not time.
const WAIT: Duration = Duration::from_secs(10);

/// slack-morphism's client on the fake, as askgate builds it: a connector
/// that also speaks plain HTTP, and the fake's API URL.
fn client(fake: &FakeSlack) -> Arc<SlackHyperClient> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
        .unwrap()
        .https_or_http()
        .enable_http1()
        .build();
    Arc::new(SlackClient::new(
        SlackClientHyperConnector::with_connector(connector).with_slack_api_url(&fake.api_url()),
    ))
}

fn bot_token() -> SlackApiToken {
    SlackApiToken::new(BOT_TOKEN.to_owned().into())
}

fn app_token() -> SlackApiToken {
    SlackApiToken::new(APP_TOKEN.to_owned().into())
}

/// The Slack error of a refused call.
fn api_error<T: Debug>(result: ClientResult<T>) -> SlackClientApiError {
    match result.unwrap_err() {
        SlackClientError::ApiError(error) => error,
        other => panic!("not a Slack API error: {other:?}"),
    }
}

/// Block Kit from JSON, as slack-morphism's models hold it.
fn blocks(value: Value) -> Vec<SlackBlock> {
    serde_json::from_value(value).unwrap()
}

fn button(action_id: &str, text: &str, value: &str) -> Value {
    json!({ "type": "button", "action_id": action_id, "text": { "type": "plain_text", "text": text }, "value": value })
}

/// A question with two buttons, as askgate posts one.
fn question() -> Value {
    json!([
        { "type": "section", "text": { "type": "mrkdwn", "text": "*Deploy?*" } },
        { "type": "actions", "block_id": "answers", "elements": [
            button("approve", "Approve", "q1:yes"),
            button("deny", "Deny", "q1:no"),
        ] }
    ])
}

/// A fake with two people and a channel the bot and both are in.
struct World {
    fake: FakeSlack,
    client: Arc<SlackHyperClient>,
    alice: Person,
    bob: Person,
    general: SlackChannel,
}

async fn world() -> World {
    let fake = FakeSlack::start().await;
    let alice = fake.user("U0ALICE01", "alice");
    let bob = fake.user("U0BOB0001", "bob");
    let general = fake.channel("general", &[&alice, &bob]);
    World {
        client: client(&fake),
        fake,
        alice,
        bob,
        general,
    }
}

impl World {
    /// Posts with slack-morphism as the bot; returns the `ts`.
    async fn post(&self, channel: &str, text: &str, blocks_json: Option<Value>) -> String {
        let mut content = SlackMessageContent::new().with_text(text.to_owned());
        if let Some(value) = blocks_json {
            content = content.with_blocks(blocks(value));
        }
        let request = SlackApiChatPostMessageRequest::new(channel.to_owned().into(), content);
        let posted = self
            .client
            .open_session(&bot_token())
            .chat_post_message(&request)
            .await
            .unwrap();
        posted.ts.0
    }
}

/// What slack-morphism's Socket Mode listener handed its callbacks.
#[derive(Debug)]
enum Seen {
    /// The `hello` event, as JSON (slack-morphism does not export its type).
    Hello(Value),
    Push(Box<SlackPushEventCallback>),
    Interaction(Box<SlackInteractionEvent>),
}

/// The listener's callbacks' shared state (slack-morphism callbacks are
/// plain functions; they find this in the listener's user state).
struct Handlers {
    seen: UnboundedSender<Seen>,
    /// Events to refuse (no acknowledgement), one a call, before taking them.
    refuse_events: Mutex<usize>,
    /// Answers to interactions, in order; then plain acknowledgements.
    answers: Mutex<VecDeque<SlackInteractionResponse>>,
}

async fn on_hello<E: serde::Serialize>(event: E, _: Arc<SlackHyperClient>, states: SlackClientEventsUserState) {
    let states = states.read().await;
    let handlers = states.get_user_state::<Arc<Handlers>>().unwrap();
    let _ = handlers.seen.send(Seen::Hello(serde_json::to_value(&event).unwrap()));
}

async fn on_push(
    event: SlackPushEventCallback,
    _: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let states = states.read().await;
    let handlers = states.get_user_state::<Arc<Handlers>>().unwrap();
    {
        let mut refuse = handlers.refuse_events.lock().unwrap();
        if *refuse > 0 {
            *refuse -= 1;
            return Err("refused by the test".into());
        }
    }
    let _ = handlers.seen.send(Seen::Push(Box::new(event)));
    Ok(())
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackInteractionResponse> {
    let states = states.read().await;
    let handlers = states.get_user_state::<Arc<Handlers>>().unwrap();
    let _ = handlers.seen.send(Seen::Interaction(Box::new(event)));
    let answer = handlers.answers.lock().unwrap().pop_front();
    Ok(answer.unwrap_or(SlackInteractionResponse::Empty))
}

/// slack-morphism's Socket Mode listener on the fake, with one connection
/// and a ping every second (so that a dropped connection is noticed fast).
struct Listener {
    socket_mode: SlackClientSocketModeListener<SlackClientHyperHttpsConnector>,
    handlers: Arc<Handlers>,
    seen: UnboundedReceiver<Seen>,
}

impl Listener {
    async fn start(fake: &FakeSlack) -> Self {
        let (tx, seen) = unbounded_channel();
        let handlers = Arc::new(Handlers {
            seen: tx,
            refuse_events: Mutex::new(0),
            answers: Mutex::new(VecDeque::new()),
        });
        let callbacks = SlackSocketModeListenerCallbacks::new()
            .with_hello_events(on_hello)
            .with_push_events(on_push)
            .with_interaction_events(on_interaction);
        let environment =
            Arc::new(SlackClientEventsListenerEnvironment::new(client(fake)).with_user_state(Arc::clone(&handlers)));
        let config = SlackClientSocketModeConfig::new()
            .with_max_connections_count(1)
            .with_reconnect_timeout_in_seconds(1)
            .with_ping_interval_in_seconds(1);
        let listener = SlackClientSocketModeListener::new(&config, environment, callbacks);
        listener.listen_for(&app_token()).await.unwrap();
        listener.start().await;
        Self {
            socket_mode: listener,
            handlers,
            seen,
        }
    }

    /// The next thing the callbacks saw that `pick` takes (others are skipped).
    async fn expect<T>(&mut self, what: &str, pick: impl Fn(Seen) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let seen = tokio::time::timeout_at(deadline, self.seen.recv())
                .await
                .unwrap_or_else(|_| panic!("slack-morphism saw no {what} within {WAIT:?}"))
                .unwrap();
            if let Some(found) = pick(seen) {
                return found;
            }
        }
    }

    async fn hello(&mut self) -> Value {
        self.expect("hello", |seen| match seen {
            Seen::Hello(hello) => Some(hello),
            _ => None,
        })
        .await
    }

    /// The next `message` event from a person (the bot's own are skipped).
    async fn person_message(&mut self) -> (SlackPushEventCallback, SlackMessageEvent) {
        self.expect("message from a person", |seen| match seen {
            Seen::Push(push) => match &push.event {
                SlackEventCallbackBody::Message(message) if message.sender.bot_id.is_none() => {
                    let message = message.clone();
                    Some((*push, message))
                }
                _ => None,
            },
            _ => None,
        })
        .await
    }

    async fn interaction(&mut self) -> SlackInteractionEvent {
        self.expect("interaction", |seen| match seen {
            Seen::Interaction(interaction) => Some(*interaction),
            _ => None,
        })
        .await
    }

    async fn stop(self) {
        self.socket_mode.shutdown().await;
    }
}
