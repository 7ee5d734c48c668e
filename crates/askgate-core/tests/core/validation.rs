//! Spec §2, rule by rule: every validation error with its code and path, the
//! normalization of what passes, and the boundaries.

use askgate_core::{ErrorCode, ValidationErrors, validate, validate_json, validate_with_max_timeout};
use serde_json::{Value, json};

fn option(label: &str) -> Value {
    json!({ "label": label })
}

fn question(id: &str, labels: &[&str]) -> Value {
    json!({
        "id": id,
        "header": "Deploy",
        "question": "Where should this build go?",
        "options": labels.iter().map(|label| option(label)).collect::<Vec<_>>(),
    })
}

fn one(question: Value) -> Value {
    let mut request = json!({ "questions": [] });
    request["questions"].as_array_mut().expect("an array").push(question);
    request
}

fn valid() -> Value {
    one(question("deploy_target", &["Staging (Recommended)", "Production"]))
}

fn errors(request: &Value) -> ValidationErrors {
    validate(request).expect_err("the request should be refused")
}

/// The (code, path) pairs of a refused request, in order.
fn problems(request: &Value) -> Vec<(&'static str, String)> {
    errors(request)
        .errors
        .into_iter()
        .map(|error| (error.code.as_str(), error.path))
        .collect()
}

/// `request` with the field at `pointer` set to `value` (added if absent).
fn with(mut request: Value, pointer: &str, value: Value) -> Value {
    let (parent, field) = pointer.rsplit_once('/').expect("a JSON pointer");
    let parent = request.pointer_mut(parent).expect("the pointer's parent exists");
    match parent {
        Value::Object(map) => {
            map.insert(field.to_owned(), value);
        }
        Value::Array(items) => items[field.parse::<usize>().expect("an index")] = value,
        _ => panic!("{pointer} is inside a scalar"),
    }
    request
}

