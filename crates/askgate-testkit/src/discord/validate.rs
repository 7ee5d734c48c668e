//! What Discord checks in a message or modal body before it takes it, and
//! the `50035 Invalid Form Body` error it answers otherwise: a tree of
//! `_errors` by path (`components.0.components.5.label`), each with a code
//! such as `BASE_TYPE_MAX_LENGTH` and a message such as `Must be 80 or
//! fewer in length.`.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::server::ApiError;
use super::{
    MAX_ACTION_ROWS, MAX_BUTTON_LABEL_CHARS, MAX_COMPONENTS_PER_ROW, MAX_CONTENT_CHARS, MAX_CUSTOM_ID_CHARS,
    MAX_MODAL_LABEL_CHARS, MAX_MODAL_TITLE_CHARS,
};

/// Longest nonce Discord takes, in characters.
const MAX_NONCE_CHARS: usize = 25;
/// Most ids in `allowed_mentions.users` or `.roles`.
const MAX_MENTION_IDS: usize = 100;
/// Longest text input value and its length bounds.
const MAX_TEXT_INPUT_CHARS: u64 = 4000;
/// Longest text input placeholder.
const MAX_PLACEHOLDER_CHARS: usize = 100;
/// Longest description of a label in a modal.
const MAX_LABEL_DESCRIPTION_CHARS: usize = 100;
/// The message flag of a message built from layout components only.
pub(crate) const IS_COMPONENTS_V2: u64 = 1 << 15;

/// The errors found in a body, by path.
#[derive(Debug, Default)]
pub(crate) struct Form {
    errors: Vec<(String, &'static str, String)>,
}

impl Form {
    pub(crate) fn error(&mut self, path: &str, code: &'static str, message: impl Into<String>) {
        self.errors.push((path.to_owned(), code, message.into()));
    }

    fn max_chars(&mut self, path: &str, text: &str, max: usize) {
        if text.chars().count() > max {
            self.error(
                path,
                "BASE_TYPE_MAX_LENGTH",
                format!("Must be {max} or fewer in length."),
            );
        }
    }

    fn required_text<'v>(&mut self, path: &str, value: Option<&'v Value>, max: usize) -> Option<&'v str> {
        match value.and_then(Value::as_str) {
            Some(text) => {
                self.max_chars(path, text, max);
                Some(text)
            }
            None => {
                self.error(path, "BASE_TYPE_REQUIRED", "This field is required");
                None
            }
        }
    }

    fn optional_text(&mut self, path: &str, value: Option<&Value>, max: usize) {
        match value {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => self.max_chars(path, text, max),
            Some(_) => self.error(path, "BASE_TYPE_STRING", "Must be a string."),
        }
    }

    fn array_bounds(&mut self, path: &str, items: &[Value], min: usize, max: usize) {
        if items.len() < min {
            self.error(
                path,
                "BASE_TYPE_MIN_LENGTH",
                format!("Must be {min} or more in length."),
            );
        } else if items.len() > max {
            self.error(
                path,
                "BASE_TYPE_MAX_LENGTH",
                format!("Must be {max} or fewer in length."),
            );
        }
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

/// Where a message body is sent: the defaults of `allowed_mentions` and
/// whether a nonce belongs there differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// `POST /channels/{id}/messages`.
    Create,
    /// `PATCH /channels/{id}/messages/{id}`, or an edit through a webhook.
    Edit,
    /// An interaction response or a follow-up.
    Interaction,
}

