//! The replicas benchmark: ask → wait → answer cycles with askgate on
//! PostgreSQL, with one replica and with two on one database, next to floors
//! measured in the same run.
//!
//! Each replica is built in-process as `askgate serve` wires it (`PgStore`,
//! engine with its timers, which follow the store's change feed, and
//! `askgate_server::serve` on its own loopback listener; `service/app.rs`),
//! on one tokio runtime, driven over real HTTP from another. With one
//! replica the agent asks, waits and the person answers on it; with two the
//! agent asks and waits on A and the person answers on B, so that every
//! answer reaches the waiting agent through PostgreSQL's `NOTIFY`.
//!
//! Floors, same server, same loopback: sequential round trips to a bare
//! axum server (an empty 200), and single-row `INSERT`s each committed on
//! its own (PostgreSQL's commit, `synchronous_commit` as the server has it).
//!
//! Prints, per phase: answered cycles/s, and answer → waiting agent p50/p99
//! (from the answer's POST being sent to the agent having its response).
//! Needs the test PostgreSQL (`askgate_testkit::postgres`); each run works in
//! a schema of its own. Run with `cargo bench -p askgate-server --bench
//! replicas`; under `cargo test --benches` it runs tiny phases and checks
//! correctness only (every waiting agent got exactly its answer).

#![allow(clippy::print_stdout, reason = "a benchmark's job is to print its figures")]

#[path = "service/app.rs"]
#[allow(dead_code, reason = "the SQLite parts are the service benchmark's")]
mod app;
#[path = "service/client.rs"]
mod client;
#[path = "service/cycles.rs"]
#[allow(dead_code, reason = "commits and CPU time are the service benchmark's figures")]
mod cycles;
#[path = "service/floors.rs"]
#[allow(dead_code, reason = "the SQLite floors are the service benchmark's")]
mod floors;
#[path = "service/stats.rs"]
#[allow(dead_code, reason = "not every figure of the service benchmark is printed here")]
mod stats;

use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_store::{PgStore, Store};
use askgate_testkit::postgres::Schema;
use sqlx::Connection as _;

use crate::app::Service;
use crate::client::Client;
use crate::cycles::{Phase, Timing};
use crate::floors::BareServer;
use crate::stats::{Summary, ms};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// The longest the whole benchmark may take.
const RUN_LIMIT: Duration = Duration::from_secs(10 * 60);

struct Plan {
    test_mode: bool,
    in_flight: Vec<usize>,
    timing: Timing,
    floor_rounds: usize,
}

impl Plan {
    fn from_environment() -> Self {
        if askgate_testkit::bench::test_mode() {
            return Self {
                test_mode: true,
                in_flight: vec![1, 4],
                timing: Timing {
                    warmup: Duration::from_millis(100),
                    window: Duration::from_millis(300),
                },
                floor_rounds: 20,
            };
        }
        let seconds = std::env::var("ASKGATE_BENCH_SECONDS")
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|&seconds| seconds > 0)
            .unwrap_or(5);
        Self {
            test_mode: false,
            in_flight: vec![1, 32, 256],
            timing: Timing {
                warmup: Duration::from_secs(1),
                window: Duration::from_secs(seconds),
            },
            floor_rounds: 2000,
        }
    }
}

