//! Validation and normalization of agent input (spec §2).
//!
//! The input is walked as a [`serde_json::Value`] rather than deserialized
//! with serde's derive: serde stops at the first problem, and the contract is
//! that every problem of a request is reported at once, each with its JSON path.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::request::{
    AskRequest, DEFAULT_TIMEOUT_SECONDS, MAX_DESCRIPTION_CHARS, MAX_HEADER_GRAPHEMES, MAX_ID_CHARS, MAX_LABEL_CHARS,
    MAX_OPTIONS, MAX_QUESTION_CHARS, MAX_QUESTIONS, MAX_TIMEOUT_SECONDS, MIN_OPTIONS, MIN_QUESTIONS,
    MIN_TIMEOUT_SECONDS, Question, QuestionOption,
};
use crate::text::{char_len, clean_field, excerpt, normalize, truncate_graphemes};
use crate::when::format_duration;

/// The stable code of a validation problem. Scripts and agents match on
/// these; a code is never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The body is not JSON at all.
    InvalidJson,
    /// A value has the wrong JSON type (a string where an object belongs).
    InvalidType,
    /// A required field is absent.
    MissingField,
    /// A field the contract does not know.
    UnknownField,
    /// Fewer than 1 or more than 3 questions.
    QuestionCount,
    /// An id that does not match `^[a-z][a-z0-9_]*$` or is over 64 characters.
    InvalidId,
    /// Two questions with the same id.
    DuplicateId,
    /// A header that is empty after trimming.
    EmptyHeader,
    /// A question text that is empty or over 300 characters.
    InvalidQuestion,
    /// Fewer than 2 or more than 4 options.
    OptionCount,
    /// A label that is empty or over 64 characters.
    InvalidLabel,
    /// Two labels of one question that read the same.
    DuplicateLabel,
    /// An `Other` option: askgate always offers one itself.
    OtherOptionNotAllowed,
    /// A description over 150 characters.
    InvalidDescription,
    /// A `timeoutSeconds` that is not a whole number, or (where longer
    /// waits are taken) longer than the agent may wait.
    InvalidTimeout,
    /// A text holding a character askgate cannot keep: U+0000 (NUL) in an
    /// id of the envelope (`sessionId`, `runId`, `toolCallId`), which
    /// PostgreSQL cannot store in text.
    InvalidCharacter,
    /// A reminder point of askgate's envelope (`remind[0]`) that is not
    /// like `50%`, `2m before` or `10m`.
    InvalidReminder,
    /// An escalation of askgate's envelope (`escalate[0].after`) that is
    /// malformed, names nobody configured, or comes after the question ends.
    InvalidEscalation,
    /// A `callbackUrl` of askgate's envelope that is not an http(s) URL on
    /// a host the agent's configuration allows (`callback_hosts`).
    InvalidCallbackUrl,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::InvalidType => "invalid_type",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::QuestionCount => "question_count",
            Self::InvalidId => "invalid_id",
            Self::DuplicateId => "duplicate_id",
            Self::EmptyHeader => "empty_header",
            Self::InvalidQuestion => "invalid_question",
            Self::OptionCount => "option_count",
            Self::InvalidLabel => "invalid_label",
            Self::DuplicateLabel => "duplicate_label",
            Self::OtherOptionNotAllowed => "other_option_not_allowed",
            Self::InvalidDescription => "invalid_description",
            Self::InvalidTimeout => "invalid_timeout",
            Self::InvalidCharacter => "invalid_character",
            Self::InvalidReminder => "invalid_reminder",
            Self::InvalidEscalation => "invalid_escalation",
            Self::InvalidCallbackUrl => "invalid_callback_url",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem of a request: what, where, and a sentence for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationError {
    /// The stable code.
    pub code: ErrorCode,
    /// The JSON path of the offending value, `questions[1].options[2].label`;
    /// empty for the request as a whole.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Every problem found in one request, in document order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct ValidationErrors {
    /// The problems; never empty.
    pub errors: Vec<ValidationError>,
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, error) in self.errors.iter().enumerate() {
            if n > 0 {
                f.write_str("; ")?;
            }
            if error.path.is_empty() {
                write!(f, "{}: {}", error.code, error.message)?;
            } else {
                write!(f, "{} at {}: {}", error.code, error.path, error.message)?;
            }
        }
        Ok(())
    }
}

