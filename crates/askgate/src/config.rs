//! The configuration: one TOML file, secrets as `${ENV_VAR}` references,
//! unknown keys refused, every problem reported with its key and a fix.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use askgate_core::Locale;
use serde::Deserialize;

/// The embedded default: SQLite and the web page on loopback, no tokens.
pub(crate) const EMBEDDED_DEFAULT: &str = include_str!("../../../config/askgate.toml");

/// The shortest agent token or page key accepted: guessing must be hopeless.
const MIN_SECRET_CHARS: usize = 32;

/// A secret value: never printed, never in Debug output.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(value: String) -> Self {
        Self(value)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) listen: SocketAddr,
    pub(crate) public_url: Option<String>,
    pub(crate) data_dir: PathBuf,
    pub(crate) max_body_bytes: usize,
    pub(crate) ask_keepalive: Duration,
    pub(crate) store_path: PathBuf,
    pub(crate) agents: Vec<AgentConfig>,
    pub(crate) channels: Vec<ChannelConfig>,
    pub(crate) recipients: Vec<RecipientConfig>,
}

#[derive(Debug, Clone)]
pub(crate) struct AgentConfig {
    pub(crate) name: String,
    pub(crate) token: Option<Secret>,
    /// `None` for `"*"`.
    pub(crate) recipients: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChannelKind {
    Web,
    Telegram {
        token: Secret,
        /// Another Bot API server (a local one, or the tests' fake).
        api_url: Option<String>,
        /// Webhook mode's secret; `None` in polling mode.
        webhook_secret: Option<Secret>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct ChannelConfig {
    pub(crate) name: String,
    pub(crate) kind: ChannelKind,
}

#[derive(Debug, Clone)]
pub(crate) struct RecipientConfig {
    pub(crate) name: String,
    pub(crate) channel: String,
    pub(crate) display_name: String,
    pub(crate) locale: Locale,
    pub(crate) web_key: Option<Secret>,
    /// The platform conversation (a Telegram chat id); the web channel uses the name.
    pub(crate) conversation: Option<String>,
    /// A thread in it (a Telegram forum topic).
    pub(crate) thread: Option<String>,
    /// Platform user ids allowed to answer; empty: the person of a direct chat.
    pub(crate) answerers: Vec<String>,
}

/// One problem of a configuration: where, what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) key: String,
    pub(crate) what: String,
    pub(crate) fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} Fix: {}", self.key, self.what, self.fix)
    }
}

/// Every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) struct Problems(pub(crate) Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default, Deserialize)]
struct RawConfig {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    store: RawStore,
    #[serde(default)]
    agents: BTreeMap<String, RawAgent>,
    #[serde(default)]
    channels: BTreeMap<String, RawChannel>,
    #[serde(default)]
    recipients: BTreeMap<String, RawRecipient>,
}

