//! The rules an insert checks besides the session rule: agents' idempotency
//! keys and the caps on pending questions.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use askgate_store::{IdempotencyKey, InsertRules, Inserted, PendingScope, QuestionRecord, QuestionStatus, StoreError};
use support::*;

on_both_stores! {
    a_key_used_again_with_the_same_request_finds_the_first_question,
    a_key_used_again_with_another_request_is_refused,
    keys_are_each_agents_own,
    caps_count_pending_questions_per_agent_and_per_recipient,
    a_retry_finds_its_question_even_when_the_cap_is_reached_since,
    pending_counts_stay_exact_through_concurrent_inserts_refusals_resolutions_and_pruning,
    a_cap_holds_exactly_when_concurrent_inserts_start_far_below_it_and_reach_it,
}

fn keyed(key: &str, fingerprint: &str) -> InsertRules {
    InsertRules {
        idempotency: Some(IdempotencyKey {
            key: key.to_owned(),
            fingerprint: fingerprint.to_owned(),
        }),
        ..InsertRules::default()
    }
}

async fn a_key_used_again_with_the_same_request_finds_the_first_question(fresh: Fresh) {
    let store = fresh.store();
    let first = question("01HZX0000000000000000000A1", 1_000);
    assert_eq!(
        store.insert_with(&first, &keyed("call-1", "f1")).await.unwrap(),
        Inserted::New
    );

    // The retry comes with a new id (the engine makes one per attempt).
    let retry = question("01HZX0000000000000000000A2", 2_000);
    match store.insert_with(&retry, &keyed("call-1", "f1")).await.unwrap() {
        Inserted::Existing(existing) => assert_eq!(existing.id, first.id),
        Inserted::New => panic!("a retry with the same key must not store a second question"),
    }
    assert!(store.get(&retry.id).await.unwrap().is_none(), "nothing was written");

    // Also once the question has ended.
    store
        .resolve(&first.id, &ended(QuestionStatus::Cancelled, 3_000, "cancelled"))
        .await
        .unwrap();
    match store.insert_with(&retry, &keyed("call-1", "f1")).await.unwrap() {
        Inserted::Existing(existing) => assert_eq!(existing.status, QuestionStatus::Cancelled),
        Inserted::New => panic!("the key still names its question"),
    }
}

async fn a_key_used_again_with_another_request_is_refused(fresh: Fresh) {
    let store = fresh.store();
    let first = question("01HZX0000000000000000000B1", 1_000);
    store.insert_with(&first, &keyed("call-1", "f1")).await.unwrap();
    let other = question("01HZX0000000000000000000B2", 2_000);
    match store.insert_with(&other, &keyed("call-1", "f2")).await {
        Err(StoreError::KeyReused { question }) => assert_eq!(question, first.id),
        result => panic!("expected KeyReused, got {result:?}"),
    }
    assert!(store.get(&other.id).await.unwrap().is_none());
}

async fn keys_are_each_agents_own(fresh: Fresh) {
    let store = fresh.store();
    let mine = question("01HZX0000000000000000000C1", 1_000);
    store.insert_with(&mine, &keyed("call-1", "f1")).await.unwrap();
    let theirs = in_session(question("01HZX0000000000000000000C2", 2_000), "other-bot", None);
    assert_eq!(
        store.insert_with(&theirs, &keyed("call-1", "f1")).await.unwrap(),
        Inserted::New
    );
}

