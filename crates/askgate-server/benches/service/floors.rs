//! The floors, measured in the same run: what plain SQLite on the same disk
//! and a bare HTTP server on the same loopback manage. Not askgate.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection as _, SqliteConnection};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::Result;
use crate::client::Client;

/// Rows per transaction of the group-commit floor.
pub(crate) const GROUP: usize = 32;
/// The size of a floor row's text: about a stored question's.
const ROW_BYTES: usize = 600;

/// Plain SQLite on a file of its own beside askgate's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqliteFloors {
    /// One `INSERT` per transaction, sequential: commits (fsyncs) per second.
    pub(crate) single_commits_per_second: f64,
    pub(crate) single_commits: usize,
    /// `GROUP` `INSERT`s per transaction, sequential: rows per second.
    pub(crate) group_rows_per_second: f64,
    pub(crate) group_commits: usize,
}

/// Measures both SQLite floors, each for about `time`, on `dir/floor.db`
/// in WAL mode with `synchronous = FULL`, as askgate's store opens its file.
pub(crate) async fn sqlite(dir: &Path, time: Duration) -> Result<SqliteFloors> {
    let options = SqliteConnectOptions::new()
        .filename(dir.join("floor.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full);
    let mut connection = SqliteConnection::connect_with(&options).await?;
    sqlx::raw_sql("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&mut connection)
        .await?;
    let body = "x".repeat(ROW_BYTES);

    let start = Instant::now();
    let mut single_commits = 0;
    while single_commits == 0 || start.elapsed() < time {
        sqlx::query("INSERT INTO rows (body) VALUES (?)")
            .bind(&body)
            .execute(&mut connection)
            .await?;
        single_commits += 1;
    }
    let single_time = start.elapsed();

    // One statement string per transaction, so that the whole transaction is
    // one hand-off to sqlx's connection thread, as askgate's writer thread
    // runs a whole group at once.
    let mut group = String::from("BEGIN IMMEDIATE;\n");
    for _ in 0..GROUP {
        writeln!(group, "INSERT INTO rows (body) VALUES ('{body}');")?;
    }
    group.push_str("COMMIT;\n");
    let group: Arc<str> = group.into();
    let start = Instant::now();
    let mut group_commits = 0;
    while group_commits == 0 || start.elapsed() < time {
        sqlx::raw_sql(AssertSqlSafe(group.clone()))
            .execute(&mut connection)
            .await?;
        group_commits += 1;
    }
    let group_time = start.elapsed();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM rows")
        .fetch_one(&mut connection)
        .await?;
    let expected = single_commits + group_commits * GROUP;
    if usize::try_from(rows).ok() != Some(expected) {
        return Err(format!("the floor's table holds {rows} rows, not {expected}").into());
    }
    connection.close().await?;
    Ok(SqliteFloors {
        single_commits_per_second: crate::stats::as_f64(single_commits) / single_time.as_secs_f64(),
        single_commits,
        group_rows_per_second: crate::stats::as_f64(group_commits * GROUP) / group_time.as_secs_f64(),
        group_commits,
    })
}

/// A bare HTTP server on loopback: axum answering `GET /` with an empty 200.
pub(crate) struct BareServer {
    pub(crate) address: std::net::SocketAddr,
    task: JoinHandle<std::io::Result<()>>,
}

impl BareServer {
    /// Starts it on the current runtime.
    pub(crate) async fn start() -> Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let router = axum::Router::new().route("/", axum::routing::get(|| async { axum::http::StatusCode::OK }));
        let task = tokio::spawn(async move { axum::serve(listener, router).await });
        Ok(Self { address, task })
    }

    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

/// `rounds` sequential `GET path` round trips (after a few not counted).
pub(crate) async fn round_trips(client: &Client, path: &str, rounds: usize) -> Result<Vec<Duration>> {
    for _ in 0..rounds.min(50) {
        client.get_ok(path).await?;
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        client.get_ok(path).await?;
        times.push(start.elapsed());
    }
    Ok(times)
}
