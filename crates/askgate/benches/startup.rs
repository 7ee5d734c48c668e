//! The start-up benchmark: the real `askgate` binary restarted on N pending
//! questions.
//!
//! It writes a configuration into a temporary directory under cargo's target
//! tmp directory (on disk, not a tmpfs): one agent token, one recipient on
//! the web channel with a fixed web key, and `[limits]` raised to
//! `u32::MAX` per agent and per recipient (the defaults, 10,000 and 1,000,
//! would refuse most of the N questions with `429 too_many_pending`). Then:
//!
//! 1. starts `askgate serve` on it (the baseline: time to ready and RSS with
//!    an empty store), creates N pending questions through
//!    `POST /v1/questions` (256 in flight, `timeoutSeconds` 3600, the
//!    longest, so that none expires) and reads the process's `VmRSS`;
//! 2. stops it (`SIGTERM`, waits for it to exit), starts it again on the same
//!    data and measures the time from spawn to the first `GET /readyz` 200
//!    (polled every 2 ms once the process has printed its port) and the
//!    `VmRSS` once ready; checks that the restarted process counts N pending
//!    (the `questions_pending` gauge of `/metrics`);
//! 3. reads `GET /web/{key}/api/state` on the restarted process
//!    sequentially: the response's size and its time (median and max).
//!
//! Every figure is printed with its target and a verdict; a missed target
//! does not fail the run, a functional failure (the process does not start,
//! a request fails) does.
//!
//! The whole run is made twice: on SQLite (the embedded default) and on
//! PostgreSQL (`[store] kind = "postgres"`, in a schema of the run's own on
//! the test server, `askgate_testkit::postgres`).
//!
//! First, the idle footprint (issue 28): `askgate serve` on its embedded
//! default (`config/askgate.toml`, only `listen` moved to port 0), left idle
//! for a few seconds, its `VmRSS` (and how much of it is anonymous memory
//! and how much mapped file pages: the binary's code and data), beside a bare
//! `node -e "setInterval(()=>{},1000)"` measured the same way in the same
//! run. Without `node` on the PATH the floor is not measured and the
//! benchmark says so in capitals on stdout and stderr.
//!
//! N comes from `ASKGATE_BENCH_PENDING` (default 100,000). Run with
//! `cargo bench -p askgate --bench startup`. Under `cargo test --benches` or
//! `cargo bench -- --test` (criterion's convention: `--test` given, or
//! `--bench` absent) it runs with N = 200 and checks correctness only.

#![allow(clippy::print_stdout, reason = "a benchmark's job is to print its figures")]

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

/// The binary under test (cargo builds it for benches of its own package).
const ASKGATE: &str = env!("CARGO_BIN_EXE_askgate");

const AGENT_TOKEN: &str = "agt_startup_bench_0123456789abcdefghijklmnopq";
const WEB_KEY: &str = "startup-bench-web-key-0123456789abcdefghijkl";
const RECIPIENT: &str = "alice";

/// N when `ASKGATE_BENCH_PENDING` is not set.
const DEFAULT_PENDING: usize = 100_000;
/// N in test mode.
const TEST_PENDING: usize = 200;
/// Creations in flight.
const IN_FLIGHT: usize = 256;
/// The questions' timeout: the longest askgate allows, so that none expires
/// while the benchmark runs.
const TIMEOUT_SECONDS: u64 = 3600;
/// How long askgate may take to print its port and to become ready.
const START_LIMIT: Duration = Duration::from_secs(300);
/// How long askgate may take to exit after `SIGTERM`.
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// The longest one ordinary request may take (the page state of 100,000
/// pending questions is tens of megabytes).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How often `/readyz` is polled.
const READY_POLL: Duration = Duration::from_millis(2);

/// The embedded default configuration (`askgate serve` without `--config`).
const EMBEDDED_DEFAULT: &str = include_str!("../../../config/askgate.toml");
/// Its `listen` line, moved to port 0 for the idle figure.
const EMBEDDED_LISTEN: &str = "listen = \"127.0.0.1:8080\"";
/// How long a process is left idle before its memory is read.
const IDLE_SETTLE: Duration = Duration::from_secs(3);
/// The same in test mode.
const TEST_IDLE_SETTLE: Duration = Duration::from_millis(300);
/// The idle floor's process: node doing nothing but keeping a timer.
const NODE_IDLE: [&str; 2] = ["-e", "setInterval(()=>{},1000)"];

