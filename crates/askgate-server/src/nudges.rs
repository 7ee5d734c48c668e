//! The reminders and escalations a question sets itself: `remind` and
//! `escalate` in the envelope of `POST /v1/questions` and `POST /v1/ask`
//! (docs/spec.md, "When nobody answers"). They win over the agent's and the
//! recipient's configuration.

use askgate_core::validate::{ErrorCode, ValidationError};
use askgate_core::when::{Point, parse_duration};
use askgate_engine::{Escalation, Nudges};
use serde_json::{Map, Value};

use crate::api::error;

/// The most reminders, and the most escalation steps, one question sets.
pub const MAX_STEPS: usize = 10;

/// `remind` and `escalate` as sent (absent or `null`: not set); every
/// problem goes into `errors`, with its path.
pub(crate) fn read(present: &Map<String, Value>, errors: &mut Vec<ValidationError>) -> Nudges {
    Nudges {
        remind: present.get("remind").and_then(|value| remind(value, errors)),
        escalate: present.get("escalate").and_then(|value| escalate(value, errors)),
    }
}

fn remind(value: &Value, errors: &mut Vec<ValidationError>) -> Option<Vec<Point>> {
    let items = list(
        value,
        "remind",
        "a list of reminder points such as \"50%\" or \"2m before\"",
        errors,
    )?;
    let mut points = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = format!("remind[{index}]");
        match item.as_str().map(Point::parse) {
            Some(Ok(point)) => points.push(point),
            Some(Err(problem)) => errors.push(error(
                ErrorCode::InvalidReminder,
                &path,
                format!("The {problem}. Write a share of the wait (\"50%\"), a time before it ends (\"2m before\") or after it was asked (\"10m\")."),
            )),
            None => errors.push(error(
                ErrorCode::InvalidType,
                &path,
                "A reminder point is a string such as \"50%\" or \"2m before\".".to_owned(),
            )),
        }
    }
    Some(points)
}

fn escalate(value: &Value, errors: &mut Vec<ValidationError>) -> Option<Vec<Escalation>> {
    let items = list(
        value,
        "escalate",
        "a list of {\"after\": \"10m\", \"to\": \"<recipient>\"}",
        errors,
    )?;
    let mut steps = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = format!("escalate[{index}]");
        let Some(fields) = item.as_object() else {
            errors.push(error(
                ErrorCode::InvalidType,
                &path,
                "An escalation is an object: {\"after\": \"10m\", \"to\": \"<recipient>\"}.".to_owned(),
            ));
            continue;
        };
        for unknown in fields.keys().filter(|key| !matches!(key.as_str(), "after" | "to")) {
            let name = askgate_core::text::excerpt(unknown);
            errors.push(error(
                ErrorCode::UnknownField,
                &format!("{path}.{name}"),
                format!("An escalation has no field \"{name}\": it has \"after\" and \"to\"."),
            ));
        }
        let after = match fields.get("after") {
            Some(Value::String(text)) => parse_duration(text).map_err(|problem| format!("The {problem}.")),
            Some(Value::Number(number)) => number
                .as_u64()
                .and_then(|seconds| u32::try_from(seconds).ok())
                .filter(|seconds| *seconds > 0)
                .ok_or_else(|| "A number of seconds here is a whole number above 0.".to_owned()),
            _ => Err("\"after\" is how long nobody answered before the escalation: \"10m\", or seconds.".to_owned()),
        };
        let after = after
            .map_err(|message| errors.push(error(ErrorCode::InvalidEscalation, &format!("{path}.after"), message)))
            .ok();
        let to = match fields.get("to") {
            Some(Value::String(to)) if !to.trim().is_empty() => Some(to.trim().to_owned()),
            _ => {
                errors.push(error(
                    ErrorCode::InvalidEscalation,
                    &format!("{path}.to"),
                    "\"to\" is the name of the recipient the question is escalated to.".to_owned(),
                ));
                None
            }
        };
        if let (Some(after), Some(to)) = (after, to) {
            steps.push(Escalation { after, to });
        }
    }
    Some(steps)
}

/// `value` as a list of at most [`MAX_STEPS`] items, or a problem at
/// `path`; `None` for `null`.
fn list<'v>(value: &'v Value, path: &str, what: &str, errors: &mut Vec<ValidationError>) -> Option<&'v Vec<Value>> {
    match value {
        Value::Null => None,
        Value::Array(items) if items.len() <= MAX_STEPS => Some(items),
        Value::Array(items) => {
            errors.push(error(
                ErrorCode::InvalidType,
                path,
                format!("At most {MAX_STEPS} here; this has {}.", items.len()),
            ));
            None
        }
        _ => {
            errors.push(error(ErrorCode::InvalidType, path, format!("\"{path}\" is {what}.")));
            None
        }
    }
}
