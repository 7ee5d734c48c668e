//! `[recipients.<name>]`: who questions go to, and their surfaces.
//!
//! A recipient names one channel (`channel = "tg"`, with its addressing
//! keys beside it: the one-surface shorthand) or several (`surfaces =
//! ["tg", "web"]`, each channel's addressing keys in a table of its own,
//! `[recipients.alice.tg]`). Each channel's kind reads its addressing keys.
//! Every recipient has a web page, whether or not a web channel is listed.

use std::collections::BTreeMap;

use askgate_adapter::config::{AdapterKind, Address, ConfigCheck};
use askgate_core::Locale;
use askgate_engine::Waiting;
use serde::Deserialize;

use super::waiting::{self, RawEscalation};

use super::Secret;
use super::{RawChannel, names};

/// A recipient as configured.
#[derive(Debug, Clone)]
pub(crate) struct RecipientConfig {
    pub(crate) name: String,
    pub(crate) display_name: String,
    pub(crate) locale: Locale,
    /// The page link's keys (`web_key`, or `web_keys` while one is
    /// rotated: every one opens the page); empty: askgate's generated one.
    pub(crate) web_keys: Vec<Secret>,
    /// Where their questions are shown, in the order listed; never empty.
    pub(crate) surfaces: Vec<SurfaceConfig>,
    /// Reminders, escalations, time zone, quiet hours, failure notices.
    pub(crate) waiting: Waiting,
    /// `email`: their address, by which sign-in (`[web.oidc]`) knows them
    /// when the provider says it is verified.
    pub(crate) email: Option<String>,
    /// `oidc_subject`: their `sub` at the sign-in provider.
    pub(crate) oidc_subject: Option<String>,
    /// A group's people (`people = ["alice"]`): the person recipients who
    /// answer its questions on askgate's page, each through their own link.
    pub(crate) people: Vec<String>,
}

impl RecipientConfig {
    /// Whether this is a group: a surface names who may answer there.
    pub(crate) fn is_group(&self) -> bool {
        self.surfaces
            .iter()
            .any(|surface| !surface.address.answerers.is_empty())
    }

    /// What `check-config` says of them: each surface, where on it, who
    /// answers there, and the page every recipient has.
    pub(crate) fn describe(&self) -> String {
        let surfaces: Vec<String> = self
            .surfaces
            .iter()
            .map(|surface| {
                if surface.kind == "web" {
                    return format!("web channel \"{}\" (the page)", surface.channel);
                }
                let destination = &surface.address.destination;
                let thread = destination
                    .thread
                    .as_ref()
                    .map_or_else(String::new, |thread| format!(", thread {thread}"));
                let who = if surface.address.answerers.is_empty() {
                    "the person of the direct chat".to_owned()
                } else {
                    surface.address.answerers.join(", ")
                };
                format!(
                    "{} channel \"{}\" (conversation {}{thread}, answered by {who})",
                    surface.kind, surface.channel, destination.conversation
                )
            })
            .collect();
        let on_page = self.surfaces.iter().any(|surface| surface.kind == "web");
        let page = match (self.is_group(), self.people.is_empty(), on_page) {
            (true, true, _) => {
                "; no one answers it on the web page (a group: name its people = [...] to give each their own link)"
                    .to_owned()
            }
            (true, false, _) => format!(
                "; also answerable on the web page by {}, each through their own link",
                self.people.join(", ")
            ),
            (false, _, true) => format!("; its page link: askgate link show {}", self.name),
            (false, _, false) => format!(
                "; also answerable on its web page (its link: askgate link show {})",
                self.name
            ),
        };
        // The page counts as a place to answer, listed or not.
        let places = self.surfaces.len() + usize::from(!on_page);
        let first_wins = if places > 1 {
            "; the first answer on any of them wins"
        } else {
            ""
        };
        format!(
            "recipient \"{}\": shown on {}{page}{first_wins}{}",
            self.name,
            surfaces.join(" and "),
            super::waiting::describe(&self.waiting.nudges, Some(&self.waiting))
        )
    }
}

