//! What the benchmarks share: how they tell a quick correctness run from a
//! measuring one, where they run, and how much memory a process holds.

use std::path::Path;

/// Whether a benchmark binary runs as a test (criterion's convention:
/// `--test` given, or `--bench` absent, as under `cargo test --benches`):
/// tiny phases that check correctness only.
#[must_use]
pub fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    args.iter().any(|arg| arg == "--test") || !args.iter().any(|arg| arg == "--bench")
}

/// The filesystem type of the mount that holds `path`, from
/// `/proc/self/mountinfo` ("ext4", "tmpfs", …): a figure about fsyncs means
/// little without it.
#[must_use]
pub fn filesystem_of(path: &Path) -> String {
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

/// The resident memory (`VmRSS`, bytes) of the process whose
/// `/proc/<pid>/status` is `status` (`"self"` for this one).
///
/// # Errors
/// The file cannot be read or has no `VmRSS` line.
pub fn vm_rss(pid: &str) -> std::io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| std::io::Error::other(format!("no VmRSS in /proc/{pid}/status")))
}
