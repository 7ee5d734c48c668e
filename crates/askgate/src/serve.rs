//! `askgate serve`: wires store, engine, channels and HTTP server together.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context as _, Result};
use askgate_adapter::connect::bring_up;
use askgate_adapter::{ChannelRuntime, ChannelState, Shutdown, StateReport as _};
use askgate_core::channel::{Channel, InboundSink};
use askgate_engine::{Clock, Engine, Recipient, RecipientSurface};
use askgate_server::{AgentToken, Allowed, AppState, ChannelStates, Metrics, ServerSettings, WebKey};
use askgate_store::{PgStore, SqliteStore, Store};
use tokio::net::TcpListener;

use crate::callback::{HttpSender, WebhookSecret};
use crate::config::{Config, StoreConfig};
use crate::keeper::Keeper;

/// How long the channels' event loops get to stop after the server has.
const CHANNEL_STOP_GRACE: Duration = Duration::from_secs(5);

/// How long `serve` waits, at most, for every channel's first attempt to
/// come up before it serves: long enough for a platform that answers to be
/// announced as up (and for Discord's Message Content intent to be settled
/// before pending questions are delivered again), short enough that a
/// platform that does not answer keeps nothing waiting.
const FIRST_ATTEMPTS: Duration = Duration::from_secs(5);

