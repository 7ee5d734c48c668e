//! The testkit's integration tests, in one binary (one link instead of
//! five): each module is a suite of its own. The fakes are driven by the
//! real clients (`discord_fake`: serenity, `slack_fake`: slack-morphism,
//! `telegram_fake`: HTTP as teloxide sends it) and checked against the
//! platforms' specs (`telegram_spec`); `synapse` proves the real Matrix
//! homeserver the Matrix tests run against; `inbound_conformance` runs the
//! conformance suites against the testkit's own double.
//! `cargo test -p askgate-testkit --test testkit <module>::` runs one suite.

mod discord_fake;
mod inbound_conformance;
mod slack_fake;
mod synapse;
mod telegram_fake;
mod telegram_spec;
