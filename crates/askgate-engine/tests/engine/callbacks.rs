//! Result callbacks in controlled time: a question of an agent with a
//! callback URL has its result sent once it ends, every attempt under one
//! webhook id, failures tried again with backoff until a 2xx and never
//! after it; a receiver that keeps failing is given up on at the end of the
//! window; each attempt is recorded.
// The harness (support/) unwraps outside #[test] functions.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_engine::{CALLBACK_WINDOW, CallbackSender};
use askgate_store::{CallbackAttempt, CallbackStatus, QuestionRecord, QuestionStatus};
use async_trait::async_trait;
use support::{PATIENCE, harness, question, single};

/// One call to the sender: the agent, URL, webhook id and the question's status.
type Call = (String, String, String, QuestionStatus);

/// A sender that answers from a script (then 204), recording every call.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Result<u16, String>>>>,
    /// Each call, in order.
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answers every call with this when the script is over.
    then: Option<Result<u16, String>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Result<u16, String>>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            ..Self::default()
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[async_trait]
impl CallbackSender for Scripted {
    async fn send(&self, agent: &str, url: &str, webhook_id: &str, question: &QuestionRecord) -> Result<u16, String> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).push((
            agent.to_owned(),
            url.to_owned(),
            webhook_id.to_owned(),
            question.status,
        ));
        let next = self.answers.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
        next.or_else(|| self.then.clone()).unwrap_or(Ok(204))
    }
}

const URL: &str = "https://hooks.example.com/askgate";

fn urls() -> HashMap<String, String> {
    HashMap::from([("agent-1".to_owned(), URL.to_owned())])
}

/// Moves the clock a second at a time (each a sweep) until `done`, at most
/// `seconds` of clock time and [`PATIENCE`] of real time.
async fn advance_until(h: &support::Harness, seconds: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + PATIENCE;
    for _ in 0..seconds {
        if done() {
            return true;
        }
        h.clock.advance(Duration::from_secs(1));
        // Let the sweep and the attempts it spawned run.
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(std::time::Instant::now() < deadline, "not within {PATIENCE:?}");
    }
    done()
}

fn statuses(attempts: &[CallbackAttempt]) -> Vec<(u32, CallbackStatus, Option<u16>)> {
    attempts.iter().map(|a| (a.attempt, a.status, a.http_status)).collect()
}

#[tokio::test]
async fn a_result_is_sent_when_the_question_ends_tried_again_until_a_2xx_and_never_after() {
    let h = harness().await;
    let sender = Scripted::new([Err("connection refused".to_owned()), Ok(500)]);
    let _ = h.engine.clone().with_callbacks(Arc::new(sender.clone()), urls());
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    assert_eq!(h.engine.callback_attempts(&record.id).await.unwrap(), Some(vec![]));
    // Pending: nothing is sent.
    assert!(!advance_until(&h, 5, || !sender.calls().is_empty()).await);

    h.engine.cancel("agent-1", &record.id).await.unwrap();
    assert!(
        advance_until(&h, 60, || sender.calls().len() == 3).await,
        "{:?}",
        sender.calls()
    );
    let webhook_id = format!("msg_{}", record.id);
    for call in sender.calls() {
        assert_eq!(
            call,
            (
                "agent-1".to_owned(),
                URL.to_owned(),
                webhook_id.clone(),
                QuestionStatus::Cancelled
            )
        );
    }
    // The third attempt is recorded after its send returns.
    let attempts = tokio::time::timeout(PATIENCE, async {
        loop {
            let attempts = support_attempts(&h, &record).await;
            if attempts.len() == 3 {
                return attempts;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("three attempts recorded");
    assert_eq!(
        statuses(&attempts),
        [
            (1, CallbackStatus::Failed, None),
            (2, CallbackStatus::Failed, Some(500)),
            (3, CallbackStatus::Delivered, Some(204)),
        ]
    );
    // An hour on, a sweep each minute: never sent again.
    for _ in 0..60 {
        h.clock.advance(Duration::from_secs(59));
        assert!(!advance_until(&h, 1, || sender.calls().len() > 3).await);
    }
    assert_eq!(sender.calls().len(), 3);
}

#[tokio::test]
async fn a_receiver_that_keeps_failing_is_given_up_on_when_the_window_closes() {
    let h = harness().await;
    let sender = Scripted {
        then: Some(Ok(503)),
        ..Scripted::default()
    };
    let _ = h.engine.clone().with_callbacks(Arc::new(sender.clone()), urls());
    let record = h.engine.ask(question("alice", single())).await.unwrap();
    h.engine.cancel("agent-1", &record.id).await.unwrap();
    let window = CALLBACK_WINDOW.as_secs();
    let mut given_up = false;
    // The clock in ten-minute leaps (the longest pause), a sweep after each,
    // and the attempt it made sent and recorded before the next leap: on a
    // busy machine it can start after the sweep's few yields, and a leap
    // while it is under way outruns its lease, so that the next sweep sends
    // it a second time. A leap may also make none (a round still running
    // when the clock moved is next due a second after it, past the clock:
    // the next leap makes it), so the wait for it is short and not a check.
    for _ in 0..(window / 600 + 3) {
        let sent = sender.calls().len();
        h.clock.advance(Duration::from_secs(599));
        advance_until(&h, 1, || false).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while sender.calls().len() == sent {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        let attempts = recorded(&h, &sender, &record).await;
        if attempts.last().is_some_and(|a| a.status == CallbackStatus::GaveUp) {
            given_up = true;
            break;
        }
    }
    assert!(given_up, "given up within the window and a little");
    let attempts = support_attempts(&h, &record).await;
    let last = attempts.last().unwrap();
    assert!(last.at <= support::START + i64::try_from(window).unwrap() * 1000 + 600_000);
    assert!(
        attempts[..attempts.len() - 1]
            .iter()
            .all(|a| a.status == CallbackStatus::Failed)
    );
    let count = sender.calls().len();
    assert_eq!(count, attempts.len(), "each call is recorded");
    for _ in 0..20 {
        h.clock.advance(Duration::from_secs(59));
        assert!(
            !advance_until(&h, 1, || sender.calls().len() > count).await,
            "nothing after giving up"
        );
    }
}

/// The attempts once every call the sender saw is recorded (at most
/// [`PATIENCE`] of real time, the clock standing).
async fn recorded(h: &support::Harness, sender: &Scripted, record: &QuestionRecord) -> Vec<CallbackAttempt> {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let attempts = support_attempts(h, record).await;
        if attempts.len() >= sender.calls().len() {
            return attempts;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "an attempt not recorded within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn support_attempts(h: &support::Harness, record: &QuestionRecord) -> Vec<CallbackAttempt> {
    h.engine
        .callback_attempts(&record.id)
        .await
        .unwrap()
        .expect("the question has a callback")
}
