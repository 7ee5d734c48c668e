//! The Telegram Bot API as the vendored `spec/telegram/api.json` describes
//! it (`PaulSonOfLars/telegram-bot-api-spec`, scraped from
//! <https://core.telegram.org/bots/api>; see `spec/telegram/README.md`): its
//! methods and types with their fields, and what their descriptions say in
//! words that a check can use. The document states limits only in prose, so
//! the numbers are read from the prose here, without regular expressions:
//! lengths ("1-4096 characters after entities parsing", "1-64 bytes"), item
//! counts ("1-100 identifiers", "up to 10 items", "At most 100 commands"),
//! the value a subtype's discriminator must have ("must be chat",
//! `always "user"`), and the fields of a button that exclude each other
//! ("Exactly one of the fields other than text, … must be used").

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;

/// The vendored document, compiled in: the fake needs no files at run time.
const API_JSON: &str = include_str!("../../spec/telegram/api.json");

static API: LazyLock<Api> = LazyLock::new(|| {
    // The document is vendored data, checked by this crate's tests: a broken
    // one is a broken build of the testkit, not bad input.
    #[allow(clippy::expect_used)]
    let mut api: Api = serde_json::from_str(API_JSON).expect("spec/telegram/api.json is a Bot API description");
    api.by_lowercase = api
        .methods
        .keys()
        .map(|name| (name.to_ascii_lowercase(), name.clone()))
        .collect();
    api
});

/// The Bot API: methods and types by name.
#[derive(Debug, Deserialize)]
pub(crate) struct Api {
    methods: HashMap<String, Owner>,
    types: HashMap<String, Owner>,
    #[serde(skip)]
    by_lowercase: HashMap<String, String>,
}

/// A method (its parameters) or a type (its fields).
#[derive(Debug, Deserialize)]
pub(crate) struct Owner {
    pub(crate) name: String,
    #[serde(default)]
    description: Vec<String>,
    /// `None` for a method without parameters and for a type the document
    /// gives no fields (`InputFile`, `CallbackGame`).
    pub(crate) fields: Option<Vec<Field>>,
    /// The concrete types of an abstract one (`BotCommandScope`).
    #[serde(default)]
    pub(crate) subtypes: Vec<String>,
    /// Set on the concrete types: their discriminator has a fixed value.
    #[serde(default)]
    subtype_of: Vec<String>,
}

/// A parameter of a method or a field of a type.
#[derive(Debug, Deserialize)]
pub(crate) struct Field {
    pub(crate) name: String,
    /// The alternatives: `Integer`, `String`, `Boolean`, `Float`, a type's
    /// name, or `Array of …` of any of these.
    pub(crate) types: Vec<String>,
    pub(crate) required: bool,
    description: String,
}

/// What a length or count limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Unicode code points, as Telegram counts "characters" (`TDLib`'s `utf8_length`).
    Characters,
    /// UTF-8 bytes.
    Bytes,
    /// The items of an array.
    Items,
}

impl Unit {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Characters => "characters",
            Self::Bytes => "bytes",
            Self::Items => "items",
        }
    }

    /// The size of a text in this unit.
    pub(crate) fn measure(self, text: &str) -> usize {
        match self {
            Self::Characters | Self::Items => text.chars().count(),
            Self::Bytes => text.len(),
        }
    }
}

/// A documented range, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    pub(crate) min: usize,
    pub(crate) max: usize,
    pub(crate) unit: Unit,
    /// The length counts the text after its `parse_mode` or entities were
    /// applied ("… characters after entities parsing"): only the fake's own
    /// parsing can check it.
    pub(crate) after_parsing: bool,
}

impl Limit {
    pub(crate) fn admits(&self, size: usize) -> bool {
        (self.min..=self.max).contains(&size)
    }
}

/// Whether a type's fields exclude each other, and which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exclusive {
    /// The fields of which at most (or, with `exactly`, exactly) one may be set.
    pub(crate) fields: Vec<String>,
    pub(crate) exactly: bool,
    /// The document's own sentence, quoted in the refusal.
    pub(crate) rule: String,
}

/// The vendored Bot API description.
pub(crate) fn api() -> &'static Api {
    &API
}

impl Api {
    /// A method by name, in any case (teloxide sends `SendMessage`).
    pub(crate) fn method(&self, name: &str) -> Option<&Owner> {
        let canonical = self.by_lowercase.get(&name.to_ascii_lowercase())?;
        self.methods.get(canonical)
    }

    /// A type by name.
    pub(crate) fn get_type(&self, name: &str) -> Option<&Owner> {
        self.types.get(name)
    }

    /// The documented length of a method's text that counts after entity
    /// parsing (`sendMessage`'s and `editMessageText`'s `text`).
    pub(crate) fn parsed_length(&self, method: &str, field: &str) -> Option<Limit> {
        self.method(method)?
            .field(field)?
            .length()
            .filter(|limit| limit.after_parsing)
    }
}

