//! Two engines on one PostgreSQL schema, as two replicas run: what one
//! does reaches the other through the store's change feed, and a question
//! expires on time when the replica that asked it is gone. Controlled time
//! (one manual clock for both), real stores, recording fake channels.

// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use askgate_core::QuestionId;
use askgate_engine::{Clock, DirectAnswer, DirectItem, Engine, REDELIVER_AFTER, SWEEP_EVERY, Submitted, Update};
use askgate_store::{PgStore, QuestionStatus};
use askgate_testkit::FakeChannel;
use askgate_testkit::postgres::Schema;
use support::{PATIENCE, START, ended_wait, question, single, until_status, wait_in_background};
use tokio::sync::oneshot;

/// One replica: an engine on its own store (connection pool, change feed)
/// and its own channel, with its timers running until it is stopped.
struct Replica {
    engine: Engine,
    chat: FakeChannel,
    stop: oneshot::Sender<()>,
}

impl Replica {
    async fn start(schema: &Schema, clock: &Clock) -> Self {
        let store = PgStore::connect_with(schema.options(), 4)
            .await
            .expect("the store opens");
        let chat = FakeChannel::with_buttons("chat");
        let (engine, stop) = support::start_engine(Arc::new(store), clock, &chat).await;
        Self { engine, chat, stop }
    }

    /// Gone, as a killed process is: its timers stop and nothing of it is
    /// left to expire its questions.
    fn kill(self) {
        let _ = self.stop.send(());
    }
}

/// Two replicas on a new schema, on one manual clock.
async fn two_replicas() -> (Schema, Clock, Replica, Replica) {
    let schema = Schema::create().await;
    let clock = Clock::manual(START);
    let first = Replica::start(&schema, &clock).await;
    let second = Replica::start(&schema, &clock).await;
    (schema, clock, first, second)
}

/// Alice's answer on her page: option `index` of the one question.
fn choose(index: usize) -> DirectAnswer {
    DirectAnswer::Answers(vec![DirectItem {
        id: "deploy".into(),
        options: vec![index],
        text: None,
    }])
}

