//! The service benchmark: N concurrent questions through the real service.
//!
//! The service is built in-process the way `askgate serve` wires it — a
//! [`SqliteStore`] on a file (under cargo's target tmp directory, so on disk
//! rather than on a tmpfs), an [`Engine`] on the system clock with one
//! [`WebChannel`] and one recipient, its timers, and
//! [`askgate_server::serve`] on a loopback listener — and driven over real
//! HTTP with one shared `reqwest` client.
//!
//! 1. Baselines, measured on the same server and client in the same run:
//!    sequential `GET /healthz` round trips, sequential question creations
//!    (`POST /v1/questions`), and web answers with nobody waiting, both
//!    sequential and 32 in flight (the latter also gives a throughput).
//! 2. Memory per pending question: `VmRSS` before and after creating N
//!    pending questions (32 requests in flight).
//! 3. Throughput and latency: every one of the N questions has a waiting
//!    agent (`GET /v1/questions/{id}?wait=60`, all N at once), then all are
//!    answered through the web page's API (32 in flight). For each question
//!    the latency is the instant its waiting agent had the response minus
//!    the instant the answer's POST returned (clamped at zero: the engine
//!    wakes the agent before the answer's response is written, so the agent
//!    is often first; those are counted), and, never negative, minus the
//!    instant the answer's POST was sent. Latencies are also printed as
//!    ratios to the `/healthz` round trip.
//!
//! N comes from `ASKGATE_BENCH_N` (default 1000). Run with
//! `cargo bench -p askgate-server --bench service`. Under
//! `cargo test --benches` or `cargo bench -- --test` (criterion's convention:
//! `--test` given, or `--bench` absent) it runs with N = 10 and checks that
//! every question was answered and every agent saw it.

#![allow(clippy::print_stdout, reason = "a benchmark's job is to print its figures")]

use std::future::Future;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_core::Locale;
use askgate_core::channel::{Channel, Destination};
use askgate_engine::{Clock, Engine, Recipient};
use askgate_server::{AgentToken, Allowed, AppState, Metrics, ServerSettings, WebChannel, WebKey};
use askgate_store::{SqliteStore, Store};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

const AGENT: &str = "bench-agent";
const AGENT_TOKEN: &str = "agt_bench0123456789abcdefghijklmnopqrstuvwxyz";
const WEB_KEY: &str = "benchkey0123456789abcdefghijklmnopqrstuvwx";
const RECIPIENT: &str = "alice";
const CHANNEL: &str = "web";

/// N when `ASKGATE_BENCH_N` is not set.
const DEFAULT_N: usize = 1000;
/// N in test mode.
const TEST_N: usize = 10;
/// Requests in flight while creating and while answering.
const IN_FLIGHT: usize = 32;
/// The `?wait=` of the waiting agents.
const WAIT_SECONDS: u64 = 60;
/// The longest any ordinary request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a waiting agent's request may take.
const LONG_POLL_TIMEOUT: Duration = Duration::from_secs(WAIT_SECONDS + 30);
/// Waiting agents are started this many at a time, so that the listener's
/// accept queue does not overflow (dropped SYNs are retried after a second).
const LAUNCH_BATCH: usize = 256;
/// The longest the whole benchmark may take.
const RUN_LIMIT: Duration = Duration::from_secs(15 * 60);

/// How much of everything to do.
#[derive(Debug, Clone, Copy)]
struct Plan {
    test_mode: bool,
    n: usize,
    healthz_rounds: usize,
    baseline_rounds: usize,
}

impl Plan {
    fn from_environment() -> Result<Self> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let test_mode = args.iter().any(|arg| arg == "--test") || !args.iter().any(|arg| arg == "--bench");
        if test_mode {
            return Ok(Self {
                test_mode,
                n: TEST_N,
                healthz_rounds: 20,
                baseline_rounds: 5,
            });
        }
        let n = match std::env::var("ASKGATE_BENCH_N") {
            Ok(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("ASKGATE_BENCH_N must be a positive whole number, not {text:?}"))?,
            Err(_) => DEFAULT_N,
        };
        Ok(Self {
            test_mode,
            n,
            healthz_rounds: 2000,
            baseline_rounds: 200,
        })
    }
}

