//! askgate's MCP server end to end, driven by a real client nobody here
//! wrote: the official MCP Python SDK (`mcp` from the Python Package Index,
//! pinned in `tests/mcp/requirements.txt` and installed into
//! `target/mcp-venv`, apart from schemathesis's virtualenv so that neither
//! pin rebuilds or constrains the other). Its prerequisites are installed
//! when they can be and reported when they cannot (`support::venv`); this
//! test never skips.
//!
//! Each test starts the real `askgate serve` with `[mcp] wait_seconds` at
//! `WAIT_SECONDS`, then runs `tests/mcp/client.py` once: over streamable
//! HTTP (`<base>/mcp`, the agent's bearer token) or over stdio (the SDK
//! launches `askgate mcp --url <base>` with `ASKGATE_TOKEN`, as MCP clients
//! do), and in either of the SDK's ways to connect: its default (probe
//! `server/discover`, fall back to `initialize`) and the `initialize`
//! handshake of the clients of 2025. (askgate speaks the handshake-era
//! revisions, so it refuses the probe with -32022 and the SDK falls back; the
//! summary names the protocol each run ended on.) The script plays every
//! scenario in a session of its own, the agent through the SDK and the
//! person through the web page's API, and prints what it saw as JSON; this
//! file says what is right. Every problem of a run is reported at once, with
//! what the scenario saw, the client's stderr (which holds `askgate mcp`'s
//! log over stdio) and askgate's log.
//!
//! The scenarios: the tool list (names, `ask_user`'s input schema and its
//! description, which is askgate's model guidance); `ask_user` answered on
//! the page while it waits → the exact structured result; `ask_user` past
//! `wait_seconds` → `pending`, `await_answer` → `pending` again, then
//! answered while it waits → the result, with progress notifications while
//! waiting; a request with five problems → `isError` naming each code and
//! path; a waiting `ask_user` given up by the client
//! (`notifications/cancelled`) → the question is `cancelled` while the
//! session lives on, and the session may ask again; a second `ask_user`
//! while one waits → `question_pending`, and `cancel_question` ends the
//! first; no token or a wrong one → 401 (streamable HTTP). Every session the
//! SDK opens it closes without a warning: its log (on the client's stderr)
//! never says "Session termination failed" (askgate's `DELETE /mcp` answers
//! 204; rmcp's 202 made the SDK warn on every close).
//!
//! Bounded: each scenario ends within 30 s in the script, each run within
//! `RUN_TIMEOUT`; a run takes about 10 s.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use askgate_core::guidance::TOOL_DESCRIPTION;
use serde_json::{Value, json};
use support::venv::{Venv, read_back};
use support::{AGENT_TOKEN, ASKGATE, LIMITED_TOKEN, ME_KEY, Server, repo_root};

/// `[mcp] wait_seconds`: how long a tool call waits before it returns
/// `pending`. Only `pending_then_await` lets it pass; everywhere else the
/// person or the client acts within about 0.1 s, well inside it on busy cores.
const WAIT_SECONDS: u32 = 3;
/// One run of the client script, on 2 busy cores; it takes about 10 s.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Every scenario of the script.
const ALL: &[&str] = &[
    "list_tools",
    "answered",
    "pending_then_await",
    "validation",
    "cancelled",
    "question_pending",
    "no_token",
];

/// The harness configuration's addition.
fn mcp_config() -> String {
    format!("\n[mcp]\nwait_seconds = {WAIT_SECONDS}\n")
}

/// The Python of `target/mcp-venv`, holding the pinned SDK (`mcp` 2 needs Python 3.10).
fn sdk_python() -> PathBuf {
    Venv::new("mcp", "mcp-venv", "tests/mcp/requirements.txt", (3, 10)).ensure("python")
}

/// The transport the client speaks.
#[derive(Clone, Copy)]
enum Transport {
    Http,
    Stdio,
}

/// How the SDK connects: its default (`auto`) or the `initialize` handshake (`legacy`).
#[derive(Clone, Copy)]
enum Mode {
    Auto,
    Legacy,
}