/// Reads a live view until it tells of question `id` with `status`.
async fn heard_as(
    view: &mut tokio::sync::broadcast::Receiver<askgate_engine::Update>,
    id: &QuestionId,
    status: QuestionStatus,
) {
    loop {
        let update = tokio::time::timeout(PATIENCE, view.recv())
            .await
            .unwrap_or_else(|_| panic!("no change of {id} to {status} within {PATIENCE:?}"))
            .unwrap();
        if let Update::Changed(record) = update
            && &record.id == id
            && record.status == status
        {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_through_one_replica_ends_the_wait_held_by_the_other() {
    let (_schema, _clock, a, b) = two_replicas().await;
    let mut watching_a = a.engine.subscribe();

    let asked = a.engine.ask(question("alice", single())).await.unwrap();
    let waiting = wait_in_background(&a.engine, &asked.id);
    // A's own change first (the question asked).
    heard_as(&mut watching_a, &asked.id, QuestionStatus::Pending).await;

    let submitted = b.engine.submit("alice", &asked.id, choose(1)).await.unwrap();
    assert!(matches!(submitted, Submitted::Resolved(_)), "{submitted:?}");

    // The wait held by A returns with the exact result, without A's clock moving.
    let ended = ended_wait(waiting).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    assert_eq!(
        support::result(&ended),
        serde_json::json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    // And A's live views hear of it.
    heard_as(&mut watching_a, &asked.id, QuestionStatus::Answered).await;
    assert_eq!(a.engine.waiting(), 0);
    a.kill();
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_of_a_replica_that_is_gone_expire_on_time_on_the_other() {
    let (_schema, clock, a, b) = two_replicas().await;
    let mut heard = b.engine.subscribe();
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(a.engine.ask(question("alice", single())).await.unwrap().id);
    }
    // B has heard of each (its timers hold their deadlines) before A dies.
    let mut unheard: std::collections::HashSet<QuestionId> = ids.iter().cloned().collect();
    while !unheard.is_empty() {
        if let Update::Changed(record) = tokio::time::timeout(PATIENCE, heard.recv()).await.unwrap().unwrap() {
            unheard.remove(&record.id);
        }
    }
    a.kill();

    // Not before the deadline (60 s)…
    clock.advance(Duration::from_secs(59));
    tokio::time::sleep(Duration::from_millis(200)).await;
    for id in &ids {
        assert_eq!(b.engine.get(id).await.unwrap().unwrap().status, QuestionStatus::Pending);
    }
    // …and at it, on B.
    clock.advance(Duration::from_secs(1));
    for id in &ids {
        until_status(&b.engine, id, QuestionStatus::Expired).await;
    }
    b.kill();
}

/// A question B never heard of (its notification lost) still expires: the
/// sweep every `SWEEP_EVERY` finds whatever is due.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_expires_a_due_question_nobody_told_this_replica_of() {
    let schema = Schema::create().await;
    let clock = Clock::manual(START);
    let b = Replica::start(&schema, &clock).await;
    let mut watching = b.engine.subscribe();
    // A replica killed before its notification went out: its question is
    // copied into a row of its own behind every store's back (nobody is
    // notified of a row written in SQL).
    let a = Replica::start(&schema, &clock).await;
    let asked = a.engine.ask(question("alice", single())).await.unwrap().id;
    a.kill();
    let id = QuestionId::parse("01HZX0000000000000000000Z9").unwrap();
    schema
        .execute(&format!(
            "INSERT INTO questions (id, status, agent, session_id, run_id, recipient, surfaces, locale, \
             request, created_at, expires_at, progress, resolution, resolved_at, finished, steps, next_step_at) \
             SELECT '{id}', status, agent, NULL, run_id, recipient, surfaces, locale, request, created_at, \
             expires_at, progress, resolution, resolved_at, finished, steps, next_step_at \
             FROM questions WHERE id = '{asked}'"
        ))
        .await;

    clock.advance(Duration::from_secs(61));
    tokio::time::sleep(Duration::from_millis(100)).await;
    clock.advance(SWEEP_EVERY);
    until_status(&b.engine, &id, QuestionStatus::Expired).await;
    heard_as(&mut watching, &id, QuestionStatus::Expired).await;
    b.kill();
}

/// A question stored by a replica that died before delivering it: after
/// `REDELIVER_AFTER`, exactly one of the other replicas delivers it (and
/// none before, while its asker might still be sending it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_left_undelivered_by_a_dead_replica_is_delivered_once_by_another() {
    let (schema, clock, b, c) = two_replicas().await;
    // What a replica that died before delivering would leave: the question
    // stored with no delivery. (B asks and delivers it; the delivery is then
    // taken back, as if B had died first.)
    // An hour to answer: it is still pending when its delivery is taken over.
    let hour = askgate_core::validate_json(
        r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where?","options":[
            {"label":"Staging"},{"label":"Production"}]}],"timeoutSeconds":3600}"#,
    )
    .unwrap();
    let record = b.engine.ask(question("alice", hour)).await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while b.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "B never delivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let undelivered = serde_json::to_string(&[askgate_store::Surface::sending("chat", "chat", "dm-alice")]).unwrap();
    schema
        .execute(&format!(
            "UPDATE questions SET surfaces = '{undelivered}' WHERE id = '{}'",
            record.id
        ))
        .await;
    let sent_before = b.chat.deliveries().len() + c.chat.deliveries().len();
    // The platform answers the re-delivery slowly: sweeps go on meanwhile,
    // and must not deliver it again while it is on its way.
    for chat in [&b.chat, &c.chat] {
        chat.hold_deliveries(Duration::from_millis(1500));
    }

    clock.advance(REDELIVER_AFTER.saturating_sub(Duration::from_secs(5)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.advance(SWEEP_EVERY);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        b.chat.deliveries().len() + c.chat.deliveries().len(),
        sent_before,
        "not before its time"
    );

    clock.advance(Duration::from_secs(6));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while b.chat.deliveries().len() + c.chat.deliveries().len() == sent_before {
        assert!(tokio::time::Instant::now() < deadline, "nobody delivered the prompt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Sweeps go on; the prompt is delivered once.
    for _ in 0..3 {
        clock.advance(SWEEP_EVERY);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(b.chat.deliveries().len() + c.chat.deliveries().len(), sent_before + 1);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while b.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the re-delivery was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stored = b.engine.get(&record.id).await.unwrap().unwrap();
    assert!(stored.delivery().is_some_and(|delivery| delivery.complete));
    assert_eq!(b.chat.deliveries().len() + c.chat.deliveries().len(), sent_before + 1);
    b.kill();
    c.kill();
}

/// A replica whose platform is out of reach for longer than
/// `REDELIVER_AFTER` keeps retrying its delivery, and holds it: no other
/// replica's sweep delivers the prompt meanwhile (it would go out twice
/// once the platform answers), and it is delivered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_retried_past_the_takeover_time_is_not_taken_over() {
    let (_schema, clock, b, c) = two_replicas().await;
    let down = || askgate_core::ChannelError::Unavailable {
        reason: "error sending request: Connection refused".into(),
    };
    // 0.5 s doubling to 32 s: 20 failures take some eight minutes.
    b.chat.fail_next(std::iter::repeat_with(down).take(20));
    let hour = askgate_core::validate_json(
        r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where?","options":[
            {"label":"Staging"},{"label":"Production"}]}],"timeoutSeconds":3600}"#,
    )
    .unwrap();
    let record = b.engine.ask(question("alice", hour)).await.unwrap();
    let mut waited = Duration::ZERO;
    while b.chat.deliveries().is_empty() {
        assert!(
            waited < 2 * REDELIVER_AFTER + Duration::from_secs(600),
            "B never delivered"
        );
        assert!(c.chat.deliveries().is_empty(), "C took over a delivery B was retrying");
        clock.advance(Duration::from_secs(4));
        waited += Duration::from_secs(4);
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    assert!(
        waited > REDELIVER_AFTER,
        "the retries outlasted the takeover time: {waited:?}"
    );
    // Sweeps and any other retry go on past the longest pause: nobody
    // sends it again.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while b.engine.get(&record.id).await.unwrap().unwrap().delivery().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the delivery was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..20 {
        clock.advance(Duration::from_secs(4));
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    assert_eq!((b.chat.deliveries().len(), c.chat.deliveries().len()), (1, 0));
    b.kill();
    c.kill();
}

