//! One replica at a time holds each channel's long-lived connection to its
//! platform (Telegram long polling, a Discord gateway, Slack Socket Mode)
//! when several replicas share a PostgreSQL database: the replica that holds
//! the lease `channel:<name>` runs the channel's [`ChannelRuntime::run`];
//! the others try to take it every [`RENEW`], and one of them does within
//! [`TTL`] + [`RENEW`] of the holder's death. A holder renews every
//! [`RENEW`]; one that cannot (the database unreachable) stops the
//! connection before its lease runs out, so that two never run at once
//! while the clocks agree, and its cursor (a Telegram update offset) moves
//! only while it holds the lease. On shutdown the lease is given up, and
//! another replica takes the connection over at its next try.

use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Destination, InboundError, InboundEvent, InboundSink, MessageRef, Reaction};
use askgate_core::{Locale, QuestionId};
use askgate_engine::Clock;
use askgate_store::{Store, Timestamp};
use async_trait::async_trait;
use tokio::sync::watch;
use tracing::{info, warn};

/// How long a lease lasts unless renewed.
pub(crate) const TTL: Duration = Duration::from_secs(6);

/// How often the holder renews, and the others try to take it.
pub(crate) const RENEW: Duration = Duration::from_secs(2);

/// How long a connection gets to stop once its lease is lost.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Leases compare the replicas' clocks: the system clock.
fn now() -> Timestamp {
    Clock::system().now()
}

/// Runs `runtime`'s connection while this replica (`owner`) holds its lease,
/// until `shutdown`.
pub(crate) async fn run_leased(
    runtime: Arc<dyn ChannelRuntime>,
    sink: Arc<dyn InboundSink>,
    store: Arc<dyn Store>,
    owner: String,
    shutdown: Shutdown,
) {
    let channel = runtime.name().to_owned();
    let lease = format!("channel:{channel}");
    loop {
        // Wait for the lease.
        let mut held_until = loop {
            let until = Clock::system().after(TTL);
            match store.try_lease(&lease, &owner, now(), until).await {
                Ok(true) => break until,
                Ok(false) => {}
                Err(error) => warn!(%channel, %error, "could not try to take the channel's lease"),
            }
            tokio::select! {
                () = shutdown.clone().wait() => return,
                () = tokio::time::sleep(RENEW) => {}
            }
        };
        info!(%channel, "this replica holds the channel's connection");
        let (stop, stopped) = watch::channel(false);
        let leased: Arc<dyn InboundSink> = Arc::new(LeasedSink {
            sink: Arc::clone(&sink),
            store: Arc::clone(&store),
            lease: lease.clone(),
            owner: owner.clone(),
        });
        let mut running = tokio::spawn(Arc::clone(&runtime).run(leased, Shutdown::new(stopped)));
        // Hold it: renew, until shut down, lost, or the connection ends by itself.
        let lost = loop {
            tokio::select! {
                () = shutdown.clone().wait() => break false,
                _ = &mut running => {
                    release(&*store, &lease, &owner, &channel).await;
                    return;
                }
                () = tokio::time::sleep(RENEW) => {
                    let until = Clock::system().after(TTL);
                    match store.try_lease(&lease, &owner, now(), until).await {
                        Ok(true) => held_until = until,
                        Ok(false) => break true,
                        // Still ours until it runs out; stop before then.
                        Err(error) if Clock::system().after(RENEW) < held_until => {
                            warn!(%channel, %error, "could not renew the channel's lease; trying again");
                        }
                        Err(error) => {
                            warn!(%channel, %error, "could not renew the channel's lease before it runs out");
                            break true;
                        }
                    }
                }
            }
        };
        let _ = stop.send(true);
        if tokio::time::timeout(STOP_GRACE, &mut running).await.is_err() {
            warn!(%channel, "the channel's connection did not stop in time; leaving it");
            running.abort();
        }
        if !lost {
            release(&*store, &lease, &owner, &channel).await;
            return;
        }
        warn!(%channel, "the channel's lease was lost; another replica holds the connection now");
    }
}

async fn release(store: &dyn Store, lease: &str, owner: &str, channel: &str) {
    if let Err(error) = store.release_lease(lease, owner).await {
        warn!(%channel, %error, "could not give the channel's lease up; it runs out by itself");
    }
}

/// The engine as the connection's holder sees it: its cursor moves only
/// while this replica holds the lease (checked in the same statement), so
/// a replica that lost the connection cannot move it back over the new
/// holder's.
struct LeasedSink {
    sink: Arc<dyn InboundSink>,
    store: Arc<dyn Store>,
    lease: String,
    owner: String,
}

#[async_trait]
impl InboundSink for LeasedSink {
    async fn handle(&self, channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
        self.sink.handle(channel, event).await
    }

    async fn attach(&self, channel: &str, question: &QuestionId, message: MessageRef) {
        self.sink.attach(channel, question, message).await;
    }

    async fn cursor(&self, channel: &str) -> Option<String> {
        self.sink.cursor(channel).await
    }

    async fn save_cursor(&self, channel: &str, cursor: &str) {
        let key = askgate_engine::cursor_key(channel);
        match self
            .store
            .set_setting_leased(&key, cursor, &self.lease, &self.owner, now())
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                warn!(%channel, "the channel's lease is no longer this replica's; its cursor is left as it is");
            }
            Err(error) => warn!(%channel, %error, "could not save the channel's cursor"),
        }
    }

    fn stranger(&self, channel: &str, destination: &Destination) -> Option<Locale> {
        self.sink.stranger(channel, destination)
    }
}
