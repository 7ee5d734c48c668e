//! The server's integration tests, in one binary (one link instead of
//! twelve): each module is a suite of its own, most over the harness in
//! `support` (askgate's state on the real engine and a SQLite store in a
//! temporary directory, a request sent to the router in-process).
//! `cargo test -p askgate-server --test server <module>::` runs one suite.

mod conformance;
mod connections;
mod long_waits;
mod mcp;
mod metrics;
mod router;
mod schema_regressions;
mod support;
mod web_changes;
mod web_page;
mod web_paging;
mod web_people;
mod web_progress;
