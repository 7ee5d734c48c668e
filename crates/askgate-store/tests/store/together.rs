//! Calls arriving together: each gets its own outcome, whatever else was
//! in the batch or transaction it shared (the SQLite writer's group commit,
//! PostgreSQL's batched statements, `src/postgres/batch.rs`). A bad row, a
//! collision or a second resolution of the same question stays its own
//! caller's.

// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::HashMap;

use askgate_store::{InsertRules, Inserted, QuestionStatus, StoreError};
use support::*;
use tokio::task::JoinSet;

on_both_stores! {
    resolutions_arriving_together_each_get_their_own_outcome,
    inserts_arriving_together_each_get_their_own_outcome,
    reads_arriving_together_each_get_their_own_row,
}

/// How many calls each test sends at once.
const CALLS: i64 = 40;

fn qid(n: i64) -> String {
    format!("01HZX1000000000000000{n:05}")
}

async fn resolutions_arriving_together_each_get_their_own_outcome(fresh: Fresh) {
    let store = fresh.store();
    for n in 0..CALLS {
        store.insert(&question(&qid(n), 1_000 + n)).await.unwrap();
    }
    let unreadable = qid(7);
    fresh
        .execute(&format!(
            "UPDATE questions SET request = 'not json {{' WHERE id = '{unreadable}'"
        ))
        .await;

    // Every question resolved once, question 3 twice.
    let mut calls = JoinSet::new();
    for n in (0..CALLS).chain([3]) {
        let store = store.clone();
        calls.spawn(async move {
            let resolution = ended(QuestionStatus::Cancelled, 5_000 + n, &format!("call {n}"));
            (n, store.resolve(&id(&qid(n)), &resolution).await)
        });
    }
    let mut winners: HashMap<i64, usize> = HashMap::new();
    while let Some(joined) = calls.join_next().await {
        let (n, outcome) = joined.unwrap();
        match outcome {
            Ok(Some(record)) => {
                assert_eq!(record.id.as_str(), qid(n));
                assert_eq!(record.status, QuestionStatus::Cancelled);
                *winners.entry(n).or_default() += 1;
            }
            Ok(None) => assert_eq!(n, 3, "only the second resolution of question 3 finds it ended"),
            Err(StoreError::Corrupt(what)) => assert!(n == 7 && what.contains(&unreadable), "{n}: {what}"),
            Err(other) => panic!("question {n}: {other}"),
        }
    }
    for n in 0..CALLS {
        let expected = usize::from(n != 7);
        assert_eq!(
            winners.get(&n).copied().unwrap_or(0),
            expected,
            "question {n}'s winners"
        );
    }
    // The unreadable one was undone, not half resolved; the rest are ended.
    let status = fresh
        .text(&format!("SELECT status FROM questions WHERE id = '{unreadable}'"))
        .await;
    assert_eq!(status, "pending");
    let ended = fresh
        .int("SELECT CAST(count(*) AS BIGINT) FROM questions WHERE status = 'cancelled'")
        .await;
    assert_eq!(ended, CALLS - 1);
}

async fn inserts_arriving_together_each_get_their_own_outcome(fresh: Fresh) {
    let store = fresh.store();
    // One id taken before.
    store.insert(&question(&qid(0), 1_000)).await.unwrap();
    let rules = InsertRules {
        max_pending_per_agent: Some(10_000),
        max_pending_per_recipient: Some(1_000),
        ..InsertRules::default()
    };

    // Questions 0 (taken), 1 to 39, and two in one agent session (40, 41).
    let mut calls = JoinSet::new();
    for n in 0..CALLS + 2 {
        let store = store.clone();
        let rules = rules.clone();
        calls.spawn(async move {
            let mut record = question(&qid(n), 2_000 + n);
            if n >= CALLS {
                record = in_session(record, "build-bot", Some("s1"));
            }
            (n, store.insert_with(&record, &rules).await)
        });
    }
    let mut session_winner = None;
    while let Some(joined) = calls.join_next().await {
        let (n, outcome) = joined.unwrap();
        match (n, outcome) {
            (0, Err(StoreError::Duplicate(taken))) => assert_eq!(taken.as_str(), qid(0)),
            (n, Ok(Inserted::New)) if n >= CALLS => {
                assert!(
                    session_winner.replace(n).is_none(),
                    "both of the session's questions got in"
                );
            }
            (n, Err(StoreError::SessionBusy { session, pending })) if n >= CALLS => {
                assert_eq!(session, "s1");
                assert_ne!(pending.as_str(), qid(n));
            }
            (n, Ok(Inserted::New)) if n > 0 => {}
            (n, other) => panic!("question {n}: {other:?}"),
        }
    }
    assert!(session_winner.is_some(), "one of the session's questions got in");
    // 1 to 39, one of the session's two, and the one stored before.
    let pending = fresh
        .int("SELECT CAST(count(*) AS BIGINT) FROM questions WHERE status = 'pending'")
        .await;
    assert_eq!(pending, CALLS + 1);
    assert_eq!(store.count_pending_for_recipient("alice").await.unwrap(), 41);
}

async fn reads_arriving_together_each_get_their_own_row(fresh: Fresh) {
    let store = fresh.store();
    for n in 0..CALLS {
        store.insert(&question(&qid(n), 1_000 + n)).await.unwrap();
    }
    let unreadable = qid(7);
    fresh
        .execute(&format!("UPDATE questions SET locale = 'fr' WHERE id = '{unreadable}'"))
        .await;

    // Every question read once, question 3 and the unreadable one twice,
    // and one that does not exist.
    let mut calls = JoinSet::new();
    for n in (0..CALLS).chain([3, 7, 99_999]) {
        let store = store.clone();
        calls.spawn(async move { (n, store.get(&id(&qid(n))).await) });
    }
    let mut read = 0;
    while let Some(joined) = calls.join_next().await {
        let (n, outcome) = joined.unwrap();
        match outcome {
            Ok(Some(record)) => {
                assert_eq!(record.id.as_str(), qid(n));
                assert_eq!(record.created_at, 1_000 + n);
                read += 1;
            }
            Ok(None) => assert_eq!(n, 99_999),
            Err(StoreError::Corrupt(what)) => {
                assert!(
                    n == 7 && what.contains(&unreadable) && what.contains("locale"),
                    "{n}: {what}"
                );
            }
            Err(other) => panic!("question {n}: {other}"),
        }
    }
    // 39 readable questions, question 3 twice.
    assert_eq!(read, CALLS);
}
