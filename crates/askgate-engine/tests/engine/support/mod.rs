//! The engine tests' harness: the real engine over the real SQLite store and
//! a recording fake channel, in controlled time, and the events a person
//! makes.
// Each test file uses part of the harness.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use askgate_core::channel::{ConversationKind, Destination, InboundEvent, InboundKind, MessageRef, Reaction, UserRef};
use askgate_core::{AskRequest, ButtonAction, ButtonToken, Locale, QuestionId, ToolResult, validate_json};
use askgate_engine::{Clock, Engine, EngineError, NewQuestion, NoObserver, Recipient, RecipientSurface, SessionKind};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore, Store};
use askgate_testkit::{Call, FakeChannel};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(crate) const START: i64 = 1_800_000_000_000;
/// How long a test waits for something that should happen at once.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

pub(crate) struct Harness {
    pub(crate) engine: Engine,
    pub(crate) clock: Clock,
    pub(crate) chat: FakeChannel,
    pub(crate) dir: TempDir,
    pub(crate) stop_timers: oneshot::Sender<()>,
}

pub(crate) fn recipients() -> Vec<Recipient> {
    vec![
        Recipient::on(
            "alice",
            "Alice",
            RecipientSurface::new(
                "chat",
                "chat",
                Destination {
                    conversation: "dm-alice".into(),
                    thread: None,
                },
                vec![],
            ),
            Locale::En,
        ),
        Recipient::on(
            "team",
            "Alice",
            RecipientSurface::new(
                "chat",
                "chat",
                Destination {
                    conversation: "group-1".into(),
                    thread: None,
                },
                vec!["u-alice".into()],
            ),
            Locale::En,
        ),
    ]
}

pub(crate) async fn harness() -> Harness {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clock = Clock::manual(START);
    let chat = FakeChannel::with_buttons("chat");
    start(dir, clock, chat).await
}

pub(crate) async fn start(dir: TempDir, clock: Clock, chat: FakeChannel) -> Harness {
    let store = SqliteStore::open(&dir.path().join("askgate.db"))
        .await
        .expect("the store opens");
    let (engine, stop) = start_engine(Arc::new(store), &clock, &chat).await;
    Harness {
        engine,
        clock,
        chat,
        dir,
        stop_timers: stop,
    }
}

/// An engine on `store` with `chat` and the harness's recipients, started,
/// its timers running until the returned sender is used or dropped.
pub(crate) async fn start_engine(
    store: Arc<dyn Store>,
    clock: &Clock,
    chat: &FakeChannel,
) -> (Engine, oneshot::Sender<()>) {
    // Alice's direct conversation, where she alone may answer.
    chat.direct("dm-alice", "u-alice");
    let engine = Engine::new(
        store,
        vec![Arc::new(chat.clone())],
        recipients(),
        clock.clone(),
        Arc::new(NoObserver),
    );
    engine.start().await.expect("the engine starts");
    let stop = run_timers(&engine);
    (engine, stop)
}

/// Runs `engine`'s timers in the background until the returned sender is
/// used or dropped.
pub(crate) fn run_timers(engine: &Engine) -> oneshot::Sender<()> {
    spawn_timers(engine).0
}

/// [`run_timers`], with the timers' task, which ends once they have
/// stopped: a test that kills an engine awaits it, so that nothing of the
/// killed engine runs on.
pub(crate) fn spawn_timers(engine: &Engine) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let timers = engine.clone();
    let task = tokio::spawn(async move {
        timers
            .run_timers(async {
                let _ = stopped.await;
            })
            .await;
    });
    (stop, task)
}

pub(crate) fn single() -> AskRequest {
    validate_json(
        r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?","options":[
            {"label":"Staging (Recommended)"},{"label":"Production"},{"label":"Canary"}]}],"timeoutSeconds":60}"#,
    )
    .expect("valid")
}

pub(crate) fn two() -> AskRequest {
    validate_json(
        r#"{"questions":[
            {"id":"deploy","header":"Deploy","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
            {"id":"notify","header":"Notify","question":"Who?","multiSelect":true,"options":[{"label":"Team"},{"label":"On-call"},{"label":"Nobody"}]}
        ]}"#,
    )
    .expect("valid")
}

pub(crate) fn question(to: &str, request: AskRequest) -> NewQuestion {
    NewQuestion {
        agent: "agent-1".into(),
        to: to.into(),
        session_id: None,
        run_id: None,
        session_kind: SessionKind::Main,
        request,
        idempotency_key: None,
        nudges: askgate_engine::Nudges::default(),
        callback_url: None,
    }
}

/// What is left of a harness whose engine stopped, as after a crash.
pub(crate) struct Stopped {
    pub(crate) dir: TempDir,
    pub(crate) clock: Clock,
    pub(crate) chat: FakeChannel,
}

impl Stopped {
    /// A new engine on the same store file, clock and channel.
    pub(crate) async fn start_again(self) -> Harness {
        start(self.dir, self.clock, self.chat).await
    }
}

