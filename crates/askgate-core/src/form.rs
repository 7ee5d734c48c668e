//! Forms: what Answer… opens on a channel that has them (a Discord modal, a
//! Slack view), one field per question, and what a submission means.
//!
//! Core decides the form's words within the channel's [`FormLimits`]; the
//! adapter lays them out. A submitted field is read by the same rules as a
//! typed reply to that question alone ([`crate::ReplyReader::read_form`]).

use serde::{Deserialize, Serialize};

use crate::chrome::Locale;
use crate::render::FormLimits;
use crate::request::AskRequest;
use crate::token::{ButtonAction, ButtonToken, QuestionId};

/// A form with one field per question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Form {
    /// The form's title, within the channel's limit.
    pub title: String,
    /// The token the submission carries back (the Answer… button's).
    pub token: String,
    /// The label of the button that sends it.
    #[serde(default)]
    pub submit: String,
    /// One field per question, in question order.
    pub fields: Vec<FormField>,
}

/// One question's field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FormField {
    /// The question's id: the submission names the field by it.
    pub id: String,
    /// The label: header and question, within the channel's limit.
    pub label: String,
    /// The placeholder: the numbered options, within the channel's limit.
    pub placeholder: String,
    /// Whether the question takes several options.
    pub multi_select: bool,
    /// The options as checkboxes (labels, by option index), for a
    /// multi-select question on a channel with checkboxes; empty otherwise.
    /// The person may still type their own words in the text field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkboxes: Vec<String>,
}

/// What a person submitted in one field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FormValue {
    /// The question's id ([`FormField::id`]).
    pub id: String,
    /// What they typed (empty if nothing).
    #[serde(default)]
    pub text: String,
    /// The checkboxes they ticked, by option index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checked: Vec<usize>,
}

impl FormValue {
    /// A typed value for question `id`.
    pub fn typed(id: &str, text: &str) -> Self {
        Self {
            id: id.to_owned(),
            text: text.to_owned(),
            checked: Vec::new(),
        }
    }

    /// With these checkboxes ticked (option indexes).
    #[must_use]
    pub fn with_checked(mut self, checked: Vec<usize>) -> Self {
        self.checked = checked;
        self
    }
}

/// The form for `request` (question `question`) in `locale`, or `None` when
/// the channel's forms cannot hold one field per question.
pub fn form(request: &AskRequest, limits: &FormLimits, question: &QuestionId, locale: Locale) -> Option<Form> {
    if request.questions.len() > limits.max_fields {
        return None;
    }
    let chrome = locale.chrome();
    let fields = request
        .questions
        .iter()
        .map(|q| {
            let mark = if q.multi_select { chrome.choose_any() } else { "" };
            let label = format!("{}{mark} — {}", q.header, q.question);
            let numbered: Vec<String> = q
                .options
                .iter()
                .enumerate()
                .map(|(index, option)| format!("{}) {}", index + 1, option.label))
                .collect();
            let placeholder = format!("{} — {}", numbered.join(" · "), chrome.form_placeholder_tail());
            FormField {
                id: q.id.clone(),
                label: limits.label().ellipsize(&label),
                placeholder: limits.placeholder().ellipsize(&placeholder),
                multi_select: q.multi_select,
                checkboxes: if q.multi_select && limits.checkboxes {
                    q.options.iter().map(|option| option.label.clone()).collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    Some(Form {
        title: limits.title().ellipsize(chrome.form_title()),
        submit: limits.title().ellipsize(chrome.submit_button()),
        token: ButtonToken {
            question: question.clone(),
            action: ButtonAction::Answer,
        }
        .encode(),
        fields,
    })
}
