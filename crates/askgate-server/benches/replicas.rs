//! The replicas benchmark: ask → wait → answer cycles on the embedded store
//! and on PostgreSQL, with one replica and with two on one database, next to
//! floors measured in the same run, with every target of issue 28 printed as
//! a ratio and a verdict.
//!
//! Each service is built in-process as `askgate serve` wires it (a store,
//! the engine with its timers, which follow the store's change feed on
//! PostgreSQL, and `askgate_server::serve` on its own loopback listener;
//! `service/app.rs`), on one tokio runtime, driven over real HTTP from
//! another. The phases, each with 1, 32 and 256 cycles in flight:
//!
//! - **SQLite**: one process on a file (the embedded default);
//! - **PostgreSQL, one replica**: the agent asks, waits and the person
//!   answers on A;
//! - **PostgreSQL, two replicas**: the agent asks and waits on A, the person
//!   answers on B, so that every answer reaches the waiting agent through
//!   PostgreSQL's `NOTIFY`.
//!
//! Floors, same machine, same loopback, same run: sequential round trips to
//! a bare axum server (an empty 200); single-row `INSERT`s committed one at
//! a time on SQLite (WAL, `synchronous = FULL`, as askgate opens its file)
//! and on PostgreSQL (`synchronous_commit` as the server has it); and 32
//! connections committing single-row `INSERT`s at once on PostgreSQL.
//!
//! Each phase's window is split into rounds (`ASKGATE_BENCH_ROUNDS`,
//! default 4), and the three setups take turns at each load, in one order
//! and then the reverse (SQLite, ×1, ×2, then ×2, ×1, SQLite): what the
//! machine does meanwhile (another tenant's load, the disk's slow flushes,
//! the database growing) falls on every setup alike, instead of on
//! whichever phase came when. A phase's figures pool its rounds.
//!
//! Per phase: answered cycles/s, answer → waiting agent p50/p99 (from the
//! answer's POST being sent to the agent having its response), CPU time per
//! cycle of askgate's own threads (`/proc/self/task`, less the client's),
//! and on PostgreSQL the server's CPU time per cycle (every `postgres`
//! process in `/proc`) and its write transactions per cycle (the next
//! transaction id before and after the window). Targets never fail the run;
//! a lost or wrong answer does.
//!
//! Needs the test PostgreSQL (`askgate_testkit::postgres`); each run works
//! in a schema of its own. The window lasts `ASKGATE_BENCH_SECONDS`
//! (default 5) per phase. Run with `cargo bench -p askgate-server --bench
//! replicas`; under `cargo test --benches` it runs tiny phases and checks
//! correctness only (every waiting agent got exactly its answer).

#![allow(clippy::print_stdout, reason = "a benchmark's job is to print its figures")]

#[path = "service/app.rs"]
#[allow(dead_code, reason = "the pending count is the service benchmark's")]
mod app;
#[path = "service/client.rs"]
mod client;
#[path = "service/cycles.rs"]
#[allow(dead_code, reason = "not every figure of the service benchmark is printed here")]
mod cycles;
#[path = "service/floors.rs"]
#[allow(dead_code, reason = "the rate floors of SQLite are the service benchmark's")]
mod floors;
#[path = "replicas/postgres.rs"]
mod postgres;
#[path = "service/stats.rs"]
#[allow(dead_code, reason = "not every figure of the service benchmark is printed here")]
mod stats;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_store::{PgStore, Store};
use askgate_testkit::postgres::Schema;
use sqlx::Connection as _;

use crate::app::Service;
use crate::client::Client;
use crate::cycles::{Phase, Timing};
use crate::floors::BareServer;
use crate::postgres::Counters;
use crate::stats::{Summary, ms, verdict};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// The longest the whole benchmark may take.
const RUN_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Connections of each replica's pool: `[store] max_connections`'s default,
/// unless `ASKGATE_BENCH_PG_CONNECTIONS` says otherwise.
const POOL: u32 = PgStore::DEFAULT_CONNECTIONS;

fn pool() -> u32 {
    positive_from_env("ASKGATE_BENCH_PG_CONNECTIONS", POOL)
}

/// The environment variable `name` as a number above zero, else `default`.
fn positive_from_env<T: std::str::FromStr + PartialOrd + Default>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .filter(|value| *value > T::default())
        .unwrap_or(default)
}

/// Rounds each phase's window is split into, unless
/// `ASKGATE_BENCH_ROUNDS` says otherwise.
const ROUNDS: u32 = 4;

