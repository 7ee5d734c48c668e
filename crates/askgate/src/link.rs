//! `askgate link show | rotate <person>`: a person's page link, printed for
//! the admin to hand over, or replaced when it leaked. The key is read or
//! replaced where `serve` keeps it ([`Keeper`]); a running `serve` takes a
//! new key on `SIGHUP` (every replica's), and the old link stops opening
//! the page then.

use std::io::Write as _;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use askgate_store::PgStore;

use crate::cli::{LinkArgs, LinkCommand};
use crate::config::{Config, StoreConfig};
use crate::keeper::Keeper;

/// Runs `askgate link show` or `askgate link rotate`.
pub(crate) async fn run(command: LinkCommand) -> Result<()> {
    let (args, rotate) = match command {
        LinkCommand::Show(args) => (args, false),
        LinkCommand::Rotate(args) => (args, true),
    };
    let config = crate::load_config(args.config.as_deref())?;
    let said = link(&config, &args, rotate).await?;
    let mut out = std::io::stdout().lock();
    for line in said {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// What `link` prints: the person's link, and after a rotation how it
/// takes effect.
async fn link(config: &Config, args: &LinkArgs, rotate: bool) -> Result<Vec<String>> {
    let persons: Vec<&str> = config
        .recipients
        .iter()
        .filter(|r| !r.is_group())
        .map(|r| r.name.as_str())
        .collect();
    let Some(person) = config.recipients.iter().find(|r| r.name == args.person) else {
        bail!(
            "there is no recipient \"{}\"; persons: {}",
            askgate_core::text::excerpt(&args.person),
            persons.join(", ")
        );
    };
    if person.is_group() {
        bail!(
            "\"{}\" is a group: it has no page link of its own; its people ({}) answer on theirs",
            person.name,
            if person.people.is_empty() {
                "none named yet".to_owned()
            } else {
                person.people.join(", ")
            }
        );
    }
    let base = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", crate::serve::reachable(config.listen)))
        .trim_end_matches('/')
        .to_owned();
    if let Some(key) = person.web_keys.first() {
        if rotate {
            bail!(
                "the key of \"{}\" is set in the configuration (recipients.{}.web_key): put a new one first in web_keys = [new, old], reload askgate (SIGHUP), then remove the old one",
                person.name,
                person.name
            );
        }
        return Ok(vec![format!("{base}/web/{}", key.expose())]);
    }
    let keeper = match &config.store {
        StoreConfig::Sqlite { .. } => Keeper::Files(config.data_dir.clone()),
        StoreConfig::Postgres { url, .. } => Keeper::Settings(Arc::new(
            PgStore::open(url.expose(), PgStore::MIN_CONNECTIONS)
                .await
                .context("opening the PostgreSQL store ([store] url)")?,
        )),
    };
    if let Keeper::Files(dir) = &keeper {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the data directory {}", dir.display()))?;
    }
    let name = format!("web-key-{}", person.name);
    if !rotate {
        let kept = keeper.secret(&name, "").await?;
        return Ok(vec![format!("{base}/web/{}", kept.secret.expose())]);
    }
    let key = keeper.rotate(&name, "").await?;
    Ok(vec![
        format!("{base}/web/{}", key.expose()),
        format!(
            "The new link for \"{}\" is kept in {}. The old one stops opening the page when askgate reloads: send SIGHUP to every askgate serve (systemctl reload askgate; docker kill -s HUP <container>), or restart it.",
            person.name,
            keeper.place(&name)
        ),
    ])
}
