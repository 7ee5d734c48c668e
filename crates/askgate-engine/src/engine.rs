//! The engine: one place where a question's life is decided.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use askgate_core::answer::{AnswerItem, Answers};
use askgate_core::backoff::backoff;
use askgate_core::channel::{Channel, ChannelError, Delivery};
use askgate_core::request::MAX_FREE_TEXT_CHARS;
use askgate_core::{AskRequest, QuestionId};
use askgate_store::{
    EventKey, ForEvent, IdempotencyKey, InsertRules, Inserted, PendingScope, QuestionRecord, QuestionStatus,
    Resolution, Store, StoreError, Surface, Timestamp,
};
use sha2::Digest as _;
use tokio::sync::{Notify, broadcast};
use tracing::{info, warn};

use crate::clock::{Clock, millis};
use crate::plan::{Nudges, Source, plan};
use crate::recipient::Recipient;

/// The kind of askgate's own page, as a surface (`type = "web"`).
pub const WEB: &str = "web";

/// How many pending questions start-up reads at a time: about 1 MB of
/// deadlines and ids a page. Pages of 1,000 made a start on 100,000 pending
/// a hundred statements, each a round trip, a plan and a descent of the
/// index on PostgreSQL; ten cost a tenth of that.
const START_PAGE: u32 = 10_000;

/// How many times a retryable failure to edit a delivered copy is tried
/// before the edit is left to the next start; a delivery is tried until its
/// question ends, and logged loudly for this many attempts.
pub(crate) const MAX_DELIVERY_ATTEMPTS: u32 = 6;

/// Changes buffered for slow subscribers before they must re-read the store.
const CHANGE_BUFFER: usize = 1024;

/// Whether the asking agent runs as a main session or a sub-agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// A main agent session: may ask.
    #[default]
    Main,
    /// A sub-agent run: `ask_user` is refused (spec §2).
    Subagent,
}

/// A question an agent wants to ask.
#[derive(Debug, Clone)]
pub struct NewQuestion {
    /// The name of the agent token that asks.
    pub agent: String,
    /// The recipient's name.
    pub to: String,
    /// The agent's session, for the one-pending-question rule.
    pub session_id: Option<String>,
    /// The agent's run, for run aborts.
    pub run_id: Option<String>,
    /// Main session or sub-agent.
    pub session_kind: SessionKind,
    /// The validated request.
    pub request: AskRequest,
    /// The agent's idempotency key for this call (an `Idempotency-Key`
    /// header or a tool call id): asking again with the same key and the
    /// same question finds the question asked the first time.
    pub idempotency_key: Option<String>,
    /// The reminders and escalations the question sets itself (the
    /// non-blocking API's `remind`, `escalate`): they win over the agent's
    /// and the recipient's, and an escalation of its own that cannot happen
    /// is refused ([`EngineError::InvalidPlan`]).
    pub nudges: Nudges,
    /// Where the question's result is sent when it ends, over its agent's
    /// configured URL (the API's `callbackUrl`, checked against the
    /// agent's allowed hosts before it gets here).
    pub callback_url: Option<String>,
}

/// What [`Engine::ask_with`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The question.
    pub record: QuestionRecord,
    /// True when the idempotency key found a question asked before: nothing
    /// new was stored or sent.
    pub replayed: bool,
}

/// The engine's limits, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many pending questions per agent token.
    pub max_pending_per_agent: Option<u32>,
    /// At most this many pending questions per recipient.
    pub max_pending_per_recipient: Option<u32>,
}

impl Default for Limits {
    /// No caps: a library user opts in; the binary's configuration sets them.
    fn default() -> Self {
        Self {
            max_pending_per_agent: None,
            max_pending_per_recipient: None,
        }
    }
}

/// An answer given directly rather than typed: askgate's web page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectAnswer {
    /// Skip the whole prompt.
    Skip,
    /// One answer per question id: chosen option indexes and/or own words.
    Answers(Vec<DirectItem>),
}

/// One question's direct answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectItem {
    /// The question id (`deploy_target`).
    pub id: String,
    /// Chosen options, by index.
    pub options: Vec<usize>,
    /// The person's own words, if any.
    pub text: Option<String>,
}