struct Plan {
    test_mode: bool,
    in_flight: Vec<usize>,
    /// Each round's warm-up and window.
    timing: Timing,
    rounds: u32,
    floor_rounds: usize,
    floor_time: Duration,
}

impl Plan {
    fn from_environment() -> Self {
        if askgate_testkit::bench::test_mode() {
            return Self {
                test_mode: true,
                in_flight: vec![1, 4],
                timing: Timing {
                    warmup: Duration::from_millis(100),
                    window: Duration::from_millis(150),
                },
                rounds: 2,
                floor_rounds: 20,
                floor_time: Duration::from_millis(100),
            };
        }
        let seconds: u64 = positive_from_env("ASKGATE_BENCH_SECONDS", 5);
        let rounds = positive_from_env("ASKGATE_BENCH_ROUNDS", ROUNDS);
        Self {
            test_mode: false,
            in_flight: vec![1, 32, 256],
            timing: Timing {
                warmup: Duration::from_secs(1),
                window: Duration::from_secs(seconds) / rounds,
            },
            rounds,
            floor_rounds: 2000,
            floor_time: Duration::from_secs(3),
        }
    }
}

/// Where a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    Sqlite,
    OneReplica,
    TwoReplicas,
}

impl Setup {
    const ALL: [Self; 3] = [Self::Sqlite, Self::OneReplica, Self::TwoReplicas];

    fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::OneReplica => "PostgreSQL ×1",
            Self::TwoReplicas => "PostgreSQL ×2",
        }
    }
}

/// The services under test.
struct Services {
    sqlite: Service,
    a: Service,
    b: Service,
}

fn main() -> Result<()> {
    let plan = Plan::from_environment();
    let (server, client) = stats::runtimes()?;
    let dir = tempfile::Builder::new()
        .prefix("askgate-bench-replicas-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let schema = server.block_on(Schema::create());
    let start_pg = |schema: &Schema| {
        let options = schema.options();
        server.block_on(async move {
            let store = PgStore::connect_with(options, pool()).await?;
            Service::start_on(Arc::new(store) as Arc<dyn Store>, None).await
        })
    };
    let services = Services {
        sqlite: server.block_on(Service::start(dir.path()))?,
        a: start_pg(&schema)?,
        b: start_pg(&schema)?,
    };
    let bare = server.block_on(BareServer::start())?;
    let outcome = client.block_on(async {
        tokio::time::timeout(RUN_LIMIT, measure(&plan, dir.path(), &schema, &services, &bare))
            .await
            .map_err(|_| format!("the benchmark did not finish within {RUN_LIMIT:?}"))?
    });
    bare.stop();
    server.block_on(async {
        services.sqlite.stop().await;
        services.a.stop().await;
        services.b.stop().await;
    });
    let report = outcome?;
    report.print();
    let wrong: usize = report.phases.iter().map(|measured| measured.phase.wrong).sum();
    if wrong > 0 {
        let problems: Vec<&String> = report
            .phases
            .iter()
            .flat_map(|measured| &measured.phase.problems)
            .collect();
        return Err(format!("{wrong} waiting agents did not get exactly their answer: {problems:?}").into());
    }
    if plan.test_mode {
        println!(
            "test mode: all {} cycles complete on SQLite and on one and two PostgreSQL replicas, every waiting agent saw exactly its answer",
            report
                .phases
                .iter()
                .map(|measured| measured.phase.checked)
                .sum::<usize>()
        );
    }
    drop(schema);
    Ok(())
}

/// The floors, measured in the same run.
struct Floors {
    bare: Summary,
    sqlite_commit: Summary,
    pg_commit: Summary,
    pg_concurrent_commits_per_second: f64,
}

/// One phase as measured.
struct Measured {
    setup: Setup,
    phase: Phase,
    /// The PostgreSQL server's part of the window (zero on SQLite).
    postgres: Counters,
}

impl Measured {
    fn per_cycle(&self, time: Duration) -> Duration {
        time / u32::try_from(self.phase.cycles.max(1)).unwrap_or(u32::MAX)
    }
}

struct Report {
    floors: Floors,
    /// Each pools its rounds.
    phases: Vec<Measured>,
    rounds: u32,
}

async fn measure(plan: &Plan, dir: &Path, schema: &Schema, services: &Services, bare: &BareServer) -> Result<Report> {
    let http = Client::http()?;
    let client = |service: &Service| Arc::new(Client::new(http.clone(), format!("http://{}", service.address)));
    let (on_sqlite, on_a, on_b) = (client(&services.sqlite), client(&services.a), client(&services.b));
    let bare_client = Client::new(http.clone(), format!("http://{}", bare.address));
    let floors = Floors {
        bare: Summary::of(&floors::round_trips(&bare_client, "/", plan.floor_rounds).await?),
        sqlite_commit: Summary::of(&sqlite_commits(dir, plan.floor_rounds).await?),
        pg_commit: Summary::of(&postgres::single_commits(schema, plan.floor_rounds).await?),
        pg_concurrent_commits_per_second: postgres::concurrent_commits(schema, plan.floor_time).await?,
    };
    let mut phases: Vec<Measured> = Vec::new();
    for &in_flight in &plan.in_flight {
        for round in 0..plan.rounds {
            let mut order = Setup::ALL;
            if round % 2 == 1 {
                order.reverse();
            }
            for setup in order {
                let (service, agent, person) = match setup {
                    Setup::Sqlite => (&services.sqlite, &on_sqlite, &on_sqlite),
                    Setup::OneReplica => (&services.a, &on_a, &on_a),
                    Setup::TwoReplicas => (&services.a, &on_a, &on_b),
                };
                // The server's counters of the window alone, as askgate's CPU time.
                let (phase, before, after) =
                    cycles::run_marked(agent, person, service, in_flight, plan.timing, async || {
                        Counters::read(schema).await
                    })
                    .await?;
                let postgres = if setup == Setup::Sqlite {
                    Counters::default()
                } else {
                    after.since(before)
                };
                match phases
                    .iter_mut()
                    .find(|measured| measured.setup == setup && measured.phase.in_flight == in_flight)
                {
                    Some(measured) => {
                        measured.phase.absorb(phase);
                        measured.postgres = measured.postgres.plus(postgres);
                    }
                    None => phases.push(Measured { setup, phase, postgres }),
                }
            }
        }
    }
    Ok(Report {
        floors,
        phases,
        rounds: plan.rounds,
    })
}

/// Sequential single-row `INSERT`s, each committed on its own, on a SQLite
/// file of their own beside askgate's, opened as askgate opens its file:
/// each one's time.
async fn sqlite_commits(dir: &Path, rounds: usize) -> Result<Vec<Duration>> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("commit-floor.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Full);
    let mut connection = sqlx::SqliteConnection::connect_with(&options).await?;
    sqlx::query("CREATE TABLE floor (n INTEGER NOT NULL, payload TEXT NOT NULL)")
        .execute(&mut connection)
        .await?;
    let mut times = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let start = Instant::now();
        sqlx::query("INSERT INTO floor (n, payload) VALUES (?, ?)")
            .bind(i64::try_from(n)?)
            .bind("a row about the size of a question's status change")
            .execute(&mut connection)
            .await?;
        times.push(start.elapsed());
    }
    connection.close().await?;
    Ok(times)
}

