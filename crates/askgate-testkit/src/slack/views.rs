//! Modals: `views.open` with a trigger id (single-use, working for a short
//! while after its interaction was sent: `invalid_trigger_id`,
//! `exchanged_trigger_id`, `expired_trigger_id`), the view checked
//! (`invalid_arguments` with Slack's `response_metadata.messages`) and
//! answered as Slack answers it; and what a submission's acknowledgement
//! does to the modal (`response_action` `errors`, `update`, `push`, `clear`,
//! or closing it).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};

use super::blocks;
use super::methods::text_arg;
use super::server::ApiError;
use super::state::{State, unix_seconds};
use super::types::{DeliveryStatus, OpenedView, ViewOutcome};
use super::{APP_ID, BOT_ID, TEAM_ID};

impl State {
    pub(crate) fn open_view(&mut self, args: &Value, now: Instant) -> Result<Value, ApiError> {
        // Both are required arguments, checked with the others before this;
        // the view is an argument too, checked before the trigger is used up.
        // A `view` that is not an object (a form field whose JSON did not
        // parse) is checked, and refused, as one.
        let view = args.get("view").cloned().unwrap_or(Value::Null);
        if let Err(errors) = blocks::check_modal(&view) {
            return Err(ApiError::new("invalid_arguments").with_messages(&errors));
        }
        let trigger_id = text_arg(args, "trigger_id").unwrap_or_default();
        let lifetime = self.config.trigger_lifetime;
        let trigger = match self.triggers.get(&trigger_id) {
            Some(trigger) if trigger.used => return Err(ApiError::new("exchanged_trigger_id")),
            Some(trigger) => match trigger.sent {
                Some(sent) if now.duration_since(sent) > lifetime => return Err(ApiError::new("expired_trigger_id")),
                Some(_) => trigger.clone(),
                // Not sent yet: the app cannot have it.
                None => return Err(ApiError::new("invalid_trigger_id")),
            },
            None => return Err(ApiError::new("invalid_trigger_id")),
        };
        if let Some(used) = self.triggers.get_mut(&trigger_id) {
            used.used = true;
        }
        let id = self.id("V");
        let json = self.view_json(&id, &view, None);
        self.views.push(OpenedView {
            id,
            trigger_id,
            user: trigger.user,
            json: json.clone(),
            open: true,
            errors: BTreeMap::new(),
        });
        Ok(json!({ "view": json }))
    }

    /// A view as Slack answers and sends it: its id, `state`, `hash`, and
    /// the ids of its blocks and elements.
    pub(crate) fn view_json(&mut self, id: &str, view: &Value, stack: Option<(&str, &str)>) -> Value {
        let mut blocks = view.get("blocks").cloned().unwrap_or_else(|| json!([]));
        blocks::normalise(&mut blocks, &mut || self.short_id());
        let text = |key: &str| view.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let with_emoji = |key: &str| {
            let mut object = view.get(key).cloned().unwrap_or(Value::Null);
            if object.is_object() && object.get("emoji").is_none() {
                object["emoji"] = json!(true);
            }
            object
        };
        let hash = format!("{}.{}", unix_seconds(), self.short_id());
        let (previous, root) = match stack {
            Some((previous, root)) => (json!(previous), root.to_owned()),
            None => (Value::Null, id.to_owned()),
        };
        json!({
            "id": id,
            "team_id": TEAM_ID,
            "type": "modal",
            "blocks": blocks,
            "private_metadata": text("private_metadata"),
            "callback_id": text("callback_id"),
            "state": { "values": {} },
            "hash": hash,
            "title": with_emoji("title"),
            "clear_on_close": view.get("clear_on_close").and_then(Value::as_bool).unwrap_or(false),
            "notify_on_close": view.get("notify_on_close").and_then(Value::as_bool).unwrap_or(false),
            "close": with_emoji("close"),
            "submit": with_emoji("submit"),
            "previous_view_id": previous,
            "root_view_id": root,
            "app_id": APP_ID,
            "external_id": text("external_id"),
            "app_installed_team_id": TEAM_ID,
            "bot_id": BOT_ID,
        })
    }

