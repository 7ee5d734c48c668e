//! Arbitrary bytes as a request: `validate_json` never panics, and whatever it
//! accepts keeps the rules of spec §2, validates again to itself, and renders
//! (spec §4) on channels shaped like askgate's adapters and on cramped ones:
//! native buttons exactly when the request is one single-select question whose
//! buttons and text the channel can carry whole, every button and message
//! within the channel's limits as it counts them, Answer… and Skip on a text
//! prompt exactly when the channel's buttons and forms can carry them, and the
//! closing instructions matching how the person answers.

#![no_main]

use std::collections::HashSet;

use askgate_core::layout::button_text;
use askgate_core::render::{ButtonLimits, FormLimits, FreeTextInput, Measure, TextPrompt};
use askgate_core::request::{
    MAX_DESCRIPTION_CHARS, MAX_HEADER_GRAPHEMES, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, MAX_QUESTIONS,
    MAX_TIMEOUT_SECONDS, MIN_OPTIONS, MIN_QUESTIONS, MIN_TIMEOUT_SECONDS,
};
use askgate_core::text::{Unit, char_len, normalize, truncate_graphemes};
use askgate_core::{
    AskRequest, ButtonAction, ButtonToken, Capabilities, Locale, Presentation, QuestionId, render, validate,
    validate_json,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(request) = validate_json(&text) else {
        return;
    };
    check_request(&request);
    // Normalization is idempotent: the stored form validates to itself.
    let stored = serde_json::to_value(&request).expect("a request serializes");
    assert_eq!(validate(&stored).as_ref(), Ok(&request), "re-validating {stored}");
    let id = QuestionId::parse("01JFUZZ_q-1").expect("a valid question id");
    let channels = [
        telegram_like(),
        text_only(),
        cramped(),
        discord_like(),
        slack_like(),
        cramped_forms(),
    ];
    for capabilities in &channels {
        for locale in [Locale::En, Locale::ZhCn] {
            let presentation = render(&request, capabilities, &id, locale);
            check_presentation(&request, capabilities, &id, locale, presentation);
        }
    }
});

fn check_request(request: &AskRequest) {
    assert!(
        (MIN_QUESTIONS..=MAX_QUESTIONS).contains(&request.questions.len()),
        "{request:?}"
    );
    assert!(
        (MIN_TIMEOUT_SECONDS..=MAX_TIMEOUT_SECONDS).contains(&request.timeout_seconds),
        "timeout {}",
        request.timeout_seconds
    );
    let mut ids = HashSet::new();
    for question in &request.questions {
        assert!(ids.insert(&question.id), "duplicate id {:?}", question.id);
        assert!(
            question.id.starts_with(|c: char| c.is_ascii_lowercase())
                && question
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "id {:?}",
            question.id
        );
        assert!(!question.header.is_empty(), "empty header");
        assert_eq!(
            truncate_graphemes(&question.header, MAX_HEADER_GRAPHEMES),
            question.header,
            "header {:?} is over {MAX_HEADER_GRAPHEMES} graphemes",
            question.header
        );
        assert!(
            (1..=MAX_QUESTION_CHARS).contains(&char_len(&question.question)),
            "question {:?}",
            question.question
        );
        assert!(
            (MIN_OPTIONS..=MAX_OPTIONS).contains(&question.options.len()),
            "{question:?}"
        );
        let mut labels = HashSet::new();
        for option in &question.options {
            assert!(
                (1..=MAX_LABEL_CHARS).contains(&char_len(&option.label)),
                "label {:?}",
                option.label
            );
            assert!(
                labels.insert(normalize(&option.label)),
                "labels read alike: {question:?}"
            );
            if let Some(description) = &option.description {
                assert!(
                    (1..=MAX_DESCRIPTION_CHARS).contains(&char_len(description)),
                    "description {description:?}"
                );
            }
        }
        // Agent text never adds a line to a prompt.
        let fields = [&question.header, &question.question]
            .into_iter()
            .chain(question.options.iter().map(|option| &option.label))
            .chain(question.options.iter().filter_map(|option| option.description.as_ref()));
        for field in fields {
            assert_eq!(field.trim(), field, "untrimmed field {field:?}");
            assert!(!field.contains(['\n', '\r']), "a line break in {field:?}");
        }
    }
}

