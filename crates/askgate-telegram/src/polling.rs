//! Long polling: updates are fetched with `getUpdates`, each is handed to the
//! engine and acknowledged, and only then is the offset moved past it and
//! saved, so that a restart neither loses nor replays an answer.

use std::time::Duration;

use askgate_core::channel::InboundSink;
use teloxide::payloads::GetUpdatesSetters as _;
use teloxide::prelude::Requester as _;
use teloxide::types::AllowedUpdate;
use tracing::{info, warn};

use crate::TelegramChannel;
use crate::decode::decode;
use crate::error::retry_delay;
use crate::react::react;

/// How long one `getUpdates` call waits for updates.
const POLL_TIMEOUT_SECONDS: u32 = 25;

/// Polls until `shutdown` completes.
pub async fn run(channel: &TelegramChannel, sink: &dyn InboundSink, shutdown: impl std::future::Future<Output = ()>) {
    let name = askgate_core::Channel::name(channel).to_owned();
    let bot = channel.bot();
    // Polling and a webhook exclude each other: make sure none is set.
    if let Err(error) = bot.delete_webhook().await {
        warn!(channel = %name, %error, "could not remove a webhook before polling");
    }
    let mut offset: i32 = sink
        .cursor(&name)
        .await
        .and_then(|cursor| cursor.parse().ok())
        .unwrap_or(0);
    info!(channel = %name, offset, "polling Telegram for updates");
    tokio::pin!(shutdown);
    let mut failures = 0;
    loop {
        let request = bot
            .get_updates()
            .offset(offset)
            .timeout(POLL_TIMEOUT_SECONDS)
            .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
        let updates = tokio::select! {
            () = &mut shutdown => return,
            updates = request => updates,
        };
        match updates {
            Ok(updates) => {
                failures = 0;
                for update in updates {
                    if let Some(decoded) = decode(&update) {
                        let reaction = sink.handle(&name, decoded.event).await;
                        react(channel, sink, &decoded.ack, reaction).await;
                    }
                    offset = i32::try_from(update.id.0).unwrap_or(i32::MAX).saturating_add(1);
                    sink.save_cursor(&name, &offset.to_string()).await;
                }
            }
            Err(error) => {
                let pause = retry_delay(&error, failures);
                failures += 1;
                warn!(channel = %name, %error, ?pause, "polling Telegram failed; retrying");
                tokio::select! {
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(pause.max(Duration::from_millis(100))) => {}
                }
            }
        }
    }
}