async fn caps_count_pending_questions_per_agent_and_per_recipient(fresh: Fresh) {
    let store = fresh.store();
    let rules = InsertRules {
        max_pending_per_agent: Some(2),
        max_pending_per_recipient: Some(3),
        ..InsertRules::default()
    };
    let a1 = question("01HZX0000000000000000000D1", 1_000);
    let a2 = question("01HZX0000000000000000000D2", 2_000);
    store.insert_with(&a1, &rules).await.unwrap();
    store.insert_with(&a2, &rules).await.unwrap();
    let a3 = question("01HZX0000000000000000000D3", 3_000);
    match store.insert_with(&a3, &rules).await {
        Err(StoreError::TooManyPending { scope, limit }) => {
            assert_eq!((scope, limit), (PendingScope::Agent("build-bot".into()), 2));
        }
        result => panic!("expected the agent's cap, got {result:?}"),
    }
    // Another agent may still ask the same recipient, up to the recipient's cap.
    let b1 = in_session(question("01HZX0000000000000000000D4", 4_000), "other-bot", None);
    store.insert_with(&b1, &rules).await.unwrap();
    let b2 = in_session(question("01HZX0000000000000000000D5", 5_000), "other-bot", None);
    match store.insert_with(&b2, &rules).await {
        Err(StoreError::TooManyPending { scope, limit }) => {
            assert_eq!((scope, limit), (PendingScope::Recipient("alice".into()), 3));
        }
        result => panic!("expected the recipient's cap, got {result:?}"),
    }
    // An ended question no longer counts.
    store
        .resolve(&a1.id, &ended(QuestionStatus::Cancelled, 6_000, "cancelled"))
        .await
        .unwrap();
    store.insert_with(&a3, &rules).await.unwrap();
    assert_eq!(store.pending().await.unwrap().len(), 3);
}

async fn a_retry_finds_its_question_even_when_the_cap_is_reached_since(fresh: Fresh) {
    let store = fresh.store();
    let rules = InsertRules {
        max_pending_per_agent: Some(1),
        ..keyed("call-1", "f1")
    };
    let first = question("01HZX0000000000000000000E1", 1_000);
    store.insert_with(&first, &rules).await.unwrap();
    let retry = question("01HZX0000000000000000000E2", 2_000);
    assert!(matches!(
        store.insert_with(&retry, &rules).await.unwrap(),
        Inserted::Existing(existing) if existing.id == first.id
    ));
}

/// What the kept counts of `scope` say, and what counting the questions says.
async fn counted(fresh: &Fresh, scope: &str) -> (i64, i64) {
    let kept = fresh
        .int(&format!(
            "SELECT CAST(coalesce(sum(pending), 0) AS BIGINT) FROM pending_counts WHERE scope = '{scope}'"
        ))
        .await;
    let counted = fresh
        .int("SELECT count(*) FROM questions WHERE status = 'pending'")
        .await;
    (kept, counted)
}

/// The same for one recipient.
async fn recipient_counted(fresh: &Fresh, who: &str) -> (i64, i64) {
    let kept = fresh
        .int(&format!(
            "SELECT CAST(coalesce(sum(pending), 0) AS BIGINT) FROM pending_counts \
             WHERE scope = 'recipient' AND who = '{who}'"
        ))
        .await;
    let counted = fresh
        .int(&format!(
            "SELECT count(*) FROM questions WHERE recipient = '{who}' AND status = 'pending'"
        ))
        .await;
    (kept, counted)
}

