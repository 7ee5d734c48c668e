//! The channel contract v2 as the engine keeps it (`docs/adapter-spec.md`):
//! the question's conversation is where it was delivered, forms read by the
//! rules of typed replies, reactions that change nothing write nothing, and
//! a delivery cut short resumes without sending a part twice.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_core::channel::{ChannelError, ConversationKind, InboundKind, InboundSink, MessageRef, Reaction};
use askgate_core::form::FormValue;
use askgate_core::{ButtonAction, ButtonToken, Capabilities, Presentation};
use askgate_store::QuestionStatus;
use askgate_testkit::{Call, FakeChannel};
use serde_json::json;
use support::*;

/// A harness whose channel is `chat`.
async fn harness_with(chat: FakeChannel) -> Harness {
    let dir = tempfile::tempdir().expect("a temporary directory");
    start(dir, askgate_engine::Clock::manual(START), chat).await
}

fn token(record: &askgate_store::QuestionRecord, action: ButtonAction) -> String {
    ButtonToken {
        question: record.id.clone(),
        action,
    }
    .encode()
}

#[tokio::test]
async fn a_dm_whose_conversation_is_not_the_configured_id_is_answered_there() {
    // Discord and Slack open a DM for a user id, and the DM has an id of its own.
    let chat = FakeChannel::with_buttons("chat");
    chat.deliver_into("D-opened-for-alice");
    let h = harness_with(chat).await;
    let record = h.ask("alice", single()).await;
    assert_eq!(record.conversation(), "D-opened-for-alice");

    // A tap that claims the configured id is from somewhere the question never went.
    let mut elsewhere = tap(&record, "e1", "u-alice", ButtonAction::Choose(1));
    elsewhere.conversation = "dm-alice".into();
    assert_eq!(h.engine.handle("chat", elsewhere).await.unwrap(), Reaction::Nothing);
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);

    // An unthreaded message in the DM answers the newest question there.
    let mut reply = typed(&record, "e2", "u-alice", "production", false);
    reply.conversation_kind = ConversationKind::Direct;
    assert_eq!(h.engine.handle("chat", reply).await.unwrap(), Reaction::Nothing);
    let ended = h.ended(&record.id).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
}

#[tokio::test]
async fn a_form_gives_the_exact_result_each_field_read_like_a_typed_reply() {
    let h = harness_with(FakeChannel::with_forms("chat", false)).await;
    let record = h.ask("alice", two()).await;
    let Presentation::Text(prompt) = &h.chat.deliveries()[0].0 else {
        panic!("two questions are text");
    };
    let actions = prompt
        .actions
        .as_ref()
        .expect("typed replies never arrive: Answer… and Skip");
    assert_eq!(actions.answer.token, token(&record, ButtonAction::Answer));
    assert!(prompt.parts[0].ends_with("Tap Answer… to answer, or Skip to skip."));

    let opened = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Answer))
        .await
        .unwrap();
    let Reaction::AskForm { question, form } = opened else {
        panic!("Answer… opens the form: {opened:?}");
    };
    assert_eq!(question, record.id);
    let fields: Vec<&str> = form.fields.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(fields, ["deploy", "notify"]);

    let submit = |id: &str, values: Vec<FormValue>| {
        event(
            id,
            "u-alice",
            record.conversation(),
            InboundKind::FormSubmitted {
                token: form.token.clone(),
                values,
            },
        )
    };
    // One field filled: progress, and what is still missing.
    let partial = h
        .engine
        .handle("chat", submit("e2", vec![FormValue::typed("deploy", "2")]))
        .await
        .unwrap();
    assert_eq!(notice(&partial), "Got Deploy. Still needed: Notify");
    // The multi-select field by the rules of a typed reply: numbers and "and".
    let done = h
        .engine
        .handle(
            "chat",
            submit(
                "e3",
                vec![FormValue::typed("deploy", "2"), FormValue::typed("notify", "1 and 3")],
            ),
        )
        .await
        .unwrap();
    assert_eq!(notice(&done), "Answer submitted");
    let ended = h.ended(&record.id).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"], "notify": ["Team", "Nobody"]}}})
    );
}