/// One surface of a recipient.
#[derive(Debug, Clone)]
pub(crate) struct SurfaceConfig {
    /// The channel's name.
    pub(crate) channel: String,
    /// The kind of its channel (`"web"`, or a platform's).
    pub(crate) kind: String,
    /// Where on its channel, and who may answer (read by the channel's kind).
    pub(crate) address: Address,
}

/// A recipient: the keys every recipient has, and the rest (its address on
/// its channel, or one table per surface) for the channels' kinds to read.
#[derive(Debug, Deserialize)]
pub(super) struct RawRecipient {
    channel: Option<String>,
    surfaces: Option<Vec<String>>,
    display_name: Option<String>,
    locale: Option<String>,
    web_key: Option<String>,
    web_keys: Option<Vec<String>>,
    remind: Option<Vec<String>>,
    escalate: Option<Vec<RawEscalation>>,
    timezone: Option<String>,
    quiet_hours: Option<String>,
    notify_failures_to: Option<String>,
    email: Option<String>,
    oidc_subject: Option<String>,
    people: Option<Vec<String>>,
    #[serde(flatten)]
    rest: toml::Table,
}

/// Reads every recipient; problems go to `check`.
pub(super) fn recipients(
    raw: &BTreeMap<String, RawRecipient>,
    channels: &BTreeMap<String, RawChannel>,
    kinds: &[Box<dyn AdapterKind>],
    longest_wait: u32,
    check: &mut ConfigCheck<'_>,
) -> Vec<RecipientConfig> {
    let mut recipients = Vec::new();
    let known: Vec<&String> = raw.keys().collect();
    for (name, recipient) in raw {
        let key = |field: &str| format!("recipients.{name}.{field}");
        let surfaces = match (&recipient.channel, &recipient.surfaces) {
            (Some(channel), None) => one_surface(name, channel, recipient.rest.clone(), channels, kinds, check),
            (None, Some(listed)) => surfaces(name, listed, recipient.rest.clone(), channels, kinds, check),
            (Some(_), Some(_)) => {
                check.problem(
                    &key("surfaces"),
                    "a recipient has either channel (one surface) or surfaces (several), not both.",
                    "keep surfaces = [...] and remove channel.",
                );
                None
            }
            (None, None) => {
                check.problem(
                    &key("channel"),
                    "a recipient needs the channel its questions go to.",
                    format!(
                        "add channel = \"<name>\", or surfaces = [\"<name>\", ...]; channels: {}.",
                        names(channels.keys())
                    ),
                );
                None
            }
        };
        let locale = match recipient.locale.as_deref().unwrap_or("en").parse::<Locale>() {
            Ok(locale) => locale,
            Err(error) => {
                check.problem(&key("locale"), format!("{error}."), "use \"en\" or \"zh-CN\".");
                Locale::En
            }
        };
        let web_keys = check.secrets(
            (&key("web_key"), recipient.web_key.as_deref()),
            (&key("web_keys"), recipient.web_keys.as_deref()),
        );
        let prefix = format!("recipients.{name}");
        let nudges = waiting::nudges(
            &prefix,
            recipient.remind.as_deref(),
            recipient.escalate.as_deref(),
            &known,
            longest_wait,
            Some(name),
            check,
        );
        let waiting = waiting::waiting(
            &prefix,
            nudges,
            (
                recipient.timezone.as_deref(),
                recipient.quiet_hours.as_deref(),
                recipient.notify_failures_to.as_deref(),
            ),
            &known,
            check,
        );
        if let Some(surfaces) = surfaces {
            recipients.push(RecipientConfig {
                name: name.clone(),
                display_name: recipient.display_name.clone().unwrap_or_else(|| name.clone()),
                locale,
                web_keys,
                surfaces,
                waiting,
                email: recipient.email.clone(),
                oidc_subject: recipient.oidc_subject.clone(),
                people: recipient.people.clone().unwrap_or_default(),
            });
        }
    }
    check_people(&recipients, check);
    recipients
}

