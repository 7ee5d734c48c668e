//! Running an outside program from a test (pip, pytest, npm, Synapse's
//! setup) within a time bound, its output kept for the failure message.

use std::fs::File;
use std::io::{Read as _, Seek as _};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` with its stdin closed and its output (stdout and stderr,
/// as they came) kept in a file, for at most `within`: how it exited
/// (`None`: it ran out of time and was killed) and what it wrote.
pub fn run_within(command: &mut Command, within: Duration) -> std::io::Result<(Option<ExitStatus>, String)> {
    // One open file for both, so that they share its offset.
    let log = tempfile::tempfile()?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .spawn()?;
    let deadline = Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Ok((status, read_back(log)))
}

/// Everything written to `file` (a log a child wrote to), as text; output
/// that is not UTF-8 is still worth showing.
pub fn read_back(mut file: File) -> String {
    let mut bytes = Vec::new();
    // A file this process holds open: rewinding and reading it fail only
    // with the disk, and then the test shows what it could read.
    let _ = file.rewind();
    let _ = file.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
