//! Two stores on one database, as two replicas (or two processes on one
//! SQLite file) have them: every rule holds across them, not only inside
//! one store. Run on both stores.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use askgate_core::{AnswerItem, Answers};
use askgate_store::{
    EventKey, ForEvent, InsertRules, Inserted, ProgressSaved, QuestionRecord, QuestionStatus, Store, StoreError,
};
use support::*;

on_both_stores! {
    concurrent_partial_replies_through_two_stores_are_all_kept,
    a_cap_and_a_session_hold_across_two_stores,
    one_of_many_resolutions_through_two_stores_wins,
    sweeps_through_two_stores_expire_each_question_once,
    a_lease_is_held_by_one_store_at_a_time_until_it_lapses_or_is_released,
    one_event_delivered_fifty_times_through_two_stores_applies_once,
}

/// The two stores of a test: `pick(n)` alternates between them.
struct Replicas([Arc<dyn Store>; 2]);

impl Replicas {
    async fn of(fresh: &Fresh) -> Self {
        Self([fresh.store(), fresh.reopen().await])
    }

    fn pick(&self, n: u32) -> Arc<dyn Store> {
        self.0[usize::from(n % 2 == 1)].clone()
    }
}

/// Twenty people's partial replies to one question land at once, through
/// either store; each reads, adds its own, and saves if nothing changed
/// since (else reads again): none is lost.
async fn concurrent_partial_replies_through_two_stores_are_all_kept(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    let record = question("q1", 1);
    replicas.pick(0).insert(&record).await.unwrap();
    let mut replies = tokio::task::JoinSet::new();
    for n in 0..20_u32 {
        let store = replicas.pick(n);
        let id = record.id.clone();
        replies.spawn(async move {
            let request = request();
            let mut retries = 0;
            loop {
                let read = store.get(&id).await.unwrap().unwrap().progress;
                let mut items = read.get("notify").map(<[AnswerItem]>::to_vec).unwrap_or_default();
                items.push(AnswerItem::FreeText {
                    text: format!("reply {n}"),
                });
                let mut progress = read.clone();
                progress.set(&request, "notify", items);
                match store.save_progress(&id, &read, &progress).await.unwrap() {
                    ProgressSaved::Saved => return retries,
                    ProgressSaved::Changed => retries += 1,
                    other => panic!("reply {n}: {other:?}"),
                }
            }
        });
    }
    let retries: u32 = replies.join_all().await.into_iter().sum();
    let kept = replicas.pick(1).get(&record.id).await.unwrap().unwrap().progress;
    let mut texts: Vec<String> = kept
        .get("notify")
        .unwrap()
        .iter()
        .map(|item| match item {
            AnswerItem::FreeText { text } => text.clone(),
            other @ AnswerItem::Option { .. } => panic!("{other:?}"),
        })
        .collect();
    texts.sort();
    let mut expected: Vec<String> = (0..20).map(|n| format!("reply {n}")).collect();
    expected.sort();
    assert_eq!(texts, expected, "every partial reply is kept ({retries} read again)");
    assert_eq!(kept.get("deploy_target"), None);
    assert_ne!(kept, Answers::new());
}

/// Forty inserts under a cap of 30 per agent, and ten in one agent
/// session, through both stores at once: exactly 30 in, and one of the
/// session's.
async fn a_cap_and_a_session_hold_across_two_stores(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    let rules = InsertRules {
        max_pending_per_agent: Some(30),
        ..InsertRules::default()
    };
    let mut inserts = tokio::task::JoinSet::new();
    for n in 0..40_u32 {
        let (store, rules) = (replicas.pick(n), rules.clone());
        let record = question(&format!("01HZX00000000000000000{n:04}"), 1_000 + i64::from(n));
        inserts.spawn(async move { store.insert_with(&record, &rules).await });
    }
    let outcomes = inserts.join_all().await;
    let accepted = outcomes.iter().filter(|o| matches!(o, Ok(Inserted::New))).count();
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(StoreError::TooManyPending { limit: 30, .. })))
        .count();
    assert_eq!((accepted, refused), (30, 10), "{outcomes:?}");
    assert_eq!(replicas.pick(1).count_pending().await.unwrap(), 30);

    let mut asks = tokio::task::JoinSet::new();
    for n in 0..10_u32 {
        let store = replicas.pick(n);
        let record = in_session(
            question(&format!("01HZX00000000000000001{n:04}"), 2_000),
            "deploy-bot",
            Some("one-session"),
        );
        asks.spawn(async move { store.insert(&record).await });
    }
    let outcomes = asks.join_all().await;
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter(|o| o.is_err())
            .all(|o| matches!(o, Err(StoreError::SessionBusy { .. }))),
        "{outcomes:?}"
    );
}

