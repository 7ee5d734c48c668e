//! Spec §4 and §7: the render decision for each capability case, the text
//! layout in both locales, and the summary lines, as reviewed snapshots.

use askgate_core::layout::{Ending, prompt_text, summary};
use askgate_core::render::{ButtonLimits, FreeTextInput};
use askgate_core::when::{Deadline, Zone};
use askgate_core::{
    AnswerItem, Answers, AskRequest, Capabilities, Locale, Place, Presentation, QuestionId, render, render_by,
    validate, validate_with_max_timeout,
};
use serde_json::{Value, json};

fn request(body: &Value) -> AskRequest {
    validate(body).expect("a valid test request")
}

/// The example of spec §4: two questions, the second multi-select.
fn deploy_and_notify() -> AskRequest {
    request(&json!({"questions": [
        {"id": "deploy", "header": "Deploy", "question": "Where should this build go?", "options": [
            {"label": "Staging (Recommended)", "description": "safe, resets nightly"},
            {"label": "Production"},
            {"label": "Canary"},
        ]},
        {"id": "notify", "header": "Notify", "question": "Who should be told?", "multiSelect": true, "options": [
            {"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody"},
        ]},
    ]}))
}

fn deploy_only() -> AskRequest {
    request(&json!({"questions": [
        {"id": "deploy", "header": "Deploy", "question": "Where should this build go?", "options": [
            {"label": "Staging (Recommended)", "description": "safe, resets nightly"},
            {"label": "Production", "description": "customers see it at once"},
            {"label": "Canary"},
        ]},
    ], "timeoutSeconds": 300}))
}

fn notify_only() -> AskRequest {
    request(&json!({"questions": [
        {"id": "notify", "header": "Notify", "question": "Who should be told?", "multiSelect": true, "options": [
            {"label": "Team channel"}, {"label": "On-call"},
        ]},
    ], "timeoutSeconds": 45}))
}

fn chat(max_buttons: usize, max_label_chars: usize, max_token_bytes: usize) -> Capabilities {
    Capabilities::text(4096)
        .with_buttons(ButtonLimits::new(max_buttons, max_label_chars, max_token_bytes))
        .with_edits()
        .with_free_text(FreeTextInput::ForceReply)
        .with_private_notices()
}

fn text_only(max_message_chars: usize) -> Capabilities {
    Capabilities::text(max_message_chars)
}

fn id() -> QuestionId {
    QuestionId::parse("01JDQ7Z6W3").expect("a valid question id")
}

/// Three questions, each with `options` options, all as long as allowed
/// (about 1,300 characters of text each with four).
fn long_questions(options: usize) -> AskRequest {
    let question = |id: &str| {
        let options: Vec<Value> = ["a", "b", "c", "e"][..options]
            .iter()
            .map(|label| json!({"label": label.repeat(64), "description": "d".repeat(150)}))
            .collect();
        json!({"id": id, "header": "Header", "question": "q".repeat(300), "options": options})
    };
    request(&json!({"questions": [question("one"), question("two"), question("three")]}))
}

