//! The command-line grammar. Exit codes: 0 success, 1 the input was refused
//! (its problems are printed as JSON), 2 a usage or I/O error; `askgate ask`
//! adds 3 and 4 for how its question ended ([`crate::ask::EXIT_CODES`]).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, Parser, Subcommand};

/// askgate: structured questions from AI agents to people, in the chat apps
/// they already use.
#[derive(Debug, Parser)]
#[command(name = "askgate", version, arg_required_else_help = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the service (the embedded default without --config: SQLite and the web page on 127.0.0.1:8080).
    Serve(ServeArgs),
    /// Check a configuration file: every problem with its key and a fix; secrets are never printed.
    CheckConfig(CheckConfigArgs),
    /// Ask a question through a running server and print the tool result; the exit code says how it ended.
    #[command(after_help = crate::ask::EXIT_CODES)]
    Ask(AskArgs),
    /// Exit 0 when a running askgate is ready (its /readyz answers 200), 1 otherwise: a container's health check.
    Health(HealthArgs),
    /// Serve MCP over stdio for an MCP client to launch, bridged to a running askgate (token: ASKGATE_TOKEN or --token-file).
    #[allow(clippy::doc_markdown)]
    Mcp(McpArgs),
    /// Debug a prompt: validate it, see how a channel shows it, read replies.
    #[command(subcommand)]
    Prompt(PromptCommand),
    /// A person's page link: print it, or replace it (revoking the old one at the servers' next reload).
    #[command(subcommand)]
    Link(LinkCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum LinkCommand {
    /// Print the person's page link.
    Show(LinkArgs),
    /// Replace the person's page link with a new one and print it; the old one stops working when askgate reloads (SIGHUP) or restarts.
    Rotate(LinkArgs),
}

#[derive(Debug, Args)]
pub(crate) struct LinkArgs {
    /// The person: a recipient that is not a group.
    pub(crate) person: String,
    /// The configuration file `askgate serve` runs on; without it, the embedded default.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The configuration file; without it, the embedded default (config/askgate.toml).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct HealthArgs {
    /// The server's base URL.
    #[arg(long, env = "ASKGATE_URL", default_value = "http://127.0.0.1:8080")]
    pub(crate) url: String,
}

#[derive(Debug, Args)]
pub(crate) struct CheckConfigArgs {
    /// The configuration file; without it, the embedded default.
    pub(crate) file: Option<PathBuf>,
}

#[allow(clippy::doc_markdown)]
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The recipient's name; leave it out when the token may ask only one recipient (or the file names it in "to").
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// A JSON file with the ask_user arguments; `-` reads standard input.
    pub(crate) file: PathBuf,
    /// The server's base URL.
    #[arg(long, env = "ASKGATE_URL", default_value = "http://127.0.0.1:8080")]
    pub(crate) server: String,
    /// The agent token (visible to other users in `ps`: prefer --token-file or ASKGATE_TOKEN).
    #[arg(long, conflicts_with = "token_file")]
    pub(crate) token: Option<String>,
    /// A file holding the agent token, read and trimmed (without it or --token: the ASKGATE_TOKEN environment variable).
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
}

#[allow(clippy::doc_markdown)]
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The running askgate's base URL.
    #[arg(long, env = "ASKGATE_URL", default_value = "http://127.0.0.1:8080")]
    pub(crate) url: String,
    /// A file holding the agent token (else the ASKGATE_TOKEN environment variable).
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
    /// The longest a tool call waits before it returns pending (default: the server's [mcp] wait_seconds).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) wait_seconds: Option<u64>,
}

// Doc comments here are the --help text, where backticks would show.
#[allow(clippy::doc_markdown)]
#[derive(Debug, Subcommand)]
pub(crate) enum PromptCommand {
    /// Validate ask_user arguments; print the normalized request, or every problem.
    Validate(PromptFile),
    /// Print what a channel would be sent for a prompt.
    Render(RenderArgs),
    /// Feed typed replies to a prompt, in order, and print the outcome.
    Parse(ParseArgs),
}

#[allow(clippy::doc_markdown)]
#[derive(Debug, Args)]
pub(crate) struct PromptFile {
    /// A JSON file with the ask_user arguments; `-` reads standard input.
    pub(crate) file: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    #[command(flatten)]
    pub(crate) prompt: PromptFile,
    /// The channel to render for.
    #[arg(long, value_parser = render_channels())]
    pub(crate) channel: String,
    /// The language of askgate's own wording.
    #[arg(long, default_value = "en", value_parser = ["en", "zh-CN"])]
    pub(crate) locale: String,
}

#[derive(Debug, Args)]
pub(crate) struct ParseArgs {
    #[command(flatten)]
    pub(crate) prompt: PromptFile,
    /// A typed reply; repeat for several replies, read in order.
    #[arg(long = "reply", value_name = "TEXT", required = true)]
    pub(crate) replies: Vec<String>,
}

/// `--channel text`: askgate's plain text, no buttons, printed as it is.
pub(crate) const TEXT_CHANNEL: &str = "text";

/// What `--channel` takes: [`TEXT_CHANNEL`], and every kind the registry
/// knows ([`crate::channels::kinds`]), described by its display name; clap
/// refuses anything else, listing these.
fn render_channels() -> PossibleValuesParser {
    let text = PossibleValue::new(TEXT_CHANNEL).help("Plain text, no buttons: prints the text itself");
    let kinds = crate::channels::kinds()
        .into_iter()
        .map(|kind| PossibleValue::new(kind.kind()).help(kind.display_name()));
    PossibleValuesParser::new(std::iter::once(text).chain(kinds))
}
