//! `[store]`: where questions are kept (SQLite under the data directory,
//! or PostgreSQL), and how long ended ones stay.

use std::path::PathBuf;
use std::time::Duration;

use askgate_adapter::config::{ConfigCheck, Secret};
use askgate_store::PgStore;
use serde::Deserialize;

/// `[store] retention_days` when absent.
const DEFAULT_RETENTION_DAYS: u32 = 30;

/// `[store]`: where questions are kept.
#[derive(Debug, Clone)]
pub(crate) enum StoreConfig {
    /// The embedded default: one SQLite file.
    Sqlite {
        /// `path`, under `data_dir`.
        path: PathBuf,
    },
    /// A PostgreSQL database.
    Postgres {
        /// `url`, with its password: a secret.
        url: Secret,
        /// `max_connections`: the pool's size.
        connections: u32,
    },
}

/// `[store] max_connections` when absent (the store says why this many).
const DEFAULT_PG_CONNECTIONS: u32 = PgStore::DEFAULT_CONNECTIONS;

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawStore {
    kind: Option<String>,
    path: Option<String>,
    url: Option<String>,
    max_connections: Option<u32>,
    retention_days: Option<u32>,
}

/// `[store]`: the kind, and the keys that kind reads (a key of the other
/// kind is a problem, not silently ignored).
pub(super) fn store(raw: &RawStore, data_dir: &std::path::Path, check: &mut ConfigCheck<'_>) -> StoreConfig {
    let sqlite = || StoreConfig::Sqlite {
        path: data_dir.join(raw.store_path()),
    };
    match raw.kind.as_deref().unwrap_or("sqlite") {
        "sqlite" => {
            for (key, set) in [
                ("store.url", raw.url.is_some()),
                ("store.max_connections", raw.max_connections.is_some()),
            ] {
                if set {
                    check.problem(
                        key,
                        "only a PostgreSQL store reads this key.",
                        "remove it, or set kind = \"postgres\".",
                    );
                }
            }
            sqlite()
        }
        "postgres" => {
            if raw.path.is_some() {
                check.problem(
                    "store.path",
                    "a PostgreSQL store has no file.",
                    "remove path (the database is the one in url).",
                );
            }
            let connections = match raw.max_connections.unwrap_or(DEFAULT_PG_CONNECTIONS) {
                n if n < PgStore::MIN_CONNECTIONS => {
                    check.problem(
                        "store.max_connections",
                        format!(
                            "askgate needs at least {} connections: one listens for the other replicas' changes, the others run the statements.",
                            PgStore::MIN_CONNECTIONS
                        ),
                        format!("use {DEFAULT_PG_CONNECTIONS}, the default."),
                    );
                    DEFAULT_PG_CONNECTIONS
                }
                n => n,
            };
            let url = check.required_secret(
                "store.url",
                raw.url.as_deref(),
                "a PostgreSQL store needs the database's URL.",
                "postgres://user:password@host:5432/database, e.g. url = \"${DATABASE_URL}\"",
                "the URL",
            );
            let url = url.filter(|url| match PgStore::check_url(url.expose()) {
                Ok(()) => true,
                Err(error) => {
                    check.problem(
                        "store.url",
                        format!("{error}."),
                        "use postgres://user:password@host:5432/database.",
                    );
                    false
                }
            });
            url.map_or_else(sqlite, |url| StoreConfig::Postgres { url, connections })
        }
        other => {
            check.problem(
                "store.kind",
                format!("\"{other}\" is not a store askgate has."),
                "use \"sqlite\" (one process, the default) or \"postgres\".",
            );
            sqlite()
        }
    }
}

impl RawStore {
    fn store_path(&self) -> &str {
        self.path.as_deref().unwrap_or("askgate.db")
    }
}

/// `[store] retention_days`: how long ended questions are kept; `None`
/// (`0`) keeps them for ever.
pub(super) fn retention(raw: &RawStore) -> Option<Duration> {
    match raw.retention_days.unwrap_or(DEFAULT_RETENTION_DAYS) {
        0 => None,
        days => Some(Duration::from_secs(u64::from(days) * 86_400)),
    }
}