impl Owner {
    pub(crate) fn fields(&self) -> &[Field] {
        self.fields.as_deref().unwrap_or_default()
    }

    pub(crate) fn field(&self, name: &str) -> Option<&Field> {
        self.fields().iter().find(|field| field.name == name)
    }

    pub(crate) fn is_subtype(&self) -> bool {
        !self.subtype_of.is_empty()
    }

    /// "For simple text buttons, String can be used instead of this object"
    /// (`KeyboardButton`).
    pub(crate) fn accepts_string(&self) -> bool {
        self.description
            .iter()
            .any(|line| line.contains("String can be used instead of this object"))
    }

    /// "Exactly one of the fields other than `text`, `icon_custom_emoji_id`,
    /// and `style` must be used" (`InlineKeyboardButton`), "At most one of …"
    /// (`KeyboardButton`), "… one of the optional fields …".
    pub(crate) fn exclusive(&self) -> Option<Exclusive> {
        let sentence = self
            .description
            .iter()
            .flat_map(|line| line.split(". "))
            .find(|sentence| sentence.to_ascii_lowercase().contains("one of the"))?;
        let lower = sentence.to_ascii_lowercase();
        let exactly = lower.contains("exactly one of the");
        if !exactly && !lower.contains("at most one of the") {
            return None;
        }
        let fields = if let Some((_, rest)) = sentence.split_once("one of the fields other than ") {
            let list = rest.split(" must").next().unwrap_or(rest);
            let others: Vec<&str> = list
                .split(',')
                .map(|name| name.trim().trim_start_matches("and ").trim())
                .collect();
            self.fields()
                .iter()
                .filter(|field| !others.contains(&field.name.as_str()))
                .map(|field| field.name.clone())
                .collect()
        } else if lower.contains("one of the optional fields") {
            self.fields()
                .iter()
                .filter(|field| !field.required)
                .map(|field| field.name.clone())
                .collect()
        } else {
            return None;
        };
        Some(Exclusive {
            fields,
            exactly,
            rule: sentence.trim_end_matches('.').to_owned(),
        })
    }
}

impl Field {
    /// The length a text field's description states: its first "N-M
    /// characters" or "N-M bytes".
    pub(crate) fn length(&self) -> Option<Limit> {
        let words = words(&self.description);
        words.windows(2).enumerate().find_map(|(at, pair)| {
            let (min, max) = range(pair[0])?;
            let unit = match pair[1] {
                "characters" => Unit::Characters,
                "bytes" => Unit::Bytes,
                _ => return None,
            };
            let after_parsing =
                words.get(at + 2) == Some(&"after") && words.get(at + 3).is_some_and(|word| word.starts_with("entit"));
            Some(Limit {
                min,
                max,
                unit,
                after_parsing,
            })
        })
    }

    /// The number of items an array field's description states: "1-100
    /// identifiers", "up to 10 items", "At most 100 commands".
    pub(crate) fn count(&self) -> Option<Limit> {
        let words = words(&self.description);
        let of_items = |at: usize| !matches!(words.get(at), Some(&("characters" | "bytes")));
        let items = |min, max| Limit {
            min,
            max,
            unit: Unit::Items,
            after_parsing: false,
        };
        words.iter().enumerate().find_map(|(at, word)| {
            if let Some((min, max)) = range(word) {
                return of_items(at + 1).then(|| items(min, max));
            }
            let before = at.checked_sub(2).map(|start| &words[start..at]);
            let bounded = matches!(before, Some(["up" | "Up", "to"] | ["at" | "At", "most"]));
            let max = word.parse().ok().filter(|_| bounded && of_items(at + 1))?;
            Some(items(0, max))
        })
    }

    /// The value a concrete type's discriminator must have: "Scope type,
    /// must be chat", "Type of the reaction, always \"emoji\"".
    pub(crate) fn constant(&self) -> Option<&str> {
        if let Some((_, value)) = self.description.rsplit_once("must be ")
            && !value.contains(' ')
        {
            return Some(value.trim_end_matches('.'));
        }
        let (_, rest) = self.description.split_once("always \"")?;
        rest.split('"').next()
    }
}

/// The words of a description, without the punctuation after them.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|word| word.trim_end_matches(['.', ',', ';', ':', ')']).trim_start_matches('('))
        .collect()
}

/// `"1-4096"` → `(1, 4096)`; not "3166-1" (of "ISO 3166-1").
fn range(word: &str) -> Option<(usize, usize)> {
    let (min, max) = word.split_once('-')?;
    let (min, max) = (min.parse().ok()?, max.parse().ok()?);
    (min <= max).then_some((min, max))
}

#[cfg(test)]
mod tests {
    use super::{Limit, Owner, Unit, api};

