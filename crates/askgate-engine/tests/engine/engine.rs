//! The engine against the real SQLite store and a recording fake channel, in
//! controlled time: every transition of a question and every refusal.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_core::channel::{
    ChannelError, Delivery, Destination, InboundKind, InboundSink, MessageRef, Reaction, UserRef,
};
use askgate_core::{AnswerItem, ButtonAction, ButtonToken, Presentation, QuestionId};
use askgate_engine::{DirectAnswer, DirectItem, EngineError, SessionKind, Submitted};
use askgate_store::QuestionStatus;
use serde_json::json;
use support::*;

#[tokio::test]
async fn a_tap_answers_and_the_message_becomes_its_summary() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let Presentation::Buttons(buttons) = &h.chat.deliveries()[0].0 else {
        panic!("one single-select question gets buttons")
    };
    assert_eq!(
        buttons.options[1].token,
        ButtonToken {
            question: record.id.clone(),
            action: ButtonAction::Choose(1)
        }
        .encode()
    );
    assert_eq!(record.expires_at, START + 60_000);

    let reaction = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(1)))
        .await
        .expect("the event is stored");
    assert_eq!(
        reaction,
        Reaction::Notice {
            text: "Answer submitted".into(),
            alert: false
        }
    );
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    let resolution = ended.resolution.unwrap();
    assert_eq!(resolution.by.unwrap().id, "u-alice");
    assert_eq!(resolution.via.as_deref(), Some("chat"));
    assert_eq!(h.summary(1).await, ["Answered by Alice: Production"]);
}

#[tokio::test]
async fn the_first_answer_wins_and_repeats_change_nothing() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    h.engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(0)))
        .await
        .expect("the event is stored");
    let again = h
        .engine
        .handle("chat", tap(&record, "e2", "u-alice", ButtonAction::Choose(2)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&again), "This question was already answered");
    // The platform redelivers the first event: nothing at all happens.
    assert_eq!(
        h.engine
            .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(0)))
            .await
            .expect("the event is stored"),
        Reaction::Nothing
    );
    let ended = h.ended(&record.id).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Staging (Recommended)"]}}})
    );
    h.summary(1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(finishes(&h.chat.calls()), 1, "the message is edited once");
}

/// One partial reply delivered 50 times at once (a platform retrying while
/// the first delivery is in flight): applied once, reacted to once; then
/// one tap delivered 50 times at once: one "Skipped", the rest nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_deliveries_of_one_event_at_once_apply_it_once() {
    let h = harness().await;
    let record = h.ask("alice", two()).await;
    let reply = event(
        "reply-1",
        "u-alice",
        record.conversation(),
        InboundKind::TextReply {
            text: "deploy: Production".into(),
            reply_to: Some(message(&record)),
            message: MessageRef {
                conversation: record.conversation().to_owned(),
                message: "m-reply-1".into(),
            },
        },
    );
    let mut deliveries = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (engine, reply) = (h.engine.clone(), reply.clone());
        deliveries.spawn(async move { engine.handle("chat", reply).await.expect("handled") });
    }
    let reactions = deliveries.join_all().await;
    let replied: Vec<&Reaction> = reactions.iter().filter(|r| **r != Reaction::Nothing).collect();
    assert_eq!(replied.len(), 1, "{reactions:?}");
    let progress = h.engine.get(&record.id).await.unwrap().unwrap().progress;
    assert_eq!(
        progress.get("deploy"),
        Some(
            &[AnswerItem::Option {
                index: 1,
                label: "Production".into()
            }][..]
        )
    );

    let mut taps = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let (engine, tap) = (h.engine.clone(), tap(&record, "tap-1", "u-alice", ButtonAction::Skip));
        taps.spawn(async move { engine.handle("chat", tap).await.expect("handled") });
    }
    let reactions = taps.join_all().await;
    let reacted: Vec<&Reaction> = reactions.iter().filter(|r| **r != Reaction::Nothing).collect();
    assert_eq!(
        reacted,
        [&Reaction::Notice {
            text: "Skipped".into(),
            alert: false
        }],
        "{reactions:?}"
    );
    assert_eq!(h.ended(&record.id).await.status, QuestionStatus::Skipped);
}