/// What one run of `tests/mcp/client.py` printed.
struct Run {
    /// `streamable HTTP, the SDK's default connection`, for messages.
    what: String,
    /// Each scenario's report: `{"scenario", "seconds", "observed", "transportFaults", "error"?}`.
    reports: BTreeMap<String, Value>,
    /// The script's stdout lines that were not reports.
    stray: Vec<String>,
    /// The script's stderr (with `askgate mcp`'s log over stdio).
    stderr: String,
    /// How the script ended, or why it did not.
    ended: String,
    /// Whether it exited with success (it does after every scenario, passed or not).
    exited: bool,
}

/// Runs the client script against `server`, playing `scenarios`.
async fn run_client(python: &Path, server: &Server, transport: Transport, mode: Mode, scenarios: &[&str]) -> Run {
    let (transport_arg, transport_name) = match transport {
        Transport::Http => ("http", "streamable HTTP"),
        Transport::Stdio => ("stdio", "stdio (askgate mcp)"),
    };
    let (mode_arg, mode_name) = match mode {
        Mode::Auto => ("auto", "the SDK's default connection"),
        Mode::Legacy => ("legacy", "the initialize handshake"),
    };
    let what = format!("{transport_name}, {mode_name}");
    let script = repo_root().join("tests").join("mcp").join("client.py");
    let stdout = tempfile::tempfile().expect("a temporary file");
    let stderr = tempfile::tempfile().expect("a temporary file");
    let mut child = tokio::process::Command::new(python)
        .arg(&script)
        .args(["--transport", transport_arg, "--mode", mode_arg])
        .args(["--base", server.base(), "--token", AGENT_TOKEN, "--page-key", ME_KEY])
        .arg("--askgate")
        .arg(ASKGATE)
        .args(scenarios)
        .current_dir(server.data_dir())
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().expect("the file handle clones"))
        .stderr(stderr.try_clone().expect("the file handle clones"))
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{} could not run {}: {error}", python.display(), script.display()));
    let started = Instant::now();
    let (ended, exited) = match tokio::time::timeout(RUN_TIMEOUT, child.wait()).await {
        Ok(status) => {
            let status = status.expect("the client can be waited for");
            let seconds = started.elapsed().as_secs_f64();
            (format!("{status} after {seconds:.1} s"), status.success())
        }
        Err(_) => {
            let _ = child.kill().await;
            (format!("was killed: it did not finish within {RUN_TIMEOUT:?}"), false)
        }
    };
    let mut reports = BTreeMap::new();
    let mut stray = Vec::new();
    for line in read_back(stdout).lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(report) if report["scenario"].is_string() => {
                reports.insert(report["scenario"].as_str().unwrap_or_default().to_owned(), report);
            }
            _ => stray.push(line.to_owned()),
        }
    }
    Run {
        what,
        reports,
        stray,
        stderr: read_back(stderr),
        ended,
        exited,
    }
}

/// The problems found in a run, reported together at the end.
#[derive(Default)]
struct Checks {
    failures: Vec<(String, String)>,
}

impl Checks {
    fn check(&mut self, scenario: &str, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push((scenario.to_owned(), what()));
        }
    }

    /// `actual` is `expected`.
    fn equal(&mut self, scenario: &str, what: &str, actual: &Value, expected: &Value) {
        self.check(scenario, actual == expected, || {
            format!("{what}: expected {expected}, got {actual}")
        });
    }

    /// Fails the test with every problem, what each failing scenario saw, and both logs.
    fn finish(mut self, run: &Run, server: &mut Server) {
        self.check("the client", run.exited, || format!("it {}", run.ended));
        let protocol = run
            .reports
            .values()
            .find_map(|report| report["observed"]["protocolVersion"].as_str())
            .unwrap_or("not negotiated");
        let mut summary = format!(
            "MCP over {} (protocol {protocol}): the client {}\n",
            run.what, run.ended
        );
        for (scenario, report) in &run.reports {
            let failed = self.failures.iter().any(|(name, _)| name == scenario);
            let _ = writeln!(
                summary,
                "  {scenario}: {} ({} s)",
                if failed { "FAILED" } else { "ok" },
                report["seconds"]
            );
        }
        println!("{summary}");
        if self.failures.is_empty() {
            return;
        }
        let mut message = format!("MCP over {}: {} problem(s)\n", run.what, self.failures.len());
        for (scenario, failure) in &self.failures {
            let _ = writeln!(message, "- {scenario}: {failure}");
        }
        let mut shown = Vec::new();
        for (scenario, _) in &self.failures {
            if shown.contains(scenario) {
                continue;
            }
            shown.push(scenario.clone());
            if let Some(report) = run.reports.get(scenario) {
                let _ = writeln!(message, "\n=== {scenario} observed:\n{:#}", report["observed"]);
                if let Some(error) = report["error"].as_str() {
                    let _ = writeln!(message, "=== {scenario} broke off:\n{error}");
                }
            }
        }
        let _ = writeln!(message, "\n=== the client {}", run.ended);
        if !run.stray.is_empty() {
            let _ = writeln!(message, "=== its other output:\n{}", run.stray.join("\n"));
        }
        let _ = writeln!(message, "=== its stderr:\n{}", run.stderr);
        let _ = writeln!(message, "=== askgate's log:\n{}", server.stderr());
        panic!("{message}");
    }
}