    fn length(owner: &str, field: &str) -> Option<Limit> {
        let api = api();
        let owner = api.method(owner).or_else(|| api.get_type(owner))?;
        owner.field(field)?.length()
    }

    fn limit(min: usize, max: usize, unit: Unit, after_parsing: bool) -> Limit {
        Limit {
            min,
            max,
            unit,
            after_parsing,
        }
    }

    /// The numbers the fake reads from the vendored document for what
    /// askgate sends: a newer document that changes one fails here first.
    #[test]
    fn the_vendored_spec_states_the_limits_askgate_relies_on() {
        use Unit::{Bytes, Characters, Items};
        assert_eq!(length("sendMessage", "text"), Some(limit(1, 4096, Characters, true)));
        assert_eq!(
            length("editMessageText", "text"),
            Some(limit(1, 4096, Characters, true))
        );
        assert_eq!(
            length("answerCallbackQuery", "text"),
            Some(limit(0, 200, Characters, false))
        );
        assert_eq!(
            length("InlineKeyboardButton", "callback_data"),
            Some(limit(1, 64, Bytes, false))
        );
        assert_eq!(
            length("ForceReply", "input_field_placeholder"),
            Some(limit(1, 64, Characters, false))
        );
        assert_eq!(
            length("setWebhook", "secret_token"),
            Some(limit(1, 256, Characters, false))
        );
        assert_eq!(length("BotCommand", "command"), Some(limit(1, 32, Characters, false)));
        assert_eq!(
            length("BotCommand", "description"),
            Some(limit(1, 256, Characters, false))
        );
        assert_eq!(
            length("ReplyParameters", "quote"),
            Some(limit(0, 1024, Characters, true))
        );
        assert_eq!(length("sendMessage", "chat_id"), None);

        let count = |method: &str, field: &str| api().method(method)?.field(field)?.count();
        assert_eq!(count("setMyCommands", "commands"), Some(limit(0, 100, Items, false)));
        assert_eq!(
            count("deleteMessages", "message_ids"),
            Some(limit(1, 100, Items, false))
        );
        assert_eq!(count("sendPaidMedia", "media"), Some(limit(0, 10, Items, false)));
        assert_eq!(count("sendPoll", "options"), Some(limit(1, 12, Items, false)));
        assert_eq!(count("sendMessage", "entities"), None);
    }

    #[test]
    fn methods_are_found_in_any_case_and_types_resolve() {
        let api = api();
        assert_eq!(api.method("SendMessage").map(|m| m.name.as_str()), Some("sendMessage"));
        assert_eq!(api.method("GETME").map(|m| m.name.as_str()), Some("getMe"));
        assert!(api.method("sendCarrierPigeon").is_none());
        let markup = api.method("sendMessage").and_then(|m| m.field("reply_markup"));
        assert_eq!(
            markup.map(|field| field.types.clone()),
            Some(
                [
                    "InlineKeyboardMarkup",
                    "ReplyKeyboardMarkup",
                    "ReplyKeyboardRemove",
                    "ForceReply"
                ]
                .map(str::to_owned)
                .to_vec()
            )
        );
        let chat_id = api.method("sendMessage").and_then(|m| m.field("chat_id"));
        assert_eq!(
            chat_id.map(|field| field.types.join(" or ")),
            Some("Integer or String".to_owned())
        );
        let scope = api.get_type("BotCommandScope").map(|scope| scope.subtypes.len());
        assert_eq!(scope, Some(7));
    }

    #[test]
    fn discriminators_and_exclusive_fields_are_read_from_the_prose() {
        let api = api();
        let constant = |owner: &str, field: &str| {
            api.get_type(owner)
                .and_then(|owner| owner.field(field))
                .and_then(|field| field.constant().map(str::to_owned))
        };
        assert_eq!(constant("BotCommandScopeChat", "type").as_deref(), Some("chat"));
        assert_eq!(constant("ReactionTypeEmoji", "type").as_deref(), Some("emoji"));

        let button = api.get_type("InlineKeyboardButton").and_then(Owner::exclusive);
        let button = button.expect("InlineKeyboardButton's actions exclude each other");
        assert!(button.exactly);
        assert!(button.fields.iter().any(|name| name == "callback_data"));
        assert!(button.fields.iter().any(|name| name == "url"));
        for kept in ["text", "icon_custom_emoji_id", "style"] {
            assert!(!button.fields.iter().any(|name| name == kept), "{kept} is no action");
        }
        let reply = api.get_type("KeyboardButton").and_then(Owner::exclusive);
        assert!(reply.is_some_and(|rule| !rule.exactly));
        assert!(api.get_type("KeyboardButton").is_some_and(Owner::accepts_string));
        assert!(api.get_type("ForceReply").and_then(Owner::exclusive).is_none());
    }
}
