//! A recipient with several surfaces (two chat apps and askgate's page):
//! the question is delivered to each on its own, the first answer on any of
//! them wins, progress is the question's, and every delivered copy ends in
//! the summary naming where it was answered. Real SQLite store, recording
//! fake channels, controlled time.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_core::channel::{ChannelError, Destination, InboundKind, InboundSink, MessageRef, Reaction};
use askgate_core::{ButtonAction, ButtonToken, Locale};
use askgate_engine::{
    Clock, DirectAnswer, DirectItem, ENDED_BEFORE_DELIVERY, Engine, NoObserver, Observer, Recipient, RecipientSurface,
    Submitted,
};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore, SurfaceState};
use askgate_testkit::FakeChannel;
use serde_json::json;
use support::{PATIENCE, START, event, question, result, single, two};
use tempfile::TempDir;
use tokio::sync::oneshot;

/// Alice on Telegram-like `tg`, Slack-like `sl` and the page; Bob on the
/// two chat apps only.
struct Surfaces {
    engine: Engine,
    clock: Clock,
    tg: FakeChannel,
    sl: FakeChannel,
    _dir: TempDir,
    _stop: oneshot::Sender<()>,
}

fn surface(channel: &str, kind: &str, conversation: &str) -> RecipientSurface {
    let destination = Destination {
        conversation: conversation.into(),
        thread: None,
    };
    RecipientSurface::new(channel, kind, destination, vec![])
}

async fn surfaces() -> Surfaces {
    surfaces_in(tempfile::tempdir().unwrap()).await
}

/// The engine over the store in `dir` (a restart finds what was stored),
/// with fresh fake channels.
async fn surfaces_in(dir: TempDir) -> Surfaces {
    surfaces_observed(dir, Arc::new(NoObserver)).await
}

/// [`surfaces_in`], its engine telling `observer`.
async fn surfaces_observed(dir: TempDir, observer: Arc<dyn Observer>) -> Surfaces {
    let store = SqliteStore::open(&dir.path().join("askgate.db")).await.unwrap();
    let (tg, sl) = (
        FakeChannel::with_buttons("tg").displayed_as("Telegram"),
        FakeChannel::with_buttons("sl").displayed_as("Slack"),
    );
    for (chat, suffix) in [(&tg, ""), (&sl, "-sl")] {
        for name in ["alice", "bob"] {
            chat.direct(&format!("dm-{name}{suffix}"), &format!("u-{name}"));
        }
    }
    let web = FakeChannel::sending_nothing("web");
    let alice = Recipient {
        name: "alice".into(),
        display_name: "Alice".into(),
        surfaces: vec![
            surface("tg", "telegram", "dm-alice"),
            surface("sl", "slack", "dm-alice-sl"),
            surface("web", "web", "alice"),
        ],
        locale: Locale::En,
        waiting: askgate_engine::Waiting::default(),
        people: Vec::new(),
    };
    let bob = Recipient {
        name: "bob".into(),
        display_name: "Bob".into(),
        surfaces: vec![surface("tg", "telegram", "dm-bob"), surface("sl", "slack", "dm-bob-sl")],
        locale: Locale::En,
        waiting: askgate_engine::Waiting::default(),
        people: Vec::new(),
    };
    let clock = Clock::manual(START);
    let engine = Engine::new(
        Arc::new(store),
        vec![Arc::new(tg.clone()), Arc::new(sl.clone()), Arc::new(web)],
        vec![alice, bob],
        clock.clone(),
        observer,
    );
    engine.start().await.unwrap();
    let stop = support::run_timers(&engine);
    Surfaces {
        engine,
        clock,
        tg,
        sl,
        _dir: dir,
        _stop: stop,
    }
}

impl Surfaces {
    /// Asks `to`, and waits until no surface is still being sent to.
    async fn ask(&self, to: &str, request: askgate_core::AskRequest) -> QuestionRecord {
        let record = self.engine.ask(question(to, request)).await.unwrap();
        self.until(&record, |r| r.delivered() || r.status.is_final()).await
    }

    async fn until(&self, record: &QuestionRecord, done: impl Fn(&QuestionRecord) -> bool) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let current = self.engine.get(&record.id).await.unwrap().unwrap();
                if done(&current) {
                    return current;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the question got there")
    }

    /// Alice answers Deploy on her page with option `option`; the question
    /// as that answer ended it.
    async fn on_page(&self, record: &QuestionRecord, option: usize) -> QuestionRecord {
        let answer = DirectAnswer::Answers(vec![DirectItem {
            id: "deploy".into(),
            options: vec![option],
            text: None,
        }]);
        let submitted = self.engine.submit("alice", &record.id, answer).await.unwrap();
        let Submitted::Resolved(ended) = submitted else {
            panic!("the page's answer ends the question: {submitted:?}")
        };
        ended
    }

