//! Webhook mode: Telegram POSTs each update to a route of askgate's own HTTP
//! server. The `X-Telegram-Bot-Api-Secret-Token` header is checked on every
//! request (the shared [`askgate_adapter::webhook`] route, in constant time);
//! a forged request gets 401 and changes nothing.
//!
//! Written here rather than with teloxide's `webhooks::axum_no_setup`: that
//! router answers Telegram 200 as soon as an update is queued, and askgate
//! must answer only after the update's effect is stored — a 200 is Telegram's
//! signal to forget the update, and a crash in between would lose an answer.

use std::sync::Arc;

use askgate_adapter::Driver;
use askgate_adapter::webhook::{SecretHeader, route};
use askgate_core::channel::InboundSink;
use axum::Router;
use axum::http::{HeaderName, StatusCode};
use axum::response::IntoResponse as _;
use teloxide::payloads::SetWebhookSetters as _;
use teloxide::prelude::Requester as _;
use teloxide::types::{AllowedUpdate, Update};
use tracing::warn;

use crate::TelegramChannel;
use crate::error::channel_error;

const SECRET_HEADER: HeaderName = HeaderName::from_static("x-telegram-bot-api-secret-token");

/// The route `path` (e.g. `/telegram/tg`) that takes this channel's updates.
pub fn router(path: &str, channel: Arc<TelegramChannel>, sink: Arc<dyn InboundSink>, secrets: &[&str]) -> Router {
    let name = askgate_core::Channel::name(channel.as_ref()).to_owned();
    let driver = Driver::new(channel, sink);
    route(
        &name,
        path,
        SecretHeader::new(SECRET_HEADER, secrets),
        move |_, body| {
            let driver = driver.clone();
            async move {
                let update: Update = match serde_json::from_slice(&body) {
                    Ok(update) => update,
                    Err(error) => {
                        // Not an update at all: answering 200 stops Telegram from resending it forever.
                        warn!(channel = askgate_core::Channel::name(driver.inbound().as_ref()), %error, "a webhook request was not a Telegram update");
                        return StatusCode::OK.into_response();
                    }
                };
                match driver.take(&update).await {
                    Ok(_) => StatusCode::OK.into_response(),
                    // Not stored: an error status makes Telegram deliver the update again.
                    Err(error) => {
                        warn!(channel = askgate_core::Channel::name(driver.inbound().as_ref()), %error, "an update could not be stored; Telegram will resend it");
                        StatusCode::SERVICE_UNAVAILABLE.into_response()
                    }
                }
            }
        },
    )
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
