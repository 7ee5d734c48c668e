//! Block Kit as Slack checks and stores it: blocks, text objects and
//! elements walked against the vendored limits table
//! (`spec/slack/block-kit-limits.json`, via [`super::spec`]), each failure
//! named as Slack names it, with the JSON pointer of what failed (`must be
//! less than 76 characters [json-pointer:/blocks/1/elements/0/text/text]`);
//! what the table cannot say (unique `block_id`s and `action_id`s, a modal's
//! `type` and its `submit` when it has inputs) is checked here; and the ids
//! Slack gives blocks and elements that came without one.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::spec::{BlockKit, Field, Of, block_kit};

/// The errors of one check, in Slack's words with their JSON pointers.
struct Checker {
    kit: &'static BlockKit,
    errors: Vec<String>,
    block_ids: HashSet<String>,
}

impl Checker {
    fn new() -> Self {
        Self {
            kit: block_kit(),
            errors: Vec::new(),
            block_ids: HashSet::new(),
        }
    }

    fn error(&mut self, message: &str, pointer: &str) {
        self.errors.push(format!("{message} [json-pointer:{pointer}]"));
    }

    fn length(&mut self, value: &str, max: usize, pointer: &str) {
        if self.kit.length(value) > max {
            self.error(&format!("must be less than {} characters", max + 1), pointer);
        }
    }

    /// `value`'s fields as the table's object `name` has them; `actions`
    /// are the `action_id`s of the block being walked.
    fn object(&mut self, name: &str, value: &Value, at: &str, actions: &mut HashSet<String>) {
        let Some(object) = self.kit.object(name) else {
            return;
        };
        for (key, field) in &object.fields {
            self.field(value, key, field, at, actions);
        }
        if !object.one_of.is_empty() && !object.one_of.iter().any(|key| present(value, key).is_some()) {
            self.error(&format!("must provide either {}", object.one_of.join(" or ")), at);
        }
    }

    fn field(&mut self, parent: &Value, key: &str, field: &Field, at: &str, actions: &mut HashSet<String>) {
        let here = format!("{at}/{key}");
        let Some(value) = present(parent, key) else {
            let required = match field {
                Field::String { required, .. }
                | Field::Text { required, .. }
                | Field::Items { required, .. }
                | Field::Element { required } => *required,
                Field::Enum { .. } | Field::Integer { .. } => false,
            };
            if required {
                self.error(&format!("missing required field: {key}"), at);
            }
            return;
        };
        match field {
            Field::String { max, .. } => match value {
                Value::String(text) => self.length(text, *max, &here),
                _ => self.error("must be a string", &here),
            },
            Field::Text { plain_only, max, .. } => {
                let max = max.unwrap_or_else(|| self.kit.text_max());
                self.text_object(value, *plain_only, max, &here);
            }
            Field::Items {
                of, min, max, item_max, ..
            } => {
                let Value::Array(items) = value else {
                    return self.error("must be an array", &here);
                };
                if max.is_some_and(|max| items.len() > max) {
                    self.error(
                        &format!("no more than {} items allowed", max.unwrap_or_default()),
                        &here,
                    );
                } else if items.len() < *min {
                    self.error(&format!("must provide at least {min} items"), &here);
                }
                for (index, item) in items.iter().enumerate() {
                    let at = format!("{here}/{index}");
                    match of {
                        Of::Block => self.block(item, &at),
                        Of::Element => self.element(item, &at, actions),
                        Of::Option => self.object("option", item, &at, actions),
                        Of::Text => {
                            let max = item_max.unwrap_or_else(|| self.kit.text_max());
                            self.text_object(item, false, max, &at);
                        }
                        Of::ContextElement if item["type"] != "image" => {
                            self.text_object(item, false, self.kit.text_max(), &at);
                        }
                        Of::ContextElement | Of::Any => {}
                    }
                }
            }
            Field::Element { .. } => self.element(value, &here, actions),
            Field::Enum { values } => {
                if !value
                    .as_str()
                    .is_some_and(|value| values.iter().any(|known| known == value))
                {
                    self.error(&format!("must be one of {}", values.join(", ")), &here);
                }
            }
            Field::Integer { min, max } => {
                if !value.as_i64().is_some_and(|value| (*min..=*max).contains(&value)) {
                    self.error(&format!("must be a number from {min} to {max}"), &here);
                }
            }
        }
    }

