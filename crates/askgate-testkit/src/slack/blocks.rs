//! Block Kit as Slack checks and stores it: the limits of blocks, text
//! objects and elements, each failure named as Slack names it, with the
//! JSON pointer of what failed (`must be less than 76 characters
//! [json-pointer:/blocks/1/elements/0/text/text]`); and the ids Slack gives
//! blocks and elements that came without one.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{
    MAX_ACTION_ID_CHARS, MAX_ACTIONS_ELEMENTS, MAX_BLOCK_ID_CHARS, MAX_BUTTON_TEXT_CHARS, MAX_BUTTON_VALUE_CHARS,
    MAX_CALLBACK_ID_CHARS, MAX_CHECKBOX_OPTIONS, MAX_CONTEXT_ELEMENTS, MAX_HEADER_CHARS, MAX_INPUT_LABEL_CHARS,
    MAX_MESSAGE_BLOCKS, MAX_MODAL_BLOCKS, MAX_MODAL_TITLE_CHARS, MAX_PLACEHOLDER_CHARS, MAX_PRIVATE_METADATA_CHARS,
    MAX_SECTION_TEXT_CHARS,
};

/// The interactive elements the fake checks the `action_id` of.
const ELEMENT_TYPES: &[&str] = &[
    "button",
    "checkboxes",
    "radio_buttons",
    "static_select",
    "multi_static_select",
    "external_select",
    "users_select",
    "multi_users_select",
    "conversations_select",
    "multi_conversations_select",
    "channels_select",
    "multi_channels_select",
    "overflow",
    "datepicker",
    "timepicker",
    "datetimepicker",
    "plain_text_input",
    "email_text_input",
    "number_input",
    "url_text_input",
    "rich_text_input",
];

/// The errors of one check, in Slack's words with their JSON pointers.
#[derive(Debug, Default)]
struct Checker {
    errors: Vec<String>,
    block_ids: HashSet<String>,
}

impl Checker {
    fn error(&mut self, message: &str, pointer: &str) {
        self.errors.push(format!("{message} [json-pointer:{pointer}]"));
    }

    fn chars(&mut self, value: &str, max: usize, pointer: &str) {
        if value.chars().count() > max {
            self.error(&format!("must be less than {} characters", max + 1), pointer);
        }
    }