/// The targets (issue 14).
const TARGET_READY: Duration = Duration::from_secs(1);
/// Issue 28: `serve` on its embedded default idles under 15 MB.
const TARGET_IDLE_RSS: u64 = 15_000_000;
const TARGET_RSS_RATIO: f64 = 2.0;
const TARGET_STATE_BYTES: usize = 100 * 1000;
const TARGET_STATE_TIME: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy)]
struct Plan {
    test_mode: bool,
    pending: usize,
    state_reads: usize,
}

impl Plan {
    fn from_environment() -> Result<Self> {
        let test_mode = askgate_testkit::bench::test_mode();
        if test_mode {
            return Ok(Self {
                test_mode,
                pending: TEST_PENDING,
                state_reads: 5,
            });
        }
        let pending = match std::env::var("ASKGATE_BENCH_PENDING") {
            Ok(text) => text
                .trim()
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("ASKGATE_BENCH_PENDING must be a positive whole number, not {text:?}"))?,
            Err(_) => DEFAULT_PENDING,
        };
        Ok(Self {
            test_mode,
            pending,
            state_reads: 20,
        })
    }
}

fn main() -> Result<()> {
    let plan = Plan::from_environment()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let idle = runtime.block_on(idle_footprint(plan))?;
    idle.print(plan);
    // The embedded default, then PostgreSQL (a schema of the run's own on
    // the test server, `askgate_testkit::postgres`).
    let report = runtime.block_on(run(plan, None))?;
    report.print(plan);
    let schema = runtime.block_on(askgate_testkit::postgres::Schema::create());
    let report = runtime.block_on(run(plan, Some(&schema)))?;
    report.print(plan);
    if plan.test_mode {
        println!(
            "test mode: on SQLite and on PostgreSQL, {} questions created, askgate restarted on them and counted \
             them, the page state read",
            plan.pending
        );
    }
    drop(runtime);
    Ok(())
}

/// A process's memory, from `/proc/<pid>/status` and `/proc/<pid>/smaps`,
/// in bytes.
#[derive(Debug, Clone, Copy)]
struct Memory {
    rss: u64,
    anonymous: u64,
    file: u64,
    /// Resident pages of the executable's own code (its executable
    /// mappings): what the start-up code's layout decides
    /// (`crates/askgate/build/layout.rs`).
    code: u64,
}

impl Memory {
    fn of(pid: u32) -> Result<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let field = |name: &str| -> Result<u64> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .ok_or_else(|| format!("no {name} in /proc/{pid}/status").into())
        };
        Ok(Self {
            rss: field("VmRSS:")?,
            anonymous: field("RssAnon:")?,
            file: field("RssFile:")?,
            code: Self::code_of(pid)?,
        })
    }

    /// The `Rss:` of the mappings of `/proc/<pid>/exe` that can execute.
    fn code_of(pid: u32) -> Result<u64> {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))?;
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
        let mut code = 0;
        let mut in_code = false;
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let first = fields.next().unwrap_or_default();
            if first.contains('-') && !first.ends_with(':') {
                // A mapping's header: range, permissions, offset, device,
                // inode, then the path, which may hold spaces.
                let perms = fields.next().unwrap_or_default();
                let mut rest = line;
                for _ in 0..5 {
                    rest = rest.trim_start();
                    rest = &rest[rest.find(char::is_whitespace).unwrap_or(rest.len())..];
                }
                in_code = perms.contains('x') && Path::new(rest.trim()) == exe;
            } else if in_code && first == "Rss:" {
                let kib: u64 = fields
                    .next()
                    .and_then(|kib| kib.parse().ok())
                    .ok_or("smaps: no Rss value")?;
                code += kib * 1024;
            }
        }
        Ok(code)
    }
}

/// The idle footprint: askgate on its embedded default, and node.
struct Idle {
    askgate: Memory,
    /// `None`: no `node` on the PATH.
    node: Option<Memory>,
}

