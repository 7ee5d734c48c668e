//! The configuration: one TOML file, secrets as `${ENV_VAR}` references,
//! unknown keys refused, every problem reported with its key and a fix.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use askgate_adapter::config::{ChannelSettings, ConfigCheck, ServerContext};

use crate::channels::kinds;

mod callbacks;
mod log;
mod oidc;
mod recipients;
mod waiting;

pub(crate) use askgate_adapter::config::{Problem, Problems, Secret};
use askgate_store::PgStore;
pub(crate) use callbacks::AgentCallbacks;
pub(crate) use log::{DEFAULT_LEVEL as DEFAULT_LOG_LEVEL, LogConfig, LogFormat};
pub(crate) use oidc::OidcConfig;
use recipients::RawRecipient;
pub(crate) use recipients::RecipientConfig;
use serde::Deserialize;

/// The embedded default: SQLite and the web page on loopback, no tokens.
pub(crate) const EMBEDDED_DEFAULT: &str = include_str!("../../../../config/askgate.toml");

/// `[store] retention_days` when absent.
const DEFAULT_RETENTION_DAYS: u32 = 30;

/// A checked configuration.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) listen: SocketAddr,
    pub(crate) public_url: Option<String>,
    pub(crate) data_dir: PathBuf,
    pub(crate) max_body_bytes: usize,
    pub(crate) ask_keepalive: Duration,
    pub(crate) ask_retry_grace: Duration,
    pub(crate) limits: askgate_engine::Limits,
    pub(crate) connections: askgate_server::ConnectionLimits,
    /// `[mcp] wait_seconds`: the longest an MCP tool call waits for an answer.
    pub(crate) mcp_wait: Duration,
    /// `[mcp] max_sessions_per_token`: the most `/mcp` sessions one agent token holds.
    pub(crate) mcp_max_sessions: usize,
    /// `[store]`: where questions are kept.
    pub(crate) store: StoreConfig,
    /// `[store] retention_days`: how long ended questions and remembered
    /// platform events are kept; `None` (`0`) keeps them for ever.
    pub(crate) retention: Option<Duration>,
    pub(crate) agents: Vec<AgentConfig>,
    pub(crate) channels: Vec<Box<dyn ChannelSettings>>,
    pub(crate) recipients: Vec<RecipientConfig>,
    /// `[log]`: the format and filter of the logs.
    pub(crate) log: LogConfig,
    /// `[web.oidc]`: sign-in to the page with OpenID Connect.
    pub(crate) oidc: Option<OidcConfig>,
}

/// `[store]`: where questions are kept.
#[derive(Debug, Clone)]
pub(crate) enum StoreConfig {
    /// The embedded default: one SQLite file.
    Sqlite {
        /// `path`, under `data_dir`.
        path: PathBuf,
    },
    /// A PostgreSQL database.
    Postgres {
        /// `url`, with its password: a secret.
        url: Secret,
        /// `max_connections`: the pool's size.
        connections: u32,
    },
}

/// `[store] max_connections` when absent: PostgreSQL's own default allows
/// 100 connections, enough for several replicas at this size.
const DEFAULT_PG_CONNECTIONS: u32 = 10;

#[derive(Debug, Clone)]
pub(crate) struct AgentConfig {
    pub(crate) name: String,
    /// `token`, or `tokens` while one is rotated: every one is accepted;
    /// empty: askgate's generated one.
    pub(crate) tokens: Vec<Secret>,
    /// `None` for `"*"`.
    pub(crate) recipients: Option<Vec<String>>,
    /// Reminders and escalations of its questions (over the recipient's).
    pub(crate) nudges: askgate_engine::Nudges,
    /// `max_timeout`: the longest `timeoutSeconds` `POST /v1/questions`
    /// takes from this agent, in seconds (the contract's hour by default).
    pub(crate) max_timeout_seconds: u32,
    /// Where its questions' results are sent, and how they are signed.
    pub(crate) callbacks: AgentCallbacks,
}

