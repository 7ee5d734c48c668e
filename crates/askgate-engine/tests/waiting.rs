//! When nobody answers: reminders under each delivered copy, an escalation
//! ladder, quiet hours in a person's time zone, and the notice an admin gets
//! when a question cannot reach its person. The real engine over the real
//! SQLite store and recording fake channels, in controlled time.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use askgate_core::channel::{ChannelError, Destination, InboundSink, MessageRef};
use askgate_core::when::{Point, QuietHours, Zone};
use askgate_core::{AskRequest, ButtonAction, Locale, QuestionId};
use askgate_engine::{
    Clock, Engine, EngineError, Escalation, NewQuestion, NoObserver, Nudges, Recipient, RecipientSurface, Waiting,
};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore, StepKind, StepWrite, Store};
use askgate_testkit::FakeChannel;
use support::{PATIENCE, START, event, question, single};
use tempfile::TempDir;
use tokio::sync::oneshot;

/// Alice on Telegram (a direct chat) and askgate's page, the team's group
/// (Alice and Carol answer there), Lead on Telegram and Slack, and an admin
/// on Slack.
struct World {
    engine: Engine,
    clock: Clock,
    tg: FakeChannel,
    sl: FakeChannel,
    _dir: TempDir,
    stop: oneshot::Sender<()>,
    timers: tokio::task::JoinHandle<()>,
}

fn surface(channel: &str, kind: &str, conversation: &str, answerers: &[&str]) -> RecipientSurface {
    RecipientSurface::new(
        channel,
        kind,
        Destination {
            conversation: conversation.into(),
            thread: None,
        },
        answerers.iter().map(|id| (*id).to_owned()).collect(),
    )
}

fn points(texts: &[&str]) -> Vec<Point> {
    texts.iter().map(|text| Point::parse(text).unwrap()).collect()
}

fn recipients(alice: Waiting) -> Vec<Recipient> {
    let mut alice_on = Recipient::on("alice", "Alice", surface("tg", "telegram", "dm-alice", &[]), Locale::En);
    alice_on.surfaces.push(surface("web", "web", "alice", &[]));
    vec![
        alice_on.waiting(alice.clone()),
        Recipient::on(
            "team",
            "The team",
            surface("tg", "telegram", "group-1", &["u-alice", "u-carol"]),
            Locale::En,
        )
        .waiting(alice),
        Recipient {
            surfaces: vec![
                surface("tg", "telegram", "dm-lead", &[]),
                surface("sl", "slack", "dm-lead-sl", &[]),
            ],
            ..Recipient::on("lead", "Lead", surface("tg", "telegram", "dm-lead", &[]), Locale::En)
        },
        Recipient::on("admin", "Admin", surface("sl", "slack", "dm-admin", &[]), Locale::ZhCn),
    ]
}

async fn world(alice: Waiting) -> World {
    world_at(START, alice).await
}

async fn world_at(now: i64, alice: Waiting) -> World {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("askgate.db")).await.unwrap());
    start(dir, store, Clock::manual(now), alice).await
}

async fn start(dir: TempDir, store: Arc<dyn Store>, clock: Clock, alice: Waiting) -> World {
    let (tg, sl) = (FakeChannel::with_buttons("tg"), FakeChannel::with_buttons("sl"));
    tg.direct("dm-alice", "u-alice");
    tg.direct("dm-lead", "u-lead");
    sl.direct("dm-lead-sl", "u-lead-sl");
    let engine = Engine::new(
        store.clone(),
        vec![
            Arc::new(tg.clone()),
            Arc::new(sl.clone()),
            Arc::new(FakeChannel::sending_nothing("web")),
        ],
        recipients(alice),
        clock.clone(),
        Arc::new(NoObserver),
    );
    engine.start().await.unwrap();
    let (stop, timers) = support::spawn_timers(&engine);
    World {
        engine,
        clock,
        tg,
        sl,
        _dir: dir,
        stop,
        timers,
    }
}

impl World {
    /// Kills this engine as a crash would: its timers have stopped when
    /// this returns (a timer left running would take the next step due in
    /// the engine started after it, and send it on this one's fake chat).
    /// The data directory outlives it.
    async fn kill(self) -> TempDir {
        let Self {
            stop,
            timers,
            _dir: dir,
            ..
        } = self;
        drop(stop);
        timers.await.expect("the timers stop");
        dir
    }

