//! Discord's `50035 Invalid Form Body` ([`Form`]: a tree of `_errors` by
//! path, `components.0.components.5.label`, each with a code such as
//! `BASE_TYPE_MAX_LENGTH` and a message such as `Must be 80 or fewer in
//! length.`), and the rules of a message or modal that Discord's OpenAPI
//! document cannot state, checked by hand ([`rules`]): what a legacy
//! message's top level holds, a select menu or text input filling its row,
//! each button style's fields, custom ids unique in a message, and
//! `allowed_mentions`' exclusive `parse`. Everything the document states
//! (lengths, counts, types, required and unknown fields) is checked in
//! [`super::spec`].

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::MAX_ACTION_ROWS;
use super::server::ApiError;

/// The message flag of a message built from layout components only.
pub(crate) const IS_COMPONENTS_V2: u64 = 1 << 15;

/// The errors found in a request, by path.
#[derive(Debug, Default)]
pub(crate) struct Form {
    errors: Vec<(String, &'static str, String)>,
}

impl Form {
    pub(crate) fn error(&mut self, path: &str, code: &'static str, message: impl Into<String>) {
        self.errors.push((path.to_owned(), code, message.into()));
    }

    /// `Ok` without errors, else Discord's `50035 Invalid Form Body`.
    pub(crate) fn finish(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            return Ok(());
        }
        let mut tree = Map::new();
        for (path, code, message) in self.errors {
            let keys: Vec<&str> = path.split('.').filter(|key| !key.is_empty()).collect();
            insert_error(&mut tree, &keys, json!({ "code": code, "message": message }));
        }
        Err(ApiError::invalid_form(Value::Object(tree)))
    }
}

/// Adds an error under its path: `{"a": {"0": {"_errors": [error]}}}`.
fn insert_error(node: &mut Map<String, Value>, keys: &[&str], error: Value) {
    match keys.split_first() {
        None => {
            if let Value::Array(errors) = node.entry("_errors".to_owned()).or_insert_with(|| json!([])) {
                errors.push(error);
            }
        }
        Some((key, rest)) => {
            if let Value::Object(child) = node.entry((*key).to_owned()).or_insert_with(|| json!({})) {
                insert_error(child, rest, error);
            }
        }
    }
}

/// The hand-written rules of an operation's body (by the document's
/// `operationId`): a message's, or an interaction response's message or
/// modal under `data`.
pub(crate) fn rules(operation_id: &str, body: &Value, form: &mut Form) {
    match operation_id {
        "create_message"
        | "update_message"
        | "execute_webhook"
        | "update_webhook_message"
        | "update_original_webhook_message" => message(form, "", body),
        "create_interaction_response" => match body.get("type").and_then(Value::as_u64) {
            Some(4 | 7) => message(form, "data", &body["data"]),
            Some(9) => modal(form, &body["data"]),
            _ => {}
        },
        _ => {}
    }
}

/// Whether a body would leave a message with nothing to show.
pub(crate) fn is_empty(message: &Value) -> bool {
    let empty = |key: &str| match message.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(_) => false,
    };
    ["content", "embeds", "components", "sticker_ids", "attachments", "poll"]
        .into_iter()
        .all(empty)
}

fn message(form: &mut Form, prefix: &str, body: &Value) {
    let flags = body.get("flags").and_then(Value::as_u64).unwrap_or(0);
    if let Some(rows) = body.get("components").and_then(Value::as_array) {
        let path = join(prefix, "components");
        if flags & IS_COMPONENTS_V2 == 0 {
            legacy_top_level(form, &path, rows);
        }
        let mut custom_ids = HashSet::new();
        for (i, component) in rows.iter().enumerate() {
            components(form, &format!("{path}.{i}"), component, &mut custom_ids);
        }
    }
    if let Some(mentions) = body.get("allowed_mentions").filter(|value| value.is_object()) {
        allowed_mentions(form, &join(prefix, "allowed_mentions"), mentions);
    }
}