#[derive(Debug, Default, Deserialize)]
struct RawConfig {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    store: RawStore,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    mcp: RawMcp,
    #[serde(default)]
    log: log::RawLog,
    #[serde(default)]
    agents: BTreeMap<String, RawAgent>,
    #[serde(default)]
    channels: BTreeMap<String, RawChannel>,
    #[serde(default)]
    recipients: BTreeMap<String, RawRecipient>,
    #[serde(default)]
    web: oidc::RawWeb,
}

#[derive(Debug, Default, Deserialize)]
struct RawServer {
    listen: Option<String>,
    public_url: Option<String>,
    data_dir: Option<String>,
    max_body_bytes: Option<u64>,
    ask_keepalive_seconds: Option<u64>,
    ask_retry_grace_seconds: Option<u64>,
    max_connections: Option<u64>,
    header_read_timeout_seconds: Option<u64>,
    body_timeout_seconds: Option<u64>,
    idle_timeout_seconds: Option<u64>,
    shutdown_deadline_seconds: Option<u64>,
}

/// `[limits]`: caps on what agents may leave pending.
#[derive(Debug, Default, Deserialize)]
struct RawLimits {
    max_pending_per_agent: Option<u32>,
    max_pending_per_recipient: Option<u32>,
}

/// `[mcp]`: the MCP server (`/mcp` and `askgate mcp`).
#[derive(Debug, Default, Deserialize)]
struct RawMcp {
    wait_seconds: Option<u64>,
    max_sessions_per_token: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct RawStore {
    kind: Option<String>,
    path: Option<String>,
    url: Option<String>,
    max_connections: Option<u32>,
    retention_days: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct RawAgent {
    token: Option<String>,
    tokens: Option<Vec<String>>,
    recipients: Vec<String>,
    remind: Option<Vec<String>>,
    escalate: Option<Vec<waiting::RawEscalation>>,
    /// A duration (`"8h"`, `"7d"`) or whole seconds.
    max_timeout: Option<toml::Value>,
    callback_url: Option<String>,
    callback_hosts: Option<Vec<String>>,
    webhook_secret: Option<String>,
}

/// A channel: its `type`, and the rest for that kind to read.
#[derive(Debug, Deserialize)]
pub(super) struct RawChannel {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(flatten)]
    rest: toml::Table,
}

/// Parses and checks a configuration; `env` reads environment variables.
// One pass over the file, section by section, in the order a reader sees them.
#[allow(clippy::too_many_lines)]
pub(crate) fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, Problems> {
    // Unknown keys are collected (serde_ignored) rather than refused by
    // `deny_unknown_fields`, which would stop at the first and hide the rest.
    let (raw, unknown, type_problems) = read_raw(text)?;
    // A section whose entries were set aside for their types is not empty
    // to the admin: "none is configured" would mislead.
    let set_aside_in = |section: &str| {
        type_problems.iter().any(|problem| {
            problem
                .key
                .strip_prefix(section)
                .is_some_and(|rest| rest.starts_with('.'))
        })
    };
    let (channels_set_aside, recipients_set_aside, agents_set_aside) = (
        set_aside_in("channels"),
        set_aside_in("recipients"),
        set_aside_in("agents"),
    );
    let mut check = ConfigCheck::new(env);
    for problem in type_problems {
        check.problem(&problem.key, problem.what, problem.fix);
    }
    for key in unknown {
        check.problem(
            &key,
            "this key is not an askgate option.",
            "remove it or correct its spelling; config/example.toml lists every option.",
        );
    }

    let listen_text = raw.server.listen.as_deref().unwrap_or("127.0.0.1:8080");
    let listen = check
        .value("server.listen", listen_text)
        .and_then(|text| match text.parse::<SocketAddr>() {
            Ok(address) => Some(address),
            Err(_) => {
                check.problem(
                    "server.listen",
                    format!("\"{text}\" is not an address and port."),
                    "write it as \"127.0.0.1:8080\" (or \"0.0.0.0:8080\" to listen on every interface).",
                );
                None
            }
        });
    let public_url = raw
        .server
        .public_url
        .as_deref()
        .and_then(|url| check.value("server.public_url", url));
    if let Some(url) = &public_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        check.problem(
            "server.public_url",
            format!("\"{url}\" is not an http(s) URL."),
            "write it as \"https://askgate.example.com\".",
        );
    }
    let data_dir = PathBuf::from(raw.server.data_dir.as_deref().unwrap_or("askgate-data"));
    let max_body_bytes = usize::try_from(raw.server.max_body_bytes.unwrap_or(64 * 1024)).unwrap_or(usize::MAX);
    if max_body_bytes < 1024 {
        check.problem(
            "server.max_body_bytes",
            "below 1024 bytes no request fits.",
            "use 65536, the default.",
        );
    }
    let ask_keepalive = Duration::from_secs(raw.server.ask_keepalive_seconds.unwrap_or(5).max(1));
    let ask_retry_grace = Duration::from_secs(raw.server.ask_retry_grace_seconds.unwrap_or(15));
    let limits = pending_limits(&raw.limits, &mut check);
    let connections = server_connections(&raw.server, &mut check);
    let mcp_wait = match raw.mcp.wait_seconds {
        None => askgate_server::mcp::DEFAULT_WAIT,
        Some(0) => {
            check.problem(
                "mcp.wait_seconds",
                "0 seconds would return every MCP call as pending at once.",
                "use 50, the default (MCP clients often give up on a call after 60 s).",
            );
            askgate_server::mcp::DEFAULT_WAIT
        }
        Some(seconds) => Duration::from_secs(seconds),
    };
    let mcp_max_sessions = match raw.mcp.max_sessions_per_token {
        None => askgate_server::mcp::DEFAULT_MAX_SESSIONS_PER_TOKEN,
        Some(0) => {
            check.problem(
                "mcp.max_sessions_per_token",
                "0 sessions would refuse every MCP client.",
                format!(
                    "use {}, the default, or more when many agents share one token.",
                    askgate_server::mcp::DEFAULT_MAX_SESSIONS_PER_TOKEN
                ),
            );
            askgate_server::mcp::DEFAULT_MAX_SESSIONS_PER_TOKEN
        }
        Some(count) => usize::try_from(count).unwrap_or(usize::MAX),
    };

