//! `askgate prompt`, end to end: the real binary, its exit codes and its
//! JSON outputs, which scripts depend on (README, "askgate prompt").

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn example(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "prompts", name]
        .iter()
        .collect();
    path.to_str().expect("a UTF-8 path").to_owned()
}

fn askgate(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the askgate binary starts");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes())
            .expect("stdin accepts the prompt");
    }
    child.wait_with_output().expect("askgate finishes")
}

fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn parse(file: &str, replies: &[&str]) -> Value {
    let path = example(file);
    let mut args = vec!["prompt", "parse", path.as_str()];
    for reply in replies {
        args.extend(["--reply", reply]);
    }
    let output = askgate(&args, None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_out(&output)
}

#[test]
fn validate_prints_the_normalized_request_with_its_timeout() {
    let output = askgate(&["prompt", "validate", &example("release.json")], None);
    assert_eq!(output.status.code(), Some(0));
    let normalized = json_out(&output);
    assert_eq!(normalized["timeoutSeconds"], json!(900));
    assert_eq!(normalized["questions"][0]["multiSelect"], json!(false));
    assert_eq!(normalized["questions"][1]["options"][2], json!({"label": "Nobody"}));
}

#[test]
fn validate_reads_standard_input() {
    let prompt = r#"{"questions":[{"id":"a","header":"  A very long header ","question":"Q?","options":[{"label":"x"},{"label":"y"}]}],"timeoutSeconds":7200.0}"#;
    let output = askgate(&["prompt", "validate", "-"], Some(prompt));
    assert_eq!(output.status.code(), Some(0));
    let normalized = json_out(&output);
    assert_eq!(normalized["questions"][0]["header"], json!("A very long"));
    assert_eq!(normalized["timeoutSeconds"], json!(3600));
}

#[test]
fn validate_takes_a_v1_body_and_says_which_fields_it_set_aside() {
    let body = r#"{"to":"me","sessionId":"s1","questions":[{"id":"a","header":"A","question":"Q?","options":[{"label":"x"},{"label":"y"}]}]}"#;
    let output = askgate(&["prompt", "validate", "-"], Some(body));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(json_out(&output)["questions"][0]["id"], json!("a"));
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("set aside to, sessionId: /v1 envelope fields"),
        "{stderr}"
    );
}

