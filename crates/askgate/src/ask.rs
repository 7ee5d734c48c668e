//! `askgate ask [--to NAME] FILE`: asks through a running server's
//! `POST /v1/ask` and prints the tool result.
//!
//! stdout carries only the result (a script reads it); stderr says what is
//! happening: the question's id and recipient, then how long is left while
//! it waits — a live line on a terminal, one line otherwise. The exit code
//! says how the question ended ([`EXIT_CODES`]), so that a script can branch
//! on it without reading the JSON.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::Value;

use crate::cli::AskArgs;

/// The person answered: the answers are on stdout.
const ANSWERED: u8 = 0;
/// askgate refused the question, could not be reached, or stopped before
/// the question ended.
const FAILED: u8 = 1;
/// The command line or its files are wrong (clap's own code for usage).
const USAGE: u8 = 2;
/// The question ended without an answer: skipped, cancelled, or timed out.
const NO_ANSWER: u8 = 3;
/// The question could not be delivered to the recipient.
const DELIVERY_FAILED: u8 = 4;

/// `askgate ask --help`'s table of exit codes (README, "askgate ask", says
/// the same).
pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  answered: the tool result on stdout
  1  askgate refused the question (its error JSON on stdout), could not be
     reached, or stopped before the question ended
  2  usage: a wrong command line, an unreadable prompt or token file
  3  no answer: the person skipped it, it was cancelled, or it timed out
     (the result on stdout)
  4  delivery failed: askgate could not reach the recipient (the result on
     stdout)";

/// Runs `askgate ask`; every failure is one line on stderr and its exit code.
pub(crate) fn run(args: &AskArgs) -> ExitCode {
    let prepared = token(args).and_then(|token| Ok((token, prompt(args)?)));
    let (token, body) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return failed(USAGE, &error),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return failed(FAILED, &error.into()),
    };
    match runtime.block_on(ask(args, &token, body)) {
        Ok(code) => ExitCode::from(code),
        Err(error) => failed(FAILED, &error),
    }
}

fn failed(code: u8, error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "askgate: {error:#}");
    ExitCode::from(code)
}

/// The agent token: `--token`, the trimmed content of `--token-file` (clap
/// refuses both), else `ASKGATE_TOKEN`.
fn token(args: &AskArgs) -> Result<String> {
    let (token, from) = match (&args.token, &args.token_file) {
        (Some(_), Some(_)) => bail!("give --token or --token-file, not both"),
        (Some(token), None) => (token.clone(), "--token".to_owned()),
        (None, Some(path)) => (read_token_file(path)?, format!("the token file {}", path.display())),
        (None, None) => (
            std::env::var("ASKGATE_TOKEN").unwrap_or_default(),
            "ASKGATE_TOKEN".to_owned(),
        ),
    };
    let token = token.trim();
    if token.is_empty() {
        if args.token.is_none() && args.token_file.is_none() {
            bail!("no agent token: pass --token-file PATH (or set ASKGATE_TOKEN)");
        }
        bail!("{from} is empty: it should hold the agent token");
    }
    Ok(token.to_owned())
}

fn read_token_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("could not read the token file {}", path.display()))
}

/// The request body: the prompt file's `ask_user` arguments, with `--to`.
fn prompt(args: &AskArgs) -> Result<Value> {
    let text = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the prompt from standard input")?;
        text
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?
    };
    let mut body: Value = serde_json::from_str(&text).context("the prompt file is not JSON")?;
    let Some(fields) = body.as_object_mut() else {
        bail!("the prompt file must hold a JSON object with the ask_user arguments");
    };
    // Without --to, the file's own `to`, or none: askgate then asks the one
    // recipient the token may ask.
    if let Some(to) = &args.to {
        fields.insert("to".into(), Value::String(to.clone()));
    }
    Ok(body)
}

async fn ask(args: &AskArgs, token: &str, body: Value) -> Result<u8> {
    // The question's own timeout, or askgate's default (spec §8).
    let timeout = body
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(askgate_core::request::DEFAULT_TIMEOUT_SECONDS));
    let to = body.get("to").and_then(Value::as_str).map(str::to_owned);
    let base = args.server.trim_end_matches('/');
    let url = format!("{base}/v1/ask");
    let client = reqwest::Client::new();
    let mut response = client
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .map_err(|error| unreachable(base, &url, &error))?;
    let status = response.status();
    if !status.is_success() {
        return refused(status, response).await;
    }
    let id = response
        .headers()
        .get(askgate_server::api::QUESTION_ID_HEADER)
        .and_then(|id| id.to_str().ok())
        .unwrap_or("?")
        .to_owned();
    let asked = Instant::now();
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    let whom = match to {
        Some(to) => to,
        None => recipient_of(&client, base, token, &id)
            .await
            .unwrap_or_else(|| "the one recipient".into()),
    };
    progress.line(&format!("asked {whom} (question {id}); waiting for the answer…"));
    let deadline = Duration::from_secs(timeout);
    let mut text = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            chunk = response.chunk() => match chunk {
                Ok(Some(chunk)) => text.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(error) => {
                    progress.done();
                    return Err(anyhow!(error).context(format!(
                        "the connection to askgate broke while waiting for question {id}"
                    )));
                }
            },
            _ = tick.tick() => {
                let left = deadline.saturating_sub(asked.elapsed());
                progress.live(&format!("waiting… {} left", clock(left)));
            }
        }
    }
    progress.done();
    let text = String::from_utf8_lossy(&text);
    let value: Value =
        serde_json::from_str(text.trim()).with_context(|| format!("askgate answered with what is not JSON: {text}"))?;
    print(&value)?;
    let code = match value["status"].as_str() {
        Some("answered") => ANSWERED,
        Some("no_answer") => NO_ANSWER,
        Some("delivery_failed") => DELIVERY_FAILED,
        Some("pending") => bail!(
            "askgate stopped before question {id} ended; it is still pending: \
             GET {base}/v1/questions/{id}?wait=N picks its answer up"
        ),
        _ => bail!("askgate answered with a result this askgate does not know: {value}"),
    };
    Ok(code)
}

