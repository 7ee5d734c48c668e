//! The core's integration tests, in one binary (one link instead of five):
//! each module is a suite of its own. `cargo test -p askgate-core --test
//! core <module>::` runs one suite.
//!
//! The property suites keep the failures proptest found beside their
//! source (`limits.proptest-regressions`, `properties.proptest-regressions`)
//! and re-run them first: [`proptest_config`] says so, since proptest's
//! default looks elsewhere once a suite's directory has a `main.rs`.

mod limits;
mod properties;
mod render;
mod reply;
mod validation;

/// proptest's default configuration, with the failures it finds kept in
/// (and read back from) `<suite>.proptest-regressions` beside the suite's
/// source file. (The default, `SourceParallel`, would use
/// `tests/proptest-regressions/<suite>.txt` here, this file being a `main.rs`.)
fn proptest_config() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..proptest::test_runner::Config::default()
    }
}