impl ValidationErrors {
    /// Whether some problem has this code.
    pub fn has(&self, code: ErrorCode) -> bool {
        self.errors.iter().any(|error| error.code == code)
    }
}

/// Parses and validates a request given as JSON text.
pub fn validate_json(text: &str) -> Result<AskRequest, ValidationErrors> {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => validate(&value),
        Err(error) => Err(ValidationErrors {
            errors: vec![ValidationError {
                code: ErrorCode::InvalidJson,
                path: String::new(),
                message: format!("The request is not valid JSON: {error}."),
            }],
        }),
    }
}

/// Validates and normalizes the `ask_user` arguments (spec §2).
///
/// Strings are trimmed and their whitespace runs made single spaces, headers
/// cut to 12 user-perceived characters, empty descriptions dropped, and the
/// timeout defaulted and clamped. Every problem is reported, not only the first.
pub fn validate(value: &Value) -> Result<AskRequest, ValidationErrors> {
    validate_timeout_by(value, TimeoutRule::Clamp)
}

/// [`validate`] for a caller that may wait longer than the contract's hour
/// (`POST /v1/questions`, whose agent polls or takes a webhook): a
/// `timeoutSeconds` above [`MAX_TIMEOUT_SECONDS`] is kept when it is at most
/// `max_timeout_seconds` (the agent's `max_timeout`; raised to the
/// contract's hour and capped at [`crate::request::LONGEST_TIMEOUT_SECONDS`])
/// and refused as [`ErrorCode::InvalidTimeout`], naming the limit, when it
/// is longer. Below the hour it reads as [`validate`] does (30 s at least).
pub fn validate_with_max_timeout(value: &Value, max_timeout_seconds: u32) -> Result<AskRequest, ValidationErrors> {
    let max = max_timeout_seconds.clamp(MAX_TIMEOUT_SECONDS, crate::request::LONGEST_TIMEOUT_SECONDS);
    validate_timeout_by(value, TimeoutRule::UpTo(max))
}

/// How `timeoutSeconds` is bounded above.
#[derive(Debug, Clone, Copy)]
enum TimeoutRule {
    /// The contract's: lowered to [`MAX_TIMEOUT_SECONDS`].
    Clamp,
    /// Kept up to this many seconds, refused above.
    UpTo(u32),
}

fn validate_timeout_by(value: &Value, rule: TimeoutRule) -> Result<AskRequest, ValidationErrors> {
    let mut errors = Errors::default();
    let request = read_request(value, rule, &mut errors);
    match request {
        Some(request) if errors.0.is_empty() => Ok(request),
        _ => Err(ValidationErrors { errors: errors.0 }),
    }
}

#[derive(Default)]
struct Errors(Vec<ValidationError>);

impl Errors {
    fn push(&mut self, code: ErrorCode, path: &str, message: impl Into<String>) {
        self.0.push(ValidationError {
            code,
            path: path.to_owned(),
            message: message.into(),
        });
    }
}

fn field_path(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The object at `path`, with every field outside `known` reported.
fn object<'v>(
    value: &'v Value,
    path: &str,
    what: &str,
    known: &[&str],
    errors: &mut Errors,
) -> Option<&'v Map<String, Value>> {
    let Value::Object(map) = value else {
        let at = if path.is_empty() { "The request" } else { path };
        errors.push(
            ErrorCode::InvalidType,
            path,
            format!("{at} must be {what} (a JSON object), not {}.", json_type(value)),
        );
        return None;
    };
    for key in map.keys().filter(|key| !known.contains(&key.as_str())) {
        // The name is the request's: quoted and put in the path cut short.
        let key = excerpt(key);
        errors.push(
            ErrorCode::UnknownField,
            &field_path(path, &key),
            format!(
                "Unknown field \"{key}\"; the known fields here are {}.",
                known.join(", ")
            ),
        );
    }
    Some(map)
}