/// Follows `$ref`s into the root schema's definitions and looks through an
/// `anyOf`/`oneOf`/`allOf` with one member that is not `null` (how an
/// optional field is often written).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..16 {
        if let Some(pointer) = schema["$ref"]
            .as_str()
            .and_then(|reference| reference.strip_prefix('#'))
        {
            schema = root.pointer(pointer).unwrap_or(&Value::Null);
            continue;
        }
        let members = ["anyOf", "oneOf", "allOf"]
            .iter()
            .find_map(|key| schema[*key].as_array())
            .map(|members| {
                members
                    .iter()
                    .filter(|member| member["type"] != "null")
                    .collect::<Vec<_>>()
            });
        match members.as_deref() {
            Some([only]) => schema = only,
            _ => break,
        }
    }
    schema
}

/// A property's schema, resolved; `Null` when absent.
fn property<'a>(root: &'a Value, schema: &'a Value, name: &str) -> &'a Value {
    resolve(root, &resolve(root, schema)["properties"][name])
}

/// A property's description, on the property itself or what it refers to.
fn description<'a>(root: &'a Value, schema: &'a Value, name: &str) -> &'a str {
    resolve(root, schema)["properties"][name]["description"]
        .as_str()
        .or_else(|| property(root, schema, name)["description"].as_str())
        .unwrap_or_default()
}

/// The text of a tool result's text content, joined.
fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|content| content["type"] == "text")
        .filter_map(|content| content["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A scenario's observations, or a failure saying it did not report or broke off.
fn observed<'a>(checks: &mut Checks, run: &'a Run, scenario: &str) -> Option<&'a Value> {
    let Some(report) = run.reports.get(scenario) else {
        checks.check(scenario, false, || "the client did not report this scenario".to_owned());
        return None;
    };
    checks.check(scenario, report["error"].is_null(), || {
        let error = report["error"].as_str().unwrap_or_default();
        let last = error
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default();
        format!("the scenario broke off: {}", last.trim())
    });
    // Over stdio, anything but MCP frames on `askgate mcp`'s stdout.
    let faults = &report["transportFaults"];
    checks.check(scenario, faults.as_array().is_some_and(Vec::is_empty), || {
        format!("the SDK could not read what the transport carried: {faults}")
    });
    Some(&report["observed"])
}

