//! The keys about waiting for a person, on recipients and agents:
//! `remind`, `escalate`, and on recipients `timezone`, `quiet_hours` and
//! `notify_failures_to` (docs/spec.md, "When nobody answers").

use std::fmt::Write as _;

use askgate_adapter::config::ConfigCheck;
use askgate_core::when::{Point, QuietHours, Zone, parse_duration};
use askgate_engine::{Escalation, Nudges, Waiting};
use serde::Deserialize;

/// One step of `escalate = [{ after = "10m", to = "lead" }]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEscalation {
    /// A duration (`"10m"`, `"1h30m"`) or seconds.
    after: toml::Value,
    to: String,
}

/// `remind` and `escalate` as written under `prefix` (`recipients.alice`,
/// `agents.ci-bot`), read: `None` where a key is absent. `recipients` are
/// the names an escalation may reach; `longest_wait` the longest any
/// question may wait (an escalation after it could never happen); `own`
/// the recipient whose keys these are (escalating to oneself is refused).
pub(super) fn nudges(
    prefix: &str,
    remind: Option<&[String]>,
    escalate: Option<&[RawEscalation]>,
    recipients: &[&String],
    longest_wait: u32,
    own: Option<&str>,
    check: &mut ConfigCheck<'_>,
) -> Nudges {
    let remind = remind.map(|points| {
        points
            .iter()
            .enumerate()
            .filter_map(|(index, text)| match Point::parse(text) {
                Ok(point) => Some(point),
                Err(error) => {
                    check.problem(
                        &format!("{prefix}.remind[{index}]"),
                        format!("{error}."),
                        "write a share of the wait (\"50%\"), a time before it ends (\"2m before\") or after the question was asked (\"10m\").",
                    );
                    None
                }
            })
            .collect()
    });
    let escalate = escalate.map(|steps| {
        steps
            .iter()
            .enumerate()
            .filter_map(|(index, step)| {
                escalation(
                    &format!("{prefix}.escalate[{index}]"),
                    step,
                    recipients,
                    longest_wait,
                    own,
                    check,
                )
            })
            .collect()
    });
    Nudges { remind, escalate }
}

fn escalation(
    key: &str,
    step: &RawEscalation,
    recipients: &[&String],
    longest_wait: u32,
    own: Option<&str>,
    check: &mut ConfigCheck<'_>,
) -> Option<Escalation> {
    let after = match &step.after {
        toml::Value::Integer(seconds) => u32::try_from(*seconds).ok().filter(|seconds| *seconds > 0),
        toml::Value::String(text) => parse_duration(text).ok(),
        _ => None,
    };
    let Some(after) = after else {
        check.problem(
            &format!("{key}.after"),
            "an escalation's after is how long nobody answered before it happens.",
            "write a duration such as \"10m\" or \"1h30m\", or a number of seconds.",
        );
        return None;
    };
    if after >= longest_wait {
        check.problem(
            &format!("{key}.after"),
            format!(
                "this escalation comes {} after the question is asked, but no question waits that long here (at most {}).",
                askgate_core::when::format_duration(after),
                askgate_core::when::format_duration(longest_wait)
            ),
            "escalate sooner, or let the agents ask for longer waits (max_timeout).",
        );
        return None;
    }
    if own == Some(step.to.as_str()) {
        check.problem(
            &format!("{key}.to"),
            "a recipient cannot escalate to themselves.",
            "name the recipient who answers when they do not.",
        );
        return None;
    }
    if !recipients.iter().any(|name| **name == step.to) {
        check.problem(
            &format!("{key}.to"),
            format!("there is no recipient named \"{}\".", step.to),
            format!("name one of: {}.", super::names(recipients.iter().copied())),
        );
        return None;
    }
    Some(Escalation {
        after,
        to: step.to.clone(),
    })
}

