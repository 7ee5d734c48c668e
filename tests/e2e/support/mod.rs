//! The harness of the end-to-end suites: the real `askgate serve` on a
//! loopback port with its own data directory and configuration, and HTTP
//! helpers that read every reply the same way.
//!
//! A [`Server`] writes its configuration into a fresh temporary directory
//! (which is also its data directory), starts the binary, and reads the port
//! from the line `askgate listening on http://127.0.0.1:PORT`. The process is
//! killed when the `Server` is dropped, also when a test panics. It can be
//! killed hard (`SIGKILL`), stopped gracefully (`SIGTERM`) and started again
//! on the same data directory and configuration; the port then changes.
//!
//! Every reply read through [`Reply::read`] is checked not to be a 500: no
//! request a test makes may fail on askgate's side.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub(crate) mod browser;
pub(crate) mod chat;
pub(crate) mod tmpfs;
pub(crate) mod venv;

/// The binary under test.
pub(crate) const ASKGATE: &str = env!("CARGO_BIN_EXE_askgate");

/// The token of agent `one`, which may ask everybody.
pub(crate) const AGENT_TOKEN: &str = "svc-test-agent-one-0123456789abcdefghijklmn";
/// The token of agent `limited`, which may ask only `me`.
pub(crate) const LIMITED_TOKEN: &str = "svc-test-agent-limited-0123456789abcdefghij";
/// The page key of recipient `me` (display name "Me").
pub(crate) const ME_KEY: &str = "svc-test-web-key-me-0123456789abcdefghijklmnop";
/// The page key of recipient `other`.
pub(crate) const OTHER_KEY: &str = "svc-test-web-key-other-0123456789abcdefghijklm";
/// The configured `max_body_bytes`.
pub(crate) const MAX_BODY_BYTES: usize = 65_536;

/// How long askgate may take to print its listening line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The default deadline for conditions a test polls for.
pub(crate) const POLL_TIMEOUT: Duration = Duration::from_secs(15);
const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// The repository's root directory (the suites run from `crates/askgate`).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .canonicalize()
        .expect("the repository root exists")
}

/// Held while a test installs something its suite needs (a Debian package,
/// an npm tree), and while it checks whether it must.
///
/// One installer at a time, across the tests of a binary and across test
/// binaries: two `apt-get` at once fail on each other's lock, and a test
/// that looks at `node_modules` while another's `npm ci` rebuilds it finds
/// half a tree (CI failed both ways). A file lock (`flock`) in the temporary
/// directory, let go when the returned file closes, a panic included.
pub(crate) fn setup_lock() -> std::fs::File {
    let path = std::env::temp_dir().join("askgate-test-setup.lock");
    let lock = std::fs::File::create(&path)
        .unwrap_or_else(|error| panic!("test setup: could not open {}: {error}", path.display()));
    lock.lock()
        .unwrap_or_else(|error| panic!("test setup: could not lock {}: {error}", path.display()));
    lock
}

/// The spec's deploy question for `me`: one question, two options, ten
/// minutes to answer.
pub(crate) fn deploy_question() -> Value {
    json!({
        "to": "me",
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
        }],
        "timeoutSeconds": 600
    })
}

/// The configuration every harness server runs with.
pub(crate) fn config_text(data_dir: &Path) -> String {
    config_text_with(data_dir, "")
}

/// The same, with `server` (more `[server]` keys) in its server section.
pub(crate) fn config_text_with(data_dir: &Path, server: &str) -> String {
    let data_dir =
        serde_json::to_string(data_dir.to_str().expect("a UTF-8 temporary directory")).expect("a path serializes");
    format!(
        r#"[server]
listen = "127.0.0.1:0"
data_dir = {data_dir}
max_body_bytes = {MAX_BODY_BYTES}
ask_keepalive_seconds = 1
{server}
[agents.one]
token = "{AGENT_TOKEN}"
recipients = ["*"]

[agents.limited]
token = "{LIMITED_TOKEN}"
recipients = ["me"]

[channels.web]
type = "web"

[recipients.me]
channel = "web"
display_name = "Me"
locale = "en"
web_key = "{ME_KEY}"

[recipients.other]
channel = "web"
web_key = "{OTHER_KEY}"
"#
    )
}

/// A running `askgate serve`.
struct Process {
    child: Child,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
    stdout: Arc<Mutex<String>>,
    stdout_reader: Option<JoinHandle<()>>,
}

