//! Delivering a question to each surface of its recipient, giving a surface
//! up, and editing every delivered copy into its summary when the question
//! ends (spec §7). Each surface is sent to and edited on its own task: its
//! own retries, its own rate-limit line; the store serializes writes to one
//! question's surfaces.

use std::sync::Arc;

use askgate_core::answer::Answers;
use askgate_core::backoff::{backoff, retry_delay};
use askgate_core::channel::{Delivery, DeliveryError, MessageRef, Outgoing};
use askgate_core::layout::{Ending, Summary, summary};
use askgate_core::render::{Capabilities, Presentation};
use askgate_core::when::Deadline;
use askgate_core::{Place, QuestionId, render_by};
use askgate_store::{QuestionRecord, QuestionStatus, StoreError, Surface, SurfaceState, SurfaceWrite};
use tracing::{debug, info, warn};

use crate::engine::{Engine, EngineError, MAX_DELIVERY_ATTEMPTS, REDELIVER_AFTER, STORE_RETRY_MAX, WEB};

/// After the first [`MAX_DELIVERY_ATTEMPTS`], one failed delivery attempt
/// in this many is logged as a warning (at the backoff's 32 s, one every
/// eight and a half minutes); the others at debug level.
const QUIET_RETRIES: u32 = 16;

/// Why a surface is `failed` whose question ended (answered on another
/// surface, cancelled, expired) before it could be delivered there: it is
/// not sent to any more, and `deliveries` says so.
pub const ENDED_BEFORE_DELIVERY: &str = "the question ended before it was delivered";

impl Engine {
    /// Delivers the question to each of its surfaces still to be sent to,
    /// each on its own: its own retries, its own rate-limit line.
    pub(crate) fn spawn_deliveries(&self, record: &QuestionRecord) {
        let holder = format!("deliver-{}", ulid::Ulid::new().to_string().to_lowercase());
        self.spawn_deliveries_holding(record, &holder);
    }

    /// [`Engine::spawn_deliveries`], its surfaces' retries holding the
    /// question's `deliver:<id>` lease as `holder` on a shared store
    /// ([`Engine::hold_delivery`]).
    pub(crate) fn spawn_deliveries_holding(&self, record: &QuestionRecord, holder: &str) {
        let keys: Vec<String> = record
            .surfaces
            .iter()
            .filter(|surface| surface.state == SurfaceState::Sending)
            .map(Surface::key)
            .collect();
        self.spawn_deliveries_to(record, &keys, holder);
    }

    /// Delivers the question to its surfaces named `keys` ([`Surface::key`]),
    /// each on its own task.
    pub(crate) fn spawn_deliveries_to(&self, record: &QuestionRecord, keys: &[String], holder: &str) {
        for key in keys {
            let engine = self.clone();
            let (record, key, holder) = (record.clone(), key.clone(), holder.to_owned());
            tokio::spawn(async move {
                if let Err(error) = engine.deliver(&record, &key, &holder).await {
                    warn!(question = %record.id, surface = key, %error, "delivery bookkeeping failed");
                }
            });
        }
    }