/// A group's `people` must each be a person recipient, named once; only a
/// group names people (a person answers on their own link already).
fn check_people(recipients: &[RecipientConfig], check: &mut ConfigCheck<'_>) {
    for group in recipients.iter().filter(|r| r.is_group() && !r.web_keys.is_empty()) {
        check.problem(
            &format!("recipients.{}.web_key", group.name),
            "a group has no page link of its own: the page could not tell which of its people answered.",
            "remove web_key (or web_keys), and name the group's people = [...]: each answers on their own link.",
        );
    }
    for recipient in recipients.iter().filter(|r| !r.people.is_empty()) {
        let key = format!("recipients.{}.people", recipient.name);
        if !recipient.is_group() {
            check.problem(
                &key,
                "only a group (a recipient with answerers) names people: a person answers on their own page link.",
                "remove people, or give the recipient's surfaces answerers = [...].",
            );
            continue;
        }
        let persons: Vec<&String> = recipients.iter().filter(|r| !r.is_group()).map(|r| &r.name).collect();
        for (index, name) in recipient.people.iter().enumerate() {
            if recipient.people[..index].contains(name) {
                check.problem(&key, format!("\"{name}\" is listed twice."), "list each person once.");
            } else if !persons.contains(&name) {
                let what = if recipients.iter().any(|r| r.name == *name) {
                    format!("\"{name}\" is a group, not a person.")
                } else {
                    format!("there is no recipient \"{name}\".")
                };
                check.problem(
                    &key,
                    what,
                    format!(
                        "name person recipients (each has their own page link); persons: {}.",
                        names(persons.iter().copied())
                    ),
                );
            }
        }
    }
}

/// `channel = "tg"` with the addressing keys beside it.
fn one_surface(
    name: &str,
    channel: &str,
    table: toml::Table,
    channels: &BTreeMap<String, RawChannel>,
    kinds: &[Box<dyn AdapterKind>],
    check: &mut ConfigCheck<'_>,
) -> Option<Vec<SurfaceConfig>> {
    let kind = channel_kind(&format!("recipients.{name}.channel"), channel, channels, kinds, check)?;
    let address = kind.recipient(check, name, table)?;
    Some(vec![SurfaceConfig {
        channel: channel.to_owned(),
        kind: kind.kind().to_owned(),
        address,
    }])
}

/// `surfaces = ["tg", "web"]`, each channel's keys in `[recipients.<name>.<channel>]`.
fn surfaces(
    name: &str,
    listed: &[String],
    mut rest: toml::Table,
    channels: &BTreeMap<String, RawChannel>,
    kinds: &[Box<dyn AdapterKind>],
    check: &mut ConfigCheck<'_>,
) -> Option<Vec<SurfaceConfig>> {
    let key = format!("recipients.{name}.surfaces");
    if listed.is_empty() {
        check.problem(
            &key,
            "no surface is listed.",
            format!(
                "list the channels to show questions on; channels: {}.",
                names(channels.keys())
            ),
        );
        return None;
    }
    let mut surfaces = Vec::new();
    let mut complete = true;
    for (index, channel) in listed.iter().enumerate() {
        if listed[..index].contains(channel) {
            check.problem(
                &key,
                format!("\"{channel}\" is listed twice."),
                "list each channel once.",
            );
            complete = false;
            continue;
        }
        let table = match rest.remove(channel) {
            None => toml::Table::new(),
            Some(toml::Value::Table(table)) => table,
            Some(other) => {
                check.problem(
                    &format!("recipients.{name}.{channel}"),
                    format!(
                        "expected a table of \"{channel}\"'s addressing keys, got {}.",
                        other.type_str()
                    ),
                    format!("write [recipients.{name}.{channel}] with its keys (chat_id, user_id, ...)."),
                );
                complete = false;
                continue;
            }
        };
        let Some(kind) = channel_kind(&key, channel, channels, kinds, check) else {
            complete = false;
            continue;
        };
        // A page's conversation is the recipient itself; the others' keys
        // are reported under their own table.
        let prefix = if kind.kind() == "web" {
            name.to_owned()
        } else {
            format!("{name}.{channel}")
        };
        match kind.recipient(check, &prefix, table) {
            Some(address) => surfaces.push(SurfaceConfig {
                channel: channel.clone(),
                kind: kind.kind().to_owned(),
                address,
            }),
            None => complete = false,
        }
    }
    for (left, _) in rest {
        check.problem(
            &format!("recipients.{name}.{left}"),
            "with surfaces = [...], each channel's keys go in a table of its own.",
            format!("move it to [recipients.{name}.<channel>], or list that channel in surfaces."),
        );
        complete = false;
    }
    complete.then_some(surfaces)
}

