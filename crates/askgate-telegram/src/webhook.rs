//! Webhook mode: Telegram POSTs each update to a route of askgate's own HTTP
//! server. The `X-Telegram-Bot-Api-Secret-Token` header is checked on every
//! request (in constant time); a forged request gets 401 and changes nothing.
//!
//! Written here rather than with teloxide's `webhooks::axum_no_setup`: that
//! router answers Telegram 200 as soon as an update is queued, and askgate
//! must answer only after the update's effect is stored — a 200 is Telegram's
//! signal to forget the update, and a crash in between would lose an answer.

use std::sync::Arc;

use askgate_core::channel::InboundSink;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use teloxide::payloads::SetWebhookSetters as _;
use teloxide::prelude::Requester as _;
use teloxide::types::{AllowedUpdate, Update};
use tracing::warn;

use crate::TelegramChannel;
use crate::error::channel_error;
use crate::react::react;

const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

#[derive(Clone)]
struct Webhook {
    channel: Arc<TelegramChannel>,
    sink: Arc<dyn InboundSink>,
    secret: Arc<str>,
}

/// The route `path` (e.g. `/telegram/tg`) that takes this channel's updates.
pub fn router(path: &str, channel: Arc<TelegramChannel>, sink: Arc<dyn InboundSink>, secret: &str) -> Router {
    let webhook = Webhook {
        channel,
        sink,
        secret: Arc::from(secret),
    };
    Router::new().route(path, post(receive)).with_state(webhook)
}

async fn receive(State(webhook): State<Webhook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let presented = headers
        .get(SECRET_HEADER)
        .map(axum::http::HeaderValue::as_bytes)
        .unwrap_or_default();
    if !constant_time_eq::constant_time_eq(presented, webhook.secret.as_bytes()) {
        return StatusCode::UNAUTHORIZED;
    }
    let name = askgate_core::Channel::name(webhook.channel.as_ref()).to_owned();
    let update: Update = match serde_json::from_slice(&body) {
        Ok(update) => update,
        Err(error) => {
            // Not an update at all: answering 200 stops Telegram from resending it forever.
            warn!(channel = %name, %error, "a webhook request was not a Telegram update");
            return StatusCode::OK;
        }
    };
    if let Some(decoded) = webhook.channel.decode(&update) {
        match webhook.sink.handle(&name, decoded.event).await {
            Ok(reaction) => react(&webhook.channel, &webhook.sink, decoded.ack, reaction).await,
            // Not stored: an error status makes Telegram deliver the update again.
            Err(error) => {
                warn!(channel = %name, %error, "an update could not be stored; Telegram will resend it");
                return StatusCode::SERVICE_UNAVAILABLE;
            }
        }
    }
    StatusCode::OK
}

/// Tells Telegram to deliver this bot's updates to `url`, with `secret` in
/// the header of every delivery.
pub async fn register(
    channel: &TelegramChannel,
    url: reqwest::Url,
    secret: &str,
) -> Result<(), askgate_core::ChannelError> {
    channel
        .bot()
        .set_webhook(url)
        .secret_token(secret)
        .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery])
        .await
        .map(drop)
        .map_err(|error| channel_error(&error))
}
