//! What only the PostgreSQL store has: migrations shared by replicas that
//! start together, and what it tells an admin about a URL.

use askgate_store::{PgStore, StoreError};
use askgate_testkit::postgres::{Schema, server_url};

/// Four replicas starting at once on an empty schema: every one opens, and
/// the schema was migrated once (sqlx's advisory lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once() {
    let schema = Schema::create().await;
    let mut opens = tokio::task::JoinSet::new();
    for _ in 0..4 {
        opens.spawn(PgStore::connect_with(schema.options(), 2));
    }
    for opened in opens.join_all().await {
        opened.expect("every replica opens");
    }
    let mut conn = schema.connect().await;
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(applied, [1]);
}

/// `check` (what `askgate check-config` says): what answered, or what is
/// wrong in a sentence, never the password.
#[tokio::test]
async fn check_names_what_answered_or_what_is_wrong_without_the_password() {
    let said = PgStore::check(&server_url()).await.expect("the test server answers");
    assert!(
        said.starts_with("PostgreSQL ") && said.contains("database \""),
        "{said}"
    );

    let unreachable = "postgres://askgate:hunter2-secret@127.0.0.1:1/askgate";
    let missing = {
        let server = server_url();
        let (base, _) = server.rsplit_once('/').expect("a URL with a database");
        format!("{base}/askgate_no_such_database")
    };
    for (url, expected) in [
        (unreachable, "cannot reach the PostgreSQL server at 127.0.0.1:1"),
        (
            missing.as_str(),
            "the database \"askgate_no_such_database\" does not exist",
        ),
        ("mysql://askgate:hunter2-secret@db/askgate", "not a PostgreSQL URL"),
    ] {
        match PgStore::check(url).await {
            Err(StoreError::Unavailable(reason)) => {
                assert!(reason.contains(expected), "{url}: {reason}");
                assert!(!reason.contains("hunter2"), "{reason}");
            }
            other => panic!("{url}: expected Unavailable, got {other:?}"),
        }
    }
    // Opening says the same.
    match PgStore::open(unreachable, 1).await {
        Err(StoreError::Unavailable(reason)) => assert!(reason.contains("cannot reach"), "{reason}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}