/// Why the engine refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No recipient of that name is configured.
    #[error("no recipient named \"{0}\" is configured")]
    UnknownRecipient(String),
    /// `ask_user` is for main sessions only.
    #[error("ask_user is not available to sub-agent runs")]
    SubagentNotAllowed,
    /// The agent session already waits for an answer.
    #[error("this session already has a pending question ({pending})")]
    QuestionPending {
        /// The question it waits for.
        pending: QuestionId,
    },
    /// No such question (or not one this caller may see).
    #[error("no such question")]
    NotFound,
    /// A direct answer that does not fit the question.
    #[error("{message}")]
    InvalidAnswer {
        /// Where in the answer, `answers.deploy.options[0]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A cap on pending questions was reached.
    #[error("{scope} already has {limit} pending questions, the most allowed")]
    TooManyPending {
        /// Whose cap.
        scope: PendingScope,
        /// The cap.
        limit: u32,
    },
    /// The idempotency key was used before for another question.
    #[error("the idempotency key was used before for question {question}, with another request")]
    KeyReused {
        /// The question asked with the key the first time.
        question: QuestionId,
    },
    /// A free-text answer is longer than askgate takes.
    #[error("{message}")]
    TooLong {
        /// Where in the answer.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A reminder or escalation the question sets that cannot be kept: an
    /// escalation after the question ends, or to nobody configured.
    #[error("{message}")]
    InvalidPlan {
        /// Where in the request, `escalate[1].after`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a direct answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// It resolved the question.
    Resolved(QuestionRecord),
    /// The question had ended already; nothing changed.
    AlreadyEnded(QuestionRecord),
}

/// Hooks for metrics; the server implements them with Prometheus.
pub trait Observer: Send + Sync + 'static {
    /// A question was accepted.
    fn question_created(&self, _record: &QuestionRecord) {}
    /// A question ended.
    fn question_resolved(&self, _record: &QuestionRecord) {}
    /// A delivery attempt failed.
    fn delivery_error(&self, _channel: &str, _error: &ChannelError) {}
    /// A prompt reached a surface on `channel`: sent whole and recorded, or
    /// shown on askgate's own page as the question was stored.
    fn delivered(&self, _channel: &str) {}
    /// A surface on `channel` was given up on: the question could not reach
    /// its person there.
    fn surface_failed(&self, _channel: &str) {}
}

/// What a live view hears from [`Engine::subscribe`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Update {
    /// A question was asked or changed, as it is now.
    Changed(Arc<QuestionRecord>),
    /// Changes made elsewhere may have been lost (another replica's, while
    /// the store's change feed was reconnecting): re-read what is shown.
    Missed,
}

/// An observer that observes nothing.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// The engine. Cheap to clone: clones share one state.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

