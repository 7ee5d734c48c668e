//! The store suite: every rule of the `Store` trait, run on both stores
//! (`on_sqlite::…` on a real file in a temporary directory, `on_postgres::…`
//! in a schema of its own on the test PostgreSQL).
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use askgate_core::channel::{Delivery, UserRef};
use askgate_core::{AnswerItem, Answers, Locale};
use askgate_store::{
    ProgressSaved, QuestionRecord, QuestionStatus, Resolution, SqliteStore, Step, StepKind, Store, StoreError, Surface,
    SurfaceState,
};
use support::*;

on_both_stores! {
    a_record_with_every_field_set_reads_back_equal,
    a_minimal_pending_record_reads_back_equal,
    a_session_holds_one_pending_question_at_a_time,
    concurrent_asks_in_one_session_let_exactly_one_in,
    an_id_is_stored_once,
    the_first_resolution_wins,
    ended_among_reads_each_ended_question_named_once,
    an_answer_at_or_after_the_deadline_does_not_count_but_expiry_does,
    twenty_concurrent_resolutions_resolve_once,
    progress_is_saved_only_while_pending_and_unchanged_since_it_was_read,
    delivered_messages_lead_back_to_their_question,
    a_delivery_is_recorded_after_the_question_ended_too,
    messages_of_an_unknown_question_are_refused,
    the_newest_pending_question_of_a_conversation_is_found,
    pending_lists_are_oldest_first_in_pages_and_ended_ones_latest_first,
    pending_in_run_lists_one_agent_run_oldest_first,
    an_event_is_new_once,
    settings_round_trip_and_overwrite,
    everything_survives_reopening_the_store,
    a_row_that_cannot_be_read_is_reported_not_panicked_on,
    a_foreign_question_id_is_reported_not_panicked_on,
    #[cfg(debug_assertions)]
    #[should_panic(expected = "resolved with status pending")]
    a_pending_resolution_fails_a_debug_assertion,
    #[cfg(not(debug_assertions))]
    a_pending_resolution_changes_nothing,
    a_recent_undelivered_question_is_found_by_channel_and_time,
    pending_deadlines_come_in_pages_in_deadline_order,
    prune_deletes_what_ended_before_the_cutoff_in_bounded_steps_and_never_a_pending_question,
    expire_due_expires_what_is_due_in_deadline_order_and_nothing_else,
    undelivered_lists_pending_prompts_not_sent_in_full_asked_before_a_time,
}

async fn a_record_with_every_field_set_reads_back_equal(fresh: Fresh) {
    let store = fresh.store();
    let request = request();
    let mut progress = Answers::new();
    progress.set(
        &request,
        "deploy_target",
        vec![AnswerItem::FreeText {
            text: "the canary".to_owned(),
        }],
    );
    let record = QuestionRecord {
        id: id("01JABCDEF_xyz-9"),
        status: QuestionStatus::Answered,
        agent: "build-bot".to_owned(),
        session_id: Some("session-1".to_owned()),
        run_id: Some("run-7".to_owned()),
        recipient: "alice".to_owned(),
        surfaces: vec![
            Surface {
                channel: CHANNEL.to_owned(),
                kind: "telegram".to_owned(),
                conversation: CONVERSATION.to_owned(),
                state: SurfaceState::Delivered,
                delivery: Some(Delivery::new(vec![
                    message(CONVERSATION, "17"),
                    message(CONVERSATION, "18"),
                ])),
                reason: None,
                finished: true,
                recipient: None,
            },
            Surface {
                reason: Some("the bot was blocked".to_owned()),
                ..Surface::sending("slack", "slack", "U123")
            },
            Surface::in_place(
                "web",
                "web",
                Delivery::in_place(
                    &id("01JABCDEF_xyz-9"),
                    &askgate_core::channel::Destination {
                        conversation: "alice".to_owned(),
                        thread: None,
                    },
                ),
            ),
        ],
        locale: Locale::ZhCn,
        request: request.clone(),
        created_at: 1_700_000_000_000,
        expires_at: 1_700_000_600_000,
        progress,
        resolution: Some(Resolution {
            status: QuestionStatus::Answered,
            at: 1_700_000_123_456,
            by: Some(UserRef {
                id: "99".to_owned(),
                display_name: "Alice 李".to_owned(),
            }),
            answers: Some(answers(&request)),
            reason: Some("answered in the thread".to_owned()),
            via: Some("telegram".to_owned()),
            surface: Some("telegram".to_owned()),
        }),
        steps: vec![
            Step {
                held_from: Some(1_700_000_200_000),
                done: Some(1_700_000_300_000),
                ..Step::planned(StepKind::Remind, 1_700_000_300_000)
            },
            Step::planned(StepKind::Escalate, 1_700_000_400_000).to("lead"),
        ],
    };

    store.insert(&record).await.unwrap();

    assert_eq!(store.get(&record.id).await.unwrap(), Some(record));
    assert_eq!(store.get(&id("nobody")).await.unwrap(), None);
}