    /// Asks `new`, and waits for its copies to be delivered.
    async fn ask(&self, new: NewQuestion) -> QuestionRecord {
        let record = self.engine.ask(new).await.unwrap();
        self.until(&record.id, QuestionRecord::delivered).await
    }

    async fn until(&self, id: &QuestionId, done: impl Fn(&QuestionRecord) -> bool) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let record = self.engine.get(id).await.unwrap().unwrap();
                if done(&record) {
                    return record;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the question got there in time")
    }

    /// Moves the clock to `seconds` after the start of the test's question.
    fn at(&self, asked: &QuestionRecord, seconds: i64) {
        let target = asked.created_at + seconds * 1000;
        let now = self.clock.now();
        assert!(target >= now, "the clock only moves forward");
        self.clock
            .advance(Duration::from_millis(u64::try_from(target - now).unwrap()));
    }
}

/// Waits until `chat` has sent `count` nudges, and returns them.
async fn nudges(chat: &FakeChannel, count: usize) -> Vec<(Destination, Option<MessageRef>, String, Vec<String>)> {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let sent = chat.nudges();
            if sent.len() >= count {
                return sent;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{count} nudges were not sent; sent: {:?}", chat.nudges()))
}

/// A moment for the sweep to do what it would (it runs on the test's
/// clock, then writes and sends on real time): used only to show that
/// nothing more was sent.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn asked_with(to: &str, request: AskRequest, nudges: Nudges) -> NewQuestion {
    NewQuestion {
        nudges,
        callback_url: None,
        ..question(to, request)
    }
}

/// An escalation to Lead `after` seconds without an answer.
fn to_lead_after(after: u32) -> Nudges {
    Nudges {
        remind: None,
        escalate: Some(vec![Escalation {
            after,
            to: "lead".into(),
        }]),
    }
}

fn remind(texts: &[&str]) -> Waiting {
    Waiting {
        nudges: Nudges {
            remind: Some(points(texts)),
            escalate: None,
        },
        ..Waiting::default()
    }
}

#[tokio::test]
async fn reminders_come_at_their_points_as_replies_that_mention_the_person() {
    // single() waits 60 s: 50% is at 30 s, "10s before" at 50 s.
    let world = world(remind(&["50%", "10s before"])).await;
    let asked = world.ask(question("alice", single())).await;
    let prompt = asked.surface("tg").unwrap().delivery.clone().unwrap().messages[0].clone();
    assert_eq!(asked.steps.len(), 2, "two reminders planned: {:?}", asked.steps);

    world.at(&asked, 29);
    settle().await;
    assert!(world.tg.nudges().is_empty(), "nothing before the first point");

    world.at(&asked, 30);
    let sent = nudges(&world.tg, 1).await;
    let (to, reply_to, text, mention) = &sent[0];
    assert_eq!(to.conversation, "dm-alice");
    assert_eq!(reply_to.as_ref(), Some(&prompt), "a reply to the question's message");
    assert_eq!(text, "Still waiting for your answer — 30 s left.");
    assert_eq!(mention, &vec!["u-alice".to_owned()]);

    world.at(&asked, 50);
    let sent = nudges(&world.tg, 2).await;
    assert_eq!(sent[1].2, "Still waiting for your answer — 10 s left.");
    settle().await;
    assert_eq!(world.tg.nudges().len(), 2, "each point once");
    // askgate's page is told nothing: it shows the reminder itself.
    let record = world.engine.get(&asked.id).await.unwrap().unwrap();
    assert!(
        record.steps.iter().all(|step| step.done.is_some()),
        "{:?}",
        record.steps
    );
}

#[tokio::test]
async fn a_reminder_in_a_group_mentions_everyone_who_may_answer_there() {
    let world = world(remind(&["50%"])).await;
    let asked = world.ask(question("team", single())).await;
    world.at(&asked, 30);
    let sent = nudges(&world.tg, 1).await;
    assert_eq!(sent[0].0.conversation, "group-1");
    assert_eq!(sent[0].3, vec!["u-alice".to_owned(), "u-carol".to_owned()]);
}