/// A required string field, cleaned with [`clean_field`].
fn string_field(map: &Map<String, Value>, parent: &str, field: &str, errors: &mut Errors) -> Option<String> {
    let path = field_path(parent, field);
    match map.get(field) {
        None | Some(Value::Null) => {
            errors.push(ErrorCode::MissingField, &path, format!("\"{field}\" is required."));
            None
        }
        Some(Value::String(text)) => Some(clean_field(text)),
        Some(other) => {
            errors.push(
                ErrorCode::InvalidType,
                &path,
                format!("\"{field}\" must be a string, not {}.", json_type(other)),
            );
            None
        }
    }
}

/// A required array field; `what` says what it holds ("2 to 4 options").
fn array<'v>(
    value: Option<&'v Value>,
    path: &str,
    field: &str,
    what: &str,
    errors: &mut Errors,
) -> Option<&'v Vec<Value>> {
    match value {
        None | Some(Value::Null) => {
            errors.push(
                ErrorCode::MissingField,
                path,
                format!("\"{field}\" is required: give {what}."),
            );
            None
        }
        Some(Value::Array(items)) => Some(items),
        Some(other) => {
            errors.push(
                ErrorCode::InvalidType,
                path,
                format!("\"{field}\" must be an array of {what}, not {}.", json_type(other)),
            );
            None
        }
    }
}

fn read_request(value: &Value, rule: TimeoutRule, errors: &mut Errors) -> Option<AskRequest> {
    let map = object(
        value,
        "",
        "the ask_user arguments",
        &["questions", "timeoutSeconds"],
        errors,
    )?;
    let questions = read_questions(map.get("questions"), errors);
    let timeout_seconds = read_timeout(map.get("timeoutSeconds"), rule, errors);
    Some(AskRequest {
        questions: questions?,
        timeout_seconds: timeout_seconds?,
    })
}

fn read_questions(value: Option<&Value>, errors: &mut Errors) -> Option<Vec<Question>> {
    let path = "questions";
    let items = array(value, path, "questions", "1 to 3 questions", errors)?;
    if !(MIN_QUESTIONS..=MAX_QUESTIONS).contains(&items.len()) {
        errors.push(
            ErrorCode::QuestionCount,
            path,
            format!(
                "Ask {MIN_QUESTIONS} to {MAX_QUESTIONS} questions at a time, not {}; prefer one.",
                items.len()
            ),
        );
    }
    let mut seen_ids = HashSet::new();
    let mut questions = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let question_path = format!("{path}[{index}]");
        if let Some(question) = read_question(item, &question_path, &mut seen_ids, errors) {
            questions.push(question);
        }
    }
    Some(questions)
}

fn read_question(value: &Value, path: &str, seen_ids: &mut HashSet<String>, errors: &mut Errors) -> Option<Question> {
    let map = object(
        value,
        path,
        "a question",
        &["id", "header", "question", "options", "multiSelect"],
        errors,
    )?;
    let id = read_id(map, path, errors);
    if let Some(id) = id.as_ref().filter(|id| !seen_ids.insert((*id).clone())) {
        errors.push(
            ErrorCode::DuplicateId,
            &field_path(path, "id"),
            format!("The id \"{id}\" is used by an earlier question; ids are answer keys and must be unique."),
        );
    }
    let header = read_header(map, path, errors);
    let question = read_question_text(map, path, errors);
    let options = read_options(map.get("options"), &field_path(path, "options"), errors);
    let multi_select = read_multi_select(map.get("multiSelect"), &field_path(path, "multiSelect"), errors);
    Some(Question {
        id: id?,
        header: header?,
        question: question?,
        options: options?,
        multi_select: multi_select?,
    })
}

