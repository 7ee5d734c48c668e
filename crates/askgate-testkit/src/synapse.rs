//! A real Synapse homeserver on `127.0.0.1`, for the Matrix tests: the
//! adapter's and the end-to-end ones. Matrix has no fake here; Synapse is
//! the reference server, and it starts in seconds.
//!
//! This module owns three things:
//!
//! - **The virtualenv**, `<target>/synapse-venv`, holding the `matrix-synapse`
//!   pinned in `crates/askgate-testkit/synapse-requirements.txt`. It is built
//!   when missing or when that file changed (a stamp inside records what it
//!   holds), under a lock file so that test binaries running at once build it
//!   once. It needs `python3` (3.10 or later) with its `venv` module, and pip
//!   needs the Python Package Index (or an index or wheel directory given in
//!   `PIP_INDEX_URL` or `PIP_FIND_LINKS`). What is missing is a panic saying
//!   so, never a skipped test.
//! - **The server**, [`Synapse`]: a fresh temporary directory with its
//!   configuration, SQLite database, media store, signing key and log; one
//!   plain-HTTP client listener on a free port; no federation, no key
//!   servers, no presence, no registration but the shared-secret admin API,
//!   and rate limits out of the way. It is stopped when dropped, and when the
//!   test process ends however it ends: a watcher beside it kills it when the
//!   test process's end of a pipe closes, so even [`Synapse::shared`] (a
//!   static, never dropped) leaves nothing running.
//! - **Accounts**: [`Synapse::register`] creates a user (an admin if asked)
//!   and logs it in, [`Synapse::login`] logs in again (a new device).
//!
//! Starting and stopping block (the processes are `std`'s, so the server
//! outlives any one test's runtime); the HTTP calls are `async`.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha1::Sha1;
use tempfile::TempDir;

/// What the virtualenv holds; a change rebuilds it.
const REQUIREMENTS: &str = include_str!("../synapse-requirements.txt");
/// The oldest Python the pinned Synapse installs on.
const PYTHON: (u32, u32) = (3, 10);
/// Each setup command (pip downloads some 60 wheels).
const INSTALL_TIMEOUT: Duration = Duration::from_mins(10);
/// From spawning Synapse to its first answer (under two seconds when idle).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Each HTTP request to the server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The server's name: user ids are `@<localpart>:localhost`.
const SERVER_NAME: &str = "localhost";
/// The server's ed25519 signing key. It signs events that no other server
/// ever checks (there is no federation), so a fixed one serves.
const SIGNING_KEY: &str = "ed25519 a_askgate AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n";
/// Runs Synapse in place of the shell (same pid, so the [`Child`] is
/// Synapse), with a watcher beside it that kills it once its stdin, a pipe
/// only the test process holds, reaches its end: when the test process
/// exits, is killed, or drops the [`Synapse`]. The watcher then removes the
/// server's directory, which a static server's drop never does.
/// `$0`: the virtualenv's python, `$1`: the configuration, `$2`: the directory.
const SUPERVISOR: &str = r#"
exec 3<&0 </dev/null
{
  cat <&3 >/dev/null
  kill -TERM $$ 2>/dev/null
  for _ in $(seq 100); do kill -0 $$ 2>/dev/null || break; sleep 0.1; done
  kill -KILL $$ 2>/dev/null
  rm -rf "$2"
} &
exec "$0" -m synapse.app.homeserver -c "$1" 3<&-
"#;

/// A running Synapse, stopped (and its directory removed) when dropped.
#[derive(Debug)]
pub struct Synapse {
    port: u16,
    registration_shared_secret: String,
    /// Synapse itself; its stdin is the watcher's pipe.
    child: Child,
    dir: TempDir,
}

/// A user logged in on one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// `@<localpart>:<server name>`.
    pub user_id: String,
    /// For `Authorization: Bearer …`.
    pub access_token: String,
    /// The device this login created.
    pub device_id: String,
    /// The password, to log in again.
    pub password: String,
}

