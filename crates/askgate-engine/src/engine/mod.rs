//! The engine: one place where a question's life is decided. This file
//! holds the [`Engine`] itself, its state and start-up; the rest is by job:
//!
//! | module | owns |
//! | --- | --- |
//! | `types` | the public types: [`NewQuestion`], [`EngineError`], [`Observer`], [`Update`], … |
//! | `ask` | accepting a question: checked, stored, then delivered |
//! | `waiters` | agents waiting for an answer, woken by the resolution |
//! | `fresh` | questions just asked, as written, for the wait that follows |
//! | `timers` | the timer loop: expiries, the sweep, steps and callbacks as they fall due, other replicas' changes |
//! | `resolve` | cancel, abort a run, resolve (first wins) and what follows, direct answers checked |

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_core::QuestionId;
use askgate_core::channel::Channel;
use askgate_store::{QuestionRecord, QuestionStatus, Store, Timestamp};
use tokio::sync::{Notify, broadcast};

use crate::clock::Clock;
use crate::plan::Nudges;
use crate::recipient::Recipient;

mod ask;
mod fresh;
mod resolve;
mod timers;
mod types;
mod waiters;

pub(crate) use resolve::{direct_answers, given_answers};
pub use types::{
    Accepted, DirectAnswer, DirectItem, EngineError, Limits, NewQuestion, NoObserver, Observer, SessionKind, Submitted,
    Update,
};
use waiters::Waiter;

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

/// The engine. Cheap to clone: clones share one state.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
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
    /// Questions just asked here, as written: the first read of the wait
    /// that follows.
    fresh: fresh::Fresh,
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
                fresh: fresh::Fresh::default(),
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

    /// Every change to any question, as it happens (for live views).
    pub fn subscribe(&self) -> broadcast::Receiver<Update> {
        self.inner.changes.subscribe()
    }

    pub(crate) fn publish(&self, record: QuestionRecord) {
        // No subscriber is fine: nobody is watching.
        let _ = self.inner.changes.send(Update::Changed(Arc::new(record)));
    }
}
