//! The person and the harness of the inbound suite ([`super`]): what a
//! platform's test implements ([`PersonPlatform`]), and [`Person`], which
//! starts a fresh store, an engine with the platform's channel, and a
//! [`Sink`] between the adapter and the engine that a scenario makes slow
//! or failing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_core::channel::{
    Channel, Destination, InboundError, InboundEvent, InboundKind, InboundSink, MessageRef, Reaction, UserRef,
};
use askgate_core::form::FormValue;
use askgate_core::render::FreeTextInput;
use askgate_core::{ButtonAction, ButtonToken, Capabilities, Locale, QuestionId, ToolResult};
use askgate_engine::{Clock, Engine, EngineError, NewQuestion, NoObserver, Recipient, RecipientSurface, SessionKind};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::conformance::nudges::Posted;
use crate::conformance::outbound::Shown;

/// The name of the recipient who is the person, in a direct conversation
/// with the bot. Every platform configures it.
pub const PERSON: &str = "person";

/// The name of the group recipient, whose `answerers` list the person only,
/// where the platform has [`Features::groups`].
pub const GROUP: &str = "team";

/// A recipient on channel `channel` at `conversation`, in English, whom
/// `answerers` may answer for (none: whoever is in the direct conversation).
pub fn recipient(name: &str, display_name: &str, channel: &str, conversation: &str, answerers: &[&str]) -> Recipient {
    let destination = askgate_core::channel::Destination {
        conversation: conversation.into(),
        thread: None,
    };
    let answerers = answerers.iter().map(|id| (*id).to_owned()).collect();
    // The suite's channels are chat platforms; the kind only names them in summaries.
    let surface = RecipientSurface::new(channel, channel, destination, answerers);
    Recipient::on(name, display_name, surface, Locale::En)
}

/// How long anything may take before a scenario gives up on it: an action's
/// wait for what the platform shows, the agent's wait for its result.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// How long the slow store takes to apply an event: longer than any
/// platform's first-response budget (Discord and Slack want 3 s).
pub const SLOW_STORE: Duration = Duration::from_secs(4);

/// How long the agent's `ask_user` call waits, at most.
const AGENT_WAIT: Duration = Duration::from_secs(120);

/// One question, single-select: native buttons wherever there are any.
pub(crate) const SINGLE: &str = r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?",
    "options":[{"label":"Staging (Recommended)"},{"label":"Production"},{"label":"Canary"}]}],"timeoutSeconds":600}"#;

/// Two questions, the second multi-select: always text.
pub(super) const TWO: &str = r#"{"questions":[
    {"id":"deploy","header":"Deploy","question":"Where should this build go?","options":[{"label":"Staging"},{"label":"Production"}]},
    {"id":"notify","header":"Notify","question":"Who should be told?","multiSelect":true,
     "options":[{"label":"Team"},{"label":"On-call"},{"label":"Pager"}]}],"timeoutSeconds":600}"#;

/// What applies to a platform that no declaration of its adapter says:
/// how the suite reaches the person. (What the adapter declares — typed
/// replies, Other…, forms, redelivery — is read from its declarations.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    /// Group conversations: the suite configures [`GROUP`], where a stranger
    /// can see the person's question.
    pub groups: bool,
    /// Someone else can act on the person's question: in a group where
    /// `groups`, else another way (another recipient's page link).
    pub strangers: bool,
    /// The adapter's events go through [`InboundSink::handle`] (through the
    /// suite's [`Sink`]), and the person sees the engine's reactions in the
    /// engine's words. False for the web page, whose answers go through
    /// [`Engine::submit`] over HTTP and are worded by the page.
    pub sink: bool,
}

impl Features {
    /// A chat platform's: groups, someone else who can act, and events
    /// through the sink. What [`PersonPlatform::features`] assumes.
    pub const CHAT: Self = Self {
        groups: true,
        strangers: true,
        sink: true,
    };
}

/// Who acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// The person the question is for.
    Recipient,
    /// Someone who may not answer it.
    Stranger,
}

