//! Configuration shared by every adapter: secrets, problems reported with
//! their key and a fix, `${ENV_VAR}` references, and the [`AdapterKind`]
//! trait through which each adapter reads its own part of askgate's one
//! TOML file and says how a prompt previews on it — so that the binary's
//! configuration and `askgate prompt render` name no platform.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use askgate_core::channel::Destination;
use askgate_core::{AskRequest, Capabilities, Locale};
use serde::de::DeserializeOwned;

use crate::runtime::ChannelRuntime;

/// A secret value: never printed, never in Debug output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

/// One problem of a configuration: where, what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key, as a dotted path (`channels.tg.token`).
    pub key: String,
    /// What is wrong, as a sentence.
    pub what: String,
    /// How to fix it, as a sentence.
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} Fix: {}", self.key, self.what, self.fix)
    }
}

impl Problem {
    /// What a failed credentials check (`check-config`, start-up) says at
    /// `key`: "could not reach" the platform when the call did not get
    /// through (a network failure, a 5xx, a rate limit: [`CheckError::Unreachable`],
    /// worth trying again), "refused it" when the platform answered no
    /// ([`CheckError::Refused`]). `call` names the request (`getMe`);
    /// `fix_token` says how to get a good token.
    pub fn from_check(
        key: String,
        platform: &str,
        call: &str,
        error: &askgate_core::channel::ChannelError,
        fix_token: &str,
    ) -> CheckError {
        Self::from_check_detail(key, platform, call, error.is_retryable(), &error.to_string(), fix_token)
    }

    /// [`Problem::from_check`] with the platform's own words for the
    /// failure (`invalid_auth`, cut to a short line); `unreachable` when the
    /// call did not get through.
    pub fn from_check_detail(
        key: String,
        platform: &str,
        call: &str,
        unreachable: bool,
        detail: &str,
        fix_token: &str,
    ) -> CheckError {
        let detail = crate::cause::bounded(detail);
        if unreachable {
            CheckError::Unreachable(Self {
                key,
                what: format!("could not reach {platform} ({call}): {detail}."),
                fix: format!(
                    "check that this machine reaches {platform} (network, proxy, firewall, DNS), then try again."
                ),
            })
        } else {
            CheckError::Refused(Self {
                key,
                what: format!("{platform} refused it ({call}): {detail}."),
                fix: fix_token.to_owned(),
            })
        }
    }
}

/// Why a channel's check with its platform failed
/// ([`crate::ChannelRuntime::check`]): `askgate check-config` reports
/// either as a problem; `askgate serve` keeps serving, tries again while
/// the platform is out of reach, and leaves a refused channel down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The platform could not be reached or failed (a network failure, a
    /// 5xx, a rate limit): trying again later can succeed.
    #[error("{0}")]
    Unreachable(Problem),
    /// The platform refused the configuration (a bad token, an intent the
    /// application may not use): nothing changes until the admin fixes it.
    #[error("{0}")]
    Refused(Problem),
}

impl CheckError {
    /// The problem, with its key and fix.
    pub fn problem(&self) -> &Problem {
        match self {
            Self::Unreachable(problem) | Self::Refused(problem) => problem,
        }
    }

    /// The problem, for `check-config`'s list.
    pub fn into_problem(self) -> Problem {
        match self {
            Self::Unreachable(problem) | Self::Refused(problem) => problem,
        }
    }

    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unreachable(_))
    }
}

/// Every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Problems(pub Vec<Problem>);

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

/// The shortest secret askgate accepts: guessing must be hopeless.
pub const MIN_SECRET_CHARS: usize = 32;

/// Collects problems while a configuration is checked, and reads
/// environment variables through an injected lookup.
pub struct ConfigCheck<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    problems: Vec<Problem>,
}