/// The agents waiting for one question: woken when it ends, with the ended
/// record when the resolution that woke them had it.
#[derive(Default)]
struct Waiter {
    woken: Notify,
    ended: OnceLock<QuestionRecord>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) channels: HashMap<String, Arc<dyn Channel>>,
    pub(crate) recipients: HashMap<String, Recipient>,
    pub(crate) clock: Clock,
    pub(crate) observer: Arc<dyn Observer>,
    pub(crate) changes: broadcast::Sender<Update>,
    /// One wake-up per question with waiting agents, so that an answer wakes
    /// only its own waiters (a shared channel would wake all of them).
    waiters: Mutex<HashMap<QuestionId, Arc<Waiter>>>,
    deadlines: Mutex<BTreeSet<(Timestamp, QuestionId)>>,
    deadline_added: Notify,
    limits: Mutex<Limits>,
    /// Each agent's configured reminders and escalations, by agent name.
    agent_nudges: Mutex<HashMap<String, Nudges>>,
    /// Conversations where a free-text input (Telegram's force-reply) was
    /// just opened and its message is not attached yet, by (channel,
    /// conversation): a reply to it that outruns the attach waits a moment.
    pub(crate) opening: Mutex<HashMap<(String, String), std::time::Instant>>,
    /// Where results are sent when questions end, if anywhere.
    pub(crate) callbacks: Mutex<Option<crate::callbacks::Callbacks>>,
    /// Each person's page link, by their recipient's name: what `/link`
    /// answers in their direct chat ([`Engine::set_page_links`]). Secrets:
    /// never logged.
    pub(crate) page_links: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("channels", &self.inner.channels.keys().collect::<Vec<_>>())
            .field("recipients", &self.inner.recipients.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// How often a process on a shared store expires whatever is due, asked
/// by whichever process ([`Engine::run_timers`]).
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a prompt may stay undelivered on a shared store before another
/// replica delivers it: the replica retrying a delivery holds its
/// `deliver:<id>` lease this long after each attempt, so that a prompt is
/// never sent by two live replicas.
pub const REDELIVER_AFTER: Duration = Duration::from_secs(5 * 60);

/// The most questions one sweep statement expires.
const SWEEP_BATCH: u32 = 100;

/// The longest pause before storing an expiry is tried again: the question
/// expires within moments of the store taking writes again.
const EXPIRY_RETRY_MAX: Duration = Duration::from_secs(2);

/// The longest pause before recording a delivery is tried again.
pub(crate) const STORE_RETRY_MAX: Duration = Duration::from_secs(2);

impl Engine {
    /// An engine over `store`, delivering through `channels` (by name) to
    /// `recipients`. Call [`Engine::start`] before serving.
    pub fn new(
        store: Arc<dyn Store>,
        channels: Vec<Arc<dyn Channel>>,
        recipients: Vec<Recipient>,
        clock: Clock,
        observer: Arc<dyn Observer>,
    ) -> Self {
        let (changes, _) = broadcast::channel(CHANGE_BUFFER);
        Self {
            inner: Arc::new(Inner {
                store,
                channels: channels.into_iter().map(|c| (c.name().to_owned(), c)).collect(),
                recipients: recipients.into_iter().map(|r| (r.name.clone(), r)).collect(),
                clock,
                observer,
                changes,
                waiters: Mutex::new(HashMap::new()),
                deadlines: Mutex::new(BTreeSet::new()),
                deadline_added: Notify::new(),
                limits: Mutex::new(Limits::default()),
                agent_nudges: Mutex::new(HashMap::new()),
                opening: Mutex::new(HashMap::new()),
                callbacks: Mutex::new(None),
                page_links: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Sets the caps on pending questions.
    #[must_use]
    pub fn with_limits(self, limits: Limits) -> Self {
        *self.inner.limits.lock().unwrap_or_else(PoisonError::into_inner) = limits;
        self
    }

    /// Sets each agent's reminders and escalations, by agent name: they win
    /// over the recipient's, and a question's own win over them.
    #[must_use]
    pub fn with_agent_nudges(self, nudges: HashMap<String, Nudges>) -> Self {
        *self.inner.agent_nudges.lock().unwrap_or_else(PoisonError::into_inner) = nudges;
        self
    }

    fn agent_nudges(&self, agent: &str) -> Nudges {
        self.inner
            .agent_nudges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(agent)
            .cloned()
            .unwrap_or_default()
    }

    fn limits(&self) -> Limits {
        *self.inner.limits.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store the engine writes to.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The engine's clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The configured recipient of this name.
    pub fn recipient(&self, name: &str) -> Option<&Recipient> {
        self.inner.recipients.get(name)
    }

    /// Every configured recipient.
    pub fn recipients(&self) -> impl Iterator<Item = &Recipient> {
        self.inner.recipients.values()
    }

    /// Takes up the questions a previous process left: those that expired
    /// meanwhile resolve as expired, the others get their timers back, and
    /// any that was stored but never delivered is delivered now.
    pub async fn start(&self) -> Result<(), EngineError> {
        // Ended before the previous process could edit their messages.
        for record in self.inner.store.unfinished().await? {
            self.spawn_finish(record);
        }
        // Pending questions in bounded pages, keeping only what timers need
        // (deadline, id): 100,000 pending must not mean 100,000 records in
        // memory. A whole record is read only to deliver (the rest of) it.
        let now = self.inner.clock.now();
        let shared = self.inner.store.changes().is_some();
        let mut after = None;
        loop {
            let page = self.inner.store.pending_deadlines(after.as_ref(), START_PAGE).await?;
            let Some(last) = page.last() else { break };
            after = Some((last.expires_at, last.id.clone()));
            let full = page.len() == START_PAGE as usize;
            for pending in page {
                if pending.expires_at <= now {
                    self.expire(&pending.id).await?;
                    continue;
                }
                self.add_deadline(pending.expires_at, pending.id.clone());
                // Never delivered, or cut short: deliver (the rest of) it now
                // — on a shared store only once its asker has had its time
                // (another replica may be sending it now): the sweep does.
                if !pending.delivered
                    && !shared
                    && let Some(record) = self.get(&pending.id).await?
                    && record.status == QuestionStatus::Pending
                {
                    self.spawn_deliveries(&record);
                }
            }
            if !full {
                break;
            }
        }
        Ok(())
    }

    /// Expires questions as their deadlines pass, until `shutdown` completes.
    /// One task serves every question: the deadlines are an ordered set.
    ///
    /// On a store shared with other processes (PostgreSQL) it also follows
    /// their changes ([`Store::changes`]): a question another replica asked
    /// gets a timer here too, and one that ended there wakes the agents
    /// waiting here and the live views; and every [`SWEEP_EVERY`] it expires
    /// whatever is due ([`Store::expire_due`]), so that no question outlives
    /// its deadline because the process that knew of it is gone, and reads
    /// again the questions waited on here ([`Store::ended_among`]), so that
    /// no wait outlives an answer whose notification never came.
    pub async fn run_timers(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Failed attempts to store each expiry (a locked database, a full
        // disk): the deadline is put back a little later, until it is stored.
        let mut failures: HashMap<QuestionId, u32> = HashMap::new();
        let mut feed = self.inner.store.changes();
        let shared = feed.is_some();
        let sweep = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(sweep);
        // Reminders and escalations are taken by whichever process finds
        // them due first, on every store: their times are in the store.
        let steps = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(steps);
        // Result callbacks likewise: the due attempts are in the store.
        let callbacks = self.inner.clock.sleep(SWEEP_EVERY);
        tokio::pin!(callbacks);
        loop {
            let next = self.lock_deadlines().first().cloned();
            tokio::select! {
                () = &mut shutdown => return,
                () = self.inner.deadline_added.notified() => {}
                changes = crate::elsewhere::next_changes(feed.as_mut()) => match changes {
                    Some(changes) => self.changed_elsewhere(changes).await,
                    None => feed = None,
                },
                () = &mut sweep, if shared => {
                    self.sweep().await;
                    sweep.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = &mut callbacks => {
                    self.send_due_callbacks().await;
                    callbacks.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = &mut steps => {
                    self.take_due_steps().await;
                    steps.set(self.inner.clock.sleep(SWEEP_EVERY));
                }
                () = self.sleep_until_deadline(next.as_ref().map(|(at, _)| *at)) => {
                    if let Some((at, id)) = next {
                        self.lock_deadlines().remove(&(at, id.clone()));
                        match self.expire(&id).await {
                            Ok(()) => {
                                failures.remove(&id);
                            }
                            Err(error) => {
                                let attempt = failures.entry(id.clone()).or_insert(0);
                                let pause = backoff(*attempt).min(EXPIRY_RETRY_MAX);
                                *attempt += 1;
                                warn!(question = %id, %error, retry_in = ?pause, "could not expire a question; trying again");
                                let retry_at = self.inner.clock.after(pause);
                                self.lock_deadlines().insert((retry_at, id));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Expires every question that is due, whoever asked it, in batches;
    /// then delivers the prompts that their asking replica has left
    /// undelivered for [`REDELIVER_AFTER`] (it died, most likely): one
    /// replica each, the one that takes the question's `deliver:<id>` lease.
    async fn sweep(&self) {
        self.expire_due().await;
        self.catch_up_waits().await;
        let now = self.inner.clock.now();
        let asked_before = now.saturating_sub(millis(REDELIVER_AFTER));
        let left = match self.inner.store.undelivered(asked_before, SWEEP_BATCH).await {
            Ok(left) => left,
            Err(error) => {
                warn!(%error, "could not look for prompts left undelivered; trying again at the next sweep");
                return;
            }
        };
        for record in left {
            let lease = format!("deliver:{}", record.id);
            let until = now.saturating_add(millis(REDELIVER_AFTER));
            // An owner of this attempt's own: the lease is taken only when
            // free, never renewed, so that this replica's next sweep does
            // not deliver again while this delivery is on its way.
            let attempt = format!("sweep-{}", ulid::Ulid::new().to_string().to_lowercase());
            match self.inner.store.try_lease(&lease, &attempt, now, until).await {
                Ok(true) => {
                    info!(question = %record.id, "delivering a prompt its replica left undelivered");
                    self.spawn_deliveries_holding(&record, &attempt);
                }
                Ok(false) => {}
                Err(error) => warn!(question = %record.id, %error, "could not take a prompt's delivery over"),
            }
        }
    }

    /// Expires every question that is due, whoever asked it, in batches.
    async fn expire_due(&self) {
        loop {
            let resolution = self.resolution(QuestionStatus::Expired, Some("expired"));
            match self.inner.store.expire_due(&resolution, SWEEP_BATCH).await {
                Ok(expired) => {
                    for record in &expired {
                        self.ended(record);
                    }
                    if expired.len() < SWEEP_BATCH as usize {
                        return;
                    }
                }
                Err(error) => {
                    warn!(%error, "could not expire the questions that are due; trying again at the next sweep");
                    return;
                }
            }
        }
    }

    /// Accepts a question: stores it (before anything is sent), then
    /// delivers it in the background. Returns the stored record.
    pub async fn ask(&self, new: NewQuestion) -> Result<QuestionRecord, EngineError> {
        self.ask_with(new).await.map(|accepted| accepted.record)
    }

    /// A new question's surface on `surface` of a recipient's: askgate's own
    /// page sends nothing, so its delivery is known now and is stored with
    /// the question, in the question's own commit, finished already (it has
    /// nothing to edit); every other surface is sent to once it is stored.
    pub(crate) fn new_surface(&self, id: &QuestionId, surface: &crate::recipient::RecipientSurface) -> Surface {
        if self.sends_nothing(&surface.channel) {
            Surface::in_place(
                &surface.channel,
                &surface.kind,
                Delivery::in_place(id, &surface.destination),
            )
        } else {
            Surface::sending(&surface.channel, &surface.kind, &surface.destination.conversation)
        }
    }

    /// Like [`Engine::ask`], and says whether the question was asked before
    /// under the same idempotency key ([`Accepted::replayed`]).
    pub async fn ask_with(&self, new: NewQuestion) -> Result<Accepted, EngineError> {
        if new.session_kind == SessionKind::Subagent {
            return Err(EngineError::SubagentNotAllowed);
        }
        let recipient = self
            .inner
            .recipients
            .get(&new.to)
            .ok_or_else(|| EngineError::UnknownRecipient(new.to.clone()))?;
        let limits = self.limits();
        let rules = InsertRules {
            idempotency: new.idempotency_key.as_ref().map(|key| IdempotencyKey {
                key: key.clone(),
                fingerprint: fingerprint(&new),
            }),
            max_pending_per_agent: limits.max_pending_per_agent,
            max_pending_per_recipient: limits.max_pending_per_recipient,
            callback: self.callback_for(&new),
        };
        let now = self.inner.clock.now();
        let id = new_question_id();
        let surfaces = recipient
            .surfaces
            .iter()
            .map(|surface| self.new_surface(&id, surface))
            .collect();
        let expires_at = now + i64::from(new.request.timeout_seconds) * 1000;
        let source = if new.nudges.escalate.is_some() {
            Source::Question
        } else {
            Source::Configured
        };
        let nudges = new
            .nudges
            .clone()
            .or(&self.agent_nudges(&new.agent))
            .or(&recipient.waiting.nudges);
        let steps = plan(
            &nudges,
            source,
            recipient,
            |name| self.inner.recipients.get(name),
            now,
            expires_at,
        )?;
        let record = QuestionRecord {
            id,
            status: QuestionStatus::Pending,
            agent: new.agent,
            session_id: new.session_id,
            run_id: new.run_id,
            recipient: recipient.name.clone(),
            surfaces,
            locale: recipient.locale,
            expires_at,
            request: new.request,
            created_at: now,
            progress: Answers::new(),
            resolution: None,
            steps,
        };
        match self.inner.store.insert_with(&record, &rules).await {
            Ok(Inserted::New) => {}
            Ok(Inserted::Existing(existing)) => {
                info!(question = %existing.id, "question asked again under its idempotency key");
                return Ok(Accepted {
                    record: *existing,
                    replayed: true,
                });
            }
            Err(StoreError::SessionBusy { pending, .. }) => return Err(EngineError::QuestionPending { pending }),
            Err(StoreError::TooManyPending { scope, limit }) => {
                return Err(EngineError::TooManyPending { scope, limit });
            }
            Err(StoreError::KeyReused { question }) => return Err(EngineError::KeyReused { question }),
            Err(other) => return Err(other.into()),
        }
        info!(question = %record.id, channel = %record.channel(), recipient = %record.recipient, "question accepted");
        self.inner.observer.question_created(&record);
        // askgate's page shows the prompt from the question's own commit.
        for surface in record
            .surfaces
            .iter()
            .filter(|surface| self.sends_nothing(&surface.channel))
        {
            self.inner.observer.delivered(&surface.channel);
        }
        self.add_deadline(record.expires_at, record.id.clone());
        self.publish(record.clone());
        self.spawn_deliveries(&record);
        Ok(Accepted {
            record,
            replayed: false,
        })
    }

    /// The question with this id.
    pub async fn get(&self, id: &QuestionId) -> Result<Option<QuestionRecord>, EngineError> {
        Ok(self.inner.store.get(id).await?)
    }

    /// The question once it has ended, or as it is after `max` has passed.
    pub async fn wait(&self, id: &QuestionId, max: Duration) -> Result<QuestionRecord, EngineError> {
        self.wait_if(id, max, |_| true).await
    }

    /// [`Engine::wait`] for a question that `agent` asked: another's is
    /// [`EngineError::NotFound`]. One store read where a check before the
    /// wait would take two.
    pub async fn wait_for_agent(
        &self,
        agent: &str,
        id: &QuestionId,
        max: Duration,
    ) -> Result<QuestionRecord, EngineError> {
        self.wait_if(id, max, |record| record.agent == agent).await
    }

    /// Waits for a question whose first read passes `check` (else
    /// `NotFound`). The question is read once; the resolution that wakes the
    /// wait hands over the ended record, so an answer costs no second read.
    async fn wait_if(
        &self,
        id: &QuestionId,
        max: Duration,
        check: impl Fn(&QuestionRecord) -> bool,
    ) -> Result<QuestionRecord, EngineError> {
        let waiter = self.waiter(id);
        let deadline = self.inner.clock.sleep(max);
        tokio::pin!(deadline);
        let mut first = true;
        loop {
            // Registered before the store is read, so that a resolution in
            // between is not missed.
            let notified = waiter.woken.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(ended) = waiter.ended.get() {
                return Ok(ended.clone());
            }
            let found = self.get(id).await?.filter(|record| !first || check(record));
            let Some(record) = found else {
                // An unknown id, or another agent's question: nobody may
                // wait here, so the entry made above must not stay behind.
                self.forget_waiter(id, &waiter);
                return Err(EngineError::NotFound);
            };
            first = false;
            if record.status.is_final() {
                // Nobody waits on an ended question beyond this read: drop its entry.
                self.wake_waiters(id, None);
                return Ok(record);
            }
            if max.is_zero() {
                return Ok(record);
            }
            tokio::select! {
                () = &mut notified => {
                    if let Some(ended) = waiter.ended.get() {
                        return Ok(ended.clone());
                    }
                }
                () = &mut deadline => return self.get(id).await?.ok_or(EngineError::NotFound),
            }
        }
    }

    fn waiter(&self, id: &QuestionId) -> Arc<Waiter> {
        let mut waiters = self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        waiters.entry(id.clone()).or_default().clone()
    }

    /// Drops `id`'s entry if `waiter` is it and nobody else holds it (the
    /// map and `waiter` are its only two holders, checked under the lock
    /// every new waiter takes).
    fn forget_waiter(&self, id: &QuestionId, waiter: &Arc<Waiter>) {
        let mut waiters = self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if waiters
            .get(id)
            .is_some_and(|entry| Arc::ptr_eq(entry, waiter) && Arc::strong_count(waiter) == 2)
        {
            waiters.remove(id);
        }
    }

    /// How many questions have agents waiting on them.
    pub fn waiting(&self) -> usize {
        self.inner.waiters.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Wakes the agents waiting for `id`, handing them the ended record when
    /// the caller has it; it has ended, so none will wait again.
    /// Whether an agent waits on `id` here.
    pub(crate) fn is_waited(&self, id: &QuestionId) -> bool {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// The questions agents wait on here.
    pub(crate) fn waited(&self) -> Vec<QuestionId> {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    pub(crate) fn wake_waiters(&self, id: &QuestionId, ended: Option<&QuestionRecord>) {
        let waiter = self
            .inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if let Some(waiter) = waiter {
            if let Some(ended) = ended {
                // Set once: an entry is removed by the first wake.
                let _ = waiter.ended.set(ended.clone());
            }
            waiter.woken.notify_waiters();
        }
    }

    /// Every change to any question, as it happens (for live views).
    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.inner.changes.subscribe()
    }

    /// Cancels a question of `agent`'s. Idempotent: an ended question is
    /// returned as it is.
    pub async fn cancel(&self, agent: &str, id: &QuestionId) -> Result<QuestionRecord, EngineError> {
        let record = self
            .get(id)
            .await?
            .filter(|r| r.agent == agent)
            .ok_or(EngineError::NotFound)?;
        if record.status.is_final() {
            return Ok(record);
        }
        let resolution = self.resolution(QuestionStatus::Cancelled, Some("cancelled by the agent"));
        Ok(match self.resolve(id, resolution).await? {
            Some(resolved) => resolved,
            None => self.get(id).await?.ok_or(EngineError::NotFound)?,
        })
    }

    /// Cancels every pending question of one run of `agent`'s (spec §8).
    pub async fn abort_run(&self, agent: &str, run_id: &str) -> Result<Vec<QuestionId>, EngineError> {
        let mut cancelled = Vec::new();
        for record in self.inner.store.pending_in_run(agent, run_id).await? {
            let resolution = self.resolution(QuestionStatus::Cancelled, Some("run aborted"));
            if self.resolve(&record.id, resolution).await?.is_some() {
                cancelled.push(record.id);
            }
        }
        Ok(cancelled)
    }

    pub(crate) fn resolution(&self, status: QuestionStatus, reason: Option<&str>) -> Resolution {
        Resolution {
            status,
            at: self.inner.clock.now(),
            by: None,
            answers: None,
            reason: reason.map(str::to_owned),
            via: None,
            surface: None,
        }
    }

    /// Resolves a pending question (first resolution wins), then tells the
    /// waiting agents and edits the question's message into its summary.
    pub(crate) async fn resolve(
        &self,
        id: &QuestionId,
        resolution: Resolution,
    ) -> Result<Option<QuestionRecord>, EngineError> {
        match self.resolve_for(id, resolution, None).await? {
            ForEvent::Applied(resolved) => Ok(resolved),
            _ => Ok(None),
        }
    }

    /// [`Engine::resolve`], on behalf of an inbound `event` when given (the
    /// store records it in the same transaction; [`ForEvent::Seen`] when
    /// another delivery of it was applied).
    pub(crate) async fn resolve_for(
        &self,
        id: &QuestionId,
        resolution: Resolution,
        event: Option<EventKey<'_>>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, EngineError> {
        let by_person = matches!(resolution.status, QuestionStatus::Answered | QuestionStatus::Skipped);
        let at = resolution.at;
        let stored = match event {
            Some(event) => self.inner.store.resolve_for_event(id, &resolution, event).await?,
            None => ForEvent::Applied(self.inner.store.resolve(id, &resolution).await?),
        };
        let ForEvent::Applied(stored) = stored else {
            return Ok(ForEvent::Seen);
        };
        let Some(record) = stored else {
            // An answer after the deadline that the timer has not caught up
            // with yet: the question expired first. End it so now, so that
            // the person is told it expired and the agent hears at once.
            if by_person
                && let Some(current) = self.get(id).await?
                && current.status == QuestionStatus::Pending
                && current.expires_at <= at
            {
                let expired = self.resolution(QuestionStatus::Expired, Some("expired"));
                if let Some(record) = self.inner.store.resolve(id, &expired).await? {
                    self.ended(&record);
                }
            }
            return Ok(ForEvent::Applied(None));
        };
        self.ended(&record);
        Ok(ForEvent::Applied(Some(record)))
    }

    /// What follows a question's end: its timer dropped, the agent woken,
    /// watchers told, the message edited into its summary.
    fn ended(&self, record: &QuestionRecord) {
        self.lock_deadlines().remove(&(record.expires_at, record.id.clone()));
        info!(question = %record.id, channel = %record.channel(), status = %record.status, "question ended");
        self.inner.observer.question_resolved(record);
        self.wake_waiters(&record.id, Some(record));
        self.publish(record.clone());
        self.spawn_finish(record.clone());
    }

    async fn expire(&self, id: &QuestionId) -> Result<(), EngineError> {
        let resolution = self.resolution(QuestionStatus::Expired, Some("expired"));
        self.resolve(id, resolution).await.map(|_| ())
    }

    pub(crate) fn publish(&self, record: QuestionRecord) {
        // No subscriber is fine: nobody is watching.
        let _ = self.inner.changes.send(Update::Changed(Arc::new(record)));
    }

    async fn sleep_until_deadline(&self, at: Option<Timestamp>) {
        match at {
            Some(at) => self.inner.clock.sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    pub(crate) fn add_deadline(&self, at: Timestamp, id: QuestionId) {
        self.lock_deadlines().insert((at, id));
        self.inner.deadline_added.notify_one();
    }

    pub(crate) fn lock_deadlines(&self) -> std::sync::MutexGuard<'_, BTreeSet<(Timestamp, QuestionId)>> {
        // The set stays consistent even if a holder panicked: every update is one insert or remove.
        self.inner.deadlines.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an idempotency key is checked against: everything the agent chose
/// about the question, hashed (keys are kept as long as their question).
fn fingerprint(new: &NewQuestion) -> String {
    let chosen = serde_json::json!({
        "to": new.to,
        "sessionId": new.session_id,
        "runId": new.run_id,
        "sessionKind": new.session_kind,
        "request": new.request,
    });
    // A question's own reminders and escalations are the agent's choice
    // too; one without them hashes as before they existed.
    let chosen = if new.nudges == Nudges::default() {
        chosen.to_string()
    } else {
        format!("{chosen}{:?}", new.nudges)
    };
    // Likewise its own callback URL.
    let chosen = match &new.callback_url {
        Some(url) => format!("{chosen} callback {url}"),
        None => chosen,
    };
    hex::encode(sha2::Sha256::digest(chosen.as_bytes()))
}

fn new_question_id() -> QuestionId {
    // A ULID is 26 characters of Crockford base32: always a valid question id.
    QuestionId::parse(&ulid::Ulid::new().to_string()).unwrap_or_else(|_| unreachable!("a ULID is a valid question id"))
}

/// Checks a direct answer against the request and turns it into answers; a
/// question it leaves out keeps what was answered on another surface
/// (`progress`, a chat reply that answered part of the prompt).
pub(crate) fn direct_answers(
    request: &AskRequest,
    items: Vec<DirectItem>,
    progress: &Answers,
) -> Result<Answers, EngineError> {
    let invalid = |path: String, message: String| EngineError::InvalidAnswer { path, message };
    let mut answers = given_answers(request, items)?;
    for (id, items) in progress.iter() {
        if answers.get(id).is_none() {
            answers.set(request, id, items.to_vec());
        }
    }
    if let Some(missing) = answers.missing(request).first() {
        return Err(invalid(
            format!("answers.{missing}"),
            format!("Question \"{missing}\" has no answer yet."),
        ));
    }
    Ok(answers)
}

/// Checks each item of a direct answer against the request and turns them
/// into answers (only those given: a whole answer or a step's progress).
pub(crate) fn given_answers(request: &AskRequest, items: Vec<DirectItem>) -> Result<Answers, EngineError> {
    let invalid = |path: String, message: String| EngineError::InvalidAnswer { path, message };
    let mut answers = Answers::new();
    for item in items {
        // An id the request does not have is the caller's text: named by an excerpt.
        let path = format!("answers.{}", askgate_core::text::excerpt(&item.id));
        let question = request.question(&item.id).ok_or_else(|| {
            let id = askgate_core::text::excerpt(&item.id);
            invalid(path.clone(), format!("There is no question \"{id}\"."))
        })?;
        let mut chosen: Vec<usize> = item.options.clone();
        chosen.sort_unstable();
        chosen.dedup();
        if let Some(&bad) = chosen.iter().find(|&&index| index >= question.options.len()) {
            return Err(invalid(
                format!("{path}.options"),
                format!(
                    "Option {bad} does not exist; this question has {} options.",
                    question.options.len()
                ),
            ));
        }
        let text = item.text.as_deref().map(str::trim).filter(|text| !text.is_empty());
        if let Some(text) = text {
            let chars = askgate_core::text::char_len(text);
            if chars > MAX_FREE_TEXT_CHARS {
                return Err(EngineError::TooLong {
                    path: format!("{path}.text"),
                    message: format!(
                        "This answer is {chars} characters long; askgate takes at most {MAX_FREE_TEXT_CHARS}. Shorten it and send it again."
                    ),
                });
            }
        }
        let count = chosen.len() + usize::from(text.is_some());
        if count == 0 {
            return Err(invalid(path, "Choose an option or write an answer.".to_owned()));
        }
        if !question.multi_select && count > 1 {
            return Err(invalid(path, "This question takes one answer.".to_owned()));
        }
        let mut values: Vec<AnswerItem> = chosen
            .into_iter()
            .map(|index| AnswerItem::Option {
                index,
                label: question.options[index].label.clone(),
            })
            .collect();
        values.extend(text.map(|text| AnswerItem::FreeText { text: text.to_owned() }));
        answers.set(request, &item.id, values);
    }
    Ok(answers)
}
