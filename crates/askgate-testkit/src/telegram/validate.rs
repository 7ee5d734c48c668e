//! Every request checked against the vendored Bot API description
//! ([`super::spec`]) before a method sees it: the method exists, required
//! parameters are present, none is unknown, each value has one of its
//! documented types (nested objects such as `InlineKeyboardMarkup`,
//! `InlineKeyboardButton`, `ReplyParameters`, `LinkPreviewOptions`,
//! `ForceReply` resolved through the document's types, `Array of X`, unions
//! such as `Integer or String` and abstract types by their subtypes), and
//! every length and item count the descriptions state. A violation is
//! worded the way Telegram words it where its wording is known (the Bot API
//! server's and `TDLib`'s messages), and in the same style where it is not.
//!
//! Like the Bot API server, top-level parameters may come as text (a form or
//! a query string sends nothing else): numbers and booleans are read from
//! it, objects and arrays parsed from JSON, and an empty one counts as
//! absent. Inside objects, types are checked as Telegram's JSON reader
//! checks them (a number may stand for a string and a numeric string for an
//! integer; a boolean must be a boolean).
//!
//! Where the fake is stricter than Telegram, on purpose: an unknown
//! parameter or field is refused (Telegram ignores it, so a misspelt
//! parameter would silently do nothing), and a top-level value of the wrong
//! type is refused (Telegram reads it as 0, false or empty).

use serde_json::{Map, Value};

use super::spec::{Field, Limit, Owner, api};

/// One step into a request: a field or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(usize),
}

/// What is wrong where.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    Missing,
    Unknown,
    /// Not of the documented type (the alternatives, joined with "or").
    Type(String),
    /// A text outside its documented length; the length it has.
    Length(Limit, usize),
    /// An array outside its documented count; the items it has.
    Count(Limit, usize),
    /// A discriminator other than its documented value.
    Constant(String),
    /// Fields that exclude each other: the document's rule, how many are set.
    Exclusive(String, usize),
}

/// A request that breaks the Bot API description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    method: String,
    path: Vec<Step>,
    /// The type of the innermost array item the problem is in (an
    /// `InlineKeyboardButton`): Telegram names it in front of the problem.
    item: Option<String>,
    problem: Problem,
}

/// Checks a request's parameters against the method's description.
pub(crate) fn check(method: &Owner, params: &Value) -> Result<(), Violation> {
    let empty = Map::new();
    let params = params.as_object().unwrap_or(&empty);
    let walker = Walker { method: &method.name };
    walker.object(method, params, &mut Vec::new(), None, true)
}

struct Walker<'a> {
    method: &'a str,
}