/// `askgate serve` on its embedded default (port 0), idle, and a bare node
/// process, each measured after [`IDLE_SETTLE`].
async fn idle_footprint(plan: Plan) -> Result<Idle> {
    let dir = tempfile::Builder::new()
        .prefix("askgate-idle-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    if !EMBEDDED_DEFAULT.contains(EMBEDDED_LISTEN) {
        return Err(
            format!("config/askgate.toml no longer has the line {EMBEDDED_LISTEN}: update the benchmark").into(),
        );
    }
    let config = dir.path().join("askgate.toml");
    std::fs::write(
        &config,
        EMBEDDED_DEFAULT.replace(EMBEDDED_LISTEN, "listen = \"127.0.0.1:0\""),
    )?;
    let client = reqwest::Client::builder().no_proxy().build()?;
    let settle = if plan.test_mode { TEST_IDLE_SETTLE } else { IDLE_SETTLE };
    let (mut askgate, _) = Askgate::start(&config, dir.path(), &client).await?;
    tokio::time::sleep(settle).await;
    let memory = Memory::of(askgate.child.id())?;
    askgate.terminate().await?;
    if memory.code == 0 || memory.code > memory.file {
        return Err(format!(
            "the binary's resident code is {} bytes of {} mapped: smaps misread",
            memory.code, memory.file
        )
        .into());
    }
    let node = match Command::new("node")
        .args(NODE_IDLE)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(mut node) => {
            tokio::time::sleep(settle).await;
            let measured = Memory::of(node.id());
            let _ = node.kill();
            let _ = node.wait();
            Some(measured?)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("node -e …: {error}").into()),
    };
    Ok(Idle { askgate: memory, node })
}

impl Idle {
    fn print(&self, plan: Plan) {
        if plan.test_mode {
            println!(
                "(test mode: {} ms idle; the figures below mean nothing)",
                TEST_IDLE_SETTLE.as_millis()
            );
        }
        let line = |what: &str, memory: &Memory| {
            println!(
                "{what:<40} {:>16}   ({:.1} MiB anonymous, {:.1} MiB mapped files, of which {:.1} MiB its own code)",
                format!("{:.1} MiB", mib(memory.rss)),
                mib(memory.anonymous),
                mib(memory.file),
                mib(memory.code)
            );
        };
        println!(
            "idle footprint: askgate serve on its embedded default (SQLite, the web page, no tokens), VmRSS after {:.1} s idle",
            if plan.test_mode { TEST_IDLE_SETTLE } else { IDLE_SETTLE }.as_secs_f64()
        );
        line("askgate serve, idle", &self.askgate);
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            "  target",
            format!("{:.1} MB", as_f64_u64(self.askgate.rss) / 1e6),
            format!("< {} MB", TARGET_IDLE_RSS / 1_000_000),
            verdict(self.askgate.rss < TARGET_IDLE_RSS)
        );
        match &self.node {
            Some(node) => {
                line("  floor: node -e \"setInterval(…)\"", node);
                println!(
                    "{:<40} {:>16}",
                    "  askgate / node",
                    format!("{:.2}x", bytes_ratio(self.askgate.rss, node.rss))
                );
            }
            None => {
                let warning = "NODE IS MISSING: `node` is not on the PATH, so the idle floor (a bare node process) \
                               was NOT measured; install Node.js to compare";
                println!("{warning}");
                #[allow(
                    clippy::print_stderr,
                    reason = "said loudly on both streams, as the benchmark promises"
                )]
                {
                    eprintln!("{warning}");
                }
            }
        }
        println!();
    }
}

/// Everything measured.
struct Report {
    store_note: String,
    empty: Started,
    rss_empty: u64,
    create_time: Duration,
    rss_before: u64,
    stop_time: Duration,
    restarted: Started,
    rss_after: u64,
    state_bytes: usize,
    state_listed: Option<usize>,
    state_times: Vec<Duration>,
}

