//! Measuring: percentiles, the process's memory and CPU time, formatting.

use std::time::Duration;

use crate::Result;

/// The name of the client runtime's threads: their CPU time is the
/// client's, everything else in the process is askgate's.
pub(crate) const CLIENT_THREADS: &str = "bench-client";

/// The two runtimes of a benchmark: askgate's (threads `askgate-serve`) and
/// the client's (threads [`CLIENT_THREADS`]), so that their CPU time is
/// told apart.
pub(crate) fn runtimes() -> std::io::Result<(tokio::runtime::Runtime, tokio::runtime::Runtime)> {
    let server = tokio::runtime::Builder::new_multi_thread()
        .thread_name("askgate-serve")
        .enable_all()
        .build()?;
    let client = tokio::runtime::Builder::new_multi_thread()
        .thread_name(CLIENT_THREADS)
        .enable_all()
        .build()?;
    Ok((server, client))
}

/// Nearest-rank percentiles of some samples.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

impl Summary {
    pub(crate) fn of(samples: &[Duration]) -> Self {
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
            p99: at(990),
            max: sorted.last().copied().unwrap_or_default(),
        }
    }
}

/// CPU time (user + system) so far: the whole process's, and that of the
/// client's threads (the client runtime's, and the main thread, which only
/// waits on it).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu {
    pub(crate) total: Duration,
    pub(crate) client: Duration,
}

impl Cpu {
    pub(crate) fn now() -> Result<Self> {
        let pid = std::process::id();
        let (_, total) = thread_cpu(&std::fs::read_to_string("/proc/self/stat")?)?;
        let mut client = Duration::ZERO;
        for task in std::fs::read_dir("/proc/self/task")? {
            let task = task?;
            // A thread that has just exited has no stat any more.
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            let (name, time) = thread_cpu(&stat)?;
            let main = task.file_name().to_str() == Some(pid.to_string().as_str());
            if main || name.starts_with(CLIENT_THREADS) {
                client += time;
            }
        }
        Ok(Self { total, client })
    }

    /// The CPU time spent since `earlier`.
    pub(crate) fn since(self, earlier: Self) -> Self {
        Self {
            total: self.total.saturating_sub(earlier.total),
            client: self.client.saturating_sub(earlier.client),
        }
    }

    /// Both spans' CPU time together.
    #[allow(dead_code, reason = "the replicas benchmark's, which runs a phase in rounds")]
    pub(crate) fn plus(self, other: Self) -> Self {
        Self {
            total: self.total + other.total,
            client: self.client + other.client,
        }
    }

    /// askgate's part: everything but the client's threads.
    pub(crate) fn server(self) -> Duration {
        self.total.saturating_sub(self.client)
    }
}

/// A `stat` line's command name and its user + system time. The times are
/// in clock ticks of `USER_HZ`, which Linux fixes at 100 a second for
/// user space.
pub(crate) fn thread_cpu(stat: &str) -> Result<(String, Duration)> {
    let (head, rest) = stat.rsplit_once(") ").ok_or("a stat line without its command name")?;
    let name = head.split_once('(').map_or("", |(_, name)| name).to_owned();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |index: usize| -> Result<u64> {
        Ok(fields
            .get(index)
            .and_then(|field| field.parse::<u64>().ok())
            .ok_or("a stat line without its CPU times")?)
    };
    let ticks = ticks(11)? + ticks(12)?;
    Ok((name, Duration::from_millis(ticks * 10)))
}

#[allow(clippy::cast_precision_loss, reason = "counts here are far below 2^52")]
pub(crate) fn as_f64(count: usize) -> f64 {
    count as f64
}

#[allow(
    clippy::cast_precision_loss,
    reason = "counts and byte sizes here are far below 2^52"
)]
pub(crate) fn u64_f64(count: u64) -> f64 {
    count as f64
}

pub(crate) fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

pub(crate) fn mib(bytes: u64) -> f64 {
    u64_f64(bytes) / 1_048_576.0
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}
