//! The Python client (`clients/python/`, package `askgate`) tested by its
//! own pytest suite against this build's binary: the suite starts `askgate
//! serve` itself (`ASKGATE_BIN`), on a free port with its own data
//! directory, and plays the person on the web page's API. The client is
//! installed editable, with its test extras and the pinned versions of
//! `tests/clients/python-requirements.txt`, into `target/python-client-venv`
//! (`support::venv`: installed when it can be and reported loudly when it
//! cannot; this test never skips).
//!
//! What the suite shows: a question asked through the client and answered
//! on the page returns the exact typed result; a blocking `ask_user`
//! survives a `kill -9` and restart of askgate and returns the answer given
//! after it; cancel, skip, expiry (the 30 s minimum) and validation errors
//! come back typed; the models and the model guidance match the served
//! `/openapi.json`; the framework tools (`langchain-core`'s and
//! `openai-agents`'), invoked through their frameworks' own entry points,
//! return the answer. A run takes about 45 s, most of it the expiry.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use std::process::Command;
use std::time::Duration;

use crate::support::venv::{Venv, run_within};
use crate::support::{ASKGATE, repo_root};

/// The whole pytest run, on 2 busy cores; it takes about 45 s.
const RUN_TIMEOUT: Duration = Duration::from_mins(5);

#[test]
fn the_python_client_passes_its_suite_against_the_real_binary() {
    let python = Venv::new(
        "python client",
        "python-client-venv",
        "tests/clients/python-requirements.txt",
        (3, 10),
    )
    .ensure("python");
    let mut pytest = Command::new(&python);
    pytest
        // No .pytest_cache or __pycache__ left in the source tree.
        .args(["-B", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "tests"])
        .current_dir(repo_root().join("clients/python"))
        .env("ASKGATE_BIN", ASKGATE)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (status, output) = run_within(&mut pytest, RUN_TIMEOUT)
        .unwrap_or_else(|error| panic!("could not run pytest with {}: {error}", python.display()));
    println!("{output}");
    match status {
        Some(status) if status.success() => {
            // The summary line, "23 passed in 40.1s": nothing skipped.
            let summary = output
                .lines()
                .rev()
                .find(|line| line.contains(" passed"))
                .unwrap_or_default();
            assert!(
                !summary.is_empty() && !summary.contains("skipped"),
                "pytest succeeded but did not report every test passed:\n{output}"
            );
        }
        Some(status) => panic!("the Python client's suite failed ({status}):\n{output}"),
        None => panic!("the Python client's suite did not finish within {RUN_TIMEOUT:?}:\n{output}"),
    }
}