/// One target: what it says, the ratio it is read as, and the bound.
struct Target {
    what: String,
    ratio: f64,
    /// The ratio must be at least this (`true`) or at most (`false`).
    at_least: bool,
    bound: f64,
}

impl Report {
    fn phase(&self, setup: Setup, in_flight: usize) -> Option<&Measured> {
        self.phases
            .iter()
            .find(|measured| measured.setup == setup && measured.phase.in_flight == in_flight)
    }

    fn p99(&self, setup: Setup, in_flight: usize) -> Option<Duration> {
        self.phase(setup, in_flight)
            .map(|measured| Summary::of(&measured.phase.sent_to_agent).p99)
    }

    fn rate(&self, setup: Setup, in_flight: usize) -> Option<f64> {
        self.phase(setup, in_flight)
            .map(|measured| measured.phase.cycles_per_second())
    }

    fn targets(&self) -> Vec<Target> {
        let floors = &self.floors;
        let mut targets = Vec::new();
        let secs = Duration::as_secs_f64;
        if let Some(rate) = self.rate(Setup::Sqlite, 256) {
            targets.push(Target {
                what: "SQLite cycles/s at 256 in flight ≥ 3,000".to_owned(),
                ratio: rate / 3000.0,
                at_least: true,
                bound: 1.0,
            });
        }
        for (setup, commit) in [
            (Setup::Sqlite, floors.sqlite_commit.p99),
            (Setup::OneReplica, floors.pg_commit.p99),
        ] {
            if let Some(p99) = self.p99(setup, 1) {
                targets.push(Target {
                    what: format!(
                        "{} at 1 in flight: answer→agent p99 ≤ 3 × (loopback p99 + single-row commit p99 = {})",
                        setup.name(),
                        ms(floors.bare.p99 + commit)
                    ),
                    ratio: secs(&p99) / secs(&(floors.bare.p99 + commit)).max(1e-9),
                    at_least: false,
                    bound: 3.0,
                });
            }
        }
        if let (Some(pg), Some(sqlite)) = (self.rate(Setup::OneReplica, 256), self.rate(Setup::Sqlite, 256)) {
            targets.push(Target {
                what: "PostgreSQL ×1 cycles/s at 256 in flight ≥ 0.4 × SQLite's in this run".to_owned(),
                ratio: pg / sqlite.max(1e-9),
                at_least: true,
                bound: 0.4,
            });
        }
        for in_flight in [32, 256] {
            if let (Some(two), Some(one)) = (
                self.rate(Setup::TwoReplicas, in_flight),
                self.rate(Setup::OneReplica, in_flight),
            ) {
                targets.push(Target {
                    what: format!("PostgreSQL ×2 cycles/s at {in_flight} in flight ≥ 0.9 × ×1's"),
                    ratio: two / one.max(1e-9),
                    at_least: true,
                    bound: 0.9,
                });
            }
        }
        for in_flight in [1, 32, 256] {
            if let (Some(two), Some(one)) = (
                self.p99(Setup::TwoReplicas, in_flight),
                self.p99(Setup::OneReplica, in_flight),
            ) {
                targets.push(Target {
                    what: format!("PostgreSQL ×2 answer→agent p99 at {in_flight} in flight ≤ 1.5 × ×1's"),
                    ratio: secs(&two) / secs(&one).max(1e-9),
                    at_least: false,
                    bound: 1.5,
                });
            }
        }
        targets
    }