/// One run, on SQLite in the run's directory or on PostgreSQL in `schema`.
async fn run(plan: Plan, schema: Option<&askgate_testkit::postgres::Schema>) -> Result<Report> {
    let dir = tempfile::Builder::new()
        .prefix("askgate-startup-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let config = write_config(
        dir.path(),
        schema.map(askgate_testkit::postgres::Schema::url).as_deref(),
    )?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(usize::MAX)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .build()?;

    // The first process: an empty store, then N pending questions.
    let (mut first, empty) = Askgate::start(&config, dir.path(), &client).await?;
    let rss_empty = first.rss()?;
    let created = Instant::now();
    create_pending(&client, &first.base, plan.pending).await?;
    let create_time = created.elapsed();
    let rss_before = first.rss()?;
    let pending = pending_gauge(&client, &first.base).await?;
    if pending != plan.pending {
        return Err(format!(
            "after {} creations the first process counts {pending} pending",
            plan.pending
        )
        .into());
    }
    let stopping = Instant::now();
    first.terminate().await?;
    let stop_time = stopping.elapsed();

    // The restart on the same data.
    let (mut second, restarted) = Askgate::start(&config, dir.path(), &client).await?;
    let rss_after = second.rss()?;
    let pending = pending_gauge(&client, &second.base).await?;
    if pending != plan.pending {
        return Err(format!(
            "the restarted process counts {pending} pending, not the {} created",
            plan.pending
        )
        .into());
    }
    let mut state_times = Vec::with_capacity(plan.state_reads);
    let mut state_bytes = 0;
    let mut state_listed = None;
    for _ in 0..plan.state_reads {
        let sent = Instant::now();
        let body = get_ok(&client, &format!("{}/web/{WEB_KEY}/api/state", second.base)).await?;
        state_times.push(sent.elapsed());
        state_bytes = body.len();
        let value: Value =
            serde_json::from_slice(&body).map_err(|error| format!("the page state is not JSON: {error}"))?;
        state_listed = value.get("pending").and_then(Value::as_array).map(Vec::len);
    }
    if state_listed == Some(0) {
        return Err("the page state of the restarted process lists no pending question".into());
    }
    second.terminate().await?;

    Ok(Report {
        store_note: match schema {
            None => format!("SQLite on {}", askgate_testkit::bench::filesystem_of(dir.path())),
            Some(schema) => format!("PostgreSQL on the test server (schema {})", schema.name()),
        },
        empty,
        rss_empty,
        create_time,
        rss_before,
        stop_time,
        restarted,
        rss_after,
        state_bytes,
        state_listed,
        state_times,
    })
}

/// Writes the configuration (with `postgres` as its store when given);
/// returns its path.
fn write_config(dir: &Path, postgres: Option<&str>) -> Result<std::path::PathBuf> {
    let data_dir = dir.join("data");
    std::fs::create_dir_all(&data_dir)?;
    let data_dir = serde_json::to_string(data_dir.to_str().ok_or("a temporary directory that is not UTF-8")?)?;
    let cap = u32::MAX;
    let text = format!(
        r#"[server]
listen = "127.0.0.1:0"
data_dir = {data_dir}

# Raised from the defaults (10,000 per agent, 1,000 per recipient): the
# benchmark leaves N questions pending under one token for one person.
[limits]
max_pending_per_agent = {cap}
max_pending_per_recipient = {cap}

[agents.bench]
token = "{AGENT_TOKEN}"
recipients = ["*"]

[channels.web]
type = "web"

[recipients.{RECIPIENT}]
channel = "web"
display_name = "Alice"
locale = "en"
web_key = "{WEB_KEY}"
"#
    ) + &postgres.map_or_else(String::new, |url| {
        format!("\n[store]\nkind = \"postgres\"\nurl = \"{url}\"\n")
    });
    let path = dir.join("askgate.toml");
    std::fs::write(&path, text)?;
    Ok(path)
}

/// How long a start took.
struct Started {
    /// Spawn to the line `askgate listening on …` (printed once the pending
    /// questions are taken up, just before serving).
    listening: Duration,
    /// Spawn to the first `GET /readyz` 200.
    ready: Duration,
}

