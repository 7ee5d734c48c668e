//! `askgate ask --to NAME FILE`: asks through a running server's
//! `POST /v1/ask` and prints the tool result.

use std::io::{Read as _, Write as _};

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
    fields.insert("to".into(), Value::String(args.to));
    let url = format!("{}/v1/ask", args.server.trim_end_matches('/'));
    let response = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&args.token)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("reaching {url}"))?;
    let status = response.status();
    let text = response.text().await.context("reading the answer")?;
    let value: Value =
        serde_json::from_str(text.trim()).with_context(|| format!("the server answered {status} with: {text}"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    if !status.is_success() {
        bail!("the server refused the question ({status})");
    }
    Ok(())
}
