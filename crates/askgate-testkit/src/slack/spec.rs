//! Slack's vendored specs (`spec/slack/`, see its README), read once: the
//! Web API's OpenAPI document, with the methods and arguments Slack has
//! documented since (`web-api-additions.json`), made into one JSON Schema
//! per method and checked with `jsonschema`; and the Block Kit limits table
//! (`block-kit-limits.json`) that `blocks.rs` walks. Lengths are counted in
//! the table's unit.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde::Deserialize;
use serde_json::{Map, Value, json};

const OPENAPI: &str = include_str!("../../spec/slack/slack_web_openapi_v2.json");
const ADDITIONS: &str = include_str!("../../spec/slack/web-api-additions.json");
const BLOCK_KIT: &str = include_str!("../../spec/slack/block-kit-limits.json");

/// A method's arguments as the vendored document types them.
struct Method {
    /// Checks a call's arguments (the token left out).
    validator: Validator,
    /// Each argument's documented type, for Slack-like messages.
    types: BTreeMap<String, String>,
}

/// The Web API methods Slack documents, by name (`chat.postMessage`).
static METHODS: LazyLock<BTreeMap<String, Method>> = LazyLock::new(|| {
    let openapi: Value = serde_json::from_str(OPENAPI).expect("the vendored OpenAPI document is JSON");
    let additions: Value = serde_json::from_str(ADDITIONS).expect("the vendored additions are JSON");
    let mut parameters: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (path, operations) in openapi["paths"].as_object().into_iter().flatten() {
        let name = path.trim_start_matches('/').to_owned();
        let all = parameters.entry(name).or_default();
        for operation in operations.as_object().into_iter().flatten().map(|(_, op)| op) {
            all.extend(operation["parameters"].as_array().into_iter().flatten().cloned());
        }
    }
    for (name, method) in additions["methods"].as_object().into_iter().flatten() {
        let all = parameters.entry(name.clone()).or_default();
        all.extend(method["parameters"].as_array().into_iter().flatten().cloned());
    }
    parameters
        .into_iter()
        .map(|(name, parameters)| {
            let method = method_schema(&parameters);
            (name, method)
        })
        .collect()
});

/// One method's arguments as a JSON Schema: each documented argument with
/// its type, the required ones required, no others. A string argument that
/// carries JSON (`blocks`, `view`: "A JSON-based array…", "a JSON-encoded
/// string") may come as the JSON itself in a JSON body; a boolean or a
/// number may come as its text, as in a form body.
fn method_schema(parameters: &[Value]) -> Method {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut types = BTreeMap::new();
    for parameter in parameters {
        let Some(name) = parameter["name"].as_str().filter(|name| *name != "token") else {
            continue;
        };
        let kind = parameter["type"].as_str().unwrap_or("string");
        let carries_json = parameter["description"]
            .as_str()
            .is_some_and(|text| text.contains("JSON"));
        let schema = match kind {
            "boolean" => {
                json!({ "anyOf": [{ "type": ["boolean", "integer"] }, { "enum": ["true", "false", "1", "0"] }] })
            }
            "integer" | "number" => {
                json!({ "anyOf": [{ "type": "number" }, { "type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$" }] })
            }
            _ if carries_json => json!({ "type": ["string", "array", "object"] }),
            // Slack reads a number given for a string (a `ts`) as its text.
            _ => json!({ "type": ["string", "number"] }),
        };
        properties.insert(name.to_owned(), schema);
        types.insert(
            name.to_owned(),
            if carries_json { "JSON string" } else { kind }.to_owned(),
        );
        if parameter["required"] == true {
            required.push(Value::String(name.to_owned()));
        }
    }
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let validator = jsonschema::validator_for(&schema).expect("a method's arguments make a valid JSON Schema");
    Method { validator, types }
}

/// Whether Slack documents this Web API method.
pub(crate) fn documents(method: &str) -> bool {
    METHODS.contains_key(method)
}

