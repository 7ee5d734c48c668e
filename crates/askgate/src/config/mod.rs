//! The configuration: one TOML file, secrets as `${ENV_VAR}` references,
//! unknown keys refused, every problem reported with its key and a fix.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use askgate_adapter::config::{AdapterKind, ChannelSettings, ConfigCheck, ServerContext};

use crate::channels::kinds;

mod agents;
mod callbacks;
mod log;
mod oidc;
mod recipients;
mod server;
mod store;
mod waiting;

pub(crate) use agents::AgentConfig;
use agents::RawAgent;
pub(crate) use askgate_adapter::config::{Problem, Problems, Secret};
pub(crate) use log::{DEFAULT_LEVEL as DEFAULT_LOG_LEVEL, LogConfig, LogFormat};
pub(crate) use oidc::OidcConfig;
use recipients::RawRecipient;
pub(crate) use recipients::RecipientConfig;
use serde::Deserialize;
use server::{RawLimits, RawMcp, RawServer};
use store::RawStore;
pub(crate) use store::StoreConfig;

/// The embedded default: SQLite and the web page on loopback, no tokens.
pub(crate) const EMBEDDED_DEFAULT: &str = include_str!("../../../../config/askgate.toml");

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

/// A channel: its `type`, and the rest for that kind to read.
#[derive(Debug, Deserialize)]
pub(super) struct RawChannel {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(flatten)]
    rest: toml::Table,
}

/// Parses and checks a configuration; `env` reads environment variables.
/// One pass over the file, section by section, in the order a reader sees
/// them; every problem of every section is told at once.
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

    let server = server::server(&raw.server, &mut check);
    let limits = server::pending_limits(&raw.limits, &mut check);
    let (mcp_wait, mcp_max_sessions) = server::mcp(&raw.mcp, &mut check);
    let log = log::log(&raw.log, &mut check);
    let store = store::store(&raw.store, &server.data_dir, &mut check);
    let retention = store::retention(&raw.store);
    let kinds = kinds();
    let context = ServerContext::new(raw.server.public_url.as_deref()).with_data_dir(&server.data_dir);
    let channels = channels(&raw, &kinds, context, channels_set_aside, &mut check);
    let longest_wait = agents::longest_wait(&raw.agents, env);
    let recipients = recipients::recipients(&raw.recipients, &raw.channels, &kinds, longest_wait, &mut check);
    if raw.recipients.is_empty() && !recipients_set_aside {
        check.problem(
            "recipients",
            "no recipient is configured.",
            "add [recipients.me] with channel = \"web\".",
        );
    }
    let agents = agents::agents(&raw.agents, &raw.recipients, agents_set_aside, &mut check);
    waiting::chats_only(&recipients, &agents, &mut check);
    let oidc = oidc::oidc(&raw.web, &mut check);
    oidc::people(&recipients, raw.web.configured(), &mut check);

    let problems = check.into_problems();
    if !problems.is_empty() {
        return Err(Problems(problems));
    }
    let listen = server.listen.ok_or_else(|| Problems(Vec::new()))?;
    Ok(Config {
        listen,
        public_url: server.public_url,
        data_dir: server.data_dir,
        max_body_bytes: server.max_body_bytes,
        ask_keepalive: server.ask_keepalive,
        ask_retry_grace: server.ask_retry_grace,
        limits,
        connections: server.connections,
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

/// `[channels.NAME]`: each read by the adapter kind its `type` names.
fn channels(
    raw: &RawConfig,
    kinds: &[Box<dyn AdapterKind>],
    server: ServerContext<'_>,
    set_aside: bool,
    check: &mut ConfigCheck<'_>,
) -> Vec<Box<dyn ChannelSettings>> {
    let kind_names = kinds
        .iter()
        .map(|k| format!("\"{}\"", k.kind()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut channels = Vec::new();
    for (name, channel) in &raw.channels {
        match kinds.iter().find(|k| k.kind() == channel.kind) {
            Some(kind) => channels.extend(kind.channel(check, name, channel.rest.clone(), server)),
            None => check.problem(
                &format!("channels.{name}.type"),
                format!("\"{}\" is not a channel type askgate has.", channel.kind),
                format!("use one of {kind_names}."),
            ),
        }
    }
    if raw.channels.is_empty() && !set_aside {
        check.problem(
            "channels",
            "no channel is configured.",
            "add [channels.web] with type = \"web\".",
        );
    }
    channels
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
        what: error.message().trim_end_matches('.').to_owned() + location(text, error.span()).as_str() + ".",
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
