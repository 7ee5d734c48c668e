//! A question's plan, made when it is asked: when to remind the person,
//! when to escalate to whom, each held out of the quiet hours of the person
//! it reaches (spec: "When nobody answers"). The plan is stored with the
//! question ([`Step`]); [`crate::steps`] takes its steps as they fall due.

use askgate_core::when::{Point, QuietHours, Zone, hold};
use askgate_store::{Step, StepKind, Timestamp};

use crate::engine::EngineError;
use crate::recipient::Recipient;

/// One step of an escalation ladder: after `after` seconds without an
/// answer, the question is delivered to recipient `to` too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// Seconds after the question was asked.
    pub after: u32,
    /// The recipient it is delivered to then.
    pub to: String,
}

/// Reminders and escalations, as a recipient, an agent or a question sets
/// them. The most specific wins, each list on its own: the question's, then
/// the agent's, then the recipient's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nudges {
    /// When to remind (`50%`, `2m before`, `10m`); `None`: not set here.
    pub remind: Option<Vec<Point>>,
    /// The escalation ladder; `None`: not set here.
    pub escalate: Option<Vec<Escalation>>,
}

impl Nudges {
    /// These nudges, each list not set here taken from `fallback`.
    #[must_use]
    pub fn or(self, fallback: &Self) -> Self {
        Self {
            remind: self.remind.or_else(|| fallback.remind.clone()),
            escalate: self.escalate.or_else(|| fallback.escalate.clone()),
        }
    }
}

/// What a recipient's configuration says about waiting for them: their
/// nudges, their time zone and quiet hours, and who hears when a question
/// cannot reach them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    /// Reminders and escalations for questions to them.
    pub nudges: Nudges,
    /// Their time zone: quiet hours and the times they are shown are read
    /// in it. `None`: UTC.
    pub zone: Option<Zone>,
    /// When nothing is sent to them but questions themselves: a reminder or
    /// an escalation to them falling inside waits for its end.
    pub quiet_hours: Option<QuietHours>,
    /// A recipient told, once per question, when a question to them could
    /// not reach one of their surfaces.
    pub notify_failures_to: Option<String>,
}

impl Waiting {
    /// `at`, or the end of their quiet hours when it falls inside.
    pub fn hold(&self, at: Timestamp) -> Timestamp {
        match &self.quiet_hours {
            Some(quiet) => hold(at, self.zone.as_ref().unwrap_or(&Zone::utc()), quiet),
            None => at,
        }
    }
}

/// Where a question's nudges came from: a question's own are refused when
/// they cannot be kept, a configuration's are left out for that question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The request set them: a step that cannot be kept is an error.
    Question,
    /// The agent's or the recipient's configuration.
    Configured,
}

/// The plan of a question to `recipient`, asked at `created` and ending at
/// `expires`: its steps in time order. `recipient_of` finds the recipients
/// escalations name. A reminder or escalation held by quiet hours past the
/// question's end is left out; an escalation the question sets itself that
/// cannot happen before it ends, or names an unknown recipient, is refused
/// with its path (`escalate[1].after`).
pub fn plan<'r>(
    nudges: &Nudges,
    source: Source,
    recipient: &Recipient,
    recipient_of: impl Fn(&str) -> Option<&'r Recipient>,
    created: Timestamp,
    expires: Timestamp,
) -> Result<Vec<Step>, EngineError> {
    let mut steps = Vec::new();
    for point in nudges.remind.iter().flatten() {
        let Some(at) = point.at(created, expires) else {
            continue;
        };
        if let Some(step) = held(Step::planned(StepKind::Remind, at), &recipient.waiting, expires) {
            steps.push(step);
        }
    }
    for (index, escalation) in nudges.escalate.iter().flatten().enumerate() {
        let invalid = |field: &str, message: String| EngineError::InvalidPlan {
            path: format!("escalate[{index}].{field}"),
            message,
        };
        let Some(target) = recipient_of(&escalation.to) else {
            if source == Source::Question {
                return Err(invalid("to", format!("There is no recipient \"{}\".", escalation.to)));
            }
            continue;
        };
        // An escalation is delivered to the recipient's chats: their page
        // lists the questions addressed to them only.
        if !target.surfaces.iter().any(|surface| surface.kind != crate::engine::WEB) || target.name == recipient.name {
            if source == Source::Question {
                return Err(invalid(
                    "to",
                    format!(
                        "An escalation reaches a recipient in a chat; \"{}\" {}.",
                        escalation.to,
                        if target.name == recipient.name {
                            "is the question's own recipient"
                        } else {
                            "has only askgate's page"
                        }
                    ),
                ));
            }
            continue;
        }
        let at = created.saturating_add(i64::from(escalation.after) * 1000);
        if at >= expires {
            if source == Source::Question {
                let timeout = (expires - created) / 1000;
                return Err(invalid(
                    "after",
                    format!(
                        "This escalation comes {} s after the question is asked, but the question ends after {timeout} s: escalate sooner or wait longer.",
                        escalation.after
                    ),
                ));
            }
            continue;
        }
        let step = Step::planned(StepKind::Escalate, at).to(&target.name);
        if let Some(step) = held(step, &target.waiting, expires) {
            steps.push(step);
        }
    }
    steps.sort_by_key(|step| step.at);
    Ok(steps)
}

/// `step`, held to the end of the quiet hours of whom it reaches; `None`
/// when that is not before the question ends.
fn held(mut step: Step, waiting: &Waiting, expires: Timestamp) -> Option<Step> {
    let at = waiting.hold(step.at);
    if at >= expires {
        return None;
    }
    if at != step.at {
        step.held_from = Some(step.at);
        step.at = at;
    }
    Some(step)
}
