//! Upgrades, on both stores: an askgate opening a database that a newer
//! askgate migrated runs against it while the schema is compatible, and is
//! refused, changing nothing, once a migration declared it is not
//! (`schema.oldest_compatible`); an edited migration is refused as before.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use askgate_core::channel::UserRef;
use askgate_store::{QuestionStatus, Resolution, StoreError};
use support::*;

on_both_stores! {
    a_newer_compatible_schema_is_used_and_an_incompatible_one_refused,
    an_edited_migration_is_refused_naming_it,
}

/// The newest migration this askgate knows for the store: the number of
/// its migration files (numbered from 1 without gaps).
fn known(fresh: &Fresh) -> i64 {
    let store = if fresh.is_sqlite() { "sqlite" } else { "postgres" };
    let dir = format!("{}/migrations/{store}", env!("CARGO_MANIFEST_DIR"));
    i64::try_from(std::fs::read_dir(dir).unwrap().count()).unwrap()
}

/// Records migration `version` as applied by a newer askgate.
async fn applied_by_a_newer_askgate(fresh: &Fresh, version: i64) {
    let checksum = if fresh.is_sqlite() { "X'00'" } else { "'\\x00'::bytea" };
    fresh
        .execute(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({version}, 'a newer release', TRUE, {checksum}, 1)"
        ))
        .await;
}

async fn a_newer_compatible_schema_is_used_and_an_incompatible_one_refused(fresh: Fresh) {
    let known = known(&fresh);
    // A newer release migrated the database: a table and a nullable column
    // (additive: what the policy allows without declaring anything).
    applied_by_a_newer_askgate(&fresh, 9999).await;
    fresh
        .execute("CREATE TABLE upgrade_notes (id TEXT PRIMARY KEY, body TEXT)")
        .await;
    fresh.execute("ALTER TABLE questions ADD COLUMN note TEXT").await;

    // This askgate opens it and keeps questions in it as before.
    let store = fresh.try_reopen().await.expect("a compatible newer schema opens");
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let answered = Resolution {
        status: QuestionStatus::Answered,
        at: 5000,
        by: Some(UserRef {
            id: "99".to_owned(),
            display_name: "Alice".to_owned(),
        }),
        answers: Some(answers(&request())),
        reason: None,
        via: Some("web".to_owned()),
        surface: Some(CHANNEL.to_owned()),
    };
    let resolved = store.resolve(&record.id, &answered).await.unwrap().unwrap();
    assert_eq!(resolved.status, QuestionStatus::Answered);
    let read = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(read.resolution, Some(answered));
    // The newer release's migration is still recorded, its own untouched.
    assert_eq!(
        fresh.int("SELECT CAST(COUNT(*) AS BIGINT) FROM _sqlx_migrations").await,
        known + 1
    );

    // A later migration declares that an askgate must know 9999 to run
    // (over the floor an earlier migration may have set).
    fresh
        .execute(
            "INSERT INTO settings (key, value) VALUES ('schema.oldest_compatible', '9999') \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .await;
    let Err(error) = fresh.try_reopen().await else {
        panic!("a schema that needs a newer askgate opened");
    };
    assert!(
        matches!(
            error,
            StoreError::SchemaTooNew { schema: 9999, known: k, needed: 9999 } if k == known
        ),
        "{error:?}"
    );
    let said = error.to_string();
    assert!(
        said.starts_with(&format!(
            "the database schema is at migration 9999, newer than this askgate knows ({known}), and no longer \
             compatible with it (an askgate that knows migration 9999 or later is needed): upgrade this askgate"
        )),
        "{said}"
    );
    // Refused before anything ran: the question is there as it was.
    assert_eq!(
        fresh.text("SELECT status FROM questions WHERE id = 'q1'").await,
        "answered"
    );

    // A floor this askgate meets lets it run again.
    fresh
        .execute(&format!(
            "UPDATE settings SET value = '{known}' WHERE key = 'schema.oldest_compatible'"
        ))
        .await;
    let store = fresh.try_reopen().await.expect("a floor this askgate meets");
    assert_eq!(
        store.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Answered
    );
}

/// A migration edited after it was applied is refused, naming it (sqlx's
/// checksum check, as before the policy, in a sentence that says what to do).
async fn an_edited_migration_is_refused_naming_it(fresh: Fresh) {
    let checksum = if fresh.is_sqlite() { "X'00'" } else { "'\\x00'::bytea" };
    fresh
        .execute(&format!(
            "UPDATE _sqlx_migrations SET checksum = {checksum} WHERE version = 2"
        ))
        .await;
    let Err(error) = fresh.try_reopen().await else {
        panic!("a database with an edited migration opened");
    };
    assert!(matches!(error, StoreError::MigrationEdited { version: 2 }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "database migration failed: migration 2 applied to this database differs from this askgate's migration 2 \
         (it was edited after it was applied, by whoever built one of them); run the askgate that applied it, or \
         restore a backup taken before it ran"
    );
}
