//! The text of a message as Telegram stores it: parsed for its
//! `parse_mode` (or with the `entities` sent), trimmed, checked for the
//! length the Bot API description gives it after parsing,
//! with the `mention` entities Telegram finds, all offsets in UTF-16 code
//! units as the Bot API counts them.

use serde_json::{Map, Value};

use super::html;
use super::server::{ApiError, object, string};
use super::spec::api;
use super::validate::too_long_after_parsing;

/// A message entity, with UTF-16 offsets as the Bot API counts them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entity {
    kind: String,
    offset: usize,
    length: usize,
    extra: Map<String, Value>,
}

impl Entity {
    pub(crate) fn new(kind: &str, offset: usize, length: usize) -> Self {
        Self {
            kind: kind.to_owned(),
            offset,
            length,
            extra: Map::new(),
        }
    }

    pub(crate) fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let fields = value.as_object()?;
        let offset = usize::try_from(fields.get("offset")?.as_u64()?).ok()?;
        let length = usize::try_from(fields.get("length")?.as_u64()?).ok()?;
        let kind = fields.get("type")?.as_str()?;
        let mut entity = Self::new(kind, offset, length);
        for (key, value) in fields {
            if !matches!(key.as_str(), "offset" | "length" | "type") {
                entity.extra.insert(key.clone(), value.clone());
            }
        }
        Some(entity)
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut json = Map::new();
        json.insert("offset".into(), self.offset.into());
        json.insert("length".into(), self.length.into());
        json.insert("type".into(), self.kind.clone().into());
        json.extend(self.extra.clone());
        Value::Object(json)
    }

    pub(crate) fn end(&self) -> usize {
        self.offset + self.length
    }
}

pub(crate) fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The `text` of a bot's message (`sendMessage`, `editMessageText`) as
/// Telegram stores it: parsed for its `parse_mode` (or with its `entities`),
/// trimmed, with mentions found, and within the length the Bot API
/// description gives the method's `text` after entity parsing.
pub(crate) fn format_text(method: &str, params: &Value) -> Result<(String, Vec<Entity>), ApiError> {
    // Present and not empty: `validate.rs` has checked it.
    let text = string(params, "text").unwrap_or_default();
    let parse_mode = string(params, "parse_mode").unwrap_or_default().to_ascii_lowercase();
    let (text, entities) = match parse_mode.as_str() {
        "" => {
            let given = object(params, "entities").unwrap_or_default();
            let given = given.as_array().map_or(&[][..], Vec::as_slice);
            (text, given.iter().filter_map(Entity::from_json).collect())
        }
        "html" => html::parse(&text)
            .map_err(|error| ApiError::invalid(format!("Bad Request: can't parse entities: {error}")))?,
        "markdownv2" | "markdown" => (text, Vec::new()),
        _ => return Err(ApiError::invalid("Bad Request: unsupported parse_mode")),
    };
    let (text, entities) = finish_text(&text, entities);
    // `TDLib` refuses a text that is nothing but markup and white space.
    if text.is_empty() {
        return Err(ApiError::invalid("Bad Request: text must be non-empty"));
    }
    if let Some(limit) = api().parsed_length(method, "text")
        && limit.unit.measure(&text) > limit.max
    {
        return Err(ApiError::invalid(too_long_after_parsing(method)));
    }
    Ok((text, entities))
}

/// A person's text: trimmed, with mentions found.
pub(crate) fn plain_text(text: &str) -> (String, Vec<Entity>) {
    finish_text(text, Vec::new())
}

fn finish_text(text: &str, entities: Vec<Entity>) -> (String, Vec<Entity>) {
    let trimmed = text.trim();
    let lead = utf16_len(&text[..text.len() - text.trim_start().len()]);
    let length = utf16_len(trimmed);
    let mut entities: Vec<Entity> = entities
        .into_iter()
        .filter_map(|mut entity| {
            let start = entity.offset.saturating_sub(lead);
            let end = entity.end().saturating_sub(lead).min(length);
            (end > start).then(|| {
                entity.offset = start;
                entity.length = end - start;
                entity
            })
        })
        .collect();
    let mentions = mentions(trimmed, &entities);
    entities.extend(mentions);
    entities.sort_by(|a, b| a.offset.cmp(&b.offset).then(b.length.cmp(&a.length)));
    (trimmed.to_owned(), entities)
}

/// The `mention` entities Telegram finds: `@` after a non-word character,
/// then 3 to 32 letters, digits or underscores, outside code and links.
fn mentions(text: &str, entities: &[Entity]) -> Vec<Entity> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let shielded = |offset: usize| {
        entities.iter().any(|entity| {
            matches!(
                entity.kind.as_str(),
                "code" | "pre" | "text_link" | "text_mention" | "url"
            ) && entity.offset <= offset
                && offset < entity.end()
        })
    };
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut offset = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '@' && (i == 0 || !is_word(chars[i - 1])) {
            let name = chars[i + 1..].iter().take_while(|c| is_name(**c)).count();
            let after = chars.get(i + 1 + name).copied();
            if (3..=32).contains(&name) && !after.is_some_and(is_word) && !shielded(offset) {
                found.push(Entity::new("mention", offset, name + 1));
                offset += name + 1;
                i += name + 1;
                continue;
            }
        }
        offset += c.len_utf16();
        i += 1;
    }
    found
}

pub(crate) fn set_text(message: &mut Map<String, Value>, text: String, entities: &[Entity]) {
    message.insert("text".into(), text.into());
    if entities.is_empty() {
        message.remove("entities");
    } else {
        let entities = entities.iter().map(Entity::to_json).collect();
        message.insert("entities".into(), Value::Array(entities));
    }
}