/// Runs the service until SIGINT or SIGTERM.
// The wiring, in the order it happens; splitting it would only scatter it.
#[allow(clippy::too_many_lines)]
pub(crate) async fn serve(config: Config, file: Option<PathBuf>) -> Result<()> {
    // The signals first: until a handler is installed, SIGTERM or SIGHUP
    // ends the process (a supervisor's stop or reload during a start).
    let signals = Signals::install();
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
        StoreConfig::Sqlite { .. } => Keeper::Files(config.data_dir.clone()),
        StoreConfig::Postgres { .. } => Keeper::Settings(Arc::clone(&store)),
    };

    let address = listener.local_addr()?;
    let base = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", reachable(address)))
        .trim_end_matches('/')
        .to_owned();
    let metrics = Arc::new(Metrics::new());
    let channel_states = ChannelStates::new(metrics.clone());
    let (stop, stopping) = tokio::sync::watch::channel(false);

    // Every channel the same way: brought up in the background (its
    // credentials checked, its webhook registered, tried again while its
    // platform is out of reach), so that no platform keeps askgate from
    // serving; the first attempts are waited for, briefly, to say where
    // each stands.
    let runtimes: Vec<Arc<dyn ChannelRuntime>> = config.channels.iter().map(|settings| settings.start()).collect();
    for runtime in &runtimes {
        channel_states.report(runtime.name(), ChannelState::Connecting { reason: None });
    }
    let bringing: Vec<_> = runtimes
        .iter()
        .map(|runtime| {
            let (runtime, states, base) = (Arc::clone(runtime), channel_states.clone(), base.clone());
            let shutdown = Shutdown::new(stopping.clone());
            tokio::spawn(async move { bring_up(runtime.as_ref(), &base, &states, &shutdown).await })
        })
        .collect();
    channel_states.first_attempts(FIRST_ATTEMPTS).await;
    let mut brought = Vec::new();
    for ((settings, runtime), bringing) in config.channels.iter().zip(&runtimes).zip(bringing) {
        let state = channel_states.snapshot().remove(runtime.name());
        let (said, now) = match state {
            // Up or refused: bring_up has returned, or is returning.
            Some(ChannelState::Up | ChannelState::Refused { .. }) => match bringing.await {
                Ok(Some(found)) => (found, Brought::Up),
                _ => (
                    format!(
                        "{}; askgate serves without it",
                        channel_states
                            .snapshot()
                            .get(runtime.name())
                            .map_or_else(|| "refused".to_owned(), ToString::to_string)
                    ),
                    Brought::Down,
                ),
            },
            state => (
                format!(
                    "{}; trying again in the background",
                    state.map_or_else(|| "connecting".to_owned(), |state| state.to_string())
                ),
                Brought::Later(bringing),
            ),
        };
        announcements.push(format!("{} channel \"{}\": {said}", settings.kind(), settings.name()));
        brought.push(now);
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
            waiting: r.waiting.clone(),
            people: r.people.clone(),
        })
        .collect();

    let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let (agents, web_keys, said) = credentials(&config, &keeper, &base, on_terminal).await?;
    announcements.extend(said);
    let (signers, said) = webhook_secrets(&config, &keeper, on_terminal).await?;
    announcements.extend(said);

    let agent_nudges = config
        .agents
        .iter()
        .map(|agent| (agent.name.clone(), agent.nudges.clone()))
        .collect();
    let callback_urls = config
        .agents
        .iter()
        .filter_map(|agent| Some((agent.name.clone(), agent.callbacks.url.clone()?)))
        .collect();
    let signed_agents: Vec<String> = signers.keys().cloned().collect();
    let sender = Arc::new(HttpSender::new(signers).context("building the callbacks' HTTP client")?);
    let engine = Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone())
        .with_limits(config.limits)
        .with_agent_nudges(agent_nudges)
        .with_callbacks(sender, callback_urls);
    engine.set_page_links(page_links(&base, &web_keys));
    engine.start().await.context("taking up pending questions")?;
    metrics.set_pending(
        store
            .count_pending()
            .await
            .map_or(0, |count| usize::try_from(count).unwrap_or(usize::MAX)),
    );

    let oidc = match &config.oidc {
        None => None,
        Some(oidc) => {
            let (sign_in, said) = sign_in(&config, oidc, &keeper, &base).await?;
            announcements.push(said);
            Some(sign_in)
        }
    };
    let settings = ServerSettings {
        oidc,
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
        channels: channel_states,
    };
    let state = AppState::new(engine.clone(), metrics, settings, stopping.clone());
    let reloads = {
        let reload = Reload {
            file: file.clone(),
            keeper: keeper.clone(),
            base: base.clone(),
            state: state.clone(),
            recipients: config.recipients.iter().map(|r| r.name.clone()).collect(),
            signed: signed_agents,
        };
        let stopped = Shutdown::new(stopping.clone());
        let hangups = signals.hangup;
        tokio::spawn(async move { reload.on_hangup(hangups, stopped).await })
    };

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
    for (runtime, brought) in runtimes.iter().zip(brought) {
        if let Some(routes) = runtime.routes(Arc::clone(&sink)) {
            webhooks = webhooks.merge(routes);
        }
        let connect = Connect {
            runtime: Arc::clone(runtime),
            sink: Arc::clone(&sink),
            store: Arc::clone(&store),
            lease_owner: lease_owner.clone(),
            shutdown: Shutdown::new(stopping.clone()),
        };
        match brought {
            Brought::Up => connections.push(tokio::spawn(connect.run())),
            // Its connection starts once the platform answers.
            Brought::Later(bringing) => connections.push(tokio::spawn(async move {
                if let Ok(Some(_)) = bringing.await {
                    connect.run().await;
                }
            })),
            Brought::Down => {}
        }
    }
    let shutdown = async move {
        signals.stop.await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stop.send(true);
    };
    askgate_server::serve_with_limits(listener, state, webhooks, limits, shutdown)
        .await
        .context("serving HTTP")?;
    let _ = timers.await;
    let _ = reloads.await;
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