async fn a_minimal_pending_record_reads_back_equal(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1000);

    store.insert(&record).await.unwrap();

    assert_eq!(store.get(&record.id).await.unwrap(), Some(record));
}

async fn a_session_holds_one_pending_question_at_a_time(fresh: Fresh) {
    let store = fresh.store();
    let first = in_session(question("q1", 1), "build-bot", Some("s1"));
    store.insert(&first).await.unwrap();

    let same = in_session(question("q2", 2), "build-bot", Some("s1"));
    match store.insert(&same).await {
        Err(StoreError::SessionBusy { session, pending }) => {
            assert_eq!(session, "s1");
            assert_eq!(pending, first.id);
        }
        other => panic!("expected SessionBusy, got {other:?}"),
    }
    assert_eq!(
        store.get(&same.id).await.unwrap(),
        None,
        "a refused insert leaves nothing behind"
    );

    // The rule is per agent and per session, and a question without a session is free.
    store
        .insert(&in_session(question("q3", 3), "deploy-bot", Some("s1")))
        .await
        .unwrap();
    store
        .insert(&in_session(question("q4", 4), "build-bot", Some("s2")))
        .await
        .unwrap();
    store
        .insert(&in_session(question("q5", 5), "build-bot", None))
        .await
        .unwrap();
    store
        .insert(&in_session(question("q6", 6), "build-bot", None))
        .await
        .unwrap();

    // Once the first has ended, the session may ask again.
    store
        .resolve(&first.id, &ended(QuestionStatus::Skipped, 10, "skipped"))
        .await
        .unwrap()
        .unwrap();
    store
        .insert(&in_session(question("q7", 11), "build-bot", Some("s1")))
        .await
        .unwrap();
}

async fn concurrent_asks_in_one_session_let_exactly_one_in(fresh: Fresh) {
    let store = fresh.store();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..10 {
        let store = store.clone();
        tasks.spawn(async move {
            let record = in_session(question(&format!("q{n}"), n), "build-bot", Some("s1"));
            (record.id.clone(), store.insert(&record).await)
        });
    }
    let mut winners = Vec::new();
    let mut busy = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            (id, Ok(())) => winners.push(id),
            (_, Err(StoreError::SessionBusy { pending, .. })) => busy.push(pending),
            (_, Err(other)) => panic!("unexpected error {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(busy.len(), 9);
    assert!(busy.iter().all(|pending| *pending == winners[0]));
    assert_eq!(ids(&store.pending().await.unwrap()), [winners[0].as_str()]);
}

async fn an_id_is_stored_once(fresh: Fresh) {
    let store = fresh.store();
    let first = in_session(question("q1", 1), "build-bot", Some("s1"));
    store.insert(&first).await.unwrap();

    // Another session, so that only the id collides.
    let mut again = in_session(question("q1", 2), "deploy-bot", Some("s9"));
    "bob".clone_into(&mut again.recipient);
    match store.insert(&again).await {
        Err(StoreError::Duplicate(duplicate)) => assert_eq!(duplicate, first.id),
        other => panic!("expected Duplicate, got {other:?}"),
    }
    // Both the id and the session collide: the id is the reported problem.
    match store.insert(&first).await {
        Err(StoreError::Duplicate(duplicate)) => assert_eq!(duplicate, first.id),
        other => panic!("expected Duplicate, got {other:?}"),
    }
    assert_eq!(store.get(&first.id).await.unwrap(), Some(first));
}

async fn the_first_resolution_wins(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let request = request();
    let answered = Resolution {
        status: QuestionStatus::Answered,
        at: 5000,
        by: Some(UserRef {
            id: "99".to_owned(),
            display_name: "Alice".to_owned(),
        }),
        answers: Some(answers(&request)),
        reason: None,
        via: Some("telegram".to_owned()),
        surface: Some("telegram".to_owned()),
    };

    let resolved = store.resolve(&record.id, &answered).await.unwrap().unwrap();
    assert_eq!(resolved.status, QuestionStatus::Answered);
    assert_eq!(resolved.resolution.as_ref(), Some(&answered));
    assert_eq!(resolved.created_at, record.created_at);
    assert_eq!(resolved.expires_at, record.expires_at);

    let late = ended(QuestionStatus::Expired, 9000, "expired");
    assert_eq!(store.resolve(&record.id, &late).await.unwrap(), None);

    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored, resolved);
    assert!(store.pending().await.unwrap().is_empty());
    assert_eq!(store.resolve(&id("nobody"), &late).await.unwrap(), None);
}