#[tokio::test]
async fn only_the_addressed_person_may_answer_in_a_group() {
    let h = harness().await;
    let record = h.ask("team", single()).await;
    let refused = h
        .engine
        .handle("chat", tap(&record, "e1", "u-bob", ButtonAction::Choose(0)))
        .await
        .expect("the event is stored");
    assert_eq!(
        refused,
        Reaction::Notice {
            text: "This question is for Alice".into(),
            alert: true
        }
    );
    let refused = h
        .engine
        .handle("chat", typed(&record, "e2", "u-bob", "2", true))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&refused), "This question is for Alice");
    let refused = h
        .engine
        .handle("chat", tap(&record, "e3", "u-bob", ButtonAction::Skip))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&refused), "This question is for Alice");
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);

    // In a group an unthreaded message is never an answer, even from Alice.
    assert_eq!(
        h.engine
            .handle("chat", typed(&record, "e4", "u-alice", "2", false))
            .await
            .expect("the event is stored"),
        Reaction::Nothing
    );
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
    // A reply to the question's message is.
    assert_eq!(
        h.engine
            .handle("chat", typed(&record, "e5", "u-alice", "canary", true))
            .await
            .expect("the event is stored"),
        Reaction::Nothing
    );
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Canary"]}}})
    );
}

/// Spec §6: with no `answerers`, the one person a direct conversation is
/// with answers there (its channel names them, `Channel::direct_person`);
/// anyone else a platform lets in is a stranger there as in a group.
#[tokio::test]
async fn in_a_direct_conversation_only_its_person_may_answer() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    for event in [
        tap(&record, "e1", "u-bob", ButtonAction::Choose(0)),
        tap(&record, "e2", "u-bob", ButtonAction::Skip),
        typed(&record, "e3", "u-bob", "2", true),
        typed(&record, "e4", "u-bob", "2", false),
    ] {
        let refused = h.engine.handle("chat", event).await.expect("the event is stored");
        assert_eq!(notice(&refused), "This question is for Alice", "{refused:?}");
    }
    let now = h.engine.get(&record.id).await.unwrap().expect("stored");
    assert_eq!((now.status, now.progress.is_empty()), (QuestionStatus::Pending, true));
    let answered = h
        .engine
        .handle("chat", tap(&record, "e5", "u-alice", ButtonAction::Choose(1)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&answered), "Answer submitted");
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.resolution.as_ref().unwrap().by.as_ref().unwrap().id, "u-alice");
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
}

#[tokio::test]
async fn a_tap_from_another_conversation_changes_nothing() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let mut forged = tap(&record, "e1", "u-alice", ButtonAction::Choose(0));
    forged.conversation = "dm-mallory".into();
    assert_eq!(
        h.engine.handle("chat", forged).await.expect("the event is stored"),
        Reaction::Nothing
    );
    assert_eq!(
        h.engine
            .handle("other-channel", tap(&record, "e2", "u-alice", ButtonAction::Choose(0)))
            .await
            .expect("the event is stored"),
        Reaction::Nothing
    );
    let mut garbage = tap(&record, "e3", "u-alice", ButtonAction::Choose(0));
    garbage.kind = InboundKind::ButtonPressed {
        token: "Production".into(),
        message: message(&record),
    };
    assert_eq!(
        h.engine.handle("chat", garbage).await.expect("the event is stored"),
        Reaction::Nothing
    );
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
}

#[tokio::test]
async fn in_a_direct_conversation_an_unthreaded_reply_answers_the_newest_question() {
    let h = harness().await;
    let first = h.ask("alice", single()).await;
    let mut second_request = single();
    second_request.questions[0].id = "second".into();
    let mut ask = question("alice", second_request);
    ask.session_id = Some("other-session".into());
    let second = h.engine.ask(ask).await.unwrap();
    let second = h.delivered(&second.id).await;
    assert_eq!(
        h.engine
            .handle("chat", typed(&second, "e1", "u-alice", "2", false))
            .await
            .expect("the event is stored"),
        Reaction::Nothing
    );
    assert_eq!(h.ended(&second.id).await.status, QuestionStatus::Answered);
    assert_eq!(h.status(&first.id).await, QuestionStatus::Pending);
    // A reply to the older question's message still reaches it.
    h.engine
        .handle("chat", typed(&first, "e2", "u-alice", "my own words", true))
        .await
        .expect("the event is stored");
    assert_eq!(
        result(&h.ended(&first.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["my own words"]}}})
    );
    // Nothing pending now: the bot says so.
    let nothing = h
        .engine
        .handle("chat", typed(&first, "e3", "u-alice", "hello?", false))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&nothing), "There is no question waiting for you right now.");
}

