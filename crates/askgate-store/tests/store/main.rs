//! The store's integration tests, in one binary (one link instead of
//! eleven): each module is a suite of its own; `support` opens a fresh
//! SQLite file or PostgreSQL schema per test (`on_both_stores!` runs a
//! suite's tests on both). `cargo test -p askgate-store --test store
//! <module>::` runs one suite.

// The harness (support/) unwraps outside #[test] functions, as each suite does.
#![allow(clippy::unwrap_used)]

mod callbacks;
mod faults;
mod group_commit;
mod migrations;
mod postgres;
mod readiness;
mod replicas;
mod rules;
mod suite;
mod support;
mod surfaces;
mod together;
mod upgrade;