/// `ended_among` gives the named questions that have ended, each once
/// however often it is named, and nothing for a pending or unknown one.
async fn ended_among_reads_each_ended_question_named_once(fresh: Fresh) {
    let store = fresh.store();
    for name in ["q1", "q2", "q3"] {
        store.insert(&question(name, 1)).await.unwrap();
    }
    for name in ["q3", "q1"] {
        let skipped = ended(QuestionStatus::Skipped, 50, "skipped");
        store.resolve(&id(name), &skipped).await.unwrap().unwrap();
    }
    let named = [id("q3"), id("q2"), id("q1"), id("q3"), id("nobody"), id("q1")];
    let mut ended = store.ended_among(&named).await.unwrap();
    ended.sort_by(|a, b| a.id.cmp(&b.id));
    let ended: Vec<(&str, QuestionStatus)> = ended.iter().map(|record| (record.id.as_str(), record.status)).collect();
    assert_eq!(
        ended,
        [("q1", QuestionStatus::Skipped), ("q3", QuestionStatus::Skipped)]
    );
    assert!(store.ended_among(&[]).await.unwrap().is_empty());
}

async fn an_answer_at_or_after_the_deadline_does_not_count_but_expiry_does(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1000);
    let due = record.expires_at;
    store.insert(&record).await.unwrap();
    // A person's answer or skip at the deadline (or later) changes nothing,
    // even though the timer has not expired the question yet.
    for status in [QuestionStatus::Answered, QuestionStatus::Skipped] {
        for at in [due, due + 1] {
            assert_eq!(
                store.resolve(&record.id, &ended(status, at, "late")).await.unwrap(),
                None
            );
        }
    }
    assert_eq!(
        store.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
    // The deadline itself, a cancellation or a failed delivery still end it.
    let expired = store
        .resolve(&record.id, &ended(QuestionStatus::Expired, due, "expired"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(expired.status, QuestionStatus::Expired);
    // A moment before the deadline, an answer counts.
    let other = question("q2", 2000);
    store.insert(&other).await.unwrap();
    let answered = store
        .resolve(
            &other.id,
            &ended(QuestionStatus::Answered, other.expires_at - 1, "in time"),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answered.status, QuestionStatus::Answered);
}

async fn twenty_concurrent_resolutions_resolve_once(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();

    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..20 {
        let store = store.clone();
        let question = record.id.clone();
        tasks.spawn(async move {
            let resolution = ended(QuestionStatus::Cancelled, 100 + n, &format!("task {n}"));
            store.resolve(&question, &resolution).await.unwrap()
        });
    }
    let mut winners = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        winners.extend(joined.unwrap());
    }

    assert_eq!(winners.len(), 1, "{winners:?}");
    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored, winners[0]);
}