fn check_presentation(
    request: &AskRequest,
    capabilities: &Capabilities,
    id: &QuestionId,
    locale: Locale,
    presentation: Presentation,
) {
    // An oracle written apart from render's own code: the two must agree.
    let expected_buttons = buttons_fit(request, capabilities, id, locale);
    match presentation {
        Presentation::Buttons(prompt) => {
            assert!(
                expected_buttons,
                "buttons that do not fit {capabilities:?}: {request:?}"
            );
            let limits = capabilities.buttons.expect("buttons only on a channel that has them");
            assert!(request.is_single_choice(), "buttons for {request:?}");
            let [only] = request.questions.as_slice() else {
                unreachable!()
            };
            assert_eq!(prompt.header, only.header);
            assert_eq!(prompt.question, only.question);
            assert_eq!(prompt.options.len(), only.options.len());
            for (index, (button, option)) in prompt.options.iter().zip(&only.options).enumerate() {
                assert_eq!(button.label, option.label);
                assert_eq!(button.description, option.description);
                assert_eq!(button.primary, index == 0);
                assert!(limits.label().fits(&button.label), "label {:?}", button.label);
                let action = ButtonAction::Choose(u8::try_from(index).expect("at most 4 options"));
                check_token(&button.token, id, action, &limits);
            }
            let chrome = locale.chrome();
            assert_eq!(prompt.skip.label, chrome.skip_button());
            assert!(limits.label().fits(&prompt.skip.label));
            check_token(&prompt.skip.token, id, ButtonAction::Skip, &limits);
            assert_eq!(
                prompt.other.is_some(),
                capabilities.free_text_input != FreeTextInput::None
            );
            if let Some(other) = &prompt.other {
                assert_eq!(other.label, chrome.other_button());
                assert!(limits.label().fits(&other.label));
                check_token(&other.token, id, ButtonAction::Other, &limits);
            }
            let buttons = prompt.options.len() + 1 + usize::from(prompt.other.is_some());
            assert!(buttons <= limits.max_buttons);
            assert!(
                capabilities.message_fits(&prompt.text),
                "a button message over {}",
                capabilities.max_message_chars
            );
        }
        Presentation::Text(prompt) => {
            assert!(
                !expected_buttons,
                "text where buttons fit {capabilities:?}: {request:?}"
            );
            check_text(request, capabilities, id, locale, &prompt);
        }
        // A presentation added to askgate-core must be checked here: fail
        // loudly rather than let the target pass without looking at it.
        other => panic!("a presentation this target does not check yet: {other:?}"),
    }
}

fn check_text(request: &AskRequest, capabilities: &Capabilities, id: &QuestionId, locale: Locale, prompt: &TextPrompt) {
    assert!(!prompt.parts.is_empty(), "no message for {request:?}");
    for part in &prompt.parts {
        assert!(!part.is_empty(), "an empty part for {request:?}");
        // A part is cut only between user-perceived characters: one
        // character longer than a message alone (a letter with hundreds of
        // combining marks on a cramped channel) is the only excuse.
        let single = truncate_graphemes(part, 1) == part;
        assert!(
            capabilities.message_fits(part) || single,
            "a part of {} characters over {}: {part:?}",
            char_len(part),
            capabilities.max_message_chars
        );
    }
    // Answer… and Skip exactly when the buttons and the form can carry them.
    let chrome = locale.chrome();
    let expected_actions = capabilities.buttons.zip(capabilities.forms).filter(|(limits, forms)| {
        request.questions.len() <= forms.max_fields
            && limits.max_buttons >= 2
            && [chrome.answer_button(), chrome.skip_button()]
                .iter()
                .all(|label| limits.label().fits(label))
            && [ButtonAction::Answer, ButtonAction::Skip]
                .iter()
                .all(|&action| token(id, action).len() <= limits.max_token_bytes)
    });
    assert_eq!(
        prompt.actions.is_some(),
        expected_actions.is_some(),
        "Answer… and Skip on {capabilities:?}"
    );
    if let (Some(actions), Some((limits, _))) = (&prompt.actions, expected_actions) {
        assert_eq!(actions.answer.label, chrome.answer_button());
        assert_eq!(actions.skip.label, chrome.skip_button());
        check_token(&actions.answer.token, id, ButtonAction::Answer, &limits);
        check_token(&actions.skip.token, id, ButtonAction::Skip, &limits);
        assert_eq!(prompt.actions_part(), Some(prompt.parts.len() - 1));
    }
    // The prompt closes by telling how to answer: through the form where
    // typed messages never arrive, by a typed reply otherwise. A closing
    // line longer than a cramped message is split over lines and parts, so
    // the line breaks are left out of the comparison.
    let form = !capabilities.typed_replies && prompt.actions.is_some();
    let hint = if form { chrome.form_hint() } else { chrome.skip_hint() };
    let text = prompt.parts.concat().replace('\n', "");
    assert!(
        text.ends_with(hint),
        "a prompt that does not close with {hint:?}: {:?}",
        prompt.parts
    );
}

