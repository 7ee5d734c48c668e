//! `[agents.NAME] callback_url`, `callback_hosts` and `webhook_secret`:
//! where a question's result is sent when it ends, and the key it is
//! signed with (the callback module).

use askgate_adapter::config::ConfigCheck;
use askgate_server::callbacks::host_of;

use crate::callback::WebhookSecret;

/// An agent's result callbacks, as configured.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentCallbacks {
    /// `callback_url`: where every question's result goes unless the
    /// question names its own.
    pub(crate) url: Option<String>,
    /// `callback_hosts`, lower-cased: the hosts a question's own
    /// `callbackUrl` may name (the `callback_url`'s host too).
    pub(crate) hosts: Vec<String>,
    /// `webhook_secret`; `None`: askgate's generated one.
    pub(crate) secret: Option<WebhookSecret>,
}

impl AgentCallbacks {
    /// Whether the agent takes callbacks at all (and so needs a secret).
    pub(crate) fn enabled(&self) -> bool {
        self.url.is_some() || !self.hosts.is_empty()
    }
}

/// Reads an agent's callback keys, telling their problems to `check`.
pub(super) fn agent_callbacks(
    agent: &str,
    url: Option<&str>,
    hosts: Option<&[String]>,
    secret: Option<&str>,
    check: &mut ConfigCheck<'_>,
) -> AgentCallbacks {
    let mut callbacks = AgentCallbacks::default();
    if let Some(value) = url {
        let key = format!("agents.{agent}.callback_url");
        if let Some(value) = check.value(&key, value) {
            match host_of(&value) {
                Some(host) => {
                    callbacks.hosts.push(host);
                    callbacks.url = Some(value);
                }
                None => check.problem(
                    &key,
                    format!("\"{value}\" is not an http(s) URL with a host."),
                    "write it as \"https://hooks.example.com/askgate\".",
                ),
            }
        }
    }
    for (index, host) in hosts.unwrap_or_default().iter().enumerate() {
        let host = host.trim().to_ascii_lowercase();
        let well_formed = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'));
        if !well_formed {
            check.problem(
                &format!("agents.{agent}.callback_hosts[{index}]"),
                "not a host name.",
                "list host names only, as \"hooks.example.com\" (no scheme, port or path).",
            );
            continue;
        }
        if !callbacks.hosts.contains(&host) {
            callbacks.hosts.push(host);
        }
    }
    if let Some(value) = secret {
        let key = format!("agents.{agent}.webhook_secret");
        if let Some(value) = check.value(&key, value) {
            match WebhookSecret::parse(&value) {
                Ok(secret) => callbacks.secret = Some(secret),
                // The value itself is never repeated: it is a secret.
                Err(error) => check.problem(
                    &key,
                    format!("{error}."),
                    "write it as whsec_ and the base64 of 24 or more random bytes (`echo whsec_$(openssl rand -base64 32)`), or remove it to let askgate generate it.",
                ),
            }
        }
    }
    callbacks
}