impl Harness {
    /// Stops the engine and its timers, keeping the store file.
    pub(crate) fn stop(self) -> Stopped {
        let Self {
            engine,
            clock,
            chat,
            dir,
            stop_timers,
        } = self;
        drop((engine, stop_timers));
        Stopped { dir, clock, chat }
    }

    pub(crate) async fn ask(&self, to: &str, request: AskRequest) -> QuestionRecord {
        let record = self
            .engine
            .ask(question(to, request))
            .await
            .expect("the question is accepted");
        self.delivered(&record.id).await
    }

    /// The record once its delivery is stored.
    pub(crate) async fn delivered(&self, id: &QuestionId) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let record = self.engine.get(id).await.unwrap().expect("stored");
                if record.delivery().is_some() || record.status.is_final() {
                    return record;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the question is delivered")
    }

    pub(crate) async fn status(&self, id: &QuestionId) -> QuestionStatus {
        self.engine.get(id).await.unwrap().expect("stored").status
    }

    pub(crate) async fn ended(&self, id: &QuestionId) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, self.engine.wait(id, Duration::from_secs(3600)))
            .await
            .expect("the question ends")
            .expect("the question exists")
    }

    pub(crate) async fn summary(&self, count: usize) -> Vec<String> {
        tokio::time::timeout(PATIENCE, self.chat.wait_for(|calls| finishes(calls) >= count))
            .await
            .expect("the message is edited");
        self.chat.summaries()
    }
}

/// An agent waiting (up to an hour) on `engine` for question `id`.
pub(crate) fn wait_in_background(engine: &Engine, id: &QuestionId) -> JoinHandle<Result<QuestionRecord, EngineError>> {
    let (engine, id) = (engine.clone(), id.clone());
    tokio::spawn(async move { engine.wait(&id, Duration::from_secs(3600)).await })
}

/// What the waiting agent got, which must come within `PATIENCE`.
pub(crate) async fn ended_wait(waiting: JoinHandle<Result<QuestionRecord, EngineError>>) -> QuestionRecord {
    tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("the wait ends")
        .unwrap()
        .unwrap()
}

/// Polls `engine` until question `id` has `status`.
pub(crate) async fn until_status(engine: &Engine, id: &QuestionId, status: QuestionStatus) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let record = engine.get(id).await.unwrap().unwrap();
        if record.status == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "question {id} is {} after {PATIENCE:?}, not {status}",
            record.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `engine` until an agent waits on it.
pub(crate) async fn until_waiting(engine: &Engine) {
    tokio::time::timeout(PATIENCE, async {
        while engine.waiting() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("an agent waits");
}

pub(crate) fn finishes(calls: &[Call]) -> usize {
    calls.iter().filter(|call| matches!(call, Call::Finish { .. })).count()
}

pub(crate) fn message(record: &QuestionRecord) -> MessageRef {
    record.delivery().expect("delivered").messages[0].clone()
}

pub(crate) fn event(id: &str, user: &str, conversation: &str, kind: InboundKind) -> InboundEvent {
    InboundEvent {
        event_id: id.into(),
        user: UserRef {
            id: user.into(),
            display_name: if user == "u-alice" {
                "Alice".into()
            } else {
                "Bob".into()
            },
        },
        conversation: conversation.into(),
        conversation_kind: if conversation.starts_with("dm-") {
            ConversationKind::Direct
        } else {
            ConversationKind::Group
        },
        thread: None,
        kind,
    }
}

pub(crate) fn tap(record: &QuestionRecord, event_id: &str, user: &str, action: ButtonAction) -> InboundEvent {
    let token = ButtonToken {
        question: record.id.clone(),
        action,
    }
    .encode();
    event(
        event_id,
        user,
        record.conversation(),
        InboundKind::ButtonPressed {
            token,
            message: message(record),
        },
    )
}

pub(crate) fn typed(record: &QuestionRecord, event_id: &str, user: &str, text: &str, reply: bool) -> InboundEvent {
    let kind = InboundKind::TextReply {
        message: MessageRef {
            conversation: record.conversation().to_owned(),
            message: format!("m-{event_id}"),
        },
        text: text.into(),
        reply_to: reply.then(|| message(record)),
    };
    event(event_id, user, record.conversation(), kind)
}

pub(crate) fn result(record: &QuestionRecord) -> serde_json::Value {
    let tool = match record.status {
        QuestionStatus::Answered => ToolResult::from(record.resolution.as_ref().unwrap().answers.as_ref().unwrap()),
        QuestionStatus::DeliveryFailed => ToolResult::DeliveryFailed,
        _ => ToolResult::NoAnswer,
    };
    serde_json::to_value(tool).unwrap()
}

pub(crate) fn notice(reaction: &Reaction) -> &str {
    match reaction {
        Reaction::Notice { text, .. } | Reaction::Reply { text } => text,
        other => panic!("expected a notice, got {other:?}"),
    }
}
