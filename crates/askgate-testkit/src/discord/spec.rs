//! Discord's own OpenAPI document, and every request checked against it.
//!
//! `spec/discord/openapi.json` is vendored whole from `discord/discord-api-spec`
//! (API v10; see that folder's README). A request's method and path must be
//! an operation of the document (else `404: Not Found`, or `405: Method Not
//! Allowed` for a known path); its path and query parameters and its JSON
//! body are validated with the `jsonschema` crate against the operation's
//! schemas, `#/components/...` resolved inside the document. Each violation
//! becomes an entry of Discord's `50035 Invalid Form Body` tree ([`Form`]),
//! at the field's path and with Discord's code (`BASE_TYPE_MAX_LENGTH`,
//! `BASE_TYPE_REQUIRED`, …).
//!
//! The document is used as Discord publishes it, with two changes made in
//! memory when it is loaded:
//! - the stricter limits of Discord's documentation (`added-limits.json`,
//!   e.g. message content 2000 characters where the document says 4000);
//! - `additionalProperties: false` on every object schema: Discord ignores a
//!   field it does not know, the fake refuses it (`UNKNOWN_FIELD`), so that
//!   a field askgate relies on but Discord would drop fails a test. Query
//!   parameters the operation does not name are refused the same way.
//!
//! Unions (`oneOf`/`anyOf`, which the document's README says mean "exactly
//! one of", told apart by `type`) are reported through the branch the value
//! belongs to, as Discord does: a button's long label is
//! `components.0.components.1.label`, not "matches no component".

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::Location;
use jsonschema::types::JsonType;
use jsonschema::{Draft, Registry, ValidationError, Validator};
use serde_json::{Map, Value, json};

use super::server::ApiError;
use super::validate::Form;

/// The vendored document, as Discord publishes it.
const DOCUMENT: &str = include_str!("../../spec/discord/openapi.json");
/// The documentation's stricter limits, applied to the document on load.
const ADDED_LIMITS: &str = include_str!("../../spec/discord/added-limits.json");
/// The URI the document is registered under; it is never fetched.
const DOCUMENT_URI: &str = "https://discord.com/api/v10/openapi.json";
/// The code of a field or query parameter the document does not name: the
/// fake's own (Discord ignores such a field).
const UNKNOWN_FIELD: &str = "UNKNOWN_FIELD";

static SPEC: LazyLock<Spec> = LazyLock::new(Spec::load);

/// A request matched to an operation of the document.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    /// The path template, e.g. `/channels/{channel_id}/messages`.
    template: String,
    /// The method, lowercase, as the document keys it.
    method: String,
    /// The `operationId`, e.g. `create_message`.
    pub(crate) id: String,
    /// The path parameters, by name, as they were in the path.
    params: Vec<(String, String)>,
    /// Whether the operation takes no `Authorization` (its `security` lists
    /// `{}`): `/gateway`, the interaction callback, the webhooks.
    pub(crate) open: bool,
}

/// The operation a request is for: `404: Not Found` for a path the document
/// lacks, `405: Method Not Allowed` for a method its path lacks.
pub(crate) fn operation(method: &str, path: &str) -> Result<Operation, ApiError> {
    SPEC.operation(method, path)
}

/// Checks a request's path parameters, query and JSON body (`null` for none)
/// against the operation's schemas; the violations go into `form`.
pub(crate) fn check(operation: &Operation, query: Option<&str>, body: &Value, form: &mut Form) {
    SPEC.check(operation, query, body, form);
}

/// Checks a body against the schema of the operation `method path` (a
/// template of the document), e.g. an interaction response that came as the
/// answer to an HTTP interaction rather than through the callback route.
pub(crate) fn check_body(method: &str, template: &str, body: &Value, form: &mut Form) {
    SPEC.check_body(&method.to_ascii_lowercase(), template, body, form);
}