fn check_list_tools(checks: &mut Checks, run: &Run) {
    const S: &str = "list_tools";
    let Some(seen) = observed(checks, run, S) else { return };
    let tools = seen["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    for name in ["ask_user", "await_answer", "cancel_question"] {
        checks.check(S, names.contains(&name), || {
            format!("no tool {name}; the tools are {names:?}")
        });
    }
    let tool = |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap_or(&Value::Null);

    let ask = tool("ask_user");
    let text = ask["description"].as_str().unwrap_or_default();
    for phrase in [
        "truly blocked on a decision that belongs to the user",
        "put the recommended option first",
        "Never add an \"Other\" option",
    ] {
        assert!(
            TOOL_DESCRIPTION.contains(phrase),
            "the guidance no longer says {phrase:?}"
        );
        checks.check(S, text.contains(phrase), || {
            format!("ask_user's description lacks the guidance's {phrase:?}: {text:?}")
        });
    }
    let input = &ask["inputSchema"];
    checks.check(S, input["type"] == "object", || {
        format!("ask_user's input schema is not an object: {input}")
    });
    let required = input["required"].as_array().map(Vec::as_slice).unwrap_or_default();
    checks.check(S, required.contains(&json!("questions")), || {
        format!("ask_user's input schema does not require questions: {input}")
    });
    for name in ["questions", "to", "timeoutSeconds"] {
        checks.check(S, !property(input, input, name).is_null(), || {
            format!("ask_user's input schema has no {name}: {input}")
        });
    }
    let questions = property(input, input, "questions");
    checks.check(S, questions["type"] == "array", || {
        format!("questions is not an array: {questions}")
    });
    let question = resolve(input, &questions["items"]);
    for name in ["id", "header", "question", "options", "multiSelect"] {
        checks.check(S, !property(input, question, name).is_null(), || {
            format!("a question's schema has no {name}: {question}")
        });
    }
    let option = resolve(input, &property(input, question, "options")["items"]);
    for name in ["label", "description"] {
        checks.check(S, !property(input, option, name).is_null(), || {
            format!("an option's schema has no {name}: {option}")
        });
    }
    // The model reads these: each field says what the guidance asks of it
    // (spec §2), the rules in a few words each.
    for (schema, name, rules) in [
        (input, "questions", &[][..]),
        (input, "to", &[]),
        (question, "question", &["one sentence"]),
        (
            question,
            "options",
            &[
                "every selectable choice",
                "recommended option first",
                " (Recommended)",
                "\"Other\"",
            ],
        ),
        (question, "multiSelect", &["several"]),
        (option, "label", &[]),
    ] {
        let text = description(input, schema, name);
        checks.check(S, !text.trim().is_empty(), || {
            format!("{name} has no description for the model: {}", resolve(input, schema))
        });
        for rule in rules {
            checks.check(S, text.contains(rule), || {
                format!("{name}'s description does not say {rule:?}: {text:?}")
            });
        }
    }
    checks.check(S, ask["outputSchema"]["type"] == "object", || {
        format!("ask_user has no output schema: {ask}")
    });
    for name in ["await_answer", "cancel_question"] {
        let input = &tool(name)["inputSchema"];
        let required = input["required"].as_array().map(Vec::as_slice).unwrap_or_default();
        checks.check(S, required.contains(&json!("questionId")), || {
            format!("{name}'s input schema does not require questionId: {input}")
        });
    }
}

/// The result is also in the text content, as JSON, for clients that read
/// only text.
fn check_json_text(checks: &mut Checks, scenario: &str, what: &str, call: &Value) {
    let result = &call["result"];
    let as_json = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|content| content["text"].as_str())
        .any(|text| serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == result["structuredContent"]));
    checks.check(scenario, as_json, || {
        format!("{what}'s text content does not carry the structured result as JSON: {result}")
    });
}

/// The structured result of a call the script observed (`Null` if it raised).
fn structured(call: &Value) -> &Value {
    &call["result"]["structuredContent"]
}

/// A call returned a tool result, not an error of either kind.
fn check_result(checks: &mut Checks, scenario: &str, what: &str, call: &Value) {
    checks.check(scenario, call["result"].is_object(), || {
        format!("{what} did not return a result: {call}")
    });
    checks.check(scenario, call["result"]["isError"] != true, || {
        format!("{what} returned an error: {}", text_of(&call["result"]))
    });
}

fn check_answered(checks: &mut Checks, run: &Run) {
    const S: &str = "answered";
    let Some(seen) = observed(checks, run, S) else { return };
    let expected = json!({"status": "answered", "answers": {"answers": {
        "deploy_target": ["Production"],
        "checks": ["Unit tests", "Integration"],
    }}});
    checks.equal(S, "the page's answer", &seen["pageAnswer"]["status"], &json!(200));
    check_result(checks, S, "ask_user", &seen["call"]);
    checks.equal(S, "ask_user's structured result", structured(&seen["call"]), &expected);
    check_json_text(checks, S, "ask_user", &seen["call"]);
}