/// When the store's change feed may have lost changes (its connection to
/// PostgreSQL was cut and made again), the live views are told to re-read
/// what they show, and a wait whose answer came meanwhile ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_feed_lost_its_connection_views_re_read_and_waits_catch_up() {
    let (schema, _clock, a, b) = two_replicas().await;
    let mut watching_a = a.engine.subscribe();
    let asked = a.engine.ask(question("alice", single())).await.unwrap();
    let waiting = wait_in_background(&a.engine, &asked.id);
    // A's listening connection is cut, and B answers while it is down
    // (its notification, if sent before A listens again, is lost).
    // (This schema's listeners only: other tests run beside this one.)
    schema.cut_listeners().await;
    let skipped = b.engine.submit("alice", &asked.id, DirectAnswer::Skip).await.unwrap();
    assert!(matches!(skipped, Submitted::Resolved(_)), "{skipped:?}");
    let ended = ended_wait(waiting).await;
    assert_eq!(ended.status, QuestionStatus::Skipped);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let update = tokio::time::timeout_at(deadline, watching_a.recv())
            .await
            .expect("A's views are told to re-read")
            .unwrap();
        if matches!(update, Update::Missed) {
            break;
        }
    }
    a.kill();
    b.kill();
}

/// A replica killed between committing an answer and notifying the others
/// of it (here: the row written behind every store's back, so nobody is
/// notified): the wait held by another replica still ends, at its next sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_ends_at_the_next_sweep_when_the_change_was_never_notified() {
    let (schema, clock, a, b) = two_replicas().await;
    let asked = a.engine.ask(question("alice", single())).await.unwrap();
    let waiting = wait_in_background(&a.engine, &asked.id);
    // The wait's first read must come before the write below, or it reads
    // the question ended and nothing is left to show: the wait registers,
    // then reads (one PostgreSQL round trip, about a millisecond), so give
    // it a wide margin once it is registered.
    support::until_waiting(&a.engine).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resolution = askgate_store::Resolution {
        status: QuestionStatus::Cancelled,
        at: START + 1_000,
        by: None,
        answers: None,
        reason: Some("cancelled".to_owned()),
        via: None,
        surface: None,
    };
    schema
        .execute(&format!(
            "UPDATE questions SET status = 'cancelled', resolution = '{}', resolved_at = {} WHERE id = '{}'",
            serde_json::to_string(&resolution).unwrap(),
            resolution.at,
            asked.id
        ))
        .await;
    // Nothing was notified: the wait holds (as long as A's clock stands).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "no notification, no sweep: still waiting");
    // A's sweep reads the questions waited on there.
    clock.advance(SWEEP_EVERY);
    let ended = ended_wait(waiting).await;
    assert_eq!(ended.status, QuestionStatus::Cancelled);
    assert_eq!(a.engine.waiting(), 0);
    a.kill();
    b.kill();
}

