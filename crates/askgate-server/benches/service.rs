//! The service benchmark: full ask → wait → answer cycles through the real
//! service, next to floors measured in the same run.
//!
//! The service is built in-process the way `askgate serve` wires it — a
//! `SqliteStore` on a file (under cargo's target tmp directory, so on disk
//! rather than on a tmpfs), an engine on the system clock with one web
//! channel and one recipient, its timers, and `askgate_server::serve` on a
//! loopback listener (`service/app.rs`) — and driven over real HTTP with one
//! shared `reqwest` client. askgate runs on one tokio runtime, the client on
//! another whose threads are named, so that the CPU time of the two is told
//! apart.
//!
//! 1. Floors (`service/floors.rs`), on the same disk and loopback: plain
//!    SQLite on a file of its own in the same directory (WAL,
//!    `synchronous = FULL`), one `INSERT` per transaction (commits/s) and 32
//!    per transaction (rows/s); sequential round trips to a bare axum server
//!    answering an empty 200, and to askgate's `GET /healthz`.
//! 2. Memory per pending question: `VmRSS` before and after creating some
//!    pending questions (32 requests in flight, no session); measured before
//!    the cycles, and they stay pending throughout.
//! 3. Cycles (`service/cycles.rs`) with 1, 32, 256 and 1,000 in flight: each
//!    worker loops create → wait (`?wait=60`) + answer on the web page's API
//!    → the agent's wait returns, checked to hold exactly the answer given.
//!    After a warm-up, a window counts cycles/s, askgate's commits (fsyncs)
//!    per cycle and CPU time per cycle (`/proc/self/task/*/stat`), and
//!    collects latencies: for each cycle whose answer was sent within the
//!    window, the instant its waiting agent had the response minus the
//!    instant the answer's POST was sent (the headline figure), and minus
//!    the instant the answer's POST returned (clamped at zero: the engine
//!    wakes the agent before the answer's response is written, so the agent
//!    is often first; those are counted).
//!
//! Targets (issue 14) are printed as ratios with a verdict and never fail the
//! run; a lost or wrong answer, a failed request or a question left pending
//! does.
//!
//! The window lasts `ASKGATE_BENCH_SECONDS` (default 5) per phase. Run with
//! `cargo bench -p askgate-server --bench service`. Under
//! `cargo test --benches` or `cargo bench -- --test` (criterion's convention:
//! `--test` given, or `--bench` absent) it runs with 4 and 32 in flight for a
//! fraction of a second each and checks correctness only.

#![allow(clippy::print_stdout, reason = "a benchmark's job is to print its figures")]

#[path = "service/app.rs"]
mod app;
#[path = "service/client.rs"]
mod client;
#[path = "service/cycles.rs"]
mod cycles;
#[path = "service/floors.rs"]
mod floors;
#[path = "service/stats.rs"]
mod stats;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::app::Service;
use crate::client::Client;
use crate::cycles::{Phase, Timing};
use crate::floors::{BareServer, GROUP, SqliteFloors};
use crate::stats::{Summary, as_f64, mib, ms, u64_f64, verdict};

/// The allocator `askgate serve` runs on (`crates/askgate/src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// The cycles in flight of the phases: one alone (latency without queueing),
/// then loads that queue.
const IN_FLIGHT: [usize; 4] = [1, 32, 256, 1000];
/// The phase the targets are read at.
const TARGET_IN_FLIGHT: usize = 256;
/// Targets (issue 14).
const TARGET_CYCLES_PER_SECOND: f64 = 3000.0;
const TARGET_OF_STORAGE_CEILING: f64 = 0.5;
const TARGET_P99_TO_ROUND_TRIP: f64 = 3.0;
/// Requests in flight while creating the pending questions of the memory figure.
const CREATE_IN_FLIGHT: usize = 32;
/// The window per phase when `ASKGATE_BENCH_SECONDS` is not set.
const DEFAULT_WINDOW_SECONDS: u64 = 5;
/// The longest the whole benchmark may take.
const RUN_LIMIT: Duration = Duration::from_secs(15 * 60);

/// How much of everything to do.
#[derive(Debug, Clone)]
struct Plan {
    test_mode: bool,
    in_flight: Vec<usize>,
    timing: Timing,
    round_trips: usize,
    floor_time: Duration,
    memory_pending: usize,
}