fn read_id(map: &Map<String, Value>, parent: &str, errors: &mut Errors) -> Option<String> {
    let path = field_path(parent, "id");
    let id = match map.get("id") {
        Some(Value::String(id)) => id,
        Some(other @ (Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_))) => {
            errors.push(
                ErrorCode::InvalidType,
                &path,
                format!("\"id\" must be a string, not {}.", json_type(other)),
            );
            return None;
        }
        None | Some(Value::Null) => {
            errors.push(
                ErrorCode::MissingField,
                &path,
                "\"id\" is required: a snake_case answer key such as \"deploy_target\".",
            );
            return None;
        }
    };
    // Ids are answer keys: they are checked as given, never trimmed.
    let well_formed = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !well_formed || id.len() > MAX_ID_CHARS {
        errors.push(
            ErrorCode::InvalidId,
            &path,
            format!(
                "The id \"{}\" must be snake_case (a lowercase letter, then lowercase letters, digits or _), at most {MAX_ID_CHARS} characters.",
                excerpt(id)
            ),
        );
        return None;
    }
    Some(id.clone())
}

fn read_header(map: &Map<String, Value>, parent: &str, errors: &mut Errors) -> Option<String> {
    let header = string_field(map, parent, "header", errors)?;
    if header.is_empty() {
        errors.push(
            ErrorCode::EmptyHeader,
            &field_path(parent, "header"),
            "The header must not be empty: give a short label such as \"Deploy\".",
        );
        return None;
    }
    Some(truncate_graphemes(&header, MAX_HEADER_GRAPHEMES).trim_end().to_owned())
}

fn read_question_text(map: &Map<String, Value>, parent: &str, errors: &mut Errors) -> Option<String> {
    let question = string_field(map, parent, "question", errors)?;
    let length = char_len(&question);
    if question.is_empty() || length > MAX_QUESTION_CHARS {
        let problem = if question.is_empty() {
            "is empty".to_owned()
        } else {
            format!("has {length} characters")
        };
        errors.push(
            ErrorCode::InvalidQuestion,
            &field_path(parent, "question"),
            format!("The question {problem}; ask it in one sentence of 1 to {MAX_QUESTION_CHARS} characters."),
        );
        return None;
    }
    Some(question)
}

fn read_multi_select(value: Option<&Value>, path: &str, errors: &mut Errors) -> Option<bool> {
    match value {
        None | Some(Value::Null) => Some(false),
        Some(Value::Bool(multi_select)) => Some(*multi_select),
        Some(other) => {
            errors.push(
                ErrorCode::InvalidType,
                path,
                format!("\"multiSelect\" must be true or false, not {}.", json_type(other)),
            );
            None
        }
    }
}

fn read_options(value: Option<&Value>, path: &str, errors: &mut Errors) -> Option<Vec<QuestionOption>> {
    let items = array(value, path, "options", "2 to 4 options", errors)?;
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&items.len()) {
        errors.push(
            ErrorCode::OptionCount,
            path,
            format!("Give {MIN_OPTIONS} to {MAX_OPTIONS} options, not {}.", items.len()),
        );
    }
    let mut seen_labels = HashSet::new();
    let mut options = Vec::with_capacity(items.len());
    let mut complete = true;
    for (index, item) in items.iter().enumerate() {
        let option_path = format!("{path}[{index}]");
        match read_option(item, &option_path, errors) {
            Some(option) => {
                // Labels are told apart as a typed reply would be (spec §5):
                // two labels that normalize alike could never both be chosen
                // by name, nor told apart by a person who sees them (`café`
                // composed or not, one with an invisible character).
                if !seen_labels.insert(normalize(&option.label)) {
                    errors.push(
                        ErrorCode::DuplicateLabel,
                        &field_path(&option_path, "label"),
                        format!("The label \"{}\" reads the same as an earlier option's; labels must differ (case, the way an accent is encoded and invisible characters do not count).", option.label),
                    );
                }
                options.push(option);
            }
            None => complete = false,
        }
    }
    complete.then_some(options)
}

fn read_option(value: &Value, path: &str, errors: &mut Errors) -> Option<QuestionOption> {
    let map = object(value, path, "an option", &["label", "description"], errors)?;
    let label = read_label(map, path, errors);
    let description = read_description(map.get("description"), &field_path(path, "description"), errors);
    Some(QuestionOption {
        label: label?,
        description: description.ok()?,
    })
}