/// Checks a message body (content, components, allowed mentions, nonce) as
/// Discord does.
pub(crate) fn message_body(body: &Value, context: Context) -> Result<(), ApiError> {
    let mut form = Form::default();
    if !body.is_object() {
        form.error("", "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType");
        return form.finish();
    }
    form.optional_text("content", body.get("content"), MAX_CONTENT_CHARS);
    let flags = body.get("flags").and_then(Value::as_u64).unwrap_or(0);
    if let Some(rows) = body.get("components").and_then(Value::as_array) {
        // Layout components (flag 1 << 15) follow rules of their own that
        // askgate does not use; only their custom ids are checked.
        if flags & IS_COMPONENTS_V2 == 0 {
            message_components(&mut form, rows);
        }
    } else if !matches!(body.get("components"), None | Some(Value::Null)) {
        form.error("components", "BASE_TYPE_LIST", "Must be a list.");
    }
    if let Some(mentions) = body.get("allowed_mentions").filter(|value| !value.is_null()) {
        allowed_mentions(&mut form, mentions);
    }
    if context == Context::Create {
        match body.get("nonce") {
            None | Some(Value::Null | Value::Number(_)) => {}
            Some(Value::String(nonce)) => form.max_chars("nonce", nonce, MAX_NONCE_CHARS),
            Some(_) => form.error("nonce", "BASE_TYPE_STRING", "Must be a string or an integer."),
        }
    }
    form.finish()
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

fn message_components(form: &mut Form, rows: &[Value]) {
    form.array_bounds("components", rows, 0, MAX_ACTION_ROWS);
    let mut custom_ids = HashSet::new();
    for (r, row) in rows.iter().enumerate() {
        let row_path = format!("components.{r}");
        if row.get("type").and_then(Value::as_u64) != Some(1) {
            form.error(
                &format!("{row_path}.type"),
                "UNION_TYPE_CHOICES",
                "Value of field \"type\" must be one of (1,).",
            );
            continue;
        }
        let components = row
            .get("components")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        form.array_bounds(&format!("{row_path}.components"), components, 1, MAX_COMPONENTS_PER_ROW);
        let selects = components
            .iter()
            .filter(|component| matches!(component.get("type").and_then(Value::as_u64), Some(3 | 5..=8)))
            .count();
        if selects > 0 && components.len() > 1 {
            form.error(
                &format!("{row_path}.components"),
                "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
                "The specified component exceeds the maximum width",
            );
        }
        for (c, component) in components.iter().enumerate() {
            let path = format!("{row_path}.components.{c}");
            match component.get("type").and_then(Value::as_u64) {
                Some(2) => button(form, &path, component, &mut custom_ids),
                Some(3 | 5..=8) => {
                    custom_id(form, &path, component, &mut custom_ids);
                }
                _ => form.error(
                    &format!("{path}.type"),
                    "UNION_TYPE_CHOICES",
                    "Value of field \"type\" must be one of (2, 3, 5, 6, 7, 8).",
                ),
            }
        }
    }
}

fn button(form: &mut Form, path: &str, button: &Value, custom_ids: &mut HashSet<String>) {
    form.optional_text(&format!("{path}.label"), button.get("label"), MAX_BUTTON_LABEL_CHARS);
    match button.get("style").and_then(Value::as_u64) {
        Some(5) => {
            if button.get("url").and_then(Value::as_str).is_none() {
                form.error(&format!("{path}.url"), "BASE_TYPE_REQUIRED", "This field is required");
            }
            if button.get("custom_id").is_some_and(|id| !id.is_null()) {
                form.error(
                    &format!("{path}.custom_id"),
                    "COMPONENT_INVALID_CUSTOM_ID",
                    "A link button cannot have a custom id",
                );
            }
        }
        Some(6) => {}
        Some(1..=4) => custom_id(form, path, button, custom_ids),
        _ => form.error(
            &format!("{path}.style"),
            "BASE_TYPE_CHOICES",
            "Value must be one of {1, 2, 3, 4, 5, 6}.",
        ),
    }
    let has_label = button
        .get("label")
        .and_then(Value::as_str)
        .is_some_and(|label| !label.is_empty());
    let has_emoji = button.get("emoji").is_some_and(|emoji| !emoji.is_null());
    let premium = button.get("style").and_then(Value::as_u64) == Some(6);
    if !has_label && !has_emoji && !premium {
        form.error(
            &format!("{path}.label"),
            "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED",
            "A button must have a label or an emoji",
        );
    }
}

/// A required `custom_id` of at most 100 characters, unique in the message.
fn custom_id(form: &mut Form, path: &str, component: &Value, custom_ids: &mut HashSet<String>) {
    let path = format!("{path}.custom_id");
    if let Some(id) = form.required_text(&path, component.get("custom_id"), MAX_CUSTOM_ID_CHARS)
        && !custom_ids.insert(id.to_owned())
    {
        form.error(
            &path,
            "COMPONENT_CUSTOM_ID_DUPLICATED",
            "Component custom id cannot be duplicated",
        );
    }
}

fn allowed_mentions(form: &mut Form, mentions: &Value) {
    let parse: Vec<&str> = match mentions.get("parse") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values.iter().filter_map(Value::as_str).collect(),
        Some(_) => {
            form.error("allowed_mentions.parse", "BASE_TYPE_LIST", "Must be a list.");
            Vec::new()
        }
    };
    for (i, value) in parse.iter().enumerate() {
        if !matches!(*value, "users" | "roles" | "everyone") {
            form.error(
                &format!("allowed_mentions.parse.{i}"),
                "BASE_TYPE_CHOICES",
                "Value must be one of ('roles', 'users', 'everyone').",
            );
        }
    }
    for kind in ["users", "roles"] {
        let ids = mentions
            .get(kind)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        form.array_bounds(&format!("allowed_mentions.{kind}"), ids, 0, MAX_MENTION_IDS);
        if !ids.is_empty() && parse.contains(&kind) {
            form.error(
                "allowed_mentions",
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                format!("parse:[\"{kind}\"] and {kind}: [ids...] are mutually exclusive."),
            );
        }
    }
}

