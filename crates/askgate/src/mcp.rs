//! `askgate mcp --url URL`: the MCP tools over stdio, for an MCP client to
//! launch as a subprocess, bridged to a running askgate over its `/v1` API.
//! stdout carries MCP frames only; logs go to stderr. When the client
//! closes stdin the session has ended: its pending questions are cancelled.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use askgate_server::mcp::{HttpBackend, McpServer};
use rmcp::ServiceExt as _;

use crate::cli::McpArgs;

pub(crate) async fn run(args: McpArgs) -> Result<()> {
    let token = match &args.token_file {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        None => std::env::var("ASKGATE_TOKEN").unwrap_or_default(),
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("no agent token: set ASKGATE_TOKEN or pass --token-file PATH");
    }
    let backend = HttpBackend::new(&args.url, token, args.wait_seconds.map(Duration::from_secs))
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    // One stdio connection is one MCP session: its id scopes the
    // one-pending-question rule like a streamable HTTP session's.
    let session = ulid::Ulid::new().to_string();
    let server = McpServer::new(Arc::new(backend), Some(session.clone()));
    tracing::info!(url = %args.url, session = %session, "serving mcp over stdio");
    let running = server
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the MCP session on stdio")?;
    let reason = running.waiting().await;
    tracing::info!(?reason, "the mcp session ended");
    server.end_session().await;
    Ok(())
}