#[test]
fn validate_reports_every_problem_and_exits_1() {
    let prompt =
        r#"{"questions":[{"id":"Bad","header":"","question":"Q?","options":[{"label":"Other"}]}],"timeout":5}"#;
    let output = askgate(&["prompt", "validate", "-"], Some(prompt));
    assert_eq!(output.status.code(), Some(1));
    let errors = json_out(&output)["errors"].as_array().expect("an errors array").clone();
    let found: Vec<(String, String)> = errors
        .iter()
        .map(|error| {
            assert!(error["message"].as_str().is_some_and(|message| !message.is_empty()));
            (
                error["code"].as_str().unwrap().to_owned(),
                error["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("unknown_field", "timeout"),
        ("invalid_id", "questions[0].id"),
        ("empty_header", "questions[0].header"),
        ("option_count", "questions[0].options"),
        ("other_option_not_allowed", "questions[0].options[0].label"),
    ];
    assert_eq!(found, expected.map(|(code, path)| (code.to_owned(), path.to_owned())));
}

#[test]
fn a_file_that_is_not_json_is_refused_with_invalid_json() {
    let output = askgate(&["prompt", "validate", "-"], Some("questions: [deploy]"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json_out(&output)["errors"][0]["code"], json!("invalid_json"));
}

#[test]
fn a_missing_file_is_a_usage_error_with_exit_2() {
    let output = askgate(&["prompt", "validate", "/nonexistent/prompt.json"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/prompt.json"), "{stderr}");
}

#[test]
fn render_for_the_text_channel_prints_the_text() {
    let output = askgate(
        &["prompt", "render", &example("release.json"), "--channel", "text"],
        None,
    );
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("Questions for you (reply within 15 min)\n\n1. Deploy — Where should this build go?\n"));
    assert!(text.contains("2. Notify (choose any) — Who should be told?\n   1) Team channel\n"));
    assert!(text.ends_with("Reply \"skip\" to skip.\n"));
}

#[test]
fn render_in_chinese() {
    let output = askgate(
        &[
            "prompt",
            "render",
            &example("deploy.json"),
            "--channel",
            "text",
            "--locale",
            "zh-CN",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("有问题需要你回答（请在 10 分钟内回复）"), "{text}");
}

#[test]
fn render_for_a_chat_platform_prints_the_presentation_as_json() {
    for channel in ["telegram", "discord", "slack"] {
        let output = askgate(
            &["prompt", "render", &example("deploy.json"), "--channel", channel],
            None,
        );
        assert_eq!(output.status.code(), Some(0));
        let presentation = json_out(&output);
        assert_eq!(presentation["kind"], json!("buttons"), "{channel}");
        assert_eq!(presentation["options"][0]["token"], json!("ag1:preview:0"));
        assert_eq!(presentation["options"][0]["primary"], json!(true));
        assert_eq!(presentation["skip"]["label"], json!("Skip"));
        assert_eq!(presentation["other"]["label"], json!("Other…"));
    }
    let output = askgate(
        &["prompt", "render", &example("release.json"), "--channel", "telegram"],
        None,
    );
    let presentation = json_out(&output);
    assert_eq!(presentation["kind"], json!("text"));
    assert!(
        presentation["parts"][0]
            .as_str()
            .unwrap()
            .contains("Reply with one line per question")
    );
}

/// The page draws its own cards: the web preview is a sketch of the card in
/// the page's words, not the buttons a chat app shows.
#[test]
fn render_for_the_web_page_sketches_its_card_in_the_page_s_words() {
    let output = askgate(&["prompt", "render", &example("deploy.json"), "--channel", "web"], None);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("Question for you · Reply within "), "{text}");
    assert!(text.contains("Choose one"), "{text}");
    assert!(
        text.contains("Other — your own answer: [Type your answer…]\n"),
        "{text}"
    );
    assert!(text.ends_with("\n[Send] [Skip]\n"), "{text}");
    assert!(!text.contains("Other…") && !text.contains("ag1:"), "{text}");
}

#[test]
fn render_refuses_an_unknown_channel_or_locale() {
    for args in [
        ["--channel", "irc", "--locale", "en"],
        ["--channel", "text", "--locale", "fr"],
    ] {
        let path = example("deploy.json");
        let mut all = vec!["prompt", "render", path.as_str()];
        all.extend(args);
        let output = askgate(&all, None);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn parse_answers_a_single_question() {
    assert_eq!(
        parse("deploy.json", &["staging"]),
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}})
    );
    assert_eq!(
        parse("deploy.json", &["the EU region only"]),
        json!({"status": "answered", "answers": {"answers": {"deploy_target": ["the EU region only"]}}})
    );
}

#[test]
fn parse_collects_answers_over_several_replies() {
    assert_eq!(
        parse("release.json", &["2: 1, 3", "canary"]),
        json!({"status": "answered", "answers": {"answers": {
            "deploy_target": ["Canary"], "notify": ["Team channel", "Nobody"],
        }}})
    );
    assert_eq!(
        parse("release.json", &["notify: on-call"]),
        json!({"status": "incomplete", "answers": {"notify": ["On-call"]}, "missing": ["deploy_target"]})
    );
}

#[test]
fn parse_reports_skips_and_refusals() {
    assert_eq!(parse("release.json", &["1: 2", "skip"]), json!({"status": "skipped"}));
    assert_eq!(
        parse("deploy.json", &["   "]),
        json!({"status": "refused", "reason": "not_an_answer"})
    );
}

#[test]
fn parse_needs_a_reply() {
    let output = askgate(&["prompt", "parse", &example("deploy.json")], None);
    assert_eq!(output.status.code(), Some(2));
}
