//! One replica at a time holds each channel's long-lived connection to its
//! platform (Telegram long polling, a Discord gateway, Slack Socket Mode)
//! when several replicas share a PostgreSQL database: the replica that holds
//! the lease `channel:<name>` runs the channel's [`ChannelRuntime::run`];
//! the others try to take it every [`RENEW`], and one of them does within
//! [`TTL`] + [`RENEW`] of the holder's death. A holder renews every
//! [`RENEW`]; one that cannot (the database unreachable) stops the
//! connection before its lease runs out, so that two never run at once
//! while the clocks agree. On shutdown the lease is given up, and another
//! replica takes the connection over at its next try.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use askgate_adapter::{ChannelRuntime, Shutdown};
use askgate_core::InboundSink;
use askgate_store::{Store, Timestamp};
use tokio::sync::watch;
use tracing::{info, warn};

/// How long a lease lasts unless renewed.
pub(crate) const TTL: Duration = Duration::from_secs(6);

/// How often the holder renews, and the others try to take it.
pub(crate) const RENEW: Duration = Duration::from_secs(2);

/// How long a connection gets to stop once its lease is lost.
const STOP_GRACE: Duration = Duration::from_secs(5);

fn now() -> Timestamp {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn later(by: Duration) -> Timestamp {
    now().saturating_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX))
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
            let until = later(TTL);
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
        let mut running = tokio::spawn(Arc::clone(&runtime).run(Arc::clone(&sink), Shutdown::new(stopped)));
        // Hold it: renew, until shut down, lost, or the connection ends by itself.
        let lost = loop {
            tokio::select! {
                () = shutdown.clone().wait() => break false,
                _ = &mut running => {
                    release(&*store, &lease, &owner, &channel).await;
                    return;
                }
                () = tokio::time::sleep(RENEW) => {
                    let until = later(TTL);
                    match store.try_lease(&lease, &owner, now(), until).await {
                        Ok(true) => held_until = until,
                        Ok(false) => break true,
                        // Still ours until it runs out; stop before then.
                        Err(error) if now().saturating_add(duration_ms(RENEW)) < held_until => {
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

fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

async fn release(store: &dyn Store, lease: &str, owner: &str, channel: &str) {
    if let Err(error) = store.release_lease(lease, owner).await {
        warn!(%channel, %error, "could not give the channel's lease up; it runs out by itself");
    }
}
