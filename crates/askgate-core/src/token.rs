//! Question ids and the opaque tokens that buttons carry (spec §6).
//!
//! A token names the question and what the button does, never the label, and
//! fits Telegram's 64-byte `callback_data` whatever the question id:
//! `ag1:<question id>:<action>`, at most 38 bytes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest question id, in bytes: keeps every token within 38 bytes.
pub const MAX_QUESTION_ID_BYTES: usize = 32;

const TOKEN_PREFIX: &str = "ag1";

/// The id askgate gives a question: 1 to 32 ASCII letters, digits, `_` or `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuestionId(String);

/// A string that cannot be a question id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a question id is 1 to 32 ASCII letters, digits, '_' or '-'")]
pub struct InvalidQuestionId;

impl QuestionId {
    /// Checks a question id.
    pub fn parse(id: &str) -> Result<Self, InvalidQuestionId> {
        let well_formed = !id.is_empty()
            && id.len() <= MAX_QUESTION_ID_BYTES
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if well_formed {
            Ok(Self(id.to_owned()))
        } else {
            Err(InvalidQuestionId)
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QuestionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for QuestionId {
    type Error = InvalidQuestionId;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::parse(&id)
    }
}

impl From<QuestionId> for String {
    fn from(id: QuestionId) -> Self {
        id.0
    }
}

impl FromStr for QuestionId {
    type Err = InvalidQuestionId;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Self::parse(id)
    }
}

/// What a button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", content = "index", rename_all = "snake_case")]
pub enum ButtonAction {
    /// Chooses the option with this index.
    Choose(u8),
    /// Opens a free-text input (Other…).
    Other,
    /// Opens a form with one field per question (Answer…).
    Answer,
    /// Skips the question.
    Skip,
}

/// The payload of a button: which question, and what the button does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ButtonToken {
    /// The question the button belongs to.
    pub question: QuestionId,
    /// What the button does.
    pub action: ButtonAction,
}

/// A button payload that askgate did not make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an askgate button token")]
pub struct InvalidToken;

impl ButtonToken {
    /// The token as it goes into `callback_data`, `custom_id` or `action_id`.
    pub fn encode(&self) -> String {
        let action = match self.action {
            ButtonAction::Choose(index) => index.to_string(),
            ButtonAction::Other => "o".to_owned(),
            ButtonAction::Answer => "a".to_owned(),
            ButtonAction::Skip => "s".to_owned(),
        };
        format!("{TOKEN_PREFIX}:{}:{action}", self.question)
    }

    /// Reads a token back; anything askgate did not make is refused.
    pub fn decode(token: &str) -> Result<Self, InvalidToken> {
        let mut parts = token.split(':');
        let (Some(TOKEN_PREFIX), Some(question), Some(action), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(InvalidToken);
        };
        let question = QuestionId::parse(question).map_err(|_| InvalidToken)?;
        let action = match action {
            "o" => ButtonAction::Other,
            "a" => ButtonAction::Answer,
            "s" => ButtonAction::Skip,
            // Only the canonical spelling: "01" or "+1" would make two tokens for one button.
            digits if digits.len() == 1 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                ButtonAction::Choose(digits.parse().map_err(|_| InvalidToken)?)
            }
            _ => return Err(InvalidToken),
        };
        Ok(Self { question, action })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_fit_telegram_callback_data() {
        let longest = QuestionId::parse(&"Z".repeat(MAX_QUESTION_ID_BYTES)).unwrap();
        for action in [
            ButtonAction::Choose(0),
            ButtonAction::Choose(3),
            ButtonAction::Other,
            ButtonAction::Answer,
            ButtonAction::Skip,
        ] {
            let token = ButtonToken {
                question: longest.clone(),
                action,
            };
            let encoded = token.encode();
            assert!(encoded.len() <= 38, "{encoded} is {} bytes", encoded.len());
            assert_eq!(ButtonToken::decode(&encoded), Ok(token));
        }
    }

    #[test]
    fn foreign_payloads_are_refused() {
        for token in [
            "",
            "ag1",
            "ag1:q1",
            "ag1:q1:",
            "ag1:q1:01",
            "ag1:q1:x",
            "ag2:q1:0",
            "ag1::0",
            "ag1:q:1:0",
            "ag1:q 1:0",
        ] {
            assert_eq!(ButtonToken::decode(token), Err(InvalidToken), "{token:?}");
        }
    }

    #[test]
    fn question_ids_are_bounded() {
        assert!(QuestionId::parse("01JABCDEF_xyz-9").is_ok());
        assert!(QuestionId::parse("").is_err());
        assert!(QuestionId::parse(&"a".repeat(33)).is_err());
        assert!(QuestionId::parse("a:b").is_err());
        assert!(serde_json::from_str::<QuestionId>("\"a b\"").is_err());
    }
}
