//! Result callbacks: recorded in the insert of their question, armed in
//! the write that ends it (whichever write: a resolution, an expiry), taken by
//! one sweep at a time under a lease, each attempt recorded, and never due
//! again once delivered or given up. Run on both stores.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use askgate_store::{
    CallbackAttempt, CallbackStatus, IdempotencyKey, InsertRules, Inserted, NewCallback, QuestionRecord,
    QuestionStatus, Store, StoreError,
};
use support::*;

on_both_stores! {
    a_callback_is_due_only_once_its_question_ends_and_then_until_its_window_closes,
    an_expiry_arms_the_callback_in_the_same_write,
    a_question_stored_ended_is_due_at_once_and_a_retry_or_refusal_adds_no_callback,
    a_due_callback_is_leased_to_one_of_ten_sweeps_and_due_again_after_the_lease,
    attempts_are_recorded_in_order_and_a_delivered_callback_is_never_due_again,
    a_pruned_question_takes_its_callback_with_it,
    a_resolution_undone_for_a_question_that_cannot_be_read_back_arms_nothing,
}

const WINDOW: i64 = 86_400_000;

/// The rules that store a question with its result callback to `url`.
fn hooked(url: &str) -> InsertRules {
    InsertRules {
        callback: Some(NewCallback {
            url: url.to_owned(),
            window_ms: WINDOW,
        }),
        ..InsertRules::default()
    }
}

/// Stores a pending question `name` whose result goes to `url`.
async fn ask_hooked(store: &Arc<dyn Store>, name: &str, url: &str) -> QuestionRecord {
    let record = question(name, 10);
    assert_eq!(store.insert_with(&record, &hooked(url)).await.unwrap(), Inserted::New);
    record
}

/// Stores a question `name` whose result goes to `url`, and cancels it at `at`.
async fn ended_hooked(store: &Arc<dyn Store>, name: &str, url: &str, at: i64) -> QuestionRecord {
    let record = ask_hooked(store, name, url).await;
    store
        .resolve(&record.id, &ended(QuestionStatus::Cancelled, at, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    record
}

/// No callback is due, however late it is.
async fn assert_none_ever_due(store: &Arc<dyn Store>) {
    let due = store.callbacks_due(i64::MAX / 2, i64::MAX / 2 + 1, 10).await.unwrap();
    assert!(due.is_empty(), "{due:?}");
}

fn attempt(attempt: u32, status: CallbackStatus, http_status: Option<u16>, at: i64) -> CallbackAttempt {
    CallbackAttempt {
        attempt,
        status,
        http_status,
        at,
    }
}

async fn a_callback_is_due_only_once_its_question_ends_and_then_until_its_window_closes(fresh: Fresh) {
    let store = fresh.store();
    let record = ask_hooked(&store, "q1", "https://hooks.example.com/a").await;
    assert_eq!(store.callback_attempts(&record.id).await.unwrap(), Some(vec![]));
    assert!(store.callbacks_due(1_000_000, 1_000_100, 10).await.unwrap().is_empty());

    store
        .resolve(&record.id, &ended(QuestionStatus::Cancelled, 500, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert!(store.callbacks_due(499, 600, 10).await.unwrap().is_empty());
    let due = store.callbacks_due(500, 600, 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].question_id, record.id);
    assert_eq!(due[0].url, "https://hooks.example.com/a");
    assert_eq!(due[0].until, 500 + WINDOW);
    assert!(due[0].attempts.is_empty());
    // A question with no callback is never listed.
    let other = question("q2", 10);
    store.insert(&other).await.unwrap();
    store
        .resolve(&other.id, &ended(QuestionStatus::Cancelled, 500, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.callback_attempts(&other.id).await.unwrap(), None);
    assert!(store.callbacks_due(700, 800, 10).await.unwrap().len() == 1);
}

async fn an_expiry_arms_the_callback_in_the_same_write(fresh: Fresh) {
    let store = fresh.store();
    let record = ask_hooked(&store, "q1", "https://hooks.example.com/a").await;
    let expired = store
        .expire_due(&ended(QuestionStatus::Expired, record.expires_at, "expired"), 10)
        .await
        .unwrap();
    assert_eq!(expired.len(), 1);
    let due = store
        .callbacks_due(record.expires_at, record.expires_at + 1, 10)
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].until, record.expires_at + WINDOW);
}

async fn a_question_stored_ended_is_due_at_once_and_a_retry_or_refusal_adds_no_callback(fresh: Fresh) {
    let store = fresh.store();
    // Stored already ended (an import, a replay of an old write): armed by
    // the insert itself, since no later write ends it.
    let mut record = question("q1", 10);
    let resolution = ended(QuestionStatus::Cancelled, 300, "cancelled");
    record.status = QuestionStatus::Cancelled;
    record.resolution = Some(resolution);
    assert_eq!(
        store.insert_with(&record, &hooked("https://a.example/")).await.unwrap(),
        Inserted::New
    );
    let due = store.callbacks_due(300, 400, 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].url, "https://a.example/");
    assert_eq!(due[0].until, 300 + WINDOW);

    // A retry under the same idempotency key writes nothing: no second
    // callback, and the first keeps its URL.
    let key = |url: &str| InsertRules {
        idempotency: Some(IdempotencyKey {
            key: "call-1".to_owned(),
            fingerprint: "f1".to_owned(),
        }),
        ..hooked(url)
    };
    let first = question("q2", 10);
    assert_eq!(
        store.insert_with(&first, &key("https://a.example/")).await.unwrap(),
        Inserted::New
    );
    let retry = question("q3", 10);
    assert!(matches!(
        store.insert_with(&retry, &key("https://b.example/")).await.unwrap(),
        Inserted::Existing(_)
    ));
    assert_eq!(store.callback_attempts(&retry.id).await.unwrap(), None);

    // A question the caps refuse leaves no callback behind.
    let capped = InsertRules {
        max_pending_per_agent: Some(1),
        ..hooked("https://c.example/")
    };
    let refused = question("q4", 10);
    assert!(matches!(
        store.insert_with(&refused, &capped).await,
        Err(StoreError::TooManyPending { .. })
    ));
    assert_eq!(fresh.int("SELECT COUNT(*) FROM callbacks").await, 2);
    assert_eq!(
        fresh
            .int("SELECT COUNT(*) FROM callbacks WHERE url = 'https://a.example/'")
            .await,
        2
    );
}

async fn a_due_callback_is_leased_to_one_of_ten_sweeps_and_due_again_after_the_lease(fresh: Fresh) {
    let store = fresh.store();
    ended_hooked(&store, "q1", "https://a.example/", 100).await;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let store = store.clone();
        tasks.spawn(async move { store.callbacks_due(200, 30_200, 10).await.unwrap().len() });
    }
    let mut taken = 0;
    while let Some(joined) = tasks.join_next().await {
        taken += joined.unwrap();
    }
    assert_eq!(taken, 1, "one sweep takes the attempt");
    // A sweep that died sending it: taken again once its lease is over.
    assert!(store.callbacks_due(30_199, 60_000, 10).await.unwrap().is_empty());
    assert_eq!(store.callbacks_due(30_200, 60_200, 10).await.unwrap().len(), 1);
}