/// An answer, a skip, an expiry and a cancellation race through both
/// stores, many times over: one wins, and every store reads that one.
async fn one_of_many_resolutions_through_two_stores_wins(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    let record: QuestionRecord = question("q1", 1);
    replicas.pick(0).insert(&record).await.unwrap();
    let statuses = [
        QuestionStatus::Answered,
        QuestionStatus::Skipped,
        QuestionStatus::Expired,
        QuestionStatus::Cancelled,
    ];
    let mut resolutions = tokio::task::JoinSet::new();
    for n in 0..24_u32 {
        let store = replicas.pick(n);
        let id = record.id.clone();
        let status = statuses[n as usize % statuses.len()];
        resolutions.spawn(async move {
            let won = store
                .resolve(&id, &ended(status, 100, &format!("attempt {n}")))
                .await
                .unwrap();
            won.map(|record| record.resolution.unwrap().reason.unwrap())
        });
    }
    let winners: Vec<String> = resolutions.join_all().await.into_iter().flatten().collect();
    assert_eq!(winners.len(), 1, "{winners:?}");
    for store in &replicas.0 {
        let stored = store.get(&record.id).await.unwrap().unwrap();
        assert_eq!(stored.resolution.unwrap().reason.as_ref(), Some(&winners[0]));
    }
}

/// Both stores sweep for due questions at once, over and over: each of 60
/// is expired by exactly one sweep.
async fn sweeps_through_two_stores_expire_each_question_once(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    for n in 0..60_i64 {
        replicas
            .pick(0)
            .insert(&question(&format!("01HZX00000000000000002{n:04}"), n))
            .await
            .unwrap();
    }
    let mut sweeps = tokio::task::JoinSet::new();
    for n in 0..8_u32 {
        let store = replicas.pick(n);
        sweeps.spawn(async move {
            let mut expired = Vec::new();
            loop {
                let batch = store
                    .expire_due(&ended(QuestionStatus::Expired, 700_000, "expired"), 5)
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return expired;
                }
                expired.extend(batch.into_iter().map(|record| record.id.to_string()));
            }
        });
    }
    let mut expired: Vec<String> = sweeps.join_all().await.into_iter().flatten().collect();
    let swept = expired.len();
    expired.sort();
    expired.dedup();
    assert_eq!((swept, expired.len()), (60, 60), "each question expired once");
    assert_eq!(replicas.pick(1).count_pending().await.unwrap(), 0);
}

/// Leases: one holder at a time, however many try at once; the holder
/// renews it; past its end (or once released) another takes it.
async fn a_lease_is_held_by_one_store_at_a_time_until_it_lapses_or_is_released(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    let mut tries = tokio::task::JoinSet::new();
    for n in 0..10_u32 {
        let store = replicas.pick(n);
        tries.spawn(async move {
            let owner = format!("replica-{n}");
            let held = store.try_lease("channel:tg", &owner, 1_000, 7_000).await.unwrap();
            held.then_some(owner)
        });
    }
    let holders: Vec<String> = tries.join_all().await.into_iter().flatten().collect();
    assert_eq!(holders.len(), 1, "{holders:?}");
    let (holder, store) = (&holders[0], replicas.pick(0));
    let other = if holder == "replica-1" {
        "replica-2"
    } else {
        "replica-1"
    };

    // The holder renews; another cannot take it before its end.
    assert!(store.try_lease("channel:tg", holder, 3_000, 9_000).await.unwrap());
    assert!(
        !replicas
            .pick(1)
            .try_lease("channel:tg", other, 8_999, 14_999)
            .await
            .unwrap()
    );
    // Another lease is another name.
    assert!(
        replicas
            .pick(1)
            .try_lease("channel:dc", other, 3_000, 9_000)
            .await
            .unwrap()
    );
    // Lapsed: taken, and the old holder can no longer renew it.
    assert!(
        replicas
            .pick(1)
            .try_lease("channel:tg", other, 9_000, 15_000)
            .await
            .unwrap()
    );
    assert!(!store.try_lease("channel:tg", holder, 9_001, 15_001).await.unwrap());
    // Released by someone else: nothing happens; by its holder: free at once.
    store.release_lease("channel:tg", holder).await.unwrap();
    assert!(!store.try_lease("channel:tg", holder, 9_002, 15_002).await.unwrap());
    replicas.pick(1).release_lease("channel:tg", other).await.unwrap();
    assert!(store.try_lease("channel:tg", holder, 9_003, 15_003).await.unwrap());

    // A cursor moves only for the lease's holder, and only before its end.
    let moved = |store: Arc<dyn Store>, owner: &str, now: i64, value: &str| {
        let (owner, value) = (owner.to_owned(), value.to_owned());
        async move {
            store
                .set_setting_leased("cursor:tg", &value, "channel:tg", &owner, now)
                .await
                .unwrap()
        }
    };
    assert!(moved(store.clone(), holder, 10_000, "42").await);
    assert!(
        !moved(replicas.pick(1), "replica-99", 10_000, "7").await,
        "not the holder"
    );
    assert!(
        !moved(store.clone(), holder, 15_003, "43").await,
        "past the lease's end"
    );
    assert_eq!(store.setting("cursor:tg").await.unwrap().as_deref(), Some("42"));
}