    async fn ended(&self, record: &QuestionRecord) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, self.engine.wait(&record.id, Duration::from_secs(3600)))
            .await
            .unwrap()
            .unwrap()
    }
}

/// The first message of the question on `channel`.
fn message_on(record: &QuestionRecord, channel: &str) -> MessageRef {
    record.surface(channel).unwrap().delivery.as_ref().unwrap().messages[0].clone()
}

/// Alice's tap on the question's buttons on `channel`.
fn tap_on(record: &QuestionRecord, channel: &str, event_id: &str, action: ButtonAction) -> askgate_core::InboundEvent {
    let message = message_on(record, channel);
    let token = ButtonToken {
        question: record.id.clone(),
        action,
    }
    .encode();
    let conversation = message.conversation.clone();
    event(
        event_id,
        "u-alice",
        &conversation,
        InboundKind::ButtonPressed { token, message },
    )
}

/// Alice's typed reply to the question's message on `channel`.
fn reply_on(record: &QuestionRecord, channel: &str, event_id: &str, text: &str) -> askgate_core::InboundEvent {
    let reply_to = message_on(record, channel);
    let message = MessageRef {
        conversation: reply_to.conversation.clone(),
        message: format!("m-{event_id}"),
    };
    let conversation = reply_to.conversation.clone();
    event(
        event_id,
        "u-alice",
        &conversation,
        InboundKind::TextReply {
            text: text.into(),
            reply_to: Some(reply_to),
            message,
        },
    )
}

async fn summaries(channel: &FakeChannel, count: usize) -> Vec<String> {
    tokio::time::timeout(PATIENCE, channel.wait_for(|calls| support::finishes(calls) >= count))
        .await
        .expect("the copy is edited into its summary");
    channel.summaries()
}

#[tokio::test]
async fn answered_on_the_second_surface_every_copy_ends_in_the_summary_naming_it() {
    let s = surfaces().await;
    let record = s.ask("alice", single()).await;
    let states: Vec<SurfaceState> = record.surfaces.iter().map(|surface| surface.state).collect();
    assert_eq!(
        states,
        [SurfaceState::Delivered; 3],
        "each surface delivered on its own"
    );
    assert_eq!(s.tg.deliveries().len(), 1);
    assert_eq!(s.sl.deliveries().len(), 1);

    let reaction = s
        .engine
        .handle("sl", tap_on(&record, "sl", "e1", ButtonAction::Choose(1)))
        .await
        .unwrap();
    assert_eq!(
        reaction,
        Reaction::Notice {
            text: "Answer submitted".into(),
            alert: false
        }
    );
    let ended = s.ended(&record).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    let resolution = ended.resolution.as_ref().unwrap();
    assert_eq!(
        (resolution.via.as_deref(), resolution.surface.as_deref()),
        (Some("sl"), Some("slack"))
    );
    assert_eq!(summaries(&s.tg, 1).await, ["Answered by Alice in Slack: Production"]);
    assert_eq!(summaries(&s.sl, 1).await, ["Answered by Alice in Slack: Production"]);
    let finished = s.until(&record, |r| r.surfaces.iter().all(|s| s.finished)).await;
    assert!(finished.surfaces.iter().all(|surface| !surface.to_edit()));

    // A late tap on the other surface is told it is over; nothing changes.
    let late = s
        .engine
        .handle("tg", tap_on(&record, "tg", "e2", ButtonAction::Choose(0)))
        .await
        .unwrap();
    let Reaction::Notice { text, .. } = late else {
        panic!("a late tap gets a notice: {late:?}")
    };
    assert!(text.contains("already"), "{text}");
    assert_eq!(
        result(&s.ended(&record).await)["answers"]["answers"]["deploy"],
        json!(["Production"])
    );
}

#[tokio::test]
async fn an_answer_on_the_page_ends_the_chat_copies_naming_the_page() {
    let s = surfaces().await;
    let record = s.ask("alice", single()).await;
    let ended = s.on_page(&record, 2).await;
    let resolution = ended.resolution.as_ref().unwrap();
    assert_eq!(
        (resolution.via.as_deref(), resolution.surface.as_deref()),
        (Some("web"), Some("web"))
    );
    assert_eq!(summaries(&s.tg, 1).await, ["Answered by Alice in the web page: Canary"]);
    assert_eq!(summaries(&s.sl, 1).await, ["Answered by Alice in the web page: Canary"]);
    assert_eq!(
        s.engine.summary_of(&ended, Some("web")).as_deref(),
        Some("Answered by Alice in the web page: Canary")
    );
}