    /// A delivery was acknowledged or given up: for a submitted modal, what
    /// became of it.
    pub(crate) fn settled(&mut self, index: usize) {
        let delivery = &self.deliveries[index];
        let Some(view_id) = delivery.view.clone() else {
            return;
        };
        let Some(outcome) = outcome_of(&delivery.record.status) else {
            return;
        };
        let trigger = delivery.trigger.clone().unwrap_or_default();
        self.deliveries[index].outcome = Some(outcome.clone());
        let Some(at) = self.views.iter().position(|view| view.id == view_id) else {
            return;
        };
        match outcome {
            ViewOutcome::Closed => self.views[at].open = false,
            ViewOutcome::Errors(errors) => self.views[at].errors = errors,
            ViewOutcome::Updated(view) => {
                let root = self.views[at].json["root_view_id"]
                    .as_str()
                    .unwrap_or(&view_id)
                    .to_owned();
                let previous = self.views[at].json["previous_view_id"].as_str().map(str::to_owned);
                let mut json = self.view_json(&view_id, &view, Some((&view_id, &root)));
                json["previous_view_id"] = previous.map_or(Value::Null, Value::String);
                let opened = &mut self.views[at];
                opened.json = json;
                opened.errors.clear();
            }
            ViewOutcome::Pushed(view) => {
                let root = self.views[at].json["root_view_id"]
                    .as_str()
                    .unwrap_or(&view_id)
                    .to_owned();
                let user = self.views[at].user.clone();
                let id = self.id("V");
                let json = self.view_json(&id, &view, Some((&view_id, &root)));
                self.views.push(OpenedView {
                    id,
                    trigger_id: trigger,
                    user,
                    json,
                    open: true,
                    errors: BTreeMap::new(),
                });
            }
            ViewOutcome::Cleared => {
                let root = self.views[at].json["root_view_id"].clone();
                for view in &mut self.views {
                    if view.json["root_view_id"] == root {
                        view.open = false;
                    }
                }
            }
            // Slack refusing what the app answered (a view its limits
            // refuse, an answer it cannot read) breaks its spec; a late or
            // failed acknowledgement is the app's timing, not a request.
            ViewOutcome::Rejected(why) => {
                let refused = ["invalid view", "an answer Slack cannot use", "`errors` without"];
                if refused.iter().any(|start| why.starts_with(start)) {
                    self.violations.push(format!("a view submission's answer: {why}"));
                }
            }
        }
    }
}

/// What Slack makes of a submission's acknowledgement; `None` while there
/// is none yet.
pub(crate) fn outcome_of(status: &DeliveryStatus) -> Option<ViewOutcome> {
    let payload = match status {
        DeliveryStatus::Queued | DeliveryStatus::AwaitingAck => return None,
        DeliveryStatus::Failed(why) => return Some(ViewOutcome::Rejected(why.clone())),
        DeliveryStatus::Acked { late: true, .. } => {
            return Some(ViewOutcome::Rejected("acknowledged too late".to_owned()));
        }
        DeliveryStatus::Acked { payload, .. } => payload,
    };
    let Some(payload) = payload else {
        return Some(ViewOutcome::Closed);
    };
    let empty = match payload {
        Value::Object(object) => object.is_empty(),
        Value::String(text) => text.trim().is_empty(),
        _ => false,
    };
    if empty {
        return Some(ViewOutcome::Closed);
    }
    let view = |payload: &Value| -> Result<Value, ViewOutcome> {
        let view = payload.get("view").cloned().unwrap_or(Value::Null);
        blocks::check_modal(&view)
            .map(|()| view)
            .map_err(|errors| ViewOutcome::Rejected(format!("invalid view: {errors:?}")))
    };
    Some(match payload.get("response_action").and_then(Value::as_str) {
        Some("errors") => match payload.get("errors").and_then(Value::as_object) {
            Some(errors) => ViewOutcome::Errors(
                errors
                    .iter()
                    .map(|(block, error)| (block.clone(), error.as_str().unwrap_or_default().to_owned()))
                    .collect(),
            ),
            None => ViewOutcome::Rejected("`errors` without an object of errors".to_owned()),
        },
        Some("update") => view(payload).map_or_else(|rejected| rejected, ViewOutcome::Updated),
        Some("push") => view(payload).map_or_else(|rejected| rejected, ViewOutcome::Pushed),
        Some("clear") => ViewOutcome::Cleared,
        _ => ViewOutcome::Rejected(format!("an answer Slack cannot use: {payload}")),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::outcome_of;
    use crate::slack::types::{DeliveryStatus, ViewOutcome};

    fn acked(payload: Option<serde_json::Value>) -> DeliveryStatus {
        DeliveryStatus::Acked { payload, late: false }
    }

    #[test]
    fn acknowledgements_are_read_as_slack_reads_them() {
        assert_eq!(outcome_of(&DeliveryStatus::AwaitingAck), None);
        assert_eq!(outcome_of(&acked(None)), Some(ViewOutcome::Closed));
        assert_eq!(outcome_of(&acked(Some(json!({})))), Some(ViewOutcome::Closed));
        let errors = json!({ "response_action": "errors", "errors": { "why": "Say more" } });
        assert_eq!(
            outcome_of(&acked(Some(errors))),
            Some(ViewOutcome::Errors([("why".to_owned(), "Say more".to_owned())].into()))
        );
        assert_eq!(
            outcome_of(&acked(Some(json!({ "response_action": "clear" })))),
            Some(ViewOutcome::Cleared)
        );
        assert!(matches!(
            outcome_of(&acked(Some(json!({ "response_action": "update", "view": {} })))),
            Some(ViewOutcome::Rejected(_))
        ));
        assert!(matches!(
            outcome_of(&DeliveryStatus::Acked {
                payload: None,
                late: true
            }),
            Some(ViewOutcome::Rejected(_))
        ));
    }
}
