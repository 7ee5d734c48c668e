//! What only the PostgreSQL store has: migrations shared by replicas that
//! start together, the change feed, and what it tells an admin about a URL.

use crate::support;

use std::time::Duration;

use askgate_core::QuestionId;
use askgate_store::{
    Change, Changed, InsertRules, Inserted, PgStore, QuestionStatus, Resolution, SqliteStore, Store, StoreError,
};
use askgate_testkit::postgres::{Schema, server_url};
use support::question;
use tokio::sync::broadcast;

/// How long writes are given to reach the store's queues.
const QUEUE_TIME: Duration = Duration::from_millis(300);

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
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count();
    let expected: Vec<i64> = (1..=i64::try_from(files).unwrap()).collect();
    assert_eq!(applied, expected, "each migration applied once");
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

/// A store told to open one connection opens two (`MIN_CONNECTIONS`): the
/// change feed holds one for good, and with a pool of one every statement
/// waited for it until the pool's timeout (5 s) and failed, as `askgate
/// link` did on PostgreSQL. Each statement here must be done well within
/// that timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_told_to_open_one_connection_still_runs_its_statements() {
    let schema = Schema::create().await;
    let store = PgStore::connect_with(schema.options(), 1).await.unwrap();
    let bound = Duration::from_secs(3);
    tokio::time::timeout(bound, store.insert(&question("one", 1)))
        .await
        .expect("the insert within 3 s: not waiting for a connection")
        .unwrap();
    let id = QuestionId::parse("one").unwrap();
    let read = tokio::time::timeout(bound, store.get(&id))
        .await
        .expect("the read within 3 s: not waiting for a connection")
        .unwrap();
    assert_eq!(
        read.map(|record| (record.id, record.status)),
        Some((id, QuestionStatus::Pending))
    );
    // What `askgate link` does: keep a generated secret, read it back.
    let kept = tokio::time::timeout(bound, store.insert_setting("secret.web-key-one", "k1"))
        .await
        .expect("keeping a setting within 3 s: not waiting for a connection")
        .unwrap();
    assert!(kept);
    let read = tokio::time::timeout(bound, store.setting("secret.web-key-one"))
        .await
        .expect("reading a setting within 3 s: not waiting for a connection")
        .unwrap();
    assert_eq!(read.as_deref(), Some("k1"));
}

async fn next_change(feed: &mut broadcast::Receiver<Change>) -> Change {
    tokio::time::timeout(Duration::from_secs(5), feed.recv())
        .await
        .expect("a change within 5 s")
        .expect("the feed is open")
}

/// The change that tells of `question(name, 1)` stored.
fn asked(name: &str) -> Change {
    Change::Question(Changed {
        id: QuestionId::parse(name).unwrap(),
        status: QuestionStatus::Pending,
        expires_at: 600_001,
    })
}

/// A store hears of what another store on the same schema stored or
/// changed, once it commits; never of its own changes, nor of another
/// schema's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_tells_another_stores_changes_but_not_its_own_nor_another_schemas() {
    let (schema, elsewhere) = (Schema::create().await, Schema::create().await);
    let a = PgStore::connect_with(schema.options(), 2).await.unwrap();
    let b = PgStore::connect_with(schema.options(), 2).await.unwrap();
    let other = PgStore::connect_with(elsewhere.options(), 2).await.unwrap();
    let mut feed = a.changes().expect("PostgreSQL has a feed");

    a.insert(&question("a1", 1)).await.unwrap();
    other.insert(&question("b1", 1)).await.unwrap();
    b.insert(&question("b1", 1)).await.unwrap();
    assert_eq!(next_change(&mut feed).await, asked("b1"));

    let answered = Resolution {
        status: QuestionStatus::Answered,
        at: 10,
        by: None,
        answers: None,
        reason: None,
        via: None,
        surface: None,
    };
    a.resolve(&QuestionId::parse("a1").unwrap(), &answered)
        .await
        .unwrap()
        .unwrap();
    b.resolve(&QuestionId::parse("b1").unwrap(), &answered)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        next_change(&mut feed).await,
        Change::Question(Changed {
            id: QuestionId::parse("b1").unwrap(),
            status: QuestionStatus::Answered,
            expires_at: 600_001,
        })
    );
    assert!(
        feed.try_recv().is_err(),
        "nothing else: not a1 (a's own), not the other schema's b1"
    );

    // SQLite has no other process to hear from.
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("askgate.db")).await.unwrap();
    assert!(sqlite.changes().is_none());
}

