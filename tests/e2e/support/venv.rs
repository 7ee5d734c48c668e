//! A Python virtualenv under the target directory holding a suite's pinned
//! requirements (`tests/<suite>/requirements.txt`), for the suites that run a
//! Python tool against the real binary (schemathesis, the MCP Python SDK).
//!
//! Installed when it can be and reported when it cannot; no suite skips. It
//! needs `python3` with its `venv` module, and `pip` needs the Python Package
//! Index (or a local index or wheel directory configured for pip). The
//! virtualenv is reused while it holds the pinned versions, and rebuilt when
//! the requirements file changes.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::repo_root;

/// Installing a suite's requirements from the Python Package Index.
const INSTALL_TIMEOUT: Duration = Duration::from_mins(5);

/// A suite's Python virtualenv: `target/<name>`, beside the build's other output.
pub(crate) struct Venv {
    /// The suite, as its messages name it (`schemathesis`, `mcp`).
    suite: &'static str,
    /// The virtualenv's directory.
    dir: PathBuf,
    /// The requirements file, relative to the repository root.
    requirements: &'static str,
    /// The oldest Python the requirements install on, as `(3, 11)`.
    python: (u32, u32),
}

impl Venv {
    /// `target/<name>`, to hold `requirements` (a path from the repository
    /// root) on Python `python` or later; `suite` names it in messages.
    pub(crate) fn new(suite: &'static str, name: &str, requirements: &'static str, python: (u32, u32)) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("CARGO_TARGET_TMPDIR is target/tmp")
            .join(name);
        Self {
            suite,
            dir,
            requirements,
            python,
        }
    }

    /// A program of the virtualenv (`bin/<name>`).
    pub(crate) fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// Makes sure the virtualenv holds the pinned versions and has
    /// `bin/<program>`: the one already there, or a new one. A lock file
    /// keeps two test runs sharing the target directory from building it at
    /// once. Returns the program's path.
    pub(crate) fn ensure(&self, program: &str) -> PathBuf {
        let suite = self.suite;
        let requirements = repo_root().join(self.requirements);
        let pinned = std::fs::read_to_string(&requirements)
            .unwrap_or_else(|error| panic!("{suite} test setup: {}: {error}", requirements.display()));
        let lock = File::create(self.dir.with_extension("lock")).expect("the lock file can be created");
        lock.lock().expect("the lock file can be locked");
        let stamp = self.dir.join("askgate-requirements.txt");
        let program = self.bin(program);
        if program.exists() && std::fs::read_to_string(&stamp).is_ok_and(|installed| installed == pinned) {
            return program;
        }
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir).expect("the outdated virtualenv can be removed");
        }
        let (major, minor) = self.python;
        let python_missing = format!(
            "The {suite} test needs Python {major}.{minor} or later as `python3`, with its venv module \
             (Debian: `sudo apt-get install -y python3 python3-venv`)."
        );
        self.run_setup(
            &format!("python3 ({major}.{minor} or later)"),
            &python_missing,
            Command::new("python3").args([
                "-c",
                &format!("import sys; sys.exit(sys.version_info < ({major}, {minor}))"),
            ]),
        );
        let name = self.dir.file_name().expect("a directory name").to_string_lossy();
        self.run_setup(
            &format!("python3 -m venv target/{name}"),
            &python_missing,
            Command::new("python3").arg("-m").arg("venv").arg(&self.dir),
        );
        self.run_setup(
            &format!("pip install -r {}", self.requirements),
            &format!(
                "pip could not install {} into the virtualenv: it needs access to PyPI \
                 (or an index or wheel directory given in PIP_INDEX_URL or PIP_FIND_LINKS).",
                self.requirements
            ),
            Command::new(self.bin("python"))
                .args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet", "-r"])
                .arg(&requirements)
                // A local path in a requirements file (`-e clients/python`)
                // is read from the working directory: the repository's root.
                .current_dir(repo_root()),
        );
        assert!(
            program.exists(),
            "{suite} test setup: pip installed {}, but {} is missing",
            self.requirements,
            program.display()
        );
        std::fs::write(&stamp, pinned).expect("the virtualenv's stamp is written");
        program
    }

    /// Runs a setup command within `INSTALL_TIMEOUT`; on failure, `missing`
    /// says what is missing and how to provide it, followed by the command's
    /// output.
    #[allow(
        clippy::print_stdout,
        reason = "a test's progress goes to its captured stdout, shown by `--nocapture` and on failure"
    )]
    fn run_setup(&self, what: &str, missing: &str, command: &mut Command) {
        let suite = self.suite;
        println!("{suite} test setup: {what}");
        let (status, output) = run_within(command, INSTALL_TIMEOUT)
            .unwrap_or_else(|error| panic!("{suite} test setup: could not run {what} ({error}). {missing}"));
        match status {
            Some(status) if status.success() => {}
            Some(status) => panic!("{suite} test setup: {what} failed ({status}). {missing}\n{output}"),
            None => {
                panic!("{suite} test setup: {what} did not finish within {INSTALL_TIMEOUT:?}. {missing}\n{output}")
            }
        }
    }
}

/// Running a setup command within its bound, and reading back what it
/// wrote: the testkit's, which Synapse's setup uses too.
pub(crate) use askgate_testkit::process::{read_back, run_within};