    /// Delivers the question to its surface named `key` ([`Surface::key`]),
    /// until it is delivered, given up on, or the question ends: nothing is
    /// sent to a question that ended (its first attempt goes by `record`,
    /// read by the caller just now; each retry's pause ends early when the
    /// question does, and tells whether it did). `holder` names this
    /// process's delivery of it ([`Engine::hold_delivery`]).
    async fn deliver(&self, record: &QuestionRecord, key: &str, holder: &str) -> Result<(), EngineError> {
        if record.status.is_final() {
            return self.ended_before_delivery(&record.id, key).await;
        }
        let Some(surface) = record.surface_by_key(key) else {
            return Ok(());
        };
        let channel_name = surface.channel.as_str();
        // The recipient whose surface it is: the question's own, or the one
        // it was escalated to.
        let recipient = record.owner(surface);
        let Some(channel) = self.inner.channels.get(channel_name) else {
            let reason = format!("channel \"{channel_name}\" is not configured");
            return self.surface_failed(&record.id, key, &reason).await;
        };
        let Some(destination) = self
            .inner
            .recipients
            .get(recipient)
            .and_then(|r| r.surface(channel_name))
            .map(|surface| &surface.destination)
        else {
            let reason = format!("recipient \"{recipient}\" has no surface on \"{channel_name}\"");
            return self.surface_failed(&record.id, key, &reason).await;
        };
        // In the words of whose surface it is (an escalation's recipient may
        // read another language).
        let presentation = self.presentation(record, channel.capabilities(), recipient);
        // What an earlier attempt (of this process or one before a crash) sent.
        let mut sent: Vec<MessageRef> = record
            .surface_by_key(key)
            .and_then(|surface| surface.delivery.as_ref())
            .filter(|delivery| !delivery.complete)
            .map(|delivery| delivery.messages.clone())
            .unwrap_or_default();
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let outgoing = Outgoing::new(&record.id, destination, &presentation).after(&sent);
            let error = match channel.deliver(&outgoing).await {
                Ok(delivery) => {
                    let delivery = Delivery::new(delivery.messages);
                    let current = self.store_delivery(record, key, &delivery).await?;
                    self.inner.observer.delivered(channel_name);
                    // Ended (cancelled, expired, answered) while the message was
                    // on its way: nobody else saw this delivery, so edit it now
                    // (this surface only: the resolver edits the others).
                    // Ended after it was stored: the resolver edits it, once.
                    if current.status.is_final() {
                        self.spawn_finish_on(Arc::new(current), key);
                    }
                    return Ok(());
                }
                Err(DeliveryError { error, delivery, .. }) => {
                    if delivery.messages.len() > sent.len() {
                        // Kept, so that no retry (nor a restart) sends these parts again.
                        sent = delivery.messages;
                        self.store_delivery(record, key, &Delivery::partial(sent.clone()))
                            .await?;
                    }
                    error
                }
            };
            self.inner.observer.delivery_error(channel_name, &error);
            // Loud at first, then now and then: a platform down for an hour
            // must not fill the log with one line per question per retry.
            if attempt <= MAX_DELIVERY_ATTEMPTS || attempt.is_multiple_of(QUIET_RETRIES) {
                warn!(question = %record.id, channel = channel_name, attempt, sent = sent.len(), %error, "delivery failed");
            } else {
                debug!(question = %record.id, channel = channel_name, attempt, sent = sent.len(), %error, "delivery failed");
            }
            // A platform out of reach or failing (down when askgate started,
            // an outage) is tried again, with the backoff, until it answers or
            // the question ends: the surface may be its recipient's only one.
            if error.is_retryable() {
                self.hold_delivery(&record.id, holder).await;
                // Waited as an agent waits: an answer on another surface (on
                // this replica or another) ends the pause, and the question
                // as it is then says whether to send again.
                let current = match self.wait(&record.id, retry_delay(&error, attempt - 1)).await {
                    Ok(current) => current,
                    Err(EngineError::NotFound) => return Ok(()),
                    Err(error) => return Err(error),
                };
                if current.status.is_final() {
                    return self.ended_before_delivery(&record.id, key).await;
                }
                continue;
            }
            return self.surface_failed(&record.id, key, &error.to_string()).await;
        }
    }

    /// On a store shared with other replicas, takes or renews the question's
    /// `deliver:<id>` lease for [`REDELIVER_AFTER`] as `holder` while its
    /// delivery is being retried here: another replica's sweep delivers a
    /// prompt left undelivered that long (its asker died), and must not
    /// while this one is still trying — the prompt would go out twice once
    /// the platform answers. The lease runs out by itself if this process dies.
    async fn hold_delivery(&self, id: &QuestionId, holder: &str) {
        if self.inner.store.changes().is_none() {
            return;
        }
        let now = self.inner.clock.now();
        let until = now.saturating_add(crate::clock::millis(REDELIVER_AFTER));
        let lease = format!("deliver:{id}");
        match self.inner.store.try_lease(&lease, holder, now, until).await {
            Ok(true) => {}
            // Held by the sweep that handed this delivery over, or by this
            // question's other surface here: either way not taken over.
            Ok(false) => debug!(question = %id, "another holds the prompt's delivery lease"),
            Err(error) => warn!(question = %id, %error, "could not hold the prompt's delivery lease"),
        }
    }

    /// Records what was sent to the surface named `channel` ([`Surface::key`]), trying again while
    /// the store cannot take writes (a full disk, a held lock): a send that
    /// is not recorded would be sent again after a restart, so it is kept in
    /// memory and stored as soon as the store recovers. Only a crash before
    /// then sends it twice. The question as the store wrote it: whether it
    /// ended meanwhile is read from the same write, not a second read.
    async fn store_delivery(
        &self,
        record: &QuestionRecord,
        channel: &str,
        delivery: &Delivery,
    ) -> Result<QuestionRecord, EngineError> {
        let mut attempt = 0;
        loop {
            let write = SurfaceWrite::Delivered(delivery);
            match self.inner.store.write_surface(&record.id, channel, write).await {
                Ok(Some(current)) => return Ok(current),
                Ok(None) => return Err(StoreError::UnknownQuestion(record.id.clone()).into()),
                Err(error) if error.is_unavailable() => {
                    let pause = backoff(attempt).min(STORE_RETRY_MAX);
                    attempt = attempt.saturating_add(1);
                    warn!(question = %record.id, channel, %error, retry_in = ?pause, "sent, but could not record the delivery; trying again");
                    self.inner.clock.sleep(pause).await;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Gives up on the question's surface named `channel` ([`Surface::key`]); when every surface
    /// has failed, the question ends as `delivery_failed`, with each
    /// surface's reason. While one surface is delivered (or askgate's page
    /// shows it), the question stays pending there.
    async fn surface_failed(&self, id: &QuestionId, channel: &str, reason: &str) -> Result<(), EngineError> {
        let Some(record) = self.inner.store.surface_failed(id, channel, reason).await? else {
            return Ok(());
        };
        if let Some(surface) = record.surface_by_key(channel) {
            warn!(question = %id, channel = %surface.channel, reason, "a surface could not be delivered to; given up");
            self.inner.observer.surface_failed(&surface.channel);
            let owner = record.owner(surface);
            self.notify_failure(&record, owner, &surface.channel, reason).await;
        }
        let all_failed = record
            .surfaces
            .iter()
            .all(|surface| surface.state == SurfaceState::Failed);
        if record.status != QuestionStatus::Pending || !all_failed {
            info!(question = %id, channel, reason, "a surface could not be delivered to; the question stays open on the others");
            self.publish(record);
            return Ok(());
        }
        let reason = match record.surfaces.as_slice() {
            [only] => only.reason.clone().unwrap_or_default(),
            several => several
                .iter()
                .map(|surface| format!("{}: {}", surface.channel, surface.reason.as_deref().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join("; "),
        };
        let resolution = self.resolution(QuestionStatus::DeliveryFailed, Some(&reason));
        self.resolve(id, resolution).await.map(drop)
    }

    /// Gives up on the question's surface on `channel` because the question
    /// ended before it was delivered there: nobody is to answer there any
    /// more. It is `failed` with [`ENDED_BEFORE_DELIVERY`], not left
    /// `sending`; what was sent of it in part is edited as any copy is.
    async fn ended_before_delivery(&self, id: &QuestionId, channel: &str) -> Result<(), EngineError> {
        info!(question = %id, channel, "the question ended before it was delivered here; nothing more is sent");
        if let Some(record) = self
            .inner
            .store
            .surface_failed(id, channel, ENDED_BEFORE_DELIVERY)
            .await?
        {
            self.publish(record);
        }
        Ok(())
    }

    /// The prompt as `recipient`'s surface with `capabilities` shows it, in
    /// their words; a wait of a day or more is headed with its deadline in
    /// their time zone when they have one. "Now" is when it was asked, so
    /// that every attempt, restart and replica renders the same prompt (and
    /// its edit finds the same parts).
    fn presentation(&self, record: &QuestionRecord, capabilities: &Capabilities, recipient: &str) -> Presentation {
        let locale = self.locale_of(record, recipient);
        let deadline = self
            .recipient(recipient)
            .and_then(|r| r.waiting.zone.clone())
            .map(|zone| Deadline {
                at_ms: record.expires_at,
                now_ms: record.created_at,
                zone,
            });
        render_by(&record.request, capabilities, &record.id, locale, deadline.as_ref())
    }

    /// The words of `owner`'s copies of `record` (an escalation's recipient
    /// may read another language than the question's own).
    fn locale_of(&self, record: &QuestionRecord, owner: &str) -> askgate_core::Locale {
        self.recipient(owner).map_or(record.locale, |r| r.locale)
    }

    /// Whether `channel` sends nothing (askgate's own page): its delivery is
    /// stored with the question and it is never asked to edit.
    pub(crate) fn sends_nothing(&self, channel: &str) -> bool {
        self.inner
            .channels
            .get(channel)
            .is_some_and(|channel| channel.sends_nothing())
    }

    /// Edits each delivered surface of an ended question into its summary,
    /// each on its own.
    pub(crate) fn spawn_finish(&self, record: QuestionRecord) {
        let record = Arc::new(record);
        for surface in &record.surfaces {
            self.spawn_finish_on(record.clone(), &surface.key());
        }
    }

    /// Edits the question's copy on its surface named `key`
    /// ([`Surface::key`]) into its summary, if it has one to edit.
    fn spawn_finish_on(&self, record: Arc<QuestionRecord>, key: &str) {
        // Nothing to edit, or stored as finished with the question.
        let Some(surface) = record.surface_by_key(key) else {
            return;
        };
        if !surface.to_edit() || self.sends_nothing(&surface.channel) {
            return;
        }
        let engine = self.clone();
        let key = key.to_owned();
        tokio::spawn(async move { engine.finish(&record, &key).await });
    }

    /// Edits the question's messages on its surface named `key` into its
    /// summary (spec §7).
    async fn finish(&self, record: &QuestionRecord, key: &str) {
        let Some(surface) = record.surface_by_key(key) else {
            return;
        };
        let channel_name = surface.channel.as_str();
        let Some(channel) = self.inner.channels.get(channel_name) else {
            return;
        };
        let Some(delivery) = surface.delivery.as_ref() else {
            return;
        };
        let Some(ending) = self.ending_of(record, Some(channel_name)) else {
            return;
        };
        // In the words of whose copy it is (an escalation's recipient may
        // read another language).
        let owner = record.owner(surface);
        let text = Summary::of(&record.request, ending, self.locale_of(record, owner));
        let presentation = self.presentation(record, channel.capabilities(), owner);
        for attempt in 1..=MAX_DELIVERY_ATTEMPTS {
            match channel.finish(delivery, &presentation, &text).await {
                Ok(()) => {
                    if let Err(error) = self.inner.store.mark_finished(&record.id, key).await {
                        warn!(question = %record.id, channel = channel_name, %error, "could not record the edit");
                    }
                    return;
                }
                // A rate limit or a passing failure: tried again now, not at
                // the next restart (which still takes up what is left).
                Err(error) if error.is_retryable() && attempt < MAX_DELIVERY_ATTEMPTS => {
                    warn!(question = %record.id, channel = channel_name, attempt, %error, "could not edit the question's message; trying again");
                    self.inner.clock.sleep(retry_delay(&error, attempt - 1)).await;
                }
                Err(error) => {
                    warn!(question = %record.id, channel = channel_name, %error, "could not edit the question's message");
                    return;
                }
            }
        }
    }
}

impl Engine {
    /// The summary line(s) of an ended question (spec §7), as its copy on
    /// the surface of channel `on` is edited to show them; `None` while
    /// pending or when nothing was ever shown. It names where the question
    /// was answered when it was shown on several surfaces, or answered on
    /// another surface than this copy's (askgate's page, say): "Answered by
    /// Alice in Telegram".
    pub fn summary_of(&self, record: &QuestionRecord, on: Option<&str>) -> Option<String> {
        self.ending_of(record, on)
            .map(|ending| summary(&record.request, ending, record.locale))
    }

    /// How an ended question ended, as its copy on `on` tells it
    /// ([`Engine::summary_of`]).
    fn ending_of<'r>(&'r self, record: &'r QuestionRecord, on: Option<&str>) -> Option<Ending<'r>> {
        static EMPTY: std::sync::LazyLock<Answers> = std::sync::LazyLock::new(Answers::new);
        let resolution = record.resolution.as_ref()?;
        let empty: &'static Answers = &EMPTY;
        let who = resolution.by.as_ref().map_or("", |user| user.display_name.as_str());
        let elsewhere = record.surfaces.len() > 1 || on != resolution.via.as_deref();
        let surface = resolution
            .surface
            .as_deref()
            .filter(|kind| elsewhere && !kind.is_empty())
            .map(|kind| self.place(kind, resolution.via.as_deref()));
        let ending = match resolution.status {
            QuestionStatus::Answered => Ending::Answered {
                by: who,
                surface,
                answers: resolution.answers.as_ref().unwrap_or(empty),
            },
            QuestionStatus::Skipped => Ending::Skipped { by: who, surface },
            QuestionStatus::Expired => Ending::Expired,
            QuestionStatus::Cancelled => Ending::Cancelled,
            QuestionStatus::Pending | QuestionStatus::DeliveryFailed => return None,
        };
        Some(ending)
    }

    /// Where an answer of surface kind `kind` came from, through channel
    /// `via`: askgate's page, or the platform by the name its channel
    /// declares. A channel no longer configured leaves only the kind, which
    /// is named as it is.
    fn place<'r>(&'r self, kind: &'r str, via: Option<&str>) -> Place<'r> {
        if kind == WEB {
            return Place::Page;
        }
        let declared = via
            .and_then(|via| self.inner.channels.get(via))
            .map(|channel| channel.display_name());
        Place::Platform(declared.unwrap_or(kind))
    }
}
