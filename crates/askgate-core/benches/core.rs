//! Benchmarks of the two hot paths of `askgate-core`: validating a request
//! (`validate_json`) and reading a typed reply with a prebuilt `ReplyReader`.
//!
//! Each measurement has a baseline measured in the same run on the same
//! input — `serde_json::from_str::<Value>` for validation, `str::to_lowercase`
//! for reply reading — so that the figures mean something on any machine.
//! After criterion has run, the benchmark prints a table of every fresh
//! estimate with its operations per second and its ratio to the baseline.
//!
//! Run with `cargo bench -p askgate-core --bench core`. Under
//! `cargo test --benches` or `cargo bench -- --test` criterion only checks
//! that each benchmark runs once, writes no estimates, and nothing is printed.

// A benchmark's job is to print its figures.
#![allow(clippy::print_stdout)]

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use askgate_core::text::normalize;
use askgate_core::{Answers, ReplyOutcome, ReplyReader, validate_json};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};

/// A typical request: one question, four options with descriptions.
const ONE_QUESTION: &str = r#"{
  "questions": [
    {
      "id": "deploy_target",
      "header": "Deploy",
      "question": "Where should this build go?",
      "options": [
        {"label": "Staging (Recommended)", "description": "Safe, resets nightly"},
        {"label": "Production", "description": "Live traffic; needs a change ticket"},
        {"label": "Canary", "description": "Five percent of traffic for an hour"},
        {"label": "Local only", "description": "Do not deploy; keep the artifact"}
      ]
    }
  ],
  "timeoutSeconds": 900
}"#;

/// The most a request may carry: three questions, one of them multi-select.
const THREE_QUESTIONS: &str = r#"{
  "questions": [
    {
      "id": "deploy_target",
      "header": "Deploy",
      "question": "Where should this build go?",
      "options": [
        {"label": "Staging (Recommended)", "description": "Safe, resets nightly"},
        {"label": "Production"},
        {"label": "Canary"}
      ]
    },
    {
      "id": "notify",
      "header": "Notify",
      "question": "Who should be told?",
      "options": [
        {"label": "Team channel"},
        {"label": "On-call"},
        {"label": "Nobody"}
      ],
      "multiSelect": true
    },
    {
      "id": "window",
      "header": "Window",
      "question": "When should it happen?",
      "options": [
        {"label": "Now (Recommended)"},
        {"label": "Tonight", "description": "After 22:00, low traffic"}
      ]
    }
  ],
  "timeoutSeconds": 600
}"#;

/// A number, the most common typed reply.
const REPLY_NUMBER: &str = "2";
/// A label typed in another case than the request has it (and without the suffix).
const REPLY_LABEL: &str = "staging";
/// The person's own words.
const REPLY_FREE_TEXT: &str = "wait until the release notes are out, then production";
/// One keyed line per question of the three-question request.
const REPLY_THREE_LINES: &str = "1: 2\n2: team channel, 2\nwindow = tonight";

/// Group and benchmark names: the directory `target/criterion/<group>/<bench>`.
const VALIDATE: &str = "validate";
const READ: &str = "read";

/// The rows of the printed table: (group, bench, baseline bench in the same group).
const ROWS: &[(&str, &str, Option<&str>)] = &[
    (VALIDATE, "serde_value_one_question", None),
    (VALIDATE, "validate_json_one_question", Some("serde_value_one_question")),
    (VALIDATE, "serde_value_three_questions", None),
    (
        VALIDATE,
        "validate_json_three_questions",
        Some("serde_value_three_questions"),
    ),
    (READ, "lowercase_number", None),
    (READ, "normalize_number", Some("lowercase_number")),
    (READ, "read_number", Some("lowercase_number")),
    (READ, "lowercase_label", None),
    (READ, "normalize_label", Some("lowercase_label")),
    (READ, "read_label", Some("lowercase_label")),
    (READ, "lowercase_free_text", None),
    (READ, "normalize_free_text", Some("lowercase_free_text")),
    (READ, "read_free_text", Some("lowercase_free_text")),
    (READ, "lowercase_three_lines", None),
    (READ, "normalize_three_lines", Some("lowercase_three_lines")),
    (READ, "read_three_lines", Some("lowercase_three_lines")),
];

fn configure<'c>(criterion: &'c mut Criterion, group: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = criterion.benchmark_group(group);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group
}

fn bench_validate(criterion: &mut Criterion) {
    // Check the inputs once, so that the benchmark measures the success path.
    assert!(
        validate_json(ONE_QUESTION).is_ok(),
        "the one-question request must be valid"
    );
    assert!(
        validate_json(THREE_QUESTIONS).is_ok(),
        "the three-question request must be valid"
    );
    let mut group = configure(criterion, VALIDATE);
    for (name, text) in [("one_question", ONE_QUESTION), ("three_questions", THREE_QUESTIONS)] {
        group.bench_function(format!("serde_value_{name}"), |b| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(text)));
        });
        group.bench_function(format!("validate_json_{name}"), |b| {
            b.iter(|| validate_json(black_box(text)));
        });
    }
    group.finish();
}