#[tokio::test]
async fn the_question_sets_its_own_reminders_over_the_recipients() {
    let world = world(remind(&["50%"])).await;
    let own = Nudges {
        remind: Some(points(&["10s"])),
        escalate: None,
    };
    let asked = world.ask(asked_with("alice", single(), own)).await;
    assert_eq!(asked.steps.len(), 1);
    assert_eq!(asked.steps[0].at, asked.created_at + 10_000);
    world.at(&asked, 10);
    let sent = nudges(&world.tg, 1).await;
    assert_eq!(sent[0].2, "Still waiting for your answer — 50 s left.");
}

#[tokio::test]
async fn no_reminder_after_an_answer() {
    let world = world(remind(&["50%", "10s before"])).await;
    let asked = world.ask(question("alice", single())).await;
    world.at(&asked, 10);
    let tap = support::tap(&asked, "e1", "u-alice", ButtonAction::Choose(0));
    world.engine.handle("tg", tap).await.unwrap();
    world
        .until(&asked.id, |record| record.status == QuestionStatus::Answered)
        .await;
    world.at(&asked, 59);
    settle().await;
    assert!(
        world.tg.nudges().is_empty(),
        "reminded after the answer: {:?}",
        world.tg.nudges()
    );
}

#[tokio::test]
async fn a_reminder_recorded_before_a_crash_is_not_sent_again_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askgate.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let clock = Clock::manual(START);
    let first = start(dir, store.clone(), clock.clone(), remind(&["50%", "10s before"])).await;
    let asked = first.ask(question("alice", single())).await;
    // The process records the first reminder, then is killed before it
    // sends it: its engine and timers are gone with it.
    let dir = first.kill().await;
    let write = StepWrite::Planned {
        index: 0,
        at: START + 30_000,
        surfaces: &[],
    };
    assert!(store.take_step(&asked.id, write).await.unwrap().is_some());

    let again = start(dir, store, clock, remind(&["50%", "10s before"])).await;
    again.at(&asked, 30);
    settle().await;
    assert!(
        again.tg.nudges().is_empty(),
        "a reminder taken before the crash is never sent twice"
    );
    again.at(&asked, 50);
    let sent = nudges(&again.tg, 1).await;
    assert_eq!(sent[0].2, "Still waiting for your answer — 10 s left.");
}

#[tokio::test]
async fn an_escalation_delivers_to_the_next_recipient_and_the_first_answer_anywhere_wins() {
    let ladder = to_lead_after(20);
    let world = world(Waiting::default()).await;
    let asked = world.ask(asked_with("alice", single(), ladder)).await;
    assert_eq!(world.tg.deliveries().len(), 1, "Alice's copy only, at first");

    world.at(&asked, 20);
    let escalated = world
        .until(&asked.id, |record| {
            record.surfaces.len() == 4 && record.surfaces.iter().all(|surface| surface.delivery.is_some())
        })
        .await;
    let keys: Vec<String> = escalated.surfaces.iter().map(askgate_store::Surface::key).collect();
    assert_eq!(keys, ["tg", "web", "tg@lead", "sl@lead"]);
    assert_eq!(world.sl.deliveries().len(), 1, "Lead's Slack copy");
    // Alice's copy says so, mentioning nobody.
    let sent = nudges(&world.tg, 1).await;
    assert_eq!(sent[0].0.conversation, "dm-alice");
    assert!(sent[0].2.contains("also sent to Lead"), "{}", sent[0].2);
    assert!(sent[0].3.is_empty());
    assert!(escalated.steps[0].done.is_some());

    // Lead answers in his Telegram chat.
    let lead_copy = escalated
        .surface_by_key("tg@lead")
        .unwrap()
        .delivery
        .clone()
        .unwrap()
        .messages[0]
        .clone();
    let token = askgate_core::ButtonToken {
        question: asked.id.clone(),
        action: ButtonAction::Choose(1),
    }
    .encode();
    let mut tap = event(
        "e-lead",
        "u-lead",
        "dm-lead",
        askgate_core::channel::InboundKind::ButtonPressed {
            token,
            message: lead_copy,
        },
    );
    tap.user.display_name = "Lead".into();
    world.engine.handle("tg", tap).await.unwrap();
    let ended = world.until(&asked.id, |record| record.status.is_final()).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    assert_eq!(ended.resolution.as_ref().unwrap().by.as_ref().unwrap().id, "u-lead");
    // Every copy ends in the summary naming who answered: Alice's and
    // Lead's on Telegram, Lead's on Slack.
    tokio::time::timeout(PATIENCE, world.tg.wait_for(|calls| support::finishes(calls) >= 2))
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, world.sl.wait_for(|calls| support::finishes(calls) >= 1))
        .await
        .unwrap();
    for summary in world.tg.summaries().iter().chain(world.sl.summaries().iter()) {
        assert!(summary.contains("Answered by Lead"), "{summary}");
    }
}