#[tokio::test]
async fn a_multi_question_prompt_is_answered_over_several_replies() {
    let h = harness().await;
    let record = h.ask("alice", two()).await;
    assert!(matches!(h.chat.deliveries()[0].0, Presentation::Text(_)));
    let partial = h
        .engine
        .handle("chat", typed(&record, "e1", "u-alice", "2: 1, 3", false))
        .await
        .expect("the event is stored");
    assert_eq!(
        partial,
        Reaction::Reply {
            text: "Got Notify. Still needed: Deploy".into()
        }
    );
    let stored = h.engine.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored.status, QuestionStatus::Pending);
    assert!(stored.progress.get("notify").is_some());

    h.engine
        .handle("chat", typed(&record, "e2", "u-alice", "production", false))
        .await
        .expect("the event is stored");
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"], "notify": ["Team", "Nobody"]}}})
    );
    assert_eq!(
        h.summary(1).await,
        ["Answered by Alice\nDeploy: Production\nNotify: Team, Nobody"]
    );
}

#[tokio::test]
async fn other_opens_a_free_text_input_whose_text_is_the_answer() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let reaction = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Other))
        .await
        .expect("the event is stored");
    let Reaction::AskFreeText { token, title, .. } = reaction else {
        panic!("expected a free-text input, got {reaction:?}")
    };
    assert_eq!(title, "Your answer");
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
    let submitted = event(
        "e2",
        "u-alice",
        "dm-alice",
        InboundKind::FreeTextSubmitted {
            token,
            text: "  only on Friday ".into(),
        },
    );
    let confirmed = h.engine.handle("chat", submitted).await.expect("the event is stored");
    // The modal closed: the person is told their answer went in.
    assert_eq!(notice(&confirmed), "Answer submitted");
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["only on Friday"]}}})
    );
}

#[tokio::test]
async fn a_force_reply_attached_to_a_question_takes_replies() {
    let h = harness().await;
    let record = h.ask("team", single()).await;
    let force_reply = MessageRef {
        conversation: "group-1".into(),
        message: "force-1".into(),
    };
    h.engine.attach("chat", &record.id, force_reply.clone()).await;
    let mut reply = typed(&record, "e1", "u-alice", "in two weeks", false);
    if let InboundKind::TextReply { reply_to, .. } = &mut reply.kind {
        *reply_to = Some(force_reply);
    }
    h.engine.handle("chat", reply).await.expect("the event is stored");
    assert_eq!(h.ended(&record.id).await.status, QuestionStatus::Answered);
}

#[tokio::test]
async fn skip_by_button_or_word_gives_no_answer() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let reaction = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Skip))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&reaction), "Skipped");
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::Skipped);
    assert_eq!(result(&ended), json!({"status": "no_answer"}));
    assert_eq!(h.summary(1).await, ["Skipped by Alice"]);

    let record = h.ask("alice", two()).await;
    h.engine
        .handle("chat", typed(&record, "e2", "u-alice", "跳过", false))
        .await
        .expect("the event is stored");
    assert_eq!(h.ended(&record.id).await.status, QuestionStatus::Skipped);
}

#[tokio::test]
async fn non_text_and_empty_messages_are_not_answers() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let sticker = event(
        "e1",
        "u-alice",
        "dm-alice",
        InboundKind::NonText {
            message: MessageRef {
                conversation: "dm-alice".into(),
                message: "sticker".into(),
            },
            reply_to: None,
        },
    );
    assert!(
        notice(&h.engine.handle("chat", sticker).await.expect("the event is stored"))
            .starts_with("That isn't an answer")
    );
    assert!(
        notice(
            &h.engine
                .handle("chat", typed(&record, "e2", "u-alice", "   ", true))
                .await
                .expect("the event is stored")
        )
        .starts_with("That isn't an answer")
    );
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
}

#[tokio::test]
async fn questions_expire_at_their_deadline() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    h.clock.advance(Duration::from_secs(59));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
    h.clock.advance(Duration::from_secs(1));
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::Expired);
    assert_eq!(result(&ended), json!({"status": "no_answer"}));
    assert_eq!(h.summary(1).await, ["Expired — no answer"]);
    let late = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(0)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&late), "This question has expired");
}

