//! What the replicas benchmark measures of PostgreSQL itself, in the same
//! run: its floors (one connection committing single-row `INSERT`s one at a
//! time; 32 connections doing so at once), and the counters read around each
//! phase (write transactions from the cluster's next transaction id, CPU
//! time of the server's processes from `/proc`). Not askgate.

use std::time::{Duration, Instant};

use askgate_testkit::postgres::Schema;
use sqlx::Connection as _;

use crate::Result;

/// Connections of the concurrent-commit floor.
pub(crate) const CONCURRENT: usize = 32;

/// A row about the size of a question's status change.
const PAYLOAD: &str = "a row about the size of a question's status change";

/// Sequential single-row `INSERT`s, each its own committed transaction, on a
/// table of the benchmark's schema: each one's time.
pub(crate) async fn single_commits(schema: &Schema, rounds: usize) -> Result<Vec<Duration>> {
    let mut conn = schema.connect().await;
    sqlx::query("CREATE TABLE IF NOT EXISTS floor (n BIGINT NOT NULL, payload TEXT NOT NULL)")
        .execute(&mut conn)
        .await?;
    let mut times = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let start = Instant::now();
        sqlx::query("INSERT INTO floor (n, payload) VALUES ($1, $2)")
            .bind(i64::try_from(n)?)
            .bind(PAYLOAD)
            .execute(&mut conn)
            .await?;
        times.push(start.elapsed());
    }
    conn.close().await?;
    Ok(times)
}

/// [`CONCURRENT`] connections each committing single-row `INSERT`s, one
/// per transaction, for `time`: commits per second, all together.
pub(crate) async fn concurrent_commits(schema: &Schema, time: Duration) -> Result<f64> {
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..CONCURRENT {
        let mut conn = schema.connect().await;
        tasks.spawn(async move {
            let start = Instant::now();
            let mut commits = 0_u64;
            while start.elapsed() < time {
                sqlx::query("INSERT INTO floor (n, payload) VALUES ($1, $2)")
                    .bind(i64::try_from(worker).unwrap_or_default())
                    .bind(PAYLOAD)
                    .execute(&mut conn)
                    .await?;
                commits += 1;
            }
            conn.close().await?;
            Ok::<_, sqlx::Error>((commits, start.elapsed()))
        });
    }
    let mut rate = 0.0;
    while let Some(done) = tasks.join_next().await {
        let (commits, elapsed) = done??;
        rate += crate::stats::u64_f64(commits) / elapsed.as_secs_f64();
    }
    Ok(rate)
}

/// The server's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    /// The next transaction id: every transaction that wrote took one.
    pub(crate) next_xid: u64,
    /// CPU time of every `postgres` process of the machine.
    pub(crate) cpu: Duration,
}

impl Counters {
    pub(crate) async fn read(schema: &Schema) -> Result<Self> {
        let mut conn = schema.connect().await;
        // The snapshot's xmax is the next id to be given, and reading it
        // gives none away (as `pg_current_xact_id()` would).
        let next_xid: String = sqlx::query_scalar("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
            .fetch_one(&mut conn)
            .await?;
        conn.close().await?;
        Ok(Self {
            next_xid: next_xid.parse()?,
            cpu: postgres_cpu()?,
        })
    }

    /// Both spans' counts together.
    pub(crate) fn plus(self, other: Self) -> Self {
        Self {
            next_xid: self.next_xid + other.next_xid,
            cpu: self.cpu + other.cpu,
        }
    }

    /// Write transactions and the server's CPU time since `earlier`
    /// (less the two reads of the counters themselves, which write nothing).
    pub(crate) fn since(self, earlier: Self) -> Self {
        Self {
            next_xid: self.next_xid.saturating_sub(earlier.next_xid),
            cpu: self.cpu.saturating_sub(earlier.cpu),
        }
    }
}

/// The CPU time (user + system) of every process named `postgres`: the
/// server, its backends and its background workers. Processes that ended
/// between two reads (a closed connection's backend) are not counted.
fn postgres_cpu() -> Result<Duration> {
    let mut total = Duration::ZERO;
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Ok((name, time)) = crate::stats::thread_cpu(&stat) else {
            continue;
        };
        if name == "postgres" {
            total += time;
        }
    }
    Ok(total)
}