fn bench_read(criterion: &mut Criterion) {
    let one = validate_json(ONE_QUESTION).expect("the one-question request is valid");
    let three = validate_json(THREE_QUESTIONS).expect("the three-question request is valid");
    let one_reader = ReplyReader::new(&one);
    let three_reader = ReplyReader::new(&three);
    let empty = Answers::new();
    let cases = [
        ("number", &one_reader, REPLY_NUMBER),
        ("label", &one_reader, REPLY_LABEL),
        ("free_text", &one_reader, REPLY_FREE_TEXT),
        ("three_lines", &three_reader, REPLY_THREE_LINES),
    ];
    // Every case must be a complete answer, or the benchmark measures something else.
    for (name, reader, reply) in cases {
        let outcome = reader.read(&empty, reply);
        assert!(
            matches!(outcome, ReplyOutcome::Answered(_)),
            "{name}: {reply:?} gave {outcome:?}"
        );
    }
    let mut group = configure(criterion, READ);
    for (name, reader, reply) in cases {
        group.bench_function(format!("lowercase_{name}"), |b| {
            b.iter(|| black_box(reply).to_lowercase());
        });
        group.bench_function(format!("normalize_{name}"), |b| b.iter(|| normalize(black_box(reply))));
        group.bench_function(format!("read_{name}"), |b| {
            b.iter(|| reader.read(black_box(&empty), black_box(reply)));
        });
    }
    group.finish();
}

fn main() {
    let started = SystemTime::now();
    let mut criterion = Criterion::default().configure_from_args();
    bench_validate(&mut criterion);
    bench_read(&mut criterion);
    criterion.final_summary();
    if benchmarking() {
        print_table(started);
    }
}

/// Whether criterion measured (`cargo bench`), rather than only testing
/// (`cargo test --benches`, `cargo bench -- --test`) or listing: the same
/// rule as criterion's own argument parsing.
fn benchmarking() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|arg| arg == flag);
    has("--bench") && !has("--test") && !has("--list") && !args.iter().any(|arg| arg.starts_with("--profile-time"))
}

/// Where criterion writes its estimates, found the way criterion finds it.
fn criterion_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(target).join("criterion");
        if dir.is_dir() {
            return Some(dir);
        }
    }
    // The benchmark runs as `<target>/<profile>/deps/core-<hash>`.
    let exe = std::env::current_exe().ok()?;
    let target = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "target"))
        .or_else(|| exe.ancestors().nth(3))?;
    Some(target.join("criterion"))
}

/// The mean of one benchmark in nanoseconds, if criterion wrote it during
/// this run (an estimate from an earlier run, or a filtered-out bench, is not shown).
fn mean_ns(dir: &Path, group: &str, bench: &str, started: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(bench).join("new").join("estimates.json");
    // Allow for file systems that store modification times in whole seconds.
    let fresh_since = started.checked_sub(Duration::from_secs(1)).unwrap_or(started);
    let modified = fs::metadata(&path).and_then(|meta| meta.modified()).ok()?;
    if modified < fresh_since {
        return None;
    }
    let estimates: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).ok()?).ok()?;
    estimates.pointer("/mean/point_estimate")?.as_f64()
}

/// One line of the printed table.
struct Row {
    /// `group/bench`.
    name: String,
    /// Mean time of one iteration, in nanoseconds.
    mean: f64,
    /// The baseline's bench name and mean, when it has one.
    baseline: Option<(&'static str, f64)>,
}

fn print_table(started: SystemTime) {
    let Some(dir) = criterion_dir() else {
        return;
    };
    let rows: Vec<Row> = ROWS
        .iter()
        .filter_map(|&(group, bench, baseline)| {
            let mean = mean_ns(&dir, group, bench, started)?;
            let baseline = baseline.and_then(|name| Some((name, mean_ns(&dir, group, name, started)?)));
            Some(Row {
                name: format!("{group}/{bench}"),
                mean,
                baseline,
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    println!();
    println!("askgate-core benchmarks (criterion mean; ratio = mean / baseline mean, same run)");
    println!(
        "{:<width$}  {:>12}  {:>14}  {:>8}  baseline",
        "benchmark", "mean ns", "ops/s", "ratio"
    );
    for Row { name, mean, baseline } in rows {
        let ops = 1e9 / mean;
        let (ratio, against) = match baseline {
            Some((base, base_mean)) => (format!("{:.2}x", mean / base_mean), base),
            None => ("—".to_owned(), "(baseline)"),
        };
        println!("{name:<width$}  {mean:>12.1}  {ops:>14.0}  {ratio:>8}  {against}");
    }
}
