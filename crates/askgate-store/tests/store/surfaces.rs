//! A question shown on several surfaces: each is delivered, fails and is
//! edited into the summary on its own, and the queries that look for
//! undelivered or unfinished questions see each surface; a question's plan
//! (reminders, escalations) is taken one step at a time, each step by one
//! caller only, an escalation adding its recipient's surfaces. Run on both
//! stores.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use askgate_core::channel::Delivery;
use askgate_store::{QuestionRecord, QuestionStatus, Step, StepKind, StepWrite, Store, Surface, SurfaceState};
use support::*;

on_both_stores! {
    each_surface_is_delivered_failed_and_finished_on_its_own,
    a_question_is_delivered_once_every_surface_is_delivered_or_failed,
    a_reply_finds_its_question_through_any_surface,
    two_surfaces_failing_at_once_through_two_stores_see_each_other,
    a_surface_the_question_does_not_have_is_refused,
    a_surface_of_an_ended_question_is_given_up_on_and_the_question_stays_ended,
    a_step_is_taken_by_one_of_twenty_callers_at_once,
    steps_due_lists_pending_questions_by_their_next_step_and_an_escalation_adds_surfaces,
    a_one_off_step_is_recorded_once_per_question_even_after_it_ended,
}

/// A pending question with a reminder at 100 and an escalation to Lead at 200.
fn planned(name: &str, created_at: i64) -> QuestionRecord {
    let mut record = question(name, created_at);
    record.steps = vec![
        Step::planned(StepKind::Remind, created_at + 100),
        Step::planned(StepKind::Escalate, created_at + 200).to("lead"),
    ];
    record
}

async fn a_step_is_taken_by_one_of_twenty_callers_at_once(fresh: Fresh) {
    let store = fresh.store();
    let record = planned("q1", 1);
    store.insert(&record).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..20 {
        let (store, id) = (store.clone(), record.id.clone());
        tasks.spawn(async move {
            let write = StepWrite::Planned {
                index: 0,
                at: 150 + n,
                surfaces: &[],
            };
            store.take_step(&id, write).await.unwrap()
        });
    }
    let mut winners = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        winners.extend(joined.unwrap());
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored, winners[0]);
    assert!(stored.steps[0].done.is_some());
    assert_eq!(stored.steps[1].done, None, "the other step still waits");
}