struct Spec {
    /// The document with the added limits and closed objects.
    document: Value,
    registry: Registry<'static>,
    /// Validators compiled so far, by what they check.
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

impl Spec {
    fn load() -> Self {
        let mut document: Value = serde_json::from_str(DOCUMENT).expect("the vendored openapi.json is JSON");
        let added: Value = serde_json::from_str(ADDED_LIMITS).expect("added-limits.json is JSON");
        for limit in added["limits"].as_array().map_or(&[][..], Vec::as_slice) {
            let pointer = limit["pointer"].as_str().unwrap_or_default();
            if let Some(slot) = document.pointer_mut(pointer) {
                *slot = limit["value"].clone();
            }
        }
        close_objects(&mut document);
        let registry = Registry::new()
            .draft(Draft::Draft202012)
            .add(DOCUMENT_URI, document.clone())
            .and_then(jsonschema::RegistryBuilder::prepare)
            .expect("the vendored openapi.json registers as a schema resource");
        Self {
            document,
            registry,
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn operation(&self, method: &str, path: &str) -> Result<Operation, ApiError> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        // A template that fits: its literal segments and its parameters.
        let fits = |template: &str| {
            let parts: Vec<&str> = template.trim_matches('/').split('/').collect();
            let mut literal = 0;
            let mut params = Vec::new();
            if parts.len() != segments.len() {
                return None;
            }
            for (part, segment) in parts.into_iter().zip(&segments) {
                if let Some(name) = part.strip_prefix('{').and_then(|part| part.strip_suffix('}')) {
                    params.push((name.to_owned(), (*segment).to_owned()));
                } else if part == *segment {
                    literal += 1;
                } else {
                    return None;
                }
            }
            Some((literal, params))
        };
        // The template with the most literal segments wins, as a router
        // would: `/messages/@original` before `/messages/{message_id}`.
        let (template, (_, params)) = self.document["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(template, _)| Some((template, fits(template)?)))
            .max_by_key(|(_, (literal, _))| *literal)
            .ok_or_else(ApiError::not_found)?;
        let method = method.to_ascii_lowercase();
        let item = &self.document["paths"][template];
        let Some(found) = item.get(&method) else {
            return Err(ApiError::method_not_allowed());
        };
        let id = found["operationId"].as_str().unwrap_or_default();
        let open = found["security"]
            .as_array()
            .is_none_or(|ways| ways.iter().any(|way| way.as_object().is_some_and(Map::is_empty)));
        Ok(Operation {
            template: template.clone(),
            method,
            id: id.to_owned(),
            params,
            open,
        })
    }

    fn check(&self, operation: &Operation, query: Option<&str>, body: &Value, form: &mut Form) {
        let item = &self.document["paths"][&operation.template];
        // (the pointer to its schema, the parameter)
        let mut parameters: Vec<(String, &Value)> = Vec::new();
        for (at, level) in [
            (
                format!("/paths/{}/parameters", escape(&operation.template)),
                &item["parameters"],
            ),
            (
                format!("/paths/{}/{}/parameters", escape(&operation.template), operation.method),
                &item[&operation.method]["parameters"],
            ),
        ] {
            for (i, parameter) in level.as_array().map_or(&[][..], Vec::as_slice).iter().enumerate() {
                parameters.push((format!("{at}/{i}/schema"), parameter));
            }
        }
        for (place, given) in [
            ("path", path_values(operation)),
            ("query", self.query_values(query, &parameters)),
        ] {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (schema, parameter) in &parameters {
                if parameter["in"] != place {
                    continue;
                }
                let name = parameter["name"].as_str().unwrap_or_default();
                properties.insert(name.to_owned(), json!({ "$ref": reference(schema) }));
                if parameter["required"] == true {
                    required.push(name.to_owned());
                }
            }
            let schema = json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            });
            let key = format!("{place} {} {}", operation.method, operation.template);
            self.validate(&key, &schema, &Value::Object(given), form);
        }
        self.check_body(&operation.method, &operation.template, body, form);
    }