/// The caps read counts kept beside the questions (not a count of them on
/// every insert); those counts must stay what a count would say through
/// concurrent inserts sharing commits, refusals, resolutions and pruning.
async fn pending_counts_stay_exact_through_concurrent_inserts_refusals_resolutions_and_pruning(fresh: Fresh) {
    let store = fresh.store();
    let rules = InsertRules {
        max_pending_per_agent: Some(30),
        ..InsertRules::default()
    };
    let mut inserts = tokio::task::JoinSet::new();
    for n in 0..40_i64 {
        let store = store.clone();
        let rules = rules.clone();
        // Two recipients, so that the recipient counts differ from the agent's.
        let recipient = if n % 2 == 0 { "alice" } else { "bob" };
        let record = QuestionRecord {
            recipient: recipient.to_owned(),
            ..question(&format!("01HZX00000000000000000{n:04}"), 1_000 + n)
        };
        inserts.spawn(async move { (record.id.clone(), store.insert_with(&record, &rules).await) });
    }
    let mut accepted = Vec::new();
    let mut refused = 0;
    while let Some(joined) = inserts.join_next().await {
        match joined.unwrap() {
            (id, Ok(Inserted::New)) => accepted.push(id),
            (_, Err(StoreError::TooManyPending { .. })) => refused += 1,
            (_, other) => panic!("unexpected insert outcome {other:?}"),
        }
    }
    assert_eq!((accepted.len(), refused), (30, 10));

    assert_eq!(counted(&fresh, "agent").await, (30, 30));
    assert_eq!(counted(&fresh, "recipient").await, (30, 30));

    // Ten end (two of them twice: the second resolution changes nothing).
    for (n, id) in accepted.iter().take(10).enumerate() {
        let at = 2_000 + i64::try_from(n).unwrap();
        store
            .resolve(id, &ended(QuestionStatus::Cancelled, at, "cancelled"))
            .await
            .unwrap()
            .unwrap();
    }
    for id in accepted.iter().take(2) {
        assert!(
            store
                .resolve(id, &ended(QuestionStatus::Skipped, 3_000, "skipped"))
                .await
                .unwrap()
                .is_none()
        );
    }
    assert_eq!(counted(&fresh, "agent").await, (20, 20));
    for who in ["alice", "bob"] {
        let (kept, counted) = recipient_counted(&fresh, who).await;
        assert_eq!(kept, counted, "{who}'s pending count");
    }
    assert_eq!(
        store.count_pending_for_recipient("alice").await.unwrap()
            + store.count_pending_for_recipient("bob").await.unwrap(),
        20
    );
    assert_eq!(store.count_pending().await.unwrap(), 20);

    // Pruning removes ended questions only: the counts do not move.
    assert_eq!(store.prune(i64::MAX, 100).await.unwrap().questions, 10);
    assert_eq!(counted(&fresh, "agent").await, (20, 20));
    // Room again under the cap: ten more fit, the eleventh does not.
    for n in 100..110_i64 {
        store
            .insert_with(&question(&format!("01HZX00000000000000000{n:04}"), 5_000 + n), &rules)
            .await
            .unwrap();
    }
    assert!(matches!(
        store
            .insert_with(&question("01HZX000000000000000000111", 6_000), &rules)
            .await,
        Err(StoreError::TooManyPending { .. })
    ));
}

/// A cap above PostgreSQL's `max_connections` (100 on the test server) lets
/// the first inserts take the path that locks nothing exclusively; the rest
/// come near the cap and take the exact one. Together, with 150 at once for
/// a cap of 110, exactly 110 get in.
async fn a_cap_holds_exactly_when_concurrent_inserts_start_far_below_it_and_reach_it(fresh: Fresh) {
    let store = fresh.store();
    let rules = InsertRules {
        max_pending_per_agent: Some(110),
        max_pending_per_recipient: Some(120),
        ..InsertRules::default()
    };
    let mut inserts = tokio::task::JoinSet::new();
    for n in 0..150_i64 {
        let (store, rules) = (store.clone(), rules.clone());
        let record = question(&format!("01HZX0000000000000000F{n:04}"), 1_000 + n);
        inserts.spawn(async move { store.insert_with(&record, &rules).await });
    }
    let (mut accepted, mut refused) = (0, 0);
    while let Some(joined) = inserts.join_next().await {
        match joined.unwrap() {
            Ok(Inserted::New) => accepted += 1,
            Err(StoreError::TooManyPending { scope, limit }) => {
                assert_eq!((scope, limit), (PendingScope::Agent("build-bot".into()), 110));
                refused += 1;
            }
            other => panic!("unexpected insert outcome {other:?}"),
        }
    }
    assert_eq!((accepted, refused), (110, 40));
    assert_eq!(counted(&fresh, "agent").await, (110, 110));
    assert_eq!(store.count_pending().await.unwrap(), 110);
    assert_eq!(store.count_pending_for_recipient("alice").await.unwrap(), 110);
}