/// A platform delivers one event 50 times at once (a retry while the first
/// is in flight), to either store: the event is recorded in the same
/// transaction as its effect, so exactly one delivery applies it.
async fn one_event_delivered_fifty_times_through_two_stores_applies_once(fresh: Fresh) {
    let replicas = Replicas::of(&fresh).await;
    let (partial, tapped) = (question("q1", 1), question("q2", 2));
    for record in [&partial, &tapped] {
        replicas.pick(0).insert(record).await.unwrap();
    }
    let mut progress = Answers::new();
    progress.set(
        &partial.request,
        "deploy_target",
        vec![AnswerItem::Option {
            index: 1,
            label: "Production".into(),
        }],
    );

    let mut deliveries = tokio::task::JoinSet::new();
    for n in 0..50_u32 {
        let (store, id, progress) = (replicas.pick(n), partial.id.clone(), progress.clone());
        deliveries.spawn(async move {
            let key = EventKey {
                channel: CHANNEL,
                event_id: "reply-7",
            };
            store
                .save_progress_for_event(&id, &Answers::new(), &progress, key)
                .await
                .unwrap()
        });
    }
    let outcomes = deliveries.join_all().await;
    let applied = outcomes
        .iter()
        .filter(|o| **o == ForEvent::Applied(ProgressSaved::Saved))
        .count();
    let seen = outcomes.iter().filter(|o| **o == ForEvent::Seen).count();
    assert_eq!((applied, seen), (1, 49), "{outcomes:?}");

    let mut deliveries = tokio::task::JoinSet::new();
    for n in 0..50_u32 {
        let (store, id) = (replicas.pick(n), tapped.id.clone());
        deliveries.spawn(async move {
            let key = EventKey {
                channel: CHANNEL,
                event_id: "tap-7",
            };
            let resolution = ended(QuestionStatus::Skipped, 10, &format!("delivery {n}"));
            match store.resolve_for_event(&id, &resolution, key).await.unwrap() {
                ForEvent::Applied(resolved) => Some(resolved.is_some()),
                _ => None,
            }
        });
    }
    let outcomes = deliveries.join_all().await;
    assert_eq!(outcomes.iter().filter(|o| **o == Some(true)).count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o.is_none()).count(), 49, "{outcomes:?}");
    assert!(replicas.pick(1).event_seen(CHANNEL, "tap-7").await.unwrap());

    // A save refused because the progress changed since it was read leaves
    // the event unseen: the caller reads again and applies it anew.
    let store = replicas.pick(1);
    let stale = store
        .save_progress_for_event(
            &partial.id,
            &Answers::new(),
            &progress,
            EventKey {
                channel: CHANNEL,
                event_id: "reply-8",
            },
        )
        .await
        .unwrap();
    assert_eq!(stale, ForEvent::Applied(ProgressSaved::Changed));
    assert!(!store.event_seen(CHANNEL, "reply-8").await.unwrap());
    // An event for a question that ended is recorded (it was handled) and changes nothing.
    let late = store
        .resolve_for_event(
            &tapped.id,
            &ended(QuestionStatus::Answered, 11, "late"),
            EventKey {
                channel: CHANNEL,
                event_id: "tap-8",
            },
        )
        .await
        .unwrap();
    assert_eq!(late, ForEvent::Applied(None));
    assert!(store.event_seen(CHANNEL, "tap-8").await.unwrap());
}
