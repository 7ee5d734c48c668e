//! Long polling: updates are fetched with `getUpdates`, each is taken by the
//! shared driver (decoded, handed to the engine, shown), and only once its
//! effect is stored is the offset moved past it and saved, so that a restart
//! neither loses nor replays an answer. Replies are queued for their chat's
//! turn rather than awaited ([`crate::react`]), so that a chat waiting out its
//! rate limit holds up no one else's updates.

use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::Driver;
use askgate_adapter::backoff::{backoff, retry_delay};
use askgate_core::channel::{InboundError, InboundSink};
use teloxide::payloads::GetUpdatesSetters as _;
use teloxide::prelude::Requester as _;
use teloxide::types::{AllowedUpdate, Update};
use tracing::{info, warn};

use crate::TelegramChannel;
use crate::error::channel_error;

/// How long one `getUpdates` call waits for updates.
const POLL_TIMEOUT_SECONDS: u32 = 25;

/// Polls until `shutdown` completes.
pub async fn run(
    channel: Arc<TelegramChannel>,
    sink: Arc<dyn InboundSink>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let name = askgate_core::Channel::name(channel.as_ref()).to_owned();
    let driver = Driver::new(Arc::clone(&channel), Arc::clone(&sink));
    let bot = channel.bot();
    // Polling and a webhook exclude each other: make sure none is set.
    if let Err(error) = bot.delete_webhook().await {
        let error = channel_error(&error);
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
        let pause = match updates {
            Ok(updates) => match take(&driver, &name, updates, &mut offset).await {
                Ok(()) => {
                    failures = 0;
                    continue;
                }
                // The update stays unconfirmed: the next poll from the saved
                // offset brings it again.
                Err(error) => {
                    let pause = backoff(failures);
                    warn!(channel = %name, %error, ?pause, "an update could not be stored; taking it again");
                    pause
                }
            },
            Err(error) => {
                // In askgate's terms: Telegram's words cut to one short line.
                let error = channel_error(&error);
                let pause = retry_delay(&error, failures);
                warn!(channel = %name, %error, ?pause, "polling Telegram failed; retrying");
                pause
            }
        };
        failures += 1;
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(pause.max(Duration::from_millis(100))) => {}
        }
    }
}

/// Takes each update in turn and only then moves the offset past it and
/// saves it. Stops at the first update the engine could not store.
async fn take(
    driver: &Driver<TelegramChannel>,
    name: &str,
    updates: Vec<Update>,
    offset: &mut i32,
) -> Result<(), InboundError> {
    for update in updates {
        driver.take(&update).await?;
        *offset = i32::try_from(update.id.0).unwrap_or(i32::MAX).saturating_add(1);
        driver.sink().save_cursor(name, &offset.to_string()).await;
    }
    Ok(())
}