impl Process {
    /// Kills the process (`SIGKILL`) and reaps it.
    fn kill(&mut self) {
        // Already gone is fine: the point is that it is not running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What it wrote to stderr, all of it once it has exited.
    fn stderr(&mut self) -> String {
        if self.child.try_wait().ok().flatten().is_some()
            && let Some(reader) = self.stderr_reader.take()
        {
            let _ = reader.join();
        }
        self.stderr.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// What it wrote to stdout, all of it once it has exited.
    fn stdout(&mut self) -> String {
        if self.child.try_wait().ok().flatten().is_some()
            && let Some(reader) = self.stdout_reader.take()
        {
            let _ = reader.join();
        }
        self.stdout.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Sends `signal` (`"TERM"`, `"HUP"`) to the process `pid` with kill(1).
fn send_signal(signal: &str, pid: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .expect("kill(1) runs");
    assert!(sent.success(), "kill -{signal} {pid} failed: {sent}");
}

/// What `probe` finds, polled until it finds something; fails the test
/// naming `what` after `patience`.
pub(crate) async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    patience: Duration,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {patience:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The keys whose values are secrets, in any section of a configuration.
const SECRET_KEYS: [&str; 13] = [
    "token",
    "tokens",
    "web_key",
    "web_keys",
    "secret_token",
    "secret_tokens",
    "signing_secret",
    "signing_secrets",
    "app_token",
    "bot_token",
    "public_key",
    "url",
    "client_secret",
];

/// Every secret value in a configuration's text (the literal ones; a
/// `${VAR}` reference is looked up in this process's environment).
fn configured_secrets(text: &str) -> Vec<String> {
    fn walk(value: &toml::Value, key: &str, found: &mut Vec<String>) {
        match value {
            toml::Value::Table(table) => table.iter().for_each(|(key, value)| walk(value, key, found)),
            toml::Value::Array(values) => values.iter().for_each(|value| walk(value, key, found)),
            toml::Value::String(text) if SECRET_KEYS.contains(&key) => {
                let text = match text.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')) {
                    Some(name) => std::env::var(name).unwrap_or_default(),
                    None => text.clone(),
                };
                // A Discord public key is public; a URL is a secret only
                // with a password in it.
                if key == "public_key" || (key == "url" && !text.contains('@')) {
                    return;
                }
                found.push(text);
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    if let Ok(table) = text.parse::<toml::Table>() {
        walk(&toml::Value::Table(table), "", &mut found);
    }
    found
}

/// The real askgate service, in its own temporary data directory.
pub(crate) struct Server {
    process: Option<Process>,
    base: String,
    http: reqwest::Client,
    config: PathBuf,
    dir: tempfile::TempDir,
    /// `RUST_LOG` for the process; `None` leaves it unset.
    rust_log: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
            // Not while a test is failing already: a second panic aborts.
            if !thread::panicking() {
                self.assert_no_secret_in(&mut process);
            }
        }
    }
}

impl Server {
    /// Writes the harness configuration and starts askgate on it.
    pub(crate) fn start() -> Self {
        Self::start_with("", "")
    }

    /// The same, with `server` (more `[server]` keys) and `more` (further
    /// channels and recipients) in the harness configuration.
    pub(crate) fn start_with(server: &str, more: &str) -> Self {
        Self::start_with_log(server, more, Some("info,sqlx=warn"))
    }

    /// [`Server::start_with`] with `RUST_LOG` set to `rust_log`, or unset.
    pub(crate) fn start_with_log(server: &str, more: &str, rust_log: Option<&str>) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data_dir = dir.path().to_owned();
        Self::start_in(dir, &data_dir, server, more, rust_log)
    }

    /// Writes the configuration into `dir` with askgate's data in `data_dir`
    /// and starts askgate on it.
    fn start_in(dir: tempfile::TempDir, data_dir: &Path, server: &str, more: &str, rust_log: Option<&str>) -> Self {
        let config = dir.path().join("askgate.toml");
        std::fs::write(&config, config_text_with(data_dir, server) + more).expect("the configuration is written");
        let http = reqwest::Client::builder()
            .no_proxy()
            // A safety net against a hung test; tests wait with their own deadlines.
            .timeout(Duration::from_secs(90))
            .build()
            .expect("an HTTP client");
        let mut server = Self {
            process: None,
            base: String::new(),
            http,
            config,
            dir,
            rust_log: rust_log.map(str::to_owned),
        };
        server.spawn();
        server
    }

    /// Starts askgate again on the same configuration and data directory
    /// (after [`Server::kill`] or [`Server::terminate`]); the port changes.
    pub(crate) fn restart(&mut self) {
        assert!(self.process.is_none(), "askgate is still running; stop it first");
        self.spawn();
    }

    fn spawn(&mut self) {
        let mut command = Command::new(ASKGATE);
        match &self.rust_log {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        let mut child = command
            .arg("serve")
            .arg("--config")
            .arg(&self.config)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the askgate binary starts");
        let mut stdout_pipe = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_reader = {
            let stderr = stderr.clone();
            thread::spawn(move || {
                let mut buffer = [0_u8; 4096];
                while let Ok(read @ 1..) = stderr_pipe.read(&mut buffer) {
                    stderr
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push_str(&String::from_utf8_lossy(&buffer[..read]));
                }
            })
        };
        let (found, listening) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(String::new()));
        // Reads stdout to its end, so that askgate never blocks on a full pipe.
        let stdout_reader = {
            let stdout = stdout.clone();
            thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(&mut stdout_pipe).lines() {
                    let Ok(line) = line else { break };
                    if let Some(url) = line.strip_prefix("askgate listening on ")
                        && let Some(found) = found.take()
                    {
                        let _ = found.send(url.trim().to_owned());
                    }
                    let mut said = stdout.lock().unwrap_or_else(PoisonError::into_inner);
                    said.push_str(&line);
                    said.push('\n');
                }
            })
        };
        let mut process = Process {
            child,
            stderr,
            stderr_reader: Some(stderr_reader),
            stdout,
            stdout_reader: Some(stdout_reader),
        };
        match listening.recv_timeout(STARTUP_TIMEOUT) {
            Ok(url) => {
                let port = url
                    .strip_prefix("http://127.0.0.1:")
                    .and_then(|port| port.parse::<u16>().ok());
                assert!(
                    port.is_some_and(|port| port != 0),
                    "askgate announced {url:?}, not http://127.0.0.1:PORT"
                );
                self.base = url;
                self.process = Some(process);
            }
            Err(error) => {
                process.kill();
                panic!(
                    "askgate did not print its listening line ({error}); its stderr:\n{}",
                    process.stderr()
                );
            }
        }
    }

    /// Kills askgate hard (`SIGKILL`): nothing is flushed, nothing is cleaned up.
    pub(crate) fn kill(&mut self) {
        let mut process = self.process.take().expect("askgate is running");
        process.kill();
        self.assert_no_secret_in(&mut process);
    }

    /// Every secret this server knows: the configured ones and those
    /// askgate generated into its data directory.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.config).unwrap_or_default();
        let mut secrets = configured_secrets(&text);
        let data_dir = text
            .parse::<toml::Table>()
            .ok()
            .and_then(|table| table.get("server")?.get("data_dir")?.as_str().map(PathBuf::from))
            .unwrap_or_else(|| self.dir.path().to_owned());
        for entry in std::fs::read_dir(data_dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if (name.starts_with("agent-token-")
                || name.starts_with("web-key-")
                || name.starts_with("webhook-secret-")
                || name == "web-session-key")
                && let Ok(secret) = std::fs::read_to_string(entry.path())
            {
                secrets.push(secret.trim().to_owned());
            }
        }
        secrets.retain(|secret| secret.len() >= 8);
        secrets
    }

    /// Asserts that no secret this server knows is in what the exited
    /// `process` wrote, to stderr (its log) or stdout (its announcements,
    /// which go to journald or `docker logs` too).
    fn assert_no_secret_in(&self, process: &mut Process) {
        let (stderr, stdout) = (process.stderr(), process.stdout());
        for secret in self.secrets() {
            let shown = format!("{}…", secret.chars().take(4).collect::<String>());
            assert!(
                !stderr.contains(&secret),
                "askgate logged the secret {shown}; its stderr:\n{stderr}"
            );
            assert!(
                !stdout.contains(&secret),
                "askgate printed the secret {shown}; its stdout:\n{stdout}"
            );
        }
    }

    /// Sends `SIGTERM` and waits up to `within` for askgate to exit.
    pub(crate) async fn terminate(&mut self, within: Duration) -> ExitStatus {
        let mut process = self.process.take().expect("askgate is running");
        let pid = process.child.id().to_string();
        let status = Self::signal_until_exit(&mut process, &pid, within).await;
        self.assert_no_secret_in(&mut process);
        status
    }

    async fn signal_until_exit(process: &mut Process, pid: &str, within: Duration) -> ExitStatus {
        send_signal("TERM", pid);
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = process.child.try_wait().expect("the child can be waited for") {
                return status;
            }
            if Instant::now() > deadline {
                process.kill();
                panic!(
                    "askgate did not exit within {within:?} of SIGTERM; its stderr:\n{}",
                    process.stderr()
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// The running process's id (to read its memory in `/proc`).
    pub(crate) fn pid(&self) -> u32 {
        self.process.as_ref().expect("askgate is running").child.id()
    }

    /// What askgate has written to stderr (its log).
    pub(crate) fn stderr(&mut self) -> String {
        self.process.as_mut().map(Process::stderr).unwrap_or_default()
    }

    /// What askgate has written to stdout (what it announces at start).
    pub(crate) fn stdout(&mut self) -> String {
        self.process.as_mut().map(Process::stdout).unwrap_or_default()
    }

    /// Sends `signal` (`"HUP"`) to the running askgate.
    pub(crate) fn signal(&self, signal: &str) {
        send_signal(signal, &self.pid().to_string());
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The absolute URL of a path.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The configuration file.
    pub(crate) fn config_path(&self) -> &Path {
        &self.config
    }

    /// `askgate link <verb> <person>` on this server's configuration: its
    /// stdout, once it succeeded.
    pub(crate) fn link(&self, verb: &str, person: &str) -> String {
        let out = Command::new(ASKGATE)
            .args(["link", verb, person, "--config"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .output()
            .expect("askgate link runs");
        assert!(
            out.status.success(),
            "askgate link {verb} {person}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    /// The data directory (also holds the configuration).
    pub(crate) fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// An HTTP client (cheap to clone; no proxy).
    pub(crate) fn http(&self) -> reqwest::Client {
        self.http.clone()
    }

    /// Sends a request and reads its reply.
    pub(crate) async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        Reply::read(request.send().await.expect("askgate answers the request")).await
    }

    /// `POST path` with a JSON body and an optional bearer token.
    pub(crate) async fn post_json(&self, path: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
        let mut request = self.http.post(self.url(path)).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await.status_json()
    }

    /// `POST path` with no body, with an optional bearer token.
    pub(crate) async fn post_empty(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut request = self.http.post(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await.status_json()
    }

    /// `GET path` with an optional bearer token; the body as JSON.
    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        self.get_reply(path, token).await.status_json()
    }

    /// `GET path` with an optional bearer token; the whole reply.
    pub(crate) async fn get_reply(&self, path: &str, token: Option<&str>) -> Reply {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    /// `POST /v1/questions` as agent `one`; the resource of the accepted question.
    pub(crate) async fn create(&self, body: &Value) -> Value {
        let (status, resource) = self.post_json("/v1/questions", Some(AGENT_TOKEN), body).await;
        assert_eq!(status, 201, "POST /v1/questions {body} answered {resource}");
        assert_eq!(resource["status"], "pending", "{resource}");
        resource
    }

    /// `GET /v1/questions/{id}` as agent `one`; the resource.
    pub(crate) async fn question(&self, id: &str) -> Value {
        let (status, resource) = self.get(&format!("/v1/questions/{id}"), Some(AGENT_TOKEN)).await;
        assert_eq!(status, 200, "GET /v1/questions/{id} answered {resource}");
        resource
    }

    /// Polls `GET /v1/questions/{id}` until its status is `status`.
    pub(crate) async fn question_with_status(&self, id: &str, status: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let resource = self.question(id).await;
            if resource["status"] == status {
                return resource;
            }
            assert!(
                Instant::now() < deadline,
                "question {id} is not {status} after {within:?}: {resource}"
            );
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// `GET /web/{key}/api/state`.
    pub(crate) async fn web_state(&self, key: &str) -> Value {
        let (status, state) = self.get(&format!("/web/{key}/api/state"), None).await;
        assert_eq!(status, 200, "the page state answered {state}");
        state
    }

    /// Polls the page state until it lists at least `count` pending questions; returns them.
    pub(crate) async fn pending_on_page(&self, key: &str, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + POLL_TIMEOUT;
        loop {
            let state = self.web_state(key).await;
            let pending = state["pending"]
                .as_array()
                .expect("the page state lists pending questions");
            if pending.len() >= count {
                return pending.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the page does not show {count} pending question(s) after {POLL_TIMEOUT:?}: {state}"
            );
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Answers on the web page: `answers` maps question ids to `{"options": [...], "text": ...}`.
    pub(crate) async fn web_answer(&self, key: &str, id: &str, answers: &Value) -> (u16, Value) {
        let path = format!("/web/{key}/api/questions/{id}/answer");
        self.post_json(&path, None, &json!({ "answers": answers })).await
    }

    /// Chooses option `index` of the question `question` on the web page.
    pub(crate) async fn web_choose(&self, key: &str, id: &str, question: &str, index: usize) -> (u16, Value) {
        self.web_answer(key, id, &json!({ question: {"options": [index], "text": null} }))
            .await
    }

    /// Skips a question on the web page.
    pub(crate) async fn web_skip(&self, key: &str, id: &str) -> (u16, Value) {
        self.post_json(&format!("/web/{key}/api/questions/{id}/skip"), None, &json!({}))
            .await
    }
}

/// A reply, read whole.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
}

impl Reply {
    /// Reads a response to its end; a 500 fails the test.
    pub(crate) async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let url = response.url().clone();
        let headers = response.headers().clone();
        let text = response.text().await.expect("the reply body can be read");
        assert_no_server_error(status, &format!("{url}: {text}"));
        Self { status, headers, text }
    }

    /// The body as JSON (leading whitespace allowed, as JSON allows it).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|error| panic!("the body ({}) is not JSON ({error}): {:?}", self.status, self.text))
    }

    /// The status and the body as JSON.
    pub(crate) fn status_json(&self) -> (u16, Value) {
        (self.status, self.json())
    }

    /// A header's value as text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// Fails the test on a 5xx: askgate must never fail on a test's request.
pub(crate) fn assert_no_server_error(status: u16, what: &str) {
    assert!(status < 500, "askgate answered {status}: {what}");
}

/// A `text/event-stream` response, read event by event.
pub(crate) struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub(crate) event: String,
    pub(crate) data: String,
}

impl EventStream {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        assert_no_server_error(response.status().as_u16(), response.url().as_str());
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (comments such as keep-alives skipped), or `None` when
    /// the stream ends. Fails the test if neither happens `within`.
    pub(crate) async fn next(&mut self, within: Duration) -> Option<Event> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event {
                    event: "message".to_owned(),
                    data: String::new(),
                };
                let mut has_data = false;
                for line in frame.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        name.trim().clone_into(&mut event.event);
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        has_data = true;
                    }
                }
                if has_data {
                    return Some(event);
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("no event and no end of the stream within {within:?}"))
                .expect("the event stream can be read");
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp
/// (`2026-12-02T16:00:00.000Z`, any fraction, `Z` or `±HH:MM`); fails the
/// test if `text` is not one.
pub(crate) fn rfc3339_millis(text: &str) -> i64 {
    let fail = || -> ! { panic!("{text:?} is not an RFC 3339 timestamp") };
    let bytes = text.as_bytes();
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        fail();
    }
    let number = |from: usize, to: usize| -> i64 {
        let digits = &text[from..to];
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            fail();
        }
        digits.parse().unwrap_or_else(|_| fail())
    };
    let (year, month, day) = (number(0, 4), number(5, 7), number(8, 10));
    let (hour, minute, second) = (number(11, 13), number(14, 16), number(17, 19));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        fail();
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            fail();
        }
        let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
        millis = padded.parse::<i64>().unwrap_or_else(|_| fail());
        rest = &fraction[digits..];
    }
    let offset_minutes = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let hours: i64 = rest[1..3].parse().unwrap_or_else(|_| fail());
            let minutes: i64 = rest[4..6].parse().unwrap_or_else(|_| fail());
            let total = hours * 60 + minutes;
            if *sign == b'+' { total } else { -total }
        }
        _ => fail(),
    };
    // Days from the civil date (H. Hinnant's algorithm).
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    ((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1000 + millis
}

/// A load test's seed and random source: seeded from the environment
/// variable `var` when it holds a number (to repeat a run), else at random;
/// the seed is printed, with `what` it repeats.
#[allow(
    clippy::print_stdout,
    reason = "the seed is for the person reading the test's output"
)]
pub(crate) fn seeded_rng(var: &str, what: &str) -> (u64, rand::rngs::StdRng) {
    use rand::SeedableRng as _;
    let seed = std::env::var(var)
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("seed {seed} ({var}={seed} repeats {what})");
    (seed, rand::rngs::StdRng::seed_from_u64(seed))
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    i64::try_from(since.as_millis()).expect("milliseconds fit an i64")
}

/// The value of a sample in Prometheus/OpenMetrics text (`name{labels}`
/// exactly as written), if it is there.
pub(crate) fn metric(text: &str, sample: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' '))
        .map(|value| {
            let value = value.split_whitespace().next().unwrap_or(value);
            value
                .parse()
                .unwrap_or_else(|_| panic!("{sample} has no number: {value:?}"))
        })
}