impl Plan {
    fn from_environment() -> Result<Self> {
        let test_mode = askgate_testkit::bench::test_mode();
        if test_mode {
            return Ok(Self {
                test_mode,
                in_flight: vec![4, 32],
                timing: Timing {
                    warmup: Duration::from_millis(100),
                    window: Duration::from_millis(400),
                },
                round_trips: 20,
                floor_time: Duration::from_millis(100),
                memory_pending: 20,
            });
        }
        let seconds = match std::env::var("ASKGATE_BENCH_SECONDS") {
            Ok(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&seconds| seconds > 0)
                .ok_or_else(|| format!("ASKGATE_BENCH_SECONDS must be a positive whole number, not {text:?}"))?,
            Err(_) => DEFAULT_WINDOW_SECONDS,
        };
        Ok(Self {
            test_mode,
            in_flight: IN_FLIGHT.to_vec(),
            timing: Timing {
                warmup: Duration::from_secs(1),
                window: Duration::from_secs(seconds),
            },
            round_trips: 2000,
            floor_time: Duration::from_secs(2),
            memory_pending: 2000,
        })
    }
}

fn main() -> Result<()> {
    // As `askgate serve` runs (`crates/askgate/src/main.rs`): transparent
    // huge pages off; a kernel without them refuses, which changes nothing.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    let plan = Plan::from_environment()?;
    check_open_files(plan.in_flight.iter().copied().max().unwrap_or(0))?;
    let (server, client) = stats::runtimes()?;
    let dir = tempfile::Builder::new()
        .prefix("askgate-bench-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let service = server.block_on(Service::start(dir.path()))?;
    let bare = server.block_on(BareServer::start())?;
    let outcome = client.block_on(async {
        tokio::time::timeout(RUN_LIMIT, measure(&plan, &service, &bare, dir.path()))
            .await
            .map_err(|_| format!("the benchmark did not finish within {RUN_LIMIT:?}"))?
    });
    bare.stop();
    server.block_on(service.stop());
    let report = outcome?;
    report.print(
        &plan,
        &format!("SQLite on {}", askgate_testkit::bench::filesystem_of(dir.path())),
    );
    if let Some(problem) = report.problem() {
        return Err(problem.into());
    }
    if plan.test_mode {
        println!(
            "test mode: all {} cycles complete, every waiting agent saw exactly its answer, none of them left pending",
            report.phases.iter().map(|phase| phase.checked).sum::<usize>()
        );
    }
    Ok(())
}

/// Every cycle in flight holds two connections (the agent's wait, and the
/// create or the answer), whose two ends are both in this process.
fn check_open_files(in_flight: usize) -> Result<()> {
    let needed = 4 * in_flight + 4 * CREATE_IN_FLIGHT + 256;
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<usize>().ok());
    match soft {
        Some(soft) if soft < needed => Err(format!(
            "{in_flight} cycles in flight need about {needed} open files (both ends of each connection), but the \
             limit is {soft}: raise it (ulimit -n)"
        )
        .into()),
        _ => Ok(()),
    }
}

/// Everything measured.
struct Report {
    sqlite: SqliteFloors,
    bare: Vec<std::time::Duration>,
    healthz: Vec<std::time::Duration>,
    phases: Vec<Phase>,
    pending_after_cycles: u64,
    memory_pending: usize,
    rss_pending: (u64, u64),
}

async fn measure(plan: &Plan, service: &Service, bare: &BareServer, dir: &std::path::Path) -> Result<Report> {
    let http = Client::http()?;
    let askgate = Arc::new(Client::new(http.clone(), format!("http://{}", service.address)));
    let bare_client = Client::new(http, format!("http://{}", bare.address));

    let sqlite = floors::sqlite(dir, plan.floor_time).await?;
    let bare = floors::round_trips(&bare_client, "/", plan.round_trips).await?;
    let healthz = floors::round_trips(&askgate, "/healthz", plan.round_trips).await?;
    askgate.get_ok("/readyz").await?;

    // Before the cycles, whose thousands of connections leave the allocator
    // room enough to hide the growth. These stay pending throughout.
    let rss_before = askgate_testkit::bench::vm_rss("self")?;
    create_pending(&askgate, plan.memory_pending).await?;
    let rss_after = askgate_testkit::bench::vm_rss("self")?;

    let mut phases = Vec::with_capacity(plan.in_flight.len());
    for &in_flight in &plan.in_flight {
        phases.push(cycles::run(&askgate, &askgate, service, in_flight, plan.timing).await?);
    }
    let pending_after_cycles = service.count_pending().await?;
    Ok(Report {
        sqlite,
        bare,
        healthz,
        phases,
        pending_after_cycles,
        memory_pending: plan.memory_pending,
        rss_pending: (rss_before, rss_after),
    })
}

/// Creates `count` pending questions, no session, `CREATE_IN_FLIGHT` at a time.
async fn create_pending(client: &Arc<Client>, count: usize) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..CREATE_IN_FLIGHT.min(count) {
        let (client, next) = (client.clone(), next.clone());
        workers.spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return Ok::<(), Error>(());
                }
                client.create(None, &format!("pending-{index}")).await?;
            }
        });
    }
    while let Some(worker) = workers.join_next().await {
        worker??;
    }
    Ok(())
}