/// The feed's connection cut, twice: each time the feed says it may have
/// missed changes, and listens again (itself: sqlx's own reconnection is
/// off), so that the changes after it come as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_whose_connection_was_cut_says_it_missed_changes_and_listens_again() {
    let schema = Schema::create().await;
    let a = PgStore::connect_with(schema.options(), 2).await.unwrap();
    let b = PgStore::connect_with(schema.options(), 2).await.unwrap();
    let mut feed = a.changes().expect("PostgreSQL has a feed");
    for name in ["b1", "b2"] {
        schema.cut_listeners().await;
        assert_eq!(next_change(&mut feed).await, Change::Missed);
        b.insert(&question(name, 1)).await.unwrap();
        assert_eq!(next_change(&mut feed).await, asked(name));
    }
}

/// Writes arriving together share statements and commits
/// (`src/postgres/batch.rs`): 64 inserts, then 64 resolutions, each queued
/// behind a lock held outside the store, take a few transactions, not 64
/// (the rows a transaction wrote share its id, `xmin`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_arriving_together_share_transactions() {
    const WRITES: usize = 64;
    let schema = Schema::create().await;
    let store = std::sync::Arc::new(PgStore::connect_with(schema.options(), 4).await.unwrap());
    let qid = |n: usize| format!("01HZX2000000000000000{n:05}");
    let transactions = |status: &'static str| {
        let schema = &schema;
        async move {
            let count: i64 = sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM questions WHERE status = $1")
                .bind(status)
                .fetch_one(&mut schema.connect().await)
                .await
                .unwrap();
            count
        }
    };

    // The recipient's cap lock, held outside: every insert waits for it.
    let rules = InsertRules {
        max_pending_per_recipient: Some(1_000),
        ..InsertRules::default()
    };
    let mut outside = schema.connect().await;
    sqlx::query("SELECT pg_advisory_lock(2, hashtext('alice'))")
        .execute(&mut outside)
        .await
        .unwrap();
    let mut inserts = tokio::task::JoinSet::new();
    for n in 0..WRITES {
        let (store, rules) = (store.clone(), rules.clone());
        let record = question(&qid(n), 1_000 + i64::try_from(n).unwrap());
        inserts.spawn(async move { store.insert_with(&record, &rules).await });
    }
    tokio::time::sleep(QUEUE_TIME).await;
    assert_eq!(
        transactions("pending").await,
        0,
        "nothing is inserted while the lock is held"
    );
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut outside)
        .await
        .unwrap();
    for inserted in inserts.join_all().await {
        assert_eq!(inserted.unwrap(), Inserted::New);
    }
    let inserting = transactions("pending").await;
    assert!(
        (2..=4).contains(&inserting),
        "{WRITES} inserts took {inserting} transactions"
    );

    // Two of the rows, held outside: the resolutions queue behind them.
    sqlx::query("BEGIN").execute(&mut outside).await.unwrap();
    sqlx::query("SELECT id FROM questions WHERE id = $1 OR id = $2 FOR UPDATE")
        .bind(qid(0))
        .bind(qid(1))
        .execute(&mut outside)
        .await
        .unwrap();
    let mut resolutions = tokio::task::JoinSet::new();
    for n in 0..WRITES {
        let store = store.clone();
        let question = QuestionId::parse(&qid(n)).unwrap();
        resolutions.spawn(async move {
            let resolution = Resolution {
                status: QuestionStatus::Cancelled,
                at: 9_000,
                by: None,
                answers: None,
                reason: None,
                via: None,
                surface: None,
            };
            store.resolve(&question, &resolution).await
        });
    }
    tokio::time::sleep(QUEUE_TIME).await;
    sqlx::query("COMMIT").execute(&mut outside).await.unwrap();
    for resolved in resolutions.join_all().await {
        assert!(resolved.unwrap().is_some(), "every question is resolved once");
    }
    let resolving = transactions("cancelled").await;
    assert!(
        (2..=4).contains(&resolving),
        "{WRITES} resolutions took {resolving} transactions"
    );
}
