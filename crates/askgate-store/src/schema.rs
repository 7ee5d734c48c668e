//! Which askgate may run against which schema: the upgrade policy both
//! stores apply on open, before their migrations run.
//!
//! Migrations are forward-only and additive within a compatibility window:
//! a newer release may add tables, nullable columns or columns with a
//! default, and indexes, but never drops or renames what an older release
//! still uses. So an older askgate may run against a schema a newer one
//! migrated (a rolling upgrade, a rollback), skipping the migrations it does
//! not know, until a migration that breaks compatibility records the oldest
//! migration an askgate must know to run against it: the setting
//! [`OLDEST_COMPATIBLE`] (absent: every askgate back to migration 1 may).
//!
//! The decision ([`decide`]) is pure and shared by both stores; [`migrate`]
//! takes the database's migration lock (PostgreSQL's advisory lock), reads
//! what it needs under it, decides, and runs the migrations in the same
//! locked session, so that no replica decides on a schema another is
//! changing at that moment.

use std::future::Future;

use sqlx::migrate::{Migrate, MigrateError, Migrator};

use crate::StoreError;

/// The key in `settings` of the oldest migration an askgate must know to run
/// against the database, written by the migration that breaks compatibility.
pub(crate) const OLDEST_COMPATIBLE: &str = "schema.oldest_compatible";

/// sqlx's table of applied migrations.
const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// How the database's schema stands to the migrations this askgate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every applied migration is known: the ones not applied yet are run.
    Known,
    /// A newer askgate applied migrations this one does not know, and the
    /// schema is still compatible with it: it runs, skipping them.
    Newer {
        /// The newest migration applied to the database.
        schema: i64,
        /// The newest migration this askgate knows.
        known: i64,
    },
}

/// What [`migrate`] needs of a store's connection besides sqlx's
/// [`Migrate`].
pub(crate) trait Migrating {
    /// The value of the setting [`OLDEST_COMPATIBLE`], if set. Only asked
    /// when migrations this askgate does not know are applied, so the
    /// `settings` table exists then.
    fn oldest_compatible(&mut self) -> impl Future<Output = Result<Option<String>, sqlx::Error>> + Send;
}

/// Whether this askgate, knowing the migrations `known`, may run against a
/// database with the migrations `applied` and the setting
/// [`OLDEST_COMPATIBLE`] `oldest_compatible` (read only when some applied
/// migration is unknown: `None` otherwise or when unset).
///
/// Every applied migration known: [`Verdict::Known`]. Newer ones applied
/// besides every known one: [`Verdict::Newer`] while this askgate's newest
/// migration is at least the setting, else [`StoreError::SchemaTooNew`]. An
/// unknown migration older than this askgate's newest, or a known one not
/// applied under newer ones, is another line of migrations than this
/// askgate's ([`StoreError::SchemaDiverged`]): applying its migrations there
/// out of order could break the schema.
pub(crate) fn decide(known: &[i64], applied: &[i64], oldest_compatible: Option<&str>) -> Result<Verdict, StoreError> {
    let ours = known.iter().copied().max().unwrap_or(0);
    let unknown: Vec<i64> = applied
        .iter()
        .copied()
        .filter(|version| !known.contains(version))
        .collect();
    let Some(&schema) = unknown.iter().max() else {
        return Ok(Verdict::Known);
    };
    if let Some(value) = oldest_compatible {
        let needed: i64 = value.trim().parse().map_err(|_| {
            StoreError::Corrupt(format!(
                "the setting {OLDEST_COMPATIBLE} is \"{value}\", not a migration number"
            ))
        })?;
        if needed > ours {
            return Err(StoreError::SchemaTooNew {
                schema,
                known: ours,
                needed,
            });
        }
    }
    if let Some(&foreign) = unknown.iter().find(|&&version| version < ours) {
        return Err(StoreError::SchemaDiverged {
            unknown: foreign,
            missing: None,
        });
    }
    if let Some(&missing) = known.iter().find(|version| !applied.contains(version)) {
        return Err(StoreError::SchemaDiverged {
            unknown: schema,
            missing: Some(missing),
        });
    }
    Ok(Verdict::Newer { schema, known: ours })
}

/// Brings the schema up to date on `conn` with `migrator`'s migrations, if
/// [`decide`] lets this askgate run against it: under the migration lock
/// (held by `conn`'s session, released before returning, also on a refusal)
/// it reads the applied migrations and, when some are unknown, the setting
/// [`OLDEST_COMPATIBLE`]; then it runs the known migrations not applied yet,
/// skipping the unknown ones on a compatible newer schema (logged once).
pub(crate) async fn migrate<C>(conn: &mut C, mut migrator: Migrator) -> Result<(), StoreError>
where
    C: Migrate + Migrating + Send,
{
    conn.lock().await?;
    let decided = locked(conn, &mut migrator).await;
    // A failure above may have left the session unusable; the lock then
    // goes with the connection, which the caller closes or drops.
    let unlocked = conn.unlock().await;
    decided?;
    unlocked?;
    Ok(())
}