#[tokio::test]
async fn an_answer_after_the_deadline_loses_to_it_even_before_the_timer_fires() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let record = h.delivered(&record.id).await;
    // The timer is held back (a busy machine): the deadline passes unnoticed.
    let Harness {
        engine,
        clock,
        chat,
        dir,
        stop_timers,
    } = h;
    stop_timers.send(()).ok();
    tokio::time::sleep(Duration::from_millis(20)).await;
    clock.advance(Duration::from_secs(60));
    let late = engine
        .handle("chat", tap(&record, "late", "u-alice", ButtonAction::Choose(1)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&late), "This question has expired");
    let ended = engine.get(&record.id).await.unwrap().unwrap();
    assert_eq!(ended.status, QuestionStatus::Expired, "the deadline won, at once");
    assert_eq!(result(&ended), json!({"status": "no_answer"}));
    // A moment earlier, the same tap would have answered.
    let h = Harness {
        engine,
        clock,
        chat,
        dir,
        stop_timers: tokio::sync::oneshot::channel().0,
    };
    let other = h.ask("alice", single()).await;
    let other = h.delivered(&other.id).await;
    h.clock.advance(Duration::from_millis(59_999));
    let in_time = h
        .engine
        .handle("chat", tap(&other, "in-time", "u-alice", ButtonAction::Choose(1)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&in_time), "Answer submitted");
    assert_eq!(h.status(&other.id).await, QuestionStatus::Answered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_the_store_refused_is_stored_once_it_takes_writes_again() {
    use sqlx::Connection as _;
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    h.delivered(&record.id).await;
    // Another process holds the database's write lock past the deadline.
    let path = h.dir.path().join("askgate.db");
    let mut outside = sqlx::SqliteConnection::connect_with(&sqlx::sqlite::SqliteConnectOptions::new().filename(&path))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut outside).await.unwrap();
    h.clock.advance(Duration::from_secs(60));
    // Storing the expiry waits out the store's busy timeout (5 s), and fails.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    // Tried again within moments, not at the next restart.
    h.clock.advance(Duration::from_secs(2));
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::Expired);
    assert_eq!(result(&ended), json!({"status": "no_answer"}));
}

#[tokio::test]
async fn one_pending_question_per_session_and_no_sub_agents() {
    let h = harness().await;
    let mut ask = question("alice", single());
    ask.session_id = Some("s1".into());
    let first = h.engine.ask(ask.clone()).await.unwrap();
    match h.engine.ask(ask.clone()).await {
        Err(EngineError::QuestionPending { pending }) => assert_eq!(pending, first.id),
        other => panic!("expected question_pending, got {other:?}"),
    }
    h.engine.cancel("agent-1", &first.id).await.unwrap();
    assert!(
        h.engine.ask(ask.clone()).await.is_ok(),
        "allowed again once the first ended"
    );

    ask.session_kind = SessionKind::Subagent;
    ask.session_id = Some("s2".into());
    assert!(matches!(
        h.engine.ask(ask.clone()).await,
        Err(EngineError::SubagentNotAllowed)
    ));
    ask.session_kind = SessionKind::Main;
    ask.to = "nobody".into();
    assert!(matches!(h.engine.ask(ask).await, Err(EngineError::UnknownRecipient(name)) if name == "nobody"));
}

#[tokio::test]
async fn cancel_is_idempotent_and_only_for_the_asking_agent() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    assert!(matches!(
        h.engine.cancel("agent-2", &record.id).await,
        Err(EngineError::NotFound)
    ));
    let cancelled = h.engine.cancel("agent-1", &record.id).await.unwrap();
    assert_eq!(cancelled.status, QuestionStatus::Cancelled);
    assert_eq!(result(&cancelled), json!({"status": "no_answer"}));
    assert_eq!(
        h.engine.cancel("agent-1", &record.id).await.unwrap().status,
        QuestionStatus::Cancelled
    );
    assert_eq!(h.summary(1).await, ["Cancelled"]);
    let late = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(0)))
        .await
        .expect("the event is stored");
    assert_eq!(notice(&late), "This question is closed");
}

#[tokio::test]
async fn aborting_a_run_cancels_all_of_its_pending_questions() {
    let h = harness().await;
    let mut ids = Vec::new();
    for (session, run) in [("a", "run-1"), ("b", "run-1"), ("c", "run-2")] {
        let mut ask = question("alice", single());
        ask.session_id = Some(session.into());
        ask.run_id = Some(run.into());
        ids.push(h.engine.ask(ask).await.unwrap().id);
    }
    let mut cancelled = h.engine.abort_run("agent-1", "run-1").await.unwrap();
    cancelled.sort();
    let mut expected = vec![ids[0].clone(), ids[1].clone()];
    expected.sort();
    assert_eq!(cancelled, expected);
    assert_eq!(h.status(&ids[0]).await, QuestionStatus::Cancelled);
    assert_eq!(h.status(&ids[2]).await, QuestionStatus::Pending);
    assert!(
        h.engine.abort_run("agent-2", "run-2").await.unwrap().is_empty(),
        "another agent's run is not touched"
    );
    assert_eq!(
        h.engine
            .get(&ids[0])
            .await
            .unwrap()
            .unwrap()
            .resolution
            .unwrap()
            .reason
            .as_deref(),
        Some("run aborted")
    );
}

