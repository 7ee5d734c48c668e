//! The render decision: one pure function from a request and a channel's
//! declared [`Capabilities`] to a [`Presentation`] (spec §4).
//!
//! Adapters declare what their platform can show and translate the
//! presentation into its payload; they never choose between buttons and text.

use serde::{Deserialize, Serialize};

use crate::chrome::Locale;
use crate::layout::{Reading, button_text, prompt_parts_for};
use crate::request::AskRequest;
use crate::text::char_len;
use crate::token::{ButtonAction, ButtonToken, QuestionId};

/// What a channel can show, as its adapter declares it.
///
/// Built with [`Capabilities::text`] and the `with_*` methods, so that a
/// capability added later has a default and breaks no adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
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
    /// Whether typed messages reach askgate at all. Some surfaces never
    /// deliver them (Discord's interactions endpoint, a Discord bot without
    /// the Message Content intent): there a text prompt carries Answer…
    /// (a form) and Skip instead of asking for a typed reply.
    pub typed_replies: bool,
    /// Forms (a modal with one field per question) and their limits; `None`
    /// where the platform has none.
    pub forms: Option<FormLimits>,
}

impl Capabilities {
    /// A surface that shows text of up to `max_message_chars` characters and
    /// reads typed replies: no buttons, no edits, no private notices, no forms.
    pub fn text(max_message_chars: usize) -> Self {
        Self {
            buttons: None,
            max_message_chars,
            edit_messages: false,
            free_text_input: FreeTextInput::None,
            private_notices: false,
            typed_replies: true,
            forms: None,
        }
    }

    /// With native buttons of these limits.
    #[must_use]
    pub fn with_buttons(mut self, limits: ButtonLimits) -> Self {
        self.buttons = Some(limits);
        self
    }

    /// With messages that can be edited in place.
    #[must_use]
    pub fn with_edits(mut self) -> Self {
        self.edit_messages = true;
        self
    }

    /// With this way of collecting free text after Other….
    #[must_use]
    pub fn with_free_text(mut self, input: FreeTextInput) -> Self {
        self.free_text_input = input;
        self
    }

    /// With notices only the acting person sees.
    #[must_use]
    pub fn with_private_notices(mut self) -> Self {
        self.private_notices = true;
        self
    }

    /// Typed messages never arrive on this surface.
    #[must_use]
    pub fn without_typed_replies(mut self) -> Self {
        self.typed_replies = false;
        self
    }

    /// With forms of these limits.
    #[must_use]
    pub fn with_forms(mut self, limits: FormLimits) -> Self {
        self.forms = Some(limits);
        self
    }
}

/// The limits of a channel's native buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ButtonLimits {
    /// Most buttons on one message (options, Other… and Skip together).
    pub max_buttons: usize,
    /// Longest button text, in characters.
    pub max_label_chars: usize,
    /// Longest button payload, in bytes.
    pub max_token_bytes: usize,
}

impl ButtonLimits {
    /// Limits of `max_buttons` buttons a message, `max_label_chars` characters
    /// of text and `max_token_bytes` bytes of payload each.
    pub fn new(max_buttons: usize, max_label_chars: usize, max_token_bytes: usize) -> Self {
        Self {
            max_buttons,
            max_label_chars,
            max_token_bytes,
        }
    }
}

/// The limits of a channel's forms (Discord modals, Slack views).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FormLimits {
    /// Most fields in one form (Discord: 5).
    pub max_fields: usize,
    /// Longest form title, in characters (Discord 45, Slack 24).
    pub max_title_chars: usize,
    /// Longest field label, in characters (Discord 45, Slack 2000).
    pub max_label_chars: usize,
    /// Longest field placeholder, in characters (Discord 100, Slack 150).
    pub max_placeholder_chars: usize,
    /// Whether a multi-select question can be a set of checkboxes.
    pub checkboxes: bool,
}

impl FormLimits {
    /// Forms of at most `max_fields` text fields, with these text limits and
    /// no checkboxes.
    pub fn new(
        max_fields: usize,
        max_title_chars: usize,
        max_label_chars: usize,
        max_placeholder_chars: usize,
    ) -> Self {
        Self {
            max_fields,
            max_title_chars,
            max_label_chars,
            max_placeholder_chars,
            checkboxes: false,
        }
    }

    /// With checkboxes for multi-select questions.
    #[must_use]
    pub fn with_checkboxes(mut self) -> Self {
        self.checkboxes = true;
        self
    }
}

/// How a channel collects free text after Other….
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub struct TextPrompt {
    /// The messages to send, in order; one unless the text is longer than
    /// the channel's message limit. A reply to any of them is a reply to the prompt.
    pub parts: Vec<String>,
    /// Answer… (opens a form with one field per question) and Skip, on a
    /// channel with buttons and forms; they go on the last part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<TextActions>,
}

impl TextPrompt {
    /// A text prompt of these parts, without buttons.
    pub fn new(parts: Vec<String>) -> Self {
        Self { parts, actions: None }
    }

    /// The index of the part that carries the Answer… and Skip buttons.
    pub fn actions_part(&self) -> Option<usize> {
        self.actions.as_ref().map(|_| self.parts.len().saturating_sub(1))
    }
}

/// The buttons of a text prompt on a channel with forms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextActions {
    /// Answer…: opens the form.
    pub answer: ChromeButton,
    /// Skip.
    pub skip: ChromeButton,
}

/// The presentation of `request` on a channel with `capabilities`, for the
/// question `question` (its buttons carry that id) in `locale`.
///
/// Native buttons exactly when the request is one single-select question and
/// the channel's buttons can carry it whole: enough buttons for every option
/// plus Other… and Skip, every label within the button text limit, every
/// token within the payload limit. Otherwise readable text, which loses
/// nothing; on a channel with buttons and forms it carries Answer… (a form
/// with one field per question) and Skip, and where typed messages never
/// arrive its instructions point at those buttons instead of a typed reply.
pub fn render(
    request: &AskRequest,
    capabilities: &Capabilities,
    question: &QuestionId,
    locale: Locale,
) -> Presentation {
    if let Some(prompt) = buttons(request, capabilities, question, locale) {
        return Presentation::Buttons(prompt);
    }
    let actions = text_actions(request, capabilities, question, locale);
    let reading = if capabilities.typed_replies || actions.is_none() {
        Reading::Typed
    } else {
        Reading::Form
    };
    Presentation::Text(TextPrompt {
        parts: prompt_parts_for(request, locale, capabilities.max_message_chars, reading),
        actions,
    })
}

/// Answer… and Skip, when the channel can show them and its form can carry
/// every question.
fn text_actions(
    request: &AskRequest,
    capabilities: &Capabilities,
    id: &QuestionId,
    locale: Locale,
) -> Option<TextActions> {
    let limits = capabilities.buttons?;
    let forms = capabilities.forms?;
    if request.questions.len() > forms.max_fields || limits.max_buttons < 2 {
        return None;
    }
    let chrome = locale.chrome();
    let button = |label: &str, action| ChromeButton {
        label: label.to_owned(),
        token: ButtonToken {
            question: id.clone(),
            action,
        }
        .encode(),
    };
    let actions = TextActions {
        answer: button(chrome.answer_button(), ButtonAction::Answer),
        skip: button(chrome.skip_button(), ButtonAction::Skip),
    };
    let fits = [&actions.answer, &actions.skip]
        .iter()
        .all(|b| char_len(&b.label) <= limits.max_label_chars && b.token.len() <= limits.max_token_bytes);
    fits.then_some(actions)
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