impl Walker<'_> {
    fn fail(&self, path: &[Step], item: Option<&str>, problem: Problem) -> Result<(), Violation> {
        Err(Violation {
            method: self.method.to_owned(),
            path: path.to_vec(),
            item: item.map(str::to_owned),
            problem,
        })
    }

    /// The fields of a method's parameters or of an object.
    fn object(
        &self,
        owner: &Owner,
        value: &Map<String, Value>,
        path: &mut Vec<Step>,
        item: Option<&str>,
        top: bool,
    ) -> Result<(), Violation> {
        let given = |name: &str| value.get(name).filter(|value| !absent(value, top));
        if let Some(unknown) = value.keys().find(|key| owner.field(key).is_none()) {
            path.push(Step::Field(unknown.clone()));
            return self.fail(path, item, Problem::Unknown);
        }
        for field in owner.fields() {
            path.push(Step::Field(field.name.clone()));
            match given(&field.name) {
                None if field.required => return self.fail(path, item, Problem::Missing),
                None => {}
                Some(value) => self.field(owner, field, value, path, item, top)?,
            }
            path.pop();
        }
        if let Some(rule) = owner.exclusive() {
            let set = rule.fields.iter().filter(|name| given(name).is_some()).count();
            if set > 1 || (rule.exactly && set == 0) {
                return self.fail(path, item, Problem::Exclusive(rule.rule, set));
            }
        }
        Ok(())
    }

    fn field(
        &self,
        owner: &Owner,
        field: &Field,
        value: &Value,
        path: &mut Vec<Step>,
        item: Option<&str>,
        top: bool,
    ) -> Result<(), Violation> {
        self.any_of(&field.types, field, value, path, item, top)?;
        if let (Some(limit), Some(text)) = (field.length(), value.as_str())
            && !limit.after_parsing
        {
            let size = limit.unit.measure(text);
            if !limit.admits(size) {
                return self.fail(path, item, Problem::Length(limit, size));
            }
        }
        if owner.is_subtype()
            && let Some(constant) = field.constant()
            && value.as_str() != Some(constant)
        {
            return self.fail(path, item, Problem::Constant(constant.to_owned()));
        }
        Ok(())
    }

    /// A value of one of these types; when none fits, the problem of the
    /// alternative the value looks most like.
    fn any_of(
        &self,
        types: &[String],
        field: &Field,
        value: &Value,
        path: &mut Vec<Step>,
        item: Option<&str>,
        top: bool,
    ) -> Result<(), Violation> {
        if let [only] = types {
            return self.one(only, field, value, path, item, top);
        }
        let mut problems = Vec::new();
        for name in types {
            match self.one(name, field, value, path, item, top) {
                Ok(()) => return Ok(()),
                Err(violation) => problems.push((likeness(name, value, top), violation)),
            }
        }
        // The problem of the first of the most alike, when the value is an
        // object like one of them; otherwise it is of none of the types.
        let best = problems
            .into_iter()
            .rev()
            .max_by_key(|(likeness, _)| *likeness)
            .filter(|(likeness, _)| *likeness > 0);
        match best {
            Some((_, violation)) => Err(violation),
            None => self.fail(path, item, Problem::Type(types.join(" or "))),
        }
    }

    fn one(
        &self,
        name: &str,
        field: &Field,
        value: &Value,
        path: &mut Vec<Step>,
        item: Option<&str>,
        top: bool,
    ) -> Result<(), Violation> {
        let wrong = |walker: &Self, path: &[Step]| walker.fail(path, item, Problem::Type(name.to_owned()));
        if let Some(element) = name.strip_prefix("Array of ") {
            let Some(items) = structured(value, top).and_then(|value| value.as_array().cloned()) else {
                return wrong(self, path);
            };
            // The count a description states is of the outer array.
            if path.last().is_some_and(|step| matches!(step, Step::Field(_)))
                && let Some(limit) = field.count()
                && !limit.admits(items.len())
            {
                return self.fail(path, item, Problem::Count(limit, items.len()));
            }
            // Problems inside an item name the item's type (a button).
            let item = api().get_type(element).map_or(item, |owner| Some(owner.name.as_str()));
            for (index, value) in items.iter().enumerate() {
                path.push(Step::Index(index));
                self.one(element, field, value, path, item, false)?;
                path.pop();
            }
            return Ok(());
        }
        let fits = match name {
            "String" => value.is_string() || value.is_number(),
            "Integer" => value.is_i64() || value.as_str().is_some_and(|text| text.trim().parse::<i64>().is_ok()),
            "Float" => {
                value.is_number() || (top && value.as_str().is_some_and(|text| text.trim().parse::<f64>().is_ok()))
            }
            "Boolean" => value.is_boolean() || (top && matches!(value.as_str(), Some("true" | "false"))),
            _ => return self.typed(name, field, value, path, item, top),
        };
        if fits { Ok(()) } else { wrong(self, path) }
    }

    /// A value of one of the document's types.
    fn typed(
        &self,
        name: &str,
        field: &Field,
        value: &Value,
        path: &mut Vec<Step>,
        item: Option<&str>,
        top: bool,
    ) -> Result<(), Violation> {
        let Some(owner) = api().get_type(name) else {
            return self.fail(path, item, Problem::Type(name.to_owned()));
        };
        if !owner.subtypes.is_empty() {
            return self.any_of(&owner.subtypes, field, value, path, item, top);
        }
        if owner.fields.is_none() || (owner.accepts_string() && value.is_string()) {
            // `InputFile` (an upload or a file id), `CallbackGame` (holds
            // nothing yet), a keyboard button given as its text.
            return Ok(());
        }
        match structured(value, top).as_ref().and_then(Value::as_object) {
            Some(object) => self.object(owner, object, path, item, false),
            None => self.fail(path, item, Problem::Type(name.to_owned())),
        }
    }
}

/// How much a value looks like an object of this type: the fields it has
/// that the type knows, and much more when its discriminator matches.
fn likeness(name: &str, value: &Value, top: bool) -> usize {
    let Some(object) = structured(value, top).and_then(|value| value.as_object().cloned()) else {
        return 0;
    };
    let Some(owner) = api().get_type(name.trim_start_matches("Array of ")) else {
        return 0;
    };
    let known = object.keys().filter(|key| owner.field(key).is_some()).count();
    let discriminated = owner.is_subtype()
        && owner.fields().iter().any(|field| {
            field
                .constant()
                .is_some_and(|constant| object.get(&field.name).and_then(Value::as_str) == Some(constant))
        });
    known + if discriminated { 1000 } else { 0 }
}

/// A top-level parameter sent as text stands for nothing when it is empty,
/// as on the Bot API server; `null` stands for nothing anywhere.
fn absent(value: &Value, top: bool) -> bool {
    value.is_null() || (top && value.as_str() == Some(""))
}

