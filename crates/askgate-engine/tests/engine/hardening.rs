//! The engine when the store cannot take writes for a while, and the limits
//! it keeps: a sent prompt whose bookkeeping failed is recorded once the
//! store recovers and never sent twice; the caps on pending questions; the
//! idempotency key; answers in one's own words longer than askgate takes.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_core::channel::{InboundSink, Reaction};
use askgate_engine::{EngineError, Limits};
use askgate_store::{PendingScope, QuestionStatus};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sent_prompt_whose_bookkeeping_failed_is_recorded_later_and_never_sent_again() {
    use sqlx::Connection as _;
    let h = harness().await;
    // The platform's answer to the send takes a moment; meanwhile another
    // process takes the database's write lock and keeps it.
    h.chat.hold_deliveries(Duration::from_millis(500));
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    let path = h.dir.path().join("askgate.db");
    let mut outside = sqlx::SqliteConnection::connect_with(&sqlx::sqlite::SqliteConnectOptions::new().filename(&path))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut outside).await.unwrap();
    // Sent; recording it waits out the busy timeout (5 s) and fails.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(h.chat.deliveries().len(), 1, "sent once");
    assert!(h.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none());

    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    // Tried again within moments (on the engine's clock), not at the next restart.
    for _ in 0..50 {
        h.clock.advance(Duration::from_millis(500));
        if h.engine.get(&record.id).await.unwrap().unwrap().delivery().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stored = h.delivered(&record.id).await;
    assert_eq!(
        stored.delivery().map(|delivery| delivery.complete),
        Some(true),
        "the delivery is recorded once the store takes writes"
    );

    // A restart finds it delivered: nothing is sent again.
    let again = h.stop().start_again().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(again.chat.deliveries().len(), 1, "never sent twice");
}

#[tokio::test]
async fn the_caps_on_pending_questions_refuse_with_whose_cap() {
    let mut h = harness().await;
    h.engine = h.engine.clone().with_limits(Limits {
        max_pending_per_agent: Some(1),
        max_pending_per_recipient: None,
    });
    let first = h.ask("alice", single()).await;
    match h.engine.ask(question("team", single())).await {
        Err(EngineError::TooManyPending { scope, limit }) => {
            assert_eq!((scope, limit), (PendingScope::Agent("agent-1".into()), 1));
        }
        other => panic!("expected the agent's cap, got {other:?}"),
    }
    h.engine.cancel("agent-1", &first.id).await.unwrap();
    h.engine.ask(question("team", single())).await.unwrap();
}

#[tokio::test]
async fn an_idempotency_key_finds_the_question_and_sends_it_once() {
    let h = harness().await;
    let mut keyed = question("alice", single());
    keyed.idempotency_key = Some("call-1".into());
    let first = h.engine.ask_with(keyed.clone()).await.unwrap();
    assert!(!first.replayed);
    h.delivered(&first.record.id).await;
    let again = h.engine.ask_with(keyed.clone()).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.record.id, first.record.id);

    let mut other = keyed.clone();
    other.to = "team".into();
    match h.engine.ask_with(other).await {
        Err(EngineError::KeyReused { question }) => assert_eq!(question, first.record.id),
        result => panic!("expected KeyReused, got {result:?}"),
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(h.chat.deliveries().len(), 1, "one question, one prompt");
}

#[tokio::test]
async fn a_typed_answer_longer_than_askgate_takes_is_refused_with_a_sentence() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let long = "x".repeat(2001);
    let reaction = h
        .engine
        .handle("chat", typed(&record, "long", "u-alice", &long, true))
        .await
        .unwrap();
    match reaction {
        Reaction::Reply { text } => assert!(
            text.contains("2001 characters") && text.contains("2000"),
            "the refusal says how long and the limit: {text}"
        ),
        other => panic!("expected a reply, got {other:?}"),
    }
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);

    let fits = "y".repeat(2000);
    h.engine
        .handle("chat", typed(&record, "fits", "u-alice", &fits, true))
        .await
        .unwrap();
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    assert_eq!(
        result(&ended)["answers"]["answers"]["deploy"][0].as_str().map(str::len),
        Some(2000)
    );
}

/// Two partial replies to one prompt handled at the same moment (two
/// platform deliveries, two replicas): both are kept, neither overwrites the
/// other's progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_partial_replies_at_once_are_both_kept() {
    let h = harness().await;
    let three = askgate_core::validate_json(
        r#"{"questions":[
            {"id":"deploy","header":"Deploy","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
            {"id":"notify","header":"Notify","question":"Who?","options":[{"label":"Team"},{"label":"Nobody"}]},
            {"id":"when","header":"When","question":"When?","options":[{"label":"Now"},{"label":"Tonight"}]}
        ]}"#,
    )
    .unwrap();
    for round in 0..10 {
        let record = h.ask("alice", three.clone()).await;
        let (notify, when) = tokio::join!(
            h.engine
                .handle("chat", typed(&record, &format!("n{round}"), "u-alice", "2: 1", false)),
            h.engine
                .handle("chat", typed(&record, &format!("w{round}"), "u-alice", "3: 2", false)),
        );
        notify.expect("the first reply is stored");
        when.expect("the second reply is stored");
        let stored = h.engine.get(&record.id).await.unwrap().unwrap();
        assert!(
            stored.progress.get("notify").is_some() && stored.progress.get("when").is_some(),
            "round {round}: both partial replies are kept: {:?}",
            stored.progress
        );
        h.engine.cancel("agent-1", &record.id).await.unwrap();
    }
}