async fn steps_due_lists_pending_questions_by_their_next_step_and_an_escalation_adds_surfaces(fresh: Fresh) {
    let store = fresh.store();
    let (early, late) = (planned("early", 1), planned("late", 50));
    let mut none = question("none", 2);
    none.steps.clear();
    for record in [&late, &none, &early] {
        store.insert(record).await.unwrap();
    }
    assert!(store.steps_due(100, 10).await.unwrap().is_empty());
    assert_eq!(ids(&store.steps_due(101, 10).await.unwrap()), ["early"]);
    assert_eq!(ids(&store.steps_due(150, 10).await.unwrap()), ["early", "late"]);
    assert_eq!(
        ids(&store.steps_due(150, 1).await.unwrap()),
        ["early"],
        "at most the limit"
    );

    // Taking the reminder moves "early" on to its escalation at 201.
    let reminder = StepWrite::Planned {
        index: 0,
        at: 101,
        surfaces: &[],
    };
    store.take_step(&early.id, reminder).await.unwrap().unwrap();
    assert_eq!(ids(&store.steps_due(150, 10).await.unwrap()), ["late"]);
    // The escalation adds Lead's surface, named apart from Alice's on the
    // same channel; a reply to Lead's copy finds the question.
    let lead = [Surface::sending(CHANNEL, "telegram", "dm-lead").escalated_to("lead")];
    let escalation = StepWrite::Planned {
        index: 1,
        at: 201,
        surfaces: &lead,
    };
    let escalated = store.take_step(&early.id, escalation).await.unwrap().unwrap();
    let keys: Vec<String> = escalated.surfaces.iter().map(Surface::key).collect();
    assert_eq!(keys, [CHANNEL.to_owned(), format!("{CHANNEL}@lead")]);
    assert!(
        store
            .steps_due(1000, 10)
            .await
            .unwrap()
            .iter()
            .all(|r| r.id != early.id)
    );
    let sent = Delivery::new(vec![message("dm-lead", "77")]);
    let key = format!("{CHANNEL}@lead");
    store.set_delivery(&early.id, &key, &sent).await.unwrap();
    assert_eq!(
        store
            .question_for_message(CHANNEL, &message("dm-lead", "77"))
            .await
            .unwrap(),
        Some(early.id.clone())
    );
    let stored = store.get(&early.id).await.unwrap().unwrap();
    assert_eq!(stored.surface_by_key(&key).unwrap().state, SurfaceState::Delivered);
    assert_eq!(
        stored.surface(CHANNEL).unwrap().state,
        SurfaceState::Sending,
        "Alice's own is untouched"
    );

    // An ended question has nothing due, and its steps are not taken.
    store
        .resolve(&late.id, &ended(QuestionStatus::Cancelled, 60, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert!(store.steps_due(1000, 10).await.unwrap().is_empty());
    let after_end = StepWrite::Planned {
        index: 0,
        at: 160,
        surfaces: &[],
    };
    assert_eq!(store.take_step(&late.id, after_end).await.unwrap(), None);
}

async fn a_one_off_step_is_recorded_once_per_question_even_after_it_ended(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    store
        .resolve(&record.id, &ended(QuestionStatus::DeliveryFailed, 5, "blocked"))
        .await
        .unwrap()
        .unwrap();
    let notice = Step::planned(StepKind::NotifyFailure, 6).to("admin");
    let taken = store
        .take_step(&record.id, StepWrite::Once(&notice))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.steps.len(), 1);
    assert_eq!(taken.steps[0].done, Some(6));
    let again = Step::planned(StepKind::NotifyFailure, 7).to("admin");
    assert_eq!(
        store.take_step(&record.id, StepWrite::Once(&again)).await.unwrap(),
        None
    );
}

/// A pending question on Telegram, Slack and askgate's page (delivered as
/// it was stored, nothing to edit).
fn on_three_surfaces(name: &str, created_at: i64) -> QuestionRecord {
    let mut record = question(name, created_at);
    let page = Delivery::in_place(&record.id, &destination("alice"));
    record.surfaces = vec![
        Surface::sending(CHANNEL, "telegram", CONVERSATION),
        Surface::sending("slack", "slack", "U42"),
        Surface::in_place("web", "web", page),
    ];
    record
}

fn destination(conversation: &str) -> askgate_core::channel::Destination {
    askgate_core::channel::Destination {
        conversation: conversation.to_owned(),
        thread: None,
    }
}

fn states(record: &QuestionRecord) -> Vec<SurfaceState> {
    record.surfaces.iter().map(|surface| surface.state).collect()
}

async fn each_surface_is_delivered_failed_and_finished_on_its_own(fresh: Fresh) {
    let store = fresh.store();
    let record = on_three_surfaces("q1", 1000);
    store.insert(&record).await.unwrap();
    assert_eq!(store.get(&record.id).await.unwrap().as_ref(), Some(&record));

    // Telegram in part, then in full; the DM's own id becomes the surface's.
    let part = Delivery::partial(vec![message("dm-7", "1")]);
    assert!(store.set_delivery(&record.id, CHANNEL, &part).await.unwrap());
    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(
        states(&stored),
        [SurfaceState::Sending, SurfaceState::Sending, SurfaceState::Delivered]
    );
    let whole = Delivery::new(vec![message("dm-7", "1"), message("dm-7", "2")]);
    store.set_delivery(&record.id, CHANNEL, &whole).await.unwrap();
    let failed = store
        .surface_failed(&record.id, "slack", "the bot is not in the workspace")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        states(&failed),
        [SurfaceState::Delivered, SurfaceState::Failed, SurfaceState::Delivered]
    );
    assert_eq!(failed.surfaces[0].conversation, "dm-7");
    assert_eq!(failed.surfaces[0].delivery.as_ref(), Some(&whole));
    assert_eq!(
        failed.surfaces[1].reason.as_deref(),
        Some("the bot is not in the workspace")
    );
    assert_eq!(
        failed,
        store.get(&record.id).await.unwrap().unwrap(),
        "what it returned is what is stored"
    );

    // Ended: Telegram's messages wait for their edit, the page's never do.
    store
        .resolve(&record.id, &ended(QuestionStatus::Expired, 2000, "expired"))
        .await
        .unwrap()
        .unwrap();
    let unfinished: Vec<_> = store.unfinished().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(unfinished, std::slice::from_ref(&record.id));
    store.mark_finished(&record.id, CHANNEL).await.unwrap();
    assert!(store.unfinished().await.unwrap().is_empty());
    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert!(stored.surfaces.iter().all(|surface| !surface.to_edit()));
    assert!(stored.surfaces[0].finished);
}