/// An object or array, also when a top-level parameter sent it as JSON text.
fn structured(value: &Value, top: bool) -> Option<Value> {
    match value {
        Value::Object(_) | Value::Array(_) => Some(value.clone()),
        Value::String(text) if top => serde_json::from_str(text).ok(),
        _ => None,
    }
}

impl Violation {
    /// The `description` Telegram answers with (HTTP 400).
    pub(crate) fn description(&self) -> String {
        let message = self.known().map_or_else(|| self.worded(), str::to_owned);
        bad_request(&message)
    }

    /// The field the problem is in, by name: `text`, `inline_keyboard[0]`.
    fn name(&self) -> String {
        let mut name = String::new();
        for step in self.path.iter().rev() {
            match step {
                Step::Index(index) => name.insert_str(0, &format!("[{index}]")),
                Step::Field(field) => {
                    name.insert_str(0, field);
                    break;
                }
            }
        }
        name
    }

    /// Telegram's own words for the problems askgate can meet.
    fn known(&self) -> Option<&'static str> {
        let top = self.path.len() == 1;
        let field = self.name();
        match (&self.problem, top, field.as_str()) {
            // The Bot API server, per parameter (`Client.cpp`).
            (Problem::Missing, true, "chat_id") => Some("chat_id is empty"),
            (Problem::Missing, true, "text") => Some("Message text is empty"),
            (Problem::Missing, true, "message_id") => Some("Message identifier is not specified"),
            (Problem::Missing, true, "callback_query_id") => {
                Some("query is too old and response timeout expired or query ID is invalid")
            }
            (Problem::Length(limit, size), true, "secret_token") if *size > limit.max => {
                Some("secret token is too long")
            }
            // Telegram's servers.
            (Problem::Length(..), false, "callback_data") => Some("BUTTON_DATA_INVALID"),
            (Problem::Length(limit, size), true, "text")
                if *size > limit.max && self.method == "answerCallbackQuery" =>
            {
                Some("MESSAGE_TOO_LONG")
            }
            _ => None,
        }
    }

    /// The problem in the style of the Bot API server's JSON reader
    /// (`Can't find field "x"`, `Field "x" must be of type String`), with the
    /// array item in front (`Can't parse inline keyboard button: …`).
    fn worded(&self) -> String {
        let name = self.name();
        let top = self.path.len() == 1;
        let what = if top {
            format!("Parameter \"{name}\"")
        } else {
            format!("Field \"{name}\"")
        };
        let problem = match &self.problem {
            Problem::Missing if top => format!("{what} is required"),
            Problem::Missing => format!("Can't find field \"{name}\""),
            Problem::Unknown if top => format!("Unknown parameter \"{name}\""),
            Problem::Unknown => format!("Unknown field \"{name}\""),
            Problem::Type(expected) => format!("{what} must be of type {expected}"),
            Problem::Length(limit, size) => format!(
                "{what} must be {}-{} {} long, not {size}",
                limit.min,
                limit.max,
                limit.unit.as_str()
            ),
            Problem::Count(limit, size) => format!("{what} must have {}-{} items, not {size}", limit.min, limit.max),
            Problem::Constant(constant) => format!("{what} must be \"{constant}\""),
            Problem::Exclusive(_, 0) if self.item.as_deref() == Some("InlineKeyboardButton") => {
                "Text buttons are unallowed in the inline keyboard".to_owned()
            }
            Problem::Exclusive(rule, _) => rule.clone(),
        };
        match &self.item {
            Some(item) => format!("Can't parse {}: {problem}", item_label(item)),
            None => problem,
        }
    }
}

/// How the Bot API server names an array item in its errors.
fn item_label(item: &str) -> &str {
    match item {
        "InlineKeyboardButton" => "inline keyboard button",
        "KeyboardButton" => "keyboard button",
        other => other,
    }
}

/// `Bad Request: ` and the message, its first letter lowercased unless the
/// message is an error code (`BUTTON_DATA_INVALID`), as the Bot API server
/// writes its errors.
fn bad_request(message: &str) -> String {
    let mut chars = message.chars();
    let Some(first) = chars.next() else {
        return "Bad Request".to_owned();
    };
    let second = chars.clone().next();
    if second.is_some_and(|c| c == '_' || c.is_ascii_uppercase()) {
        format!("Bad Request: {message}")
    } else {
        format!("Bad Request: {}{}", first.to_lowercase(), chars.as_str())
    }
}

/// What Telegram answers when a text is longer than the document allows
/// after its entities were parsed: a new message is refused by `TDLib`, an
/// edit by Telegram's servers.
pub(crate) fn too_long_after_parsing(method: &str) -> &'static str {
    if method == "sendMessage" {
        "Bad Request: message is too long"
    } else {
        "Bad Request: MESSAGE_TOO_LONG"
    }
}