#[tokio::test]
async fn one_surface_failing_for_good_leaves_the_question_open_on_the_other() {
    let s = surfaces().await;
    s.tg.fail_next([ChannelError::Rejected {
        reason: "bot was blocked by the user".into(),
    }]);
    let record = s.ask("bob", single()).await;
    assert_eq!(record.status, QuestionStatus::Pending);
    let tg = record.surface("tg").unwrap();
    assert_eq!(tg.state, SurfaceState::Failed);
    assert_eq!(
        tg.reason.as_deref(),
        Some("the platform refused: bot was blocked by the user")
    );
    assert_eq!(record.surface("sl").unwrap().state, SurfaceState::Delivered);

    let tap = {
        let message = message_on(&record, "sl");
        let token = ButtonToken {
            question: record.id.clone(),
            action: ButtonAction::Choose(0),
        }
        .encode();
        let conversation = message.conversation.clone();
        event(
            "e1",
            "u-bob",
            &conversation,
            InboundKind::ButtonPressed { token, message },
        )
    };
    s.engine.handle("sl", tap).await.unwrap();
    let ended = s.ended(&record).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    // Only the surface that showed it is edited: the failed one had nothing.
    assert_eq!(
        summaries(&s.sl, 1).await,
        ["Answered by Bob in Slack: Staging (Recommended)"]
    );
    assert!(s.tg.summaries().is_empty());
}

#[tokio::test]
async fn a_surface_still_failing_when_the_question_ends_is_sent_nothing_more_and_marked_so() {
    // Telegram down (a passing failure: retried after a pause) while Alice
    // answers on her page: the retry never comes, and the surface does not
    // stay `sending`.
    let s = surfaces().await;
    s.tg.fail_next([ChannelError::Unavailable {
        reason: "502 Bad Gateway".into(),
    }]);
    let record = s.engine.ask(question("alice", single())).await.unwrap();
    let record = s
        .until(&record, |r| {
            r.surface("sl").unwrap().state == SurfaceState::Delivered && s.tg.delivery_attempts() == 1
        })
        .await;
    assert_eq!(record.surface("tg").unwrap().state, SurfaceState::Sending);
    assert_eq!(s.on_page(&record, 1).await.status, QuestionStatus::Answered);
    // Long past every retry's pause.
    s.clock.advance(Duration::from_secs(3600));
    let ended = s
        .until(&record, |r| r.surface("tg").unwrap().state != SurfaceState::Sending)
        .await;
    let tg = ended.surface("tg").unwrap();
    assert_eq!(
        (tg.state, tg.reason.as_deref(), tg.delivery.as_ref()),
        (SurfaceState::Failed, Some(ENDED_BEFORE_DELIVERY), None),
        "{tg:?}"
    );
    // No second send, and so nothing to edit.
    assert_eq!(s.tg.delivery_attempts(), 1);
    assert!(s.tg.calls().is_empty(), "{:?}", s.tg.calls());
    assert_eq!(
        summaries(&s.sl, 1).await,
        ["Answered by Alice in the web page: Production"]
    );
    // The question stays answered, as the page said.
    let now = s.engine.get(&record.id).await.unwrap().unwrap();
    assert_eq!(now.status, QuestionStatus::Answered);
}

#[tokio::test]
async fn every_surface_failing_ends_the_question_at_once_with_each_reason() {
    let s = surfaces().await;
    s.tg.fail_next([ChannelError::Rejected {
        reason: "chat not found".into(),
    }]);
    s.sl.fail_next([ChannelError::Rejected {
        reason: "channel_not_found".into(),
    }]);
    let record = s.engine.ask(question("bob", single())).await.unwrap();
    let ended = s.ended(&record).await;
    assert_eq!(ended.status, QuestionStatus::DeliveryFailed);
    assert_eq!(result(&ended), json!({"status": "delivery_failed"}));
    assert_eq!(
        ended.resolution.as_ref().unwrap().reason.as_deref(),
        Some("tg: the platform refused: chat not found; sl: the platform refused: channel_not_found")
    );
    let ended = s.until(&record, QuestionRecord::delivered).await;
    assert!(
        ended
            .surfaces
            .iter()
            .all(|surface| surface.state == SurfaceState::Failed)
    );
}

#[tokio::test]
async fn a_prompt_answered_in_part_on_one_surface_is_finished_on_the_other() {
    let s = surfaces().await;
    let record = s.ask("alice", two()).await;
    let partial = s
        .engine
        .handle("tg", reply_on(&record, "tg", "e1", "2: 1"))
        .await
        .unwrap();
    assert_eq!(
        partial,
        Reaction::Reply {
            text: "Got Notify. Still needed: Deploy".into()
        }
    );
    // The progress is the question's: the other surface finishes it.
    let done = s
        .engine
        .handle("sl", reply_on(&record, "sl", "e2", "production"))
        .await
        .unwrap();
    assert_eq!(done, Reaction::Nothing, "the copy itself turns into the summary");
    let ended = s.ended(&record).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"], "notify": ["Team"]}}})
    );
    let summary = "Answered by Alice in Slack\nDeploy: Production\nNotify: Team";
    assert_eq!(summaries(&s.tg, 1).await, [summary]);
    assert_eq!(summaries(&s.sl, 1).await, [summary]);
}