fn main() -> Result<()> {
    let plan = Plan::from_environment();
    let (server, client) = stats::runtimes()?;
    let schema = server.block_on(Schema::create());
    let start = |schema: &Schema| {
        let options = schema.options();
        server.block_on(async move {
            let store = PgStore::connect_with(options, 10).await?;
            Service::start_on(Arc::new(store) as Arc<dyn Store>, None).await
        })
    };
    let (a, b) = (start(&schema)?, start(&schema)?);
    let bare = server.block_on(BareServer::start())?;
    let outcome = client.block_on(async {
        tokio::time::timeout(RUN_LIMIT, measure(&plan, &schema, &a, &b, &bare))
            .await
            .map_err(|_| format!("the benchmark did not finish within {RUN_LIMIT:?}"))?
    });
    bare.stop();
    server.block_on(async {
        a.stop().await;
        b.stop().await;
    });
    let report = outcome?;
    report.print();
    let wrong: usize = report.phases.iter().map(|(_, phase)| phase.wrong).sum();
    if wrong > 0 {
        let problems: Vec<&String> = report.phases.iter().flat_map(|(_, phase)| &phase.problems).collect();
        return Err(format!("{wrong} waiting agents did not get exactly their answer: {problems:?}").into());
    }
    if plan.test_mode {
        println!(
            "test mode: all {} cycles complete across one and two replicas, every waiting agent saw exactly its answer",
            report.phases.iter().map(|(_, phase)| phase.checked).sum::<usize>()
        );
    }
    drop(schema);
    Ok(())
}

struct Report {
    bare: Vec<Duration>,
    commits: Vec<Duration>,
    phases: Vec<(usize, Phase)>,
}

async fn measure(plan: &Plan, schema: &Schema, a: &Service, b: &Service, bare: &BareServer) -> Result<Report> {
    let http = Client::http()?;
    let on_a = Arc::new(Client::new(http.clone(), format!("http://{}", a.address)));
    let on_b = Arc::new(Client::new(http.clone(), format!("http://{}", b.address)));
    let bare_client = Client::new(http, format!("http://{}", bare.address));
    let bare = floors::round_trips(&bare_client, "/", plan.floor_rounds).await?;
    let commits = commit_floor(schema, plan.floor_rounds).await?;
    let mut phases = Vec::new();
    for &in_flight in &plan.in_flight {
        phases.push((1, cycles::run(&on_a, &on_a, a, in_flight, plan.timing).await?));
        phases.push((2, cycles::run(&on_a, &on_b, a, in_flight, plan.timing).await?));
    }
    Ok(Report { bare, commits, phases })
}

/// Sequential single-row `INSERT`s, each its own committed transaction, on a
/// table of the benchmark's schema.
async fn commit_floor(schema: &Schema, rounds: usize) -> Result<Vec<Duration>> {
    let mut conn = schema.connect().await;
    sqlx::query("CREATE TABLE floor (n BIGINT NOT NULL, payload TEXT NOT NULL)")
        .execute(&mut conn)
        .await?;
    let mut times = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let start = Instant::now();
        sqlx::query("INSERT INTO floor (n, payload) VALUES ($1, $2)")
            .bind(i64::try_from(n)?)
            .bind("a row about the size of a question's status change")
            .execute(&mut conn)
            .await?;
        times.push(start.elapsed());
    }
    conn.close().await?;
    Ok(times)
}

impl Report {
    fn print(&self) {
        let (bare, commits) = (Summary::of(&self.bare), Summary::of(&self.commits));
        println!("askgate on PostgreSQL, one replica and two on one database");
        println!(
            "floor: loopback round trip to a bare server p50 {} p99 {}",
            ms(bare.p50),
            ms(bare.p99)
        );
        println!(
            "floor: PostgreSQL single-row commit p50 {} p99 {} ({:.0} commits/s one at a time)",
            ms(commits.p50),
            ms(commits.p99),
            1.0 / commits.p50.as_secs_f64().max(1e-9)
        );
        println!("replicas  in flight  cycles/s  answer→agent p50       p99  p99 ÷ (round trip + commit)");
        for (replicas, phase) in &self.phases {
            let latency = Summary::of(&phase.sent_to_agent);
            let floor = bare.p50 + commits.p50;
            println!(
                "{replicas:>8}  {:>9}  {:>8.0}  {:>16}  {:>9}  {:.1}×",
                phase.in_flight,
                phase.cycles_per_second(),
                ms(latency.p50),
                ms(latency.p99),
                latency.p99.as_secs_f64() / floor.as_secs_f64().max(1e-9)
            );
        }
    }
}