#[tokio::test]
async fn alice_may_not_answer_on_leads_copy_nor_lead_on_alices() {
    let ladder = to_lead_after(20);
    let world = world(Waiting::default()).await;
    let asked = world.ask(asked_with("alice", single(), ladder)).await;
    world.at(&asked, 20);
    world
        .until(&asked.id, |record| {
            record.surfaces.iter().all(|surface| surface.delivery.is_some()) && record.surfaces.len() == 4
        })
        .await;
    // Lead taps Alice's copy (forwarded to him, say): refused.
    let stranger = support::tap(&asked, "e-x", "u-lead", ButtonAction::Choose(0));
    world.engine.handle("tg", stranger).await.unwrap();
    settle().await;
    assert_eq!(
        world.engine.get(&asked.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
    // Alice still answers on her own copy after the escalation.
    let tap = support::tap(&asked, "e-a", "u-alice", ButtonAction::Choose(0));
    world.engine.handle("tg", tap).await.unwrap();
    let ended = world.until(&asked.id, |record| record.status.is_final()).await;
    assert_eq!(ended.resolution.unwrap().by.unwrap().id, "u-alice");
}

#[tokio::test]
async fn an_escalation_the_question_cannot_keep_is_refused_naming_its_key() {
    let world = world(Waiting::default()).await;
    let late = Nudges {
        remind: None,
        escalate: Some(vec![
            Escalation {
                after: 10,
                to: "lead".into(),
            },
            Escalation {
                after: 120,
                to: "lead".into(),
            },
        ]),
    };
    match world.engine.ask(asked_with("alice", single(), late)).await {
        Err(EngineError::InvalidPlan { path, message }) => {
            assert_eq!(path, "escalate[1].after");
            assert!(message.contains("120 s") && message.contains("60 s"), "{message}");
        }
        other => panic!("expected the plan refused, got {other:?}"),
    }
    let nobody = Nudges {
        remind: None,
        escalate: Some(vec![Escalation {
            after: 10,
            to: "nobody".into(),
        }]),
    };
    match world.engine.ask(asked_with("alice", single(), nobody)).await {
        Err(EngineError::InvalidPlan { path, .. }) => assert_eq!(path, "escalate[0].to"),
        other => panic!("expected the plan refused, got {other:?}"),
    }
    // Nor to the question's own recipient.
    let herself = Nudges {
        remind: None,
        escalate: Some(vec![Escalation {
            after: 10,
            to: "alice".into(),
        }]),
    };
    match world.engine.ask(asked_with("alice", single(), herself)).await {
        Err(EngineError::InvalidPlan { path, message }) => {
            assert_eq!(path, "escalate[0].to");
            assert!(message.contains("own recipient"), "{message}");
        }
        other => panic!("expected the plan refused, got {other:?}"),
    }
    assert!(world.tg.deliveries().is_empty(), "nothing was asked");
}

/// 2027-03-27 20:30 UTC: 21:30 in Berlin (CET), the evening before clocks
/// go forward at 02:00 on the 28th.
const BEFORE_DST: i64 = 1_806_179_400_000;

fn quiet_in_berlin(points: &[&str]) -> Waiting {
    Waiting {
        zone: Some(Zone::parse("Europe/Berlin").unwrap()),
        quiet_hours: Some(QuietHours::parse("22:00-07:00").unwrap()),
        ..remind(points)
    }
}

fn long(seconds: u32) -> AskRequest {
    let mut request = single();
    request.timeout_seconds = seconds;
    request
}

#[tokio::test]
async fn quiet_hours_hold_a_reminder_to_their_end_in_the_persons_zone_across_daylight_saving() {
    let world = world_at(BEFORE_DST, quiet_in_berlin(&["1h"])).await;
    // Asked at 21:30 CET for twelve hours: the reminder at 22:30 falls in
    // the quiet hours and waits for 07:00 — summer time by then, so 05:00
    // UTC, not 06:00.
    let asked = world.ask(question("alice", long(12 * 3600))).await;
    let step = &asked.steps[0];
    assert_eq!(step.held_from, Some(BEFORE_DST + 3_600_000));
    assert_eq!(step.at, 1_806_210_000_000, "2027-03-28T05:00:00Z");

    world.at(&asked, (1_806_210_000_000 - BEFORE_DST) / 1000 - 1);
    settle().await;
    assert!(world.tg.nudges().is_empty(), "held through the quiet hours");
    world.at(&asked, (1_806_210_000_000 - BEFORE_DST) / 1000);
    nudges(&world.tg, 1).await;
}

#[tokio::test]
async fn a_reminder_held_past_the_questions_end_is_left_out() {
    let world = world_at(BEFORE_DST, quiet_in_berlin(&["1h"])).await;
    let asked = world.ask(question("alice", long(2 * 3600))).await;
    assert!(asked.steps.is_empty(), "{:?}", asked.steps);
}

#[tokio::test]
async fn an_escalation_into_the_targets_quiet_hours_waits_for_them() {
    // The team is quiet in Berlin from 22:00: an escalation to them at
    // 21:40 is not held, one at 22:10 waits for 07:00.
    let world = world_at(BEFORE_DST, quiet_in_berlin(&[])).await;
    let ladder = Nudges {
        remind: None,
        escalate: Some(vec![
            Escalation {
                after: 600,
                to: "team".into(),
            },
            Escalation {
                after: 2400,
                to: "team".into(),
            },
        ]),
    };
    let asked = world
        .engine
        .ask(asked_with("lead", long(12 * 3600), ladder))
        .await
        .unwrap();
    assert_eq!(asked.steps[0].kind, StepKind::Escalate);
    assert_eq!(
        (asked.steps[0].at, asked.steps[0].held_from),
        (BEFORE_DST + 600_000, None)
    );
    assert_eq!(asked.steps[1].held_from, Some(BEFORE_DST + 2_400_000));
    assert_eq!(asked.steps[1].at, 1_806_210_000_000);
}

#[tokio::test]
async fn an_admin_is_told_once_when_a_question_cannot_reach_its_person() {
    let world = world(Waiting {
        notify_failures_to: Some("admin".into()),
        ..Waiting::default()
    })
    .await;
    world.tg.fail_next([ChannelError::Rejected {
        reason: "Forbidden: bot was blocked by the user".into(),
    }]);
    let asked = world.engine.ask(question("alice", single())).await.unwrap();
    let failed = world
        .until(&asked.id, |record| {
            record
                .surface("tg")
                .is_some_and(|surface| surface.state == askgate_store::SurfaceState::Failed)
        })
        .await;
    // Still pending on the page; the admin hears, in their own language.
    assert_eq!(failed.status, QuestionStatus::Pending);
    let told = nudges(&world.sl, 1).await;
    assert_eq!(told[0].0.conversation, "dm-admin");
    assert_eq!(told[0].1, None);
    assert!(
        told[0].2.contains("Alice") && told[0].2.contains("bot was blocked"),
        "{}",
        told[0].2
    );
    assert!(told[0].2.contains("无法"), "in the admin's zh-CN: {}", told[0].2);
    // Recorded once for the question, before it was sent: a later failure
    // of the same question finds it and tells nobody again.
    let record = world.engine.get(&asked.id).await.unwrap().unwrap();
    assert_eq!(
        record
            .steps
            .iter()
            .filter(|step| step.kind == StepKind::NotifyFailure)
            .count(),
        1
    );
    settle().await;
    assert_eq!(world.sl.nudges().len(), 1);
}
