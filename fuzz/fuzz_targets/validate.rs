//! Arbitrary bytes as a request: `validate_json` never panics, and whatever it
//! accepts keeps the rules of spec §2, validates again to itself, and renders
//! on a channel with buttons, a text-only channel and a cramped text channel.

#![no_main]

use std::collections::HashSet;

use askgate_core::render::{ButtonLimits, FreeTextInput};
use askgate_core::request::{
    MAX_DESCRIPTION_CHARS, MAX_HEADER_GRAPHEMES, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, MAX_QUESTIONS,
    MAX_TIMEOUT_SECONDS, MIN_OPTIONS, MIN_QUESTIONS, MIN_TIMEOUT_SECONDS,
};
use askgate_core::text::{char_len, normalize, truncate_graphemes};
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
    for capabilities in [with_buttons(), text_only(), cramped()] {
        for locale in [Locale::En, Locale::ZhCn] {
            check_presentation(
                &request,
                &capabilities,
                &id,
                render(&request, &capabilities, &id, locale),
            );
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

fn check_presentation(request: &AskRequest, capabilities: &Capabilities, id: &QuestionId, presentation: Presentation) {
    match presentation {
        Presentation::Buttons(prompt) => {
            let limits = capabilities.buttons.expect("buttons only on a channel that has them");
            assert!(request.is_single_choice(), "buttons for {request:?}");
            let [only] = request.questions.as_slice() else {
                unreachable!()
            };
            assert_eq!(prompt.options.len(), only.options.len());
            for (index, (button, option)) in prompt.options.iter().zip(&only.options).enumerate() {
                assert_eq!(button.label, option.label);
                assert_eq!(button.primary, index == 0);
                assert!(char_len(&button.label) <= limits.max_label_chars);
                assert!(button.token.len() <= limits.max_token_bytes);
                let token = ButtonToken::decode(&button.token).expect("an askgate token");
                assert_eq!(token.question, *id);
                assert_eq!(
                    token.action,
                    ButtonAction::Choose(u8::try_from(index).expect("at most 4 options"))
                );
            }
            let buttons = prompt.options.len() + 1 + usize::from(prompt.other.is_some());
            assert!(buttons <= limits.max_buttons);
            assert_eq!(
                prompt.other.is_some(),
                capabilities.free_text_input != FreeTextInput::None
            );
            assert!(char_len(&prompt.text) <= capabilities.max_message_chars);
        }
        Presentation::Text(prompt) => {
            assert!(!prompt.parts.is_empty(), "no message for {request:?}");
            for part in &prompt.parts {
                assert!(!part.is_empty(), "an empty part for {request:?}");
                assert!(
                    char_len(part) <= capabilities.max_message_chars,
                    "a part of {} characters over {}",
                    char_len(part),
                    capabilities.max_message_chars
                );
            }
        }
    }
}

/// A Telegram-like channel.
fn with_buttons() -> Capabilities {
    Capabilities {
        buttons: Some(ButtonLimits {
            max_buttons: 10,
            max_label_chars: 64,
            max_token_bytes: 64,
        }),
        max_message_chars: 4096,
        edit_messages: true,
        free_text_input: FreeTextInput::ForceReply,
        private_notices: true,
    }
}

/// A plain text channel.
fn text_only() -> Capabilities {
    Capabilities {
        buttons: None,
        max_message_chars: 2000,
        edit_messages: false,
        free_text_input: FreeTextInput::None,
        private_notices: false,
    }
}

/// Buttons too few and messages too short for most prompts: exercises the
/// fallback to text and the splitting of text into parts.
fn cramped() -> Capabilities {
    Capabilities {
        buttons: Some(ButtonLimits {
            max_buttons: 4,
            max_label_chars: 12,
            max_token_bytes: 20,
        }),
        max_message_chars: 80,
        edit_messages: false,
        free_text_input: FreeTextInput::Modal,
        private_notices: false,
    }
}