/// A call's arguments checked against the method's documented ones: each
/// failure in Slack's words (`missing required field: channel`, `must be a
/// string [json-pointer:/users]`), for `invalid_arguments`. An argument the
/// method does not document is refused too (Slack does not say what it does
/// with one; the fake is strict so that a misspelt argument fails a test).
pub(crate) fn check_arguments(method: &str, args: &Value) -> Result<(), Vec<String>> {
    let Some(known) = METHODS.get(method) else {
        return Ok(());
    };
    let mut errors = Vec::new();
    for error in known.validator.iter_errors(args) {
        let pointer = error.instance_path().as_str().to_owned();
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                errors.push(format!(
                    "missing required field: {}",
                    property.as_str().unwrap_or_default()
                ));
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                errors.extend(unexpected.iter().map(|name| format!("unknown argument: {name}")));
            }
            _ => {
                let name = pointer.trim_start_matches('/');
                let kind = known.types.get(name).map_or("valid", String::as_str);
                errors.push(format!("must be a {kind} [json-pointer:{pointer}]"));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// The Block Kit limits table.
#[derive(Debug, Deserialize)]
pub(crate) struct BlockKit {
    /// How lengths are counted: `utf16` (else code points).
    unit: String,
    /// The longest message `text`.
    pub(crate) message_text: MessageText,
    /// The block types Slack has.
    pub(crate) blocks: Vec<String>,
    /// The interactive element types Slack has.
    pub(crate) elements: Vec<String>,
    /// Per object (surface, block type, element type, composition object) its fields.
    #[serde(deserialize_with = "objects")]
    objects: BTreeMap<String, Object>,
}

/// The message `text` limit.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageText {
    pub(crate) max: usize,
}

/// One object's fields, in the table's order, and the fields of which at
/// least one must be there.
#[derive(Debug, Default)]
pub(crate) struct Object {
    pub(crate) fields: Vec<(String, Field)>,
    pub(crate) one_of: Vec<String>,
}

/// What a field must be (the table's `field_kinds`).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Field {
    String {
        max: usize,
        #[serde(default)]
        required: bool,
    },
    Text {
        #[serde(default)]
        plain_only: bool,
        max: Option<usize>,
        #[serde(default)]
        required: bool,
    },
    Items {
        of: Of,
        #[serde(default)]
        min: usize,
        max: Option<usize>,
        item_max: Option<usize>,
        #[serde(default)]
        required: bool,
    },
    Element {
        #[serde(default)]
        required: bool,
    },
    Enum {
        values: Vec<String>,
    },
    Integer {
        min: i64,
        max: i64,
    },
}

/// What an array's items are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Of {
    Block,
    Element,
    Option,
    Text,
    ContextElement,
    Any,
}

/// `objects`, keeping each object's fields in the table's order (Slack
/// reports a block's errors field by field).
fn objects<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, Object>, D::Error> {
    let raw: Map<String, Value> = Map::deserialize(deserializer)?;
    let mut objects = BTreeMap::new();
    for (name, object) in raw {
        let mut parsed = Object::default();
        for (field, rule) in object["fields"].as_object().into_iter().flatten() {
            let rule = Field::deserialize(rule).map_err(serde::de::Error::custom)?;
            parsed.fields.push((field.clone(), rule));
        }
        parsed.one_of =
            Vec::<String>::deserialize(object.get("one_of").unwrap_or(&json!([]))).map_err(serde::de::Error::custom)?;
        objects.insert(name, parsed);
    }
    Ok(objects)
}

static BLOCK_KIT_LIMITS: LazyLock<BlockKit> =
    LazyLock::new(|| serde_json::from_str(BLOCK_KIT).expect("the vendored Block Kit table parses"));

/// The Block Kit limits table.
pub(crate) fn block_kit() -> &'static BlockKit {
    &BLOCK_KIT_LIMITS
}

impl BlockKit {
    /// An object's fields (none for an object the table does not name).
    pub(crate) fn object(&self, name: &str) -> Option<&Object> {
        self.objects.get(name)
    }

    /// A text's length in the table's unit.
    pub(crate) fn length(&self, text: &str) -> usize {
        if self.unit == "utf16" {
            text.encode_utf16().count()
        } else {
            text.chars().count()
        }
    }

    /// The text object's own limit on its `text`.
    pub(crate) fn text_max(&self) -> usize {
        self.object("text_object")
            .and_then(|object| object.fields.iter().find(|(name, _)| name == "text"))
            .and_then(|(_, field)| match field {
                Field::String { max, .. } => Some(*max),
                _ => None,
            })
            .unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{block_kit, check_arguments, documents};

    #[test]
    fn the_vendored_documents_load() {
        assert!(documents("chat.postMessage") && documents("apps.connections.open"));
        assert!(!documents("chat.nope"));
        let kit = block_kit();
        assert_eq!(kit.text_max(), 3000);
        assert!(kit.object("modal").is_some() && kit.blocks.contains(&"section".to_owned()));
        // An emoji outside the BMP counts two.
        assert_eq!(kit.length("a😀"), 3);
    }

    #[test]
    fn arguments_are_checked_against_the_method() {
        assert_eq!(
            check_arguments("conversations.open", &json!({ "users": "U1,U2" })),
            Ok(())
        );
        assert_eq!(
            check_arguments("conversations.open", &json!({ "users": ["U1"] })),
            Err(vec!["must be a string [json-pointer:/users]".to_owned()])
        );
        assert_eq!(
            check_arguments("chat.update", &json!({ "channel": "C1", "text": "x", "sparkle": true })),
            Err(vec![
                "missing required field: ts".to_owned(),
                "unknown argument: sparkle".to_owned()
            ])
        );
        // Form bodies give booleans and numbers as text; JSON bodies give JSON.
        let form = json!({ "channel": "C1", "ts": "1.2", "unfurl_links": "true", "blocks": [] });
        assert_eq!(
            check_arguments("chat.postMessage", &form),
            Err(vec!["unknown argument: ts".to_owned()])
        );
        assert_eq!(
            check_arguments("chat.delete", &json!({ "channel": "C1", "ts": "1.2" })),
            Ok(())
        );
        assert_eq!(
            check_arguments("chat.postMessage", &json!({ "channel": "C1", "unfurl_links": "maybe" })),
            Err(vec!["must be a boolean [json-pointer:/unfurl_links]".to_owned()])
        );
    }
}
