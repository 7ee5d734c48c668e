//! Spec §5, rule by rule: reading typed replies for one single-select
//! question, one multi-select question, several questions, skips, and
//! answers that arrive over several replies.

use askgate_core::{AnswerItem, Answers, AskRequest, ReplyOutcome, ReplyReader, validate};
use serde_json::{Value, json};

fn request(questions: &Value) -> AskRequest {
    validate(&json!({ "questions": questions })).expect("a valid test request")
}

fn single(labels: &[&str]) -> AskRequest {
    request(&json!([{
        "id": "deploy", "header": "Deploy", "question": "Where should this build go?",
        "options": labels.iter().map(|label| json!({"label": label})).collect::<Vec<_>>(),
    }]))
}

fn multi(labels: &[&str]) -> AskRequest {
    request(&json!([{
        "id": "notify", "header": "Notify", "question": "Who should be told?", "multiSelect": true,
        "options": labels.iter().map(|label| json!({"label": label})).collect::<Vec<_>>(),
    }]))
}

fn deploy() -> AskRequest {
    single(&["Staging (Recommended)", "Production", "Canary"])
}

/// Deploy (single), Notify (multi), When (single).
fn three() -> AskRequest {
    request(&json!([
        {"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}, {"label": "Canary"}]},
        {"id": "notify", "header": "Notify", "question": "Who?", "multiSelect": true, "options": [{"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody"}]},
        {"id": "when", "header": "When", "question": "When?", "options": [{"label": "Now"}, {"label": "Tonight"}]},
    ]))
}

/// What one question's answer reads as: `"#2"` for option index 1, the text for free text.
fn items(items: &[AnswerItem]) -> Vec<String> {
    items
        .iter()
        .map(|item| match item {
            AnswerItem::Option { index, .. } => format!("#{}", index + 1),
            AnswerItem::FreeText { text } => text.clone(),
        })
        .collect()
}

/// The answer a single-question prompt gets from one reply.
fn answer(request: &AskRequest, reply: &str) -> Vec<String> {
    match ReplyReader::new(request).read(&Answers::new(), reply) {
        ReplyOutcome::Answered(answers) => items(answers.get(&request.questions[0].id).expect("answered")),
        other => panic!("{reply:?} gave {other:?}"),
    }
}

/// Each question's answer after the replies, by id, `-` for unanswered;
/// `skipped` or `not an answer` when a reply did that.
fn after(request: &AskRequest, replies: &[&str]) -> Vec<String> {
    let reader = ReplyReader::new(request);
    let mut answers = Answers::new();
    for reply in replies {
        match reader.read(&answers, reply) {
            ReplyOutcome::Answered(complete) | ReplyOutcome::Partial { answers: complete, .. } => answers = complete,
            ReplyOutcome::Skipped => return vec!["skipped".into()],
            ReplyOutcome::NotAnAnswer => return vec!["not an answer".into()],
        }
    }
    request
        .questions
        .iter()
        .map(|question| {
            answers
                .get(&question.id)
                .map_or_else(|| "-".to_owned(), |found| items(found).join(" | "))
        })
        .collect()
}

#[test]
fn single_select_exact_label_in_any_case_and_spacing() {
    let request = deploy();
    for reply in [
        "Production",
        "production",
        "  PRODUCTION  ",
        "Ｐｒｏｄｕｃｔｉｏｎ",
        "\"Production\"",
        "“production”",
        "production.",
        "Production!",
        "「Production」",
    ] {
        assert_eq!(answer(&request, reply), ["#2"], "{reply:?}");
    }
    assert_eq!(answer(&request, "Staging (Recommended)"), ["#1"]);
}

#[test]
fn a_label_typed_with_another_encoding_or_invisible_characters_is_that_label() {
    // A keyboard that composes accents otherwise, or a paste that brings a
    // zero-width space or a byte order mark along, still names the option.
    let request = single(&["Café", "Thé"]);
    for reply in ["cafe\u{301}", "\u{FEFF}café", "ca\u{200B}fé", "CAFE\u{301}\u{200D}"] {
        assert_eq!(answer(&request, reply), ["#1"], "{reply:?}");
    }
    assert_eq!(answer(&request, "the\u{301}"), ["#2"]);
}

#[test]
fn the_recommended_suffix_is_optional_when_typing() {
    let request = deploy();
    assert_eq!(answer(&request, "staging"), ["#1"]);
    assert_eq!(answer(&request, "Staging (recommended)"), ["#1"]);
    assert_eq!(answer(&request, "staging（recommended）"), ["#1"]);
    assert_eq!(answer(&request, "production (Recommended)"), ["#2"]);
}

#[test]
fn single_select_numbers_in_every_spelling() {
    let request = deploy();
    for reply in ["2", "2.", "2)", "(2)", "#2", "２", " 2 ", "（２）", "＃２"] {
        assert_eq!(answer(&request, reply), ["#2"], "{reply:?}");
    }
    assert_eq!(answer(&request, "3"), ["#3"]);
}

#[test]
fn out_of_range_numbers_and_anything_else_are_the_person_s_own_words() {
    let request = deploy();
    assert_eq!(answer(&request, "4"), ["4"]);
    assert_eq!(answer(&request, "0"), ["0"]);
    assert_eq!(
        answer(&request, "  Only the EU region, please  "),
        ["Only the EU region, please"]
    );
    assert_eq!(answer(&request, "2 and 3"), ["2 and 3"]);
    assert_eq!(answer(&request, "staging or production"), ["staging or production"]);
}

#[test]
fn a_label_equal_to_a_number_wins_over_the_number() {
    let request = single(&["3", "1", "Later"]);
    assert_eq!(answer(&request, "1"), ["#2"]);
    assert_eq!(answer(&request, "3"), ["#1"]);
    assert_eq!(answer(&request, "2"), ["#2"]);
    assert_eq!(answer(&request, "(1)"), ["#1"]);
    // Read without its suffix and its stop, `2 . (Recommended)` is typed `2`.
    let request = single(&["2 . (Recommended)", "A", "B"]);
    assert_eq!(answer(&request, "2"), ["#1"]);
    assert_eq!(answer(&request, "3"), ["#3"]);
}

#[test]
fn skip_words_skip_unless_an_option_is_called_that() {
    let request = deploy();
    for reply in ["skip", "SKIP", "/skip", " Skip. ", "跳过", "\"skip\""] {
        assert_eq!(
            ReplyReader::new(&request).read(&Answers::new(), reply),
            ReplyOutcome::Skipped,
            "{reply:?}"
        );
    }
    assert_eq!(answer(&request, "skip it"), ["skip it"]);
    let skip_option = single(&["Skip", "Run"]);
    assert_eq!(answer(&skip_option, "skip"), ["#1"]);
    assert_eq!(
        ReplyReader::new(&skip_option).read(&Answers::new(), "/skip"),
        ReplyOutcome::Skipped
    );
    let chinese = single(&["跳过", "执行"]);
    assert_eq!(answer(&chinese, "跳过"), ["#1"]);
}

#[test]
fn empty_replies_are_not_answers() {
    for request in [deploy(), multi(&["A", "B"]), three()] {
        for reply in ["", "   ", "\n\n", "\u{3000}"] {
            assert_eq!(
                ReplyReader::new(&request).read(&Answers::new(), reply),
                ReplyOutcome::NotAnAnswer
            );
        }
    }
}

#[test]
fn multi_select_whole_reply_as_one_label_even_with_commas() {
    let request = multi(&["Red, green", "Blue", "Black and white"]);
    assert_eq!(answer(&request, "red, green"), ["#1"]);
    assert_eq!(answer(&request, "Black and white"), ["#3"]);
}

#[test]
fn multi_select_labels_with_commas_inside_a_longer_reply() {
    let request = multi(&["Red, green", "Blue", "Yellow"]);
    assert_eq!(answer(&request, "Blue, Red, green"), ["#1", "#2"]);
    assert_eq!(answer(&request, "red, green; yellow"), ["#1", "#3"]);
    assert_eq!(answer(&request, "red, blue"), ["#2", "red"]);
}

#[test]
fn multi_select_separators() {
    let request = multi(&["Team channel", "On-call", "Nobody", "Managers"]);
    for reply in [
        "1, 3",
        "1,3",
        "1;3",
        "1、3",
        "1，3",
        "1；3",
        "1\n3",
        "1 and 3",
        "1 & 3",
        "1和3",
        "1 3",
        "3, 1",
        "1, 3, 1",
        "team channel, nobody",
        "Team channel and Nobody",
        "１，３",
        "(1), #3",
        "1 and nobody",
    ] {
        assert_eq!(answer(&request, reply), ["#1", "#3"], "{reply:?}");
    }
    assert_eq!(answer(&request, "4 2 1"), ["#1", "#2", "#4"]);
    assert_eq!(answer(&request, "on-call"), ["#2"]);
    assert_eq!(answer(&request, "2"), ["#2"]);
}

#[test]
fn multi_select_mixed_options_then_own_words_in_reply_order() {
    let request = multi(&["Team channel", "On-call", "Nobody"]);
    assert_eq!(
        answer(&request, "3, my manager, 1, the CTO"),
        ["#1", "#3", "my manager", "the CTO"]
    );
    assert_eq!(answer(&request, "on-call and legal"), ["on-call and legal"]);
    assert_eq!(answer(&request, "on-call, legal"), ["#2", "legal"]);
}

#[test]
fn multi_select_parts_with_nothing_to_read_are_dropped() {
    let request = multi(&["Team channel", "On-call", "Nobody"]);
    assert_eq!(answer(&request, "1, ., 3,,"), ["#1", "#3"]);
}

#[test]
fn multi_select_without_any_option_is_one_free_text_answer() {
    let request = multi(&["Team channel", "On-call", "Nobody"]);
    assert_eq!(answer(&request, "my manager, the CTO"), ["my manager, the CTO"]);
    assert_eq!(answer(&request, "5, 6"), ["5, 6"]);
    assert_eq!(answer(&request, "1 3 5"), ["1 3 5"]);
}

#[test]
fn several_questions_one_line_each_in_order() {
    assert_eq!(after(&three(), &["2\n1, 3\nnow"]), ["#2", "#1 | #3", "#1"]);
    assert_eq!(after(&three(), &["Canary\r\n\r\nOn-call\r\n2"]), ["#3", "#2", "#2"]);
}

#[test]
fn several_questions_keyed_by_number_id_or_header() {
    assert_eq!(after(&three(), &["3: 1\n1: 2\n2: 1, 3"]), ["#2", "#1 | #3", "#1"]);
    assert_eq!(
        after(&three(), &["when = tonight\nDEPLOY: canary\nnotify) nobody"]),
        ["#3", "#3", "#2"]
    );
    assert_eq!(after(&three(), &["３：２\n1：1\n2：2"]), ["#1", "#2", "#2"]);
    assert_eq!(
        after(&three(), &["Deploy : production\nnotify:1\nwhen:1"]),
        ["#2", "#1", "#1"]
    );
}

#[test]
fn a_dash_between_spaces_is_a_key_separator_but_a_label_with_a_dash_is_no_key() {
    assert_eq!(
        after(&three(), &["deploy - canary\n2 - nobody\nWhen – tonight"]),
        ["#3", "#3", "#2"]
    );
    // An em dash too, and the answer itself may contain a dash.
    assert_eq!(
        after(&three(), &["3 — not before 6 - 7 pm"]),
        ["-", "-", "not before 6 - 7 pm"]
    );
    // Without a key before it, a dash is part of the answer: a label with a
    // dash in it is read as the label, in its question's place.
    let dashed = request(&json!([
        {"id": "rollout", "header": "Rollout", "question": "How far?", "options": [{"label": "Canary - 5%"}, {"label": "Everyone"}]},
        {"id": "when", "header": "When", "question": "When?", "options": [{"label": "Now"}, {"label": "Tonight"}]},
    ]));
    assert_eq!(after(&dashed, &["Canary - 5%\nnow"]), ["#1", "#1"]);
    // A dash needs spaces on both sides to separate.
    assert_eq!(after(&three(), &["2-1"]), ["2-1", "-", "-"]);
}

#[test]
fn a_blank_line_between_answers_holds_its_question_s_place() {
    assert_eq!(after(&three(), &["2\n\nNow"]), ["#2", "-", "#1"]);
    assert_eq!(
        after(&three(), &["\n2\n\nNow\n\n"]),
        ["#2", "-", "#1"],
        "blank lines at the ends never count"
    );
    assert_eq!(
        after(&three(), &["\n\nNobody"]),
        ["Nobody", "-", "-"],
        "nor before the first answer"
    );
    // The missing question is still needed, and the next reply answers it.
    let asked = three();
    match ReplyReader::new(&asked).read(&Answers::new(), "2\n\nNow") {
        ReplyOutcome::Partial { missing, .. } => assert_eq!(missing, ["notify"]),
        other => panic!("expected a partial answer, got {other:?}"),
    }
    assert_eq!(after(&three(), &["2\n\nNow", "On-call"]), ["#2", "#2", "#1"]);
    // More lines than open questions: the blank lines are only spacing.
    assert_eq!(after(&three(), &["Canary\n\nOn-call\n\nnow"]), ["#3", "#2", "#1"]);
    let two = request(&json!([
        {"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "Staging"}, {"label": "Production"}]},
        {"id": "when", "header": "When", "question": "When?", "options": [{"label": "Now"}, {"label": "Tonight"}]},
    ]));
    assert_eq!(after(&two, &["1\n\n2"]), ["#1", "#2"]);
}

#[test]
fn a_question_s_full_text_is_a_key() {
    let regions = request(&json!([
        {"id": "region", "header": "Region", "question": "Which region?", "options": [{"label": "EU"}, {"label": "US"}]},
        {"id": "size", "header": "Size", "question": "How big: small or large?", "options": [{"label": "Small"}, {"label": "Large"}]},
    ]));
    // The key's own separator may appear inside the question's text.
    assert_eq!(
        after(&regions, &["how big: small or large?: large\nWhich region?: US"]),
        ["#2", "#2"]
    );
    assert_eq!(
        after(&regions, &["which region: EU"]),
        ["#1", "-"],
        "the question mark is optional"
    );
    // A question whose text is also another question's option: the line is
    // keyed to the question it names.
    let overlapping = request(&json!([
        {"id": "target", "header": "Target", "question": "Where?", "options": [{"label": "Production"}, {"label": "Staging"}]},
        {"id": "region", "header": "Zone", "question": "Production", "options": [{"label": "EU"}, {"label": "US"}]},
    ]));
    assert_eq!(after(&overlapping, &["Production: US"]), ["-", "#2"]);
    assert_eq!(
        after(&overlapping, &["Production"]),
        ["#1", "-"],
        "without a separator it is an answer"
    );
}

#[test]
fn several_keyed_answers_on_one_line() {
    assert_eq!(after(&three(), &["1: 2; 2: 1, 3; 3: 2"]), ["#2", "#1 | #3", "#2"]);
    // A segment without a key makes the `;` part of one answer instead.
    assert_eq!(after(&three(), &["2: 1; 3", "1", "2"]), ["#1", "#1 | #3", "#2"]);
}

#[test]
fn a_clock_time_or_a_number_naming_no_question_is_not_a_key() {
    assert_eq!(after(&three(), &["14:30"]), ["14:30", "-", "-"]);
    assert_eq!(after(&three(), &["2:30 tomorrow"]), ["2:30 tomorrow", "-", "-"]);
    assert_eq!(after(&three(), &["7: 1"]), ["7: 1", "-", "-"]);
    assert_eq!(after(&three(), &["ship: now"]), ["ship: now", "-", "-"]);
    assert_eq!(after(&three(), &["1:2"]), ["#2", "-", "-"]);
}

#[test]
fn keyed_answers_use_the_question_s_own_reading() {
    // Question 2 is multi-select: "1 and 2" is two options there, own words in question 1.
    assert_eq!(
        after(&three(), &["2: 1 and 2\n1: 1 and 2"]),
        ["1 and 2", "#1 | #2", "-"]
    );
}

#[test]
fn answers_may_arrive_over_several_replies_and_overwrite() {
    let request = three();
    let reader = ReplyReader::new(&request);
    let first = reader.read(&Answers::new(), "2: 1, 3");
    let ReplyOutcome::Partial { answers, took, missing } = first else {
        panic!("expected a partial answer, got {first:?}");
    };
    assert_eq!(
        (took, missing),
        (vec!["notify".to_owned()], vec!["deploy".to_owned(), "when".to_owned()])
    );

    // An unkeyed line fills the first unanswered question; a keyed one overwrites.
    let second = reader.read(&answers, "canary\n2: 2");
    let ReplyOutcome::Partial { answers, took, missing } = second else {
        panic!("expected a partial answer, got {second:?}");
    };
    assert_eq!(
        (took, missing),
        (vec!["deploy".to_owned(), "notify".to_owned()], vec!["when".to_owned()])
    );
    assert_eq!(items(answers.get("notify").unwrap()), ["#2"]);

    let ReplyOutcome::Answered(done) = reader.read(&answers, "tonight") else {
        panic!("expected the prompt to resolve");
    };
    assert_eq!(
        serde_json::to_value(askgate_core::ToolResult::from(&done)).unwrap(),
        json!({"status": "answered", "answers": {"answers": {
            "deploy": ["Canary"], "notify": ["On-call"], "when": ["Tonight"],
        }}})
    );
}

#[test]
fn unkeyed_lines_beyond_the_open_questions_change_nothing() {
    assert_eq!(after(&three(), &["1", "2: 1\nthanks\nbye"]), ["#1", "#1", "thanks"]);
}

#[test]
fn answer_order_follows_the_questions_whatever_the_reply_order() {
    let request = three();
    let ReplyOutcome::Answered(done) = ReplyReader::new(&request).read(&Answers::new(), "3: 1\n2: 1\n1: 1") else {
        panic!("answered expected");
    };
    let ids: Vec<&str> = done.iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["deploy", "notify", "when"]);
}

#[test]
fn skip_covers_the_whole_multi_question_prompt() {
    assert_eq!(after(&three(), &["skip"]), ["skipped"]);
    assert_eq!(after(&three(), &["1: 2", "跳过"]), ["skipped"]);
    // "skip" inside a longer reply is an answer like any other.
    assert_eq!(after(&three(), &["1: skip"]), ["skip", "-", "-"]);
}

#[test]
fn answers_carry_the_normalized_label_exactly_as_the_request_has_it() {
    let request = single(&["  Staging (Recommended) ", "Production"]);
    let ReplyOutcome::Answered(done) = ReplyReader::new(&request).read(&Answers::new(), "STAGING") else {
        panic!("answered expected");
    };
    assert_eq!(
        done.get("deploy").unwrap(),
        [AnswerItem::Option {
            index: 0,
            label: "Staging (Recommended)".into()
        }]
    );
}

#[test]
fn a_tap_gives_exactly_that_option() {
    let request = deploy();
    let reader = ReplyReader::new(&request);
    assert_eq!(items(reader.chosen(2).unwrap().get("deploy").unwrap()), ["#3"]);
    assert!(reader.chosen(3).is_none());
    assert!(ReplyReader::new(&three()).chosen(0).is_none());
}

#[test]
fn chinese_replies_and_separators() {
    let request = multi(&["团队频道", "值班人员", "不通知"]);
    assert_eq!(answer(&request, "团队频道、值班人员"), ["#1", "#2"]);
    assert_eq!(answer(&request, "团队频道和值班人员"), ["#1", "#2"]);
    assert_eq!(answer(&request, "１；３"), ["#1", "#3"]);
    assert_eq!(answer(&request, "“值班人员”。"), ["#2"]);
}

mod forms {
    use askgate_core::form::FormValue;
    use askgate_core::{ReplyOutcome, ReplyReader};

    use super::*;

    /// Deploy (single) and Notify (multi).
    fn release() -> AskRequest {
        request(&json!([
            {"id": "deploy", "header": "Deploy", "question": "Where?", "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}, {"label": "Canary"}]},
            {"id": "notify", "header": "Notify", "question": "Who?", "multiSelect": true, "options": [{"label": "Team channel"}, {"label": "On-call"}, {"label": "Nobody"}]},
        ]))
    }

    fn read(values: &[FormValue]) -> ReplyOutcome {
        ReplyReader::new(&release()).read_form(&Answers::new(), values)
    }

    #[test]
    fn each_field_is_read_like_a_typed_reply_to_its_question() {
        let outcome = read(&[FormValue::typed("deploy", "canary"), FormValue::typed("notify", "1 3")]);
        let ReplyOutcome::Answered(answers) = outcome else {
            panic!("both answered: {outcome:?}");
        };
        assert_eq!(
            serde_json::to_value(askgate_core::ToolResult::from(&answers)).unwrap(),
            json!({"status": "answered", "answers": {"answers": {"deploy": ["Canary"], "notify": ["Team channel", "Nobody"]}}})
        );
    }

    #[test]
    fn ticked_boxes_come_first_then_own_words() {
        let outcome = read(&[
            FormValue::typed("deploy", "2"),
            FormValue::typed("notify", "the CTO").with_checked(vec![2, 0, 9]),
        ]);
        let ReplyOutcome::Answered(answers) = outcome else {
            panic!("both answered: {outcome:?}");
        };
        assert_eq!(
            serde_json::to_value(answers.values()).unwrap(),
            json!({"answers": {"deploy": ["Production"], "notify": ["Team channel", "Nobody", "the CTO"]}})
        );
    }

    #[test]
    fn empty_fields_leave_their_question_open_and_skip_skips() {
        assert!(matches!(
            read(&[FormValue::typed("deploy", "1"), FormValue::typed("notify", "  ")]),
            ReplyOutcome::Partial { ref missing, .. } if missing == &["notify"]
        ));
        assert_eq!(
            read(&[FormValue::typed("deploy", ""), FormValue::typed("nope", "1")]),
            ReplyOutcome::NotAnAnswer
        );
        assert_eq!(read(&[FormValue::typed("deploy", "skip")]), ReplyOutcome::Skipped);
    }
}
