//! What the chat-platform suites (`telegram.rs`, `discord.rs`, `slack.rs`)
//! share: the questions they ask, the result they expect, a bounded wait,
//! and running each scenario once per inbound mode.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One single-select question to `to`, with a described first option.
pub(crate) fn deploy(to: &str) -> Value {
    json!({
        "to": to,
        "questions": [{"id": "deploy", "header": "Deploy", "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)", "description": "safe, resets nightly"},
                        {"label": "Production"}]}],
    })
}

/// Two questions to `to`, the second multi-select: a text prompt.
pub(crate) fn two_questions(to: &str) -> Value {
    json!({
        "to": to,
        "questions": [
            {"id": "deploy", "header": "Deploy", "question": "Where should this build go?",
             "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}, {"label": "Canary"}]},
            {"id": "notify", "header": "Notify", "question": "Who should be told?", "multiSelect": true,
             "options": [{"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody"}]},
        ],
    })
}

/// The tool result of [`deploy`] answered with `deploy`.
pub(crate) fn answered(deploy: &str) -> Value {
    json!({"status": "answered", "answers": {"answers": {"deploy": [deploy]}}})
}

/// What `probe` finds, polled until it finds something; fails the test
/// naming `what` after `patience`.
pub(crate) async fn eventually_within<T>(what: &str, patience: Duration, probe: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {patience:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How `askgate check-config` and `askgate serve` take a configuration
/// whose channel the platform refuses.
pub(crate) struct Refused {
    /// The command, for the assertion messages.
    pub(crate) command: &'static str,
    /// Whether it did what it must: `check-config` exited successfully (it
    /// must not); `serve` kept serving with the channel `refused` (it must).
    pub(crate) succeeded: bool,
    /// What it said: `check-config`'s output (stdout, then stderr); for
    /// `serve`, `/readyz` then its log.
    pub(crate) printed: String,
}

impl Refused {
    /// Asserts what each command must do: `check-config` fails, `serve`
    /// serves on with the channel refused.
    pub(crate) fn assert_refused(&self) {
        match self.command {
            "check-config" => assert!(!self.succeeded, "check-config must fail: {}", self.printed),
            _ => assert!(
                self.succeeded,
                "serve must go on serving, the channel refused: {}",
                self.printed
            ),
        }
    }
}

/// Writes the harness's configuration with `server` keys and `channel`
/// appended into a fresh directory, then runs `check-config` on it to its
/// end (at most 30 s), and `serve`, which must go on serving (the page,
/// `/v1`) with the refused channel `refused` in `/readyz`.
pub(crate) async fn check_config_and_serve(server: &str, channel: &str) -> Vec<Refused> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("askgate.toml");
    std::fs::write(&config, super::config_text_with(dir.path(), server) + channel)
        .expect("the configuration is written");
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(super::ASKGATE)
            .arg("check-config")
            .arg(&config)
            .current_dir(dir.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("askgate finishes")
    .expect("askgate runs");
    let check_config = Refused {
        command: "check-config",
        succeeded: output.status.success(),
        printed: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    };

    let mut serving = super::Server::start_with(server, channel);
    let deadline = Instant::now() + Duration::from_secs(30);
    let ready = loop {
        let (status, ready) = serving.get("/readyz", None).await;
        let refused = ready["channels"]
            .as_object()
            .is_some_and(|channels| channels.values().any(|state| state["state"] == "refused"));
        if status == 200 && refused || Instant::now() > deadline {
            break ready;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (health, _) = serving.get("/healthz", None).await;
    let refused = ready["channels"]
        .as_object()
        .is_some_and(|channels| channels.values().any(|state| state["state"] == "refused"));
    let serve = Refused {
        command: "serve",
        succeeded: health == 200 && refused,
        printed: format!("{ready}\n{}", serving.stderr()),
    };
    vec![check_config, serve]
}

/// In a test that is failing (panicking), prints what askgate logged and
/// what the fake saw (`seen` gives a heading and its text each, and is only
/// called then); else nothing.
#[allow(
    clippy::print_stderr,
    reason = "a failed test's diagnostics; panicking again in a drop would abort"
)]
pub(crate) fn report_if_failing(server: &mut super::Server, seen: impl FnOnce() -> Vec<(&'static str, String)>) {
    if std::thread::panicking() {
        eprintln!("askgate's log:\n{}", server.stderr());
        for (heading, text) in seen() {
            eprintln!("{heading}: {text}");
        }
    }
}

/// Runs each scenario (an `async fn(Mode)` of the suite) once per mode of
/// the suite's `Mode` enum, each as a test of its own in a module named
/// for the mode:
/// `in_modes!([a, b] polling => Polling, webhook => Webhook);` makes
/// `polling::a`, `polling::b`, `webhook::a` and `webhook::b`. The runtime
/// has two workers: the fake answers while the harness blocks on start-up.
macro_rules! in_modes {
    ($scenarios:tt $($module:ident => $mode:ident),+ $(,)?) => {
        $( $crate::support::chat::in_modes!(@module $module $mode $scenarios); )+
    };
    (@module $module:ident $mode:ident [$($scenario:ident),* $(,)?]) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(super::Mode::$mode).await;
                }
            )*
        }
    };
}

pub(crate) use in_modes;

/// The fake Bot API, and askgate with Alice (Telegram user `alice`, which
/// is her private chat's id too) on Telegram and on her page at `key`.
pub(crate) async fn alice_on_telegram_and_page(
    alice: i64,
    key: &str,
) -> (askgate_testkit::telegram::FakeTelegram, super::Server) {
    let fake = askgate_testkit::telegram::FakeTelegram::start().await;
    fake.add_chat(&askgate_testkit::telegram::TgChat::private(alice));
    let config = format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n\n\
         [recipients.alice]\ndisplay_name = \"Alice\"\nsurfaces = [\"tg\", \"web\"]\nweb_key = \"{key}\"\n\
         [recipients.alice.tg]\nchat_id = {alice}\n",
        token = fake.token(),
        api = fake.api_url(),
    );
    (fake, super::Server::start_with("", &config))
}