    fn check_body(&self, method: &str, template: &str, body: &Value, form: &mut Form) {
        let at = format!(
            "/paths/{}/{method}/requestBody/content/application~1json/schema",
            escape(template)
        );
        if self.document.pointer(&at).is_none() {
            // No JSON body is taken (a GET, a DELETE): whatever came is ignored.
            return;
        }
        // No body at all is an empty form, as Discord reads it.
        let body = if body.is_null() { &json!({}) } else { body };
        let key = format!("body {method} {template}");
        self.validate(&key, &json!({ "$ref": reference(&at) }), body, form);
    }

    /// The query's parameters as JSON values of their schemas' types:
    /// Discord's booleans (`true`, `True`, `1`, …) and integers.
    fn query_values(&self, query: Option<&str>, parameters: &[(String, &Value)]) -> Map<String, Value> {
        let mut values = Map::new();
        for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let schema = parameters
                .iter()
                .find(|(_, parameter)| parameter["in"] == "query" && parameter["name"] == *name)
                .and_then(|(at, _)| self.document.pointer(at))
                .map(|schema| self.resolve(schema));
            let kind = schema.and_then(|schema| match &schema["type"] {
                Value::String(kind) => Some(kind.clone()),
                Value::Array(kinds) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|k| *k != "null")
                    .map(str::to_owned),
                _ => None,
            });
            let coerced = match kind.as_deref() {
                Some("boolean") => match &*value {
                    "true" | "True" | "1" => json!(true),
                    "false" | "False" | "0" => json!(false),
                    _ => json!(value),
                },
                Some("integer") => value
                    .parse::<i64>()
                    .map_or_else(|_| json!(value), |number| json!(number)),
                _ => json!(value),
            };
            values.insert(name.into_owned(), coerced);
        }
        values
    }

    /// A schema, with a `$ref` to the document followed once.
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|target| target.strip_prefix('#'))
            .and_then(|pointer| self.document.pointer(pointer))
            .unwrap_or(schema)
    }

    fn validate(&self, key: &str, schema: &Value, instance: &Value, form: &mut Form) {
        let Some(validator) = self.validator(key, schema) else {
            form.error(
                "",
                "SPEC_UNUSABLE",
                format!("the fake cannot compile the schema of {key}"),
            );
            return;
        };
        for error in validator.iter_errors(instance) {
            report(&error, form);
        }
    }

    fn validator(&self, key: &str, schema: &Value) -> Option<Arc<Validator>> {
        let mut validators = self.validators.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(validator) = validators.get(key) {
            return Some(Arc::clone(validator));
        }
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_registry(&self.registry)
            .build(schema)
            .ok()
            .map(Arc::new)?;
        validators.insert(key.to_owned(), Arc::clone(&validator));
        Some(validator)
    }
}

/// The path parameters as strings, as the document types them.
fn path_values(operation: &Operation) -> Map<String, Value> {
    operation
        .params
        .iter()
        .map(|(name, value)| (name.clone(), json!(value)))
        .collect()
}