/// A request Synapse refused: the status and the Matrix error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixError {
    /// The HTTP status, as `403`.
    pub status: u16,
    /// The Matrix error code, as `M_FORBIDDEN`.
    pub errcode: String,
    /// The server's explanation.
    pub error: String,
}

impl std::fmt::Display for MatrixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.errcode, self.error)
    }
}

impl std::error::Error for MatrixError {}

/// Why one attempt at starting did not give a server.
enum StartFailure {
    /// Another process bound the free port before Synapse did: try again.
    PortTaken,
    /// Anything else: the panic message.
    Failed(String),
}

impl Synapse {
    /// Starts a server of the test's own (installing Synapse first when
    /// the virtualenv lacks it) and returns once it answers.
    ///
    /// # Panics
    ///
    /// When Synapse cannot be installed (saying what is missing and how to
    /// provide it), or does not start within a minute (with its log).
    pub fn start() -> Self {
        let python = virtualenv_python();
        let mut attempt = 1;
        loop {
            match Self::try_start(&python) {
                Ok(synapse) => return synapse,
                Err(StartFailure::PortTaken) if attempt < 3 => attempt += 1,
                Err(StartFailure::PortTaken) => panic!("Synapse found its port taken three times"),
                Err(StartFailure::Failed(message)) => panic!("{message}"),
            }
        }
    }

