//! The TypeScript client (`clients/typescript`): `npm ci`, then `npm test`
//! (which builds it with `tsc` and runs its Node.js test suite), against the
//! binary cargo built. The suite starts and kills askgate itself; this test
//! hands it the binary, and `askgate_core`'s model guidance to compare the
//! client's copy with.
//!
//! Node.js and npm must be installed; when they are not, or `npm ci` cannot
//! install the packages, the test fails saying so. It never skips.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use askgate_core::guidance::{FIELD_DESCRIPTIONS, TOOL_DESCRIPTION, TOOL_NAME};
use serde_json::{Map, Value, json};

use crate::support::venv::run_within;
use crate::support::{ASKGATE, repo_root};

/// How long `npm ci` and `npm test` may each take (the suite waits 30 s for
/// a question to expire).
const NPM_TIMEOUT: Duration = Duration::from_mins(5);

/// The oldest Node.js the client and its suite run on.
const NODE_MAJOR: u32 = 20;

/// Fails the test, saying how to install it, unless Node.js 20 or later is on the `PATH`.
fn ensure_node() {
    let install = "The TypeScript client's tests need Node.js 20 or later and npm. Install them with:\n    \
                   sudo apt-get install -y nodejs npm";
    let output = Command::new("node")
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("could not run `node --version` ({error}). {install}"));
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major = version
        .strip_prefix('v')
        .and_then(|rest| rest.split('.').next())
        .and_then(|major| major.parse::<u32>().ok());
    assert!(
        output.status.success() && major.is_some_and(|major| major >= NODE_MAJOR),
        "`node --version` says {version:?}. {install}"
    );
}

/// The guidance the client must carry, as its suite reads it from `ASKGATE_GUIDANCE`.
fn guidance() -> String {
    let fields: Map<String, Value> = FIELD_DESCRIPTIONS
        .iter()
        .map(|(field, text)| ((*field).to_owned(), json!(text)))
        .collect();
    json!({"toolName": TOOL_NAME, "toolDescription": TOOL_DESCRIPTION, "fields": fields}).to_string()
}

/// Runs `npm ARGS` in `dir`, failing the test with its output when it fails
/// or outlasts [`NPM_TIMEOUT`].
fn npm(dir: &Path, args: &[&str], env: &[(&str, &str)]) {
    let what = format!("npm {} (in {})", args.join(" "), dir.display());
    println!("{what}");
    let mut command = Command::new("npm");
    command.args(args).current_dir(dir);
    for (key, value) in env {
        command.env(key, value);
    }
    let (status, output) = run_within(&mut command, NPM_TIMEOUT).unwrap_or_else(|error| {
        panic!(
            "could not run {what}: {error}. The TypeScript client's tests need Node.js 20 or later and npm:\n    \
             sudo apt-get install -y nodejs npm"
        )
    });
    println!("{output}");
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!("{what} failed ({status}):\n{output}"),
        None => panic!("{what} did not finish within {}s:\n{output}", NPM_TIMEOUT.as_secs()),
    }
}

#[test]
fn the_typescript_client_passes_its_suite_against_the_real_binary() {
    ensure_node();
    let dir = repo_root().join("clients").join("typescript");
    npm(&dir, &["ci", "--no-audit", "--no-fund"], &[]);
    let guidance = guidance();
    npm(
        &dir,
        &["test"],
        &[("ASKGATE_BIN", ASKGATE), ("ASKGATE_GUIDANCE", &guidance)],
    );
}
