//! `[agents.NAME]`: who may ask, with which token, whom, and with what
//! reminders, escalations, longest wait and result callbacks.

use std::collections::BTreeMap;

use askgate_adapter::config::{ConfigCheck, Secret};
use serde::Deserialize;

use super::callbacks::{self, AgentCallbacks};
use super::recipients::RawRecipient;
use super::{names, waiting};

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

#[derive(Debug, Deserialize)]
pub(super) struct RawAgent {
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

/// Every `[agents.NAME]`, checked against the recipients they may ask;
/// `set_aside`: some were set aside for the types of their values, so an
/// empty section is not "no agent".
pub(super) fn agents(
    raw: &BTreeMap<String, RawAgent>,
    recipients: &BTreeMap<String, RawRecipient>,
    set_aside: bool,
    check: &mut ConfigCheck<'_>,
) -> Vec<AgentConfig> {
    let mut agents = Vec::new();
    for (name, agent) in raw {
        let tokens = check.secrets(
            (&format!("agents.{name}.token"), agent.token.as_deref()),
            (&format!("agents.{name}.tokens"), agent.tokens.as_deref()),
        );
        let allowed = if agent.recipients.iter().any(|r| r == "*") {
            None
        } else {
            for unknown in agent.recipients.iter().filter(|r| !recipients.contains_key(*r)) {
                check.problem(
                    &format!("agents.{name}.recipients"),
                    format!("there is no recipient named \"{unknown}\"."),
                    format!("name one of: {}, or \"*\".", names(recipients.keys())),
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
        let max_timeout_seconds = max_timeout(&format!("agents.{name}.max_timeout"), agent.max_timeout.as_ref(), check);
        let known: Vec<&String> = recipients.keys().collect();
        let nudges = waiting::nudges(
            &format!("agents.{name}"),
            agent.remind.as_deref(),
            agent.escalate.as_deref(),
            &known,
            max_timeout_seconds,
            None,
            check,
        );
        let callbacks = callbacks::agent_callbacks(
            name,
            agent.callback_url.as_deref(),
            agent.callback_hosts.as_deref(),
            agent.webhook_secret.as_deref(),
            check,
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
    if raw.is_empty() && !set_aside {
        check.problem(
            "agents",
            "no agent token is configured: no agent could ask.",
            "add [agents.default] with recipients = [\"*\"].",
        );
    }

    agents
}

/// The longest any question may wait, the longest of the agents'
/// `max_timeout` (each read again by [`agents`], where its problems are
/// told): a recipient's escalation after it never happens.
pub(super) fn longest_wait(raw: &BTreeMap<String, RawAgent>, env: &dyn Fn(&str) -> Option<String>) -> u32 {
    raw.values()
        .map(|agent| max_timeout("", agent.max_timeout.as_ref(), &mut ConfigCheck::new(env)))
        .max()
        .unwrap_or(askgate_core::request::MAX_TIMEOUT_SECONDS)
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
