//! Answers and the tool result the agent gets (spec §3).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::request::{AskRequest, MAX_FREE_TEXT_CHARS};
use crate::text::char_len;

/// One element of an answer: a chosen option or the person's own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerItem {
    /// An option, by its index in the question and its normalized label.
    Option {
        /// Index into the question's options.
        index: usize,
        /// The label exactly as the normalized request has it.
        label: String,
    },
    /// The person's own words, trimmed.
    FreeText {
        /// What the person wrote.
        text: String,
    },
}

impl AnswerItem {
    /// The value the agent receives: the label or the person's words.
    pub fn value(&self) -> &str {
        match self {
            Self::Option { label, .. } => label,
            Self::FreeText { text } => text,
        }
    }

    /// `option` or `free_text`, as the question resource names the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Option { .. } => "option",
            Self::FreeText { .. } => "free_text",
        }
    }
}

/// Answers by question id, in question order.
///
/// The same value serves while a multi-question prompt is being answered over
/// several replies (then some questions are missing) and once it is complete;
/// it is plain data, so the engine stores it between replies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Answers(IndexMap<String, Vec<AnswerItem>>);

impl Answers {
    /// No answers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The answer to the question with this id.
    pub fn get(&self, id: &str) -> Option<&[AnswerItem]> {
        self.0.get(id).map(Vec::as_slice)
    }

    /// Sets (or overwrites) one question's answer, keeping question order.
    pub fn set(&mut self, request: &AskRequest, id: &str, items: Vec<AnswerItem>) {
        self.0.insert(id.to_owned(), items);
        let order = |key: &String| request.questions.iter().position(|question| &question.id == key);
        self.0.sort_by(|a, _, b, _| order(a).cmp(&order(b)));
    }

    /// Whether every question of `request` has an answer.
    pub fn is_complete(&self, request: &AskRequest) -> bool {
        request
            .questions
            .iter()
            .all(|question| self.0.contains_key(&question.id))
    }

    /// The ids of the questions still without an answer, in question order.
    pub fn missing<'r>(&self, request: &'r AskRequest) -> Vec<&'r str> {
        request
            .questions
            .iter()
            .filter(|question| !self.0.contains_key(&question.id))
            .map(|question| question.id.as_str())
            .collect()
    }

    /// Question ids and their answers, in question order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[AnswerItem])> {
        self.0.iter().map(|(id, items)| (id.as_str(), items.as_slice()))
    }

    /// The first answer in the person's own words that is longer than
    /// [`MAX_FREE_TEXT_CHARS`]: its question id and its length in characters.
    pub fn too_long(&self) -> Option<(&str, usize)> {
        self.iter().find_map(|(id, items)| {
            items.iter().find_map(|item| match item {
                AnswerItem::FreeText { text } => {
                    let chars = char_len(text);
                    (chars > MAX_FREE_TEXT_CHARS).then_some((id, chars))
                }
                AnswerItem::Option { .. } => None,
            })
        })
    }

    /// Whether nothing is answered yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values the agent receives, by question id.
    pub fn values(&self) -> AnswerValues {
        AnswerValues {
            answers: self
                .0
                .iter()
                .map(|(id, items)| (id.clone(), items.iter().map(|item| item.value().to_owned()).collect()))
                .collect(),
        }
    }
}

/// The `answers` object of the tool result: `{"answers": {"id": ["value"]}}`.
/// The nesting is the contract's (spec §3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerValues {
    /// Every answer is an array, even for a single-select question.
    pub answers: IndexMap<String, Vec<String>>,
}

/// What `ask_user` returns to the agent; exactly these three shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolResult {
    /// The person answered every question.
    Answered {
        /// The answers by question id.
        answers: AnswerValues,
    },
    /// Expired, skipped, cancelled, or the run was aborted: the agent goes on
    /// on its own best judgment.
    NoAnswer,
    /// The question could not be shown at all.
    DeliveryFailed,
}

impl From<&Answers> for ToolResult {
    fn from(answers: &Answers) -> Self {
        Self::Answered {
            answers: answers.values(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_results_have_exactly_the_contract_shapes() {
        let mut values = AnswerValues::default();
        values
            .answers
            .insert("deploy_target".into(), vec!["Staging (Recommended)".into()]);
        let answered = ToolResult::Answered { answers: values };
        assert_eq!(
            serde_json::to_value(&answered).unwrap(),
            json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}})
        );
        assert_eq!(
            serde_json::to_value(ToolResult::NoAnswer).unwrap(),
            json!({"status": "no_answer"})
        );
        assert_eq!(
            serde_json::to_value(ToolResult::DeliveryFailed).unwrap(),
            json!({"status": "delivery_failed"})
        );
        let back: ToolResult = serde_json::from_value(serde_json::to_value(&answered).unwrap()).unwrap();
        assert_eq!(back, answered);
    }

    #[test]
    fn answer_items_name_their_kind() {
        let option = AnswerItem::Option {
            index: 0,
            label: "Staging".into(),
        };
        let text = AnswerItem::FreeText {
            text: "next week".into(),
        };
        assert_eq!(
            serde_json::to_value(&option).unwrap(),
            json!({"kind": "option", "index": 0, "label": "Staging"})
        );
        assert_eq!(
            serde_json::to_value(&text).unwrap(),
            json!({"kind": "free_text", "text": "next week"})
        );
        assert_eq!((option.kind(), text.kind()), ("option", "free_text"));
    }
}