/// A running `askgate serve`.
struct Askgate {
    child: Child,
    base: String,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Askgate {
    fn drop(&mut self) {
        // Already gone is fine: the point is that it is not left running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Askgate {
    /// Spawns askgate and waits until `/readyz` answers 200.
    async fn start(config: &Path, dir: &Path, client: &reqwest::Client) -> Result<(Self, Started)> {
        let spawned = Instant::now();
        let mut child = Command::new(ASKGATE)
            .arg("serve")
            .arg("--config")
            .arg(config)
            .current_dir(dir)
            // askgate's own default log filter, whatever the caller's shell says.
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("{ASKGATE} does not start: {error}"))?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let mut stderr_pipe = child.stderr.take().ok_or("no stderr pipe")?;
        // The log, kept for an error message; read to its end, so that
        // askgate never blocks on a full pipe.
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                let mut buffer = [0_u8; 8192];
                while let Ok(read @ 1..) = stderr_pipe.read(&mut buffer) {
                    let mut log = stderr.lock().unwrap_or_else(PoisonError::into_inner);
                    log.push_str(&String::from_utf8_lossy(&buffer[..read]));
                    if log.len() > 64 * 1024 {
                        let cut = log.len() - 32 * 1024;
                        let cut = (cut..log.len()).find(|&at| log.is_char_boundary(at)).unwrap_or(0);
                        log.replace_range(..cut, "…");
                    }
                }
            });
        }
        let (found, listening) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("askgate listening on ")
                    && let Some(found) = found.take()
                {
                    let _ = found.send((Instant::now(), url.trim().to_owned()));
                }
            }
        });
        let mut process = Self {
            child,
            base: String::new(),
            stderr,
        };
        let (announced, url) = match tokio::task::spawn_blocking(move || listening.recv_timeout(START_LIMIT)).await? {
            Ok(found) => found,
            Err(error) => {
                return Err(process.failure(&format!("askgate did not print its listening line ({error})")));
            }
        };
        process.base = url;
        let ready = loop {
            if let Some(status) = process.child.try_wait()? {
                return Err(process.failure(&format!("askgate exited ({status}) before it was ready")));
            }
            let answer = client
                .get(format!("{}/readyz", process.base))
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await;
            if let Ok(response) = answer
                && response.status() == reqwest::StatusCode::OK
            {
                let _ = response.bytes().await;
                break spawned.elapsed();
            }
            if spawned.elapsed() > START_LIMIT {
                return Err(process.failure(&format!("askgate was not ready within {START_LIMIT:?}")));
            }
            tokio::time::sleep(READY_POLL).await;
        };
        Ok((
            process,
            Started {
                listening: announced.saturating_duration_since(spawned),
                ready,
            },
        ))
    }

    /// An error naming `what` and the end of askgate's log.
    fn failure(&mut self, what: &str) -> Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(100));
        let log = self.stderr.lock().unwrap_or_else(PoisonError::into_inner).clone();
        format!("{what}; its log:\n{log}").into()
    }

    /// The process's resident set, in bytes.
    fn rss(&self) -> Result<u64> {
        Ok(askgate_testkit::bench::vm_rss(&self.child.id().to_string())?)
    }

    /// Sends `SIGTERM` and waits for a clean exit.
    async fn terminate(&mut self) -> Result<()> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status()?;
        if !sent.success() {
            return Err(format!("kill -TERM {pid} failed: {sent}").into());
        }
        let deadline = Instant::now() + STOP_LIMIT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                if status.success() {
                    return Ok(());
                }
                return Err(self.failure(&format!("askgate exited with {status} on SIGTERM")));
            }
            if Instant::now() > deadline {
                return Err(self.failure(&format!("askgate did not exit within {STOP_LIMIT:?} of SIGTERM")));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// `GET url`, which must answer 200; its body.
async fn get_ok(client: &reqwest::Client, url: &str) -> Result<Vec<u8>> {
    let response = client.get(url).timeout(REQUEST_TIMEOUT).send().await?;
    let status = response.status();
    let body = response.bytes().await?;
    if status != reqwest::StatusCode::OK {
        let start = String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned();
        return Err(format!("GET {url}: HTTP {status}: {start}").into());
    }
    Ok(body.to_vec())
}

/// The `questions_pending` gauge of `/metrics`.
async fn pending_gauge(client: &reqwest::Client, base: &str) -> Result<usize> {
    let body = get_ok(client, &format!("{base}/metrics")).await?;
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            name.ends_with("questions_pending")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .ok_or_else(|| "no questions_pending gauge in /metrics".into())
}

/// Creates `count` pending questions with `IN_FLIGHT` requests in flight.
async fn create_pending(client: &reqwest::Client, base: &str, count: usize) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT.min(count) {
        let (client, base, next) = (client.clone(), base.to_owned(), next.clone());
        workers.spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return Ok::<(), Error>(());
                }
                create(&client, &base, index).await?;
            }
        });
    }
    while let Some(worker) = workers.join_next().await {
        if let Err(error) = worker? {
            workers.abort_all();
            return Err(error);
        }
    }
    Ok(())
}