/// [`migrate`]'s work while it holds the lock.
async fn locked<C>(conn: &mut C, migrator: &mut Migrator) -> Result<(), StoreError>
where
    C: Migrate + Migrating + Send,
{
    conn.ensure_migrations_table(MIGRATIONS_TABLE).await?;
    let applied: Vec<i64> = conn
        .list_applied_migrations(MIGRATIONS_TABLE)
        .await?
        .iter()
        .map(|migration| migration.version)
        .collect();
    let known: Vec<i64> = migrator.iter().map(|migration| migration.version).collect();
    let oldest_compatible = if applied.iter().all(|version| known.contains(version)) {
        None
    } else {
        conn.oldest_compatible().await?
    };
    let verdict = decide(&known, &applied, oldest_compatible.as_deref())?;
    if let Verdict::Newer { schema, known } = verdict {
        tracing::warn!(
            schema,
            known,
            "the database schema is newer than this askgate knows; it is still compatible, so askgate runs against it, skipping the migrations it does not know"
        );
        // sqlx refuses applied migrations it does not know unless told to
        // ignore them; the checksums of the known ones are still checked.
        migrator.set_ignore_missing(true);
    }
    // The lock is this session's already: sqlx must not take it again.
    migrator.set_locking(false);
    // `run_direct` is what `Migrator::run` calls; sqlx makes it public for
    // generic callers like this one, whose `run` on a `&mut` connection
    // cannot be shown `Send` ("Acquire is not general enough").
    migrator
        .run_direct(None, conn, false)
        .await
        .map_err(|error| match error {
            MigrateError::VersionMismatch(version) => StoreError::MigrationEdited { version },
            error => StoreError::Migration(error),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [i64; 5] = [1, 2, 3, 4, 5];

    #[test]
    fn a_schema_with_only_known_migrations_is_migrated_as_usual() {
        assert_eq!(decide(&KNOWN, &[], None).unwrap(), Verdict::Known);
        assert_eq!(decide(&KNOWN, &[1, 2, 3], None).unwrap(), Verdict::Known);
        assert_eq!(decide(&KNOWN, &KNOWN, None).unwrap(), Verdict::Known);
        // A floor this askgate meets is no concern when nothing is unknown.
        assert_eq!(decide(&KNOWN, &KNOWN, Some("3")).unwrap(), Verdict::Known);
    }

    #[test]
    fn a_newer_schema_runs_without_a_floor_or_with_one_this_askgate_meets() {
        let applied = [1, 2, 3, 4, 5, 6, 7];
        let newer = Verdict::Newer { schema: 7, known: 5 };
        assert_eq!(decide(&KNOWN, &applied, None).unwrap(), newer);
        assert_eq!(decide(&KNOWN, &applied, Some("1")).unwrap(), newer);
        assert_eq!(decide(&KNOWN, &applied, Some("5")).unwrap(), newer);
        assert_eq!(decide(&KNOWN, &applied, Some(" 5\n")).unwrap(), newer);
    }

    #[test]
    fn a_newer_schema_past_the_floor_is_refused_naming_the_versions() {
        let error = decide(&KNOWN, &[1, 2, 3, 4, 5, 6, 7], Some("6")).unwrap_err();
        assert!(
            matches!(
                error,
                StoreError::SchemaTooNew {
                    schema: 7,
                    known: 5,
                    needed: 6
                }
            ),
            "{error:?}"
        );
        let said = error.to_string();
        assert!(
            said.starts_with(
                "the database schema is at migration 7, newer than this askgate knows (5), and no longer \
                 compatible with it (an askgate that knows migration 6 or later is needed): upgrade this askgate"
            ),
            "{said}"
        );
    }

    #[test]
    fn another_line_of_migrations_is_refused() {
        // An unknown migration below this askgate's newest.
        let error = decide(&[1, 2, 3, 5], &[1, 2, 3, 4, 5], None).unwrap_err();
        assert!(
            matches!(
                error,
                StoreError::SchemaDiverged {
                    unknown: 4,
                    missing: None
                }
            ),
            "{error:?}"
        );
        // A known migration missing under a newer one.
        let error = decide(&KNOWN, &[1, 2, 3, 4, 6], None).unwrap_err();
        assert!(
            matches!(
                error,
                StoreError::SchemaDiverged {
                    unknown: 6,
                    missing: Some(5)
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("lacks migration 5"), "{error}");
    }

    #[test]
    fn a_floor_that_is_not_a_number_is_reported() {
        let error = decide(&KNOWN, &[1, 2, 3, 4, 5, 6], Some("six")).unwrap_err();
        assert!(
            matches!(&error, StoreError::Corrupt(said) if said.contains("schema.oldest_compatible") && said.contains("\"six\"")),
            "{error:?}"
        );
    }
}