/// Whether native buttons can carry `request` on this channel (spec §4):
/// one single-select question, a button for every option, Other… where free
/// text can be typed, and Skip, every label and token within the limits, and
/// the message text within the channel's.
fn buttons_fit(request: &AskRequest, capabilities: &Capabilities, id: &QuestionId, locale: Locale) -> bool {
    let (Some(limits), [only]) = (capabilities.buttons, request.questions.as_slice()) else {
        return false;
    };
    if only.multi_select {
        return false;
    }
    let chrome = locale.chrome();
    let other = capabilities.free_text_input != FreeTextInput::None;
    let mut buttons: Vec<(&str, ButtonAction)> = only
        .options
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let index = u8::try_from(index).expect("at most 4 options");
            (option.label.as_str(), ButtonAction::Choose(index))
        })
        .collect();
    if other {
        buttons.push((chrome.other_button(), ButtonAction::Other));
    }
    buttons.push((chrome.skip_button(), ButtonAction::Skip));
    buttons.len() <= limits.max_buttons
        && buttons
            .iter()
            .all(|&(label, action)| limits.label().fits(label) && token(id, action).len() <= limits.max_token_bytes)
        && capabilities.message_fits(&button_text(only, request.timeout_seconds, locale))
}

fn token(id: &QuestionId, action: ButtonAction) -> String {
    ButtonToken {
        question: id.clone(),
        action,
    }
    .encode()
}

/// A button payload askgate made, for this question and action, within the
/// channel's payload limit.
fn check_token(token: &str, id: &QuestionId, action: ButtonAction, limits: &ButtonLimits) {
    assert!(token.len() <= limits.max_token_bytes, "token {token:?}");
    let decoded = ButtonToken::decode(token).expect("an askgate token");
    assert_eq!(decoded.question, *id);
    assert_eq!(decoded.action, action);
}

/// A Telegram-like channel: buttons, edits, a force-reply for Other….
fn telegram_like() -> Capabilities {
    Capabilities::text(4096)
        .with_buttons(ButtonLimits::new(100, 64, 64))
        .with_edits()
        .with_free_text(FreeTextInput::ForceReply)
        .with_private_notices()
}

/// A plain text channel.
fn text_only() -> Capabilities {
    Capabilities::text(2000)
}

/// Buttons too few and messages too short for most prompts: exercises the
/// fallback to text and the splitting of text into parts.
fn cramped() -> Capabilities {
    Capabilities::text(80)
        .with_buttons(ButtonLimits::new(4, 12, 20))
        .with_free_text(FreeTextInput::Modal)
}

/// A Discord-like channel without typed replies (the interactions
/// endpoint): messages counted after escaping markdown, modals, forms, and
/// a text prompt answered through Answer… and Skip.
fn discord_like() -> Capabilities {
    Capabilities::text(2000)
        .with_measure(Measure::new(markdown_escaped))
        .with_buttons(ButtonLimits::new(25, 80, 100))
        .with_edits()
        .with_free_text(FreeTextInput::Modal)
        .with_private_notices()
        .with_forms(FormLimits::new(5, 45, 45, 100))
        .without_typed_replies()
}

/// A Slack-like channel: every text counted in UTF-16 units, messages after
/// escaping `&`, `<` and `>`, forms with checkboxes.
fn slack_like() -> Capabilities {
    Capabilities::text(3000)
        .with_measure(Measure::new(entity_escaped_utf16))
        .with_buttons(ButtonLimits::new(25, 75, 255).counted_in(Unit::Utf16))
        .with_edits()
        .with_free_text(FreeTextInput::Modal)
        .with_private_notices()
        .with_forms(
            FormLimits::new(100, 24, 2000, 150)
                .with_checkboxes()
                .counted_in(Unit::Utf16),
        )
}

/// Short messages counted in UTF-16, buttons whose texts are counted in
/// UTF-8 bytes, and forms of two fields: Answer… and Skip come and go with
/// the number of questions and the locale, and typed messages never arrive.
fn cramped_forms() -> Capabilities {
    Capabilities::text(120)
        .with_measure(Measure::new(utf16))
        .with_buttons(ButtonLimits::new(5, 9, 24).counted_in(Unit::Bytes))
        .with_forms(FormLimits::new(2, 45, 45, 100))
        .without_typed_replies()
}

/// Code points after a backslash before every markdown character.
fn markdown_escaped(text: &str) -> usize {
    text.chars()
        .map(|c| if "\\*_~|`>#-[]()".contains(c) { 2 } else { 1 })
        .sum()
}

/// UTF-16 units after `&amp;`, `&lt;` and `&gt;`.
fn entity_escaped_utf16(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '&' => 5,
            '<' | '>' => 4,
            c => c.len_utf16(),
        })
        .sum()
}

fn utf16(text: &str) -> usize {
    text.encode_utf16().count()
}