    let log = log::log(&raw.log, &mut check);
    let store = store(&raw.store, &data_dir, &mut check);
    let retention = match raw.store.retention_days.unwrap_or(DEFAULT_RETENTION_DAYS) {
        0 => None,
        days => Some(Duration::from_secs(u64::from(days) * 86_400)),
    };

    let kinds = kinds();
    let kind_of = |kind: &str| kinds.iter().find(|k| k.kind() == kind);
    let kind_names = kinds
        .iter()
        .map(|k| format!("\"{}\"", k.kind()))
        .collect::<Vec<_>>()
        .join(", ");
    let server = ServerContext::new(raw.server.public_url.as_deref());
    let mut channels = Vec::new();
    for (name, channel) in &raw.channels {
        match kind_of(&channel.kind) {
            Some(kind) => channels.extend(kind.channel(&mut check, name, channel.rest.clone(), server)),
            None => check.problem(
                &format!("channels.{name}.type"),
                format!("\"{}\" is not a channel type askgate has.", channel.kind),
                format!("use one of {kind_names}."),
            ),
        }
    }
    if raw.channels.is_empty() && !channels_set_aside {
        check.problem(
            "channels",
            "no channel is configured.",
            "add [channels.web] with type = \"web\".",
        );
    }

    // The longest any question may wait, the longest of the agents'
    // max_timeout (each read again below, where its problems are told): a
    // recipient's escalation after it never happens.
    let longest_wait = raw
        .agents
        .values()
        .map(|agent| max_timeout("", agent.max_timeout.as_ref(), &mut ConfigCheck::new(env)))
        .max()
        .unwrap_or(askgate_core::request::MAX_TIMEOUT_SECONDS);
    let recipients = recipients::recipients(&raw.recipients, &raw.channels, &kinds, longest_wait, &mut check);
    if raw.recipients.is_empty() && !recipients_set_aside {
        check.problem(
            "recipients",
            "no recipient is configured.",
            "add [recipients.me] with channel = \"web\".",
        );
    }

