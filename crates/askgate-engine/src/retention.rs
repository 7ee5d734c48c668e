//! Retention: questions that ended, and the platform events askgate
//! remembered to refuse redeliveries, are deleted once they are older than
//! the configured retention (`[store] retention_days`, 30 by default).
//!
//! Pending questions are never deleted, however old. An agent that asks for
//! a question deleted this way gets "not found", as for any unknown id.
//! Deletion runs in bounded batches (each one write, committed on its own),
//! so a backlog of millions never holds the writer for long.

use std::time::Duration;

use askgate_store::Pruned;
use tracing::{info, warn};

use crate::engine::{Engine, EngineError};

/// Rows deleted per batch (per kind).
pub const PRUNE_BATCH: u32 = 1000;

/// How often retention runs once the first run is done.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// The pause between batches: writes from people and agents go first.
const BETWEEN_BATCHES: Duration = Duration::from_millis(50);

impl Engine {
    /// Deletes everything older than `retention`, batch by batch, and says
    /// how much went.
    pub async fn prune_once(&self, retention: Duration) -> Result<Pruned, EngineError> {
        let keep = crate::clock::millis(retention);
        let before = self.inner.clock.now().saturating_sub(keep);
        let mut total = Pruned::default();
        loop {
            let pruned = self.inner.store.prune(before, PRUNE_BATCH).await?;
            total.questions += pruned.questions;
            total.events += pruned.events;
            if pruned.questions < u64::from(PRUNE_BATCH) && pruned.events < u64::from(PRUNE_BATCH) {
                return Ok(total);
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
    }

    /// Runs [`Engine::prune_once`] now and then every [`PRUNE_EVERY`] of
    /// this engine's clock, until `shutdown` completes. A failed run (a
    /// full disk) is logged and tried again at the next one.
    pub async fn run_retention(&self, retention: Duration, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                outcome = self.prune_once(retention) => match outcome {
                    Ok(pruned) if pruned.questions + pruned.events > 0 => info!(
                        questions = pruned.questions,
                        events = pruned.events,
                        retention_days = retention.as_secs() / 86_400,
                        "deleted what is older than the retention"
                    ),
                    Ok(_) => {}
                    Err(error) => warn!(%error, "could not delete what is older than the retention; trying again later"),
                },
            }
            tokio::select! {
                () = &mut shutdown => return,
                () = self.inner.clock.sleep(PRUNE_EVERY) => {}
            }
        }
    }
}
