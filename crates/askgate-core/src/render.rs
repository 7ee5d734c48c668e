//! The render decision: one pure function from a request and a channel's
//! declared [`Capabilities`] to a [`Presentation`] (spec §4).
//!
//! Adapters declare what their platform can show and translate the
//! presentation into its payload; they never choose between buttons and text.

use serde::{Deserialize, Serialize};

use crate::chrome::Locale;
use crate::layout::{Reading, button_text_by, prompt_parts_by};
use crate::request::AskRequest;
use crate::text::{Limit, Unit};
use crate::token::{ButtonAction, ButtonToken, QuestionId};
use crate::when::Deadline;

/// How a channel counts a message askgate gives it: the length, in the
/// platform's own unit, of the text once the adapter has escaped it for its
/// markup (Discord's backslashes, Telegram's defused mentions, Slack's
/// entities). Every limit is checked on what the platform will count, so
/// that escaping never pushes a message over it.
#[derive(Clone, Copy)]
pub struct Measure(fn(&str) -> usize);

impl Measure {
    /// A measure that counts with `len`.
    pub const fn new(len: fn(&str) -> usize) -> Self {
        Self(len)
    }

    /// Unicode code points of the text as given: a channel that escapes nothing.
    pub const fn code_points() -> Self {
        Self(|text| text.chars().count())
    }

    /// The length of `text` as the platform will count it.
    pub fn len(self, text: &str) -> usize {
        (self.0)(text)
    }
}

impl Default for Measure {
    fn default() -> Self {
        Self::code_points()
    }
}

impl std::fmt::Debug for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Measure(..)")
    }
}

impl PartialEq for Measure {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for Measure {}

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
    /// Longest message, as [`Capabilities::measure`] counts it: in the
    /// platform's unit, after the adapter's escaping.
    pub max_message_chars: usize,
    /// How the platform counts a message's text once escaped (code points
    /// of the text as given unless the adapter declares otherwise).
    #[serde(skip)]
    pub measure: Measure,
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
            measure: Measure::default(),
            edit_messages: false,
            free_text_input: FreeTextInput::None,
            private_notices: false,
            typed_replies: true,
            forms: None,
        }
    }

    /// Messages counted by `measure` (the platform's unit, after escaping).
    #[must_use]
    pub fn with_measure(mut self, measure: Measure) -> Self {
        self.measure = measure;
        self
    }

    /// Whether `text` fits in one message, counted as the platform will.
    pub fn message_fits(&self, text: &str) -> bool {
        self.measure.len(text) <= self.max_message_chars
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
    /// Longest button text, in [`ButtonLimits::unit`].
    pub max_label_chars: usize,
    /// Longest button payload, in bytes.
    pub max_token_bytes: usize,
    /// How the platform counts a button's text.
    #[serde(default = "code_points")]
    pub unit: Unit,
}

fn code_points() -> Unit {
    Unit::CodePoints
}

impl ButtonLimits {
    /// Limits of `max_buttons` buttons a message, `max_label_chars` characters
    /// of text and `max_token_bytes` bytes of payload each.
    pub fn new(max_buttons: usize, max_label_chars: usize, max_token_bytes: usize) -> Self {
        Self {
            max_buttons,
            max_label_chars,
            max_token_bytes,
            unit: Unit::CodePoints,
        }
    }

    /// With button texts counted in `unit`.
    #[must_use]
    pub fn counted_in(mut self, unit: Unit) -> Self {
        self.unit = unit;
        self
    }

    /// The limit on one button's text.
    pub fn label(&self) -> Limit {
        Limit::new(self.max_label_chars, self.unit)
    }
}

/// The limits of a channel's forms (Discord modals, Slack views).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FormLimits {
    /// Most fields in one form (Discord: 5).
    pub max_fields: usize,
    /// Longest form title, in [`FormLimits::unit`] (Discord 45, Slack 24).
    pub max_title_chars: usize,
    /// Longest field label (Discord 45, Slack 2000).
    pub max_label_chars: usize,
    /// Longest field placeholder (Discord 100, Slack 150).
    pub max_placeholder_chars: usize,
    /// Whether a multi-select question can be a set of checkboxes.
    pub checkboxes: bool,
    /// How the platform counts these texts (Discord: code points; Slack:
    /// UTF-16 units).
    #[serde(default = "code_points")]
    pub unit: Unit,
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
            unit: Unit::CodePoints,
        }
    }

    /// With these texts counted in `unit`.
    #[must_use]
    pub fn counted_in(mut self, unit: Unit) -> Self {
        self.unit = unit;
        self
    }

    /// The limit on the form's title (and its submit button).
    pub fn title(&self) -> Limit {
        Limit::new(self.max_title_chars, self.unit)
    }

    /// The limit on a field's label.
    pub fn label(&self) -> Limit {
        Limit::new(self.max_label_chars, self.unit)
    }

    /// The limit on a field's placeholder.
    pub fn placeholder(&self) -> Limit {
        Limit::new(self.max_placeholder_chars, self.unit)
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

impl Presentation {
    /// The text of the prompt's message `index` (a button prompt is one
    /// message); empty past the last.
    #[must_use]
    pub fn part_text(&self, index: usize) -> &str {
        match self {
            Self::Buttons(buttons) if index == 0 => &buttons.text,
            Self::Buttons(_) => "",
            Self::Text(text) => text.parts.get(index).map_or("", String::as_str),
        }
    }
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
    render_by(request, capabilities, question, locale, None)
}

/// [`render`] for a person whose local time is known: a wait of a day or
/// more is headed with its `deadline` in their zone ("reply by Tue 8 Dec,
/// 09:32", [`crate::chrome::Chrome::heading_by`]) instead of its length.
/// `None` reads as [`render`].
pub fn render_by(
    request: &AskRequest,
    capabilities: &Capabilities,
    question: &QuestionId,
    locale: Locale,
    deadline: Option<&Deadline>,
) -> Presentation {
    if let Some(prompt) = buttons(request, capabilities, question, locale, deadline) {
        return Presentation::Buttons(prompt);
    }
    let actions = text_actions(request, capabilities, question, locale);
    let reading = if capabilities.typed_replies || actions.is_none() {
        Reading::Typed
    } else {
        Reading::Form
    };
    Presentation::Text(TextPrompt {
        parts: prompt_parts_by(
            request,
            locale,
            deadline,
            &|text| capabilities.message_fits(text),
            reading,
        ),
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
        .all(|b| limits.label().fits(&b.label) && b.token.len() <= limits.max_token_bytes);
    fits.then_some(actions)
}

fn buttons(
    request: &AskRequest,
    capabilities: &Capabilities,
    id: &QuestionId,
    locale: Locale,
    deadline: Option<&Deadline>,
) -> Option<ButtonPrompt> {
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
    let text = button_text_by(only, request.timeout_seconds, locale, deadline);
    let fits = button_count <= limits.max_buttons
        && labels
            .chain([skip.label.as_str()])
            .all(|label| limits.label().fits(label))
        && tokens
            .chain([skip.token.as_str()])
            .all(|token| token.len() <= limits.max_token_bytes)
        && capabilities.message_fits(&text);
    fits.then(|| ButtonPrompt {
        text,
        header: only.header.clone(),
        question: only.question.clone(),
        options,
        other,
        skip,
    })
}