    let mut agents = Vec::new();
    for (name, agent) in &raw.agents {
        let tokens = check.secrets(
            (&format!("agents.{name}.token"), agent.token.as_deref()),
            (&format!("agents.{name}.tokens"), agent.tokens.as_deref()),
        );
        let allowed = if agent.recipients.iter().any(|r| r == "*") {
            None
        } else {
            for unknown in agent.recipients.iter().filter(|r| !raw.recipients.contains_key(*r)) {
                check.problem(
                    &format!("agents.{name}.recipients"),
                    format!("there is no recipient named \"{unknown}\"."),
                    format!("name one of: {}, or \"*\".", names(raw.recipients.keys())),
                );
            }
            if agent.recipients.is_empty() {
                check.problem(
                    &format!("agents.{name}.recipients"),
                    "the agent may ask nobody.",
                    "list recipient names, or \"*\".",
                );
            }
            Some(agent.recipients.clone())
        };
        let max_timeout_seconds = max_timeout(
            &format!("agents.{name}.max_timeout"),
            agent.max_timeout.as_ref(),
            &mut check,
        );
        let known: Vec<&String> = raw.recipients.keys().collect();
        let nudges = waiting::nudges(
            &format!("agents.{name}"),
            agent.remind.as_deref(),
            agent.escalate.as_deref(),
            &known,
            max_timeout_seconds,
            None,
            &mut check,
        );
        let callbacks = callbacks::agent_callbacks(
            name,
            agent.callback_url.as_deref(),
            agent.callback_hosts.as_deref(),
            agent.webhook_secret.as_deref(),
            &mut check,
        );
        agents.push(AgentConfig {
            callbacks,
            name: name.clone(),
            tokens,
            recipients: allowed,
            nudges,
            max_timeout_seconds,
        });
    }
    waiting::chats_only(&recipients, &agents, &mut check);
    let oidc = oidc::oidc(&raw.web, &mut check);
    oidc::people(&recipients, raw.web.configured(), &mut check);
    // A token names its agent: two agents sharing one would be told apart
    // by nothing (and only one of them would ever be found).
    for (index, agent) in agents.iter().enumerate() {
        for other in &agents[index + 1..] {
            if agent
                .tokens
                .iter()
                .any(|token| other.tokens.iter().any(|o| o.expose() == token.expose()))
            {
                check.problem(
                    &format!("agents.{}.tokens", other.name),
                    format!("agents \"{}\" and \"{}\" have the same token.", agent.name, other.name),
                    "give each agent its own token (e.g. `openssl rand -hex 24`).",
                );
            }
        }
    }
    if raw.agents.is_empty() && !agents_set_aside {
        check.problem(
            "agents",
            "no agent token is configured: no agent could ask.",
            "add [agents.default] with recipients = [\"*\"].",
        );
    }

    let problems = check.into_problems();
    if !problems.is_empty() {
        return Err(Problems(problems));
    }
    let listen = listen.ok_or_else(|| Problems(Vec::new()))?;
    Ok(Config {
        listen,
        public_url,
        data_dir,
        max_body_bytes,
        ask_keepalive,
        ask_retry_grace,
        limits,
        connections,
        mcp_wait,
        mcp_max_sessions,
        store,
        retention,
        agents,
        channels,
        recipients,
        log,
        oidc,
    })
}