async fn a_question_is_delivered_once_every_surface_is_delivered_or_failed(fresh: Fresh) {
    let store = fresh.store();
    let record = on_three_surfaces("q1", 1000);
    store.insert(&record).await.unwrap();
    let delivered = |store: Arc<dyn Store>| async move {
        let page = store.pending_deadlines(None, 10).await.unwrap();
        (
            page[0].delivered,
            store.undelivered(5000, 10).await.unwrap().len(),
            store.undelivered_since(CHANNEL, 0).await.unwrap(),
            store.undelivered_since("slack", 0).await.unwrap(),
        )
    };
    assert_eq!(delivered(store.clone()).await, (false, 1, true, true));
    store
        .set_delivery(&record.id, CHANNEL, &Delivery::new(vec![message(CONVERSATION, "1")]))
        .await
        .unwrap();
    assert_eq!(
        delivered(store.clone()).await,
        (false, 1, false, true),
        "Slack is still on its way"
    );
    store.surface_failed(&record.id, "slack", "refused").await.unwrap();
    assert_eq!(delivered(store.clone()).await, (true, 0, false, false));
}

async fn a_reply_finds_its_question_through_any_surface(fresh: Fresh) {
    let store = fresh.store();
    let record = on_three_surfaces("q1", 1000);
    store.insert(&record).await.unwrap();
    store
        .set_delivery(&record.id, CHANNEL, &Delivery::new(vec![message(CONVERSATION, "10")]))
        .await
        .unwrap();
    store
        .set_delivery(&record.id, "slack", &Delivery::new(vec![message("D42", "1700.1")]))
        .await
        .unwrap();
    for (channel, conversation, number) in [(CHANNEL, CONVERSATION, "10"), ("slack", "D42", "1700.1")] {
        assert_eq!(
            store
                .question_for_message(channel, &message(conversation, number))
                .await
                .unwrap(),
            Some(record.id.clone())
        );
        assert_eq!(
            store
                .newest_pending_in_conversation(channel, conversation)
                .await
                .unwrap(),
            Some(record.id.clone())
        );
    }
    // Each message on its own channel only.
    assert_eq!(
        store
            .question_for_message("slack", &message(CONVERSATION, "10"))
            .await
            .unwrap(),
        None
    );
}

/// Telegram and Slack both give up at the same moment, through two stores
/// (two replicas): one of them must see that every surface failed, or the
/// question would wait for nothing until it expires.
async fn two_surfaces_failing_at_once_through_two_stores_see_each_other(fresh: Fresh) {
    let stores = [fresh.store(), fresh.reopen().await];
    for round in 0..10 {
        let mut record = question(&format!("q{round}"), 1000 + round);
        record.surfaces = vec![
            Surface::sending(CHANNEL, "telegram", CONVERSATION),
            Surface::sending("slack", "slack", "U42"),
        ];
        stores[0].insert(&record).await.unwrap();
        let failing = [(CHANNEL, 0), ("slack", 1)].map(|(channel, store)| {
            let (store, id) = (stores[store].clone(), record.id.clone());
            tokio::spawn(async move { store.surface_failed(&id, channel, "refused").await.unwrap().unwrap() })
        });
        let mut saw_all = 0;
        for task in failing {
            let seen = task.await.unwrap();
            if seen
                .surfaces
                .iter()
                .all(|surface| surface.state == SurfaceState::Failed)
            {
                saw_all += 1;
            }
        }
        assert!(saw_all >= 1, "round {round}: neither write saw the other's");
        let after = stores[1].get(&record.id).await.unwrap().unwrap();
        assert_eq!(states(&after), [SurfaceState::Failed, SurfaceState::Failed]);
    }
}

