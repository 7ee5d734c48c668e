//! askgate in-process, wired as `askgate serve` wires it.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use askgate_core::Locale;
use askgate_core::channel::{Channel, Destination};
use askgate_engine::{Clock, Engine, Recipient, RecipientSurface};
use askgate_server::{AgentToken, Allowed, AppState, Metrics, ServerSettings, WebChannel, WebKey};
use askgate_store::{SqliteStore, Store};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Result;
use crate::client::{AGENT_TOKEN, RECIPIENT, WEB_KEY};

const AGENT: &str = "bench-agent";
const CHANNEL: &str = "web";

/// The service: a [`SqliteStore`] on a file, an [`Engine`] on the system
/// clock with one [`WebChannel`] and one recipient, its timers, and
/// [`askgate_server::serve`] on a loopback listener. Its tasks run on the
/// runtime [`Service::start`] was called on.
pub(crate) struct Service {
    pub(crate) address: std::net::SocketAddr,
    store: Arc<dyn Store>,
    sqlite: Option<SqliteStore>,
    runtime: tokio::runtime::Handle,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    timers: JoinHandle<()>,
}

impl Service {
    /// Starts the service with its database in `dir`.
    pub(crate) async fn start(dir: &Path) -> Result<Self> {
        let sqlite = SqliteStore::open(&dir.join("askgate.db")).await?;
        Self::start_on(Arc::new(sqlite.clone()), Some(sqlite)).await
    }

    /// Starts the service on `store` (`sqlite` when it is one, to count its
    /// commits).
    pub(crate) async fn start_on(store: Arc<dyn Store>, sqlite: Option<SqliteStore>) -> Result<Self> {
        let channels: Vec<Arc<dyn Channel>> = vec![Arc::new(WebChannel::new(CHANNEL))];
        let destination = Destination {
            conversation: RECIPIENT.to_owned(),
            thread: None,
        };
        let page = RecipientSurface::new(CHANNEL, askgate_engine::WEB, destination, Vec::new());
        let recipients = vec![Recipient::on(RECIPIENT, "Alice", page, Locale::En)];
        let metrics = Arc::new(Metrics::new());
        // No pending caps: the engine's default, as a library user gets it.
        let engine = Engine::new(store.clone(), channels, recipients, Clock::system(), metrics.clone());
        engine.start().await?;
        let settings = ServerSettings {
            agents: vec![AgentToken {
                name: AGENT.to_owned(),
                token: AGENT_TOKEN.to_owned(),
                allowed: Allowed::All,
                max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
                callback_hosts: Vec::new(),
            }],
            web_keys: vec![WebKey {
                key: WEB_KEY.to_owned(),
                recipient: RECIPIENT.to_owned(),
            }],
            ..ServerSettings::default()
        };
        let (stop, stopping) = watch::channel(false);
        let state = AppState::new(engine.clone(), metrics, settings, stopping.clone());
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let timers = {
            let mut stopped = stopping.clone();
            tokio::spawn(async move {
                engine
                    .run_timers(async move {
                        let _ = stopped.wait_for(|stop| *stop).await;
                    })
                    .await;
            })
        };
        let mut stopped = stopping;
        let server = tokio::spawn(askgate_server::serve(listener, state, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }));
        Ok(Self {
            address,
            store,
            sqlite,
            runtime: tokio::runtime::Handle::current(),
            stop,
            server,
            timers,
        })
    }

    /// Durable commits (fsyncs) since the store was opened (SQLite's own
    /// count; 0 on another store).
    pub(crate) fn commits(&self) -> u64 {
        self.sqlite.as_ref().map_or(0, SqliteStore::commits)
    }

    /// How many questions are pending in the store (read on the service's
    /// own runtime).
    pub(crate) async fn count_pending(&self) -> Result<u64> {
        let store = self.store.clone();
        let count = self.runtime.spawn(async move { store.count_pending().await });
        Ok(tokio::time::timeout(Duration::from_secs(30), count)
            .await
            .map_err(|_| "the store did not count the pending questions in time")???)
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let limit = Duration::from_secs(10);
        let _ = tokio::time::timeout(limit, self.server).await;
        let _ = tokio::time::timeout(limit, self.timers).await;
        if let Some(sqlite) = self.sqlite {
            let _ = tokio::time::timeout(limit, sqlite.close()).await;
        }
    }
}
