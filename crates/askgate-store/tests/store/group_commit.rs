//! Group commit: writes waiting together share one commit, and no write's
//! outcome depends on another's failure.
//!
//! Each test holds the database's write lock from a second connection
//! while it sends its writes, so that they are all waiting when the writer
//! gets the lock: the first write is taken alone (the writer waits for the
//! lock with it), every later one lands in the next transaction.

use crate::support;

use std::time::Duration;

use askgate_store::{QuestionStatus, SqliteStore, Store, StoreError};
use sqlx::SqliteConnection;
use support::*;
use tokio::task::JoinSet;

/// How long the writes are given to reach the writer's queue.
const QUEUE_TIME: Duration = Duration::from_millis(300);

/// Takes the write lock from another connection.
async fn hold_write_lock(path: &std::path::Path) -> SqliteConnection {
    let mut outside = raw_connection(path).await;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut outside)
        .await
        .expect("the lock is free");
    outside
}

async fn release(mut outside: SqliteConnection) {
    sqlx::query("ROLLBACK")
        .execute(&mut outside)
        .await
        .expect("the lock is let go");
}

fn qid(n: i64) -> String {
    format!("01HZX0000000000000000{n:05}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_together_share_one_commit() {
    let (store, _dir, path) = store().await;
    let before = store.commits();
    let outside = hold_write_lock(&path).await;
    let mut writes = JoinSet::new();
    for n in 0..64 {
        let store = store.clone();
        writes.spawn(async move { store.insert(&question(&qid(n), 1_000 + n)).await });
    }
    tokio::time::sleep(QUEUE_TIME).await;
    assert_eq!(store.commits(), before, "nothing commits while another holds the lock");
    release(outside).await;
    while let Some(result) = writes.join_next().await {
        result.unwrap().expect("every insert is saved");
    }
    let commits = store.commits() - before;
    // The first write alone, the 63 others together.
    assert!((1..=2).contains(&commits), "64 waiting inserts took {commits} commits");
    assert_eq!(store.pending().await.unwrap().len(), 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_by_a_rule_is_undone_alone() {
    let (store, _dir, path) = store().await;
    let outside = hold_write_lock(&path).await;
    let mut writes = JoinSet::new();
    // Three questions for one agent session: only the first may be pending.
    for n in 0..3 {
        let store = store.clone();
        let record = in_session(question(&qid(n), 1_000 + n), "agent", Some("s1"));
        writes.spawn(async move { (n, store.insert(&record).await) });
        // In this order in the queue.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for n in 3..6 {
        let store = store.clone();
        writes.spawn(async move { (n, store.insert(&question(&qid(n), 1_000 + n)).await) });
    }
    tokio::time::sleep(QUEUE_TIME).await;
    release(outside).await;
    let mut outcomes = Vec::new();
    while let Some(result) = writes.join_next().await {
        outcomes.push(result.unwrap());
    }
    outcomes.sort_by_key(|(n, _)| *n);
    for (n, outcome) in &outcomes {
        match (n, outcome) {
            (0 | 3..=5, Ok(())) => {}
            (1 | 2, Err(StoreError::SessionBusy { pending, .. })) => assert_eq!(pending.as_str(), qid(0)),
            (n, outcome) => panic!("write {n}: {outcome:?}"),
        }
    }
    let mut pending: Vec<String> = store
        .pending()
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.id.to_string())
        .collect();
    pending.sort();
    assert_eq!(pending, [qid(0), qid(3), qid(4), qid(5)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_database_fails_loses_none_of_the_others_in_its_commit() {
    let (store, _dir, path) = store().await;
    // A write that the database itself refuses, as a full disk would.
    let mut outside = raw_connection(&path).await;
    sqlx::query(
        "CREATE TRIGGER boom BEFORE INSERT ON inbound_events WHEN NEW.event_id = 'boom' \
         BEGIN SELECT RAISE(ABORT, 'the disk is on fire'); END",
    )
    .execute(&mut outside)
    .await
    .unwrap();
    drop(outside);
    store.insert(&question(&qid(0), 1_000)).await.unwrap();

    let outside = hold_write_lock(&path).await;
    let mut writes = JoinSet::new();
    for event in ["first", "boom", "second"] {
        let store = store.clone();
        writes.spawn(async move { (event, store.record_event(CHANNEL, event).await) });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        let store = store.clone();
        writes.spawn(async move {
            let resolution = ended(QuestionStatus::Cancelled, 2_000, "cancelled");
            let resolved = store.resolve(&id(&qid(0)), &resolution).await;
            ("resolve", resolved.map(|record| record.is_some()))
        });
    }
    tokio::time::sleep(QUEUE_TIME).await;
    release(outside).await;
    while let Some(result) = writes.join_next().await {
        match result.unwrap() {
            ("boom", Err(error)) => {
                assert!(error.is_unavailable(), "{error}");
                assert!(error.to_string().contains("the disk is on fire"), "{error}");
            }
            (_, Ok(true)) => {}
            (what, outcome) => panic!("{what}: {outcome:?}"),
        }
    }
    assert!(store.event_seen(CHANNEL, "first").await.unwrap());
    assert!(store.event_seen(CHANNEL, "second").await.unwrap());
    assert!(!store.event_seen(CHANNEL, "boom").await.unwrap());
    assert_eq!(
        store.get(&id(&qid(0))).await.unwrap().unwrap().status,
        QuestionStatus::Cancelled
    );
    // Readiness says writes failed until one succeeds, and then recovers.
    store.ping().await.expect("a write succeeded after the failed one");
}

#[tokio::test]
async fn a_closed_store_finishes_what_was_sent_and_refuses_the_rest() {
    let (store, _dir, path) = store().await;
    let sent = {
        let store = store.clone();
        tokio::spawn(async move { store.insert(&question(&qid(1), 1_000)).await })
    };
    // The writer has it (on this one-thread runtime the spawned task runs
    // while this one sleeps).
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.close().await;
    sent.await.unwrap().expect("a write sent before close is saved");
    let refused = store.insert(&question(&qid(2), 2_000)).await;
    assert!(matches!(&refused, Err(error) if error.is_unavailable()), "{refused:?}");
    let reopened = SqliteStore::open(&path).await.unwrap();
    assert!(reopened.get(&id(&qid(1))).await.unwrap().is_some());
    assert!(reopened.get(&id(&qid(2))).await.unwrap().is_none());
    reopened.close().await;
}