/// The engine gives up on a surface still being tried when its question
/// ends: the write is taken on an ended question, changes nothing else, and
/// leaves nothing to edit or to deliver.
async fn a_surface_of_an_ended_question_is_given_up_on_and_the_question_stays_ended(fresh: Fresh) {
    let store = fresh.store();
    let record = on_three_surfaces("q1", 1000);
    store.insert(&record).await.unwrap();
    store
        .set_delivery(&record.id, CHANNEL, &Delivery::new(vec![message(CONVERSATION, "1")]))
        .await
        .unwrap();
    let cancelled = store
        .resolve(&record.id, &ended(QuestionStatus::Cancelled, 2000, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.surfaces[1].state, SurfaceState::Sending);
    let reason = "the question ended before it was delivered";
    let after = store
        .surface_failed(&record.id, "slack", reason)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.status, QuestionStatus::Cancelled);
    assert_eq!(after.resolution, cancelled.resolution);
    assert_eq!(
        states(&after),
        [SurfaceState::Delivered, SurfaceState::Failed, SurfaceState::Delivered]
    );
    assert_eq!(
        (after.surfaces[1].reason.as_deref(), after.surfaces[1].delivery.as_ref()),
        (Some(reason), None)
    );
    assert_eq!(store.get(&record.id).await.unwrap().as_ref(), Some(&after));
    // Only Telegram's copy waits to be edited; nothing waits to be delivered.
    let unfinished = store.unfinished().await.unwrap();
    assert_eq!(ids(&unfinished), [record.id.as_str()]);
    assert!(!unfinished[0].surfaces[1].to_edit());
    assert!(store.undelivered(5000, 10).await.unwrap().is_empty());
}

async fn a_surface_the_question_does_not_have_is_refused(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1000);
    store.insert(&record).await.unwrap();
    let refused = store
        .set_delivery(&record.id, "discord", &Delivery::new(vec![message("c", "1")]))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(
        store.get(&record.id).await.unwrap().as_ref(),
        Some(&record),
        "nothing changed"
    );
    assert!(
        store
            .surface_failed(&id("nobody"), CHANNEL, "x")
            .await
            .unwrap()
            .is_none()
    );
}

/// A database written before surfaces (migrations up to 0005) keeps its
/// questions: each becomes one surface with its channel, conversation,
/// delivery and edit, and a reply still finds the pending one.
#[tokio::test]
async fn a_question_stored_before_surfaces_becomes_one_surface() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before");
    std::fs::create_dir(&before).unwrap();
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    for file in std::fs::read_dir(&all).unwrap() {
        let file = file.unwrap();
        if file.file_name().to_string_lossy().as_ref() < "0006" {
            std::fs::copy(file.path(), before.join(file.file_name())).unwrap();
        }
    }
    let path = dir.path().join("askgate.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options)
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(before.as_path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    let request = serde_json::to_string(&request()).unwrap();
    for (id, status, delivery, finished) in [
        (
            "sent",
            "pending",
            Some(r#"{"messages":[{"conversation":"4242","message":"17"}]}"#),
            0,
        ),
        (
            "partly",
            "pending",
            Some(r#"{"messages":[{"conversation":"4242","message":"18"}],"complete":false}"#),
            0,
        ),
        (
            "edited",
            "answered",
            Some(r#"{"messages":[{"conversation":"4242","message":"19"}]}"#),
            1,
        ),
        ("failed", "delivery_failed", None, 0),
    ] {
        sqlx::query(
            "INSERT INTO questions (id, status, agent, recipient, channel, conversation, locale, request, \
             created_at, expires_at, delivery, finished) VALUES (?, ?, 'bot', 'alice', 'telegram', '4242', 'en', ?, 1, 600001, ?, ?)",
        )
        .bind(id)
        .bind(status)
        .bind(&request)
        .bind(delivery)
        .bind(finished)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO messages (channel, conversation, message, question_id) VALUES ('telegram', '4242', '17', 'sent')",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    drop(conn);

    let store = askgate_store::SqliteStore::open(&path).await.unwrap();
    let mut surfaces = std::collections::HashMap::new();
    for name in ["sent", "partly", "edited", "failed"] {
        let record = store.get(&id(name)).await.unwrap().unwrap();
        assert_eq!(record.surfaces.len(), 1, "{name}");
        surfaces.insert(name, record.surfaces[0].clone());
    }
    let surface = |name: &str| surfaces[name].clone();
    let sent = surface("sent");
    assert_eq!(
        (sent.channel.as_str(), sent.kind.as_str(), sent.conversation.as_str()),
        ("telegram", "", "4242")
    );
    assert_eq!((sent.state, sent.finished), (SurfaceState::Delivered, false));
    assert_eq!(sent.delivery, Some(Delivery::new(vec![message("4242", "17")])));
    assert_eq!(surface("partly").state, SurfaceState::Sending);
    assert_eq!(
        (surface("edited").state, surface("edited").finished),
        (SurfaceState::Delivered, true)
    );
    assert_eq!(surface("failed").state, SurfaceState::Failed);
    assert_eq!(
        store.newest_pending_in_conversation("telegram", "4242").await.unwrap(),
        Some(id("sent"))
    );
}
