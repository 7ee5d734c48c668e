//! The Matrix adapter's integration tests, one binary (`CODE_STYLE.md`):
//! its configuration, decoding with the spec's own event samples, and the
//! conformance suites against a real Synapse homeserver.

mod bounds;
mod config;
mod conformance;
mod decode;
mod person;
mod restart;
mod session;
mod view;