    /// One server for the whole test process, started by the first caller:
    /// tests sharing it keep apart by using users and rooms of their own
    /// ([`Synapse::unique_localpart`]). It stops when the process ends.
    ///
    /// # Panics
    ///
    /// As [`Synapse::start`]; the next caller tries again.
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<Synapse> = OnceLock::new();
        SHARED.get_or_init(Self::start)
    }

    /// The client-server API's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's name, the part of user ids after the colon.
    pub fn server_name(&self) -> &str {
        SERVER_NAME
    }

    /// The user id a localpart has here, `@<localpart>:localhost`.
    pub fn user_id(&self, localpart: &str) -> String {
        format!("@{localpart}:{SERVER_NAME}")
    }

    /// `<prefix>-<n>`, a localpart no other call in this process returns:
    /// for tests that share a server.
    pub fn unique_localpart(prefix: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// What Synapse logged so far: warnings and errors, and anything the
    /// process wrote to its stdout or stderr.
    pub fn log(&self) -> String {
        read_lossy(&self.dir.path().join("synapse.log"))
    }

    /// Creates the user `localpart` (an admin when `admin`) with a password
    /// of its own, through the shared-secret registration API, which also
    /// logs it in.
    ///
    /// # Panics
    ///
    /// When Synapse refuses (the localpart is taken or invalid).
    pub async fn register(&self, localpart: &str, admin: bool) -> Account {
        let path = "/_synapse/admin/v1/register";
        let nonce = self.call(reqwest::Method::GET, path, None).await;
        let nonce = nonce
            .unwrap_or_else(|error| panic!("GET {path}: {error}"))
            .get("nonce")
            .and_then(Value::as_str)
            .expect("a registration nonce")
            .to_owned();
        let password = format!("askgate-{}", ulid::Ulid::new());
        // Synapse's documented MAC: HMAC-SHA1 of the fields, NUL-separated.
        let kind = if admin { "admin" } else { "notadmin" };
        let mut mac =
            Hmac::<Sha1>::new_from_slice(self.registration_shared_secret.as_bytes()).expect("HMAC takes any key");
        mac.update(format!("{nonce}\0{localpart}\0{password}\0{kind}").as_bytes());
        let body = json!({
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": hex::encode(mac.finalize().into_bytes()),
        });
        match self.call(reqwest::Method::POST, path, Some(&body)).await {
            Ok(answer) => account(&answer, password),
            Err(error) => panic!("registering {localpart}: {error}"),
        }
    }

    /// Logs `user` (a localpart or a user id) in with `password`: a new
    /// device and access token.
    ///
    /// # Panics
    ///
    /// When Synapse refuses ([`Synapse::try_login`] returns the refusal).
    pub async fn login(&self, user: &str, password: &str) -> Account {
        self.try_login(user, password)
            .await
            .unwrap_or_else(|error| panic!("logging {user} in: {error}"))
    }

    /// Logs `user` in with `password`, or says how Synapse refused.
    pub async fn try_login(&self, user: &str, password: &str) -> Result<Account, MatrixError> {
        let body = json!({
            "type": "m.login.password",
            "identifier": { "type": "m.id.user", "user": user },
            "password": password,
        });
        let answer = self
            .call(reqwest::Method::POST, "/_matrix/client/v3/login", Some(&body))
            .await?;
        Ok(account(&answer, password.to_owned()))
    }

    /// Lets `user_id` send `per_second` messages a second after a burst of
    /// `burst` (Synapse's per-user override of `rc_message`, which the
    /// generated configuration leaves unlimited for everyone else): how a
    /// test meets the homeserver's real `M_LIMIT_EXCEEDED`.
    ///
    /// # Panics
    ///
    /// When Synapse refuses.
    pub async fn limit_messages(&self, user_id: &str, per_second: u32, burst: u32) {
        let admin = self.register(&Self::unique_localpart("admin"), true).await;
        let path = format!("/_synapse/admin/v1/users/{user_id}/override_ratelimit");
        let body = json!({ "messages_per_second": per_second, "burst_count": burst });
        self.call_as(Some(&admin.access_token), reqwest::Method::POST, &path, Some(&body))
            .await
            .unwrap_or_else(|error| panic!("POST {path}: {error}"));
    }

    /// One request without an access token: the JSON answer, or the
    /// refusal.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, MatrixError> {
        self.call_as(None, method, path, body).await
    }

    /// One request, with `token` when given. A client per call: a shared
    /// server outlives each test's runtime, and a pooled connection must not.
    async fn call_as(
        &self,
        token: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, MatrixError> {
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .expect("an HTTP client");
        let mut request = client.request(method.clone(), format!("{}{path}", self.url()));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|error| panic!("{method} {path} on Synapse: {error}\n{}", log_tail(&self.log())));
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .unwrap_or_else(|error| panic!("{method} {path} on Synapse: {status}, not JSON: {error}"));
        if status.is_success() {
            return Ok(answer);
        }
        let field = |name: &str| answer.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        Err(MatrixError {
            status: status.as_u16(),
            errcode: field("errcode"),
            error: field("error"),
        })
    }

    fn try_start(python: &Path) -> Result<Self, StartFailure> {
        let dir = tempfile::Builder::new()
            .prefix("askgate-synapse-")
            .tempdir()
            .expect("a temporary directory for Synapse");
        let port = free_port();
        let registration_shared_secret = format!("{}{}", ulid::Ulid::new(), ulid::Ulid::new());
        let config = write_config(dir.path(), port, &registration_shared_secret);
        let log_path = dir.path().join("synapse.log");
        // Appending, as the log configuration's handler does: both write to
        // one file without overwriting each other.
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("Synapse's log file");
        let child = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg(python)
            .arg(&config)
            .arg(dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("Synapse could not be started with sh: {error}"));
        let mut synapse = Self {
            port,
            registration_shared_secret,
            child,
            dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if answers(port) {
                return Ok(synapse);
            }
            let exited = synapse.child.try_wait().expect("Synapse's status");
            if let Some(status) = exited {
                let log = synapse.log();
                if log.contains("Address already in use") {
                    return Err(StartFailure::PortTaken);
                }
                return Err(StartFailure::Failed(format!(
                    "Synapse exited ({status}) before it answered on port {port}; its log:\n{}",
                    log_tail(&log)
                )));
            }
            if Instant::now() > deadline {
                return Err(StartFailure::Failed(format!(
                    "Synapse did not answer on port {port} within {START_TIMEOUT:?}; its log:\n{}",
                    log_tail(&synapse.log())
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        // Killed outright: the test is done with it, and its directory goes
        // with it. Closing the pipe then ends the watcher.
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.child.stdin.take());
    }
}

/// An [`Account`] from a registration's or a login's answer.
fn account(answer: &Value, password: String) -> Account {
    let field = |name: &str| {
        answer
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("Synapse's answer has no {name}: {answer}"))
            .to_owned()
    };
    Account {
        user_id: field("user_id"),
        access_token: field("access_token"),
        device_id: field("device_id"),
        password,
    }
}

/// A port nothing listens on now: bound, read and released.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// Whether `GET /_matrix/client/versions` answers 200, over a plain
/// connection (this runs before, and outside, any async runtime).
fn answers(port: u16) -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) else {
        return false;
    };
    let mut answer = Vec::new();
    let exchanged = stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(5))))
        .and_then(|()| stream.write_all(b"GET /_matrix/client/versions HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"))
        // HTTP/1.0: the server closes the connection after its answer.
        .and_then(|()| stream.read_to_end(&mut answer));
    exchanged.is_ok() && answer.split(|byte| *byte == b' ').nth(1) == Some(b"200")
}