/// A recipient's `timezone`, `quiet_hours` and `notify_failures_to`, read
/// beside its `nudges`.
pub(super) fn waiting(
    prefix: &str,
    nudges: Nudges,
    (timezone, quiet_hours, notify_failures_to): (Option<&str>, Option<&str>, Option<&str>),
    recipients: &[&String],
    check: &mut ConfigCheck<'_>,
) -> Waiting {
    let zone = timezone.and_then(|name| match Zone::parse(name) {
        Ok(zone) => Some(zone),
        Err(error) => {
            check.problem(
                &format!("{prefix}.timezone"),
                format!("{error}."),
                "use the zone's IANA name, as in \"Europe/Berlin\".",
            );
            None
        }
    });
    let quiet_hours = quiet_hours.and_then(|text| match QuietHours::parse(text) {
        Ok(quiet) => Some(quiet),
        Err(error) => {
            check.problem(
                &format!("{prefix}.quiet_hours"),
                format!("{error}."),
                "write the start and end as 24-hour times, as in \"22:00-07:00\".",
            );
            None
        }
    });
    let notify_failures_to = notify_failures_to.and_then(|name| {
        if recipients.iter().any(|known| *known == name) {
            Some(name.to_owned())
        } else {
            check.problem(
                &format!("{prefix}.notify_failures_to"),
                format!("there is no recipient named \"{name}\"."),
                format!("name one of: {}.", super::names(recipients.iter().copied())),
            );
            None
        }
    });
    Waiting {
        nudges,
        zone,
        quiet_hours,
        notify_failures_to,
    }
}

/// What `check-config` says of a recipient's or agent's waiting keys, or
/// nothing when none is set: "; reminds at 50%, 2m before; escalates to
/// lead after 10m".
pub(crate) fn describe(nudges: &Nudges, waiting: Option<&Waiting>) -> String {
    let mut said = String::new();
    if let Some(points) = nudges.remind.as_ref().filter(|points| !points.is_empty()) {
        let points: Vec<String> = points.iter().map(ToString::to_string).collect();
        let _ = write!(said, "; reminds at {}", points.join(", "));
    }
    if let Some(steps) = nudges.escalate.as_ref().filter(|steps| !steps.is_empty()) {
        let steps: Vec<String> = steps
            .iter()
            .map(|step| {
                format!(
                    "to {} after {}",
                    step.to,
                    askgate_core::when::format_duration(step.after)
                )
            })
            .collect();
        let _ = write!(said, "; escalates {}", steps.join(", then "));
    }
    if let Some(waiting) = waiting {
        if let Some(quiet) = &waiting.quiet_hours {
            let zone = waiting.zone.as_ref().map_or("UTC", Zone::name);
            let _ = write!(said, "; quiet {quiet} ({zone})");
        } else if let Some(zone) = &waiting.zone {
            let _ = write!(said, "; time zone {}", zone.name());
        }
        if let Some(admin) = &waiting.notify_failures_to {
            let _ = write!(said, "; {admin} is told when a question cannot reach them");
        }
    }
    said
}

/// Refuses an escalation to a recipient who has only askgate's page: an
/// escalation is delivered to a recipient's chats (their page lists the
/// questions addressed to them only).
pub(super) fn chats_only(
    recipients: &[super::RecipientConfig],
    agents: &[super::AgentConfig],
    check: &mut ConfigCheck<'_>,
) {
    let page_only = |name: &str| {
        recipients
            .iter()
            .find(|recipient| recipient.name == name)
            .is_some_and(|recipient| recipient.surfaces.iter().all(|surface| surface.kind == "web"))
    };
    let ladders = recipients
        .iter()
        .map(|recipient| (format!("recipients.{}", recipient.name), &recipient.waiting.nudges))
        .chain(
            agents
                .iter()
                .map(|agent| (format!("agents.{}", agent.name), &agent.nudges)),
        );
    for (prefix, nudges) in ladders {
        for (index, step) in nudges.escalate.iter().flatten().enumerate() {
            if page_only(&step.to) {
                check.problem(
                    &format!("{prefix}.escalate[{index}].to"),
                    format!(
                        "\"{}\" has only askgate's page, and an escalation reaches a recipient in a chat.",
                        step.to
                    ),
                    "escalate to a recipient with a chat surface (telegram, discord, slack, matrix).",
                );
            }
        }
    }
}