fn main() -> Result<()> {
    let plan = Plan::from_environment()?;
    check_open_files(plan.n)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        tokio::time::timeout(RUN_LIMIT, run(plan))
            .await
            .map_err(|_| format!("the benchmark did not finish within {RUN_LIMIT:?}"))?
    })
}

/// Every waiting agent holds a connection, whose two ends are two file
/// descriptors of this process.
fn check_open_files(n: usize) -> Result<()> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<usize>().ok());
    match soft {
        Some(soft) if soft < 2 * n + 2 * IN_FLIGHT + 256 => Err(format!(
            "N = {n} waiting agents need about {} open files (both ends of each connection), but the limit is {soft}: \
             raise it (ulimit -n) or lower ASKGATE_BENCH_N",
            2 * n + 2 * IN_FLIGHT + 256
        )
        .into()),
        _ => Ok(()),
    }
}

async fn run(plan: Plan) -> Result<()> {
    let service = Service::start().await?;
    let bench = Arc::new(Bench {
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(usize::MAX)
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(10))
            .build()?,
        base: format!("http://{}", service.address),
        sessions: std::sync::atomic::AtomicUsize::new(0),
    });
    let outcome = measure(&bench, &service, plan).await;
    let store_note = service.store_note.clone();
    service.stop().await;
    let report = outcome?;
    report.print(plan, &store_note);
    if let Some(problem) = report.problem(plan) {
        return Err(problem.into());
    }
    if plan.test_mode {
        println!(
            "test mode: all {} questions answered and every waiting agent saw its answer",
            plan.n
        );
    }
    Ok(())
}

/// The service, wired as `askgate serve` wires it.
struct Service {
    address: std::net::SocketAddr,
    store: Arc<dyn Store>,
    sqlite: SqliteStore,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    timers: JoinHandle<()>,
    store_note: String,
    _dir: tempfile::TempDir,
}

impl Service {
    async fn start() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("askgate-bench-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let path = dir.path().join("askgate.db");
        let sqlite = SqliteStore::open(&path).await?;
        let store: Arc<dyn Store> = Arc::new(sqlite.clone());
        let channels: Vec<Arc<dyn Channel>> = vec![Arc::new(WebChannel::new(CHANNEL))];
        let recipients = vec![Recipient {
            name: RECIPIENT.to_owned(),
            display_name: "Alice".to_owned(),
            channel: CHANNEL.to_owned(),
            destination: Destination {
                conversation: RECIPIENT.to_owned(),
                thread: None,
            },
            answerers: Vec::new(),
            locale: Locale::En,
        }];
        let metrics = Arc::new(Metrics::new());
        let engine = Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone());
        engine.start().await?;
        metrics.set_pending(store.pending().await.map_or(0, |pending| pending.len()));
        let settings = ServerSettings {
            agents: vec![AgentToken {
                name: AGENT.to_owned(),
                token: AGENT_TOKEN.to_owned(),
                allowed: Allowed::All,
            }],
            web_keys: vec![WebKey {
                key: WEB_KEY.to_owned(),
                recipient: RECIPIENT.to_owned(),
            }],
            ..ServerSettings::default()
        };
        let (stop, stopping) = watch::channel(false);
        let state = AppState::new(engine.clone(), metrics, settings, stopping.clone());
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let timers = {
            let mut stopped = stopping.clone();
            tokio::spawn(async move {
                engine
                    .run_timers(async move {
                        let _ = stopped.wait_for(|stop| *stop).await;
                    })
                    .await;
            })
        };
        let mut stopped = stopping;
        let server = tokio::spawn(askgate_server::serve(listener, state, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }));
        let store_note = format!("SQLite on {}", filesystem_of(dir.path()));
        Ok(Self {
            address,
            store,
            sqlite,
            stop,
            server,
            timers,
            store_note,
            _dir: dir,
        })
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        let limit = Duration::from_secs(10);
        let _ = tokio::time::timeout(limit, self.server).await;
        let _ = tokio::time::timeout(limit, self.timers).await;
        let _ = tokio::time::timeout(limit, self.sqlite.close()).await;
    }

    /// Connections the server has accepted and holds open now (from
    /// `/proc/self/net/tcp`: established, local port ours, with an inode —
    /// a connection still in the accept queue has none).
    fn accepted_connections(&self) -> usize {
        let port = format!(":{:04X}", self.address.port());
        let table = std::fs::read_to_string("/proc/self/net/tcp").unwrap_or_default();
        table
            .lines()
            .skip(1)
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.len() > 9 && fields[1].ends_with(&port) && fields[3] == "01" && fields[9] != "0"
            })
            .count()
    }
}