/// A reminder is due on both replicas' sweeps at once: one of them takes
/// it, and it is sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_due_on_two_replicas_is_sent_once() {
    let (_schema, clock, first, second) = two_replicas().await;
    let new = askgate_engine::NewQuestion {
        nudges: askgate_engine::Nudges {
            remind: Some(vec![askgate_core::when::Point::parse("50%").unwrap()]),
            escalate: None,
        },
        ..question("alice", single())
    };
    let asked = first.engine.ask(new).await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    // Delivered as the store has it: a reminder goes under a copy whose
    // delivery is recorded (the fake hears of the send a moment before).
    while !first.engine.get(&asked.id).await.unwrap().unwrap().delivered() {
        assert!(tokio::time::Instant::now() < deadline, "the question was not delivered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    clock.advance(Duration::from_secs(30));
    while first.chat.nudges().len() + second.chat.nudges().len() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "nobody reminded");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Both sweeps have had their turn (each runs every second of the clock).
    clock.advance(SWEEP_EVERY);
    tokio::time::sleep(Duration::from_millis(300)).await;
    clock.advance(SWEEP_EVERY);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(first.chat.nudges().len() + second.chat.nudges().len(), 1);
    let record = second.engine.get(&asked.id).await.unwrap().unwrap();
    assert!(record.steps[0].done.is_some());
}

/// The wait that follows an ask starts from the question as its replica
/// wrote it, without reading it back; an answer another replica gave in
/// between must still end that wait at once (the change feed drops the
/// record), not at the next sweep: the clock never moves here. Nothing
/// watches A's live views: a view's read of the change would hide a feed
/// that forgot to drop the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_elsewhere_between_the_ask_and_its_wait_ends_the_wait_at_once() {
    let (_schema, _clock, a, b) = two_replicas().await;
    let asked = a.engine.ask(question("alice", single())).await.unwrap();
    let submitted = b.engine.submit("alice", &asked.id, choose(0)).await.unwrap();
    assert!(matches!(submitted, Submitted::Resolved(_)), "{submitted:?}");
    // Time for A to hear of it before its agent starts to wait (a slower
    // feed would only let the wait begin first, which it also survives).
    tokio::time::sleep(Duration::from_millis(300)).await;

    let ended = ended_wait(wait_in_background(&a.engine, &asked.id)).await;
    assert_eq!(ended.status, QuestionStatus::Answered);
    assert_eq!(a.engine.waiting(), 0);
    a.kill();
    b.kill();
}