/// The agent tokens and page keys of `config` (generated ones created or
/// read where `keeper` keeps them), and a line for each saying where it is:
/// never a token; a page's link in full only when `on_terminal`.
async fn credentials(
    config: &Config,
    keeper: &Keeper,
    base: &str,
    on_terminal: bool,
) -> Result<(Vec<AgentToken>, Vec<WebKey>, Vec<String>)> {
    let mut said = Vec::new();
    let mut agents = Vec::new();
    for agent in &config.agents {
        let tokens = if agent.tokens.is_empty() {
            let name = format!("agent-token-{}", agent.name);
            let kept = keeper.secret(&name, "agt_").await?;
            // Where it is, never the token: stdout goes to journald or
            // `docker logs` as often as to a terminal.
            said.push(format!(
                "agent token for \"{}\"{}: in {}",
                agent.name,
                if kept.created { " (created)" } else { "" },
                keeper.place(&name)
            ));
            vec![kept.secret]
        } else {
            agent.tokens.clone()
        };
        let allowed = agent.recipients.clone().map_or(Allowed::All, Allowed::Only);
        agents.extend(tokens.iter().map(|token| AgentToken {
            name: agent.name.clone(),
            token: token.expose().to_owned(),
            allowed: allowed.clone(),
            max_timeout_seconds: agent.max_timeout_seconds,
            callback_hosts: agent.callbacks.hosts.clone(),
        }));
    }
    // Every person has a page, whichever surfaces they list: it is how
    // they answer when a chat app is down. A group has none of its own: its
    // people answer its questions on theirs.
    let mut web_keys = Vec::new();
    for recipient in &config.recipients {
        if recipient.is_group() {
            said.push(if recipient.people.is_empty() {
                format!(
                    "web page for \"{}\": none (a group; name its people = [...] to let them answer on their own pages)",
                    recipient.name
                )
            } else {
                format!(
                    "web page for \"{}\": none of its own (a group); answered on the pages of {}",
                    recipient.name,
                    recipient.people.join(", ")
                )
            });
            continue;
        }
        let groups: Vec<&str> = config
            .recipients
            .iter()
            .filter(|group| group.is_group() && group.people.contains(&recipient.name))
            .map(|group| group.name.as_str())
            .collect();
        let also = if groups.is_empty() {
            String::new()
        } else {
            format!(" (also answers for {})", groups.join(", "))
        };
        let (keys, place) = if recipient.web_keys.is_empty() {
            let name = format!("web-key-{}", recipient.name);
            let kept = keeper.secret(&name, "").await?;
            let place = keeper.place(&name);
            (
                vec![kept.secret],
                if kept.created {
                    format!("{place}, created")
                } else {
                    place
                },
            )
        } else {
            (recipient.web_keys.clone(), "the configuration".to_owned())
        };
        let older = match keys.len() {
            0 | 1 => String::new(),
            2 => " (1 older key still opens it)".to_owned(),
            n => format!(" ({} older keys still open it)", n - 1),
        };
        // The link in full only on the admin's own terminal; elsewhere
        // (journald, `docker logs`, a file) where its key is.
        said.push(match keys.first() {
            Some(key) if on_terminal => {
                format!(
                    "web page for \"{}\": {base}/web/{}{older}{also}",
                    recipient.name,
                    key.expose()
                )
            }
            _ => format!(
                "web page for \"{}\": {base}/web/<the key in {place}>{older}{also}",
                recipient.name
            ),
        });
        web_keys.extend(keys.iter().map(|key| WebKey {
            key: key.expose().to_owned(),
            recipient: recipient.name.clone(),
        }));
    }
    Ok((agents, web_keys, said))
}

/// How long a page session begun by signing in lasts.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Sign-in to the page (`[web.oidc]`), its cookies' key created or read
/// where `keeper` keeps askgate's secrets (shared by every replica on
/// PostgreSQL), and a line for the admin saying which redirect URI to
/// register at the provider.
async fn sign_in(
    config: &Config,
    oidc: &crate::config::OidcConfig,
    keeper: &Keeper,
    base: &str,
) -> Result<(Arc<askgate_server::SignIn>, String)> {
    let name = "web-session-key";
    let kept = keeper.secret(name, "").await?;
    let people = config
        .recipients
        .iter()
        .filter(|recipient| recipient.email.is_some() || recipient.oidc_subject.is_some())
        .map(|recipient| askgate_server::OidcPerson {
            recipient: recipient.name.clone(),
            email: recipient.email.clone(),
            subject: recipient.oidc_subject.clone(),
        })
        .collect::<Vec<_>>();
    let redirect_url = format!("{base}/web/oidc/callback");
    let said = format!(
        "sign-in with OpenID Connect at {base}/web/me: issuer {}, redirect URI {redirect_url}, {} person(s); \
         its cookie key in {}",
        oidc.issuer,
        people.len(),
        keeper.place(name)
    );
    let sign_in = askgate_server::SignIn::new(askgate_server::OidcSettings {
        issuer: oidc.issuer.clone(),
        client_id: oidc.client_id.clone(),
        client_secret: oidc.client_secret.expose().to_owned(),
        scopes: oidc.scopes.clone(),
        redirect_url,
        cookie_secret: kept.secret.expose().to_owned(),
        people,
        session_lifetime: SESSION_LIFETIME,
    })
    .context("setting up sign-in ([web.oidc])")?;
    Ok((Arc::new(sign_in), said))
}