#[tokio::test]
async fn reactions_that_change_nothing_write_nothing() {
    let h = harness_with(FakeChannel::with_forms("chat", true)).await;
    let single = h.ask("team", single()).await;
    let store = h.engine.store().clone();
    for (id, user, action) in [
        ("other", "u-alice", ButtonAction::Other),
        ("stranger", "u-bob", ButtonAction::Choose(0)),
    ] {
        let reaction = h.engine.handle("chat", tap(&single, id, user, action)).await.unwrap();
        assert!(
            matches!(
                reaction,
                Reaction::AskFreeText { .. } | Reaction::Notice { alert: true, .. }
            ),
            "{reaction:?}"
        );
        assert!(!store.event_seen("chat", id).await.unwrap(), "{id}: nothing is written");
    }
    // Answer… on a two-question prompt opens its form, and writes nothing either.
    let pair = h.ask("team", two()).await;
    let opened = h
        .engine
        .handle("chat", tap(&pair, "form", "u-alice", ButtonAction::Answer))
        .await
        .unwrap();
    assert!(matches!(opened, Reaction::AskForm { .. }), "{opened:?}");
    assert!(
        !store.event_seen("chat", "form").await.unwrap(),
        "form: nothing is written"
    );
    assert_eq!(
        store.get(&pair.id).await.unwrap().as_ref(),
        Some(&pair),
        "form: the question is as asked"
    );
    let answered = h
        .engine
        .handle("chat", tap(&single, "answer", "u-alice", ButtonAction::Choose(0)))
        .await
        .unwrap();
    assert_eq!(notice(&answered), "Answer submitted");
    assert!(
        store.event_seen("chat", "answer").await.unwrap(),
        "an applied event is recorded"
    );
    // A late tap after the end: a notice, and still nothing written.
    let late = h
        .engine
        .handle("chat", tap(&single, "late", "u-alice", ButtonAction::Choose(1)))
        .await
        .unwrap();
    assert_eq!(notice(&late), "This question was already answered");
    assert!(!store.event_seen("chat", "late").await.unwrap());
}

/// A channel whose messages hold 150 characters: a two-question prompt is
/// several messages.
fn cramped() -> FakeChannel {
    FakeChannel::new("chat", Capabilities::text(150))
}

