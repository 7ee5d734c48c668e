//! `askgate serve`: wires store, engine, channels and HTTP server together.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context as _, Result};
use askgate_adapter::{ChannelRuntime, Shutdown};
use askgate_core::channel::{Channel, InboundSink};
use askgate_engine::{Clock, Engine, Recipient, RecipientSurface};
use askgate_server::{AgentToken, Allowed, AppState, Metrics, ServerSettings, WebKey};
use askgate_store::{PgStore, SqliteStore, Store};
use rand::distr::{Alphanumeric, SampleString};
use tokio::net::TcpListener;

use crate::config::{Config, Secret, StoreConfig};

/// How long the channels' event loops get to stop after the server has.
const CHANNEL_STOP_GRACE: Duration = Duration::from_secs(5);

/// A secret that askgate generated, or found where it keeps them.
struct Generated {
    secret: Secret,
    created: bool,
}

/// Where askgate keeps the secrets it generates (agent tokens, web page
/// keys): beside a SQLite store, files in `data_dir` (the one process reads
/// them); beside PostgreSQL, the database's settings, so that every replica
/// accepts the same ones.
enum Keeper<'a> {
    Files(&'a Path),
    Settings(&'a dyn Store),
}

impl Keeper<'_> {
    /// The secret named `name` (`agent-token-default`), created on first start.
    async fn secret(&self, name: &str, prefix: &str) -> Result<Generated> {
        let fresh = || format!("{prefix}{}", Alphanumeric.sample_string(&mut rand::rng(), 40));
        match self {
            Self::Files(data_dir) => {
                let path = data_dir.join(name);
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let text = text.trim();
                    if !text.is_empty() {
                        return Ok(Generated {
                            secret: Secret::new(text.to_owned()),
                            created: false,
                        });
                    }
                }
                let secret = fresh();
                write_private(&path, &secret).with_context(|| format!("writing {}", path.display()))?;
                Ok(Generated {
                    secret: Secret::new(secret),
                    created: true,
                })
            }
            Self::Settings(store) => {
                // Replicas starting together each offer one; all keep the first.
                let key = format!("secret.{name}");
                let created = store
                    .insert_setting(&key, &fresh())
                    .await
                    .with_context(|| format!("keeping {key} in the database"))?;
                let secret = store
                    .setting(&key)
                    .await
                    .with_context(|| format!("reading {key} from the database"))?
                    .with_context(|| format!("{key} is missing from the database's settings"))?;
                Ok(Generated {
                    secret: Secret::new(secret),
                    created,
                })
            }
        }
    }

    /// Where the secret `name` is, in words for the admin.
    fn place(&self, name: &str) -> String {
        match self {
            Self::Files(data_dir) => data_dir.join(name).display().to_string(),
            Self::Settings(_) => format!("the database's settings (key secret.{name})"),
        }
    }
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// Runs the service until SIGINT or SIGTERM.
// The wiring, in the order it happens; splitting it would only scatter it.
#[allow(clippy::too_many_lines)]
pub(crate) async fn serve(config: Config) -> Result<()> {
    // The port first: a start that cannot listen (the port is taken)
    // creates nothing, not even the data directory.
    // Room for every connection the cap allows, before the first is accepted.
    let limits = askgate_server::ConnectionLimits {
        max_connections: askgate_server::conn::fit_open_files_limit(config.connections.max_connections),
        ..config.connections.clone()
    };
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let mut out = std::io::stdout().lock();
    let mut announcements = Vec::new();

    let store: Arc<dyn Store> = match &config.store {
        StoreConfig::Sqlite { path } => Arc::new(
            SqliteStore::open(path)
                .await
                .with_context(|| format!("opening the SQLite store {}", path.display()))?,
        ),
        // The error names the server and what went wrong, never the URL.
        StoreConfig::Postgres { url, connections } => Arc::new(
            PgStore::open(url.expose(), *connections)
                .await
                .context("opening the PostgreSQL store ([store] url)")?,
        ),
    };

    let keeper = match &config.store {
        StoreConfig::Sqlite { .. } => Keeper::Files(&config.data_dir),
        StoreConfig::Postgres { .. } => Keeper::Settings(store.as_ref()),
    };

    let mut agents = Vec::new();
    for agent in &config.agents {
        let token = match &agent.token {
            Some(token) => token.clone(),
            None => {
                let name = format!("agent-token-{}", agent.name);
                let kept = keeper.secret(&name, "agt_").await?;
                let place = keeper.place(&name);
                announcements.push(if kept.created {
                    format!(
                        "agent token for \"{}\" (created, kept in {place}): {}",
                        agent.name,
                        kept.secret.expose()
                    )
                } else {
                    format!("agent token for \"{}\": in {place}", agent.name)
                });
                kept.secret
            }
        };
        agents.push(AgentToken {
            name: agent.name.clone(),
            token: token.expose().to_owned(),
            allowed: agent.recipients.clone().map_or(Allowed::All, Allowed::Only),
        });
    }

    // Every channel the same way: start it, and check its credentials with
    // its platform before anything is served.
    let mut runtimes: Vec<Arc<dyn ChannelRuntime>> = Vec::new();
    for settings in &config.channels {
        let runtime = settings.start();
        let found = runtime.check().await.map_err(|problem| anyhow::anyhow!("{problem}"))?;
        announcements.push(format!("{} channel \"{}\": {found}", settings.kind(), settings.name()));
        runtimes.push(runtime);
    }
    announcements.extend(crate::channels::finding_ids(config.channels.iter().map(|c| c.kind())).map(str::to_owned));
    let channels: Vec<Arc<dyn Channel>> = runtimes.iter().map(|runtime| runtime.channel()).collect();
    let recipients: Vec<Recipient> = config
        .recipients
        .iter()
        .map(|r| Recipient {
            name: r.name.clone(),
            display_name: r.display_name.clone(),
            surfaces: r
                .surfaces
                .iter()
                .map(|s| {
                    RecipientSurface::new(
                        &s.channel,
                        &s.kind,
                        s.address.destination.clone(),
                        s.address.answerers.clone(),
                    )
                })
                .collect(),
            locale: r.locale,
        })
        .collect();

    let address = listener.local_addr()?;
    let base = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{address}"))
        .trim_end_matches('/')
        .to_owned();

    // Every recipient has a page, whichever surfaces they list: it is how
    // they answer when a chat app is down.
    let mut web_keys = Vec::new();
    for recipient in &config.recipients {
        let key = match &recipient.web_key {
            // The link in full, every start: this is the admin's own terminal
            // (logs, which others may read, go to stderr and never hold it).
            Some(key) => {
                announcements.push(format!(
                    "web page for \"{}\": {base}/web/{}",
                    recipient.name,
                    key.expose()
                ));
                key.clone()
            }
            None => {
                let name = format!("web-key-{}", recipient.name);
                let kept = keeper.secret(&name, "").await?;
                let place = keeper.place(&name);
                announcements.push(if kept.created {
                    format!(
                        "web page for \"{}\" (created, key kept in {place}): {base}/web/{}",
                        recipient.name,
                        kept.secret.expose()
                    )
                } else {
                    format!(
                        "web page for \"{}\" (key kept in {place}): {base}/web/{}",
                        recipient.name,
                        kept.secret.expose()
                    )
                });
                kept.secret
            }
        };
        web_keys.push(WebKey {
            key: key.expose().to_owned(),
            recipient: recipient.name.clone(),
        });
    }

    let metrics = Arc::new(Metrics::new());
    let engine =
        Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone()).with_limits(config.limits);
    engine.start().await.context("taking up pending questions")?;
    metrics.set_pending(
        store
            .count_pending()
            .await
            .map_or(0, |count| usize::try_from(count).unwrap_or(usize::MAX)),
    );

    let settings = ServerSettings {
        agents,
        web_keys,
        max_body_bytes: config.max_body_bytes,
        ask_keepalive: config.ask_keepalive,
        ask_retry_grace: config.ask_retry_grace,
        mcp: askgate_server::McpSettings {
            wait: config.mcp_wait,
            allowed_hosts: mcp_hosts(config.public_url.as_deref(), address.ip()),
            max_sessions_per_token: config.mcp_max_sessions,
        },
    };
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let state = AppState::new(engine.clone(), metrics, settings, stopping.clone());

    // These lines are for the person who started askgate (and for tests, which
    // read the first one); logs go to stderr.
    writeln!(out, "askgate listening on http://{address}")?;
    for line in announcements {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    drop(out);
    tracing::info!(%address, "askgate is serving");

    let timers = {
        let engine = engine.clone();
        let stopped = Shutdown::new(stopping.clone());
        tokio::spawn(async move { engine.run_timers(stopped.wait()).await })
    };
    let retention = config.retention.map(|retention| {
        let engine = engine.clone();
        let stopped = Shutdown::new(stopping.clone());
        tokio::spawn(async move { engine.run_retention(retention, stopped.wait()).await })
    });
    // Each channel's webhook routes (mounted in this server, the platform
    // told where) and its long-lived connection (polling, a gateway, a
    // socket), which this function owns and awaits on the way out.
    let sink: Arc<dyn InboundSink> = Arc::new(engine.clone());
    let lease_owner = matches!(config.store, StoreConfig::Postgres { .. }).then(|| {
        format!(
            "askgate-{}-{}",
            std::process::id(),
            ulid::Ulid::new().to_string().to_lowercase()
        )
    });
    let mut webhooks = axum::Router::new();
    let mut connections = Vec::new();
    for runtime in &runtimes {
        if let Some(routes) = runtime.routes(Arc::clone(&sink)) {
            webhooks = webhooks.merge(routes);
        }
        runtime.register(&base).await.with_context(|| {
            format!(
                "channels.{}: the platform refused askgate's webhook address",
                runtime.name()
            )
        })?;
        let shutdown = Shutdown::new(stopping.clone());
        connections.push(match &lease_owner {
            // Replicas on one database: one at a time holds the connection.
            Some(owner) => tokio::spawn(crate::lease::run_leased(
                Arc::clone(runtime),
                Arc::clone(&sink),
                Arc::clone(&store),
                owner.clone(),
                shutdown,
            )),
            None => tokio::spawn(Arc::clone(runtime).run(Arc::clone(&sink), shutdown)),
        });
    }
    let shutdown = async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stop.send(true);
    };
    askgate_server::serve_with_limits(listener, state, webhooks, limits, shutdown)
        .await
        .context("serving HTTP")?;
    let _ = timers.await;
    if let Some(retention) = retention {
        let _ = retention.await;
    }
    for connection in connections {
        if tokio::time::timeout(CHANNEL_STOP_GRACE, connection).await.is_err() {
            tracing::warn!("a channel's connection did not stop in time; leaving it");
        }
    }
    Ok(())
}

/// The `Host` names `/mcp` answers to: loopback, `server.public_url`'s host,
/// and the address askgate listens on when it is a specific one.
fn mcp_hosts(public_url: Option<&str>, listen: std::net::IpAddr) -> Vec<String> {
    let mut hosts = askgate_server::mcp::allowed_hosts(public_url);
    if !listen.is_unspecified() && !listen.is_loopback() {
        hosts.push(listen.to_string());
    }
    hosts
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            let _ = interrupt.await;
            return;
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