async fn progress_is_saved_only_while_pending_and_unchanged_since_it_was_read(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let request = request();
    let mut progress = Answers::new();
    progress.set(
        &request,
        "notify",
        vec![AnswerItem::Option {
            index: 2,
            label: "Ops".to_owned(),
        }],
    );

    let none = Answers::new();
    assert_eq!(
        store.save_progress(&record.id, &none, &progress).await.unwrap(),
        ProgressSaved::Saved
    );
    assert_eq!(store.get(&record.id).await.unwrap().unwrap().progress, progress);

    // A second partial reply read before the first was saved: refused, so
    // that the caller reads again instead of overwriting the first.
    let mut other = Answers::new();
    other.set(
        &request,
        "deploy_target",
        vec![AnswerItem::FreeText {
            text: "later".to_owned(),
        }],
    );
    assert_eq!(
        store.save_progress(&record.id, &none, &other).await.unwrap(),
        ProgressSaved::Changed
    );
    assert_eq!(store.get(&record.id).await.unwrap().unwrap().progress, progress);

    store
        .resolve(&record.id, &ended(QuestionStatus::Expired, 700_000, "expired"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .save_progress(&record.id, &progress, &answers(&request))
            .await
            .unwrap(),
        ProgressSaved::Ended
    );
    assert_eq!(store.get(&record.id).await.unwrap().unwrap().progress, progress);
    assert_eq!(
        store.save_progress(&id("nobody"), &none, &progress).await.unwrap(),
        ProgressSaved::Ended
    );
}

async fn delivered_messages_lead_back_to_their_question(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let delivery = Delivery::new(vec![message(CONVERSATION, "17"), message(CONVERSATION, "18")]);

    assert!(
        store.set_delivery(&record.id, CHANNEL, &delivery).await.unwrap(),
        "recorded while pending: whoever ends it edits the message"
    );

    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored.delivery(), Some(&delivery));
    assert_eq!(stored.surfaces[0].state, SurfaceState::Delivered);
    for number in ["17", "18"] {
        assert_eq!(
            store
                .question_for_message(CHANNEL, &message(CONVERSATION, number))
                .await
                .unwrap(),
            Some(record.id.clone())
        );
    }
    // Messages are indexed on the question's channel, and by conversation.
    assert_eq!(
        store
            .question_for_message("discord", &message(CONVERSATION, "17"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .question_for_message(CHANNEL, &message("other", "17"))
            .await
            .unwrap(),
        None
    );
    let force_reply = message(CONVERSATION, "19");
    assert_eq!(store.question_for_message(CHANNEL, &force_reply).await.unwrap(), None);

    store.attach_message(&record.id, CHANNEL, &force_reply).await.unwrap();
    assert_eq!(
        store.question_for_message(CHANNEL, &force_reply).await.unwrap(),
        Some(record.id.clone())
    );
}

async fn a_delivery_is_recorded_after_the_question_ended_too(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    store
        .resolve(
            &record.id,
            &ended(QuestionStatus::Cancelled, 2, "cancelled by the agent"),
        )
        .await
        .unwrap()
        .unwrap();
    let delivery = Delivery::new(vec![message(CONVERSATION, "17")]);

    assert!(
        !store.set_delivery(&record.id, CHANNEL, &delivery).await.unwrap(),
        "ended before it was recorded: the caller edits the message"
    );

    let stored = store.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored.delivery(), Some(&delivery));
    assert_eq!(stored.status, QuestionStatus::Cancelled);
}

async fn messages_of_an_unknown_question_are_refused(fresh: Fresh) {
    let store = fresh.store();
    let nobody = id("nobody");
    let delivery = Delivery::new(vec![message(CONVERSATION, "17")]);

    let refused = store.set_delivery(&nobody, CHANNEL, &delivery).await;
    assert!(matches!(refused, Err(StoreError::UnknownQuestion(_))), "{refused:?}");
    let refused = store
        .attach_message(&nobody, CHANNEL, &message(CONVERSATION, "17"))
        .await;
    assert!(matches!(refused, Err(StoreError::UnknownQuestion(_))), "{refused:?}");
    assert_eq!(
        store
            .question_for_message(CHANNEL, &message(CONVERSATION, "17"))
            .await
            .unwrap(),
        None
    );
}

async fn the_newest_pending_question_of_a_conversation_is_found(fresh: Fresh) {
    let store = fresh.store();
    let older = question("older", 1000);
    let newer = question("newer", 2000);
    let newest_but_ended = question("ended", 3000);
    let elsewhere = question("elsewhere", 4000);
    let mut other_channel = question("discord", 5000);
    other_channel.surfaces = vec![Surface::sending("discord", "discord", CONVERSATION)];
    let not_delivered = question("on-its-way", 6000);
    // Inserted out of order: created_at decides, not insertion. A question
    // is in a conversation once it has a message there.
    for (record, channel, conversation) in [
        (&newer, CHANNEL, CONVERSATION),
        (&newest_but_ended, CHANNEL, CONVERSATION),
        (&older, CHANNEL, CONVERSATION),
        (&elsewhere, CHANNEL, "other"),
        (&other_channel, "discord", CONVERSATION),
    ] {
        store.insert(record).await.unwrap();
        let delivery = Delivery::new(vec![message(conversation, record.id.as_str())]);
        store.set_delivery(&record.id, channel, &delivery).await.unwrap();
    }
    store.insert(&not_delivered).await.unwrap();
    store
        .resolve(&newest_but_ended.id, &ended(QuestionStatus::Expired, 3500, "expired"))
        .await
        .unwrap()
        .unwrap();

    let found = store
        .newest_pending_in_conversation(CHANNEL, CONVERSATION)
        .await
        .unwrap();
    assert_eq!(found, Some(newer.id.clone()));

    store
        .resolve(&newer.id, &ended(QuestionStatus::Skipped, 6000, "skipped"))
        .await
        .unwrap()
        .unwrap();
    let found = store
        .newest_pending_in_conversation(CHANNEL, CONVERSATION)
        .await
        .unwrap();
    assert_eq!(found, Some(older.id.clone()));

    store
        .resolve(&older.id, &ended(QuestionStatus::Skipped, 6001, "skipped"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .newest_pending_in_conversation(CHANNEL, CONVERSATION)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.newest_pending_in_conversation(CHANNEL, "nowhere").await.unwrap(),
        None
    );
}

async fn pending_lists_are_oldest_first_in_pages_and_ended_ones_latest_first(fresh: Fresh) {
    let store = fresh.store();
    let mut for_bob = question("bob1", 1500);
    "bob".clone_into(&mut for_bob.recipient);
    for record in [
        question("a3", 3000),
        question("a1", 1000),
        for_bob,
        question("a2", 2000),
        question("a4", 4000),
    ] {
        store.insert(&record).await.unwrap();
    }
    store
        .resolve(&id("a2"), &ended(QuestionStatus::Expired, 5000, "expired"))
        .await
        .unwrap()
        .unwrap();

    assert_eq!(ids(&store.pending().await.unwrap()), ["a1", "bob1", "a3", "a4"]);
    let page = |recipient: &'static str, after: Option<&'static str>, limit: u32| {
        let store = store.clone();
        async move {
            let after = after.map(id);
            let page = store
                .pending_for_recipients(&[recipient.to_owned()], after.as_ref(), limit)
                .await
                .unwrap();
            page.into_iter().map(|record| record.id.to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(page("alice", None, 10).await, ["a1", "a3", "a4"]);
    assert_eq!(page("bob", None, 10).await, ["bob1"]);
    assert!(page("carol", None, 10).await.is_empty());
    // In pages: after the last one shown, and from the start when the
    // question named is unknown.
    assert_eq!(page("alice", None, 2).await, ["a1", "a3"]);
    assert_eq!(page("alice", Some("a3"), 2).await, ["a4"]);
    assert!(page("alice", Some("a4"), 2).await.is_empty());
    assert_eq!(page("alice", Some("zz"), 1).await, ["a1"]);
    assert_eq!(store.count_pending_for_recipient("alice").await.unwrap(), 3);
    assert_eq!(store.count_pending_for_recipient("carol").await.unwrap(), 0);
    // Several recipients' (a person's page: theirs and their groups'): one
    // list in the same order, paged alike.
    let both = |after: Option<&'static str>, limit: u32| {
        let store = store.clone();
        async move {
            let after = after.map(id);
            let names = ["alice".to_owned(), "bob".to_owned(), "carol".to_owned()];
            let page = store
                .pending_for_recipients(&names, after.as_ref(), limit)
                .await
                .unwrap();
            page.into_iter().map(|record| record.id.to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(both(None, 10).await, ["a1", "bob1", "a3", "a4"]);
    assert_eq!(both(None, 2).await, ["a1", "bob1"]);
    assert_eq!(both(Some("bob1"), 2).await, ["a3", "a4"]);
    assert_eq!(both(Some("a1"), 1).await, ["bob1"]);
    assert!(store.pending_for_recipients(&[], None, 10).await.unwrap().is_empty());

    // Ended ones only, the latest to end first, limited.
    store
        .resolve(&id("a4"), &ended(QuestionStatus::Cancelled, 4500, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        ids(&store.ended_for_recipient("alice", 10).await.unwrap()),
        ["a2", "a4"]
    );
    assert_eq!(ids(&store.ended_for_recipient("alice", 1).await.unwrap()), ["a2"]);
    assert!(store.ended_for_recipient("alice", 0).await.unwrap().is_empty());
    assert!(store.ended_for_recipient("bob", 10).await.unwrap().is_empty());
}

async fn pending_in_run_lists_one_agent_run_oldest_first(fresh: Fresh) {
    let store = fresh.store();
    let in_run = |name: &str, created_at: i64, agent: &str, run: &str| {
        let mut record = in_session(question(name, created_at), agent, None);
        record.run_id = Some(run.to_owned());
        record
    };
    for record in [
        in_run("late", 2000, "build-bot", "r1"),
        in_run("early", 1000, "build-bot", "r1"),
        in_run("ended", 500, "build-bot", "r1"),
        in_run("other_agent", 1500, "deploy-bot", "r1"),
        in_run("other_run", 1500, "build-bot", "r2"),
        question("no_run", 1200),
    ] {
        store.insert(&record).await.unwrap();
    }
    store
        .resolve(&id("ended"), &ended(QuestionStatus::Cancelled, 600, "run aborted"))
        .await
        .unwrap()
        .unwrap();

    assert_eq!(
        ids(&store.pending_in_run("build-bot", "r1").await.unwrap()),
        ["early", "late"]
    );
    assert_eq!(
        ids(&store.pending_in_run("deploy-bot", "r1").await.unwrap()),
        ["other_agent"]
    );
    assert!(store.pending_in_run("build-bot", "r3").await.unwrap().is_empty());
}

async fn an_event_is_new_once(fresh: Fresh) {
    let store = fresh.store();

    assert!(!store.event_seen(CHANNEL, "update-1").await.unwrap());
    assert!(store.record_event(CHANNEL, "update-1").await.unwrap());
    assert!(store.event_seen(CHANNEL, "update-1").await.unwrap());
    assert!(!store.record_event(CHANNEL, "update-1").await.unwrap());

    // Event ids are per channel.
    assert!(!store.event_seen("discord", "update-1").await.unwrap());
    assert!(store.record_event("discord", "update-1").await.unwrap());
    assert!(store.record_event(CHANNEL, "update-2").await.unwrap());
}

async fn settings_round_trip_and_overwrite(fresh: Fresh) {
    let store = fresh.store();

    assert_eq!(store.setting("telegram.offset").await.unwrap(), None);
    store.set_setting("telegram.offset", "100").await.unwrap();
    store.set_setting("webhook.secret", "s3cr3t").await.unwrap();
    assert_eq!(store.setting("telegram.offset").await.unwrap().as_deref(), Some("100"));

    store.set_setting("telegram.offset", "101").await.unwrap();
    assert_eq!(store.setting("telegram.offset").await.unwrap().as_deref(), Some("101"));
    assert_eq!(
        store.setting("webhook.secret").await.unwrap().as_deref(),
        Some("s3cr3t")
    );

    // Set unless set: the first value offered is the one kept.
    assert!(store.insert_setting("secret.web-key.me", "first").await.unwrap());
    assert!(!store.insert_setting("secret.web-key.me", "second").await.unwrap());
    assert_eq!(
        store.setting("secret.web-key.me").await.unwrap().as_deref(),
        Some("first")
    );
}

/// A restart (or another replica) finds everything the first store wrote.
async fn everything_survives_reopening_the_store(fresh: Fresh) {
    let record = in_session(question("q1", 1_700_000_000_000), "build-bot", Some("s1"));
    let delivery = Delivery::new(vec![message(CONVERSATION, "17")]);
    {
        let store = fresh.store();
        store.insert(&record).await.unwrap();
        store.set_delivery(&record.id, CHANNEL, &delivery).await.unwrap();
        store.record_event(CHANNEL, "update-1").await.unwrap();
        store.set_setting("telegram.offset", "7").await.unwrap();
        store.ping().await.unwrap();
    }

    let store = fresh.reopen().await;
    let pending = store.pending().await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].expires_at, 1_700_000_600_000);
    assert_eq!(
        pending[0],
        QuestionRecord {
            surfaces: vec![Surface {
                state: SurfaceState::Delivered,
                delivery: Some(delivery),
                ..record.surfaces[0].clone()
            }],
            ..record.clone()
        }
    );
    assert_eq!(
        store
            .question_for_message(CHANNEL, &message(CONVERSATION, "17"))
            .await
            .unwrap(),
        Some(record.id.clone())
    );
    assert!(!store.record_event(CHANNEL, "update-1").await.unwrap());
    assert_eq!(store.setting("telegram.offset").await.unwrap().as_deref(), Some("7"));
    // The session rule held across the reopen too.
    let again = in_session(question("q2", 1_700_000_000_001), "build-bot", Some("s1"));
    assert!(matches!(
        store.insert(&again).await,
        Err(StoreError::SessionBusy { .. })
    ));
}

/// The SQLite file: created with its directory, in WAL mode.
#[tokio::test]
async fn the_sqlite_file_and_its_directory_are_created_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    // The directory does not exist yet: open creates it.
    let path = dir.path().join("data").join("nested").join("askgate.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.insert(&question("q1", 1)).await.unwrap();
    store.close().await;
    assert!(path.is_file());

    let mut raw = raw_connection(&path).await;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

async fn a_row_that_cannot_be_read_is_reported_not_panicked_on(fresh: Fresh) {
    let store = fresh.store();
    for name in ["bad_request", "bad_status", "bad_locale", "bad_progress", "good"] {
        store.insert(&question(name, 1)).await.unwrap();
    }
    for statement in [
        "UPDATE questions SET request = 'not json {' WHERE id = 'bad_request'",
        "UPDATE questions SET status = 'pondering' WHERE id = 'bad_status'",
        "UPDATE questions SET locale = 'fr' WHERE id = 'bad_locale'",
        r#"UPDATE questions SET progress = '{"deploy_target": [{"kind": "telepathy"}]}' WHERE id = 'bad_progress'"#,
    ] {
        fresh.execute(statement).await;
    }

    for (name, column) in [
        ("bad_request", "request"),
        ("bad_status", "status"),
        ("bad_locale", "locale"),
        ("bad_progress", "progress"),
    ] {
        match store.get(&id(name)).await {
            Err(StoreError::Corrupt(what)) => {
                assert!(what.contains(name) && what.contains(column), "{what}");
            }
            other => panic!("expected Corrupt for {name}, got {other:?}"),
        }
    }
    assert!(matches!(store.pending().await, Err(StoreError::Corrupt(_))));
    assert!(store.get(&id("good")).await.unwrap().is_some());

    // A resolution whose record cannot be read back is undone, not half applied.
    let resolved = store
        .resolve(&id("bad_request"), &ended(QuestionStatus::Expired, 9, "expired"))
        .await;
    assert!(matches!(resolved, Err(StoreError::Corrupt(_))), "{resolved:?}");
    let status = fresh
        .text("SELECT status FROM questions WHERE id = 'bad_request'")
        .await;
    assert_eq!(status, "pending");
}

async fn a_foreign_question_id_is_reported_not_panicked_on(fresh: Fresh) {
    let store = fresh.store();
    store.insert(&question("q1", 1)).await.unwrap();
    fresh
        .execute("UPDATE questions SET id = 'not an id!' WHERE id = 'q1'")
        .await;
    fresh
        .execute(&format!(
            "INSERT INTO messages (channel, conversation, message, question_id) \
             VALUES ('{CHANNEL}', '{CONVERSATION}', '17', 'not an id!')"
        ))
        .await;

    match store.newest_pending_in_conversation(CHANNEL, CONVERSATION).await {
        Err(StoreError::Corrupt(what)) => assert!(what.contains("not an id!"), "{what}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(matches!(store.pending().await, Err(StoreError::Corrupt(_))));
}

/// A pending "resolution" is a caller's bug: a debug build says so loudly.
#[cfg(debug_assertions)]
async fn a_pending_resolution_fails_a_debug_assertion(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let _ = store
        .resolve(&record.id, &ended(QuestionStatus::Pending, 2, "not really"))
        .await;
}

/// A pending "resolution" is a caller's bug: a release build ignores it.
#[cfg(not(debug_assertions))]
async fn a_pending_resolution_changes_nothing(fresh: Fresh) {
    let store = fresh.store();
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    let resolved = store
        .resolve(&record.id, &ended(QuestionStatus::Pending, 2, "not really"))
        .await
        .unwrap();
    assert_eq!(resolved, None);
    assert_eq!(store.get(&record.id).await.unwrap(), Some(record));
}

async fn a_recent_undelivered_question_is_found_by_channel_and_time(fresh: Fresh) {
    let store = fresh.store();
    let old = question("01HZX0000000000000000000J1", 1_000);
    let recent = question("01HZX0000000000000000000J2", 5_000);
    store.insert(&old).await.unwrap();
    store.insert(&recent).await.unwrap();
    assert!(store.undelivered_since(CHANNEL, 4_999).await.unwrap());
    assert!(
        !store.undelivered_since(CHANNEL, 5_000).await.unwrap(),
        "asked after, not at"
    );
    assert!(
        !store.undelivered_since("another", 0).await.unwrap(),
        "only this channel"
    );
    // Delivered, or ended: no longer on its way.
    store
        .set_delivery(&recent.id, CHANNEL, &Delivery::new(vec![message(CONVERSATION, "m1")]))
        .await
        .unwrap();
    assert!(!store.undelivered_since(CHANNEL, 4_999).await.unwrap());
    store
        .resolve(&old.id, &ended(QuestionStatus::Cancelled, 6_000, "cancelled"))
        .await
        .unwrap();
    assert!(!store.undelivered_since(CHANNEL, 0).await.unwrap());
}

/// Start-up's view of pending questions: deadline order (ties by id), in
/// pages that resume where the last one ended, ended questions left out,
/// and whether each prompt went out in full; the count without a load.
async fn pending_deadlines_come_in_pages_in_deadline_order(fresh: Fresh) {
    let store = fresh.store();
    let expiring = |name: &str, expires_at: i64| QuestionRecord {
        expires_at,
        ..question(name, 1)
    };
    for record in [
        expiring("qa", 3000),
        expiring("qb", 1000),
        expiring("qd", 2000),
        expiring("qc", 2000),
        expiring("qe", 500),
        expiring("qf", 4000),
    ] {
        store.insert(&record).await.unwrap();
    }
    store
        .set_delivery(&id("qb"), CHANNEL, &Delivery::new(vec![message(CONVERSATION, "1")]))
        .await
        .unwrap();
    // Delivered in full, on a message whose id is the word of a surface
    // still sending: it is the state that counts, not the word.
    store
        .set_delivery(
            &id("qf"),
            CHANNEL,
            &Delivery::new(vec![message(CONVERSATION, "sending")]),
        )
        .await
        .unwrap();
    store
        .set_delivery(&id("qc"), CHANNEL, &Delivery::partial(vec![message(CONVERSATION, "2")]))
        .await
        .unwrap();
    store
        .resolve(&id("qe"), &ended(QuestionStatus::Skipped, 10, "skipped"))
        .await
        .unwrap();
    assert_eq!(store.count_pending().await.unwrap(), 5);
    let page = |after: Option<(i64, &'static str)>| {
        let store = &store;
        async move {
            let after = after.map(|(at, name)| (at, id(name)));
            store
                .pending_deadlines(after.as_ref(), 2)
                .await
                .unwrap()
                .into_iter()
                .map(|p| (p.expires_at, p.id.to_string(), p.delivered))
                .collect::<Vec<_>>()
        }
    };
    let owned = |rows: &[(i64, &str, bool)]| -> Vec<(i64, String, bool)> {
        rows.iter()
            .map(|(at, name, delivered)| (*at, (*name).to_owned(), *delivered))
            .collect()
    };
    assert_eq!(page(None).await, owned(&[(1000, "qb", true), (2000, "qc", false)]));
    assert_eq!(
        page(Some((2000, "qc"))).await,
        owned(&[(2000, "qd", false), (3000, "qa", false)])
    );
    assert_eq!(page(Some((3000, "qa"))).await, owned(&[(4000, "qf", true)]));
    assert_eq!(page(Some((4000, "qf"))).await, owned(&[]));
}

async fn prune_deletes_what_ended_before_the_cutoff_in_bounded_steps_and_never_a_pending_question(fresh: Fresh) {
    let store = fresh.store();
    for (name, created_at) in [
        ("old1", 1_000),
        ("old2", 1_100),
        ("old3", 1_200),
        ("recent", 1_300),
        ("waiting", 1_400),
    ] {
        store.insert(&question(name, created_at)).await.unwrap();
    }
    let delivery = Delivery::new(vec![message(CONVERSATION, "m-old1")]);
    store.set_delivery(&id("old1"), CHANNEL, &delivery).await.unwrap();
    for (name, at) in [("old1", 2_000), ("old2", 2_100), ("old3", 2_200), ("recent", 9_000)] {
        store
            .resolve(&id(name), &ended(QuestionStatus::Cancelled, at, "cancelled"))
            .await
            .unwrap()
            .unwrap();
    }
    // Events: their time is the database's own clock, far after these.
    store.record_event(CHANNEL, "e1").await.unwrap();

    // Two at a time: old1 and old2 first (the oldest to end), then old3.
    let first = store.prune(5_000, 2).await.unwrap();
    assert_eq!((first.questions, first.events), (2, 0));
    assert!(store.get(&id("old1")).await.unwrap().is_none());
    assert!(store.get(&id("old3")).await.unwrap().is_some());
    // The message index went with its question.
    assert_eq!(
        store
            .question_for_message(CHANNEL, &message(CONVERSATION, "m-old1"))
            .await
            .unwrap(),
        None
    );
    let second = store.prune(5_000, 2).await.unwrap();
    assert_eq!(second.questions, 1);
    assert_eq!(store.prune(5_000, 2).await.unwrap().questions, 0);
    assert!(store.get(&id("recent")).await.unwrap().is_some());

    // However late the cutoff, a pending question stays; events go.
    let all = store.prune(i64::MAX, 100).await.unwrap();
    assert_eq!((all.questions, all.events), (1, 1));
    assert_eq!(ids(&store.pending().await.unwrap()), ["waiting"]);
    assert!(!store.event_seen(CHANNEL, "e1").await.unwrap());

    // Nothing else is left behind in the tables that point at questions.
    let orphans = fresh
        .int(
            "SELECT (SELECT count(*) FROM messages WHERE question_id NOT IN (SELECT id FROM questions)) \
             + (SELECT count(*) FROM idempotency_keys WHERE question_id NOT IN (SELECT id FROM questions))",
        )
        .await;
    assert_eq!(orphans, 0);
}

async fn expire_due_expires_what_is_due_in_deadline_order_and_nothing_else(fresh: Fresh) {
    let store = fresh.store();
    // Deadlines 600_000 after creation: q3 first, then q1, q2, q4.
    for (name, created) in [("q1", 2), ("q2", 3), ("q3", 1), ("q4", 10), ("answered", 0)] {
        store.insert(&question(name, created)).await.unwrap();
    }
    store
        .resolve(&id("answered"), &ended(QuestionStatus::Cancelled, 5, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    let due_at = |at: i64| ended(QuestionStatus::Expired, at, "expired");

    assert!(store.expire_due(&due_at(600_000), 10).await.unwrap().is_empty());
    let first = store.expire_due(&due_at(600_003), 2).await.unwrap();
    assert_eq!(ids(&first), ["q3", "q1"]);
    assert!(
        first
            .iter()
            .all(|record| record.status == QuestionStatus::Expired && record.resolution == Some(due_at(600_003)))
    );
    let rest = store.expire_due(&due_at(600_003), 2).await.unwrap();
    assert_eq!(ids(&rest), ["q2"]);
    assert!(store.expire_due(&due_at(600_003), 2).await.unwrap().is_empty());

    assert_eq!(ids(&store.pending().await.unwrap()), ["q4"]);
    let cancelled = store.get(&id("answered")).await.unwrap().unwrap();
    assert_eq!(cancelled.status, QuestionStatus::Cancelled);
    assert_eq!(store.count_pending().await.unwrap(), 1);
}

async fn undelivered_lists_pending_prompts_not_sent_in_full_asked_before_a_time(fresh: Fresh) {
    let store = fresh.store();
    for (name, created) in [("never", 3), ("partly", 1), ("sent", 2), ("ended", 4), ("late", 50)] {
        store.insert(&question(name, created)).await.unwrap();
    }
    store
        .set_delivery(
            &id("partly"),
            CHANNEL,
            &Delivery::partial(vec![message(CONVERSATION, "p1")]),
        )
        .await
        .unwrap();
    store
        .set_delivery(&id("sent"), CHANNEL, &Delivery::new(vec![message(CONVERSATION, "s1")]))
        .await
        .unwrap();
    store
        .resolve(&id("ended"), &ended(QuestionStatus::Cancelled, 5, "cancelled"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ids(&store.undelivered(10, 10).await.unwrap()), ["partly", "never"]);
    assert_eq!(ids(&store.undelivered(10, 1).await.unwrap()), ["partly"]);
    assert_eq!(
        ids(&store.undelivered(100, 10).await.unwrap()),
        ["partly", "never", "late"]
    );
    assert!(
        store.undelivered(1, 10).await.unwrap().is_empty(),
        "asked before, not at"
    );
}
