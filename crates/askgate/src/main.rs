//! The `askgate` binary: the command line, configuration, and the wiring of
//! store, engine, channels and HTTP server.
//!
//! | module | owns |
//! | --- | --- |
//! | [`cli`] | the command-line grammar (clap) |
//! | [`channels`] | the kinds of channel askgate has: one line per adapter |
//! | [`config`] | the TOML configuration: parsing, `${ENV}` secrets, every problem with its key |
//! | [`serve`] | `askgate serve`: wiring, generated secrets, graceful shutdown |
//! | [`ask`] | `askgate ask`: one question through a running server |
//! | [`keeper`] | where generated secrets are kept: files beside SQLite, the database's settings beside PostgreSQL |
//! | [`link`] | `askgate link show | rotate`: a person's page link |
//! | [`health`] | `askgate health`: whether a running askgate is ready (a container's health check) |
//! | [`log`] | logging: text or JSON, one event per line |
//! | [`mcp`] | `askgate mcp`: the MCP tools over stdio, bridged to a running askgate's `/v1` |
//! | [`prompt`] | `askgate prompt validate | render | parse`, the admin's prompt debugger |
//!
//! `anyhow` lives here and only here: libraries return typed errors.

mod ask;
mod callback;
mod channels;
mod cli;
mod config;
mod health;
mod keeper;
mod lease;
mod link;
mod log;
mod mcp;
mod prompt;
mod serve;

/// How `build.rs` links the binary, here for its tests.
#[cfg(test)]
#[path = "../build/layout.rs"]
mod layout;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;

/// mimalloc rather than glibc's malloc: under load, glibc's malloc and free
/// took about a seventh of the service's CPU (the service benchmark's profile).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    without_huge_pages();
    // Every TLS client askgate makes (Telegram, Discord, Slack, OpenID
    // Connect, PostgreSQL, Matrix) takes the process's provider: ring.
    // matrix-sdk links aws-lc-rs as well, and with two providers rustls
    // would pick none. Installing fails only if one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Prompt(command) => prompt::run(command),
        cli::Command::CheckConfig(args) => check_config(args.file.as_deref()),
        cli::Command::Serve(args) => {
            // Its logs as its configuration says: read it first.
            let config = match load_config(args.config.as_deref()) {
                Ok(config) => config,
                Err(error) => return fail(&error),
            };
            log::init(&config.log);
            run_async(serve::serve(config, args.config))
        }
        cli::Command::Ask(args) => ask::run(&args),
        cli::Command::Health(args) => health::check(&args),
        // stdout carries MCP frames only: logs go to stderr (log::init).
        cli::Command::Mcp(args) => run_async(mcp::run(args)),
        cli::Command::Link(command) => run_async(link::run(command)),
    }
}

/// Turns transparent huge pages off for this process (and what it runs).
/// mimalloc reserves its arenas in large aligned ranges; where the host's
/// THP setting is `always` (or `madvise`, and the allocator asked), each
/// 2 MiB range the heap touched became a whole huge page: an idle `serve`
/// held 12 MiB of them for a heap of about 2 MiB. A heap this small gains
/// nothing measurable from huge pages (the service benchmark's cycles/s,
/// README "Performance"). A kernel without THP refuses the call: nothing
/// to turn off then.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// Runs `task` on a runtime; logs go to stderr (the default filter unless
/// `serve` installed its configured one first).
fn run_async(task: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    log::init(&config::LogConfig::default());
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&anyhow::Error::from(error)),
    };
    match runtime.block_on(task) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "askgate: {error:#}");
    ExitCode::from(2)
}

fn read_config(path: Option<&std::path::Path>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    match path {
        None => Ok(config::EMBEDDED_DEFAULT.to_owned()),
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display())),
    }
}

fn load_config(path: Option<&std::path::Path>) -> anyhow::Result<config::Config> {
    let text = read_config(path)?;
    config::parse(&text, &|name| std::env::var(name).ok())
        .map_err(|problems| anyhow::anyhow!("the configuration has problems:\n{problems}"))
}

/// Asks the PostgreSQL store (when configured) whether it can be reached,
/// and each platform whether it accepts the configured credentials
/// (Telegram: `getMe`); one problem per refusal, never the secret itself.
/// What each said (`telegram channel "tg": bot @askgate_bot, polling`), or
/// the problems found.
fn check_platforms(config: &config::Config) -> Result<Vec<String>, Vec<config::Problem>> {
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        return Err(vec![config::Problem {
            key: "(askgate)".into(),
            what: "could not start its runtime to check the platforms.".into(),
            fix: "try again.".into(),
        }]);
    };
    runtime.block_on(async {
        let (mut found, mut problems) = (Vec::new(), Vec::new());
        if let config::StoreConfig::Postgres { url, .. } = &config.store {
            match askgate_store::PgStore::check(url.expose()).await {
                Ok(said) => found.push(format!("store: {said}")),
                Err(error) => problems.push(config::Problem {
                    key: "store.url".into(),
                    what: match error {
                        askgate_store::StoreError::Unavailable(reason) => format!("{reason}."),
                        other => format!("{other}."),
                    },
                    fix: "check that the server runs and that the URL's host, port, user, password and database \
                          are right."
                        .into(),
                }),
            }
        }
        for settings in &config.channels {
            match settings.start().check().await {
                Ok(said) => found.push(format!("{} channel \"{}\": {said}", settings.kind(), settings.name())),
                Err(failed) => problems.push(failed.into_problem()),
            }
        }
        if problems.is_empty() { Ok(found) } else { Err(problems) }
    })
}

/// `askgate check-config [FILE]`: exit 0 and a one-line summary, or exit 1
/// and one line per problem.
fn check_config(path: Option<&std::path::Path>) -> ExitCode {
    let text = match read_config(path) {
        Ok(text) => text,
        Err(error) => return fail(&error),
    };
    let mut out = std::io::stdout().lock();
    match config::parse(&text, &|name| std::env::var(name).ok()) {
        Ok(config) => {
            match check_platforms(&config) {
                Ok(found) => {
                    for line in found {
                        let _ = writeln!(out, "{line}");
                    }
                }
                Err(refused) => {
                    for problem in &refused {
                        let _ = writeln!(out, "{problem}");
                    }
                    return ExitCode::from(1);
                }
            }
            for recipient in &config.recipients {
                let _ = writeln!(out, "{}", recipient.describe());
            }
            if let Some(oidc) = &config.oidc {
                let _ = writeln!(out, "{}", oidc.describe(&config.recipients));
            }
            if let Some(hint) = channels::finding_ids(config.channels.iter().map(|c| c.kind())) {
                let _ = writeln!(out, "{hint}");
            }
            let _ = writeln!(
                out,
                "ok: {} agent(s), {} channel(s), {} recipient(s); listening on {}",
                config.agents.len(),
                config.channels.len(),
                config.recipients.len(),
                config.listen
            );
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for problem in problems.0 {
                let _ = writeln!(out, "{problem}");
            }
            ExitCode::from(1)
        }
    }
}
