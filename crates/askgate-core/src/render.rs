//! The render decision: one pure function from a request and a channel's
//! declared [`Capabilities`] to a [`Presentation`] (spec §4).
//!
//! Adapters declare what their platform can show and translate the
//! presentation into its payload; they never choose between buttons and text.

use serde::{Deserialize, Serialize};

use crate::chrome::Locale;
use crate::layout::{button_text, prompt_parts};
use crate::request::AskRequest;
use crate::text::char_len;
use crate::token::{ButtonAction, ButtonToken, QuestionId};

/// What a channel can show, as its adapter declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Native buttons and their limits; `None` for a text-only channel.
    pub buttons: Option<ButtonLimits>,
    /// Longest message, in characters of unescaped text. An adapter whose
    /// escaping adds characters declares a limit that leaves room for it.
    pub max_message_chars: usize,
    /// Whether a sent message can be edited in place (spec §7).
    pub edit_messages: bool,
    /// How the person types an answer of their own after tapping Other….
    pub free_text_input: FreeTextInput,
    /// Whether a notice can be shown to one person only (a callback alert,
    /// an ephemeral message); otherwise refusals are sent as replies.
    pub private_notices: bool,
}

/// The limits of a channel's native buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ButtonLimits {
    /// Most buttons on one message (options, Other… and Skip together).
    pub max_buttons: usize,
    /// Longest button text, in characters.
    pub max_label_chars: usize,
    /// Longest button payload, in bytes.
    pub max_token_bytes: usize,
}

/// How a channel collects free text after Other….
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreeTextInput {
    /// A message that asks the person to reply (Telegram force-reply).
    ForceReply,
    /// A dialog with one text field (Discord and Slack modals).
    Modal,
    /// A text field on the same page (askgate's web page).
    Inline,
    /// No such input: the person types a reply to the message instead.
    None,
}

/// How a prompt is shown: the outcome of [`render`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Presentation {
    /// One single-select question with native buttons.
    Buttons(ButtonPrompt),
    /// Readable text, read back by [`crate::reply`].
    Text(TextPrompt),
}

/// A question shown with native buttons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ButtonPrompt {
    /// The message text: heading, header and question, option descriptions.
    pub text: String,
    /// The question's header, for adapters that lay the text out themselves.
    pub header: String,
    /// The question, likewise.
    pub question: String,
    /// One button per option, in order; the first is the primary one.
    pub options: Vec<OptionButton>,
    /// Other…, when the channel can collect free text.
    pub other: Option<ChromeButton>,
    /// Skip.
    pub skip: ChromeButton,
}

/// A button that chooses an option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionButton {
    /// The option's label.
    pub label: String,
    /// The option's description, already in [`ButtonPrompt::text`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The button payload.
    pub token: String,
    /// Whether to show it as the primary button (the recommended, first one).
    pub primary: bool,
}

/// A button askgate adds itself (Other…, Skip).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChromeButton {
    /// The button text, in the recipient's locale.
    pub label: String,
    /// The button payload.
    pub token: String,
}

/// A prompt shown as readable text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPrompt {
    /// The messages to send, in order; one unless the text is longer than
    /// the channel's message limit. A reply to any of them is a reply to the prompt.
    pub parts: Vec<String>,
}

/// The presentation of `request` on a channel with `capabilities`, for the
/// question `question` (its buttons carry that id) in `locale`.
///
/// Native buttons exactly when the request is one single-select question and
/// the channel's buttons can carry it whole: enough buttons for every option
/// plus Other… and Skip, every label within the button text limit, every
/// token within the payload limit. Otherwise readable text, which loses nothing.
pub fn render(
    request: &AskRequest,
    capabilities: &Capabilities,
    question: &QuestionId,
    locale: Locale,
) -> Presentation {
    match buttons(request, capabilities, question, locale) {
        Some(prompt) => Presentation::Buttons(prompt),
        None => Presentation::Text(TextPrompt {
            parts: prompt_parts(request, locale, capabilities.max_message_chars),
        }),
    }
}

fn buttons(request: &AskRequest, capabilities: &Capabilities, id: &QuestionId, locale: Locale) -> Option<ButtonPrompt> {
    let limits = capabilities.buttons?;
    let [only] = request.questions.as_slice() else {
        return None;
    };
    if only.multi_select {
        return None;
    }
    let chrome = locale.chrome();
    let token = |action| {
        ButtonToken {
            question: id.clone(),
            action,
        }
        .encode()
    };
    let offers_other = capabilities.free_text_input != FreeTextInput::None;
    let other = offers_other.then(|| ChromeButton {
        label: chrome.other_button().to_owned(),
        token: token(ButtonAction::Other),
    });
    let skip = ChromeButton {
        label: chrome.skip_button().to_owned(),
        token: token(ButtonAction::Skip),
    };
    let mut options = Vec::with_capacity(only.options.len());
    for (index, option) in only.options.iter().enumerate() {
        options.push(OptionButton {
            label: option.label.clone(),
            description: option.description.clone(),
            token: token(ButtonAction::Choose(u8::try_from(index).ok()?)),
            primary: index == 0,
        });
    }
    let button_count = options.len() + 1 + usize::from(other.is_some());
    let labels = options
        .iter()
        .map(|o| o.label.as_str())
        .chain(other.iter().map(|o| o.label.as_str()));
    let tokens = options
        .iter()
        .map(|o| o.token.as_str())
        .chain(other.iter().map(|o| o.token.as_str()));
    let text = button_text(only, request.timeout_seconds, locale);
    let fits = button_count <= limits.max_buttons
        && labels
            .chain([skip.label.as_str()])
            .all(|label| char_len(label) <= limits.max_label_chars)
        && tokens
            .chain([skip.token.as_str()])
            .all(|token| token.len() <= limits.max_token_bytes)
        && char_len(&text) <= capabilities.max_message_chars;
    fits.then(|| ButtonPrompt {
        text,
        header: only.header.clone(),
        question: only.question.clone(),
        options,
        other,
        skip,
    })
}