fn text_parts(presentation: &Presentation) -> Vec<String> {
    match presentation {
        Presentation::Text(text) => text.parts.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

#[test]
fn several_questions_as_text_in_english() {
    insta::assert_snapshot!(prompt_text(&deploy_and_notify(), Locale::En));
}

#[test]
fn several_questions_as_text_in_chinese() {
    insta::assert_snapshot!(prompt_text(&deploy_and_notify(), Locale::ZhCn));
}

#[test]
fn one_single_select_question_as_text() {
    insta::assert_snapshot!("single_select_en", prompt_text(&deploy_only(), Locale::En));
    insta::assert_snapshot!("single_select_zh", prompt_text(&deploy_only(), Locale::ZhCn));
}

#[test]
fn one_multi_select_question_as_text() {
    insta::assert_snapshot!("multi_select_en", prompt_text(&notify_only(), Locale::En));
    insta::assert_snapshot!("multi_select_zh", prompt_text(&notify_only(), Locale::ZhCn));
}

#[test]
fn three_questions_as_text() {
    let mut body = serde_json::to_value(deploy_and_notify()).unwrap();
    body["questions"].as_array_mut().unwrap().push(json!({
        "id": "when", "header": "When", "question": "When should it ship?", "options": [{"label": "Now"}, {"label": "Tonight"}],
    }));
    body["timeoutSeconds"] = json!(3600);
    insta::assert_snapshot!(prompt_text(&request(&body), Locale::En));
}

#[test]
fn one_single_select_question_gets_native_buttons() {
    let presentation = render(&deploy_only(), &chat(8, 64, 64), &id(), Locale::En);
    assert!(matches!(presentation, Presentation::Buttons(_)));
    insta::assert_json_snapshot!(presentation);
}

#[test]
fn native_buttons_in_chinese() {
    let presentation = render(&deploy_only(), &chat(8, 64, 64), &id(), Locale::ZhCn);
    insta::assert_json_snapshot!(presentation);
}

#[test]
fn no_other_button_where_the_channel_cannot_collect_free_text() {
    let mut capabilities = chat(8, 64, 64);
    capabilities.free_text_input = FreeTextInput::None;
    let Presentation::Buttons(prompt) = render(&deploy_only(), &capabilities, &id(), Locale::En) else {
        panic!("expected buttons");
    };
    assert_eq!(prompt.other, None);
    assert_eq!(prompt.options.len(), 3);
    assert_eq!(prompt.skip.token, "ag1:01JDQ7Z6W3:s");
}

/// A wait of a day or more, rendered for a person whose zone is known, is
/// headed with its deadline in their local time, as buttons and as text;
/// without the deadline (or under a day) it reads as before.
#[test]
fn a_long_wait_is_headed_with_the_local_deadline() {
    let mut body = serde_json::to_value(deploy_only()).expect("a request serializes");
    body["timeoutSeconds"] = json!(2 * 86_400);
    let long = validate_with_max_timeout(&body, 7 * 86_400).expect("a valid long request");
    let mut several = serde_json::to_value(deploy_and_notify()).expect("a request serializes");
    several["timeoutSeconds"] = json!(2 * 86_400);
    let several = validate_with_max_timeout(&several, 7 * 86_400).expect("a valid long request");
    // Asked Sun 6 Dec 2026 09:32 in Shanghai (01:32 UTC); due Tue 8 Dec, 09:32.
    let now = 1_796_520_720_000;
    let deadline = Deadline {
        at_ms: now + 2 * 86_400_000,
        now_ms: now,
        zone: Zone::parse("Asia/Shanghai").expect("a known zone"),
    };
    let Presentation::Buttons(prompt) = render_by(&long, &chat(8, 64, 64), &id(), Locale::En, Some(&deadline)) else {
        panic!("expected buttons");
    };
    assert!(
        prompt
            .text
            .starts_with("Question for you (reply by Tue 8 Dec, 09:32)\n"),
        "{}",
        prompt.text
    );
    let parts = text_parts(&render_by(
        &several,
        &text_only(4096),
        &id(),
        Locale::ZhCn,
        Some(&deadline),
    ));
    assert!(
        parts[0].starts_with("有问题需要你回答（请在 12月8日 周二 09:32 前回复）\n"),
        "{}",
        parts[0]
    );
    let Presentation::Buttons(prompt) = render(&long, &chat(8, 64, 64), &id(), Locale::En) else {
        panic!("expected buttons");
    };
    assert!(
        prompt.text.starts_with("Question for you (reply within 2 d)\n"),
        "{}",
        prompt.text
    );
    assert_eq!(
        render_by(&deploy_only(), &text_only(4096), &id(), Locale::En, Some(&deadline)),
        render(&deploy_only(), &text_only(4096), &id(), Locale::En)
    );
}

#[test]
fn text_for_a_channel_without_buttons() {
    let presentation = render(&deploy_only(), &text_only(4096), &id(), Locale::En);
    assert_eq!(text_parts(&presentation), [prompt_text(&deploy_only(), Locale::En)]);
}

#[test]
fn text_for_multi_select_and_several_questions_even_with_buttons() {
    for request in [notify_only(), deploy_and_notify()] {
        let presentation = render(&request, &chat(25, 80, 100), &id(), Locale::En);
        assert_eq!(text_parts(&presentation), [prompt_text(&request, Locale::En)]);
    }
}

#[test]
fn text_when_the_buttons_cannot_carry_the_question_whole() {
    // Three options + Other… + Skip = 5 buttons.
    assert!(matches!(
        render(&deploy_only(), &chat(5, 64, 64), &id(), Locale::En),
        Presentation::Buttons(_)
    ));
    assert!(matches!(
        render(&deploy_only(), &chat(4, 64, 64), &id(), Locale::En),
        Presentation::Text(_)
    ));
    // "Staging (Recommended)" is 21 characters.
    assert!(matches!(
        render(&deploy_only(), &chat(8, 21, 64), &id(), Locale::En),
        Presentation::Buttons(_)
    ));
    assert!(matches!(
        render(&deploy_only(), &chat(8, 20, 64), &id(), Locale::En),
        Presentation::Text(_)
    ));
    // "ag1:01JDQ7Z6W3:0" is 16 bytes.
    assert!(matches!(
        render(&deploy_only(), &chat(8, 64, 16), &id(), Locale::En),
        Presentation::Buttons(_)
    ));
    assert!(matches!(
        render(&deploy_only(), &chat(8, 64, 15), &id(), Locale::En),
        Presentation::Text(_)
    ));
}

#[test]
fn long_text_is_split_between_questions() {
    let request = long_questions(4);
    let whole = prompt_text(&request, Locale::En);
    assert!(whole.chars().count() > 2000);
    let parts = text_parts(&render(&request, &text_only(2000), &id(), Locale::En));
    assert!(parts.len() > 1);
    for part in &parts {
        assert!(
            part.chars().count() <= 2000,
            "a part has {} characters",
            part.chars().count()
        );
    }
    // Nothing is lost or reordered: the parts are the whole text, cut between questions.
    assert_eq!(parts.join("\n").replace("\n\n", "\n"), whole.replace("\n\n", "\n"));
    assert!(parts[0].starts_with("Questions for you"));
    assert!(parts[1].starts_with("2. Header"));
    assert!(parts[2].starts_with("3. Header") && parts[2].ends_with("Reply \"skip\" to skip."));
}

#[test]
fn each_message_of_a_prompt_has_its_text() {
    let text = render(&long_questions(2), &text_only(1000), &id(), Locale::En);
    let parts = text_parts(&text);
    assert!(parts.len() > 1);
    for (index, part) in parts.iter().enumerate() {
        assert_eq!(text.part_text(index), part);
    }
    assert_eq!(text.part_text(parts.len()), "");
    let buttons = render(&deploy_only(), &chat(8, 64, 64), &id(), Locale::En);
    let Presentation::Buttons(prompt) = &buttons else {
        panic!("expected buttons, got {buttons:?}");
    };
    assert_eq!(buttons.part_text(0), prompt.text);
    assert_eq!(buttons.part_text(1), "");
}

#[test]
fn a_question_longer_than_a_message_alone_is_split_between_lines() {
    let request = deploy_only();
    let parts = text_parts(&render(&request, &text_only(60), &id(), Locale::En));
    assert!(parts.iter().all(|part| part.chars().count() <= 60), "{parts:?}");
    let kept: String = parts.concat().chars().filter(|c| !c.is_whitespace()).collect();
    let whole: String = prompt_text(&request, Locale::En)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    assert_eq!(kept, whole);
}

#[test]
fn agent_text_stays_on_its_line() {
    let request = request(
        &json!({"questions": [{"id": "a", "header": "H", "question": "Pick\nReply \"skip\" to skip.", "options": [
            {"label": "A\n2) Fake option"}, {"label": "B"},
        ]}]}),
    );
    let text = prompt_text(&request, Locale::En);
    assert!(text.contains("H — Pick Reply \"skip\" to skip."));
    assert!(text.contains("1) A 2) Fake option"));
    assert_eq!(text.lines().filter(|line| line.starts_with("2)")).count(), 1);
}

fn answered(request: &AskRequest, values: &[(&str, Vec<AnswerItem>)]) -> Answers {
    let mut answers = Answers::new();
    for (id, items) in values {
        answers.set(request, id, items.clone());
    }
    answers
}

fn option(index: usize, label: &str) -> AnswerItem {
    AnswerItem::Option {
        index,
        label: label.into(),
    }
}

#[test]
fn summaries_of_every_ending() {
    let single = deploy_only();
    let chosen = answered(&single, &[("deploy", vec![option(0, "Staging (Recommended)")])]);
    let several = deploy_and_notify();
    let both = answered(
        &several,
        &[
            (
                "notify",
                vec![
                    option(0, "Team channel"),
                    AnswerItem::FreeText {
                        text: "my manager".into(),
                    },
                ],
            ),
            ("deploy", vec![AnswerItem::FreeText { text: "x".repeat(250) }]),
        ],
    );
    let mut lines = Vec::new();
    for locale in [Locale::En, Locale::ZhCn] {
        lines.push(summary(
            &single,
            Ending::Answered {
                by: "Alice",
                surface: None,
                answers: &chosen,
            },
            locale,
        ));
        lines.push(summary(
            &several,
            Ending::Answered {
                by: "Alice",
                surface: None,
                answers: &both,
            },
            locale,
        ));
        lines.push(summary(
            &single,
            Ending::Skipped {
                by: "Alice",
                surface: None,
            },
            locale,
        ));
        lines.push(summary(&single, Ending::Expired, locale));
        lines.push(summary(&single, Ending::Cancelled, locale));
    }
    assert_eq!(lines[0], "Answered by Alice: Staging (Recommended)");
    assert_eq!(lines[2], "Skipped by Alice");
    assert_eq!(lines[3], "Expired — no answer");
    assert_eq!(lines[4], "Cancelled");
    // Free text is cut to 200 user-perceived characters, the cut marked.
    assert!(lines[1].contains(&format!("Deploy: {}…\n", "x".repeat(199))));
    insta::assert_snapshot!(lines.join("\n---\n"));
}

/// A question shown on several surfaces names where it was answered, in
/// each language: a platform by the name its adapter declares, askgate's
/// page in askgate's words; a Latin name is set off by spaces in Chinese text.
#[test]
fn a_summary_names_the_surface_it_was_answered_on() {
    let single = deploy_only();
    let several = deploy_and_notify();
    let one = answered(&single, &[("deploy", vec![option(1, "Production")])]);
    let two = answered(
        &several,
        &[
            ("deploy", vec![option(1, "Production")]),
            ("notify", vec![option(1, "On-call")]),
        ],
    );
    let answered = |request: &AskRequest, answers: &Answers, surface: Place<'_>, locale: Locale| {
        summary(
            request,
            Ending::Answered {
                by: "Alice",
                surface: Some(surface),
                answers,
            },
            locale,
        )
    };
    assert_eq!(
        answered(&single, &one, Place::Platform("Telegram"), Locale::En),
        "Answered by Alice in Telegram: Production"
    );
    assert_eq!(
        answered(&single, &one, Place::Page, Locale::En),
        "Answered by Alice in the web page: Production"
    );
    assert_eq!(
        answered(&several, &two, Place::Platform("Slack"), Locale::En),
        "Answered by Alice in Slack\nDeploy: Production\nNotify: On-call"
    );
    assert_eq!(
        answered(&single, &one, Place::Platform("Telegram"), Locale::ZhCn),
        "Alice 已在 Telegram 回答：Production"
    );
    assert_eq!(
        answered(&single, &one, Place::Page, Locale::ZhCn),
        "Alice 已在网页回答：Production"
    );
    let skipped = |surface: Place<'_>, locale: Locale| {
        summary(
            &single,
            Ending::Skipped {
                by: "Alice",
                surface: Some(surface),
            },
            locale,
        )
    };
    assert_eq!(
        skipped(Place::Platform("Discord"), Locale::En),
        "Skipped by Alice in Discord"
    );
    assert_eq!(skipped(Place::Page, Locale::ZhCn), "Alice 已在网页跳过");
}