impl<'e> ConfigCheck<'e> {
    /// A check that reads variables with `env`.
    pub fn new(env: &'e dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            env,
            problems: Vec::new(),
        }
    }

    /// Records a problem.
    pub fn problem(&mut self, key: &str, what: impl Into<String>, fix: impl Into<String>) {
        self.problems.push(Problem {
            key: key.to_owned(),
            what: what.into(),
            fix: fix.into(),
        });
    }

    /// The problems so far.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Every problem found, ending the check.
    pub fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    /// A value with a whole-value `${NAME}` reference replaced from the
    /// environment; `None` (and a problem) when the variable is not set.
    pub fn value(&mut self, key: &str, value: &str) -> Option<String> {
        self.env_value(key, value, "or remove the key to use the default.")
    }

    /// [`ConfigCheck::value`], with `otherwise` ending the fix when the
    /// variable is not set (what else the admin can do).
    fn env_value(&mut self, key: &str, value: &str, otherwise: &str) -> Option<String> {
        let Some(name) = value.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')) else {
            return Some(value.to_owned());
        };
        let found = (self.env)(name).filter(|found| !found.is_empty());
        if found.is_none() {
            self.problem(
                key,
                format!("the environment variable {name} is not set."),
                format!("export {name}=… before starting askgate, {otherwise}"),
            );
        }
        found
    }

    /// A secret askgate checks itself (a token it issues, a webhook secret):
    /// at least [`MIN_SECRET_CHARS`] URL-safe characters.
    pub fn secret(&mut self, key: &str, value: Option<&str>) -> Option<Secret> {
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

    /// The values of a secret that may have several while it is rotated:
    /// `one_key` (`token = "…"`) or `many_key` (`tokens = ["${NEW}", "${OLD}"]`,
    /// the first the one askgate hands out), each with its key for problems
    /// (`agents.ci.tokens[1]`). Both set, or an empty list, is a problem; none
    /// set is an empty list.
    pub fn one_or_many<'v>(
        &mut self,
        (one_key, one): (&str, Option<&'v str>),
        (many_key, many): (&str, Option<&'v [String]>),
    ) -> Vec<(String, &'v str)> {
        match (one, many) {
            (Some(_), Some(_)) => {
                self.problem(
                    many_key,
                    format!("{one_key} and {many_key} are both set."),
                    format!("keep one: {many_key} = [\"${{NEW}}\", \"${{OLD}}\"] accepts both while you rotate."),
                );
                Vec::new()
            }
            (Some(value), None) => vec![(one_key.to_owned(), value)],
            (None, Some([])) => {
                self.problem(
                    many_key,
                    "the list is empty.",
                    format!("list at least one, or remove {many_key}."),
                );
                Vec::new()
            }
            (None, Some(values)) => values
                .iter()
                .enumerate()
                .map(|(index, value)| (format!("{many_key}[{index}]"), value.as_str()))
                .collect(),
            (None, None) => Vec::new(),
        }
    }

    /// Secrets that askgate checks itself ([`ConfigCheck::secret`]), one or
    /// several ([`ConfigCheck::one_or_many`]); the same value listed twice
    /// is a problem (named by its keys, never by its value).
    pub fn secrets(&mut self, one: (&str, Option<&str>), many: (&str, Option<&[String]>)) -> Vec<Secret> {
        let mut found: Vec<(String, Secret)> = Vec::new();
        for (key, value) in self.one_or_many(one, many) {
            let Some(secret) = self.secret(&key, Some(value)) else {
                continue;
            };
            if let Some((first, _)) = found.iter().find(|(_, seen)| seen.expose() == secret.expose()) {
                self.problem(&key, format!("the same secret as {first}."), "list each secret once.");
                continue;
            }
            found.push((key, secret));
        }
        found.into_iter().map(|(_, secret)| secret).collect()
    }

    /// A secret the platform issued (a bot token): read from its reference,
    /// and required. `what` names it for the problem ("a Telegram channel
    /// needs its bot token."), `fix` says where to get it.
    pub fn platform_secret(&mut self, key: &str, value: Option<&str>, what: &str, fix: &str) -> Option<Secret> {
        self.required_secret(key, value, what, fix, "the token")
    }

    /// A secret askgate needs and does not check itself (a bot token, a
    /// database URL with its password), as [`ConfigCheck::platform_secret`];
    /// `holding` names what the variable holds ("the URL").
    pub fn required_secret(
        &mut self,
        key: &str,
        value: Option<&str>,
        what: &str,
        fix: &str,
        holding: &str,
    ) -> Option<Secret> {
        let Some(value) = value else {
            self.problem(key, what, fix);
            return None;
        };
        // Required: there is no default to fall back on.
        let otherwise = format!("with {holding} in it ({fix})");
        self.env_value(key, value, &otherwise).map(Secret::new)
    }

    /// One of `choices` (the first is the default when `value` is absent);
    /// `None` and a problem for anything else.
    pub fn choice(&mut self, key: &str, value: Option<&str>, choices: &[&'static str]) -> Option<&'static str> {
        let value = value.unwrap_or(choices.first().copied().unwrap_or_default());
        let found = choices.iter().copied().find(|choice| *choice == value);
        if found.is_none() {
            let listed: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
            self.problem(
                key,
                format!("\"{value}\" is not one of the choices."),
                format!("use {}.", listed.join(" or ")),
            );
        }
        found
    }

    /// A mode in which the platform calls askgate (a webhook, an interactions
    /// endpoint) needs `server.public_url`: a problem at `key` when it is
    /// missing. `platform` names who calls; `otherwise` is the mode that needs none.
    pub fn requires_public_url(&mut self, key: &str, server: ServerContext<'_>, platform: &str, otherwise: &str) {
        if server.public_url.is_none() {
            self.problem(
                key,
                format!("this mode needs askgate's public address for {platform} to call."),
                format!("set server.public_url = \"https://askgate.example.com\", or use mode = \"{otherwise}\"."),
            );
        }
    }

    /// An http(s) URL (a platform API's base), read from its reference;
    /// `None` and a problem when it is not one.
    pub fn http_url(&mut self, key: &str, value: &str) -> Option<String> {
        let value = self.value(key, value)?;
        let well_formed =
            (value.starts_with("http://") || value.starts_with("https://")) && value.len() > "https://".len();
        if !well_formed {
            self.problem(
                key,
                format!("\"{value}\" is not an http(s) URL."),
                "write it as \"http://127.0.0.1:8081/\", or remove it to use the platform's own.",
            );
            return None;
        }
        Some(value)
    }

    /// Reads `table` (the keys under `prefix`, e.g. `channels.tg`) as `T`,
    /// reporting each key `T` does not know and a value of the wrong type
    /// with its full key.
    pub fn table<T: DeserializeOwned>(&mut self, prefix: &str, table: toml::Table) -> Option<T> {
        let mut unknown = Vec::new();
        let parsed = serde_ignored::deserialize(toml::Value::Table(table), |path| unknown.push(path.to_string()));
        for key in unknown {
            self.problem(
                &format!("{prefix}.{key}"),
                "this key is not an askgate option here.",
                "remove it or correct its spelling; config/example.toml lists every option.",
            );
        }
        match parsed {
            Ok(value) => Some(value),
            Err(error) => {
                self.problem(
                    prefix,
                    format!("{}.", error.to_string().trim_end_matches('.')),
                    "correct the value; config/example.toml lists every option with its type.",
                );
                None
            }
        }
    }
}

/// What a channel's settings may need from the rest of the configuration.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ServerContext<'a> {
    /// `server.public_url`, where platforms can reach askgate's webhooks.
    pub public_url: Option<&'a str>,
    /// `server.data_dir`, under which a channel keeps what must outlive a
    /// restart ([`ServerContext::channel_dir`]); `None`: nothing on disk.
    pub data_dir: Option<&'a Path>,
}

impl<'a> ServerContext<'a> {
    /// The context of a server reachable at `public_url`, if any.
    pub fn new(public_url: Option<&'a str>) -> Self {
        Self {
            public_url,
            data_dir: None,
        }
    }

    /// The same context, with askgate's data directory.
    #[must_use]
    pub fn with_data_dir(mut self, data_dir: &'a Path) -> Self {
        self.data_dir = Some(data_dir);
        self
    }

    /// The folder channel `name` keeps its own state in (a Matrix
    /// channel's encryption keys): `<data_dir>/channels/<name>`, one per
    /// channel so that two never share one; `None` without a data directory.
    pub fn channel_dir(&self, name: &str) -> Option<PathBuf> {
        self.data_dir.map(|dir| dir.join("channels").join(name))
    }
}

/// A recipient's address on a channel: where its prompts go, and who may
/// answer them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// The conversation (and thread) prompts are sent to.
    pub destination: Destination,
    /// Platform user ids allowed to answer; empty: the person of a direct
    /// conversation, and no one in a group.
    pub answerers: Vec<String>,
}

/// One kind of channel (`type = "telegram"`): reads its channel's keys and
/// its recipients' addressing keys, and says how a prompt previews on it
/// (`askgate prompt render --channel <kind>`). The binary keeps one list of
/// kinds.
pub trait AdapterKind: Send + Sync + 'static {
    /// The `type` value (`"telegram"`).
    fn kind(&self) -> &'static str;

    /// What people call the platform (`Telegram`): the same name its
    /// channels declare ([`askgate_core::Channel::display_name`]).
    fn display_name(&self) -> &'static str;

    /// What `askgate prompt render` assumes a channel of this kind can show:
    /// the most a configured one can (a Discord channel that takes typed
    /// replies), as its channels declare it.
    fn preview_capabilities(&self) -> Capabilities;

    /// The kind's own sketch of `request`, where it draws prompts itself
    /// rather than showing the presentation the engine renders (askgate's
    /// page); `None` previews the presentation for
    /// [`AdapterKind::preview_capabilities`].
    fn sketch(&self, request: &AskRequest, locale: Locale) -> Option<String> {
        let _ = (request, locale);
        None
    }

    /// Checks `[channels.<name>]` (without `type`); the settings when it is
    /// valid, problems recorded in `check` otherwise.
    fn channel(
        &self,
        check: &mut ConfigCheck<'_>,
        name: &str,
        table: toml::Table,
        server: ServerContext<'_>,
    ) -> Option<Box<dyn ChannelSettings>>;

    /// Checks the addressing keys of `[recipients.<name>]` on a channel of
    /// this kind (those besides `channel`, `display_name`, `locale`, `web_key`).
    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address>;
}

