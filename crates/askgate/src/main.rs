//! The `askgate` binary: the command line, and (as the service grows) the
//! wiring of engine, store, server and adapters.
//!
//! | module | owns |
//! | --- | --- |
//! | [`cli`] | the command-line grammar (clap) |
//! | [`prompt`] | `askgate prompt validate | render | parse`, the admin's prompt debugger |
//!
//! `anyhow` lives here and only here: libraries return typed errors.

mod cli;
mod prompt;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Prompt(command) => prompt::run(command),
    }
}