/// `[store]`: the kind, and the keys that kind reads (a key of the other
/// kind is a problem, not silently ignored).
fn store(raw: &RawStore, data_dir: &std::path::Path, check: &mut ConfigCheck<'_>) -> StoreConfig {
    let sqlite = || StoreConfig::Sqlite {
        path: data_dir.join(raw.store_path()),
    };
    match raw.kind.as_deref().unwrap_or("sqlite") {
        "sqlite" => {
            for (key, set) in [
                ("store.url", raw.url.is_some()),
                ("store.max_connections", raw.max_connections.is_some()),
            ] {
                if set {
                    check.problem(
                        key,
                        "only a PostgreSQL store reads this key.",
                        "remove it, or set kind = \"postgres\".",
                    );
                }
            }
            sqlite()
        }
        "postgres" => {
            if raw.path.is_some() {
                check.problem(
                    "store.path",
                    "a PostgreSQL store has no file.",
                    "remove path (the database is the one in url).",
                );
            }
            let connections = match raw.max_connections.unwrap_or(DEFAULT_PG_CONNECTIONS) {
                0 => {
                    check.problem(
                        "store.max_connections",
                        "0 connections could never reach the database.",
                        format!("use {DEFAULT_PG_CONNECTIONS}, the default."),
                    );
                    DEFAULT_PG_CONNECTIONS
                }
                n => n,
            };
            let url = check.required_secret(
                "store.url",
                raw.url.as_deref(),
                "a PostgreSQL store needs the database's URL.",
                "postgres://user:password@host:5432/database, e.g. url = \"${DATABASE_URL}\"",
                "the URL",
            );
            let url = url.filter(|url| match PgStore::check_url(url.expose()) {
                Ok(()) => true,
                Err(error) => {
                    check.problem(
                        "store.url",
                        format!("{error}."),
                        "use postgres://user:password@host:5432/database.",
                    );
                    false
                }
            });
            url.map_or_else(sqlite, |url| StoreConfig::Postgres { url, connections })
        }
        other => {
            check.problem(
                "store.kind",
                format!("\"{other}\" is not a store askgate has."),
                "use \"sqlite\" (one process, the default) or \"postgres\".",
            );
            sqlite()
        }
    }
}

impl RawStore {
    fn store_path(&self) -> &str {
        self.path.as_deref().unwrap_or("askgate.db")
    }
}

/// `agents.NAME.max_timeout`: a duration (`"8h"`, `"7d"`) or whole seconds,
/// from the contract's hour (the default: it only ever lengthens what
/// `POST /v1/questions` takes) to a week. A problem names `key`; the
/// default stands in for a refused value.
fn max_timeout(key: &str, value: Option<&toml::Value>, check: &mut ConfigCheck<'_>) -> u32 {
    use askgate_core::request::{LONGEST_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS};
    use askgate_core::when::{format_duration, parse_duration};
    let fix = "write a duration from \"1h\" (the default) to \"7d\", like \"8h\" or \"2d\", or whole seconds (3600 to 604800).";
    let seconds = match value {
        None => return MAX_TIMEOUT_SECONDS,
        Some(toml::Value::Integer(seconds)) => u32::try_from(*seconds).ok(),
        Some(toml::Value::String(text)) => match parse_duration(text) {
            Ok(seconds) => Some(seconds),
            Err(error) => {
                check.problem(key, format!("{error}."), fix);
                return MAX_TIMEOUT_SECONDS;
            }
        },
        Some(other) => {
            check.problem(
                key,
                format!(
                    "expected a duration like \"8h\" or whole seconds, got the {} {other}.",
                    other.type_str()
                ),
                fix,
            );
            return MAX_TIMEOUT_SECONDS;
        }
    };
    match seconds {
        Some(seconds) if (MAX_TIMEOUT_SECONDS..=LONGEST_TIMEOUT_SECONDS).contains(&seconds) => seconds,
        Some(seconds) if seconds < MAX_TIMEOUT_SECONDS => {
            check.problem(
                key,
                format!(
                    "{} is shorter than an hour: max_timeout only lengthens the waits of POST /v1/questions beyond the ask_user contract's hour (which every agent has).",
                    format_duration(seconds)
                ),
                fix,
            );
            MAX_TIMEOUT_SECONDS
        }
        _ => {
            let given = value.map(ToString::to_string).unwrap_or_default();
            check.problem(
                key,
                format!("{given} is longer than askgate waits for an answer: at most 7 days (604800 seconds)."),
                fix,
            );
            MAX_TIMEOUT_SECONDS
        }
    }
}

