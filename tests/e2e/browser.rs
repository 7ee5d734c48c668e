//! askgate's web page in a real browser: the real `askgate serve` on a
//! loopback port, headless Chromium driven by playwright-core
//! (`tests/browser/web.test.mjs`, then `web.a11y.test.mjs`: Skip all, the
//! keyboard alone, axe-core's audit, screenshots), questions asked through the agent API and
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

use crate::support;

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use support::browser::{KillOnDrop, collect, ensure_all};
use support::{AGENT_TOKEN, ME_KEY, Server, repo_root};

/// The recipient of the harness configuration whose page key is `ME_KEY`.
const RECIPIENT: &str = "me";
const BROWSER_TIMEOUT: Duration = Duration::from_mins(5);
/// The page's suites, run in turn (`tests/browser/`): its behaviour, then
/// Skip all, the keyboard alone, the accessibility audit and the screenshots.
const SUITES: [&str; 2] = ["web.test.mjs", "web.a11y.test.mjs"];

#[test]
fn the_web_page_works_in_a_real_browser() {
    let root = repo_root();
    let browser_dir = root.join("tests").join("browser");
    ensure_all();

    let mut server = Server::start();
    let base = server.base().to_owned();
    let link = format!("{base}/web/{ME_KEY}");
    println!("askgate serve: {base} (page: {link})");

    // The suites in turn, against the same server, within one time bound:
    // web.test.mjs first, which expects a page with nothing pending.
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let mut status = None;
    let (mut out, mut err) = (String::new(), String::new());
    for suite in SUITES {
        let mut node = Command::new("node")
            .arg(browser_dir.join(suite))
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
        let said = collect(node.stdout.take().expect("piped stdout"));
        let warned = collect(node.stderr.take().expect("piped stderr"));
        let mut node = KillOnDrop(node);
        status = loop {
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
        out.push_str("# ");
        out.push_str(suite);
        out.push('\n');
        out.push_str(&said.lock().expect("the log is not poisoned"));
        err.push_str(&warned.lock().expect("the log is not poisoned"));
        if !status.is_some_and(|status| status.success()) {
            break;
        }
    }
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

/// Alice: on the fake Telegram and on her page.
const ALICE: i64 = 4343;
const ALICE_KEY: &str = "browser-test-web-key-alice-0123456789abcdefgh";
const PATIENCE: Duration = Duration::from_secs(20);

/// A blocking browser step, off the runtime's async work (the fake Bot API
/// runs on this runtime meanwhile).
fn on_page<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

/// Progress saved on the page is the question's progress: step 1 of 3
/// answered on the page survives a reload (the card opens on step 2), and
/// a Telegram reply answers the rest on top of it: the agent gets all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_answered_on_the_page_survives_a_reload_and_a_chat_reply_finishes_it() {
    use askgate_testkit::telegram::{TgChat, TgUser};
    use serde_json::json;

    let (fake, server) = support::chat::alice_on_telegram_and_page(ALICE, ALICE_KEY).await;
    let dm = TgChat::private(ALICE);
    let alice = TgUser::new(ALICE, "Alice");
    let mut page = on_page(|| support::browser::Page::open(&server.url(&format!("/web/{ALICE_KEY}"))));

    let question = |id: &str, header: &str, text: &str, labels: [&str; 2]| {
        json!({"id": id, "header": header, "question": text,
            "options": [{"label": labels[0]}, {"label": labels[1]}]})
    };
    let body = json!({"to": "alice", "sessionId": "browser-progress", "timeoutSeconds": 600, "questions": [
        question("db", "Database", "Which DB?", ["SQLite (Recommended)", "PostgreSQL"]),
        question("when", "When", "Deploy when?", ["Now", "Tonight"]),
        question("notify", "Notify", "Who should be told?", ["Team channel", "Nobody"]),
    ]});
    let mut asked = server.ask_waiting(&body).await;
    let prompt = support::chat::eventually_within("the prompt in Telegram", PATIENCE, || {
        fake.messages().get(&ALICE).and_then(|sent| {
            sent.iter()
                .find(|message| message["text"].as_str().is_some_and(|text| text.contains("Which DB?")))
                .and_then(|message| message["message_id"].as_i64())
        })
    })
    .await;

    on_page(|| page.card(&asked.id));
    on_page(|| page.tap(&asked.id, "PostgreSQL"));
    on_page(|| page.press(&asked.id, "next"));
    // Saved in askgate, not only in the tab.
    let deadline = Instant::now() + PATIENCE;
    let saved = loop {
        let resource = server.question(&asked.id).await;
        if resource["progress"]["db"].is_array() {
            break resource;
        }
        assert!(
            Instant::now() < deadline,
            "step 1 was not saved as progress: {resource}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(saved["progress"]["db"][0]["label"], "PostgreSQL", "{saved}");
    assert_eq!(saved["status"], "pending", "{saved}");

    on_page(|| page.reload());
    let (done, current, header) = on_page(|| page.steps(&asked.id));
    assert_eq!(done, [true, false, false], "step 1 is kept after the reload");
    assert_eq!(
        (current, header.as_str()),
        (Some(1), "When"),
        "the card opens on step 2"
    );

    // The rest in Telegram: askgate reads the reply on top of the page's step.
    fake.message(&alice, &dm, "2: 2\n3: 1", Some(prompt), None);
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {
            "db": ["PostgreSQL"], "when": ["Tonight"], "notify": ["Team channel"]}}})
    );
    let summary = on_page(|| page.summary(&asked.id));
    assert!(
        summary.contains("PostgreSQL") && summary.contains("Tonight"),
        "{summary}"
    );
}