/// Writes the configuration (JSON, which YAML reads as it is), its log
/// configuration and the signing key into `dir`; returns the
/// configuration's path.
fn write_config(dir: &Path, port: u16, registration_shared_secret: &str) -> PathBuf {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // High enough that no test meets a limit.
    let unlimited = json!({ "per_second": 100_000, "burst_count": 1_000_000 });
    let config = json!({
        "server_name": SERVER_NAME,
        "pid_file": path("homeserver.pid"),
        "listeners": [{
            "port": port,
            "bind_addresses": ["127.0.0.1"],
            "type": "http",
            "tls": false,
            "x_forwarded": false,
            "resources": [{ "names": ["client"], "compress": false }],
        }],
        "database": { "name": "sqlite3", "args": { "database": path("homeserver.db") } },
        "log_config": path("log.yaml"),
        "media_store_path": path("media"),
        "signing_key_path": path("signing.key"),
        "registration_shared_secret": registration_shared_secret,
        "enable_registration": false,
        "report_stats": false,
        // No internet: no key servers, no federation with anyone.
        "trusted_key_servers": [],
        "suppress_key_server_warning": true,
        "federation_domain_whitelist": [],
        "presence": { "enabled": false },
        // bcrypt's fewest rounds: a registration or login in milliseconds,
        // not a quarter of a second.
        "bcrypt_rounds": 4,
        "rc_message": unlimited,
        "rc_registration": unlimited,
        "rc_login": { "address": unlimited, "account": unlimited, "failed_attempts": unlimited },
        "rc_joins": { "local": unlimited, "remote": unlimited },
        "rc_joins_per_room": unlimited,
        "rc_invites": { "per_room": unlimited, "per_user": unlimited, "per_issuer": unlimited },
        "rc_3pid_validation": unlimited,
        "rc_admin_redaction": unlimited,
        "rc_room_creation": unlimited,
        "rc_presence": { "per_user": unlimited },
        "rc_delayed_event_mgmt": unlimited,
        "rc_reports": unlimited,
        "rc_user_directory": unlimited,
        "rc_profile": unlimited,
        "rc_media_create": unlimited,
    });
    let log_config = json!({
        "version": 1,
        "formatters": { "plain": { "format": "%(asctime)s %(levelname)s %(name)s: %(message)s" } },
        "handlers": {
            "file": { "class": "logging.FileHandler", "formatter": "plain", "filename": path("synapse.log") },
        },
        "root": { "level": "WARNING", "handlers": ["file"] },
        "disable_existing_loggers": false,
    });
    let write = |name: &str, contents: &str| {
        std::fs::write(dir.join(name), contents).unwrap_or_else(|error| panic!("Synapse's {name}: {error}"));
    };
    write("homeserver.yaml", &config.to_string());
    write("log.yaml", &log_config.to_string());
    write("signing.key", SIGNING_KEY);
    dir.join("homeserver.yaml")
}