/// "Legacy messages allow up to 5 action rows as top-level components"
/// (Components reference, Legacy Message Component Behavior): without
/// `IS_COMPONENTS_V2` the document's 40 components of any layout type do
/// not apply.
fn legacy_top_level(form: &mut Form, path: &str, rows: &[Value]) {
    if rows.len() > MAX_ACTION_ROWS {
        form.error(
            path,
            "BASE_TYPE_MAX_LENGTH",
            format!("Must be {MAX_ACTION_ROWS} or fewer in length."),
        );
    }
    for (i, row) in rows.iter().enumerate() {
        if row.get("type").and_then(Value::as_u64).is_some_and(|kind| kind != 1) {
            form.error(
                &format!("{path}.{i}.type"),
                "UNION_TYPE_CHOICES",
                "Value of field \"type\" must be one of (1,).",
            );
        }
    }
}

/// A component and everything inside it (rows, sections, containers):
/// rows, buttons and custom ids.
fn components(form: &mut Form, path: &str, component: &Value, custom_ids: &mut HashSet<String>) {
    match component.get("type").and_then(Value::as_u64) {
        Some(1) => row_width(form, path, component),
        Some(2) => button(form, path, component),
        _ => {}
    }
    if let Some(id) = component.get("custom_id").and_then(Value::as_str)
        && !custom_ids.insert(id.to_owned())
    {
        form.error(
            &format!("{path}.custom_id"),
            "COMPONENT_CUSTOM_ID_DUPLICATED",
            "Component custom id cannot be duplicated",
        );
    }
    for key in ["components", "component", "accessory"] {
        match component.get(key) {
            Some(Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    components(form, &format!("{path}.{key}.{i}"), child, custom_ids);
                }
            }
            Some(child @ Value::Object(_)) => components(form, &format!("{path}.{key}"), child, custom_ids),
            _ => {}
        }
    }
}

/// "Up to 5 contextually grouped buttons" or "a single select component"
/// (Components reference, Action Row); a text input fills its row too.
fn row_width(form: &mut Form, path: &str, row: &Value) {
    let children = row
        .get("components")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let wide = children
        .iter()
        .any(|child| matches!(child.get("type").and_then(Value::as_u64), Some(3..=8)));
    if wide && children.len() > 1 {
        form.error(
            &format!("{path}.components"),
            "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
            "The specified component exceeds the maximum width",
        );
    }
}

/// Each button style's fields (Components reference, Button): link buttons
/// have a `url` and no `custom_id`; premium ones a `sku_id` and nothing
/// else; the others a `custom_id` and neither; and a label or an emoji
/// shows on each but premium ones.
fn button(form: &mut Form, path: &str, button: &Value) {
    let has = |key: &str| button.get(key).is_some_and(|value| !value.is_null());
    let (needs, forbids): (&str, &[&str]) = match button.get("style").and_then(Value::as_u64) {
        Some(5) => ("url", &["custom_id", "sku_id"]),
        Some(6) => ("sku_id", &["custom_id", "label", "url", "emoji"]),
        Some(_) => ("custom_id", &["url", "sku_id"]),
        // A missing or unknown style is the document's to report.
        None => return,
    };
    if !has(needs) {
        form.error(
            &format!("{path}.{needs}"),
            "BASE_TYPE_REQUIRED",
            "This field is required",
        );
    }
    for key in forbids.iter().filter(|key| has(key)) {
        form.error(
            &format!("{path}.{key}"),
            "BUTTON_COMPONENT_INVALID_FIELD",
            format!("A button of this style cannot have a {key}"),
        );
    }
    let labelled = button
        .get("label")
        .and_then(Value::as_str)
        .is_some_and(|label| !label.is_empty());
    if needs != "sku_id" && !labelled && !has("emoji") {
        form.error(
            &format!("{path}.label"),
            "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED",
            "A button must have a label or an emoji",
        );
    }
}

