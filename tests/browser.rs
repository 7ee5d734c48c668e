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

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use support::browser::{KillOnDrop, collect, ensure_chromium, ensure_node, ensure_playwright};
use support::{AGENT_TOKEN, ME_KEY, Server, repo_root};

/// The recipient of the harness configuration whose page key is `ME_KEY`.
const RECIPIENT: &str = "me";
const BROWSER_TIMEOUT: Duration = Duration::from_mins(5);

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