/// `additionalProperties: false` on every object schema that does not say
/// otherwise: unknown fields are refused (see the module's doc).
fn close_objects(node: &mut Value) {
    match node {
        Value::Object(fields) => {
            let object = match fields.get("type") {
                Some(Value::String(kind)) => kind == "object",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
                _ => false,
            };
            if object && fields.contains_key("properties") && !fields.contains_key("additionalProperties") {
                fields.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            fields.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// A path template as a JSON pointer segment.
fn escape(template: &str) -> String {
    template.replace('~', "~0").replace('/', "~1")
}

/// A `$ref` to a JSON pointer into the document; braces are not allowed in
/// a URI, so they are percent-encoded (the resolver decodes them).
fn reference(pointer: &str) -> String {
    format!(
        "{DOCUMENT_URI}#{}",
        pointer.replace('%', "%25").replace('{', "%7B").replace('}', "%7D")
    )
}

/// One jsonschema error as Discord's `_errors` entries.
fn report(error: &ValidationError<'_>, form: &mut Form) {
    let at = dotted(error.instance_path());
    match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            union(error, context, form);
        }
        // Discord's unions are told apart by `type`: a value two branches
        // take is one value.
        ValidationErrorKind::OneOfMultipleValid { .. } => {}
        ValidationErrorKind::Required { property } => form.error(
            &join(&at, property.as_str().unwrap_or_default()),
            "BASE_TYPE_REQUIRED",
            "This field is required",
        ),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            // A null says nothing (serenity sends `"data": null` with a
            // PONG): only a field with a value is one Discord would drop.
            let given = |name: &&String| {
                error
                    .instance()
                    .get(name.as_str())
                    .is_some_and(|value| !value.is_null())
            };
            for name in unexpected.iter().filter(given) {
                form.error(
                    &join(&at, name),
                    UNKNOWN_FIELD,
                    "Not a field of this request in Discord's OpenAPI document (Discord would ignore it).",
                );
            }
        }
        ValidationErrorKind::MaxLength { limit } | ValidationErrorKind::MaxItems { limit } => {
            form.error(
                &at,
                "BASE_TYPE_MAX_LENGTH",
                format!("Must be {limit} or fewer in length."),
            );
        }
        ValidationErrorKind::MinLength { limit } | ValidationErrorKind::MinItems { limit } => {
            form.error(
                &at,
                "BASE_TYPE_MIN_LENGTH",
                format!("Must be {limit} or more in length."),
            );
        }
        ValidationErrorKind::Type { kind } => {
            let (code, message) = type_error(kind, error.instance());
            form.error(&at, code, message);
        }
        ValidationErrorKind::Pattern { pattern } if pattern.starts_with("^(0|[1-9]") => form.error(
            &at,
            "NUMBER_TYPE_COERCE",
            format!("Value \"{}\" is not snowflake.", text(error.instance())),
        ),
        ValidationErrorKind::Enum { options } => {
            let choices = options.as_array().map_or(&[][..], Vec::as_slice);
            form.error(
                &at,
                "BASE_TYPE_CHOICES",
                format!("Value must be one of {}.", tuple(choices)),
            );
        }
        ValidationErrorKind::Constant { expected_value } => {
            let choices = std::slice::from_ref(&**expected_value);
            form.error(
                &at,
                "BASE_TYPE_CHOICES",
                format!("Value must be one of {}.", tuple(choices)),
            );
        }
        ValidationErrorKind::Minimum { limit } => form.error(
            &at,
            "NUMBER_TYPE_MIN",
            format!("int value should be greater than or equal to {limit}."),
        ),
        ValidationErrorKind::Maximum { limit } => form.error(
            &at,
            "NUMBER_TYPE_MAX",
            format!("int value should be less than or equal to {limit}."),
        ),
        ValidationErrorKind::UniqueItems => form.error(&at, "LIST_ITEM_VALUE_DUPLICATE", "List items must be unique."),
        _ => form.error(&at, "BASE_TYPE_INVALID", error.masked().to_string()),
    }
}

/// A value no branch of a union took. The branch whose `type` (or JSON
/// type) fits is the one the value meant: its errors are reported. If none
/// fits, the discriminator is: `UNION_TYPE_CHOICES` at `…type`.
fn union(error: &ValidationError<'_>, branches: &[Vec<ValidationError<'static>>], form: &mut Form) {
    let base = error.instance_path().as_str();
    let discriminator = format!("{base}/type");
    let decides = |e: &ValidationError<'_>| {
        let path = e.instance_path().as_str();
        path == discriminator
            || (path == base
                && match e.kind() {
                    ValidationErrorKind::Type { .. }
                    | ValidationErrorKind::Constant { .. }
                    | ValidationErrorKind::Enum { .. } => true,
                    ValidationErrorKind::Required { property } => property == "type",
                    _ => false,
                })
    };
    let meant = branches
        .iter()
        .filter(|branch| !branch.iter().any(decides))
        .min_by_key(|branch| branch.len());
    if let Some(branch) = meant {
        for error in branch {
            report(error, form);
        }
        return;
    }
    let at = dotted(error.instance_path());
    let object = error.instance().is_object();
    // An object's choices are its discriminator's; a scalar's, its own.
    let chosen = if object { discriminator.as_str() } else { base };
    let mut choices: Vec<Value> = Vec::new();
    let mut first_type = None;
    for e in branches.iter().flatten() {
        let path = e.instance_path().as_str();
        match e.kind() {
            ValidationErrorKind::Enum { options } if path == chosen => {
                choices.extend(options.as_array().into_iter().flatten().cloned());
            }
            ValidationErrorKind::Constant { expected_value } if path == chosen => {
                choices.push((**expected_value).clone());
            }
            ValidationErrorKind::Type { kind } if path == base => first_type = first_type.or(Some(kind)),
            _ => {}
        }
    }
    // In the document's order, each once.
    let mut seen = Vec::new();
    choices.retain(|choice| {
        let new = !seen.contains(choice);
        if new {
            seen.push(choice.clone());
        }
        new
    });
    match error.instance().as_ref() {
        Value::Object(fields) if !fields.contains_key("type") => {
            form.error(&join(&at, "type"), "BASE_TYPE_REQUIRED", "This field is required");
        }
        Value::Object(_) => form.error(
            &join(&at, "type"),
            "UNION_TYPE_CHOICES",
            format!("Value of field \"type\" must be one of {}.", tuple(&choices)),
        ),
        _ if !choices.is_empty() => form.error(
            &at,
            "BASE_TYPE_CHOICES",
            format!("Value must be one of {}.", tuple(&choices)),
        ),
        _ => {
            let (code, message) = first_type.map_or(("BASE_TYPE_INVALID", String::from("Invalid value.")), |kind| {
                type_error(kind, error.instance())
            });
            form.error(&at, code, message);
        }
    }
}