fn read_label(map: &Map<String, Value>, parent: &str, errors: &mut Errors) -> Option<String> {
    let label = string_field(map, parent, "label", errors)?;
    let path = field_path(parent, "label");
    let length = char_len(&label);
    if label.is_empty() || length > MAX_LABEL_CHARS {
        let problem = if label.is_empty() {
            "is empty".to_owned()
        } else {
            format!("has {length} characters")
        };
        errors.push(
            ErrorCode::InvalidLabel,
            &path,
            format!("The label {problem}; labels are 1 to {MAX_LABEL_CHARS} characters."),
        );
        return None;
    }
    if normalize(&label).is_empty() {
        errors.push(
            ErrorCode::InvalidLabel,
            &path,
            format!("The label \"{label}\" has nothing a person could type to choose it; use words or a number."),
        );
        return None;
    }
    if is_other_label(&label) {
        errors.push(
            ErrorCode::OtherOptionNotAllowed,
            &path,
            "Do not add an \"Other\" option: askgate always offers the person a way to answer in their own words.",
        );
        return None;
    }
    Some(label)
}

/// Whether a label is the system's own free-text choice: `Other` in any case,
/// also `Other…`, `Other...`, `Other:` and `其他`.
fn is_other_label(label: &str) -> bool {
    let normalized = normalize(label);
    let bare = normalized.trim_end_matches(['…', '.', ':', ' ']);
    bare == "other" || bare == "其他"
}

/// A description problem, already reported.
struct Reported;

fn read_description(value: Option<&Value>, path: &str, errors: &mut Errors) -> Result<Option<String>, Reported> {
    let description = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => clean_field(text),
        Some(other) => {
            errors.push(
                ErrorCode::InvalidType,
                path,
                format!("\"description\" must be a string, not {}.", json_type(other)),
            );
            return Err(Reported);
        }
    };
    let length = char_len(&description);
    if length > MAX_DESCRIPTION_CHARS {
        errors.push(
            ErrorCode::InvalidDescription,
            path,
            format!("The description has {length} characters; keep it to {MAX_DESCRIPTION_CHARS}."),
        );
        return Err(Reported);
    }
    Ok((!description.is_empty()).then_some(description))
}

fn read_timeout(value: Option<&Value>, rule: TimeoutRule, errors: &mut Errors) -> Option<u32> {
    let path = "timeoutSeconds";
    let seconds = match value {
        None | Some(Value::Null) => return Some(DEFAULT_TIMEOUT_SECONDS),
        Some(Value::Number(number)) => number.as_f64(),
        Some(_) => None,
    };
    match seconds {
        // 60 and 60.0 are both whole numbers; 60.5 is not.
        Some(seconds) if seconds.is_finite() && seconds.fract() == 0.0 => {
            let max = match rule {
                TimeoutRule::Clamp => MAX_TIMEOUT_SECONDS,
                TimeoutRule::UpTo(max) if seconds <= f64::from(max) => max,
                TimeoutRule::UpTo(max) => {
                    let given = excerpt(&value.map_or_else(String::new, Value::to_string));
                    errors.push(
                        ErrorCode::InvalidTimeout,
                        path,
                        format!(
                            "\"timeoutSeconds\" is {given}, longer than this agent may wait: its max_timeout is {max} s ({}). Ask for at most {max} seconds.",
                            format_duration(max)
                        ),
                    );
                    return None;
                }
            };
            let clamped = seconds.clamp(f64::from(MIN_TIMEOUT_SECONDS), f64::from(max));
            // The clamp above puts the value in 30..=max (a u32), so the cast is exact.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(clamped as u32)
        }
        _ => {
            let given = excerpt(&value.map_or_else(String::new, Value::to_string));
            errors.push(
                ErrorCode::InvalidTimeout,
                path,
                format!(
                    "\"timeoutSeconds\" must be a whole number of seconds (it is clamped to {MIN_TIMEOUT_SECONDS}..={MAX_TIMEOUT_SECONDS}), not {given}."
                ),
            );
            None
        }
    }
}