/// The filesystem type of the mount that holds `path`, from `/proc/self/mountinfo`.
fn filesystem_of(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(separator) = fields.iter().position(|field| *field == "-") else {
            continue;
        };
        let (Some(mount_point), Some(kind)) = (fields.get(4), fields.get(separator + 1)) else {
            continue;
        };
        if path.starts_with(mount_point) && best.as_ref().is_none_or(|(len, _)| mount_point.len() >= *len) {
            best = Some((mount_point.len(), (*kind).to_owned()));
        }
    }
    best.map_or_else(|| "an unknown filesystem".to_owned(), |(_, kind)| kind)
}

/// The client side.
struct Bench {
    client: reqwest::Client,
    base: String,
    sessions: std::sync::atomic::AtomicUsize,
}

impl Bench {
    async fn healthz(&self) -> Result<()> {
        let response = self
            .client
            .get(format!("{}/healthz", self.base))
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        if status != reqwest::StatusCode::OK {
            return Err(format!("GET /healthz: HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        Ok(())
    }

    async fn readyz(&self) -> Result<()> {
        let response = self
            .client
            .get(format!("{}/readyz", self.base))
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let _ = response.bytes().await?;
        if status != reqwest::StatusCode::OK {
            return Err(format!("GET /readyz: HTTP {status}").into());
        }
        Ok(())
    }

    /// Creates a pending question in a session of its own; returns its id.
    async fn create(&self) -> Result<String> {
        let session = self.sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let body = json!({
            "to": RECIPIENT,
            "sessionId": format!("bench-session-{session}"),
            "questions": [{
                "id": "deploy_target",
                "header": "Deploy",
                "question": format!("Where should build {session} go?"),
                "options": [
                    {"label": "Staging (Recommended)", "description": "Safe, resets nightly"},
                    {"label": "Production", "description": "Live traffic; needs a change ticket"},
                    {"label": "Canary"}
                ]
            }],
            "timeoutSeconds": 900
        });
        let response = self
            .client
            .post(format!("{}/v1/questions", self.base))
            .bearer_auth(AGENT_TOKEN)
            .json(&body)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        if status != reqwest::StatusCode::CREATED {
            return Err(format!("POST /v1/questions: HTTP {status}: {value}").into());
        }
        match value.get("id").and_then(Value::as_str) {
            Some(id) => Ok(id.to_owned()),
            None => Err(format!("POST /v1/questions: no id in {value}").into()),
        }
    }

    /// Answers a question on the web page's API; returns the instant the
    /// response was in.
    async fn answer(&self, id: &str) -> Result<Instant> {
        let body = json!({"answers": {"deploy_target": {"options": [0], "text": null}}});
        let response = self
            .client
            .post(format!("{}/web/{WEB_KEY}/api/questions/{id}/answer", self.base))
            .json(&body)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        let returned = Instant::now();
        if status != reqwest::StatusCode::OK || value.get("status").and_then(Value::as_str) != Some("answered") {
            return Err(format!("answering {id}: HTTP {status}: {value}").into());
        }
        Ok(returned)
    }

    /// The waiting agent: returns the instant its response was in and the
    /// question's status then.
    async fn wait(&self, id: &str) -> Result<(Instant, String)> {
        let response = self
            .client
            .get(format!("{}/v1/questions/{id}?wait={WAIT_SECONDS}", self.base))
            .bearer_auth(AGENT_TOKEN)
            .timeout(LONG_POLL_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        let received = Instant::now();
        if status != reqwest::StatusCode::OK {
            return Err(format!("waiting for {id}: HTTP {status}: {value}").into());
        }
        let question = value
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("(none)")
            .to_owned();
        Ok((received, question))
    }
}

/// Times a future.
async fn timed<T>(future: impl Future<Output = Result<T>>) -> Result<(Duration, T)> {
    let start = Instant::now();
    let value = future.await?;
    Ok((start.elapsed(), value))
}

/// Runs `count` requests with `IN_FLIGHT` at a time, in order, each given
/// its index, stopping at the first error.
async fn bounded<T, F>(count: usize, request: impl Fn(usize) -> F) -> Result<Vec<T>>
where
    F: Future<Output = Result<T>>,
{
    let mut results = Vec::with_capacity(count);
    let mut stream = futures_util::stream::iter(0..count).map(request).buffered(IN_FLIGHT);
    while let Some(result) = tokio::time::timeout(REQUEST_TIMEOUT * 2, stream.next())
        .await
        .map_err(|_| "a request did not finish in time")?
    {
        results.push(result?);
    }
    Ok(results)
}

/// Waits, polling, until `done` holds or `limit` has passed.
async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return Err(format!("gave up waiting for {what} after {limit:?}").into());
        }
        // Not faster: reading the kernel's connection table costs.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The process's resident set, in bytes.
fn vm_rss() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or("no VmRSS in /proc/self/status")?;
    Ok(kib * 1024)
}

/// Waits until every question in `ids` has been delivered.
async fn delivered(service: &Service, ids: &[String]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in ids {
        loop {
            let question = askgate_core::QuestionId::parse(id).map_err(|_| format!("a bad question id {id:?}"))?;
            let record = tokio::time::timeout(REQUEST_TIMEOUT, service.store.get(&question))
                .await
                .map_err(|_| "the store did not answer in time")??
                .ok_or_else(|| format!("question {id} is not in the store"))?;
            if record.delivery.is_some() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!("question {id} was never delivered").into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

/// The baselines, measured on the same server and client.
struct Baselines {
    healthz: Vec<Duration>,
    create: Vec<Duration>,
    answer_alone: Vec<Duration>,
    answer_parallel: Vec<Duration>,
    parallel_phase: Duration,
}

async fn baselines(bench: &Arc<Bench>, service: &Service, plan: Plan) -> Result<Baselines> {
    let mut healthz = Vec::with_capacity(plan.healthz_rounds);
    for _ in 0..plan.healthz_rounds {
        healthz.push(timed(bench.healthz()).await?.0);
    }
    let mut create = Vec::with_capacity(plan.baseline_rounds);
    let mut ids = Vec::with_capacity(plan.baseline_rounds);
    for _ in 0..plan.baseline_rounds {
        let (took, id) = timed(bench.create()).await?;
        create.push(took);
        ids.push(id);
    }
    delivered(service, &ids).await?;
    let mut answer_alone = Vec::with_capacity(plan.baseline_rounds);
    for id in &ids {
        answer_alone.push(timed(bench.answer(id)).await?.0);
    }
    // The same answers with as many in flight as in phase 2, nobody waiting.
    let ids = bounded(plan.baseline_rounds, |_| bench.create()).await?;
    delivered(service, &ids).await?;
    let start = Instant::now();
    let ids = &ids;
    let answer_parallel = bounded(ids.len(), |index| async move {
        Ok(timed(bench.answer(&ids[index])).await?.0)
    })
    .await?;
    Ok(Baselines {
        healthz,
        create,
        answer_alone,
        answer_parallel,
        parallel_phase: start.elapsed(),
    })
}

/// Everything measured.
struct Report {
    baselines: Baselines,
    rss_pending: (u64, u64),
    rss_waiting: (u64, u64),
    answer_loaded: Vec<Duration>,
    to_agent: Vec<Duration>,
    sent_to_agent: Vec<Duration>,
    agent_first: usize,
    phase: Duration,
    answered: usize,
    agent_statuses: Vec<String>,
    still_pending: usize,
}

async fn measure(bench: &Arc<Bench>, service: &Service, plan: Plan) -> Result<Report> {
    let n = plan.n;

    // Warm-up: as many connections as will be in flight, and every route used.
    bounded(IN_FLIGHT * 4, |_| bench.healthz()).await?;
    bench.readyz().await?;

    let baselines = baselines(bench, service, plan).await?;

    // Phase 1: memory per pending question.
    let rss_before = vm_rss()?;
    let ids = bounded(n, |_| bench.create()).await?;
    let rss_after = vm_rss()?;
    // Let every delivery finish before agents start waiting.
    delivered(service, &ids).await?;

    // Phase 2: every question gets a waiting agent, then all are answered.
    let rss_agents_before = vm_rss()?;
    let mut agents: Vec<JoinHandle<Result<(Instant, String)>>> = Vec::with_capacity(n);
    for batch in ids.chunks(LAUNCH_BATCH) {
        for id in batch {
            let bench = bench.clone();
            let id = id.clone();
            agents.push(tokio::spawn(async move { bench.wait(&id).await }));
        }
        let launched = agents.len();
        until("the waiting agents' connections", Duration::from_secs(30), || {
            service.accepted_connections() >= launched
        })
        .await?;
    }
    // Accepted is not yet waiting: give the handlers time to read their
    // question and subscribe, then make sure the store's queue has drained.
    tokio::time::sleep(Duration::from_millis(200) + Duration::from_micros(100) * u32::try_from(n)?).await;
    bench.readyz().await?;
    if agents.iter().any(JoinHandle::is_finished) {
        return Err("a waiting agent returned before its question was answered".into());
    }
    let rss_agents_after = vm_rss()?;

    let phase_start = Instant::now();
    let answers = bounded(n, |index| {
        let bench = bench.clone();
        let id = ids[index].clone();
        async move {
            let sent = Instant::now();
            let returned = bench.answer(&id).await?;
            Ok((sent, returned))
        }
    })
    .await?;
    let mut phase_end = Instant::now();
    let mut to_agent = Vec::with_capacity(n);
    let mut sent_to_agent = Vec::with_capacity(n);
    let mut agent_first = 0;
    let mut agent_statuses = Vec::with_capacity(n);
    for (agent, (sent, returned)) in agents.into_iter().zip(&answers) {
        let (received, status) = tokio::time::timeout(LONG_POLL_TIMEOUT + Duration::from_secs(5), agent)
            .await
            .map_err(|_| "a waiting agent did not finish in time")???;
        phase_end = phase_end.max(received);
        sent_to_agent.push(received.saturating_duration_since(*sent));
        match received.checked_duration_since(*returned) {
            Some(latency) => to_agent.push(latency),
            None => {
                agent_first += 1;
                to_agent.push(Duration::ZERO);
            }
        }
        agent_statuses.push(status);
    }
    let still_pending = tokio::time::timeout(REQUEST_TIMEOUT, service.store.pending())
        .await
        .map_err(|_| "the store did not answer in time")??
        .len();
    Ok(Report {
        baselines,
        rss_pending: (rss_before, rss_after),
        rss_waiting: (rss_agents_before, rss_agents_after),
        answered: answers.len(),
        answer_loaded: answers
            .iter()
            .map(|(sent, returned)| returned.saturating_duration_since(*sent))
            .collect(),
        to_agent,
        sent_to_agent,
        agent_first,
        phase: phase_end - phase_start,
        agent_statuses,
        still_pending,
    })
}

/// Nearest-rank percentiles of some samples.
struct Summary {
    count: usize,
    p50: Duration,
    p90: Duration,
    p99: Duration,
    max: Duration,
}

impl Summary {
    fn of(samples: &[Duration]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        // The smallest sample with at least `per_mille` ‰ of them at or below it.
        let at = |per_mille: usize| -> Duration {
            let rank = (sorted.len() * per_mille).div_ceil(1000).max(1);
            sorted.get(rank - 1).copied().unwrap_or_default()
        };
        Self {
            count: sorted.len(),
            p50: at(500),
            p90: at(900),
            p99: at(990),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

#[allow(clippy::cast_precision_loss, reason = "counts here are far below 2^52")]
fn as_f64(count: usize) -> f64 {
    count as f64
}

#[allow(clippy::cast_precision_loss, reason = "byte sizes here are far below 2^52")]
fn bytes_f64(bytes: u64) -> f64 {
    bytes as f64
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

fn ratio(value: Duration, baseline: Duration) -> String {
    if baseline.is_zero() {
        return "-".to_owned();
    }
    format!("{:.1}x", value.as_secs_f64() / baseline.as_secs_f64())
}

impl Report {
    fn print(&self, plan: Plan, store_note: &str) {
        let n = plan.n;
        let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        if plan.test_mode {
            println!("(test mode: N = {n}; the figures below mean nothing)");
        }
        println!(
            "askgate service benchmark: N = {n} questions, {cores} cores, {store_note}, synchronous = FULL \
             (each answer is fsynced before it is acknowledged), {IN_FLIGHT} requests in flight, loopback HTTP/1.1"
        );
        println!();
        let base = &self.baselines;
        let healthz = Summary::of(&base.healthz);
        let rows = [
            ("GET /healthz round trip (baseline)", Summary::of(&base.healthz)),
            ("POST /v1/questions, sequential", Summary::of(&base.create)),
            (
                "POST web answer, sequential, nobody waiting",
                Summary::of(&base.answer_alone),
            ),
            (
                "POST web answer, 32 in flight, nobody waiting",
                Summary::of(&base.answer_parallel),
            ),
            (
                "POST web answer, 32 in flight, N agents wait",
                Summary::of(&self.answer_loaded),
            ),
            (
                "answer POST returned -> waiting agent has it",
                Summary::of(&self.to_agent),
            ),
            (
                "answer POST sent -> waiting agent has it",
                Summary::of(&self.sent_to_agent),
            ),
        ];
        println!(
            "{:<46} {:>6} {:>11} {:>11} {:>11} {:>11} {:>9} {:>9}",
            "measurement", "count", "p50", "p90", "p99", "max", "p50/hz", "p99/hz"
        );
        for (name, summary) in &rows {
            println!(
                "{name:<46} {:>6} {:>11} {:>11} {:>11} {:>11} {:>9} {:>9}",
                summary.count,
                ms(summary.p50),
                ms(summary.p90),
                ms(summary.p99),
                ms(summary.max),
                ratio(summary.p50, healthz.p50),
                ratio(summary.p99, healthz.p99),
            );
        }
        println!();
        let throughput = as_f64(self.answered) / self.phase.as_secs_f64();
        let alone = as_f64(base.answer_parallel.len()) / base.parallel_phase.as_secs_f64();
        println!(
            "throughput: {throughput:.0} answered questions/s with N agents waiting ({} answered in {:.3} s, first \
             answer POST to last agent response); {alone:.0}/s with nobody waiting ({} answered in {:.3} s); ratio \
             {:.2}",
            self.answered,
            self.phase.as_secs_f64(),
            base.answer_parallel.len(),
            base.parallel_phase.as_secs_f64(),
            throughput / alone,
        );
        println!(
            "agent had its answer before the answer's POST returned: {} of {n} (counted as 0 ms above)",
            self.agent_first
        );
        let (before, after) = self.rss_pending;
        let grown = after.saturating_sub(before);
        println!(
            "memory per pending question: {:.0} bytes (VmRSS {:.1} MiB -> {:.1} MiB over {n} questions; includes \
             SQLite page cache growth and allocator slack, and the client's copy of each id)",
            bytes_f64(grown) / as_f64(n),
            bytes_f64(before) / 1_048_576.0,
            bytes_f64(after) / 1_048_576.0,
        );
        let (before, after) = self.rss_waiting;
        println!(
            "memory per waiting agent: {:.0} bytes (VmRSS {:.1} MiB -> {:.1} MiB for {n} long polls; both ends of \
             each connection, client and server, are in this process)",
            bytes_f64(after.saturating_sub(before)) / as_f64(n),
            bytes_f64(before) / 1_048_576.0,
            bytes_f64(after) / 1_048_576.0,
        );
    }

    /// What went wrong, if anything: a question not answered, an agent that
    /// did not see its answer.
    fn problem(&self, plan: Plan) -> Option<String> {
        let not_answered = self
            .agent_statuses
            .iter()
            .filter(|status| status.as_str() != "answered")
            .count();
        let mut problems = Vec::new();
        if self.answered != plan.n {
            problems.push(format!("{} of {} answers were accepted", self.answered, plan.n));
        }
        if self.agent_statuses.len() != plan.n || not_answered > 0 {
            let first = self
                .agent_statuses
                .iter()
                .find(|status| status.as_str() != "answered")
                .map_or("", String::as_str);
            problems.push(format!(
                "{not_answered} of {} waiting agents got a question that was not answered (first: {first:?})",
                self.agent_statuses.len()
            ));
        }
        if self.still_pending > 0 {
            problems.push(format!(
                "{} questions are still pending in the store",
                self.still_pending
            ));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}