/// Discord's code and message for a value of the wrong JSON type.
fn type_error(kind: &TypeKind, instance: &Value) -> (&'static str, String) {
    let expected = match kind {
        TypeKind::Single(kind) => Some(*kind),
        TypeKind::Multiple(kinds) => kinds.iter().find(|kind| *kind != JsonType::Null),
    };
    match expected {
        Some(JsonType::String) => ("BASE_TYPE_STRING", "Must be a string.".to_owned()),
        Some(JsonType::Integer) => (
            "NUMBER_TYPE_COERCE",
            format!("Value \"{}\" is not int.", text(instance)),
        ),
        Some(JsonType::Number) => (
            "NUMBER_TYPE_COERCE",
            format!("Value \"{}\" is not a valid number.", text(instance)),
        ),
        Some(JsonType::Boolean) => ("BASE_TYPE_BOOLEAN", "Must be either true or false.".to_owned()),
        Some(JsonType::Array) => ("BASE_TYPE_LIST", "Must be a list.".to_owned()),
        Some(JsonType::Object) => (
            "DICT_TYPE_CONVERT",
            "Only dictionaries may be used in a DictType".to_owned(),
        ),
        Some(JsonType::Null) | None => ("BASE_TYPE_INVALID", "Invalid value.".to_owned()),
    }
}