    /// A text object: `plain_text` (or `mrkdwn` unless `plain_only`) with 1
    /// to `max` characters.
    fn text_object(&mut self, text: &Value, plain_only: bool, max: usize, at: &str) {
        let before = self.errors.len();
        match text.get("type").and_then(Value::as_str) {
            Some("plain_text") => {}
            Some("mrkdwn") if !plain_only => {}
            _ if plain_only => self.error("must be a plain_text text object", &format!("{at}/type")),
            _ => self.error("must be one of plain_text, mrkdwn", &format!("{at}/type")),
        }
        match text.get("text") {
            Some(Value::String(body)) if body.is_empty() => {
                self.error("must be more than 0 characters", &format!("{at}/text"));
            }
            Some(Value::String(body)) => self.length(body, max, &format!("{at}/text")),
            _ => self.error("missing required field: text", at),
        }
        if self.errors.len() > before {
            // Slack names the text object as a whole too: it is one of two schemas.
            self.errors.insert(
                before,
                format!("failed to match all allowed schemas [json-pointer:{at}]"),
            );
        }
    }

    fn block(&mut self, block: &Value, at: &str) {
        if !block.is_object() {
            return self.error("must be an object", at);
        }
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind.is_empty() {
            return self.error("missing required field: type", at);
        }
        if !self.kit.blocks.iter().any(|known| known == kind) {
            return self.error("must be a valid block type", &format!("{at}/type"));
        }
        // `action_id`s are unique within their block.
        let mut actions = HashSet::new();
        self.object("block", block, at, &mut actions);
        if let Some(Value::String(id)) = block.get("block_id")
            && !self.block_ids.insert(id.clone())
        {
            self.error("duplicate block_id", &format!("{at}/block_id"));
        }
        self.object(kind, block, at, &mut actions);
    }

    /// An interactive element (or an image, which has none of their fields).
    fn element(&mut self, element: &Value, at: &str, actions: &mut HashSet<String>) {
        let kind = element.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind == "image" {
            return;
        }
        if !self.kit.elements.iter().any(|known| known == kind) {
            return self.error("must be a valid element type", &format!("{at}/type"));
        }
        self.object("element", element, at, actions);
        if let Some(Value::String(id)) = element.get("action_id")
            && !actions.insert(id.clone())
        {
            self.error("duplicate action_id", &format!("{at}/action_id"));
        }
        self.object(kind, element, at, actions);
    }

    fn finish(self) -> Result<(), Vec<String>> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }
}

/// `parent[key]`, unless absent or `null`.
fn present<'a>(parent: &'a Value, key: &str) -> Option<&'a Value> {
    parent.get(key).filter(|value| !value.is_null())
}

/// Checks a message's `blocks` as `chat.postMessage` and `chat.update` do.
pub(crate) fn check_message(blocks: &Value) -> Result<(), Vec<String>> {
    let mut checker = Checker::new();
    checker.object("message", &json!({ "blocks": blocks }), "", &mut HashSet::new());
    checker.finish()
}

/// Checks a modal as `views.open` does.
pub(crate) fn check_modal(view: &Value) -> Result<(), Vec<String>> {
    let mut checker = Checker::new();
    let pointer = "/view";
    if !view.is_object() {
        checker.error("must be an object", pointer);
        return checker.finish();
    }
    if view.get("type").and_then(Value::as_str) != Some("modal") {
        checker.error("must be one of modal", "/view/type");
    }
    checker.object("modal", view, pointer, &mut HashSet::new());
    let has_input = view["blocks"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|block| block["type"] == "input"));
    if has_input && present(view, "submit").is_none() {
        checker.error("must provide submit when the view has input blocks", pointer);
    }
    checker.finish()
}