#[tokio::test]
async fn a_tap_on_a_surface_is_checked_against_that_surface_only() {
    let s = surfaces().await;
    let record = s.ask("alice", single()).await;
    // The Slack copy's token, sent from the Telegram conversation: the
    // question was never in that conversation on Slack.
    let mut crossed = tap_on(&record, "sl", "e1", ButtonAction::Choose(0));
    crossed.conversation = "dm-alice".into();
    let reaction = s.engine.handle("sl", crossed).await.unwrap();
    assert_eq!(reaction, Reaction::Nothing);
    assert_eq!(
        s.engine.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
}

/// The process stops after the answer was stored and one copy was edited,
/// before the other's edit: the next start edits the other copy, once, and
/// the answer stays the one stored.
#[tokio::test]
async fn a_copy_left_unedited_by_a_crash_is_edited_on_the_next_start() {
    let s = surfaces().await;
    let record = s.ask("alice", single()).await;
    let store = s.engine.store().clone();
    let mut answers = askgate_core::Answers::new();
    answers.set(
        &record.request,
        "deploy",
        vec![askgate_core::AnswerItem::Option {
            index: 1,
            label: "Production".into(),
        }],
    );
    let resolution = askgate_store::Resolution {
        status: QuestionStatus::Answered,
        at: START,
        by: Some(askgate_core::channel::UserRef {
            id: "u-alice".into(),
            display_name: "Alice".into(),
        }),
        answers: Some(answers),
        reason: None,
        via: Some("tg".into()),
        surface: Some("telegram".into()),
    };
    // Straight to the store: the engine that would edit is gone.
    store.resolve(&record.id, &resolution).await.unwrap().unwrap();
    store.mark_finished(&record.id, "tg").await.unwrap();
    let Surfaces { _dir: dir, engine, .. } = s;
    drop(engine);
    drop(store);

    let restarted = surfaces_in(dir).await;
    assert_eq!(
        summaries(&restarted.sl, 1).await,
        ["Answered by Alice in Telegram: Production"]
    );
    restarted
        .until(&record, |r| r.surfaces.iter().all(|s| s.finished))
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        restarted.tg.summaries().is_empty(),
        "the copy edited before the crash is left alone"
    );
    assert_eq!(restarted.sl.summaries().len(), 1, "edited once");
    let stored = restarted.engine.get(&record.id).await.unwrap().unwrap();
    assert_eq!(stored.resolution, Some(resolution), "the answer stored is the answer");
}

/// Begun in a chat app, finished on the page: the page's answer need not
/// repeat what the chat reply answered.
#[tokio::test]
async fn a_prompt_begun_in_a_chat_is_finished_on_the_page() {
    let s = surfaces().await;
    let record = s.ask("alice", two()).await;
    s.engine
        .handle("tg", reply_on(&record, "tg", "e1", "2: 2"))
        .await
        .unwrap();
    let ended = s.on_page(&record, 0).await;
    assert_eq!(
        result(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Staging"], "notify": ["On-call"]}}})
    );
}

/// The channels the engine told of a delivery, in order.
#[derive(Debug, Default)]
struct Deliveries(Mutex<Vec<String>>);

impl Observer for Deliveries {
    fn delivered(&self, channel: &str) {
        self.0.lock().unwrap().push(channel.to_owned());
    }
}

impl Deliveries {
    /// The channels told, sorted, once there are `count` (the hook follows
    /// the store's write, which the test sees first).
    async fn sorted(&self, count: usize) -> Vec<String> {
        let told = tokio::time::timeout(PATIENCE, async {
            loop {
                let channels = self.0.lock().unwrap().clone();
                if channels.len() >= count {
                    return channels;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        let mut channels = told.unwrap_or_else(|_| self.0.lock().unwrap().clone());
        channels.sort();
        channels
    }
}

#[tokio::test]
async fn each_surface_reached_is_told_to_the_observer_once_and_a_refused_one_never() {
    let observed = Arc::new(Deliveries::default());
    let s = surfaces_observed(tempfile::tempdir().unwrap(), observed.clone()).await;
    s.ask("alice", single()).await;
    assert_eq!(observed.sorted(3).await, ["sl", "tg", "web"]);

    s.tg.fail_next([ChannelError::Rejected {
        reason: "bot was blocked by the user".into(),
    }]);
    let record = s.ask("bob", single()).await;
    assert_eq!(record.surface("tg").unwrap().state, SurfaceState::Failed);
    // Nothing more comes for the refused surface.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(observed.sorted(4).await, ["sl", "sl", "tg", "web"]);
}
