//! What the suites that drive a real browser share: installing their
//! prerequisites (Chromium from Debian, Node.js, packages from npm),
//! reading a child's output, and [`Page`], one page of askgate's web page in
//! headless Chromium, driven step by step from a Rust test through
//! `tests/browser/driver.mjs` (one JSON command per line on its stdin, one
//! JSON answer per line on its stdout), so that a test can act in a chat
//! app's fake and on the page in one scenario.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use super::repo_root;

/// Where Debian installs Chromium.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// How long one driver step may take (its own waits are shorter).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a setup command, failing the test with its output when it fails.
fn run_setup(what: &str, command: &mut Command) {
    println!("test setup: {what}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("test setup: could not run {what}: {error}"));
    assert!(
        output.status.success(),
        "test setup: {what} failed ({}).\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn ensure_chromium() {
    if Path::new(CHROMIUM).exists() {
        return;
    }
    assert!(
        is_root(),
        "the browser test needs Chromium at {CHROMIUM}, and it is missing. Install it with:\n    \
         sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium"
    );
    run_setup(
        "apt-get update",
        Command::new("apt-get")
            .arg("update")
            .env("DEBIAN_FRONTEND", "noninteractive"),
    );
    run_setup(
        "apt-get install -y chromium",
        Command::new("apt-get")
            .args(["install", "-y", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    );
    assert!(
        Path::new(CHROMIUM).exists(),
        "apt-get installed chromium, but {CHROMIUM} is still missing"
    );
}

/// `npm ci` in `dir` (`tests/<suite>`), unless the tree there was installed
/// from the `package-lock.json` there now: a stamp written after `npm ci`
/// succeeds says so, so that a tree an interrupted install left half built,
/// or one installed before a package was added, is installed again. Call it
/// holding [`setup_lock`](super::setup_lock).
pub(crate) fn npm_ci(suite: &str, dir: &Path) {
    let lockfile = dir.join("package-lock.json");
    let pinned = std::fs::read_to_string(&lockfile)
        .unwrap_or_else(|error| panic!("{suite} test setup: {}: {error}", lockfile.display()));
    let stamp = dir.join("node_modules").join(".askgate-installed");
    if std::fs::read_to_string(&stamp).is_ok_and(|installed| installed == pinned) {
        return;
    }
    let npm = Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok_and(|output| output.status.success()),
        "the {suite} test needs npm to install its packages into {}, and npm is missing. Install it with:\n    \
         sudo apt-get install -y npm\nthen run:\n    cd {} && npm ci",
        dir.display(),
        dir.display()
    );
    run_setup(
        &format!("npm ci (tests/{suite})"),
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir),
    );
    std::fs::write(&stamp, pinned)
        .unwrap_or_else(|error| panic!("{suite} test setup: could not write {}: {error}", stamp.display()));
}

pub(crate) fn ensure_node() {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|output| output.status.success()),
        "the browser test needs Node.js 20 or later (`node`), and it is missing. Install it with:\n    \
         sudo apt-get install -y nodejs npm"
    );
}

/// A child process that is killed when the test ends, a panic included.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Collects everything a pipe says, in the background.
pub(crate) fn collect(mut pipe: impl std::io::Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    thread::spawn(move || {
        let mut buffer = [0_u8; 4096];
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 {
                break;
            }
            sink.lock()
                .expect("the log is not poisoned")
                .push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
    });
    text
}

/// Installs what a browser test needs, or fails saying how to; one
/// installer at a time ([`setup_lock`](super::setup_lock)).
pub(crate) fn ensure_all() {
    let _setup = super::setup_lock();
    let browser_dir = repo_root().join("tests").join("browser");
    ensure_chromium();
    ensure_node();
    // playwright-core and axe-core (the accessibility audit).
    npm_ci("browser", &browser_dir);
}