    fn string(&mut self, parent: &Value, key: &str, max: usize, pointer: &str) -> Option<String> {
        match parent.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(value)) => {
                self.chars(value, max, &format!("{pointer}/{key}"));
                Some(value.clone())
            }
            Some(_) => {
                self.error("must be a string", &format!("{pointer}/{key}"));
                None
            }
        }
    }

    fn items<'a>(&mut self, parent: &'a Value, key: &str, min: usize, max: usize, pointer: &str) -> &'a [Value] {
        let at = format!("{pointer}/{key}");
        match parent.get(key) {
            None | Some(Value::Null) if min > 0 => {
                self.error(&format!("missing required field: {key}"), pointer);
                &[]
            }
            Some(Value::Array(items)) => {
                if items.len() > max {
                    self.error(&format!("no more than {max} items allowed"), &at);
                } else if items.len() < min {
                    self.error(&format!("must provide at least {min} items"), &at);
                }
                items
            }
            None | Some(Value::Null) => &[],
            Some(_) => {
                self.error("must be an array", &at);
                &[]
            }
        }
    }

    /// A text object at `parent[key]`: `plain_text` (or `mrkdwn` unless
    /// `plain_only`) with 1 to `max` characters.
    fn text(&mut self, parent: &Value, key: &str, plain_only: bool, max: usize, required: bool, pointer: &str) {
        match parent.get(key).filter(|text| !text.is_null()) {
            Some(text) => self.text_object(text, plain_only, max, &format!("{pointer}/{key}")),
            None if required => self.error(&format!("missing required field: {key}"), pointer),
            None => {}
        }
    }

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
            Some(Value::String(body)) => self.chars(body, max, &format!("{at}/text")),
            _ => self.error("missing required field: text", at),
        }
        if self.errors.len() > before {
            // Slack names the text object as a whole too.
            self.errors.insert(
                before,
                format!("failed to match all allowed schemas [json-pointer:{at}]"),
            );
        }
    }

    fn block(&mut self, block: &Value, pointer: &str, actions_seen: &mut HashSet<String>) {
        if !block.is_object() {
            return self.error("must be an object", pointer);
        }
        if let Some(id) = self.string(block, "block_id", MAX_BLOCK_ID_CHARS, pointer)
            && !self.block_ids.insert(id)
        {
            self.error("duplicate block_id", &format!("{pointer}/block_id"));
        }
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "section" => {
                self.text(block, "text", false, MAX_SECTION_TEXT_CHARS, false, pointer);
                let fields = self.items(block, "fields", 0, 10, pointer);
                for (index, field) in fields.iter().enumerate() {
                    self.text_object(field, false, 2000, &format!("{pointer}/fields/{index}"));
                }
                if block.get("text").is_none() && block.get("fields").is_none() {
                    self.error("must provide either text or fields", pointer);
                }
                if let Some(accessory) = block.get("accessory") {
                    self.element(accessory, &format!("{pointer}/accessory"), actions_seen);
                }
            }
            "header" => self.text(block, "text", true, MAX_HEADER_CHARS, true, pointer),
            "context" => {
                let elements = self.items(block, "elements", 1, MAX_CONTEXT_ELEMENTS, pointer);
                for (index, element) in elements.iter().enumerate() {
                    if element["type"] != "image" {
                        self.text_object(
                            element,
                            false,
                            MAX_SECTION_TEXT_CHARS,
                            &format!("{pointer}/elements/{index}"),
                        );
                    } else if element.get("alt_text").is_none() {
                        self.error(
                            "missing required field: alt_text",
                            &format!("{pointer}/elements/{index}"),
                        );
                    }
                }
            }
            "actions" => {
                let mut in_block = HashSet::new();
                let elements = self.items(block, "elements", 1, MAX_ACTIONS_ELEMENTS, pointer);
                for (index, element) in elements.iter().enumerate() {
                    self.element(element, &format!("{pointer}/elements/{index}"), &mut in_block);
                }
            }
            "input" => {
                self.text(block, "label", true, MAX_INPUT_LABEL_CHARS, true, pointer);
                self.text(block, "hint", true, MAX_INPUT_LABEL_CHARS, false, pointer);
                match block.get("element") {
                    Some(element) => self.element(element, &format!("{pointer}/element"), &mut HashSet::new()),
                    None => self.error("missing required field: element", pointer),
                }
            }
            "rich_text" => {
                self.items(block, "elements", 0, usize::MAX, pointer);
            }
            "image" => {
                if block.get("image_url").is_none() && block.get("slack_file").is_none() {
                    self.error("missing required field: image_url", pointer);
                }
                self.string(block, "alt_text", 2000, pointer);
            }
            "divider" => {}
            "" => self.error("missing required field: type", pointer),
            _ => self.error("must be a valid block type", &format!("{pointer}/type")),
        }
    }

    /// An interactive element; `action_id`s must be unique among `seen`
    /// (the element's block).
    fn element(&mut self, element: &Value, pointer: &str, seen: &mut HashSet<String>) {
        let kind = element.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind == "image" {
            return;
        }
        if !ELEMENT_TYPES.contains(&kind) {
            return self.error("must be a valid element type", &format!("{pointer}/type"));
        }
        if let Some(id) = self.string(element, "action_id", MAX_ACTION_ID_CHARS, pointer)
            && !seen.insert(id)
        {
            self.error("duplicate action_id", &format!("{pointer}/action_id"));
        }
        self.text(element, "placeholder", true, MAX_PLACEHOLDER_CHARS, false, pointer);
        match kind {
            "button" => {
                self.text(element, "text", true, MAX_BUTTON_TEXT_CHARS, true, pointer);
                self.string(element, "value", MAX_BUTTON_VALUE_CHARS, pointer);
                self.string(element, "url", 3000, pointer);
                if let Some(style) = element.get("style")
                    && style != "primary"
                    && style != "danger"
                {
                    self.error("must be one of primary, danger", &format!("{pointer}/style"));
                }
            }
            "checkboxes" | "radio_buttons" => self.options(element, 1, MAX_CHECKBOX_OPTIONS, 150, pointer),
            "overflow" => self.options(element, 1, 5, 75, pointer),
            "static_select" | "multi_static_select" if element.get("option_groups").is_none() => {
                self.options(element, 1, 100, 75, pointer);
            }
            "plain_text_input" => {
                for key in ["min_length", "max_length"] {
                    if let Some(length) = element.get(key)
                        && length.as_u64().is_none_or(|length| length > 3000)
                    {
                        self.error("must be a number from 0 to 3000", &format!("{pointer}/{key}"));
                    }
                }
                self.string(element, "initial_value", 3000, pointer);
            }
            _ => {}
        }
    }

    fn options(&mut self, element: &Value, min: usize, max: usize, text_max: usize, pointer: &str) {
        let options = self.items(element, "options", min, max, pointer);
        for (index, option) in options.iter().enumerate() {
            let at = format!("{pointer}/options/{index}");
            self.text(option, "text", false, text_max, true, &at);
            self.text(option, "description", false, text_max, false, &at);
            if self.string(option, "value", 150, &at).is_none() {
                self.error("missing required field: value", &at);
            }
        }
    }

    fn finish(self) -> Result<(), Vec<String>> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }
}

/// Checks a message's `blocks` as `chat.postMessage` and `chat.update` do.
pub(crate) fn check_message(blocks: &Value) -> Result<(), Vec<String>> {
    let mut checker = Checker::default();
    let root = json!({ "blocks": blocks });
    let blocks = checker.items(&root, "blocks", 0, MAX_MESSAGE_BLOCKS, "");
    for (index, block) in blocks.iter().enumerate() {
        checker.block(block, &format!("/blocks/{index}"), &mut HashSet::new());
    }
    checker.finish()
}

/// Checks a modal as `views.open` does.
pub(crate) fn check_modal(view: &Value) -> Result<(), Vec<String>> {
    let mut checker = Checker::default();
    let pointer = "/view";
    if !view.is_object() {
        checker.error("must be an object", pointer);
        return checker.finish();
    }
    if view.get("type").and_then(Value::as_str) != Some("modal") {
        checker.error("must be one of modal", "/view/type");
    }
    checker.text(view, "title", true, MAX_MODAL_TITLE_CHARS, true, pointer);
    checker.text(view, "submit", true, MAX_MODAL_TITLE_CHARS, false, pointer);
    checker.text(view, "close", true, MAX_MODAL_TITLE_CHARS, false, pointer);
    checker.string(view, "private_metadata", MAX_PRIVATE_METADATA_CHARS, pointer);
    checker.string(view, "callback_id", MAX_CALLBACK_ID_CHARS, pointer);
    checker.string(view, "external_id", 255, pointer);
    let blocks = checker.items(view, "blocks", 0, MAX_MODAL_BLOCKS, pointer);
    let has_input = blocks.iter().any(|block| block["type"] == "input");
    for (index, block) in blocks.iter().enumerate() {
        checker.block(block, &format!("/view/blocks/{index}"), &mut HashSet::new());
    }
    if has_input && view.get("submit").is_none() {
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
    if ELEMENT_TYPES.contains(&kind) {
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