/// A question an agent asked with the blocking `POST /v1/ask`, its result
/// read in the background.
pub(crate) struct Asked {
    pub(crate) id: String,
    result: tokio::task::JoinHandle<Value>,
}

impl Asked {
    /// The tool result the waiting agent got.
    pub(crate) async fn result(&mut self, within: Duration) -> Value {
        match tokio::time::timeout(within, &mut self.result).await {
            Ok(result) => result.expect("the reading task does not panic"),
            Err(elapsed) => panic!(
                "question {}: the waiting agent got no result within {within:?} ({elapsed})",
                self.id
            ),
        }
    }

    /// A button's token for this question (`ag1:<id>:<action>`).
    pub(crate) fn token(&self, action: &str) -> String {
        format!("ag1:{}:{action}", self.id)
    }
}

impl Server {
    /// `POST /v1/ask` with `body`, its answer read in the background.
    pub(crate) async fn ask_waiting(&self, body: &Value) -> Asked {
        let response = self
            .http()
            .post(self.url("/v1/ask"))
            .bearer_auth(AGENT_TOKEN)
            .json(body)
            .send()
            .await
            .expect("askgate answers");
        assert_eq!(response.status().as_u16(), 200, "POST /v1/ask {body}");
        let id = response.headers()["askgate-question-id"]
            .to_str()
            .expect("an ASCII id")
            .to_owned();
        let result = tokio::spawn(async move {
            let text = response.text().await.expect("the whole answer");
            serde_json::from_str(text.trim()).unwrap_or_else(|error| panic!("{text:?} is not JSON: {error}"))
        });
        Asked { id, result }
    }
}

