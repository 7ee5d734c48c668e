//! `[server]`, `[mcp]` and `[limits]`: where askgate listens, the bounds
//! of its HTTP connections and requests, the MCP server's waits and
//! sessions, and the caps on what agents leave pending.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use askgate_adapter::config::ConfigCheck;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawServer {
    listen: Option<String>,
    pub(super) public_url: Option<String>,
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
pub(super) struct RawLimits {
    max_pending_per_agent: Option<u32>,
    max_pending_per_recipient: Option<u32>,
}

/// `[mcp]`: the MCP server (`/mcp` and `askgate mcp`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawMcp {
    wait_seconds: Option<u64>,
    max_sessions_per_token: Option<u64>,
}

/// The `[server]` section, checked.
pub(super) struct ServerSection {
    /// `None` when `listen` is not an address (a problem is told).
    pub(super) listen: Option<SocketAddr>,
    pub(super) public_url: Option<String>,
    pub(super) data_dir: PathBuf,
    pub(super) max_body_bytes: usize,
    pub(super) ask_keepalive: Duration,
    pub(super) ask_retry_grace: Duration,
    pub(super) connections: askgate_server::ConnectionLimits,
}

/// `[server]`: every key has a default; a value that could not work is a
/// problem, and the default stands in for it.
pub(super) fn server(raw: &RawServer, check: &mut ConfigCheck<'_>) -> ServerSection {
    let listen_text = raw.listen.as_deref().unwrap_or("127.0.0.1:8080");
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
    let data_dir = PathBuf::from(raw.data_dir.as_deref().unwrap_or("askgate-data"));
    let max_body_bytes = usize::try_from(raw.max_body_bytes.unwrap_or(64 * 1024)).unwrap_or(usize::MAX);
    if max_body_bytes < 1024 {
        check.problem(
            "server.max_body_bytes",
            "below 1024 bytes no request fits.",
            "use 65536, the default.",
        );
    }
    let ask_keepalive = Duration::from_secs(raw.ask_keepalive_seconds.unwrap_or(5).max(1));
    let ask_retry_grace = Duration::from_secs(raw.ask_retry_grace_seconds.unwrap_or(15));
    ServerSection {
        listen,
        public_url,
        data_dir,
        max_body_bytes,
        ask_keepalive,
        ask_retry_grace,
        connections: server_connections(raw, check),
    }
}

/// `[mcp]`: the longest an MCP tool call waits, and the most sessions one
/// agent token holds.
pub(super) fn mcp(raw: &RawMcp, check: &mut ConfigCheck<'_>) -> (Duration, usize) {
    let mcp_wait = match raw.wait_seconds {
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
    let mcp_max_sessions = match raw.max_sessions_per_token {
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
    (mcp_wait, mcp_max_sessions)
}

/// The `[limits]` caps on pending questions; 0 is refused (it would refuse
/// every question), and an absent key is the default.
pub(super) fn pending_limits(raw: &RawLimits, check: &mut ConfigCheck<'_>) -> askgate_engine::Limits {
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