fn check_pending_then_await(checks: &mut Checks, run: &Run) {
    const S: &str = "pending_then_await";
    let Some(seen) = observed(checks, run, S) else { return };
    let id = &seen["pageQuestionId"];
    checks.check(S, id.is_string(), || "the question never showed on the page".to_owned());
    let pending = json!({"status": "pending", "questionId": id});
    for (key, what) in [("ask", "ask_user"), ("awaitPending", "await_answer (nobody answered)")] {
        let call = &seen[key];
        check_result(checks, S, what, call);
        checks.equal(S, &format!("{what}'s structured result"), structured(call), &pending);
        check_json_text(checks, S, what, call);
        let seconds = call["seconds"].as_f64().unwrap_or_default();
        let wait = f64::from(WAIT_SECONDS);
        checks.check(S, (wait - 0.25..wait + 5.0).contains(&seconds), || {
            format!("{what} returned after {seconds:.2} s, not after wait_seconds ({wait} s)")
        });
        let text = text_of(&call["result"]);
        checks.check(S, text.contains("await_answer"), || {
            format!("{what}'s pending text does not tell the model to call await_answer: {text:?}")
        });
        // Progress while waiting: one when the wait begins is not enough, a
        // client's timer must be reset during the wait too.
        let notifications = call["progress"].as_array().map(Vec::as_slice).unwrap_or_default();
        let progress: Vec<f64> = notifications
            .iter()
            .filter_map(|notification| notification["progress"].as_f64())
            .collect();
        let latest = notifications
            .iter()
            .filter_map(|notification| notification["seconds"].as_f64())
            .fold(0.0, f64::max);
        checks.check(S, latest >= 0.5, || {
            format!("{what} sent no progress notification during its {seconds:.2} s wait: {notifications:?}")
        });
        checks.check(S, progress.windows(2).all(|pair| pair[0] < pair[1]), || {
            format!("{what}'s progress does not increase: {progress:?}")
        });
    }
    let call = &seen["awaitAnswered"];
    check_result(checks, S, "await_answer (answered while it waited)", call);
    checks.equal(
        S,
        "await_answer's structured result",
        structured(call),
        &json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}}),
    );
    checks.equal(S, "the page's answer", &seen["pageAnswer"]["status"], &json!(200));
}

fn check_validation(checks: &mut Checks, run: &Run) {
    const S: &str = "validation";
    let Some(seen) = observed(checks, run, S) else { return };
    let result = &seen["call"]["result"];
    checks.check(S, result.is_object(), || {
        format!("ask_user did not return a tool result: {}", seen["call"])
    });
    checks.equal(S, "isError", &result["isError"], &json!(true));
    let text = text_of(result);
    for (code, path) in [
        ("invalid_id", "questions[0].id"),
        ("empty_header", "questions[0].header"),
        ("option_count", "questions[0].options"),
        ("other_option_not_allowed", "questions[1].options[1].label"),
        ("invalid_type", "questions[1].multiSelect"),
    ] {
        let named = text.lines().any(|line| line.contains(code) && line.contains(path));
        checks.check(S, named, || {
            format!("the error text does not name {code} at {path} on one line: {text:?}")
        });
    }
    checks.equal(S, "the refused question on the page", &seen["onPage"], &json!(false));
}

fn check_cancelled(checks: &mut Checks, run: &Run) {
    const S: &str = "cancelled";
    let Some(seen) = observed(checks, run, S) else { return };
    let resource = &seen["resource"];
    checks.equal(S, "GET /v1/questions/{id}", &resource["status"], &json!(200));
    checks.equal(
        S,
        "the question's status after notifications/cancelled (the session still open)",
        &resource["body"]["status"],
        &json!("cancelled"),
    );
    checks.equal(
        S,
        "the cancelled question's result",
        &resource["body"]["result"],
        &json!({"status": "no_answer"}),
    );
    check_result(checks, S, "a new ask_user in the same session", &seen["again"]);
    checks.equal(
        S,
        "the new ask_user's structured result",
        structured(&seen["again"]),
        &json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}}),
    );
}

