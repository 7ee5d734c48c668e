//! The store's integration tests, in one binary (one link instead of
//! eleven): each module is a suite of its own; `support` opens a fresh
//! SQLite file or PostgreSQL schema per test (`on_both_stores!` runs a
//! suite's tests on both). `cargo test -p askgate-store --test store
//! <module>::` runs one suite.

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
mod upgrade;