/// An instance path as Discord writes it: `components.0.components.1.label`.
fn dotted(location: &Location) -> String {
    let segments: Vec<String> = location.segments().map(|segment| segment.to_string()).collect();
    segments.join(".")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as Discord quotes it in a message: a string without its quotes.
fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// Choices as Discord lists them, a Python tuple: `(1,)`, `('users', 'roles')`
/// (API Reference, Error Messages).
fn tuple(choices: &[Value]) -> String {
    let items: Vec<String> = choices.iter().map(python).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// A value as Python prints it (Discord's messages come from Python).
fn python(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), |text| format!("'{text}'"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{ADDED_LIMITS, DOCUMENT, check_body, operation};
    use crate::discord::validate::Form;

    fn refused(method: &str, template: &str, body: &Value) -> Value {
        let mut form = Form::default();
        check_body(method, template, body, &mut form);
        form.finish()
            .map_or_else(|error| error.body()["errors"].clone(), |()| Value::Null)
    }

    #[test]
    fn each_added_limit_replaces_what_the_document_says() {
        let document: Value = serde_json::from_str(DOCUMENT).unwrap_or_default();
        let added: Value = serde_json::from_str(ADDED_LIMITS).unwrap_or_default();
        let limits = added["limits"].as_array().cloned().unwrap_or_default();
        assert!(!limits.is_empty());
        for limit in limits {
            let pointer = limit["pointer"].as_str().unwrap_or_default();
            // A newer document that changed the value needs the limit
            // looked at again.
            assert_eq!(document.pointer(pointer), Some(&limit["spec"]), "{pointer}");
            assert!(
                limit["docs"]
                    .as_str()
                    .is_some_and(|docs| docs.starts_with("https://discord.com/developers/docs/"))
            );
        }
    }

    #[test]
    fn requests_are_matched_to_the_documents_operations() {
        let found =
            operation("PATCH", "/webhooks/1/tok/messages/@original").unwrap_or_else(|e| panic!("{:?}", e.body()));
        assert_eq!(found.id, "update_original_webhook_message");
        let found = operation("POST", "/channels/42/messages").unwrap_or_else(|e| panic!("{:?}", e.body()));
        assert_eq!(
            (found.id.as_str(), found.params.clone()),
            ("create_message", vec![("channel_id".to_owned(), "42".to_owned())])
        );
        let missing = operation("GET", "/channels/42/nothing").err().map(|e| e.body());
        assert_eq!(missing, Some(json!({ "message": "404: Not Found", "code": 0 })));
        let method = operation("PUT", "/channels/42/messages").err().map(|e| e.body());
        assert_eq!(method, Some(json!({ "message": "405: Method Not Allowed", "code": 0 })));
    }

    #[test]
    fn union_errors_point_into_the_branch_the_value_meant() {
        let button = json!({ "type": 2, "style": 1, "label": "l".repeat(81), "custom_id": "a" });
        let body = json!({ "content": "hi", "components": [{ "type": 1, "components": [button] }] });
        let errors = refused("POST", "/channels/{channel_id}/messages", &body);
        assert_eq!(
            errors,
            json!({ "components": { "0": { "components": { "0": { "label": { "_errors": [
                { "code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 80 or fewer in length." }
            ] } } } } } })
        );
        let body = json!({ "components": [{ "type": 99 }] });
        let errors = refused("POST", "/channels/{channel_id}/messages", &body);
        assert_eq!(
            errors["components"]["0"]["type"]["_errors"][0]["code"],
            "UNION_TYPE_CHOICES"
        );
        let body = json!({ "nonce": "n".repeat(26), "allowed_mentions": { "parse": ["nobody"] } });
        let errors = refused("POST", "/channels/{channel_id}/messages", &body);
        assert_eq!(errors["nonce"]["_errors"][0]["code"], "BASE_TYPE_MAX_LENGTH");
        assert_eq!(
            errors["allowed_mentions"]["parse"]["0"]["_errors"][0]["message"],
            "Value must be one of ('users', 'roles', 'everyone')."
        );
    }

    #[test]
    fn content_is_counted_in_code_points() {
        let body = json!({ "content": "👍".repeat(2000) });
        assert_eq!(refused("POST", "/channels/{channel_id}/messages", &body), Value::Null);
        let body = json!({ "content": "👍".repeat(2001) });
        let errors = refused("POST", "/channels/{channel_id}/messages", &body);
        assert_eq!(
            errors["content"]["_errors"][0]["message"],
            "Must be 2000 or fewer in length."
        );
    }
}