impl Report {
    fn print(&self, plan: &Plan, store_note: &str) {
        let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        if plan.test_mode {
            println!("(test mode: tiny phases; the figures below mean nothing)");
        }
        println!(
            "askgate service benchmark: {cores} cores, {store_note}, WAL, synchronous = FULL (each answer is fsynced \
             before it is acknowledged), loopback HTTP/1.1, askgate and its client in one process"
        );
        println!();
        let floors = &self.sqlite;
        let bare = Summary::of(&self.bare);
        let healthz = Summary::of(&self.healthz);
        println!(
            "floors, measured in this run on the same disk and loopback (plain SQLite on a file of its own; axum):"
        );
        println!(
            "  {:<58} {:>10.0} commits/s ({} commits, {:.3} ms each)",
            "SQLite, 1 INSERT per transaction, sequential",
            floors.single_commits_per_second,
            floors.single_commits,
            1000.0 / floors.single_commits_per_second
        );
        println!(
            "  {:<58} {:>10.0} rows/s    ({} commits, {:.0} commits/s)",
            format!("SQLite, {GROUP} INSERTs per transaction, sequential"),
            floors.group_rows_per_second,
            floors.group_commits,
            floors.group_rows_per_second / as_f64(GROUP)
        );
        for (name, summary) in [
            ("bare loopback HTTP round trip (empty 200), sequential", bare),
            ("askgate GET /healthz round trip, sequential", healthz),
        ] {
            println!(
                "  {name:<58} p50 {:>10}  p99 {:>10}  ({} round trips)",
                ms(summary.p50),
                ms(summary.p99),
                summary.count
            );
        }
        println!();
        println!(
            "full ask -> wait -> answer cycles: {} s window after {} s of warm-up per phase; every cycle's agent is \
             checked to get exactly its answer",
            plan.timing.window.as_secs_f64(),
            plan.timing.warmup.as_secs_f64()
        );
        self.print_phases(bare);
        println!();
        self.print_targets(bare);
        println!();
        let (before, after) = self.rss_pending;
        println!(
            "memory per pending question: {:.0} bytes (VmRSS {:.1} MiB -> {:.1} MiB over {} questions; includes \
             SQLite page cache growth and allocator slack, and the client's side)",
            u64_f64(after.saturating_sub(before)) / as_f64(self.memory_pending),
            mib(before),
            mib(after),
            self.memory_pending,
        );
    }

    fn print_phases(&self, bare: Summary) {
        let row = |name: &str, cells: Vec<String>| {
            let mut line = format!("  {name:<52}");
            for cell in &cells {
                let _ = write!(line, " {cell:>16}");
            }
            println!("{line}");
        };
        let each = |value: &dyn Fn(&Phase) -> String| self.phases.iter().map(value).collect::<Vec<_>>();
        row("in flight", each(&|phase| format!("{} in flight", phase.in_flight)));
        row(
            "cycles in the window (all checked, whole phase)",
            each(&|phase| format!("{} ({})", phase.cycles, phase.checked)),
        );
        row("cycles/s", each(&|phase| format!("{:.0}", phase.cycles_per_second())));
        row(
            "commits (fsyncs) per cycle",
            each(&|phase| format!("{:.2}", phase.commits_per_cycle())),
        );
        row(
            "CPU per cycle, whole process",
            each(&|phase| format!("{:.0} us", phase.cpu_per_cycle().0.as_secs_f64() * 1e6)),
        );
        row(
            "CPU per cycle, askgate (client threads excluded)",
            each(&|phase| format!("{:.0} us", phase.cpu_per_cycle().1.as_secs_f64() * 1e6)),
        );
        let summaries = |pick: &dyn Fn(&Phase) -> &Vec<Duration>| -> Vec<Summary> {
            self.phases.iter().map(|phase| Summary::of(pick(phase))).collect()
        };
        let sent = summaries(&|phase| &phase.sent_to_agent);
        let returned = summaries(&|phase| &phase.returned_to_agent);
        let post = summaries(&|phase| &phase.answer_post);
        let cycle = summaries(&|phase| &phase.cycle);
        for (name, rows) in [
            ("answer POST sent -> waiting agent has it", &sent),
            ("answer POST returned -> waiting agent has it (>= 0)", &returned),
            ("answer POST round trip", &post),
            ("whole cycle: create sent -> agent has its answer", &cycle),
        ] {
            row(&format!("{name}, p50"), rows.iter().map(|s| ms(s.p50)).collect());
            row("  p99", rows.iter().map(|s| ms(s.p99)).collect());
            row("  max", rows.iter().map(|s| ms(s.max)).collect());
        }
        row(
            "  agent had it before the answer POST returned",
            each(&|phase| format!("{} of {}", phase.agent_first, phase.returned_to_agent.len())),
        );
        row(
            "p99 sent -> agent / bare round trip p99",
            sent.iter().map(|s| ratio(s.p99, bare.p99)).collect(),
        );
        row(
            "cycles/s / storage ceiling (see targets)",
            each(&|phase| {
                let ceiling = self.storage_ceiling(phase);
                format!("{:.2}", phase.cycles_per_second() / ceiling)
            }),
        );
    }