/// What the acting person saw after they acted, as the platform shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A notice only they see: a callback answer, an ephemeral message.
    Notice {
        /// Its text.
        text: String,
        /// Whether it interrupts (an alert) rather than flashes by.
        alert: bool,
    },
    /// A message in the conversation.
    Reply {
        /// Its text.
        text: String,
    },
    /// A free-text input was opened for them (a force-reply, a modal).
    FreeTextInput,
    /// A form was opened for them.
    Form {
        /// Its fields' ids (the question ids), in order.
        fields: Vec<String>,
    },
    /// Nothing but the platform's own acknowledgement.
    Nothing,
}

/// An adapter wired to its fake platform, as a person uses it.
///
/// Each action returns what the acting person then saw. The engine's answer
/// can come asynchronously (a queued reply), so an action waits for it, at
/// most [`PATIENCE`], and returns [`Seen::Nothing`] when nothing came.
#[async_trait]
pub trait PersonPlatform: Send + Sync {
    /// What applies to this platform: a chat platform's
    /// ([`Features::CHAT`]) unless it says otherwise.
    fn features(&self) -> Features {
        Features::CHAT
    }

    /// The adapter, as the engine uses it.
    fn channel(&self) -> Arc<dyn Channel>;

    /// The recipients to configure: [`PERSON`] in a direct conversation with
    /// no `answerers`, and where [`Features::groups`], [`GROUP`] whose
    /// `answerers` list the person only.
    fn recipients(&self) -> Vec<Recipient>;

    /// Starts the adapter's inbound side into `sink` (a poller, a webhook
    /// route the fake delivers to, a server for the page).
    async fn connect(&self, engine: Engine, sink: Arc<dyn InboundSink>);

    /// `who` taps the button carrying `token` on the question's message.
    async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen;

    /// `who` types `text` as a reply to the question's message.
    async fn type_reply(&self, _who: Who, _question: &QuestionRecord, _text: &str) -> Seen {
        unsupported("typed replies")
    }

    /// `who` answers the free-text input Other… opened with `text` (a reply
    /// to the force-reply, a submitted modal, the page's own-answer field).
    async fn answer_free_text(&self, _who: Who, _question: &QuestionRecord, _text: &str) -> Seen {
        unsupported("free text")
    }

    /// `who` submits the form Answer… (`token`) opened, with these values.
    async fn submit_form(&self, _who: Who, _question: &QuestionRecord, _token: &str, _values: Vec<FormValue>) -> Seen {
        unsupported("forms")
    }

    /// `who` writes `text` to the bot in a direct conversation of their own,
    /// one that is no recipient's, and sees the bot's reply to it (where the
    /// channel declares [`Capabilities::typed_replies`]).
    async fn write_privately(&self, _who: Who, _text: &str) -> Seen {
        unsupported("typed messages")
    }

    /// Whether the platform delivers `event` again when the adapter did not
    /// acknowledge it: the adapter's own declaration
    /// ([`askgate_adapter::Inbound::redelivers`]), which its driver acts on
    /// and the suite holds the platform to. Asked where [`Features::sink`].
    fn redelivers(&self, _event: &InboundEvent) -> bool {
        unsupported("an inbound driver")
    }

    /// How often the adapter told the platform that a response will follow
    /// (`Inbound::defer`), where it has a first-response budget; `None` where
    /// it has none.
    fn deferrals(&self) -> Option<usize> {
        None
    }

    /// Whether the platform shows an alert otherwise than a notice that
    /// flashes by (Telegram's `show_alert`). Where every notice looks the
    /// same (a Discord or Slack ephemeral message), the platform reports
    /// each with `alert: false` and the suite asks for no alerts.
    fn alerts(&self) -> bool {
        true
    }

    /// Whether the platform can show a notice to someone acting in a
    /// conversation they are not a member of (a stranger delivered into the
    /// person's DM). Slack cannot (`chat.postEphemeral` needs the user in
    /// the conversation: `user_not_in_channel`); there the suite checks the
    /// engine's refusal only.
    fn notices_outside_conversations(&self) -> bool {
        true
    }

    /// The message `message` as the platform shows it now; `None` where the
    /// platform shows no message of its own to read back (askgate's page,
    /// which the browser suite reads).
    async fn shown(&self, message: &MessageRef) -> Option<Shown>;

    /// The platform's own id and name for `who`: whom a nudge mentions
    /// (`conformance::nudges`).
    fn user(&self, _who: Who) -> UserRef {
        unsupported("people of its own to mention")
    }