/// Why the request went unanswered: nothing listens at the URL, or another
/// failure of the connection.
fn unreachable(base: &str, url: &str, error: &reqwest::Error) -> anyhow::Error {
    if error.is_connect() {
        anyhow!("could not connect — is `askgate serve` running at {base}?")
    } else {
        anyhow!("reaching {url}: {error}")
    }
}

/// A refused question: askgate's error JSON on stdout, its sentence on stderr.
async fn refused(status: reqwest::StatusCode, response: reqwest::Response) -> Result<u8> {
    let text = response.text().await.unwrap_or_default();
    let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
        bail!(
            "askgate answered {status}: {}",
            askgate_core::text::excerpt(text.trim())
        );
    };
    print(&value)?;
    let error = &value["error"];
    let code = error["code"].as_str().unwrap_or("?");
    let message = error["message"].as_str().unwrap_or("");
    bail!("askgate refused the question ({status}, {code}): {message}")
}

/// Whom question `id` was asked, from its resource (best effort: only what
/// stderr says depends on it).
async fn recipient_of(client: &reqwest::Client, base: &str, token: &str, id: &str) -> Option<String> {
    let response = client
        .get(format!("{base}/v1/questions/{id}"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    let resource: Value = response.json().await.ok()?;
    resource["to"].as_str().map(str::to_owned)
}

fn print(value: &Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// `14:05` (minutes and seconds), or `1:02:03` past an hour.
fn clock(left: Duration) -> String {
    let seconds = left.as_secs();
    if seconds >= 3600 {
        format!("{}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60)
    } else {
        format!("{}:{:02}", seconds / 60, seconds % 60)
    }
}

/// What `askgate ask` says on stderr: plain lines, and on a terminal one
/// live line rewritten in place.
struct Progress {
    terminal: bool,
    live: bool,
}

impl Progress {
    fn new(terminal: bool) -> Self {
        Self { terminal, live: false }
    }

    fn line(&mut self, text: &str) {
        self.done();
        let _ = writeln!(std::io::stderr(), "askgate: {text}");
    }

    /// Rewrites the live line; off a terminal it says nothing (a log
    /// should not get a line a second).
    fn live(&mut self, text: &str) {
        if self.terminal {
            let _ = write!(std::io::stderr(), "\r\x1b[2Kaskgate: {text}");
            let _ = std::io::stderr().flush();
            self.live = true;
        }
    }

    /// Clears the live line.
    fn done(&mut self) {
        if self.live {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.live = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    fn ask_args(args: &[&str]) -> Result<AskArgs, clap::Error> {
        let parsed = Cli::try_parse_from(["askgate", "ask"].iter().chain(args))?;
        match parsed.command {
            Command::Ask(args) => Ok(args),
            other => panic!("not ask: {other:?}"),
        }
    }

    #[test]
    fn the_token_file_is_read_and_trimmed_and_not_given_with_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  agent-token-123\n").unwrap();
        let path = file.to_str().unwrap();
        let args = ask_args(&["--token-file", path, "prompt.json"]).unwrap();
        assert_eq!(token(&args).unwrap(), "agent-token-123");

        let both = ask_args(&["--token", "t", "--token-file", path, "prompt.json"]).unwrap_err();
        assert_eq!(both.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert_eq!(both.exit_code(), i32::from(USAGE));

        std::fs::write(&file, " \n").unwrap();
        let empty = token(&ask_args(&["--token-file", path, "prompt.json"]).unwrap()).unwrap_err();
        assert!(
            empty.to_string().ends_with("is empty: it should hold the agent token"),
            "{empty}"
        );

        let missing = dir.path().join("missing");
        let args = ask_args(&["--token-file", missing.to_str().unwrap(), "prompt.json"]).unwrap();
        let unreadable = format!("{:#}", token(&args).unwrap_err());
        assert!(unreadable.starts_with("could not read the token file "), "{unreadable}");
    }

    #[test]
    fn to_is_optional_and_overrides_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prompt.json");
        std::fs::write(&file, r#"{"to": "them", "questions": []}"#).unwrap();
        let path = file.to_str().unwrap();
        let args = ask_args(&["--token", "t", path]).unwrap();
        assert_eq!(prompt(&args).unwrap()["to"], "them");
        let args = ask_args(&["--token", "t", "--to", "me", path]).unwrap();
        assert_eq!(prompt(&args).unwrap()["to"], "me");
        std::fs::write(&file, r#"{"questions": []}"#).unwrap();
        let args = ask_args(&["--token", "t", path]).unwrap();
        assert!(prompt(&args).unwrap().get("to").is_none());
    }

    #[test]
    fn the_help_lists_every_exit_code() {
        let help = Cli::try_parse_from(["askgate", "ask", "--help"])
            .unwrap_err()
            .to_string();
        for code in [ANSWERED, FAILED, USAGE, NO_ANSWER, DELIVERY_FAILED] {
            assert!(help.contains(&format!("\n  {code}  ")), "exit code {code}: {help}");
        }
        assert!(help.contains("--token-file <PATH>"), "{help}");
    }

    #[test]
    fn the_time_left_reads_as_a_clock() {
        assert_eq!(clock(Duration::from_secs(900)), "15:00");
        assert_eq!(clock(Duration::from_secs(61)), "1:01");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(clock(Duration::ZERO), "0:00");
    }
}
