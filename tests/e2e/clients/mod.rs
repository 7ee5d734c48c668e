//! The client libraries of `clients/`, each tested by its own suite against
//! the real binary (`env!("CARGO_BIN_EXE_askgate")`), so that the README's
//! `cargo test --workspace --locked` runs them. One module per client.

mod python;
mod typescript;