/// The kind of the channel `channel`, or a problem at `key`.
fn channel_kind<'k>(
    key: &str,
    channel: &str,
    channels: &BTreeMap<String, RawChannel>,
    kinds: &'k [Box<dyn AdapterKind>],
    check: &mut ConfigCheck<'_>,
) -> Option<&'k dyn AdapterKind> {
    let Some(raw) = channels.get(channel) else {
        check.problem(
            key,
            format!("there is no channel named \"{channel}\"."),
            format!("add [channels.{channel}] or name one of: {}.", names(channels.keys())),
        );
        return None;
    };
    // A channel of an unknown type is reported with the channel.
    kinds.iter().find(|kind| kind.kind() == raw.kind).map(|kind| &**kind)
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const BASE: &str = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n\
                        [channels.tg]\ntype = \"telegram\"\ntoken = \"${TG}\"\n";

    fn env(name: &str) -> Option<String> {
        (name == "TG").then(|| "123456:telegram-token-for-the-config-tests".to_owned())
    }

    fn problems(text: &str) -> Vec<String> {
        match parse(&format!("{BASE}{text}"), &env) {
            Ok(_) => Vec::new(),
            Err(problems) => problems.0.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_recipient_lists_its_surfaces_each_with_its_own_keys() {
        let text = format!(
            "{BASE}[recipients.alice]\ndisplay_name = \"Alice\"\nsurfaces = [\"tg\", \"web\"]\n\
             [recipients.alice.tg]\nchat_id = 123\n"
        );
        let config = parse(&text, &env).unwrap();
        let alice = &config.recipients[0];
        let surfaces: Vec<(&str, &str, &str)> = alice
            .surfaces
            .iter()
            .map(|s| {
                (
                    s.channel.as_str(),
                    s.kind.as_str(),
                    s.address.destination.conversation.as_str(),
                )
            })
            .collect();
        assert_eq!(surfaces, [("tg", "telegram", "123"), ("web", "web", "alice")]);
        assert_eq!(
            alice.describe(),
            "recipient \"alice\": shown on telegram channel \"tg\" (conversation 123, answered by the person \
             of the direct chat) and web channel \"web\" (the page); its page link: askgate link show alice; the \
             first answer on any of them wins"
        );
        // The one-surface shorthand says where else it can be answered.
        let text = format!("{BASE}[recipients.bob]\nchannel = \"tg\"\nchat_id = 7\n");
        let bob = &parse(&text, &env).unwrap().recipients[0];
        assert_eq!(bob.surfaces.len(), 1);
        assert_eq!(
            bob.describe(),
            "recipient \"bob\": shown on telegram channel \"tg\" (conversation 7, answered by the person of the \
             direct chat); also answerable on its web page (its link: askgate link show bob); the first answer on any \
             of them wins"
        );
        // The page alone: one place, nothing to win.
        let text = format!("{BASE}[recipients.me]\nchannel = \"web\"\n");
        let me = &parse(&text, &env).unwrap().recipients[0];
        assert_eq!(
            me.describe(),
            "recipient \"me\": shown on web channel \"web\" (the page); its page link: askgate link show me"
        );
    }

    #[test]
    fn surfaces_that_cannot_be_read_are_each_explained() {
        let said = problems(
            "[recipients.a]\nchannel = \"web\"\nsurfaces = [\"web\"]\n\
             [recipients.b]\nsurfaces = [\"tg\", \"tg\", \"nowhere\"]\n[recipients.b.tg]\nchat_id = 1\n\
             [recipients.c]\nsurfaces = [\"tg\"]\nchat_id = 5\n\
             [recipients.d]\nsurfaces = [\"tg\", \"web\"]\n[recipients.d.tg]\ntopic = 3\n\
             [recipients.e]\nsurfaces = []\n\
             [recipients.f]\ndisplay_name = \"F\"\n",
        );
        let about = |key: &str| {
            said.iter()
                .find(|line| line.starts_with(key))
                .unwrap_or_else(|| panic!("nothing said about {key}: {said:#?}"))
                .clone()
        };
        assert!(about("recipients.a.surfaces").contains("not both"));
        assert!(
            said.iter()
                .any(|l| l.starts_with("recipients.b.surfaces") && l.contains("listed twice"))
        );
        assert!(
            said.iter()
                .any(|l| l.starts_with("recipients.b.surfaces") && l.contains("no channel named \"nowhere\""))
        );
        assert!(about("recipients.c.chat_id").contains("a table of its own"));
        assert!(about("recipients.d.tg.chat_id").contains("needs the chat"));
        assert!(about("recipients.e.surfaces").contains("no surface is listed"));
        assert!(about("recipients.f.channel").contains("needs the channel"));
    }

    #[test]
    fn a_group_names_its_people_who_answer_on_their_own_pages() {
        let people = "[recipients.alice]\nchannel = \"tg\"\nchat_id = 1\n\
                      [recipients.bob]\nchannel = \"web\"\n";
        let group = "[recipients.ops]\nchannel = \"tg\"\nchat_id = -100\nanswerers = [1, 2]\n";
        let text = format!("{BASE}{people}{group}people = [\"alice\", \"bob\"]\n");
        let config = parse(&text, &env).unwrap();
        let ops = config.recipients.iter().find(|r| r.name == "ops").unwrap();
        assert!(ops.is_group());
        assert_eq!(ops.people, ["alice", "bob"]);
        assert!(
            ops.describe()
                .contains("also answerable on the web page by alice, bob, each through their own link"),
            "{}",
            ops.describe()
        );
        // A group without people: nobody answers it on the page, and check-config says how to change that.
        let config = parse(&format!("{BASE}{people}{group}"), &env).unwrap();
        let ops = config.recipients.iter().find(|r| r.name == "ops").unwrap();
        assert!(
            ops.describe().contains("no one answers it on the web page"),
            "{}",
            ops.describe()
        );

        // Each problem names its key and a fix.
        let cases = [
            (
                "people = [\"carol\"]",
                "there is no recipient \"carol\"",
                "recipients.ops.people",
            ),
            (
                "people = [\"alice\", \"alice\"]",
                "\"alice\" is listed twice",
                "recipients.ops.people",
            ),
            (
                "web_key = \"0123456789abcdefghijklmnopqrstuvwxyz\"",
                "a group has no page link of its own",
                "recipients.ops.web_key",
            ),
        ];
        for (line, what, key) in cases {
            let found = problems(&format!("{people}{group}{line}\n"));
            assert!(
                found.iter().any(|p| p.contains(key) && p.contains(what)),
                "{line}: {found:?}"
            );
        }
        // A group named as a person; a person naming people.
        let other = "[recipients.dev]\nchannel = \"tg\"\nchat_id = -200\nanswerers = [3]\n";
        let found = problems(&format!("{people}{other}{group}people = [\"dev\"]\n"));
        assert!(
            found.iter().any(|p| p.contains("\"dev\" is a group, not a person")),
            "{found:?}"
        );
        let found = problems(&format!("{people}people = [\"bob\"]\n"));
        assert!(
            found
                .iter()
                .any(|p| p.contains("recipients.bob.people") && p.contains("only a group")),
            "{found:?}"
        );
    }
}
