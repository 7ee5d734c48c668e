//! Where askgate keeps the secrets it generates (agent tokens, page keys,
//! webhook secrets): files in `data_dir` beside a SQLite store, the
//! database's settings beside PostgreSQL (so that every replica has the
//! same ones). `serve` reads or creates them; `askgate link rotate`
//! replaces a page key.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use askgate_store::Store;
use rand::distr::{Alphanumeric, SampleString};

use crate::config::Secret;

/// A secret that askgate generated, or found where it keeps them.
pub(crate) struct Generated {
    pub(crate) secret: Secret,
    pub(crate) created: bool,
}

/// Where askgate keeps the secrets it generates (agent tokens, web page
/// keys): beside a SQLite store, files in `data_dir` (the one process reads
/// them); beside PostgreSQL, the database's settings, so that every replica
/// accepts the same ones.
#[derive(Clone)]
pub(crate) enum Keeper {
    Files(PathBuf),
    Settings(Arc<dyn Store>),
}

impl Keeper {
    /// The secret named `name` (`agent-token-default`), created on first start.
    pub(crate) async fn secret(&self, name: &str, prefix: &str) -> Result<Generated> {
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

    /// Replaces the secret `name` with a new one (a rotation): whoever held
    /// the old one is refused once the servers have reloaded.
    pub(crate) async fn rotate(&self, name: &str, prefix: &str) -> Result<Secret> {
        let fresh = format!("{prefix}{}", Alphanumeric.sample_string(&mut rand::rng(), 40));
        match self {
            Self::Files(data_dir) => {
                let path = data_dir.join(name);
                write_private(&path, &fresh).with_context(|| format!("writing {}", path.display()))?;
            }
            Self::Settings(store) => {
                let key = format!("secret.{name}");
                store
                    .set_setting(&key, &fresh)
                    .await
                    .with_context(|| format!("keeping {key} in the database"))?;
            }
        }
        Ok(Secret::new(fresh))
    }

    /// Where the secret `name` is, in words for the admin.
    pub(crate) fn place(&self, name: &str) -> String {
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
