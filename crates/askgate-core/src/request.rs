//! The normalized `ask_user` request (spec §2), as [`crate::validate`] produces it.

use serde::{Deserialize, Serialize};

/// Fewest questions in one request.
pub const MIN_QUESTIONS: usize = 1;
/// Most questions in one request.
pub const MAX_QUESTIONS: usize = 3;
/// Fewest options of one question.
pub const MIN_OPTIONS: usize = 2;
/// Most options of one question.
pub const MAX_OPTIONS: usize = 4;
/// Longest question id, in characters.
pub const MAX_ID_CHARS: usize = 64;
/// A header is cut to this many user-perceived characters.
pub const MAX_HEADER_GRAPHEMES: usize = 12;
/// Longest question text, in characters.
pub const MAX_QUESTION_CHARS: usize = 300;
/// Longest option label, in characters.
pub const MAX_LABEL_CHARS: usize = 64;
/// Longest option description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 150;
/// Longest answer in the person's own words, in characters, on every
/// surface: a longer one is refused with a message saying so, never cut.
pub const MAX_FREE_TEXT_CHARS: usize = 2000;
/// The timeout when the request names none.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 900;
/// Shortest timeout; shorter requests are raised to it.
pub const MIN_TIMEOUT_SECONDS: u32 = 30;
/// Longest timeout; longer requests are lowered to it.
pub const MAX_TIMEOUT_SECONDS: u32 = 3600;
/// Longest timeout askgate keeps at all: the most an agent's `max_timeout`
/// may allow a non-blocking question (`POST /v1/questions`), a week. The
/// `ask_user` contract itself stays at [`MAX_TIMEOUT_SECONDS`].
pub const LONGEST_TIMEOUT_SECONDS: u32 = 7 * 86_400;

/// A validated, normalized `ask_user` request.
///
/// Only [`crate::validate`] should build one from agent input: everything in
/// askgate that reads a request (rendering, reply reading) relies on its rules
/// (1–3 questions, 2–4 options, unique ids and labels). `Deserialize` exists
/// to read back a request that askgate itself stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskRequest {
    /// The questions, in the order the agent gave them.
    pub questions: Vec<Question>,
    /// Seconds the person has to answer: clamped to 30..=3600 by
    /// [`crate::validate`], up to the agent's limit (at most
    /// [`LONGEST_TIMEOUT_SECONDS`]) by [`crate::validate::validate_with_max_timeout`].
    pub timeout_seconds: u32,
}

/// One question of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Question {
    /// The answer key, `^[a-z][a-z0-9_]*$`.
    pub id: String,
    /// A short label, at most 12 user-perceived characters.
    pub header: String,
    /// The question itself, one line.
    pub question: String,
    /// The options, in the agent's order (the recommended one first).
    pub options: Vec<QuestionOption>,
    /// Whether the person may choose several options.
    pub multi_select: bool,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionOption {
    /// The label, as returned to the agent when chosen.
    pub label: String,
    /// An explanation shown with the option; never empty when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl AskRequest {
    /// The question with this id.
    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|question| question.id == id)
    }

    /// Whether askgate shows native buttons for this request on a channel
    /// that has them: exactly one question, single-select (spec §4).
    pub fn is_single_choice(&self) -> bool {
        matches!(self.questions.as_slice(), [only] if !only.multi_select)
    }
}
