//! askgate's web page in a real browser: the real `askgate serve` on a
//! loopback port, headless Chromium driven by playwright-core
//! (`tests/browser/web.test.mjs`), questions asked through the agent API and
//! answered on the page by taps and typing.
//!
//! Its prerequisites are installed when they can be and reported when they
//! cannot; this test never skips. Chromium comes from Debian (`apt-get install
//! chromium`, done here when running as root), playwright-core from npm
//! (`npm ci` in `tests/browser`).
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use support::{AGENT_TOKEN, ME_KEY, Server, repo_root};

const CHROMIUM: &str = "/usr/bin/chromium";
/// The recipient of the harness configuration whose page key is `ME_KEY`.
const RECIPIENT: &str = "me";
const BROWSER_TIMEOUT: Duration = Duration::from_mins(5);

/// Runs a setup command, failing the test with its output when it fails.
fn run_setup(what: &str, command: &mut Command) {
    println!("browser test setup: {what}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("browser test setup: could not run {what}: {error}"));
    assert!(
        output.status.success(),
        "browser test setup: {what} failed ({}).\nstdout:\n{}\nstderr:\n{}",
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

fn ensure_playwright(browser_dir: &Path) {
    if browser_dir.join("node_modules").join("playwright-core").exists() {
        return;
    }
    let npm = Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok_and(|output| output.status.success()),
        "the browser test needs npm to install playwright-core into {}, and npm is missing. Install it with:\n    \
         sudo apt-get install -y npm\nthen run:\n    cd {} && npm ci",
        browser_dir.display(),
        browser_dir.display()
    );
    run_setup(
        "npm ci (tests/browser)",
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(browser_dir),
    );
}

fn ensure_node() {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|output| output.status.success()),
        "the browser test needs Node.js 20 or later (`node`), and it is missing. Install it with:\n    \
         sudo apt-get install -y nodejs npm"
    );
}

/// A child process that is killed when the test ends, a panic included.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Collects everything a pipe says, in the background.
fn collect(mut pipe: impl std::io::Read + Send + 'static) -> Arc<Mutex<String>> {
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

#[test]
fn the_web_page_works_in_a_real_browser() {
    let root = repo_root();
    let browser_dir = root.join("tests").join("browser");
    ensure_chromium();
    ensure_node();
    ensure_playwright(&browser_dir);

    let mut server = Server::start();
    let base = server.base().to_owned();
    let link = format!("{base}/web/{ME_KEY}");
    println!("askgate serve: {base} (page: {link})");

    let mut node = Command::new("node")
        .arg(browser_dir.join("web.test.mjs"))
        .current_dir(&root)
        .env("ASKGATE_URL", &base)
        .env("ASKGATE_TOKEN", AGENT_TOKEN)
        .env("ASKGATE_WEB_LINK", &link)
        .env("ASKGATE_RECIPIENT", RECIPIENT)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node starts");
    let out = collect(node.stdout.take().expect("piped stdout"));
    let err = collect(node.stderr.take().expect("piped stderr"));
    let mut node = KillOnDrop(node);

    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = node.0.try_wait().expect("node can be waited for") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        thread::sleep(Duration::from_millis(100));
    };
    drop(node);
    // Let the readers take the last of the output.
    thread::sleep(Duration::from_millis(200));
    let out = out.lock().expect("the log is not poisoned").clone();
    let err = err.lock().expect("the log is not poisoned").clone();
    println!("{out}");
    if !err.is_empty() {
        println!("node stderr:\n{err}");
    }

    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!(
            "the browser test failed ({status}):\n{out}\n{err}\naskgate stderr:\n{}",
            server.stderr()
        ),
        None => panic!(
            "the browser test did not finish within {}s:\n{out}\n{err}\naskgate stderr:\n{}",
            BROWSER_TIMEOUT.as_secs(),
            server.stderr()
        ),
    }
}