async fn attempts_are_recorded_in_order_and_a_delivered_callback_is_never_due_again(fresh: Fresh) {
    let store = fresh.store();
    let record = ended_hooked(&store, "q1", "https://a.example/", 100).await;
    let first = attempt(1, CallbackStatus::Failed, Some(500), 100);
    store.callbacks_due(100, 1_000, 10).await.unwrap();
    store.record_callback(&record.id, &first, Some(2_000)).await.unwrap();
    // The failed attempt lifted the lease: due again at its next time only.
    assert!(store.callbacks_due(1_999, 9_000, 10).await.unwrap().is_empty());
    let due = store.callbacks_due(2_000, 9_000, 10).await.unwrap();
    assert_eq!(due[0].attempts, vec![first.clone()]);
    let second = attempt(2, CallbackStatus::Delivered, Some(204), 2_000);
    store.record_callback(&record.id, &second, None).await.unwrap();
    assert_none_ever_due(&store).await;
    assert_eq!(
        store.callback_attempts(&record.id).await.unwrap(),
        Some(vec![first, second])
    );
    // Read back after reopening: the attempts are durable.
    let reopened = fresh.reopen().await;
    assert_eq!(reopened.callback_attempts(&record.id).await.unwrap().unwrap().len(), 2);
}

async fn a_pruned_question_takes_its_callback_with_it(fresh: Fresh) {
    let store = fresh.store();
    let record = ended_hooked(&store, "q1", "https://a.example/", 100).await;
    store.prune(1_000, 10).await.unwrap();
    assert_eq!(store.callback_attempts(&record.id).await.unwrap(), None);
    assert_eq!(fresh.int("SELECT COUNT(*) FROM callbacks").await, 0);
}

/// A resolution whose question cannot be read back (a row written outside
/// askgate) is undone whole: the question is pending again, counted under
/// the caps, and its callback is not due.
async fn a_resolution_undone_for_a_question_that_cannot_be_read_back_arms_nothing(fresh: Fresh) {
    let store = fresh.store();
    let record = ask_hooked(&store, "q1", "https://a.example/").await;
    fresh
        .execute("UPDATE questions SET request = 'not json {' WHERE id = 'q1'")
        .await;
    let resolved = store
        .resolve(&record.id, &ended(QuestionStatus::Cancelled, 500, "cancelled"))
        .await;
    assert!(matches!(resolved, Err(StoreError::Corrupt(_))), "{resolved:?}");
    assert_eq!(
        fresh.text("SELECT status FROM questions WHERE id = 'q1'").await,
        "pending"
    );
    assert_eq!(
        fresh
            .int("SELECT COUNT(*) FROM questions WHERE id = 'q1' AND resolution IS NULL AND resolved_at IS NULL")
            .await,
        1
    );
    assert!(store.callbacks_due(500, 600, 10).await.unwrap().is_empty());
    assert_none_ever_due(&store).await;
    let capped = InsertRules {
        max_pending_per_agent: Some(1),
        ..InsertRules::default()
    };
    assert!(
        matches!(
            store.insert_with(&question("q2", 10), &capped).await,
            Err(StoreError::TooManyPending { .. })
        ),
        "q1 still counts as pending"
    );
}