/// Stores blocks as Slack does: a `block_id` for each block and an
/// `action_id` for each element that came without one (made by `id`), and
/// `emoji: true` on `plain_text` objects that did not say.
pub(crate) fn normalise(blocks: &mut Value, id: &mut impl FnMut() -> String) {
    let Some(blocks) = blocks.as_array_mut() else {
        return;
    };
    for block in blocks {
        let Some(object) = block.as_object_mut() else {
            continue;
        };
        object.entry("block_id").or_insert_with(|| Value::String(id()));
        if object.get("type").and_then(Value::as_str) == Some("input") {
            object.entry("optional").or_insert(Value::Bool(false));
            object.entry("dispatch_action").or_insert(Value::Bool(false));
        }
        for key in ["elements", "accessory", "element"] {
            match object.get_mut(key) {
                Some(Value::Array(elements)) => {
                    for element in elements {
                        if let Some(element) = element.as_object_mut() {
                            element_ids(element, id);
                        }
                    }
                }
                Some(Value::Object(element)) => element_ids(element, id),
                _ => {}
            }
        }
        emoji(block);
    }
}

fn element_ids(element: &mut Map<String, Value>, id: &mut impl FnMut() -> String) {
    let kind = element.get("type").and_then(Value::as_str).unwrap_or_default();
    if block_kit().elements.iter().any(|known| known == kind) {
        element.entry("action_id").or_insert_with(|| Value::String(id()));
    }
}

fn emoji(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.get("type").and_then(Value::as_str) == Some("plain_text") {
                object.entry("emoji").or_insert(Value::Bool(true));
            }
            object.values_mut().for_each(emoji);
        }
        Value::Array(items) => items.iter_mut().for_each(emoji),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check_message, check_modal, normalise};

    fn button(text: &str, action_id: &str) -> serde_json::Value {
        json!({ "type": "button", "text": { "type": "plain_text", "text": text }, "action_id": action_id })
    }

    #[test]
    fn a_long_button_label_is_refused_with_its_pointer() {
        let blocks = json!([
            { "type": "section", "text": { "type": "mrkdwn", "text": "Pick one" } },
            { "type": "actions", "elements": [button(&"x".repeat(76), "a")] }
        ]);
        let errors = check_message(&blocks).unwrap_err();
        assert!(
            errors.contains(&"must be less than 76 characters [json-pointer:/blocks/1/elements/0/text/text]".into()),
            "{errors:?}"
        );
        let fine = json!([{ "type": "actions", "elements": [button(&"x".repeat(75), "a")] }]);
        assert_eq!(check_message(&fine), Ok(()));
    }

    #[test]
    fn counts_styles_and_ids_are_checked() {
        let many: Vec<_> = (0..51).map(|_| json!({ "type": "divider" })).collect();
        assert_eq!(
            check_message(&json!(many)).unwrap_err(),
            ["no more than 50 items allowed [json-pointer:/blocks]"]
        );
        let mut styled = button("ok", "a");
        styled["style"] = json!("blue");
        let blocks = json!([
            { "type": "actions", "block_id": "b", "elements": [styled, button("no", "a")] },
            { "type": "divider", "block_id": "b" },
            { "type": "carousel" }
        ]);
        let errors = check_message(&blocks).unwrap_err();
        assert_eq!(
            errors,
            [
                "must be one of primary, danger [json-pointer:/blocks/0/elements/0/style]",
                "duplicate action_id [json-pointer:/blocks/0/elements/1/action_id]",
                "duplicate block_id [json-pointer:/blocks/1/block_id]",
                "must be a valid block type [json-pointer:/blocks/2/type]",
            ]
        );
    }

    #[test]
    fn modals_are_checked_and_blocks_get_slack_s_ids() {
        let view = json!({
            "type": "modal",
            "title": { "type": "plain_text", "text": "x".repeat(25) },
            "blocks": [{ "type": "input", "label": { "type": "plain_text", "text": "Why" },
                          "element": { "type": "plain_text_input" } }]
        });
        let errors = check_modal(&view).unwrap_err();
        assert!(errors.contains(&"must be less than 25 characters [json-pointer:/view/title/text]".into()));
        assert!(errors.iter().any(|error| error.contains("submit")));
        let mut blocks = view["blocks"].clone();
        let mut n = 0;
        normalise(&mut blocks, &mut || {
            n += 1;
            format!("id{n}")
        });
        assert_eq!(blocks[0]["block_id"], "id1");
        assert_eq!(blocks[0]["element"]["action_id"], "id2");
        assert_eq!(blocks[0]["label"]["emoji"], true);
        assert_eq!(blocks[0]["optional"], false);
    }
}