fn check_question_pending(checks: &mut Checks, run: &Run) {
    const S: &str = "question_pending";
    let Some(seen) = observed(checks, run, S) else { return };
    let second = &seen["second"];
    let refused = if second["result"].is_object() {
        second["result"]["isError"] == true && text_of(&second["result"]).contains("question_pending")
    } else {
        second["raised"].to_string().contains("question_pending")
    };
    checks.check(S, refused, || {
        format!("the second ask_user was not refused naming question_pending: {second}")
    });
    checks.equal(
        S,
        "the second question on the page",
        &seen["secondOnPage"],
        &json!(false),
    );
    check_result(checks, S, "cancel_question", &seen["cancel"]);
    check_result(checks, S, "the first ask_user", &seen["first"]);
    checks.equal(
        S,
        "the first ask_user's structured result once cancel_question ended it",
        structured(&seen["first"]),
        &json!({"status": "no_answer"}),
    );
    checks.equal(
        S,
        "the first question's status",
        &seen["resource"]["body"]["status"],
        &json!("cancelled"),
    );
}

fn check_no_token(checks: &mut Checks, run: &Run) {
    const S: &str = "no_token";
    let Some(seen) = observed(checks, run, S) else { return };
    for (key, what) in [("without", "without a token"), ("wrong", "with a wrong token")] {
        let outcome = &seen[key];
        checks.check(
            S,
            outcome["connected"].is_null() && outcome["raised"].is_object(),
            || format!("the SDK connected {what}: {outcome}"),
        );
        let statuses = outcome["httpStatuses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        checks.check(
            S,
            !statuses.is_empty() && statuses.iter().all(|status| status == 401),
            || format!("connecting {what}, the SDK got HTTP statuses {statuses:?}, not 401 alone"),
        );
    }
}

/// One transport in one mode: every scenario that applies.
async fn suite(transport: Transport, mode: Mode) {
    let python = sdk_python();
    let mut server = Server::start_with("", &mcp_config());
    let scenarios: Vec<&str> = match transport {
        Transport::Http => ALL.to_vec(),
        // The bridge is given its token; a refused token is the HTTP suite's.
        Transport::Stdio => ALL.iter().copied().filter(|name| *name != "no_token").collect(),
    };
    let run = run_client(&python, &server, transport, mode, &scenarios).await;
    let mut checks = Checks::default();
    check_list_tools(&mut checks, &run);
    check_answered(&mut checks, &run);
    check_pending_then_await(&mut checks, &run);
    check_validation(&mut checks, &run);
    check_cancelled(&mut checks, &run);
    check_question_pending(&mut checks, &run);
    if matches!(transport, Transport::Http) {
        check_no_token(&mut checks, &run);
    }
    checks.check("closing", !run.stderr.contains("Session termination failed"), || {
        "the SDK could not end a session (its log says \"Session termination failed\")".to_owned()
    });
    checks.finish(&run, &mut server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_as_the_sdk_connects_by_default() {
    suite(Transport::Http, Mode::Auto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_the_initialize_handshake() {
    suite(Transport::Http, Mode::Legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_as_the_sdk_connects_by_default() {
    suite(Transport::Stdio, Mode::Auto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_with_the_initialize_handshake() {
    suite(Transport::Stdio, Mode::Legacy).await;
}

/// `POST /mcp` as a client's first message (`initialize`) without a token,
/// with a wrong one, and with another agent's: 401, 401, accepted.
#[tokio::test]
async fn the_mcp_endpoint_takes_agent_tokens_only() {
    let server = Server::start_with("", &mcp_config());
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "askgate-tests", "version": "0"},
        },
    });
    for (token, expected) in [(None, 401), (Some("not-a-token"), 401), (Some(LIMITED_TOKEN), 200)] {
        let mut request = server
            .http()
            .post(server.url("/mcp"))
            .header("Accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        // The status is the point; an accepted session's stream is not read.
        let response = request.send().await.expect("askgate answers");
        assert_eq!(
            response.status().as_u16(),
            expected,
            "POST /mcp (initialize) with token {token:?} answered {response:?}"
        );
    }
}
