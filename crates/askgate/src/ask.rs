//! `askgate ask --to NAME FILE`: asks through a running server's
//! `POST /v1/ask` and prints the tool result.
//!
//! stdout carries only the result (a script reads it); stderr says what is
//! happening: the question's id and recipient, then how long is left while
//! it waits — a live line on a terminal, one line otherwise.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::cli::AskArgs;

pub(crate) async fn ask(args: AskArgs) -> Result<()> {
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
    fields.insert("to".into(), Value::String(args.to.clone()));
    // The question's own timeout, or askgate's default (spec §8).
    let timeout = fields
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(askgate_core::request::DEFAULT_TIMEOUT_SECONDS));
    let url = format!("{}/v1/ask", args.server.trim_end_matches('/'));
    let mut response = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&args.token)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("reaching {url}"))?;
    let status = response.status();
    let asked = Instant::now();
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    if status.is_success() {
        let id = response
            .headers()
            .get(askgate_server::api::QUESTION_ID_HEADER)
            .and_then(|id| id.to_str().ok())
            .unwrap_or("?")
            .to_owned();
        progress.line(&format!("asked {} (question {id}); waiting for the answer…", args.to));
    }
    let deadline = Duration::from_secs(timeout);
    let mut text = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            chunk = response.chunk() => match chunk.context("reading the answer")? {
                Some(chunk) => text.extend_from_slice(&chunk),
                None => break,
            },
            _ = tick.tick(), if status.is_success() => {
                let left = deadline.saturating_sub(asked.elapsed());
                progress.live(&format!("waiting… {} left", clock(left)));
            }
        }
    }
    progress.done();
    let text = String::from_utf8_lossy(&text);
    let value: Value =
        serde_json::from_str(text.trim()).with_context(|| format!("the server answered {status} with: {text}"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    if !status.is_success() {
        bail!("the server refused the question ({status})");
    }
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
    use super::*;

    #[test]
    fn the_time_left_reads_as_a_clock() {
        assert_eq!(clock(Duration::from_secs(900)), "15:00");
        assert_eq!(clock(Duration::from_secs(61)), "1:01");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(clock(Duration::ZERO), "0:00");
    }
}