#[tokio::test]
async fn a_refused_delivery_fails_at_once() {
    let h = harness().await;
    h.chat.fail_next([ChannelError::Rejected {
        reason: "chat not found".into(),
    }]);
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    let ended = h.ended(&record.id).await;
    assert_eq!(ended.status, QuestionStatus::DeliveryFailed);
    assert_eq!(result(&ended), json!({"status": "delivery_failed"}));
    assert_eq!(
        ended.resolution.unwrap().reason.as_deref(),
        Some("the platform refused: chat not found")
    );
}

#[tokio::test]
async fn passing_delivery_failures_are_retried() {
    let h = harness().await;
    h.chat.fail_next([
        ChannelError::RateLimited {
            retry_after: Duration::from_secs(3),
        },
        ChannelError::Unavailable { reason: "502".into() },
    ]);
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    // The retries wait on the engine's clock: move it along until delivered.
    let delivered = tokio::time::timeout(PATIENCE, async {
        loop {
            h.clock.advance(Duration::from_millis(500));
            tokio::time::sleep(Duration::from_millis(5)).await;
            if h.engine.get(&record.id).await.unwrap().unwrap().delivery().is_some() {
                break;
            }
        }
    })
    .await;
    assert!(delivered.is_ok(), "delivered after the retries");
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
    assert_eq!(h.chat.deliveries().len(), 1);
}

/// A platform out of reach for longer than a few retries (down when
/// askgate started, an outage): the delivery is tried again until it gets
/// through, and the question stays pending meanwhile, never
/// `delivery_failed` for a failure that passes.
#[tokio::test]
async fn a_platform_down_for_many_retries_gets_the_prompt_once_it_answers() {
    let h = harness().await;
    let down = || ChannelError::Unavailable {
        reason: "error sending request: Connection refused".into(),
    };
    h.chat.fail_next(std::iter::repeat_with(down).take(12));
    let mut ask = question("alice", single());
    ask.request.timeout_seconds = 3600;
    let record = h.engine.ask(ask).await.unwrap();
    let delivered = tokio::time::timeout(PATIENCE, async {
        loop {
            h.clock.advance(Duration::from_secs(4));
            tokio::time::sleep(Duration::from_millis(5)).await;
            let now = h.engine.get(&record.id).await.unwrap().unwrap();
            assert_eq!(now.status, QuestionStatus::Pending, "{:?}", now.resolution);
            if now.delivery().is_some() {
                break;
            }
        }
    })
    .await;
    assert!(delivered.is_ok(), "delivered once the platform answered");
    assert_eq!(h.chat.deliveries().len(), 1);
}