/// The last lines of a log, enough to show why a start failed.
fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// A file's text; output that is not UTF-8 is still worth showing.
fn read_lossy(path: &Path) -> String {
    std::fs::read(path).map_or_else(
        |error| format!("({}: {error})", path.display()),
        |bytes| String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The cargo target directory: `CARGO_TARGET_DIR` when it is set (and
/// absolute: a relative one is relative to where cargo ran, not to here),
/// else the nearest directory above this executable that cargo tagged as
/// its cache (`CACHEDIR.TAG`), else the one above `<target>/debug/deps`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from)
        && dir.is_absolute()
    {
        return dir;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    if let Some(dir) = exe.ancestors().find(|dir| dir.join("CACHEDIR.TAG").is_file()) {
        return dir.to_path_buf();
    }
    exe.ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("no target directory above {}", exe.display()))
        .to_path_buf()
}

/// The virtualenv's python, with the pinned Synapse installed: the
/// virtualenv already there when its stamp matches, else a new one.
fn virtualenv_python() -> PathBuf {
    let target = target_dir();
    let venv = target.join("synapse-venv");
    std::fs::create_dir_all(&target).expect("the target directory");
    // Held until this returns: test binaries starting at once install once.
    let lock = File::create(target.join("synapse-venv.lock")).expect("the virtualenv's lock file");
    lock.lock().expect("the virtualenv's lock");
    let python = venv.join("bin").join("python");
    let stamp = venv.join("askgate-requirements.txt");
    if python.exists() && std::fs::read_to_string(&stamp).is_ok_and(|installed| installed == REQUIREMENTS) {
        return python;
    }
    if venv.exists() {
        std::fs::remove_dir_all(&venv).expect("the outdated virtualenv can be removed");
    }
    let (major, minor) = PYTHON;
    let python_missing = format!(
        "The Synapse tests need Python {major}.{minor} or later as `python3`, with its venv module \
         (Debian: `sudo apt-get install -y python3 python3-venv`)."
    );
    setup(
        &format!("python3 ({major}.{minor} or later)"),
        &python_missing,
        Command::new("python3").args([
            "-c",
            &format!("import sys; sys.exit(sys.version_info < ({major}, {minor}))"),
        ]),
    );
    setup(
        &format!("python3 -m venv {}", venv.display()),
        &python_missing,
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
    );
    let requirements = venv.join("requirements.txt");
    std::fs::write(&requirements, REQUIREMENTS).expect("the virtualenv's requirements");
    setup(
        "pip install -r crates/askgate-testkit/synapse-requirements.txt",
        "pip could not install Synapse into the virtualenv: it needs access to PyPI (or an index or \
         wheel directory given in PIP_INDEX_URL or PIP_FIND_LINKS) and Synapse's wheels for this \
         Python and platform.",
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
            // Wheels only: building Synapse from source needs Rust and takes
            // minutes; no wheel for this platform should say so instead.
            .arg("--only-binary=:all:")
            .arg("-r")
            .arg(&requirements),
    );
    std::fs::write(&stamp, REQUIREMENTS).expect("the virtualenv's stamp");
    python
}

/// Runs a setup command, its stdin closed and its output kept, within
/// [`INSTALL_TIMEOUT`]; on failure, `missing` says what is missing and how
/// to provide it, followed by the command's output.
#[allow(
    clippy::print_stdout,
    reason = "a test's progress goes to its captured stdout, shown by `--nocapture` and on failure"
)]
fn setup(what: &str, missing: &str, command: &mut Command) {
    println!("Synapse test setup: {what}");
    let (status, output) = crate::process::run_within(command, INSTALL_TIMEOUT)
        .unwrap_or_else(|error| panic!("Synapse test setup: could not run {what} ({error}). {missing}"));
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!("Synapse test setup: {what} failed ({status}). {missing}\n{output}"),
        None => panic!("Synapse test setup: {what} did not finish within {INSTALL_TIMEOUT:?}. {missing}\n{output}"),
    }
}
