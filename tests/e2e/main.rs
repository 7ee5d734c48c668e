//! The end-to-end suites, in one binary (one link instead of twenty-five):
//! each module is a suite of its own that runs the real binary
//! (`CARGO_BIN_EXE_askgate`), most of them through the harness in
//! `support`, which starts `askgate serve` on a loopback port with a data
//! directory and configuration of its own. What a suite needs besides Rust
//! (a browser's scripts, a Python tool's requirements) is in a folder of
//! `tests/` named for it.
//! `cargo test -p askgate --test e2e <module>::` runs one suite.
//!
//! matrix-sdk, which the `matrix` suite drives, links decancer, whose
//! `impl Add<Translation> for String` leaves `String + &String` ambiguous in
//! every suite of this binary: add a `String`'s `.as_str()` (a `Cow`'s `&*`).

mod agent_retries;
mod browser;
mod clients;
mod connections;
mod deploy;
mod discord;
mod discord_gateway;
mod faults;
mod matrix;
mod mcp;
mod metrics;
mod oidc;
mod operate;
mod outages;
mod people;
mod postgres;
mod postgres_kill;
mod prompt_cli;
mod schemathesis;
mod service;
mod slack;
mod support;
mod surfaces;
mod telegram;
mod upgrade;
mod webhooks;