    fn print(&self) {
        let floors = &self.floors;
        println!(
            "askgate on SQLite, and on PostgreSQL with one replica and two on one database ({} connections each); \
             each phase over {} rounds, the setups taking turns",
            pool(),
            self.rounds
        );
        println!(
            "floor: loopback round trip to a bare server   p50 {}  p99 {}",
            ms(floors.bare.p50),
            ms(floors.bare.p99)
        );
        println!(
            "floor: SQLite single-row commit                p50 {}  p99 {}",
            ms(floors.sqlite_commit.p50),
            ms(floors.sqlite_commit.p99)
        );
        println!(
            "floor: PostgreSQL single-row commit            p50 {}  p99 {}  ({:.0} commits/s one at a time)",
            ms(floors.pg_commit.p50),
            ms(floors.pg_commit.p99),
            1.0 / floors.pg_commit.p50.as_secs_f64().max(1e-9)
        );
        println!(
            "floor: PostgreSQL, {} connections committing at once: {:.0} commits/s",
            postgres::CONCURRENT,
            floors.pg_concurrent_commits_per_second
        );
        println!();
        println!(
            "{:<14} {:>9} {:>9} {:>12} {:>12} {:>13} {:>13} {:>12}",
            "store", "in flight", "cycles/s", "answer→agent", "p99", "askgate CPU", "postgres CPU", "PG writes"
        );
        println!(
            "{:<14} {:>9} {:>9} {:>12} {:>12} {:>13} {:>13} {:>12}",
            "", "", "", "p50", "", "per cycle", "per cycle", "per cycle"
        );
        for measured in &self.phases {
            let latency = Summary::of(&measured.phase.sent_to_agent);
            let (_, askgate) = measured.phase.cpu_per_cycle();
            let (postgres_cpu, writes) = if measured.setup == Setup::Sqlite {
                ("-".to_owned(), "-".to_owned())
            } else {
                (
                    format!(
                        "{:.0} µs",
                        measured.per_cycle(measured.postgres.cpu).as_secs_f64() * 1e6
                    ),
                    format!(
                        "{:.2}",
                        stats::u64_f64(measured.postgres.next_xid) / stats::u64_f64(measured.phase.cycles.max(1))
                    ),
                )
            };
            println!(
                "{:<14} {:>9} {:>9.0} {:>12} {:>12} {:>13} {:>13} {:>12}",
                measured.setup.name(),
                measured.phase.in_flight,
                measured.phase.cycles_per_second(),
                ms(latency.p50),
                ms(latency.p99),
                format!("{:.0} µs", askgate.as_secs_f64() * 1e6),
                postgres_cpu,
                writes
            );
        }
        println!();
        println!("targets (issue 28): ratio, bound, verdict");
        for target in self.targets() {
            let met = if target.at_least {
                target.ratio >= target.bound
            } else {
                target.ratio <= target.bound
            };
            println!(
                "  {:<100} {:>6.2} {} {:<4} {}",
                target.what,
                target.ratio,
                if target.at_least { "≥" } else { "≤" },
                target.bound,
                verdict(met)
            );
        }
    }
}