/// The `[limits]` caps on pending questions; 0 is refused (it would refuse
/// every question), and an absent key is the default.
fn pending_limits(raw: &RawLimits, check: &mut ConfigCheck<'_>) -> askgate_engine::Limits {
    let mut cap = |key: &str, value: Option<u32>, default: u32| -> Option<u32> {
        match value {
            Some(0) => {
                check.problem(
                    key,
                    "0 would refuse every question.",
                    format!("use {default}, the default, or remove the key."),
                );
                Some(default)
            }
            value => Some(value.unwrap_or(default)),
        }
    };
    askgate_engine::Limits {
        max_pending_per_agent: cap(
            "limits.max_pending_per_agent",
            raw.max_pending_per_agent,
            DEFAULT_MAX_PENDING_PER_AGENT,
        ),
        max_pending_per_recipient: cap(
            "limits.max_pending_per_recipient",
            raw.max_pending_per_recipient,
            DEFAULT_MAX_PENDING_PER_RECIPIENT,
        ),
    }
}

/// Room for 1,000 agents waiting under one token, ten times over.
const DEFAULT_MAX_PENDING_PER_AGENT: u32 = 10_000;
/// More than any person could answer; a runaway agent stops here.
const DEFAULT_MAX_PENDING_PER_RECIPIENT: u32 = 1_000;

/// The `[server]` keys of the connection limits (`askgate_server::conn`).
fn server_connections(server: &RawServer, check: &mut ConfigCheck<'_>) -> askgate_server::ConnectionLimits {
    let defaults = askgate_server::ConnectionLimits::default();
    let max_connections = match server.max_connections {
        None => defaults.max_connections,
        Some(0) => {
            check.problem(
                "server.max_connections",
                "0 connections would serve nobody.",
                "use 4096, the default (room for 1,000 waiting agents).",
            );
            defaults.max_connections
        }
        Some(count) => usize::try_from(count).unwrap_or(usize::MAX),
    };
    let mut seconds = |key: &str, value: Option<u64>, default: Duration, fix: &str| match value {
        None => default,
        Some(0) => {
            check.problem(
                &format!("server.{key}"),
                "0 seconds would close every connection before its first request.",
                fix,
            );
            default
        }
        Some(seconds) => Duration::from_secs(seconds),
    };
    let header_read_timeout = seconds(
        "header_read_timeout_seconds",
        server.header_read_timeout_seconds,
        defaults.header_read_timeout,
        "use 10, the default.",
    );
    let idle_timeout = seconds(
        "idle_timeout_seconds",
        server.idle_timeout_seconds,
        defaults.idle_timeout,
        "use 60, the default.",
    );
    let body_timeout = match server.body_timeout_seconds {
        None => defaults.body_timeout,
        Some(0) => {
            check.problem(
                "server.body_timeout_seconds",
                "0 seconds would refuse every request with a body.",
                "use 10, the default.",
            );
            defaults.body_timeout
        }
        Some(seconds) => Duration::from_secs(seconds),
    };
    askgate_server::ConnectionLimits {
        header_read_timeout,
        idle_timeout,
        body_timeout,
        max_connections,
        // 0 is allowed: drop every connection at once on shutdown.
        shutdown_deadline: server
            .shutdown_deadline_seconds
            .map_or(defaults.shutdown_deadline, Duration::from_secs),
    }
}

/// The most values of a wrong type reported from one file.
const MAX_TYPE_PROBLEMS: usize = 50;