/// Creates one pending question (no session: the one-pending-per-session
/// rule does not apply).
async fn create(client: &reqwest::Client, base: &str, index: usize) -> Result<()> {
    let body = json!({
        "to": RECIPIENT,
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": format!("Where should build {index} go?"),
            "options": [
                {"label": "Staging (Recommended)", "description": "Safe, resets nightly"},
                {"label": "Production", "description": "Live traffic; needs a change ticket"},
                {"label": "Canary"}
            ]
        }],
        "timeoutSeconds": TIMEOUT_SECONDS
    });
    let response = client
        .post(format!("{base}/v1/questions"))
        .bearer_auth(AGENT_TOKEN)
        .json(&body)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await?;
    let status = response.status();
    let value: Value = response.json().await?;
    if status != reqwest::StatusCode::CREATED || value.get("status").and_then(Value::as_str) != Some("pending") {
        return Err(format!("POST /v1/questions (question {index}): HTTP {status}: {value}").into());
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss, reason = "counts and sizes here are far below 2^52")]
fn as_f64(count: usize) -> f64 {
    count as f64
}

#[allow(clippy::cast_precision_loss, reason = "sizes here are far below 2^52")]
fn as_f64_u64(bytes: u64) -> f64 {
    bytes as f64
}

#[allow(clippy::cast_precision_loss, reason = "sizes here are far below 2^52")]
fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

impl Report {
    fn print(&self, plan: Plan) {
        let n = plan.pending;
        if plan.test_mode {
            println!("(test mode: N = {n}; the figures below mean nothing)");
        }
        let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        println!(
            "askgate start-up benchmark: the askgate binary restarted on N = {n} pending questions, {cores} cores, {}",
            self.store_note
        );
        println!();
        let rate = as_f64(n) / self.create_time.as_secs_f64();
        println!(
            "created N pending: {:.2} s, {rate:.0} creates/s ({IN_FLIGHT} in flight, POST /v1/questions)",
            self.create_time.as_secs_f64()
        );
        println!(
            "memory per pending question: {:.0} bytes (VmRSS {:.1} MiB ready with an empty store -> {:.1} MiB with N \
             pending, before the restart)",
            mib(self.rss_before.saturating_sub(self.rss_empty)) * 1_048_576.0 / as_f64(n),
            mib(self.rss_empty),
            mib(self.rss_before),
        );
        println!("SIGTERM to exit: {}", ms(self.stop_time));
        println!();
        println!("{:<40} {:>16} {:>14} {:>8}", "figure", "value", "target", "verdict");
        let ready = self.restarted.ready;
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            "spawn -> ready (GET /readyz 200)",
            ms(ready),
            format!("<= {}", ms(TARGET_READY)),
            verdict(ready <= TARGET_READY)
        );
        println!(
            "{:<40} {:>16}",
            "  of which spawn -> listening line",
            ms(self.restarted.listening)
        );
        println!(
            "{:<40} {:>16}",
            "  baseline: the same, empty store",
            ms(self.empty.ready)
        );
        let rss_ratio = bytes_ratio(self.rss_after, self.rss_before);
        println!(
            "{:<40} {:>16}",
            "RSS once ready, after the restart",
            format!("{:.1} MiB", mib(self.rss_after))
        );
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            "  / RSS before the restart",
            format!("{rss_ratio:.2}x of {:.1} MiB", mib(self.rss_before)),
            format!("<= {TARGET_RSS_RATIO:.1}x"),
            verdict(rss_ratio <= TARGET_RSS_RATIO)
        );
        println!(
            "{:<40} {:>16}",
            "  baseline: ready with an empty store",
            format!("{:.1} MiB", mib(self.rss_empty))
        );
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            "GET /web/{key}/api/state size",
            format!("{} B", self.state_bytes),
            format!("<= {} B", TARGET_STATE_BYTES),
            verdict(self.state_bytes <= TARGET_STATE_BYTES)
        );
        let mut times = self.state_times.clone();
        times.sort_unstable();
        let median = times.get(times.len() / 2).copied().unwrap_or_default();
        let max = times.last().copied().unwrap_or_default();
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            format!("  time, median of {}", times.len()),
            ms(median),
            format!("<= {}", ms(TARGET_STATE_TIME)),
            verdict(median <= TARGET_STATE_TIME)
        );
        println!(
            "{:<40} {:>16} {:>14} {:>8}",
            "  time, max",
            ms(max),
            format!("<= {}", ms(TARGET_STATE_TIME)),
            verdict(max <= TARGET_STATE_TIME)
        );
        if let Some(listed) = self.state_listed {
            println!("{:<40} {:>16}", "  pending questions listed", listed);
        }
    }
}

#[allow(clippy::cast_precision_loss, reason = "sizes here are far below 2^52")]
fn bytes_ratio(value: u64, baseline: u64) -> f64 {
    if baseline == 0 {
        return 0.0;
    }
    value as f64 / baseline as f64
}