/// Each person's page link, by their name: their first key's (the one in
/// force; older ones only still open it while a rotation settles).
fn page_links(base: &str, web_keys: &[WebKey]) -> std::collections::HashMap<String, String> {
    let mut links = std::collections::HashMap::new();
    for key in web_keys {
        links
            .entry(key.recipient.clone())
            .or_insert_with(|| format!("{base}/web/{}", key.key));
    }
    links
}

/// The webhook signing key of every agent that takes result callbacks:
/// its `webhook_secret`, or one askgate generates (`whsec_` and 40 letters
/// and digits, which are base64 of 30 bytes) and keeps like the tokens; a
/// line for each generated one saying where it is. The secret itself is
/// shown once: when it was just created and stdout is the admin's own
/// terminal (elsewhere, journald or `docker logs`, never).
async fn webhook_secrets(
    config: &Config,
    keeper: &Keeper,
    on_terminal: bool,
) -> Result<(std::collections::BTreeMap<String, WebhookSecret>, Vec<String>)> {
    let mut said = Vec::new();
    let mut signers = std::collections::BTreeMap::new();
    for agent in config.agents.iter().filter(|agent| agent.callbacks.enabled()) {
        let secret = if let Some(secret) = &agent.callbacks.secret {
            secret.clone()
        } else {
            let name = format!("webhook-secret-{}", agent.name);
            let kept = keeper.secret(&name, "whsec_").await?;
            said.push(if kept.created && on_terminal {
                format!(
                    "webhook secret for \"{}\" (created, shown once): {} (kept in {})",
                    agent.name,
                    kept.secret.expose(),
                    keeper.place(&name)
                )
            } else {
                format!(
                    "webhook secret for \"{}\"{}: in {}",
                    agent.name,
                    if kept.created { " (created)" } else { "" },
                    keeper.place(&name)
                )
            });
            WebhookSecret::parse(kept.secret.expose())
                .map_err(|error| anyhow::anyhow!("the kept secret {} is not valid: {error}", keeper.place(&name)))?
        };
        signers.insert(agent.name.clone(), secret);
    }
    Ok((signers, said))
}

/// What `SIGHUP` reloads: the agent tokens and page keys, from the file
/// `serve` was started on. Everything else in the file takes effect at the
/// next start.
struct Reload {
    file: Option<PathBuf>,
    keeper: Keeper,
    base: String,
    state: AppState,
    /// The recipients the engine knows: a page key for any other waits for
    /// a restart, with the rest of that recipient.
    recipients: Vec<String>,
    /// The agents with a webhook secret since the start: another agent's
    /// callback hosts wait for a restart, which gives it its secret.
    signed: Vec<String>,
}

impl Reload {
    /// Reloads on every `SIGHUP` until shutdown.
    async fn on_hangup(self, hangups: Option<Hangups>, stopped: Shutdown) {
        #[cfg(unix)]
        {
            let Some(mut hangups) = hangups else {
                tracing::warn!("could not listen for SIGHUP: the configuration reloads only on a restart");
                return;
            };
            let stopped = stopped.wait();
            tokio::pin!(stopped);
            loop {
                tokio::select! {
                    () = &mut stopped => return,
                    got = hangups.recv() => {
                        if got.is_none() {
                            return;
                        }
                        self.reload().await;
                    }
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = hangups;
            stopped.wait().await;
        }
    }

    /// Reads the file again and puts its tokens and keys in force; a file
    /// with problems changes nothing (each problem is logged, by key).
    async fn reload(&self) {
        let Some(file) = &self.file else {
            tracing::warn!("askgate runs on its embedded configuration: there is no file to reload");
            return;
        };
        // Each problem on a line of its own: the log writer keeps the event on one line.
        let config = match crate::load_config(Some(file)) {
            Ok(config) => config,
            Err(error) => {
                tracing::warn!(file = %file.display(), error = %format!("{error:#}"), "the configuration was not reloaded: the tokens and keys in force stay");
                return;
            }
        };
        for recipient in config.recipients.iter().filter(|r| !self.recipients.contains(&r.name)) {
            tracing::warn!(recipient = %recipient.name, "a new recipient takes effect when askgate restarts");
        }
        // Lines that hold no secret, whatever the terminal: they go to the log.
        let (agents, web_keys, said) = match credentials(&config, &self.keeper, &self.base, false).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "the configuration was not reloaded: the tokens and keys in force stay");
                return;
            }
        };
        let web_keys: Vec<WebKey> = web_keys
            .into_iter()
            .filter(|key| self.recipients.contains(&key.recipient))
            .collect();
        let mut agents = agents;
        let mut unsigned = std::collections::BTreeSet::new();
        for agent in agents
            .iter_mut()
            .filter(|agent| !agent.callback_hosts.is_empty() && !self.signed.contains(&agent.name))
        {
            agent.callback_hosts.clear();
            unsigned.insert(agent.name.clone());
        }
        for agent in unsigned {
            tracing::warn!(%agent, "result callbacks for an agent that had none take effect when askgate restarts");
        }
        let (tokens, keys) = (agents.len(), web_keys.len());
        self.state.engine().set_page_links(page_links(&self.base, &web_keys));
        self.state.set_credentials(agents, web_keys);
        for line in said {
            tracing::info!(said = %line, "reloaded");
        }
        tracing::info!(
            file = %file.display(),
            tokens,
            keys,
            "reloaded the agent tokens and page keys; other changes take effect when askgate restarts"
        );
    }
}

