//! The change feed on PostgreSQL ([`crate::Store::changes`]): one connection
//! that `LISTEN`s on the schema's channel (`askgate:<schema>`), which every
//! store notifies after a write that stored or changed a question has
//! committed ([`super::notify`]: the writer, the id, the status and the
//! deadline). Each store writes under a name of its own, so the feed passes
//! on the other stores' changes and drops its own (the engine has handled
//! those already).
//!
//! A notification sent while the connection is down is lost (PostgreSQL
//! keeps none for a listener that is gone): the feed listens again, then
//! says [`Change::Missed`], and whoever depends on the changes reads again.
//! It listens again itself, pausing longer after each failed attempt and
//! after a connection that failed within [`RETRY_MAX`] of being made:
//! sqlx's own reconnection (`eager_reconnect`) retries an I/O error at once
//! and for ever, which would spin while the database's host is unreachable.

use std::time::Instant;

use askgate_core::QuestionId;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgListener;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tracing::warn;

use std::str::FromStr as _;

use super::{RETRY_MAX, pause};
use crate::{Change, Changed, QuestionStatus, StoreError};

/// Changes kept for a subscriber that has not read them yet; one that falls
/// further behind is told it lagged.
const BUFFER: usize = 1024;

/// The running feed; dropping it stops its task.
#[derive(Debug)]
pub(super) struct Feed {
    sender: broadcast::Sender<Change>,
    task: JoinHandle<()>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Feed {
    /// Listens with `listener` (a connection of the store's pool) on the
    /// channel of the pool's schema; `me` is this store's application name.
    pub(super) async fn start(mut listener: PgListener, schema: &str, me: String) -> Result<Self, StoreError> {
        let channel = super::channel(schema);
        listener.eager_reconnect(false);
        listener.listen(&channel).await?;
        let (sender, _) = broadcast::channel(BUFFER);
        let task = tokio::spawn(run(listener, channel, sender.clone(), me));
        Ok(Self { sender, task })
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.sender.subscribe()
    }
}

async fn run(mut listener: PgListener, channel: String, sender: broadcast::Sender<Change>, me: String) {
    // Failures since the feed last listened for long: a connection that
    // fails again soon after it was made again waits before the next
    // attempt, as a failed attempt does, so that an error that recurs on
    // every receive does not spin.
    let mut failures: u32 = 0;
    let mut listening_since = Instant::now();
    loop {
        // No subscriber is fine: nobody is waiting on another replica.
        match listener.try_recv().await {
            Ok(Some(notification)) => {
                match parse(notification.payload()) {
                    Some((from, _)) if from == me => {}
                    Some((_, changed)) => drop(sender.send(Change::Question(changed))),
                    None => warn!(
                        channel = "postgres",
                        payload = notification.payload(),
                        "a change notification askgate cannot read"
                    ),
                }
                continue;
            }
            Ok(None) => warn!(
                channel = "postgres",
                "the change feed's connection was lost; listening again"
            ),
            Err(sqlx::Error::PoolClosed) => return,
            Err(error) => warn!(channel = "postgres", %error, "the change feed failed; listening again"),
        }
        if listening_since.elapsed() >= RETRY_MAX {
            failures = 0;
        } else {
            tokio::time::sleep(pause(failures)).await;
            failures = failures.saturating_add(1);
        }
        if !listen_again(&mut listener, &channel, &mut failures).await {
            return;
        }
        listening_since = Instant::now();
        // Said once the feed listens again, so that what is read after it
        // is not changed unheard.
        drop(sender.send(Change::Missed));
    }
}

/// Makes the listener's connection again, pausing after each failure
/// ([`pause`], counted in `failures`); `false` once the store's pool is
/// closed. The statement that makes it is `LISTEN` on `channel` (the
/// listener's new connection listens on its channels before it runs it;
/// once more changes nothing), so that the connection's last statement
/// still says what it is for.
async fn listen_again(listener: &mut PgListener, channel: &str, failures: &mut u32) -> bool {
    let listen = format!("LISTEN \"{}\"", channel.replace('"', "\"\""));
    loop {
        match sqlx::query(AssertSqlSafe(listen.clone())).execute(&mut *listener).await {
            Ok(_) => return true,
            Err(sqlx::Error::PoolClosed) => return false,
            Err(error) => {
                let pause = pause(*failures);
                *failures = failures.saturating_add(1);
                warn!(channel = "postgres", %error, retry_in = ?pause, "the change feed could not listen again; trying again");
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// A notification's payload: `<store name> <id> <status> <expires_at>`
/// ([`super::notify::Notifier::changed`]).
fn parse(payload: &str) -> Option<(&str, Changed)> {
    let mut parts = payload.split(' ');
    let (from, id, status, expires_at) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let changed = Changed {
        id: QuestionId::parse(id).ok()?,
        status: QuestionStatus::from_str(status).ok()?,
        expires_at: expires_at.parse().ok()?,
    };
    Some((from, changed))
}