    /// The bot's messages in `conversation` as people see them now, oldest
    /// first (`conformance::nudges` reads nudges back); `None` where the
    /// platform keeps no messages of its own (askgate's page).
    async fn posted(&self, _conversation: &str) -> Option<Vec<Posted>> {
        None
    }

    /// Every request the fake platform refused as invalid by the platform's
    /// own published spec since it started (`askgate-testkit/spec`), each
    /// described: a request the real platform would refuse is a defect even
    /// where askgate went on without it (a notice that never showed).
    fn violations(&self) -> Vec<String>;
}

fn unsupported(what: &str) -> ! {
    panic!("the suite asked a platform without {what} to use them: its features are wrong")
}

/// One event the engine was handed through the [`Sink`], and how it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// The event.
    pub event: InboundEvent,
    /// What `handle` returned.
    pub outcome: Result<Reaction, InboundError>,
}

/// The engine as the adapter sees it, with a store that the scenarios can
/// make slow (each `handle` delayed) or failing (`handle` returns
/// [`InboundError::Unavailable`] with the engine's not-saved notice) for the
/// next few events. It records every event it was handed.
#[derive(Debug)]
pub struct Sink {
    engine: Engine,
    delays: Mutex<(usize, Duration)>,
    failures: AtomicUsize,
    handled: Mutex<Vec<Handled>>,
}

impl Sink {
    /// The real `engine`, neither slow nor failing yet.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            delays: Mutex::new((0, Duration::ZERO)),
            failures: AtomicUsize::new(0),
            handled: Mutex::new(Vec::new()),
        }
    }

    /// Delays each of the next `count` events by `by` before handling it.
    pub fn delay_next(&self, count: usize, by: Duration) {
        *lock(&self.delays) = (count, by);
    }

    /// Fails the next `count` events, as a full disk would.
    pub fn fail_next(&self, count: usize) {
        self.failures.store(count, Ordering::SeqCst);
    }

    /// Every event handed over so far, in order.
    pub fn handled(&self) -> Vec<Handled> {
        lock(&self.handled).clone()
    }

    /// The events that were taps on the button carrying `token`.
    pub fn taps(&self, token: &str) -> Vec<Handled> {
        self.handled()
            .into_iter()
            .filter(|handled| matches!(&handled.event.kind, InboundKind::ButtonPressed { token: t, .. } if t == token))
            .collect()
    }

    fn take_delay(&self) -> Option<Duration> {
        let mut delays = lock(&self.delays);
        let (count, by) = &mut *delays;
        (*count > 0).then(|| {
            *count -= 1;
            *by
        })
    }
}