/// Checks the `data` of a modal response (callback type 9) as Discord does:
/// a title and a `custom_id`, one to five rows, each one text input with a
/// label (or a label component around one).
pub(crate) fn modal(data: &Value) -> Result<(), ApiError> {
    let mut form = Form::default();
    form.required_text("data.title", data.get("title"), MAX_MODAL_TITLE_CHARS);
    form.required_text("data.custom_id", data.get("custom_id"), MAX_CUSTOM_ID_CHARS);
    let rows = data
        .get("components")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    form.array_bounds("data.components", rows, 1, MAX_ACTION_ROWS);
    let mut custom_ids = HashSet::new();
    for (r, row) in rows.iter().enumerate() {
        let path = format!("data.components.{r}");
        match row.get("type").and_then(Value::as_u64) {
            Some(1) => {
                let inputs = row
                    .get("components")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                form.array_bounds(&format!("{path}.components"), inputs, 1, 1);
                if let Some(input) = inputs.first() {
                    let input_path = format!("{path}.components.0");
                    form.required_text(
                        &format!("{input_path}.label"),
                        input.get("label"),
                        MAX_MODAL_LABEL_CHARS,
                    );
                    text_input(&mut form, &input_path, input, &mut custom_ids);
                }
            }
            Some(18) => {
                form.required_text(&format!("{path}.label"), row.get("label"), MAX_MODAL_LABEL_CHARS);
                form.optional_text(
                    &format!("{path}.description"),
                    row.get("description"),
                    MAX_LABEL_DESCRIPTION_CHARS,
                );
                match row.get("component") {
                    Some(input) => text_input(&mut form, &format!("{path}.component"), input, &mut custom_ids),
                    None => form.error(
                        &format!("{path}.component"),
                        "BASE_TYPE_REQUIRED",
                        "This field is required",
                    ),
                }
            }
            _ => form.error(
                &format!("{path}.type"),
                "UNION_TYPE_CHOICES",
                "Value of field \"type\" must be one of (1, 18).",
            ),
        }
    }
    form.finish()
}

