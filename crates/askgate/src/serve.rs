//! `askgate serve`: wires store, engine, channels and HTTP server together.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use askgate_core::channel::{Channel, Destination};
use askgate_engine::{Clock, Engine, Recipient};
use askgate_server::{AgentToken, Allowed, AppState, Metrics, ServerSettings, WebChannel, WebKey};
use askgate_store::{SqliteStore, Store};
use rand::distr::{Alphanumeric, SampleString};
use tokio::net::TcpListener;

use crate::config::{ChannelKind, Config, Secret};

/// A secret that askgate generated or read from the data directory.
struct Generated {
    secret: Secret,
    created: bool,
}

/// The secret kept in `<data_dir>/<file>`, created on first start.
fn kept_secret(data_dir: &Path, file: &str, prefix: &str) -> Result<Generated> {
    let path = data_dir.join(file);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let text = text.trim();
        if !text.is_empty() {
            return Ok(Generated {
                secret: Secret::new(text.to_owned()),
                created: false,
            });
        }
    }
    let secret = format!("{prefix}{}", Alphanumeric.sample_string(&mut rand::rng(), 40));
    write_private(&path, &secret).with_context(|| format!("writing {}", path.display()))?;
    Ok(Generated {
        secret: Secret::new(secret),
        created: true,
    })
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

/// A Telegram channel; the token never appears in an error.
pub(crate) fn telegram_channel(
    name: &str,
    token: &Secret,
    api_url: Option<&str>,
) -> Result<askgate_telegram::TelegramChannel> {
    let api_url = api_url
        .map(|url| reqwest::Url::parse(url).with_context(|| format!("channels.{name}.api_url is not a URL")))
        .transpose()?;
    Ok(askgate_telegram::TelegramChannel::new(name, token.expose(), api_url))
}

/// Runs the service until SIGINT or SIGTERM.
// The wiring, in the order it happens; splitting it would only scatter it.
#[allow(clippy::too_many_lines)]
pub(crate) async fn serve(config: Config) -> Result<()> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let mut out = std::io::stdout().lock();
    let mut announcements = Vec::new();

    let mut agents = Vec::new();
    for agent in &config.agents {
        let token = match &agent.token {
            Some(token) => token.clone(),
            None => {
                let kept = kept_secret(&config.data_dir, &format!("agent-token-{}", agent.name), "agt_")?;
                let file = config.data_dir.join(format!("agent-token-{}", agent.name));
                announcements.push(if kept.created {
                    format!(
                        "agent token for \"{}\" (created, kept in {}): {}",
                        agent.name,
                        file.display(),
                        kept.secret.expose()
                    )
                } else {
                    format!("agent token for \"{}\": in {}", agent.name, file.display())
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

    let store = SqliteStore::open(&config.store_path)
        .await
        .with_context(|| format!("opening the SQLite store {}", config.store_path.display()))?;
    let store: Arc<dyn Store> = Arc::new(store);

    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    let mut telegram_channels = Vec::new();
    for channel in &config.channels {
        match &channel.kind {
            ChannelKind::Web => channels.push(Arc::new(WebChannel::new(&channel.name))),
            ChannelKind::Telegram {
                token,
                api_url,
                webhook_secret,
            } => {
                let telegram = Arc::new(telegram_channel(&channel.name, token, api_url.as_deref())?);
                let username = telegram.check().await.with_context(|| {
                    format!(
                        "channels.{}: checking the bot token with Telegram (getMe) failed",
                        channel.name
                    )
                })?;
                let mode = if webhook_secret.is_some() { "webhook" } else { "polling" };
                announcements.push(format!(
                    "telegram channel \"{}\": bot @{username}, {mode}",
                    channel.name
                ));
                channels.push(telegram.clone());
                telegram_channels.push((telegram, webhook_secret.clone()));
            }
        }
    }
    let recipients: Vec<Recipient> = config
        .recipients
        .iter()
        .map(|r| Recipient {
            name: r.name.clone(),
            display_name: r.display_name.clone(),
            channel: r.channel.clone(),
            destination: Destination {
                conversation: r.conversation.clone().unwrap_or_else(|| r.name.clone()),
                thread: r.thread.clone(),
            },
            answerers: r.answerers.clone(),
            locale: r.locale,
        })
        .collect();

    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let address = listener.local_addr()?;
    let base = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{address}"))
        .trim_end_matches('/')
        .to_owned();

    let mut web_keys = Vec::new();
    for recipient in &config.recipients {
        let is_web = config
            .channels
            .iter()
            .any(|c| c.name == recipient.channel && c.kind == ChannelKind::Web);
        if !is_web {
            continue;
        }
        let key = match &recipient.web_key {
            Some(key) => {
                announcements.push(format!(
                    "web page for \"{}\": {base}/web/<web_key from the configuration>",
                    recipient.name
                ));
                key.clone()
            }
            None => {
                let file = format!("web-key-{}", recipient.name);
                let kept = kept_secret(&config.data_dir, &file, "")?;
                let path = config.data_dir.join(&file);
                announcements.push(if kept.created {
                    format!(
                        "web page for \"{}\" (created, key kept in {}): {base}/web/{}",
                        recipient.name,
                        path.display(),
                        kept.secret.expose()
                    )
                } else {
                    format!(
                        "web page for \"{}\": {base}/web/<the key in {}>",
                        recipient.name,
                        path.display()
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
    let engine = Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone());
    engine.start().await.context("taking up pending questions")?;
    metrics.set_pending(store.pending().await.map_or(0, |pending| pending.len()));

    let settings = ServerSettings {
        agents,
        web_keys,
        max_body_bytes: config.max_body_bytes,
        ask_keepalive: config.ask_keepalive,
    };
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let state = AppState::new(engine.clone(), metrics, settings, stopping.clone());
    let stopping_for_pollers = stopping.clone();

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
        let mut stopped = stopping;
        tokio::spawn(async move {
            engine
                .run_timers(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
        })
    };
    let mut webhooks = axum::Router::new();
    for (telegram, webhook_secret) in telegram_channels {
        let name = askgate_core::Channel::name(telegram.as_ref()).to_owned();
        if let Some(secret) = webhook_secret {
            // Mounted in askgate's own server; Telegram is told where.
            let path = format!("/telegram/{name}");
            let sink: Arc<dyn askgate_core::InboundSink> = Arc::new(engine.clone());
            webhooks = webhooks.merge(askgate_telegram::webhook::router(
                &path,
                telegram.clone(),
                sink,
                secret.expose(),
            ));
            let url = reqwest::Url::parse(&format!("{base}{path}"))
                .with_context(|| format!("the webhook URL of channels.{name}"))?;
            askgate_telegram::webhook::register(&telegram, url, secret.expose())
                .await
                .with_context(|| format!("channels.{name}: Telegram refused the webhook (setWebhook)"))?;
            continue;
        }
        let sink: Arc<dyn askgate_core::InboundSink> = Arc::new(engine.clone());
        let mut stopped = stopping_for_pollers.clone();
        tokio::spawn(async move {
            askgate_telegram::polling::run(telegram, sink, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await;
        });
    }
    let shutdown = async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stop.send(true);
    };
    askgate_server::serve_with(listener, state, webhooks, shutdown)
        .await
        .context("serving HTTP")?;
    let _ = timers.await;
    Ok(())
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