/// A chat surface with buttons and Discord-like forms (5 fields, 45-character labels).
fn with_forms(typed_replies: bool) -> Capabilities {
    let caps = chat(25, 80, 100)
        .with_free_text(FreeTextInput::Modal)
        .with_forms(askgate_core::render::FormLimits::new(5, 45, 45, 100));
    if typed_replies {
        caps
    } else {
        caps.without_typed_replies()
    }
}

#[test]
fn a_text_prompt_where_typed_replies_never_arrive_carries_answer_and_skip() {
    let Presentation::Text(prompt) = render(&deploy_and_notify(), &with_forms(false), &id(), Locale::En) else {
        panic!("two questions are text");
    };
    let actions = prompt.actions.as_ref().expect("Answer… and Skip");
    assert_eq!(actions.answer.label, "Answer…");
    assert_eq!(actions.answer.token, "ag1:01JDQ7Z6W3:a");
    assert_eq!(actions.skip.token, "ag1:01JDQ7Z6W3:s");
    assert_eq!(prompt.actions_part(), Some(0));
    let last = prompt.parts.last().expect("one part");
    assert!(last.ends_with("Tap Answer… to answer, or Skip to skip."), "{last}");
    assert!(!last.contains("Reply with"), "no typed-reply instructions: {last}");

    // Where typed replies do arrive, the form is offered beside them.
    let Presentation::Text(typed) = render(&deploy_and_notify(), &with_forms(true), &id(), Locale::ZhCn) else {
        panic!("two questions are text");
    };
    assert_eq!(typed.actions.expect("Answer… and Skip").answer.label, "回答…");
    assert!(typed.parts[0].contains("每个问题回复一行"), "{}", typed.parts[0]);

    // No forms: no buttons on a text prompt (Telegram).
    let Presentation::Text(plain) = render(&deploy_and_notify(), &chat(100, 64, 64), &id(), Locale::En) else {
        panic!("two questions are text");
    };
    assert_eq!(plain.actions, None);
}

#[test]
fn the_form_has_one_field_per_question_within_the_limits() {
    let limits = askgate_core::render::FormLimits::new(5, 12, 20, 30).with_checkboxes();
    let form = askgate_core::form::form(&deploy_and_notify(), &limits, &id(), Locale::En).expect("two fields fit");
    assert_eq!(form.token, "ag1:01JDQ7Z6W3:a");
    assert_eq!(form.title, "Your answers");
    let ids: Vec<&str> = form.fields.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["deploy", "notify"]);
    assert_eq!(form.fields[0].label, "Deploy — Where shou…");
    assert_eq!(form.fields[0].placeholder, "1) Staging (Recommended) · 2)…");
    assert!(form.fields[0].checkboxes.is_empty());
    assert_eq!(form.fields[1].checkboxes, ["Team channel", "On-call", "Nobody"]);
    let one_field = askgate_core::render::FormLimits::new(1, 45, 45, 100);
    assert_eq!(
        askgate_core::form::form(&deploy_and_notify(), &one_field, &id(), Locale::En),
        None
    );
}
