//! `askgate health [--url URL]`: whether a running askgate is ready, for a
//! container's `HEALTHCHECK` or a supervisor's probe, with no `curl` in the
//! image. Exit 0 when `/readyz` answers 200, 1 otherwise (what Docker reads
//! as unhealthy; it reserves 2), with one line on stderr saying why.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::HealthArgs;

/// A probe that hangs is a failed probe; Docker's own default timeout is 30 s.
const TIMEOUT: Duration = Duration::from_secs(5);

/// What `/readyz` said, bounded: a line for the admin, never a page.
const MAX_REASON_BYTES: usize = 512;

pub(crate) fn check(args: &HealthArgs) -> ExitCode {
    let url = format!("{}/readyz", args.url.trim_end_matches('/'));
    let said = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("could not start: {error}"))
        .and_then(|runtime| runtime.block_on(probe(&url)));
    let mut err = std::io::stderr().lock();
    match said {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            let _ = writeln!(err, "askgate health: {url}: {why}");
            ExitCode::from(1)
        }
    }
}

async fn probe(url: &str) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()
        .map_err(|error| error.to_string())?;
    let response = client.get(url).send().await.map_err(|error| {
        if error.is_timeout() {
            format!("no answer within {} s", TIMEOUT.as_secs())
        } else {
            "could not connect".to_owned()
        }
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response.bytes().await.unwrap_or_default();
    let body = String::from_utf8_lossy(&body[..body.len().min(MAX_REASON_BYTES)]).into_owned();
    Err(format!(
        "not ready ({status}): {}",
        askgate_core::text::excerpt(body.trim())
    ))
}