/// One page of askgate's web page in headless Chromium.
pub(crate) struct Page {
    node: KillOnDrop,
    stdin: ChildStdin,
    answers: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Page {
    /// Opens `link` (a recipient's page) in a fresh browser, once the page
    /// has read its state and its live stream is up.
    pub(crate) fn open(link: &str) -> Self {
        ensure_all();
        let root = repo_root();
        let NodeLines {
            node,
            stdin,
            lines: answers,
            stderr,
        } = spawn_lines(
            Command::new("node")
                .arg(root.join("tests").join("browser").join("driver.mjs"))
                .current_dir(&root)
                .env("ASKGATE_CHROMIUM", CHROMIUM),
        );
        let mut page = Self {
            node,
            stdin,
            answers,
            stderr,
        };
        page.step(&json!({"open": link}));
        page
    }

    /// Sends one command and returns its answer; a failed step fails the test.
    pub(crate) fn step(&mut self, command: &Value) -> Value {
        let line = format!("{command}\n");
        if let Err(error) = self.stdin.write_all(line.as_bytes()).and_then(|()| self.stdin.flush()) {
            panic!("the browser driver is gone ({error}): {}", self.stderr());
        }
        let answer = match self.answers.recv_timeout(STEP_TIMEOUT) {
            Ok(answer) => answer,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "the browser driver did not answer {command} within {STEP_TIMEOUT:?}: {}",
                self.stderr()
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                thread::sleep(Duration::from_millis(200));
                panic!(
                    "the browser driver exited before answering {command}: {}",
                    self.stderr()
                )
            }
        };
        let answer: Value = serde_json::from_str(&answer)
            .unwrap_or_else(|error| panic!("the browser driver said {answer:?}, not JSON ({error})"));
        assert!(
            answer["ok"] == json!(true),
            "browser step {command} failed: {}\n(screenshot: {})\ndriver stderr:\n{}",
            answer["error"].as_str().unwrap_or("?"),
            answer["screenshot"].as_str().unwrap_or("none"),
            self.stderr()
        );
        answer
    }

    /// Waits until question `id`'s card shows, and returns its option labels.
    pub(crate) fn card(&mut self, id: &str) -> Vec<String> {
        let answer = self.step(&json!({"card": id}));
        serde_json::from_value(answer["labels"].clone()).expect("labels are strings")
    }

    /// Taps the option `label` on question `id`'s card.
    pub(crate) fn tap(&mut self, id: &str, label: &str) {
        self.step(&json!({"tap": {"id": id, "label": label}}));
    }

    /// Which steps of question `id`'s card show as answered, the step it is
    /// on, and that step's header.
    pub(crate) fn steps(&mut self, id: &str) -> (Vec<bool>, Option<u64>, String) {
        let answer = self.step(&json!({"steps": id}));
        (
            serde_json::from_value(answer["done"].clone()).expect("done is a list of booleans"),
            answer["current"].as_u64(),
            answer["header"].as_str().unwrap_or_default().to_owned(),
        )
    }

    /// Reloads the page, once its stream is live again.
    pub(crate) fn reload(&mut self) {
        self.step(&json!({"reload": true}));
    }

    /// Presses the button `testid` (`submit`, `next`, `back`, `skip`) on
    /// question `id`'s card.
    pub(crate) fn press(&mut self, id: &str, testid: &str) {
        self.step(&json!({"press": {"id": id, "button": testid}}));
    }

    /// Waits until question `id` shows as ended, and returns its summary:
    /// arrived live, the page neither reloaded nor read its whole state again.
    pub(crate) fn summary(&mut self, id: &str) -> String {
        let answer = self.step(&json!({"summary": id}));
        answer["summary"].as_str().expect("a summary").to_owned()
    }

    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // Closing stdin ends the driver; the kill is for a driver stuck.
        let _ = self.stdin.write_all(b"{\"close\": true}\n");
        let _ = self.node.0.wait_timeout_or_kill(Duration::from_secs(5));
    }
}

/// Waiting for a child a bounded time.
trait WaitTimeout {
    fn wait_timeout_or_kill(&mut self, within: Duration) -> std::io::Result<()>;
}

impl WaitTimeout for Child {
    fn wait_timeout_or_kill(&mut self, within: Duration) -> std::io::Result<()> {
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if self.try_wait()?.is_some() {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(50));
        }
        self.kill()?;
        self.wait().map(drop)
    }
}

/// A node script talked to over its stdin, its stdout read line by line.
pub(crate) struct NodeLines {
    pub(crate) node: KillOnDrop,
    pub(crate) stdin: ChildStdin,
    pub(crate) lines: mpsc::Receiver<String>,
    pub(crate) stderr: Arc<Mutex<String>>,
}

/// Spawns `command` (a node script) with its stdin, stdout and stderr
/// piped; its stdout lines arrive on `lines`, its stderr is collected.
pub(crate) fn spawn_lines(command: &mut Command) -> NodeLines {
    let mut node = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let stdin = node.stdin.take().expect("piped stdin");
    let stdout = node.stdout.take().expect("piped stdout");
    let stderr = collect(node.stderr.take().expect("piped stderr"));
    let (send, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(said) = line else { break };
            if send.send(said).is_err() {
                break;
            }
        }
    });
    NodeLines {
        node: KillOnDrop(node),
        stdin,
        lines,
        stderr,
    }
}