#[async_trait]
impl InboundSink for Sink {
    async fn handle(&self, channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
        if let Some(delay) = self.take_delay() {
            tokio::time::sleep(delay).await;
        }
        let failing = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1))
            .is_ok();
        let outcome = if failing {
            Err(InboundError::Unavailable {
                reason: "the conformance suite made the store fail".to_owned(),
                notice: Locale::En.chrome().not_saved().to_owned(),
            })
        } else {
            self.engine.handle(channel, event.clone()).await
        };
        lock(&self.handled).push(Handled {
            event,
            outcome: outcome.clone(),
        });
        outcome
    }

    async fn attach(&self, channel: &str, question: &QuestionId, message: MessageRef) {
        self.engine.attach(channel, question, message).await;
    }

    async fn cursor(&self, channel: &str) -> Option<String> {
        self.engine.cursor(channel).await
    }

    async fn save_cursor(&self, channel: &str, cursor: &str) {
        self.engine.save_cursor(channel, cursor).await;
    }

    fn stranger(&self, channel: &str, destination: &Destination) -> Option<Locale> {
        self.engine.stranger(channel, destination)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A question an agent asked, and that agent waiting for its result.
#[derive(Debug)]
pub struct Asked {
    /// The question as delivered (its messages are known).
    pub record: QuestionRecord,
    agent: JoinHandle<Result<QuestionRecord, EngineError>>,
}

impl Asked {
    /// The token of the question's button for `action`.
    pub fn token(&self, action: ButtonAction) -> String {
        ButtonToken {
            question: self.record.id.clone(),
            action,
        }
        .encode()
    }

    /// The tool result the waiting agent got, within [`PATIENCE`].
    pub async fn result(&mut self) -> Value {
        let record = tokio::time::timeout(PATIENCE, &mut self.agent)
            .await
            .unwrap_or_else(|_| panic!("the waiting agent got no result within {PATIENCE:?}"))
            .unwrap_or_else(|error| panic!("the waiting agent failed: {error}"))
            .unwrap_or_else(|error| panic!("the engine failed the waiting agent: {error}"));
        assert!(
            record.status.is_final(),
            "the waiting agent got no result: the question is still {}",
            record.status
        );
        tool_result(&record)
    }
}

/// The tool result of an ended question, as the agent API returns it.
fn tool_result(record: &QuestionRecord) -> Value {
    let answers = record.resolution.as_ref().and_then(|r| r.answers.as_ref());
    let result = match (record.status, answers) {
        (QuestionStatus::Answered, Some(answers)) => ToolResult::from(answers),
        (QuestionStatus::DeliveryFailed, _) => ToolResult::DeliveryFailed,
        _ => ToolResult::NoAnswer,
    };
    serde_json::to_value(result).unwrap_or_else(|error| panic!("a tool result is JSON: {error}"))
}

/// A person on a platform, with the real engine and store behind it: what
/// every scenario acts through.
pub struct Person<'a> {
    platform: &'a dyn PersonPlatform,
    features: Features,
    /// The adapter's channel, as the engine delivers through it.
    channel: Arc<dyn Channel>,
    engine: Engine,
    sink: Arc<Sink>,
    sessions: AtomicUsize,
    /// Stops the engine's timers when the person goes.
    _timers: oneshot::Sender<()>,
    /// The store's directory, removed when the person goes.
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Person<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Person")
            .field("features", &self.features)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl<'a> Person<'a> {
    /// The engine over a fresh store in a temporary directory, with the
    /// platform's channel and recipients, started, its timers running, and
    /// the platform's inbound side connected to it through a [`Sink`].
    pub async fn start(platform: &'a dyn PersonPlatform) -> Self {
        Self::start_with(platform, |recipients| recipients).await
    }

    /// [`Person::start`], with the platform's recipients changed by `change`
    /// first (the edge suite gives them names of 200 characters).
    pub async fn start_with(
        platform: &'a dyn PersonPlatform,
        change: impl FnOnce(Vec<Recipient>) -> Vec<Recipient>,
    ) -> Self {
        let features = platform.features();
        let recipients = change(platform.recipients());
        let named = |name: &str| recipients.iter().find(|r| r.name == name).cloned();
        let person = named(PERSON).unwrap_or_else(|| panic!("the platform MUST configure the recipient \"{PERSON}\""));
        assert!(
            person.surfaces.iter().all(|surface| surface.answerers.is_empty()),
            "\"{PERSON}\" is a direct conversation: no answerers"
        );
        if features.groups {
            let group = named(GROUP)
                .unwrap_or_else(|| panic!("a platform with groups MUST configure the recipient \"{GROUP}\""));
            assert_eq!(
                group
                    .surfaces
                    .iter()
                    .map(|surface| surface.answerers.len())
                    .sum::<usize>(),
                1,
                "\"{GROUP}\"'s answerers MUST be the person only, so that anyone else is a stranger"
            );
        }
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("the suite needs a temporary directory: {error}"));
        let store = SqliteStore::open(&dir.path().join("askgate.db"))
            .await
            .unwrap_or_else(|error| panic!("the suite's store did not open: {error}"));
        let channel = platform.channel();
        let engine = Engine::new(
            Arc::new(store),
            vec![channel.clone()],
            recipients,
            Clock::system(),
            Arc::new(NoObserver),
        );
        engine
            .start()
            .await
            .unwrap_or_else(|error| panic!("the engine did not start: {error}"));
        let (timers, stop) = oneshot::channel::<()>();
        let running = engine.clone();
        tokio::spawn(async move {
            running
                .run_timers(async move {
                    // A dropped sender stops the timers as well as a sent stop.
                    let _ = stop.await;
                })
                .await;
        });
        let sink = Arc::new(Sink::new(engine.clone()));
        platform.connect(engine.clone(), sink.clone()).await;
        Self {
            platform,
            features,
            channel,
            engine,
            sink,
            sessions: AtomicUsize::new(0),
            _timers: timers,
            _dir: dir,
        }
    }

    /// The platform.
    pub fn platform(&self) -> &dyn PersonPlatform {
        self.platform
    }

    /// What applies to the platform that its adapter does not declare.
    pub fn features(&self) -> Features {
        self.features
    }

    /// What the adapter's channel declares it can show and take now (read
    /// when asked: a Discord channel's check settles its typed replies).
    pub fn capabilities(&self) -> Capabilities {
        self.channel.capabilities().clone()
    }

    /// Typed messages reach askgate (`TextReply`), as the channel declares.
    pub fn typed_replies(&self) -> bool {
        self.capabilities().typed_replies
    }

    /// Other… opens a free-text input (a force-reply, a modal, a field on
    /// the page), as the channel declares.
    pub fn free_text(&self) -> bool {
        self.capabilities().free_text_input != FreeTextInput::None
    }

    /// Answer… opens a form with one field per question (a modal, a view,
    /// the page), as the channel declares.
    pub fn forms(&self) -> bool {
        self.capabilities().forms.is_some()
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The store's stand-in between the adapter and the engine.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// An agent asks `to` this request (in a session of its own) and waits
    /// for the result; returns once the question is delivered.
    pub async fn ask(&self, to: &str, request: &str) -> Asked {
        self.ask_within(to, request, PATIENCE).await
    }

    /// [`Person::ask`], waiting at most `within` for the delivery (a
    /// platform's pacing delays a long run of large prompts to one person).
    pub async fn ask_within(&self, to: &str, request: &str, within: Duration) -> Asked {
        let request = askgate_core::validate_json(request)
            .unwrap_or_else(|errors| panic!("the suite's request is invalid: {errors}"));
        let session = self.sessions.fetch_add(1, Ordering::SeqCst);
        let record = self
            .engine
            .ask(NewQuestion {
                nudges: askgate_engine::Nudges::default(),
                callback_url: None,
                agent: "conformance".into(),
                to: to.into(),
                session_id: Some(format!("inbound-{session}")),
                run_id: None,
                session_kind: SessionKind::Main,
                request,
                idempotency_key: None,
            })
            .await
            .unwrap_or_else(|error| panic!("the engine refused the suite's question: {error}"));
        let engine = self.engine.clone();
        let id = record.id.clone();
        let agent = tokio::spawn(async move { engine.wait(&id, AGENT_WAIT).await });
        let delivered = tokio::time::timeout(within, async {
            loop {
                let current = self.current(&record.id).await;
                if current.delivery().is_some_and(|d| d.complete && !d.messages.is_empty()) {
                    return current;
                }
                assert!(
                    !current.status.is_final(),
                    "the adapter did not deliver the suite's question: {:?}",
                    current.resolution
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the question was not delivered within {within:?}"));
        Asked {
            record: delivered,
            agent,
        }
    }

    /// The question as it is now.
    pub async fn current(&self, id: &QuestionId) -> QuestionRecord {
        self.engine
            .get(id)
            .await
            .unwrap_or_else(|error| panic!("the store failed: {error}"))
            .unwrap_or_else(|| panic!("question {id} is gone"))
    }

    /// The question once it ended, or `None` if it is still pending after `within`.
    pub async fn ended_within(&self, id: &QuestionId, within: Duration) -> Option<QuestionRecord> {
        let record = tokio::time::timeout(within + Duration::from_secs(1), self.engine.wait(id, within))
            .await
            .ok()?
            .unwrap_or_else(|error| panic!("the store failed: {error}"));
        record.status.is_final().then_some(record)
    }

    /// `who` taps the question's button for `action`.
    pub async fn tap(&self, who: Who, asked: &Asked, action: ButtonAction) -> Seen {
        self.platform.tap(who, &asked.record, &asked.token(action)).await
    }

    /// The display name the engine knows `recipient` by.
    pub(crate) fn display_name(&self, recipient: &str) -> String {
        let Some(known) = self.engine.recipient(recipient) else {
            panic!("no recipient \"{recipient}\"");
        };
        known.display_name.clone()
    }
}

/// The notice an accepted answer gets.
pub(crate) fn submitted() -> Seen {
    notice(Locale::En.chrome().answer_submitted(), false)
}

pub(super) fn notice(text: &str, alert: bool) -> Seen {
    Seen::Notice {
        text: text.to_owned(),
        alert,
    }
}

pub(crate) fn answered(answers: &Value) -> Value {
    json!({"status": "answered", "answers": {"answers": answers}})
}
