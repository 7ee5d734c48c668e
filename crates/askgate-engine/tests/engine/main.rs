//! The engine's integration tests, in one binary (one link instead of
//! eight): each module is a suite of its own over the harness in
//! `support`, the real engine on the real SQLite (and, in `replicas`,
//! PostgreSQL) store with recording fake channels, in controlled time.
//! `cargo test -p askgate-engine --test engine <module>::` runs one suite.

// The harness (support/) unwraps outside #[test] functions, as each suite does.
#![allow(clippy::unwrap_used)]

mod callbacks;
mod contract;
mod engine;
mod hardening;
mod replicas;
mod retention;
mod support;
mod surfaces;
mod waiting;