fn text_input(form: &mut Form, path: &str, input: &Value, custom_ids: &mut HashSet<String>) {
    if input.get("type").and_then(Value::as_u64) != Some(4) {
        form.error(
            &format!("{path}.type"),
            "UNION_TYPE_CHOICES",
            "Value of field \"type\" must be one of (4,).",
        );
        return;
    }
    custom_id(form, path, input, custom_ids);
    if !matches!(input.get("style").and_then(Value::as_u64), Some(1 | 2)) {
        form.error(
            &format!("{path}.style"),
            "BASE_TYPE_CHOICES",
            "Value must be one of {1, 2}.",
        );
    }
    let max_chars = usize::try_from(MAX_TEXT_INPUT_CHARS).unwrap_or(usize::MAX);
    form.optional_text(&format!("{path}.value"), input.get("value"), max_chars);
    form.optional_text(
        &format!("{path}.placeholder"),
        input.get("placeholder"),
        MAX_PLACEHOLDER_CHARS,
    );
    for (key, min) in [("min_length", 0), ("max_length", 1)] {
        if let Some(length) = input.get(key).filter(|value| !value.is_null())
            && !length
                .as_u64()
                .is_some_and(|length| (min..=MAX_TEXT_INPUT_CHARS).contains(&length))
        {
            form.error(
                &format!("{path}.{key}"),
                "NUMBER_TYPE_MAX",
                format!("int value should be between {min} and {MAX_TEXT_INPUT_CHARS}."),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Context, message_body, modal};

    fn error_body(result: Result<(), super::ApiError>) -> serde_json::Value {
        result.expect_err("the body is refused").body()
    }

    #[test]
    fn errors_nest_by_path_as_discord_writes_them() {
        let body = json!({
            "content": "x".repeat(2001),
            "components": [{ "type": 1, "components": [{ "type": 2, "style": 1, "label": "A", "custom_id": "a" }, { "type": 2, "style": 1, "label": "y".repeat(81), "custom_id": "a" }] }],
        });
        let error = error_body(message_body(&body, Context::Create));
        assert_eq!(error["code"], 50035);
        assert_eq!(error["message"], "Invalid Form Body");
        assert_eq!(
            error["errors"]["content"]["_errors"][0],
            json!({ "code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length." })
        );
        let second = &error["errors"]["components"]["0"]["components"]["1"];
        assert_eq!(second["label"]["_errors"][0]["code"], "BASE_TYPE_MAX_LENGTH");
        assert_eq!(
            second["custom_id"]["_errors"][0]["code"],
            "COMPONENT_CUSTOM_ID_DUPLICATED"
        );
    }

    #[test]
    fn a_valid_message_and_modal_pass() {
        let body = json!({
            "content": "Deploy?",
            "components": [{ "type": 1, "components": [{ "type": 2, "style": 3, "label": "Yes", "custom_id": "y" }] }],
            "allowed_mentions": { "parse": [], "users": [], "roles": [] },
            "nonce": "abc",
        });
        assert!(message_body(&body, Context::Create).is_ok());
        let data = json!({
            "custom_id": "m", "title": "Why?",
            "components": [{ "type": 1, "components": [{ "type": 4, "custom_id": "why", "label": "Reason", "style": 2 }] }],
        });
        assert!(modal(&data).is_ok());
    }

    #[test]
    fn a_modal_row_holds_one_text_input_with_a_short_label() {
        let input = |id: &str| json!({ "type": 4, "custom_id": id, "label": "l".repeat(46), "style": 1 });
        let data = json!({
            "custom_id": "m", "title": "t".repeat(46),
            "components": [{ "type": 1, "components": [input("a"), input("b")] }],
        });
        let error = error_body(modal(&data));
        assert_eq!(
            error["errors"]["data"]["title"]["_errors"][0]["code"],
            "BASE_TYPE_MAX_LENGTH"
        );
        let row = &error["errors"]["data"]["components"]["0"]["components"];
        assert_eq!(row["_errors"][0]["code"], "BASE_TYPE_MAX_LENGTH");
        assert_eq!(
            row["0"]["label"]["_errors"][0]["message"],
            "Must be 45 or fewer in length."
        );
    }
}