/// Where a channel stood when `serve` had waited for its first attempt.
enum Brought {
    /// Up: its connection starts with the server.
    Up,
    /// Still connecting: `bring_up` goes on in this task.
    Later(tokio::task::JoinHandle<Option<String>>),
    /// Refused for good: down until the admin fixes it and restarts.
    Down,
}

/// What a channel's long-lived connection needs.
struct Connect {
    runtime: Arc<dyn ChannelRuntime>,
    sink: Arc<dyn InboundSink>,
    store: Arc<dyn Store>,
    /// This replica's name when several share a database: one at a time
    /// holds the connection.
    lease_owner: Option<String>,
    shutdown: Shutdown,
}

impl Connect {
    /// Takes the channel's events (polling, a gateway, a socket) until shutdown.
    async fn run(self) {
        match self.lease_owner {
            Some(owner) => crate::lease::run_leased(self.runtime, self.sink, self.store, owner, self.shutdown).await,
            None => self.runtime.run(self.sink, self.shutdown).await,
        }
    }
}

/// An address a link can point at: a wildcard one (`0.0.0.0`, `[::]`),
/// which no browser can open, becomes loopback on the same port.
pub(crate) fn reachable(address: std::net::SocketAddr) -> std::net::SocketAddr {
    match address.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => (std::net::Ipv4Addr::LOCALHOST, address.port()).into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => (std::net::Ipv6Addr::LOCALHOST, address.port()).into(),
        _ => address,
    }
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

#[cfg(unix)]
type Hangups = tokio::signal::unix::Signal;
#[cfg(not(unix))]
type Hangups = ();

/// The signals `serve` answers, listened for from its first step.
struct Signals {
    /// Resolves on SIGINT or SIGTERM.
    stop: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    /// Every SIGHUP; `None` when it could not be listened for.
    hangup: Option<Hangups>,
}

impl Signals {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let terminate = signal(SignalKind::terminate()).ok();
            let interrupt = signal(SignalKind::interrupt()).ok();
            let hangup = signal(SignalKind::hangup()).ok();
            let stop = Box::pin(async move {
                let next = |signal: Option<tokio::signal::unix::Signal>| async move {
                    match signal {
                        Some(mut signal) => {
                            signal.recv().await;
                        }
                        // Not listened for: never comes.
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = next(terminate) => {}
                    () = next(interrupt) => {}
                }
            });
            Self { stop, hangup }
        }
        #[cfg(not(unix))]
        {
            let stop = Box::pin(async {
                let _ = tokio::signal::ctrl_c().await;
            });
            Self { stop, hangup: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::reachable;

    #[test]
    fn links_for_a_wildcard_listen_address_point_at_loopback_on_its_port() {
        let at = |text: &str| text.parse::<std::net::SocketAddr>().unwrap();
        assert_eq!(reachable(at("0.0.0.0:8080")), at("127.0.0.1:8080"));
        assert_eq!(reachable(at("[::]:8080")), at("[::1]:8080"));
        assert_eq!(reachable(at("10.0.0.5:9000")), at("10.0.0.5:9000"));
        assert_eq!(reachable(at("127.0.0.1:1")), at("127.0.0.1:1"));
    }
}