    /// The storage ceiling of cycles/s: the group-commit floor's rows/s
    /// divided by the commits askgate makes per cycle.
    fn storage_ceiling(&self, phase: &Phase) -> f64 {
        self.sqlite.group_rows_per_second / phase.commits_per_cycle().max(f64::MIN_POSITIVE)
    }

    fn print_targets(&self, bare: Summary) {
        let Some(phase) = self
            .phases
            .iter()
            .find(|phase| phase.in_flight == TARGET_IN_FLIGHT)
            .or_else(|| self.phases.last())
        else {
            return;
        };
        let k = phase.in_flight;
        let rate = phase.cycles_per_second();
        println!("targets, at {k} in flight (printed, not enforced):");
        println!(
            "  cycles/s >= {TARGET_CYCLES_PER_SECOND:.0}: {rate:.0}/s = {:.2}x the target -> {}",
            rate / TARGET_CYCLES_PER_SECOND,
            verdict(rate >= TARGET_CYCLES_PER_SECOND)
        );
        let ceiling = self.storage_ceiling(phase);
        let of_ceiling = rate / ceiling;
        println!(
            "  cycles/s >= {TARGET_OF_STORAGE_CEILING} x storage ceiling: ceiling = {:.0} rows/s ({GROUP}-row group \
             commit floor) / {:.2} commits per cycle = {ceiling:.0}/s; {rate:.0}/s = {of_ceiling:.2}x -> {}",
            self.sqlite.group_rows_per_second,
            phase.commits_per_cycle(),
            verdict(of_ceiling >= TARGET_OF_STORAGE_CEILING)
        );
        let fsync_ceiling =
            self.sqlite.group_rows_per_second / as_f64(GROUP) / phase.commits_per_cycle().max(f64::MIN_POSITIVE);
        println!(
            "    (for comparison, not a target: the fsync-bound ceiling, {:.0} group-commit floor commits/s / {:.2} \
             commits per cycle = {fsync_ceiling:.0}/s; {rate:.0}/s = {:.2}x. With group commit the commits per cycle \
             fall as load rises, and both ceilings rise with them.)",
            self.sqlite.group_rows_per_second / as_f64(GROUP),
            phase.commits_per_cycle(),
            rate / fsync_ceiling
        );
        let p99 = Summary::of(&phase.sent_to_agent).p99;
        let to_round_trip = p99.as_secs_f64() / bare.p99.as_secs_f64().max(f64::MIN_POSITIVE);
        println!(
            "  answer sent -> agent p99 <= {TARGET_P99_TO_ROUND_TRIP} x bare loopback round trip p99: {} = \
             {to_round_trip:.1}x {} -> {}",
            ms(p99),
            ms(bare.p99),
            verdict(to_round_trip <= TARGET_P99_TO_ROUND_TRIP)
        );
    }

    /// What went wrong, if anything: a wrong or lost answer, a question left
    /// pending, a phase without cycles.
    fn problem(&self) -> Option<String> {
        let mut problems = Vec::new();
        for phase in &self.phases {
            if phase.wrong > 0 {
                problems.push(format!(
                    "{} in flight: {} of {} agents did not get exactly their answer (first: {})",
                    phase.in_flight,
                    phase.wrong,
                    phase.checked,
                    phase.problems.join("; ")
                ));
            }
            if phase.checked == 0 || phase.cycles == 0 {
                problems.push(format!(
                    "{} in flight: no cycle completed in the window",
                    phase.in_flight
                ));
            }
        }
        if self.pending_after_cycles != u64::try_from(self.memory_pending).unwrap_or(u64::MAX) {
            problems.push(format!(
                "{} questions are pending after the cycles, not the {} created for the memory figure",
                self.pending_after_cycles, self.memory_pending
            ));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

fn ratio(value: Duration, baseline: Duration) -> String {
    if baseline.is_zero() {
        return "-".to_owned();
    }
    format!("{:.1}x", value.as_secs_f64() / baseline.as_secs_f64())
}