#[test]
fn a_valid_request_is_normalized_with_the_default_timeout() {
    let request = validate(&json!({
        "questions": [{
            "id": "deploy_target",
            "header": "  Deploy  ",
            "question": "  Where should\nthis build go?  ",
            "options": [
                {"label": " Staging (Recommended) ", "description": "  safe, resets nightly "},
                {"label": "Production", "description": "   "},
            ],
        }],
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({
            "questions": [{
                "id": "deploy_target",
                "header": "Deploy",
                "question": "Where should this build go?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "safe, resets nightly"},
                    {"label": "Production"},
                ],
                "multiSelect": false,
            }],
            "timeoutSeconds": 900,
        })
    );
}

#[test]
fn one_to_three_questions() {
    let q = |id: &str| question(id, &["A", "B"]);
    assert_eq!(
        problems(&json!({"questions": []})),
        [("question_count", "questions".to_owned())]
    );
    assert!(validate(&json!({"questions": [q("a")]})).is_ok());
    assert!(validate(&json!({"questions": [q("a"), q("b"), q("c")]})).is_ok());
    assert_eq!(
        problems(&json!({"questions": [q("a"), q("b"), q("c"), q("d")]})),
        [("question_count", "questions".to_owned())]
    );
    assert_eq!(problems(&json!({})), [("missing_field", "questions".to_owned())]);
    assert_eq!(
        problems(&json!({"questions": "many"})),
        [("invalid_type", "questions".to_owned())]
    );
}

#[test]
fn ids_are_snake_case_and_at_most_64_characters() {
    for id in ["a", "deploy_target", "x9", "a_1_b", &"a".repeat(64)] {
        assert!(validate(&one(question(id, &["A", "B"]))).is_ok(), "{id}");
    }
    for id in [
        "",
        "Deploy",
        "1abc",
        "_a",
        "deploy-target",
        "deploy target",
        " deploy",
        "déploy",
        &"a".repeat(65),
    ] {
        assert_eq!(
            problems(&one(question(id, &["A", "B"]))),
            [("invalid_id", "questions[0].id".to_owned())],
            "{id:?}"
        );
    }
    assert_eq!(
        problems(&with(valid(), "/questions/0/id", json!(7))),
        [("invalid_type", "questions[0].id".to_owned())]
    );
}

#[test]
fn ids_are_unique() {
    let request =
        json!({"questions": [question("a", &["A", "B"]), question("b", &["A", "B"]), question("a", &["A", "B"])]});
    assert_eq!(problems(&request), [("duplicate_id", "questions[2].id".to_owned())]);
}

#[test]
fn headers_are_trimmed_then_cut_to_12_user_perceived_characters() {
    let header = |text: &str| {
        let request = validate(&with(valid(), "/questions/0/header", json!(text))).unwrap();
        request.questions[0].header.clone()
    };
    assert_eq!(header("  Deploy target now  "), "Deploy targe");
    assert_eq!(header("123456789012"), "123456789012");
    assert_eq!(header("1234567890123"), "123456789012");
    assert_eq!(header("部署目标环境选择与确认流程说明"), "部署目标环境选择与确认流");
    let family = "👨\u{200D}👩\u{200D}👧";
    assert_eq!(
        header(&format!("{}{family}{family}", "a".repeat(11))),
        format!("{}{family}", "a".repeat(11))
    );
    // Cutting never leaves a trailing space.
    assert_eq!(header("Deploy the b"), "Deploy the b");
    assert_eq!(header("Deploy     target"), "Deploy targe");
}

#[test]
fn an_empty_header_is_an_error_but_truncation_is_not() {
    for header in ["", "   ", "\n\t"] {
        assert_eq!(
            problems(&with(valid(), "/questions/0/header", json!(header))),
            [("empty_header", "questions[0].header".to_owned())]
        );
    }
    assert!(validate(&with(valid(), "/questions/0/header", json!("x".repeat(500)))).is_ok());
}

#[test]
fn questions_are_1_to_300_characters_after_trimming() {
    let text = |text: String| with(valid(), "/questions/0/question", json!(text));
    assert!(validate(&text("x".repeat(300))).is_ok());
    assert!(validate(&text(format!("  {}  ", "x".repeat(300)))).is_ok());
    assert!(validate(&text("问".repeat(300))).is_ok());
    assert_eq!(
        problems(&text("x".repeat(301))),
        [("invalid_question", "questions[0].question".to_owned())]
    );
    assert_eq!(
        problems(&text("   ".to_owned())),
        [("invalid_question", "questions[0].question".to_owned())]
    );
}

#[test]
fn two_to_four_options() {
    let labels = |labels: &[&str]| one(question("a", labels));
    assert_eq!(
        problems(&labels(&["A"])),
        [("option_count", "questions[0].options".to_owned())]
    );
    assert!(validate(&labels(&["A", "B"])).is_ok());
    assert!(validate(&labels(&["A", "B", "C", "D"])).is_ok());
    assert_eq!(
        problems(&labels(&["A", "B", "C", "D", "E"])),
        [("option_count", "questions[0].options".to_owned())]
    );
    assert_eq!(
        problems(&labels(&[])),
        [("option_count", "questions[0].options".to_owned())]
    );
}

#[test]
fn labels_are_1_to_64_characters_after_trimming() {
    let labels = |label: String| one(question("a", &[&label, "Other one"]));
    assert!(validate(&labels("x".repeat(64))).is_ok());
    assert!(validate(&labels(format!(" {} ", "x".repeat(64)))).is_ok());
    assert_eq!(
        problems(&labels("x".repeat(65))),
        [("invalid_label", "questions[0].options[0].label".to_owned())]
    );
    assert_eq!(
        problems(&labels("  ".to_owned())),
        [("invalid_label", "questions[0].options[0].label".to_owned())]
    );
}

#[test]
fn labels_are_unique_case_insensitively_after_trimming() {
    assert_eq!(
        problems(&one(question("a", &["Staging", "Production", " STAGING "]))),
        [("duplicate_label", "questions[0].options[2].label".to_owned())]
    );
    assert_eq!(
        problems(&one(question("a", &["Straße", "STRASSE"]))),
        [("duplicate_label", "questions[0].options[1].label".to_owned())]
    );
    // The same label in two different questions is fine.
    let request = json!({"questions": [question("a", &["Yes", "No"]), question("b", &["Yes", "No"])]});
    assert!(validate(&request).is_ok());
}

#[test]
fn other_is_the_system_s_own_option() {
    for label in [
        "Other", "other", "OTHER", "Other…", "Other...", "Other:", "其他", " Other ",
    ] {
        assert_eq!(
            problems(&one(question("a", &["A", label]))),
            [("other_option_not_allowed", "questions[0].options[1].label".to_owned())],
            "{label:?}"
        );
    }
    for label in ["Others", "Another", "Other team", "其他人"] {
        assert!(validate(&one(question("a", &["A", label]))).is_ok(), "{label:?}");
    }
}

#[test]
fn labels_that_look_the_same_are_duplicates_whatever_their_encoding_or_invisible_characters() {
    // "café" composed (U+00E9) and decomposed (e + U+0301), a byte order
    // mark in front, a zero-width space, joiner or non-joiner inside, a
    // right-to-left mark, a variation selector: each looks like the first.
    for look_alike in [
        "cafe\u{301}",
        "\u{FEFF}café",
        "ca\u{200B}fé",
        "caf\u{200D}é",
        "c\u{200C}afé",
        "café\u{200F}",
        "\u{2060}café\u{FE0F}",
        "CAFE\u{301}",
    ] {
        assert_eq!(
            problems(&one(question("a", &["café", look_alike]))),
            [("duplicate_label", "questions[0].options[1].label".to_owned())],
            "{look_alike:?}"
        );
    }
    // An invisible character between a letter and its accent does not keep them apart.
    assert_eq!(
        problems(&one(question("a", &["café", "cafe\u{200B}\u{301}"]))),
        [("duplicate_label", "questions[0].options[1].label".to_owned())]
    );
    // Letters that differ still differ; a visible mark is no invisible one.
    for different in ["cafe", "cafè", "café!x", "café·"] {
        assert!(
            validate(&one(question("a", &["café", different]))).is_ok(),
            "{different:?}"
        );
    }
}

#[test]
fn a_label_of_invisible_characters_only_is_invalid() {
    for invisible in [
        "\u{200B}",
        "\u{200B}\u{200C}\u{200D}",
        "\u{FEFF}\u{2060}",
        "\u{202E}\u{2066}\u{2069}",
        "\u{00AD}",
        "\u{3164}",
        "\u{E0041}\u{E007F}",
        " \u{200B} ",
    ] {
        assert_eq!(
            problems(&one(question("a", &["A", invisible]))),
            [("invalid_label", "questions[0].options[1].label".to_owned())],
            "{invisible:?}"
        );
    }
    // A label with something visible beside them is a label, kept as given.
    let request = validate(&one(question("a", &["A", "\u{200B}B"]))).expect("a visible label");
    assert_eq!(request.questions[0].options[1].label, "\u{200B}B");
}

#[test]
fn other_hidden_by_invisible_characters_or_decomposed_is_still_other() {
    for label in [
        "Oth\u{200B}er",
        "\u{FEFF}Other",
        "O\u{200D}t\u{200C}h\u{2060}e\u{AD}r",
        "Other\u{200E}…",
        "其\u{200B}他",
        "\u{202E}other",
    ] {
        assert_eq!(
            problems(&one(question("a", &["A", label]))),
            [("other_option_not_allowed", "questions[0].options[1].label".to_owned())],
            "{label:?}"
        );
    }
}

#[test]
fn descriptions_are_optional_trimmed_and_at_most_150_characters() {
    let described = |description: Value| with(valid(), "/questions/0/options/0/description", description);
    assert!(validate(&described(json!("x".repeat(150)))).is_ok());
    assert_eq!(
        problems(&described(json!("x".repeat(151)))),
        [("invalid_description", "questions[0].options[0].description".to_owned())]
    );
    assert_eq!(
        validate(&described(json!(""))).unwrap().questions[0].options[0].description,
        None
    );
    assert_eq!(
        validate(&described(Value::Null)).unwrap().questions[0].options[0].description,
        None
    );
    assert_eq!(
        problems(&described(json!(["x"]))),
        [("invalid_type", "questions[0].options[0].description".to_owned())]
    );
}

#[test]
fn multi_select_defaults_to_false_and_must_be_a_boolean() {
    assert!(!validate(&valid()).unwrap().questions[0].multi_select);
    let multi = with(valid(), "/questions/0/multiSelect", json!(true));
    assert!(validate(&multi).unwrap().questions[0].multi_select);
    assert_eq!(
        problems(&with(valid(), "/questions/0/multiSelect", json!("yes"))),
        [("invalid_type", "questions[0].multiSelect".to_owned())]
    );
}

#[test]
fn timeouts_are_whole_seconds_clamped_to_30_through_3600() {
    let timeout = |seconds: Value| {
        let mut request = valid();
        request["timeoutSeconds"] = seconds;
        request
    };
    let clamped = |seconds: Value| validate(&timeout(seconds)).unwrap().timeout_seconds;
    assert_eq!(clamped(json!(29)), 30);
    assert_eq!(clamped(json!(30)), 30);
    assert_eq!(clamped(json!(60)), 60);
    assert_eq!(clamped(json!(60.0)), 60);
    assert_eq!(clamped(json!(3600)), 3600);
    assert_eq!(clamped(json!(3601)), 3600);
    assert_eq!(clamped(json!(-5)), 30);
    assert_eq!(clamped(json!(0)), 30);
    assert_eq!(clamped(json!(1e300)), 3600);
    assert_eq!(clamped(json!(u64::MAX)), 3600);
    assert_eq!(clamped(Value::Null), 900);
    for bad in [json!(60.5), json!("60"), json!(true), json!([60]), json!(0.000_1)] {
        assert_eq!(
            problems(&timeout(bad.clone())),
            [("invalid_timeout", "timeoutSeconds".to_owned())],
            "{bad}"
        );
    }
}

/// `POST /v1/questions` keeps a timeout up to the agent's `max_timeout`
/// and refuses a longer one, naming the limit; below the hour it reads as
/// the contract does.
#[test]
fn a_longer_wait_is_kept_up_to_the_agents_limit_and_refused_beyond() {
    let timeout = |seconds: Value| {
        let mut request = valid();
        request["timeoutSeconds"] = seconds;
        request
    };
    let eight_hours = 8 * 3600;
    let kept = |seconds: Value| {
        validate_with_max_timeout(&timeout(seconds), eight_hours)
            .unwrap()
            .timeout_seconds
    };
    assert_eq!(kept(json!(3601)), 3601);
    assert_eq!(kept(json!(7200)), 7200);
    assert_eq!(kept(json!(28_800)), 28_800);
    assert_eq!(kept(json!(28_800.0)), 28_800);
    assert_eq!(kept(json!(900)), 900);
    assert_eq!(kept(json!(5)), 30);
    assert_eq!(kept(Value::Null), 900);
    for long in [json!(28_801), json!(1e300), json!(u64::MAX)] {
        let errors = validate_with_max_timeout(&timeout(long.clone()), eight_hours).unwrap_err();
        assert_eq!(errors.errors.len(), 1, "{long}");
        let error = &errors.errors[0];
        assert_eq!(
            (error.code.as_str(), error.path.as_str()),
            ("invalid_timeout", "timeoutSeconds")
        );
        assert!(
            error.message.contains("max_timeout is 28800 s (8h)"),
            "{}",
            error.message
        );
    }
    // Reported with the request's other problems, in one round trip.
    let mut both = timeout(json!(90_000));
    both["questions"][0]["id"] = json!("Bad");
    assert_eq!(
        validate_with_max_timeout(&both, eight_hours)
            .unwrap_err()
            .errors
            .iter()
            .map(|e| e.code.as_str())
            .collect::<Vec<_>>(),
        ["invalid_id", "invalid_timeout"]
    );
    // The default limit is the contract's hour, but refused rather than
    // lowered; a limit is never below the hour nor above a week.
    assert!(validate_with_max_timeout(&timeout(json!(3601)), 3600).is_err());
    assert_eq!(
        validate_with_max_timeout(&timeout(json!(3600)), 60)
            .unwrap()
            .timeout_seconds,
        3600
    );
    let week = 7 * 86_400;
    assert_eq!(
        validate_with_max_timeout(&timeout(json!(week)), u32::MAX)
            .unwrap()
            .timeout_seconds,
        week
    );
    assert!(validate_with_max_timeout(&timeout(json!(week + 1)), u32::MAX).is_err());
    // The contract's own call still lowers it.
    assert_eq!(validate(&timeout(json!(28_800))).unwrap().timeout_seconds, 3600);
}

#[test]
fn unknown_fields_are_refused_wherever_they_are() {
    let mut request = valid();
    request["timeout"] = json!(60);
    request["questions"][0]["multiselect"] = json!(true);
    request["questions"][0]["options"][1]["value"] = json!("prod");
    assert_eq!(
        problems(&request),
        [
            ("unknown_field", "timeout".to_owned()),
            ("unknown_field", "questions[0].multiselect".to_owned()),
            ("unknown_field", "questions[0].options[1].value".to_owned()),
        ]
    );
}

#[test]
fn every_problem_is_reported_with_its_path_and_a_sentence() {
    let request = json!({
        "questions": [
            {"id": "Bad Id", "header": " ", "question": "", "options": [{"label": "Other"}]},
            {"id": "ok", "header": "Fine", "question": "Fine?", "options": [{"label": "A"}, {"label": "a"}, {"label": ""}]},
        ],
        "timeoutSeconds": 1.5,
    });
    let refused = errors(&request);
    let found: Vec<(&str, &str)> = refused
        .errors
        .iter()
        .map(|e| (e.code.as_str(), e.path.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("invalid_id", "questions[0].id"),
            ("empty_header", "questions[0].header"),
            ("invalid_question", "questions[0].question"),
            ("option_count", "questions[0].options"),
            ("other_option_not_allowed", "questions[0].options[0].label"),
            ("duplicate_label", "questions[1].options[1].label"),
            ("invalid_label", "questions[1].options[2].label"),
            ("invalid_timeout", "timeoutSeconds"),
        ]
    );
    for error in &refused.errors {
        assert!(error.message.ends_with('.') && error.message.len() > 20, "{error:?}");
    }
    assert!(refused.has(ErrorCode::DuplicateLabel));
    assert_eq!(
        serde_json::to_value(&refused).unwrap()["errors"][0],
        json!({"code": "invalid_id", "path": "questions[0].id", "message": refused.errors[0].message})
    );
}

#[test]
fn duplicate_ids_are_found_even_when_the_question_has_other_problems() {
    let request = json!({"questions": [question("a", &["A", "B"]), question("a", &["A"])]});
    assert_eq!(
        problems(&request),
        [
            ("option_count", "questions[1].options".to_owned()),
            ("duplicate_id", "questions[1].id".to_owned())
        ]
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
    );
}

#[test]
fn wrong_shapes_and_missing_fields_are_named() {
    assert_eq!(problems(&json!([])), [("invalid_type", String::new())]);
    assert_eq!(
        problems(&json!({"questions": ["deploy?"]})),
        [("invalid_type", "questions[0]".to_owned())]
    );
    assert_eq!(
        problems(&json!({"questions": [{"id": "a", "options": [{"label": "A"}, "B"]}]})),
        [
            ("missing_field", "questions[0].header".to_owned()),
            ("missing_field", "questions[0].question".to_owned()),
            ("invalid_type", "questions[0].options[1]".to_owned()),
        ]
    );
    assert_eq!(
        problems(&with(valid(), "/questions/0/options/0", json!({"description": "x"}))),
        [("missing_field", "questions[0].options[0].label".to_owned())]
    );
}

#[test]
fn text_that_is_not_json_is_invalid_json() {
    let refused = validate_json("{\"questions\": [").unwrap_err();
    assert_eq!(refused.errors.len(), 1);
    assert_eq!(refused.errors[0].code, ErrorCode::InvalidJson);
    assert!(
        refused.errors[0].message.contains("line 1"),
        "{}",
        refused.errors[0].message
    );
    assert!(validate_json(&valid().to_string()).is_ok());
}

/// An error quotes what it blames, never more than an excerpt of it: a
/// 60 KB id, field name or timeout is named in a few dozen characters.
#[test]
fn problems_quote_the_request_cut_short() {
    let huge = "x".repeat(60_000);
    let mut request = one(question(&format!("a{huge}"), &["A", "B"]));
    request[&huge] = json!(1);
    request["questions"][0][format!("q{huge}")] = json!(1);
    request["timeoutSeconds"] = json!(huge);
    let found = errors(&request).errors;
    let codes: Vec<&str> = found.iter().map(|error| error.code.as_str()).collect();
    assert_eq!(
        codes,
        ["unknown_field", "unknown_field", "invalid_id", "invalid_timeout"],
        "{found:?}"
    );
    for error in &found {
        assert!(
            error.message.len() < 400,
            "{} bytes: {}",
            error.message.len(),
            error.message
        );
        assert!(error.path.len() < 200, "{} bytes: {}", error.path.len(), error.path);
        assert!(!error.message.contains(&huge[..1000]), "{}", error.message);
    }
    assert!(
        found[0].path.starts_with("xxxx") && found[0].path.ends_with('…'),
        "{}",
        found[0].path
    );
    assert!(found[1].path.starts_with("questions[0].qxxx"), "{}", found[1].path);
    assert_eq!(found[2].path, "questions[0].id");
    assert!(found[2].message.starts_with("The id \"axxx"), "{}", found[2].message);
}