/// A checked channel configuration, ready to start.
pub trait ChannelSettings: fmt::Debug + Send + Sync + 'static {
    /// The channel's configured name.
    fn name(&self) -> &str;

    /// The kind (`"telegram"`).
    fn kind(&self) -> &'static str;

    /// Starts the channel. Must be called inside a tokio runtime (a channel
    /// may spawn its send queue).
    fn start(&self) -> Arc<dyn ChannelRuntime>;
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Keys {
        token: Option<String>,
        #[allow(dead_code)]
        count: Option<u32>,
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_reported_with_their_full_key() {
        let env = |name: &str| (name == "SET").then(|| "value-from-env".to_owned());
        let mut check = ConfigCheck::new(&env);
        let table: toml::Table = toml::from_str("token = \"${SET}\"\ncolour = 1\n").unwrap_or_default();
        let keys: Keys = check.table("channels.x", table).unwrap_or_else(|| unreachable!());
        assert_eq!(
            check
                .value("channels.x.token", keys.token.as_deref().unwrap_or_default())
                .as_deref(),
            Some("value-from-env")
        );
        assert_eq!(check.value("channels.x.other", "${UNSET}"), None);
        let wrong: toml::Table = toml::from_str("count = \"two\"\n").unwrap_or_default();
        assert!(check.table::<Keys>("channels.y", wrong).is_none());
        let keys: Vec<&str> = check.problems().iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["channels.x.colour", "channels.x.other", "channels.y"]);
        assert!(check.secret("k", Some("short")).is_none());
        assert!(!format!("{:?}", Secret::new("hidden".into())).contains("hidden"));
    }

    #[test]
    fn a_required_token_never_advises_removing_its_key() {
        let env = |_: &str| None;
        let mut check = ConfigCheck::new(&env);
        let fix = "create a bot with BotFather";
        assert!(
            check
                .platform_secret("channels.tg.token", Some("${TG_TOKEN}"), "", fix)
                .is_none()
        );
        assert!(check.value("server.public_url", "${URL}").is_none());
        let [token, optional] = check.problems() else {
            panic!("two problems: {:?}", check.problems())
        };
        assert!(!token.fix.contains("remove the key"), "{token}");
        assert!(
            token.fix.contains("export TG_TOKEN=") && token.fix.contains(fix),
            "{token}"
        );
        assert!(optional.fix.contains("remove the key to use the default"), "{optional}");
    }

    #[test]
    fn a_check_that_did_not_get_through_says_could_not_reach() {
        use askgate_core::channel::ChannelError;
        let down = ChannelError::Unavailable {
            reason: "connection refused".into(),
        };
        let checked = Problem::from_check("channels.tg.token".into(), "Telegram", "getMe", &down, "fix the token");
        assert!(checked.is_retryable(), "{checked}");
        let problem = checked.into_problem();
        assert!(
            problem.what.starts_with("could not reach Telegram (getMe)"),
            "{problem}"
        );
        assert!(problem.fix.contains("reaches Telegram"), "{problem}");
        let refused = Problem::from_check(
            "channels.tg.token".into(),
            "Telegram",
            "getMe",
            &ChannelError::Unauthorized,
            "fix the token",
        );
        assert!(!refused.is_retryable(), "{refused}");
        let refused = refused.into_problem();
        assert!(refused.what.starts_with("Telegram refused it (getMe)"), "{refused}");
        assert_eq!(refused.fix, "fix the token");
    }
}