#[derive(Debug, Default, Deserialize)]
struct RawServer {
    listen: Option<String>,
    public_url: Option<String>,
    data_dir: Option<String>,
    max_body_bytes: Option<u64>,
    ask_keepalive_seconds: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct RawStore {
    kind: Option<String>,
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawAgent {
    token: Option<String>,
    recipients: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RawChannel {
    #[serde(rename = "type")]
    kind: String,
    token: Option<String>,
    mode: Option<String>,
    api_url: Option<String>,
    secret_token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawRecipient {
    channel: String,
    display_name: Option<String>,
    locale: Option<String>,
    web_key: Option<String>,
    chat_id: Option<i64>,
    topic: Option<i64>,
    answerers: Option<Vec<i64>>,
}

/// Collects problems while a configuration is checked.
struct Checker<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn problem(&mut self, key: &str, problem: impl Into<String>, fix: impl Into<String>) {
        self.problems.push(Problem {
            key: key.to_owned(),
            what: problem.into(),
            fix: fix.into(),
        });
    }

    /// A value with a whole-value `${NAME}` reference replaced from the environment.
    fn value(&mut self, key: &str, value: &str) -> Option<String> {
        let Some(name) = value.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')) else {
            return Some(value.to_owned());
        };
        let found = (self.env)(name).filter(|found| !found.is_empty());
        if found.is_none() {
            self.problem(
                key,
                format!("the environment variable {name} is not set."),
                format!("export {name}=… before starting askgate, or remove the key to use the default."),
            );
        }
        found
    }

    fn secret(&mut self, key: &str, value: Option<&str>) -> Option<Secret> {
        let value = self.value(key, value?)?;
        let url_safe = value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if value.chars().count() < MIN_SECRET_CHARS || !url_safe {
            // The value itself is never repeated: it is a secret.
            self.problem(
                key,
                format!("the secret must be at least {MIN_SECRET_CHARS} characters of letters, digits, '-' or '_'."),
                "generate one, e.g. with `openssl rand -hex 24`, or remove the key to let askgate generate it.",
            );
            return None;
        }
        Some(Secret::new(value))
    }
}

/// Parses and checks a configuration; `env` reads environment variables.
// One pass over the file, section by section, in the order a reader sees them.
#[allow(clippy::too_many_lines)]
pub(crate) fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, Problems> {
    // Unknown keys are collected (serde_ignored) rather than refused by
    // `deny_unknown_fields`, which would stop at the first and hide the rest.
    let mut unknown = Vec::new();
    let deserializer = toml::Deserializer::parse(text).map_err(|error| file_problem(text, &error))?;
    let raw: RawConfig = serde_ignored::deserialize(deserializer, |path| unknown.push(path.to_string()))
        .map_err(|error| file_problem(text, &error))?;
    let mut check = Checker {
        env,
        problems: Vec::new(),
    };
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

    match raw.store.kind.as_deref().unwrap_or("sqlite") {
        "sqlite" => {}
        other => check.problem(
            "store.kind",
            format!("\"{other}\" is not a store askgate has."),
            "use \"sqlite\" (PostgreSQL for several replicas is not built yet).",
        ),
    }
    let store_path = data_dir.join(raw.store.path.as_deref().unwrap_or("askgate.db"));

    let mut channels = Vec::new();
    for (name, channel) in &raw.channels {
        let key = |field: &str| format!("channels.{name}.{field}");
        match channel.kind.as_str() {
            "web" => channels.push(ChannelConfig {
                name: name.clone(),
                kind: ChannelKind::Web,
            }),
            "telegram" => {
                let webhook_secret = match channel.mode.as_deref().unwrap_or("polling") {
                    "polling" => None,
                    "webhook" => {
                        if raw.server.public_url.is_none() {
                            check.problem(
                                &key("mode"),
                                "webhook mode needs askgate's public address for Telegram to call.",
                                "set server.public_url = \"https://askgate.example.com\", or use mode = \"polling\".",
                            );
                        }
                        if channel.secret_token.is_none() {
                            check.problem(
                                &key("secret_token"),
                                "webhook mode needs a secret that Telegram sends with every update.",
                                "add secret_token = \"${TELEGRAM_WEBHOOK_SECRET}\" (32 or more letters, digits, '-' or '_').",
                            );
                        }
                        check.secret(&key("secret_token"), channel.secret_token.as_deref())
                    }
                    other => {
                        check.problem(
                            &key("mode"),
                            format!("\"{other}\" is not a mode."),
                            "use \"polling\" or \"webhook\".",
                        );
                        None
                    }
                };
                let token = match channel.token.as_deref() {
                    Some(token) => check.value(&key("token"), token),
                    None => {
                        check.problem(
                            &key("token"),
                            "a Telegram channel needs its bot token.",
                            "add token = \"${TELEGRAM_BOT_TOKEN}\" and export the token BotFather gave you.",
                        );
                        None
                    }
                };
                let token = token.filter(|token| {
                    let well_formed = token.split_once(':').is_some_and(|(id, secret)| {
                        !id.is_empty()
                            && id.bytes().all(|b| b.is_ascii_digit())
                            && !secret.is_empty()
                            && secret
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    });
                    if !well_formed {
                        check.problem(
                            &key("token"),
                            "this is not a Telegram bot token (digits, a colon, then letters, digits, '-' or '_').",
                            "copy the token BotFather gave you.",
                        );
                    }
                    well_formed
                });
                let api_url = channel
                    .api_url
                    .as_deref()
                    .and_then(|url| check.value(&key("api_url"), url));
                if let Some(token) = token {
                    channels.push(ChannelConfig {
                        name: name.clone(),
                        kind: ChannelKind::Telegram {
                            token: Secret::new(token),
                            api_url,
                            webhook_secret,
                        },
                    });
                }
            }
            other => check.problem(
                &key("type"),
                format!("\"{other}\" is not a channel type askgate has."),
                "use \"web\" or \"telegram\" (discord and slack follow).",
            ),
        }
    }
    if raw.channels.is_empty() {
        check.problem(
            "channels",
            "no channel is configured.",
            "add [channels.web] with type = \"web\".",
        );
    }

    let mut recipients = Vec::new();
    for (name, recipient) in &raw.recipients {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let channel = raw.channels.get(&recipient.channel);
        if channel.is_none() {
            check.problem(
                &key("channel"),
                format!("there is no channel named \"{}\".", recipient.channel),
                format!(
                    "add [channels.{}] or name one of: {}.",
                    recipient.channel,
                    names(raw.channels.keys())
                ),
            );
        }
        let locale = match recipient.locale.as_deref().unwrap_or("en").parse::<Locale>() {
            Ok(locale) => locale,
            Err(error) => {
                check.problem(&key("locale"), format!("{error}."), "use \"en\" or \"zh-CN\".");
                Locale::En
            }
        };
        let web_key = check.secret(&key("web_key"), recipient.web_key.as_deref());
        if web_key.is_some() && channel.is_some_and(|c| c.kind != "web") {
            check.problem(
                &key("web_key"),
                "only recipients on a web channel have a page key.",
                "remove web_key.",
            );
        }
        let is_telegram = channel.is_some_and(|c| c.kind == "telegram");
        if is_telegram && recipient.chat_id.is_none() {
            check.problem(
                &key("chat_id"),
                "a Telegram recipient needs the chat to write to.",
                "add chat_id = <the chat id> (a person's user id for a private chat).",
            );
        }
        if !is_telegram && (recipient.chat_id.is_some() || recipient.topic.is_some() || recipient.answerers.is_some()) {
            check.problem(
                &key("chat_id"),
                "chat_id, topic and answerers are for Telegram recipients.",
                "remove them.",
            );
        }
        // A group chat id is negative: there, who may answer must be said.
        if is_telegram
            && recipient.chat_id.is_some_and(|id| id < 0)
            && recipient.answerers.as_ref().is_none_or(Vec::is_empty)
        {
            check.problem(
                &key("answerers"),
                "in a group anyone could answer.",
                "list the Telegram user ids allowed to answer: answerers = [123456789].",
            );
        }
        recipients.push(RecipientConfig {
            name: name.clone(),
            channel: recipient.channel.clone(),
            display_name: recipient.display_name.clone().unwrap_or_else(|| name.clone()),
            locale,
            web_key,
            conversation: recipient.chat_id.map(|id| id.to_string()),
            thread: recipient.topic.map(|id| id.to_string()),
            answerers: recipient.answerers.iter().flatten().map(ToString::to_string).collect(),
        });
    }
    if raw.recipients.is_empty() {
        check.problem(
            "recipients",
            "no recipient is configured.",
            "add [recipients.me] with channel = \"web\".",
        );
    }

    let mut agents = Vec::new();
    for (name, agent) in &raw.agents {
        let token = check.secret(&format!("agents.{name}.token"), agent.token.as_deref());
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
        agents.push(AgentConfig {
            name: name.clone(),
            token,
            recipients: allowed,
        });
    }
    if raw.agents.is_empty() {
        check.problem(
            "agents",
            "no agent token is configured: no agent could ask.",
            "add [agents.default] with recipients = [\"*\"].",
        );
    }

    if !check.problems.is_empty() {
        return Err(Problems(check.problems));
    }
    let listen = listen.ok_or_else(|| Problems(Vec::new()))?;
    Ok(Config {
        listen,
        public_url,
        data_dir,
        max_body_bytes,
        ask_keepalive,
        store_path,
        agents,
        channels,
        recipients,
    })
}

fn file_problem(text: &str, error: &toml::de::Error) -> Problems {
    Problems(vec![Problem {
        key: "(file)".into(),
        what: error.message().trim_end_matches('.').to_owned() + &location(text, error.span()) + ".",
        fix: "correct the value; config/example.toml lists every option with its type.".into(),
    }])
}

fn names<'a>(names: impl Iterator<Item = &'a String>) -> String {
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
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn problems(text: &str) -> Vec<String> {
        parse(text, &no_env).unwrap_err().0.into_iter().map(|p| p.key).collect()
    }

    #[test]
    fn the_embedded_default_is_valid() {
        let config = parse(EMBEDDED_DEFAULT, &no_env).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert!(config.listen.ip().is_loopback());
        assert_eq!(config.store_path, PathBuf::from("askgate-data/askgate.db"));
        assert_eq!(config.recipients[0].channel, "web");
        assert!(config.agents[0].token.is_none() && config.agents[0].recipients.is_none());
    }

    #[test]
    fn the_example_is_valid_with_its_variables_set() {
        let env = |name: &str| Some(format!("{name}-{}", "x".repeat(32)));
        let config = parse(include_str!("../../../config/example.toml"), &env).unwrap();
        assert_eq!(config.agents.len(), 2);
        assert_eq!(
            config.agents[0].token.as_ref().unwrap().expose(),
            format!("CI_BOT_TOKEN-{}", "x".repeat(32))
        );
    }

    #[test]
    fn unknown_keys_are_refused_each_by_its_key() {
        let text = "[server]\nlisten_port = 2\n[agents.a]\nrecipients = [\"*\"]\ncolour = 1\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
        assert_eq!(problems(text), ["agents.a.colour", "server.listen_port"]);
        let error = parse("[server]\nlisten = 5\n", &no_env).unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
    }

    #[test]
    fn every_problem_is_reported_with_its_key() {
        let text = r#"
            [server]
            listen = "localhost"
            [store]
            kind = "postgres"
            [agents.bot]
            token = "${MISSING_TOKEN}"
            recipients = ["nobody"]
            [agents.short]
            token = "abc"
            recipients = ["*"]
            [channels.chat]
            type = "irc"
            [recipients.me]
            channel = "web"
            locale = "fr"
        "#;
        assert_eq!(
            problems(text),
            [
                "server.listen",
                "store.kind",
                "channels.chat.type",
                "recipients.me.channel",
                "recipients.me.locale",
                "agents.bot.token",
                "agents.bot.recipients",
                "agents.short.token",
            ]
        );
    }

    #[test]
    fn telegram_channels_and_recipients_are_checked() {
        let base = "[agents.a]\nrecipients = [\"*\"]\n";
        let good = format!(
            "{base}[channels.tg]\ntype = \"telegram\"\ntoken = \"${{TG}}\"\n\
             [recipients.alice]\nchannel = \"tg\"\nchat_id = 42\n\
             [recipients.ops]\nchannel = \"tg\"\nchat_id = -100\ntopic = 7\nanswerers = [42, 43]\n"
        );
        let env = |_: &str| Some("123456:AAbb-cc_DD".to_owned());
        let config = parse(&good, &env).unwrap();
        assert!(
            matches!(&config.channels[0].kind, ChannelKind::Telegram { token, .. } if token.expose() == "123456:AAbb-cc_DD")
        );
        let ops = config.recipients.iter().find(|r| r.name == "ops").unwrap();
        assert_eq!(
            (ops.conversation.as_deref(), ops.thread.as_deref()),
            (Some("-100"), Some("7"))
        );
        assert_eq!(ops.answerers, ["42", "43"]);

        let bad = format!(
            "{base}[channels.tg]\ntype = \"telegram\"\ntoken = \"not-a-token\"\nmode = \"webhook\"\nsecret_token = \"short\"\n\
             [channels.tg2]\ntype = \"telegram\"\n\
             [recipients.nochat]\nchannel = \"tg\"\n\
             [recipients.group]\nchannel = \"tg\"\nchat_id = -100\n"
        );
        assert_eq!(
            problems(&bad),
            [
                "channels.tg.mode",
                "channels.tg.secret_token",
                "channels.tg.token",
                "channels.tg2.token",
                "recipients.group.answerers",
                "recipients.nochat.chat_id"
            ]
        );
        let message = parse(&bad, &no_env).unwrap_err().to_string();
        assert!(
            !message.contains("not-a-token") && !message.contains("\"short\""),
            "{message}"
        );
    }

    #[test]
    fn secrets_never_appear_in_problems_or_debug_output() {
        let text = "[agents.a]\ntoken = \"short-secret-value\"\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
        let error = parse(text, &no_env).unwrap_err();
        assert!(!error.to_string().contains("short-secret-value"));
        let env = |_: &str| Some("s".repeat(40));
        let config = parse(&text.replace("short-secret-value", "${T}"), &env).unwrap();
        assert!(!format!("{config:?}").contains(&"s".repeat(40)));
    }
}