#[tokio::test]
async fn pending_questions_survive_a_restart() {
    let h = harness().await;
    let long = {
        let mut request = single();
        request.timeout_seconds = 600;
        h.ask("alice", request).await
    };
    let short = {
        let mut ask = question("alice", single());
        ask.session_id = Some("s2".into());
        h.engine.ask(ask).await.unwrap()
    };
    let stopped = h.stop();

    // Down for two minutes: the 60 s question expired meanwhile, the 600 s one did not.
    stopped.clock.advance(Duration::from_secs(120));
    let h = stopped.start_again().await;
    assert_eq!(h.status(&short.id).await, QuestionStatus::Expired);
    let pending = h.engine.get(&long.id).await.unwrap().unwrap();
    assert_eq!(
        (pending.status, pending.expires_at),
        (QuestionStatus::Pending, START + 600_000)
    );
    // It can still be answered through the new engine, and its timer still runs.
    h.engine
        .handle("chat", tap(&pending, "e1", "u-alice", ButtonAction::Choose(2)))
        .await
        .expect("the event is stored");
    assert_eq!(
        result(&h.ended(&long.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Canary"]}}})
    );
}

#[tokio::test]
async fn timers_resume_after_a_restart() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let h = h.stop().start_again().await;
    h.clock.advance(Duration::from_secs(61));
    assert_eq!(h.ended(&record.id).await.status, QuestionStatus::Expired);
}

#[tokio::test]
async fn wait_returns_the_question_as_it_is_when_time_is_up() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let waiting = {
        let engine = h.engine.clone();
        let id = record.id.clone();
        tokio::spawn(async move { engine.wait(&id, Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    h.clock.advance(Duration::from_secs(5));
    let waited = tokio::time::timeout(PATIENCE, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(waited.status, QuestionStatus::Pending);
    assert!(matches!(
        h.engine.wait(&QuestionId::parse("nope").unwrap(), Duration::ZERO).await,
        Err(EngineError::NotFound)
    ));
}

/// The wait that follows an ask starts from the question as the engine
/// wrote it: it does not read the row back. Shown by a change made behind
/// the engine's back (another connection), which the wait does not see
/// until its time is up and it reads the question as it is then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_after_an_ask_starts_from_the_question_as_written() {
    use sqlx::Connection as _;
    let h = harness().await;
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    let path = h.dir.path().join("askgate.db");
    let mut outside = sqlx::SqliteConnection::connect_with(&sqlx::sqlite::SqliteConnectOptions::new().filename(&path))
        .await
        .unwrap();
    sqlx::query("UPDATE questions SET status = 'cancelled' WHERE id = ?")
        .bind(record.id.as_str())
        .execute(&mut outside)
        .await
        .unwrap();
    outside.close().await.unwrap();
    let waiting = {
        let engine = h.engine.clone();
        let id = record.id.clone();
        tokio::spawn(async move { engine.wait(&id, Duration::from_secs(5)).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "the wait read the question back");
    h.clock.advance(Duration::from_secs(5));
    let waited = tokio::time::timeout(PATIENCE, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(
        waited.status,
        QuestionStatus::Cancelled,
        "read as it is once time is up"
    );
    // A second wait reads it: the record served one wait.
    let again = h.engine.wait(&record.id, Duration::from_secs(5)).await.unwrap();
    assert_eq!(again.status, QuestionStatus::Cancelled);
}

/// A question that ended here before its agent began to wait: the wait
/// reads it and returns at once (the record kept of its ask is dropped by
/// its end; the clock never moves here).
#[tokio::test]
async fn a_wait_begun_after_the_question_ended_here_returns_at_once() {
    let h = harness().await;
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    let cancelled = h.engine.cancel("agent-1", &record.id).await.unwrap();
    let waited = tokio::time::timeout(PATIENCE, h.engine.wait(&record.id, Duration::from_secs(30)))
        .await
        .expect("the wait returns at once")
        .unwrap();
    assert_eq!(waited.status, QuestionStatus::Cancelled);
    assert_eq!(waited.resolution, cancelled.resolution);
    assert_eq!(h.engine.waiting(), 0);
}

/// An agent waiting for its question is handed the record its resolution
/// stored (the same as a read of it), and only the agent that asked may wait.
#[tokio::test]
async fn a_waiting_agent_gets_the_ended_record_and_only_its_own_question() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    assert!(matches!(
        h.engine
            .wait_for_agent("someone-else", &record.id, Duration::from_secs(5))
            .await,
        Err(EngineError::NotFound)
    ));
    let unknown = QuestionId::parse("01HZX000000000000000000000").unwrap();
    assert!(matches!(
        h.engine.wait_for_agent("agent-1", &unknown, Duration::ZERO).await,
        Err(EngineError::NotFound)
    ));
    // Neither refused wait left an entry behind.
    assert_eq!(h.engine.waiting(), 0);
    let waiting = {
        let engine = h.engine.clone();
        let id = record.id.clone();
        tokio::spawn(async move { engine.wait_for_agent("agent-1", &id, Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cancelled = h.engine.cancel("agent-1", &record.id).await.unwrap();
    let waited = tokio::time::timeout(PATIENCE, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(waited.status, QuestionStatus::Cancelled);
    assert_eq!(waited, cancelled);
    // As stored (its copies may have been edited into the summary since).
    let stored = h.engine.get(&record.id).await.unwrap().unwrap();
    assert_eq!((stored.status, &stored.resolution), (waited.status, &waited.resolution));
    assert_eq!(h.engine.waiting(), 0, "the ended question's entry is gone");
}

#[tokio::test]
async fn a_message_left_unedited_by_a_crash_is_edited_on_the_next_start() {
    let h = harness().await;
    let record = h.ask("alice", single()).await;
    // The process stopped right after storing the answer, before editing the message.
    let mut answers = askgate_core::Answers::new();
    let production = askgate_core::AnswerItem::Option {
        index: 1,
        label: "Production".into(),
    };
    answers.set(&record.request, "deploy", vec![production]);
    let resolution = askgate_store::Resolution {
        status: QuestionStatus::Answered,
        at: START,
        by: Some(UserRef {
            id: "u-alice".into(),
            display_name: "Alice".into(),
        }),
        answers: Some(answers),
        reason: None,
        via: Some("chat".into()),
        surface: Some("chat".into()),
    };
    askgate_store::Store::resolve(h.engine.store().as_ref(), &record.id, &resolution)
        .await
        .unwrap()
        .unwrap();
    let stopped = h.stop();
    assert_eq!(stopped.chat.summaries(), Vec::<String>::new());
    let h = stopped.start_again().await;
    assert_eq!(h.summary(1).await, ["Answered by Alice: Production"]);
    // Once edited it is finished: a further start edits nothing again.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let h = h.stop().start_again().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.chat.summaries().len(), 1);
}

#[tokio::test]
async fn a_channel_cursor_is_kept_across_restarts() {
    let h = harness().await;
    assert_eq!(h.engine.cursor("chat").await, None);
    h.engine.save_cursor("chat", "41").await;
    h.engine.save_cursor("chat", "42").await;
    let h = h.stop().start_again().await;
    assert_eq!(h.engine.cursor("chat").await.as_deref(), Some("42"));
    assert_eq!(h.engine.cursor("other").await, None);
}

#[tokio::test]
async fn direct_answers_are_checked_against_the_question() {
    let h = harness().await;
    let record = h.ask("alice", two()).await;
    let item = |id: &str, options: Vec<usize>, text: Option<&str>| DirectItem {
        id: id.into(),
        options,
        text: text.map(str::to_owned),
    };
    let bad = [
        (
            vec![item("deploy", vec![5], None), item("notify", vec![0], None)],
            "answers.deploy.options",
        ),
        (
            vec![item("deploy", vec![0, 1], None), item("notify", vec![0], None)],
            "answers.deploy",
        ),
        (
            vec![item("deploy", vec![], Some("  ")), item("notify", vec![0], None)],
            "answers.deploy",
        ),
        (vec![item("deploy", vec![0], None)], "answers.notify"),
        (
            vec![
                item("deploy", vec![0], None),
                item("notify", vec![0], None),
                item("when", vec![0], None),
            ],
            "answers.when",
        ),
    ];
    for (items, expected) in bad {
        match h.engine.submit("alice", &record.id, DirectAnswer::Answers(items)).await {
            Err(EngineError::InvalidAnswer { path, .. }) => assert_eq!(path, expected),
            other => panic!("expected invalid_answer at {expected}, got {other:?}"),
        }
    }
    assert!(matches!(
        h.engine.submit("team", &record.id, DirectAnswer::Skip).await,
        Err(EngineError::NotFound)
    ));
    let good = vec![
        item("deploy", vec![], Some("next week")),
        item("notify", vec![2, 0, 0], Some("legal")),
    ];
    let Submitted::Resolved(resolved) = h
        .engine
        .submit("alice", &record.id, DirectAnswer::Answers(good))
        .await
        .unwrap()
    else {
        panic!("resolved expected");
    };
    assert_eq!(
        result(&resolved),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["next week"], "notify": ["Team", "Nobody", "legal"]}}})
    );
    // Recorded as the person whose page it was.
    let by = resolved.resolution.as_ref().and_then(|r| r.by.clone()).unwrap();
    assert_eq!((by.id.as_str(), by.display_name.as_str()), ("web:alice", "Alice"));
    assert!(matches!(
        h.engine.submit("alice", &record.id, DirectAnswer::Skip).await.unwrap(),
        Submitted::AlreadyEnded(_)
    ));
}

/// Start-up reads pending questions a page at a time: more than one page of
/// them are all taken up — the expired ones expired, the others timed and
/// delivered — and the count comes from the store.
#[tokio::test]
async fn more_pending_questions_than_a_start_up_page_are_all_taken_up() {
    const EACH: usize = 1_100;
    let h = harness().await;
    let template = h.ask("alice", single()).await;
    let store = h.engine.store().clone();
    for index in 0..2 * EACH {
        let expired = index % 2 == 0;
        let record = askgate_store::QuestionRecord {
            id: QuestionId::parse(&format!("01JSTARTPAGE{index:08}")).unwrap(),
            expires_at: if expired { START - 1 } else { START + 600_000 },
            surfaces: vec![askgate_store::Surface::sending("chat", "chat", "dm-alice")],
            ..template.clone()
        };
        askgate_store::Store::insert(store.as_ref(), &record).await.unwrap();
    }
    let stopped = h.stop();
    let delivered_before = stopped.chat.deliveries().len();
    let h = stopped.start_again().await;
    // The template and half the others are still pending; the rest expired.
    assert_eq!(
        askgate_store::Store::count_pending(h.engine.store().as_ref())
            .await
            .unwrap(),
        EACH as u64 + 1
    );
    // Every undelivered pending one is delivered now.
    tokio::time::timeout(PATIENCE, async {
        while h.chat.deliveries().len() < delivered_before + EACH {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every pending question delivered");
    // And timed: all of them expire when their time comes.
    h.clock.advance(Duration::from_secs(601));
    tokio::time::timeout(PATIENCE, async {
        while askgate_store::Store::count_pending(h.engine.store().as_ref())
            .await
            .unwrap()
            > 0
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every pending question expired");
}

/// A channel that sends nothing (askgate's own page) costs no commit of its
/// own: the question is stored delivered and finished in its one insert,
/// the channel is never called, and neither an answer nor a restart takes
/// it up to deliver or edit.
#[tokio::test]
async fn a_channel_that_sends_nothing_is_delivered_and_finished_with_the_question() {
    let chat = askgate_testkit::FakeChannel::sending_nothing("chat");
    let h = support::start(tempfile::tempdir().unwrap(), askgate_engine::Clock::manual(START), chat).await;
    let accepted = h.engine.ask(question("alice", single())).await.unwrap();
    let destination = Destination {
        conversation: "dm-alice".into(),
        thread: None,
    };
    let in_place = Delivery::in_place(&accepted.id, &destination);
    assert_eq!(accepted.delivery(), Some(&in_place), "delivered as it is accepted");
    assert_eq!(
        h.engine.get(&accepted.id).await.unwrap().unwrap().delivery(),
        Some(&in_place)
    );
    h.engine
        .handle("chat", tap(&accepted, "e1", "u-alice", ButtonAction::Choose(0)))
        .await
        .expect("the event is stored");
    assert_eq!(h.ended(&accepted.id).await.status, QuestionStatus::Answered);
    let store = h.engine.store().clone();
    assert!(
        askgate_store::Store::unfinished(store.as_ref())
            .await
            .unwrap()
            .is_empty(),
        "stored finished: nothing to edit"
    );
    let h = h.stop().start_again().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(h.chat.calls().is_empty(), "never called: {:?}", h.chat.calls());
}

/// A reply to Other…'s force-reply that arrives before askgate attached the
/// force-reply to its question (the send's answer still on its way) waits a
/// moment for the attach, instead of being taken for a reply to nothing.
#[tokio::test]
async fn a_reply_that_outruns_its_force_reply_s_attach_is_still_read() {
    let h = harness().await;
    let record = h.ask("team", single()).await;
    let opened = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Other))
        .await
        .expect("the event is stored");
    assert!(matches!(opened, Reaction::AskFreeText { .. }), "{opened:?}");
    let force_reply = MessageRef {
        conversation: "group-1".into(),
        message: "force-1".into(),
    };
    let mut reply = typed(&record, "e2", "u-alice", "in two weeks", false);
    if let InboundKind::TextReply { reply_to, .. } = &mut reply.kind {
        *reply_to = Some(force_reply.clone());
    }
    let replying = {
        let engine = h.engine.clone();
        tokio::spawn(async move { engine.handle("chat", reply).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.engine.attach("chat", &record.id, force_reply).await;
    replying.await.unwrap().expect("the event is stored");
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["in two weeks"]}}})
    );
}

/// An answer whose caller goes away once the store has it (an HTTP client
/// that disconnects drops its handler mid-call) still ends the question
/// everywhere: the waiting agent is woken and the message edited into its
/// summary, at once, with no sweep to catch up (the clock does not move).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_caller_goes_away_mid_call_still_wakes_the_agent_and_edits_the_message() {
    use std::future::Future as _;

    let h = harness().await;
    let record = h.ask("alice", single()).await;
    let waiting = wait_in_background(&h.engine, &record.id);
    until_waiting(&h.engine).await;

    // Polled once (it reads the question and hands the write over), then
    // never again, and dropped once the store has the answer.
    let mut answering = Box::pin(h.engine.submit("alice", &record.id, DirectAnswer::Skip));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(answering.as_mut().poll(&mut context).is_pending());
    until_status(&h.engine, &record.id, QuestionStatus::Skipped).await;
    drop(answering);

    let ended = ended_wait(waiting).await;
    assert_eq!(ended.status, QuestionStatus::Skipped);
    assert_eq!(h.summary(1).await.len(), 1, "the message is edited into its summary");
}