impl Server {
    /// [`Server::start_with`], with askgate's data directory at `data_dir`
    /// (a small file system, say) instead of beside the configuration;
    /// [`Server::data_dir`] still names the configuration's directory.
    pub(crate) fn start_with_data_dir(data_dir: &Path, server: &str, more: &str) -> Self {
        Self::start_in(
            tempfile::tempdir().expect("a temporary directory"),
            data_dir,
            server,
            more,
            Some("info,sqlx=warn"),
        )
    }
}

/// `askgate ask` as a script runs it: `args` then the prompt file `prompt`,
/// against `base`, with no `ASKGATE_*` variables of the test's environment.
pub(crate) fn ask_command(base: &str, args: &[&str], prompt: &Path) -> tokio::process::Child {
    tokio::process::Command::new(ASKGATE)
        .args(["ask", "--server", base])
        .args(args)
        .arg(prompt)
        .env_remove("ASKGATE_URL")
        .env_remove("ASKGATE_TOKEN")
        .env("NO_PROXY", "127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("askgate ask starts")
}

/// How an `askgate ask` ended: its exit code, stdout and stderr.
#[derive(Debug)]
pub(crate) struct AskEnded {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl AskEnded {
    /// Waits (within `within`) for `command` to exit.
    pub(crate) async fn of(command: tokio::process::Child, within: Duration) -> Self {
        let output = tokio::time::timeout(within, command.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("askgate ask did not end within {within:?}"))
            .expect("askgate ask runs");
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// stdout as JSON, after checking the exit code is `code`.
    pub(crate) fn json_with_code(&self, code: i32) -> Value {
        assert_eq!(self.code, Some(code), "{self:?}");
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:?}"))
    }
}
