//! The question resource, as the API shows it.

use std::time::{Duration, UNIX_EPOCH};

use askgate_core::ToolResult;
use askgate_store::{QuestionRecord, QuestionStatus, StepKind, Surface, Timestamp};
use serde_json::{Value, json};

/// RFC 3339 with milliseconds, UTC: `2026-12-02T16:00:00.000Z`.
pub fn time(at: Timestamp) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(at).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

/// The exact tool result of spec §3 for an ended question; `None` while pending.
pub fn tool_result(record: &QuestionRecord) -> Option<ToolResult> {
    let answers = record.resolution.as_ref().and_then(|r| r.answers.as_ref());
    match (record.status, answers) {
        (QuestionStatus::Pending, _) => None,
        (QuestionStatus::Answered, Some(answers)) => Some(ToolResult::from(answers)),
        (QuestionStatus::DeliveryFailed, _) => Some(ToolResult::DeliveryFailed),
        _ => Some(ToolResult::NoAnswer),
    }
}

/// A question's result callback attempts, as `callbacks` in
/// `GET /v1/questions/{id}`: `{attempt, status, httpStatus, at}` each.
pub fn callbacks(attempts: &[askgate_store::CallbackAttempt]) -> Value {
    attempts
        .iter()
        .map(|attempt| {
            json!({
                "attempt": attempt.attempt,
                "status": attempt.status,
                "httpStatus": attempt.http_status,
                "at": time(attempt.at),
            })
        })
        .collect()
}

/// The question resource: what was asked, of whom, where, and how it ended.
pub fn question(record: &QuestionRecord) -> Value {
    let resolution = record.resolution.as_ref().map(|resolution| {
        json!({
            "status": resolution.status,
            "reason": resolution.reason,
            "by": resolution.by.as_ref().map(|by| json!({"id": by.id, "displayName": by.display_name})),
            "via": resolution.via,
            "surface": resolution.surface,
            "answers": resolution.answers.as_ref().map(|answers| {
                answers.iter().map(|(id, items)| (id.to_owned(), json!(items))).collect::<serde_json::Map<_, _>>()
            }),
        })
    });
    let progress: serde_json::Map<String, Value> = record
        .progress
        .iter()
        .map(|(id, items)| (id.to_owned(), json!(items)))
        .collect();
    json!({
        "id": record.id,
        "status": record.status,
        "to": record.recipient,
        "channel": record.channel(),
        "deliveries": record.surfaces.iter().map(delivery).collect::<Vec<_>>(),
        "sessionId": record.session_id,
        "runId": record.run_id,
        "request": record.request,
        "createdAt": time(record.created_at),
        "expiresAt": time(record.expires_at),
        "resolvedAt": record.resolution.as_ref().map(|r| time(r.at)),
        "answeredBy": record.resolution.as_ref().and_then(|r| r.by.as_ref()).map(|by| json!({"id": by.id, "displayName": by.display_name})),
        "progress": progress,
        "resolution": resolution,
        "result": tool_result(record),
        "reminders": record.steps.iter().filter(|step| step.kind == StepKind::Remind).map(|step| json!({
            "at": time(step.at),
            "heldFrom": step.held_from.map(time),
            "sentAt": step.done.map(time),
        })).collect::<Vec<_>>(),
        "escalations": record.steps.iter().filter(|step| step.kind == StepKind::Escalate).map(|step| json!({
            "to": step.to,
            "at": time(step.at),
            "heldFrom": step.held_from.map(time),
            "escalatedAt": step.done.map(time),
        })).collect::<Vec<_>>(),
    })
}

/// One surface's delivery, as the resource lists it: the kind of surface
/// (`telegram`, `web`; `null` for a question stored before kinds were
/// recorded), the channel, the state (`sending`, `delivered`, `failed`),
/// why it failed, and the platform's messages.
fn delivery(surface: &Surface) -> Value {
    let messages: Vec<Value> = surface
        .delivery
        .iter()
        .flat_map(|delivery| &delivery.messages)
        .map(|message| json!({"conversation": message.conversation, "message": message.message}))
        .collect();
    json!({
        "surface": (!surface.kind.is_empty()).then_some(surface.kind.as_str()),
        "channel": surface.channel,
        "recipient": surface.recipient,
        "status": surface.state.as_str(),
        "reason": surface.reason,
        "messages": messages,
    })
}
