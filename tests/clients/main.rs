//! The agent clients in `clients/`, each run by its own test runner against
//! the real `askgate` binary.

#[path = "../support/mod.rs"]
mod support;

mod typescript;