/// Reads the file into its raw sections. Every value of a wrong type is
/// reported with its key (`serde_path_to_error` names it), set aside, and
/// the file read again, so that all of them are reported at once rather
/// than the first with a line and column. Returns the sections, the unknown
/// keys, and the type problems; only a file that is not TOML at all fails.
fn read_raw(text: &str) -> Result<(RawConfig, Vec<String>, Vec<Problem>), Problems> {
    let mut table: toml::Table = toml::from_str(text).map_err(|error| file_problem(text, &error))?;
    let mut problems = Vec::new();
    while problems.len() < MAX_TYPE_PROBLEMS {
        let mut unknown = Vec::new();
        let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
        let ignoring = serde_ignored::Deserializer::new(toml::Value::Table(table.clone()), &mut note);
        match serde_path_to_error::deserialize::<_, RawConfig>(ignoring) {
            Ok(raw) => return Ok((raw, unknown, problems)),
            Err(error) => {
                let key = error.path().to_string();
                // The serde message, without toml's own "in `key`" line.
                let message = error.inner().to_string();
                let message = message.lines().next().unwrap_or_default();
                // A field set aside for its type is then missing: said once.
                let missing = message
                    .strip_prefix("missing field `")
                    .and_then(|rest| rest.strip_suffix('`'))
                    .map(|field| format!("{key}.{field}"));
                if missing.is_none_or(|field| problems.iter().all(|problem: &Problem| problem.key != field)) {
                    problems.push(type_problem(&key, message));
                }
                if !set_aside(&mut table, error.path()) {
                    break;
                }
            }
        }
    }
    Err(Problems(problems))
}

/// A value of the wrong type, in a sentence: `expected a string like
/// "127.0.0.1:8080", got the integer 8080` (the example's value for the same
/// key, when it has one).
fn type_problem(key: &str, message: &str) -> Problem {
    let what = match message
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.split_once(", expected "))
    {
        Some((got, expected)) => {
            // serde names Rust types; a TOML file has these.
            let expected = match expected {
                "u8" | "u16" | "u32" | "u64" | "usize" | "i64" => "a whole number",
                "a sequence" => "a list",
                other => other,
            };
            let like = example_value(key)
                .map(|value| format!(" like {value}"))
                .unwrap_or_default();
            let got = got.replace('`', "").replace("sequence", "list").replace("map", "table");
            format!("expected {expected}{like}, got the {got}.")
        }
        None => format!("{}.", message.trim_end_matches('.')),
    };
    Problem {
        key: if key.is_empty() || key == "?" {
            "(file)".into()
        } else {
            key.into()
        },
        what,
        fix: "correct the value; config/example.toml lists every option with its type.".into(),
    }
}

/// The value `config/example.toml` gives the key, as TOML.
fn example_value(key: &str) -> Option<String> {
    let example: toml::Table = toml::from_str(include_str!("../../../../config/example.toml")).ok()?;
    let mut value = example.get(key.split('.').next()?)?;
    for part in key.split('.').skip(1) {
        value = value.as_table()?.get(part)?;
    }
    (!value.is_table()).then(|| value.to_string())
}

/// Removes the value at `path` from `table`; false when there is none to
/// remove (then reading again would fail the same way).
fn set_aside(table: &mut toml::Table, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut value: Option<&mut toml::Value> = None;
    for segment in parents {
        let next = match (segment, value) {
            (Segment::Map { key }, None) => table.get_mut(key),
            (Segment::Map { key }, Some(toml::Value::Table(inner))) => inner.get_mut(key),
            (Segment::Seq { index }, Some(toml::Value::Array(items))) => items.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else { return false };
        value = Some(next);
    }
    match (last, value) {
        (Segment::Map { key }, None) => table.remove(key).is_some(),
        (Segment::Map { key }, Some(toml::Value::Table(inner))) => inner.remove(key).is_some(),
        (Segment::Seq { index }, Some(toml::Value::Array(items))) if *index < items.len() => {
            items.remove(*index);
            true
        }
        _ => false,
    }
}

fn file_problem(text: &str, error: &toml::de::Error) -> Problems {
    Problems(vec![Problem {
        key: "(file)".into(),
        what: error.message().trim_end_matches('.').to_owned() + &location(text, error.span()) + ".",
        fix: "correct the value; config/example.toml lists every option with its type.".into(),
    }])
}

pub(super) fn names<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        "(none configured)".to_owned()
    } else {
        names.join(", ")
    }
}

/// ` (line L, column C)` for a byte span of `text`.
fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(span) = span else {
        return String::new();
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(" (line {line}, column {column})")
}

#[cfg(test)]
mod tests;
