//! Arbitrary replies to fixed requests: `ReplyReader::read` never panics and
//! every answer it gives is well formed (spec §5).
//!
//! Input: the first byte picks one of the built-in requests; the rest is
//! split at the first `0xFF` byte (never part of UTF-8) into two replies, read
//! one after the other as a multi-question prompt is answered over several
//! replies. Without a `0xFF`, the same reply is read twice.

#![no_main]

use std::sync::LazyLock;

use askgate_core::{AnswerItem, Answers, AskRequest, ReplyOutcome, ReplyReader, validate_json};
use libfuzzer_sys::fuzz_target;

/// Requests whose labels and keys tempt the reader: skip words, numbers,
/// clock times, separators, suffixes, headers that are other questions' ids.
const REQUESTS: &[&str] = &[
    r#"{"questions": [{"id": "deploy_target", "header": "Deploy", "question": "Where should this build go?",
        "options": [{"label": "Staging (Recommended)", "description": "safe"}, {"label": "Production"}, {"label": "Canary"}]}]}"#,
    r#"{"questions": [{"id": "pick", "header": "Pick", "question": "Which one?",
        "options": [{"label": "Skip"}, {"label": "14:30"}, {"label": "3"}, {"label": "Yes. (Recommended)"}]}]}"#,
    r#"{"questions": [{"id": "colors", "header": "Colors", "question": "Which colors?", "multiSelect": true,
        "options": [{"label": "Red, green (Recommended)"}, {"label": "Blue & white"}, {"label": "和平、安宁"}, {"label": "2"}]}]}"#,
    r#"{"questions": [
        {"id": "deploy", "header": "Deploy", "question": "Where?",
         "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}, {"label": "Canary"}]},
        {"id": "notify", "header": "Notify", "question": "Who should be told?", "multiSelect": true,
         "options": [{"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody, really"}]},
        {"id": "window", "header": "通知时间", "question": "When?",
         "options": [{"label": "Now"}, {"label": "1"}, {"label": "deploy: later"}]}]}"#,
    r#"{"questions": [
        {"id": "a", "header": "b", "question": "First?", "multiSelect": true,
         "options": [{"label": "1 3"}, {"label": "x and y"}, {"label": "和"}, {"label": "&"}]},
        {"id": "b", "header": "a", "question": "Second?", "multiSelect": true,
         "options": [{"label": "skip"}, {"label": "a: b"}]}]}"#,
];

static PARSED: LazyLock<Vec<AskRequest>> = LazyLock::new(|| {
    REQUESTS
        .iter()
        .map(|text| validate_json(text).unwrap_or_else(|errors| panic!("built-in request: {errors}")))
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let request = &PARSED[usize::from(selector) % PARSED.len()];
    let (first, second) = match rest.iter().position(|&b| b == 0xFF) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, rest),
    };
    let (first, second) = (String::from_utf8_lossy(first), String::from_utf8_lossy(second));
    let reader = ReplyReader::new(request);
    let outcome = reader.read(&Answers::new(), &first);
    check(request, &Answers::new(), &outcome, &first);
    let so_far = answers_of(&outcome).cloned().unwrap_or_default();
    let again = reader.read(&so_far, &second);
    check(request, &so_far, &again, &second);
});

fn answers_of(outcome: &ReplyOutcome) -> Option<&Answers> {
    match outcome {
        ReplyOutcome::Answered(answers) | ReplyOutcome::Partial { answers, .. } => Some(answers),
        ReplyOutcome::Skipped | ReplyOutcome::NotAnAnswer => None,
    }
}

fn check(request: &AskRequest, so_far: &Answers, outcome: &ReplyOutcome, reply: &str) {
    let Some(answers) = answers_of(outcome) else {
        return;
    };
    match outcome {
        ReplyOutcome::Answered(answers) => assert!(answers.is_complete(request), "{reply:?}: answered but incomplete"),
        ReplyOutcome::Partial {
            answers, took, missing, ..
        } => {
            assert!(!answers.is_complete(request), "{reply:?}: partial but complete");
            assert_eq!(missing, &answers.missing(request), "{reply:?}");
            assert!(
                took.iter().all(|id| answers.get(id).is_some()),
                "{reply:?}: took {took:?}"
            );
        }
        ReplyOutcome::Skipped | ReplyOutcome::NotAnAnswer => unreachable!(),
    }
    // A reply fills or overwrites what it names; it never forgets an answer.
    for (id, _) in so_far.iter() {
        assert!(answers.get(id).is_some(), "{reply:?}: the answer to {id} was dropped");
    }
    for (id, items) in answers.iter() {
        let question = request
            .question(id)
            .unwrap_or_else(|| panic!("{reply:?}: unknown question id {id}"));
        assert!(!items.is_empty(), "{reply:?}: an empty answer to {id}");
        if !question.multi_select {
            assert_eq!(
                items.len(),
                1,
                "{reply:?}: several values for single-select {id}: {items:?}"
            );
        }
        for item in items {
            match item {
                AnswerItem::Option { index, label } => {
                    assert!(
                        *index < question.options.len(),
                        "{reply:?}: index {index} out of range: {items:?}"
                    );
                    assert_eq!(
                        label, &question.options[*index].label,
                        "{reply:?}: wrong label: {items:?}"
                    );
                }
                AnswerItem::FreeText { text } => {
                    assert!(!text.is_empty(), "{reply:?}: empty free text: {items:?}");
                    assert_eq!(text, text.trim(), "{reply:?}: untrimmed free text: {items:?}");
                }
            }
        }
    }
}