/// The record once `done` holds for it, moving the engine's clock along
/// when `advance` (retries wait on it).
async fn until(
    h: &Harness,
    id: &askgate_core::QuestionId,
    advance: bool,
    done: impl Fn(&askgate_store::QuestionRecord) -> bool,
) -> askgate_store::QuestionRecord {
    tokio::time::timeout(PATIENCE, async {
        loop {
            if advance {
                h.clock.advance(Duration::from_millis(500));
            }
            let current = h.engine.get(id).await.unwrap().unwrap();
            if done(&current) {
                return current;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the question gets there in time")
}

/// How many messages each delivery attempt found already sent.
fn already_sent(chat: &FakeChannel) -> Vec<(usize, usize)> {
    chat.calls()
        .iter()
        .filter_map(|call| match call {
            Call::Deliver {
                already_sent, delivery, ..
            } => Some((*already_sent, delivery.messages.len())),
            Call::Finish { .. } | Call::Nudge { .. } => None,
        })
        .collect()
}

fn complete(record: &askgate_store::QuestionRecord) -> bool {
    record.delivery().is_some_and(|d| d.complete)
}

#[tokio::test]
async fn a_delivery_cut_short_resumes_without_sending_a_part_twice() {
    let chat = cramped();
    chat.fail_after_parts(1, ChannelError::Unavailable { reason: "502".into() });
    let h = harness_with(chat).await;
    let record = h.engine.ask(question("alice", two())).await.unwrap();
    let delivered = until(&h, &record.id, true, complete).await;
    let attempts = already_sent(&h.chat);
    let parts = delivered.delivery().unwrap().messages.len();
    assert!(parts >= 3, "the prompt is several messages: {parts}");
    assert_eq!(
        attempts,
        [(0, 1), (1, parts)],
        "the retry starts after the part that went out"
    );
    assert_eq!(h.status(&record.id).await, QuestionStatus::Pending);
}

#[tokio::test]
async fn a_delivery_cut_short_by_a_crash_is_finished_after_the_restart() {
    let chat = cramped();
    // A passing failure after the first part; the retry waits on the clock, which stands still.
    chat.fail_after_parts(1, ChannelError::Unavailable { reason: "502".into() });
    let h = harness_with(chat).await;
    let record = h.engine.ask(question("alice", two())).await.unwrap();
    let partial = until(&h, &record.id, false, |r| r.delivery().is_some()).await;
    let first: MessageRef = partial.delivery().unwrap().messages[0].clone();
    assert!(!partial.delivery().unwrap().complete);
    // Stopped before the retry: the next process resumes after the part that went out.
    let h = h.stop().start_again().await;
    let resumed = until(&h, &record.id, false, complete).await;
    assert_eq!(resumed.delivery().unwrap().messages[0], first);
    let attempts = already_sent(&h.chat);
    assert_eq!(attempts.last().map(|a| a.0), Some(1), "{attempts:?}");
}

#[tokio::test]
async fn a_tap_before_the_delivery_is_stored_waits_for_it_and_counts() {
    // The platform shows the prompt (in a DM with an id of its own) and the
    // person taps before askgate has stored the platform's answer.
    let chat = FakeChannel::with_buttons("chat");
    chat.deliver_into("D-opened-for-alice");
    chat.hold_deliveries(Duration::from_millis(400));
    let h = harness_with(chat).await;
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    tokio::time::timeout(
        PATIENCE,
        h.chat
            .wait_for(|calls| calls.iter().any(|c| matches!(c, Call::Deliver { .. }))),
    )
    .await
    .expect("the prompt is shown");
    assert!(h.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none());
    // Built by hand: the record has no delivery to take the message from yet.
    let mut early = event(
        "early",
        "u-alice",
        "D-opened-for-alice",
        InboundKind::ButtonPressed {
            token: token(&record, ButtonAction::Choose(1)),
            message: MessageRef {
                conversation: "D-opened-for-alice".into(),
                message: "1".into(),
            },
        },
    );
    early.conversation_kind = ConversationKind::Direct;
    let reaction = h.engine.handle("chat", early).await.unwrap();
    assert_eq!(notice(&reaction), "Answer submitted");
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    // Edited once: by whoever ended it after the delivery was stored.
    h.summary(1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.chat.summaries().len(), 1, "{:?}", h.chat.summaries());
}

#[tokio::test]
async fn a_thread_reply_before_the_delivery_is_stored_waits_for_it_and_counts() {
    // In a group, a typed answer is a reply to the prompt (a Slack thread
    // reply): the person replies before askgate has stored where the prompt
    // went. Without the wait, the reply would be taken for no answer at all.
    let chat = FakeChannel::with_buttons("chat");
    chat.hold_deliveries(Duration::from_millis(400));
    let h = harness_with(chat).await;
    let record = h.engine.ask(question("team", single())).await.unwrap();
    let sent = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some((_, delivery)) = h.chat.deliveries().into_iter().next() {
                return delivery;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the prompt is shown");
    assert!(h.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none());
    let prompt = sent.messages[0].clone();
    let early = event(
        "early-reply",
        "u-alice",
        &prompt.conversation,
        InboundKind::TextReply {
            message: MessageRef {
                conversation: prompt.conversation.clone(),
                message: "m-early".into(),
            },
            text: "2".into(),
            reply_to: Some(prompt.clone()),
        },
    );
    assert_eq!(early.conversation_kind, ConversationKind::Group);
    h.engine.handle("chat", early).await.unwrap();
    assert_eq!(
        result(&h.ended(&record.id).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
}

#[tokio::test]
async fn a_failed_edit_into_the_summary_is_tried_again_now() {
    let chat = FakeChannel::with_buttons("chat");
    chat.fail_next_finishes([
        ChannelError::Unavailable { reason: "502".into() },
        ChannelError::RateLimited {
            retry_after: Duration::from_secs(3),
        },
    ]);
    let h = harness_with(chat).await;
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    let record = h.delivered(&record.id).await;
    let tapped = h
        .engine
        .handle("chat", tap(&record, "e1", "u-alice", ButtonAction::Choose(1)))
        .await
        .unwrap();
    assert_eq!(notice(&tapped), "Answer submitted");
    // The retries wait on the engine's clock: a passing failure, then the
    // platform's own delay.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        h.clock.advance(Duration::from_secs(1));
    }
    assert_eq!(h.summary(1).await, ["Answered by Alice: Production"]);
}