/// `parse` is exclusive of `users` and `roles` of its own kind (Message
/// resource, Allowed Mentions Object).
fn allowed_mentions(form: &mut Form, path: &str, mentions: &Value) {
    let parse: Vec<&str> = mentions
        .get("parse")
        .and_then(Value::as_array)
        .map(|values| values.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for kind in ["users", "roles"] {
        let listed = mentions
            .get(kind)
            .and_then(Value::as_array)
            .is_some_and(|ids| !ids.is_empty());
        if listed && parse.contains(&kind) {
            form.error(
                path,
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                format!("parse:[\"{kind}\"] and {kind}: [ids...] are mutually exclusive."),
            );
        }
    }
}

/// A modal's rows and custom ids (its title, labels, counts and lengths are
/// the document's).
fn modal(form: &mut Form, data: &Value) {
    let mut custom_ids = HashSet::new();
    for (i, row) in data
        .get("components")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        components(form, &format!("data.components.{i}"), row, &mut custom_ids);
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Form, rules};

    fn refused(operation: &str, body: &serde_json::Value) -> serde_json::Value {
        let mut form = Form::default();
        rules(operation, body, &mut form);
        form.finish().map_or_else(|error| error.body(), |()| json!(null))
    }

    #[test]
    fn errors_nest_by_path_as_discord_writes_them() {
        let mut form = Form::default();
        form.error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        form.error("components.0.components.1.label", "BASE_TYPE_MAX_LENGTH", "x");
        let error = form.finish().expect_err("the body is refused").body();
        assert_eq!(
            (error["code"].clone(), error["message"].clone()),
            (json!(50035), json!("Invalid Form Body"))
        );
        assert_eq!(
            error["errors"]["content"]["_errors"][0],
            json!({ "code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length." })
        );
        assert_eq!(
            error["errors"]["components"]["0"]["components"]["1"]["label"]["_errors"][0]["code"],
            "BASE_TYPE_MAX_LENGTH"
        );
    }

    #[test]
    fn what_the_document_cannot_say_is_checked_by_hand() {
        let button = |id: &str| json!({ "type": 2, "style": 1, "label": "A", "custom_id": id });
        let select = json!({ "type": 3, "custom_id": "s", "options": [] });
        let body = json!({
            "components": [
                { "type": 1, "components": [button("a"), button("a")] },
                { "type": 1, "components": [select, button("b")] },
                { "type": 1, "components": [{ "type": 2, "style": 5, "label": "L", "custom_id": "c" }] },
                { "type": 10, "content": "text" },
                { "type": 1, "components": [button("d")] },
                { "type": 1, "components": [button("e")] },
            ],
            "allowed_mentions": { "parse": ["users"], "users": ["1"] },
        });
        let errors = refused("create_message", &body)["errors"].clone();
        let rows = &errors["components"];
        assert_eq!(rows["_errors"][0]["message"], "Must be 5 or fewer in length.");
        assert_eq!(
            rows["0"]["components"]["1"]["custom_id"]["_errors"][0]["code"],
            "COMPONENT_CUSTOM_ID_DUPLICATED"
        );
        assert_eq!(
            rows["1"]["components"]["_errors"][0]["code"],
            "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
        );
        let link = &rows["2"]["components"]["0"];
        assert_eq!(link["url"]["_errors"][0]["code"], "BASE_TYPE_REQUIRED");
        assert_eq!(
            link["custom_id"]["_errors"][0]["code"],
            "BUTTON_COMPONENT_INVALID_FIELD"
        );
        assert_eq!(rows["3"]["type"]["_errors"][0]["code"], "UNION_TYPE_CHOICES");
        assert_eq!(
            errors["allowed_mentions"]["_errors"][0]["code"],
            "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE"
        );
    }

    #[test]
    fn a_modal_row_holds_one_text_input() {
        let input = |id: &str| json!({ "type": 4, "custom_id": id, "label": "l", "style": 1 });
        let body = json!({ "type": 9, "data": {
            "custom_id": "m", "title": "t",
            "components": [{ "type": 1, "components": [input("a"), input("b")] }],
        } });
        let errors = refused("create_interaction_response", &body)["errors"].clone();
        assert_eq!(
            errors["data"]["components"]["0"]["components"]["_errors"][0]["code"],
            "COMPONENT_LAYOUT_WIDTH_EXCEEDED"
        );
        let body = json!({ "type": 4, "data": { "content": "ok" } });
        assert_eq!(refused("create_interaction_response", &body), json!(null));
    }
}
