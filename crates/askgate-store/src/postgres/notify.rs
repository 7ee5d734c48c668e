//! The other half of the change feed ([`super::feed`]): telling the other
//! replicas which question changed, after the write that changed it has
//! committed.
//!
//! A `NOTIFY` inside the writing transaction would be simplest, but
//! PostgreSQL serialises the commits of every transaction that notifies (one
//! lock for the whole cluster, held until the commit is on disk): writes
//! that notify then commit one disk flush at a time, whatever the number of
//! connections, which capped askgate at about 600 cycles/s. So each write
//! commits on its own, and a task of the store sends its notifications after
//! it, in batches, on a connection of its own, in transactions that write
//! nothing and commit without waiting for the disk.
//!
//! The price: a process killed between a commit and its notification
//! leaves the other replicas unaware of that change. What depends on
//! notifications has a fallback: every replica's sweep expires questions
//! and takes up undelivered ones from the table, and an engine re-reads the
//! questions its agents wait on now and then (`Store::ended_among`).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection as _, PgPool};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::{QuestionStatus, Timestamp};

/// The most notifications sent in one statement.
const BATCH: usize = 256;

/// Attempts at sending one batch before it is given up.
const ATTEMPTS: u32 = 4;

/// The notifications to send and the task sending them; dropping it stops
/// the task.
#[derive(Debug)]
pub(super) struct Notifier {
    sender: mpsc::UnboundedSender<String>,
    me: String,
    task: JoinHandle<()>,
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Notifier {
    /// Sends on the channel `askgate:<schema>` as the store named `me`,
    /// connecting as `pool` does.
    pub(super) fn start(pool: &PgPool, schema: &str, me: String) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        let options = (*pool.connect_options()).clone();
        let task = tokio::spawn(run(options, format!("askgate:{schema}"), receiver));
        Self { sender, me, task }
    }

    /// Tells the other replicas that question `id` changed: its status and
    /// deadline now (the payload the feed reads: `<store> <id> <status>
    /// <expires_at>`). Call it after the write committed.
    pub(super) fn changed(&self, id: &str, status: QuestionStatus, expires_at: Timestamp) {
        // The task is gone only when the store is dropped.
        let _ = self
            .sender
            .send(format!("{} {id} {} {expires_at}", self.me, status.as_str()));
    }
}

async fn run(options: PgConnectOptions, channel: String, mut receiver: mpsc::UnboundedReceiver<String>) {
    let mut conn: Option<PgConnection> = None;
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        for attempt in 1..=ATTEMPTS {
            match send(&mut conn, &options, &channel, &batch).await {
                Ok(()) => break,
                Err(error) if attempt == ATTEMPTS => {
                    warn!(channel = "postgres", %error, lost = batch.len(), "could not tell the other replicas of changes; they find them at their next re-read");
                }
                Err(error) => {
                    warn!(channel = "postgres", %error, "could not tell the other replicas of changes; trying again");
                    conn = None;
                    tokio::time::sleep(Duration::from_millis(100 * 2_u64.pow(attempt))).await;
                }
            }
        }
        batch.clear();
    }
}

/// One statement notifying every payload of `batch`, on the notifier's
/// connection (made when missing).
async fn send(
    conn: &mut Option<PgConnection>,
    options: &PgConnectOptions,
    channel: &str,
    batch: &[String],
) -> Result<(), sqlx::Error> {
    let connection = match conn {
        Some(connection) => connection,
        None => conn.insert(PgConnection::connect_with(options).await?),
    };
    let sent = sqlx::query("SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload")
        .bind(channel)
        .bind(batch)
        .execute(&mut *connection)
        .await;
    if sent.is_err() {
        *conn = None;
    }
    sent.map(drop)
}
