//! Taking a question's plan as its steps fall due: reminders under each
//! delivered copy, escalations that deliver the question to another
//! recipient too, and the one notice an admin gets when a surface fails.
//!
//! A step is taken in the store (marked done, in one write only one process
//! wins) before anything is sent for it: across restarts and replicas it is
//! sent at most once. A process killed between the two sends nothing for it.

use std::sync::Arc;

use askgate_core::backoff::retry_delay;
use askgate_core::channel::{Channel, Destination, MessageRef, Nudge, UserRef};
use askgate_store::{QuestionRecord, Step, StepKind, StepWrite, Surface, SurfaceState, Timestamp};
use tracing::{info, warn};

use crate::engine::Engine;
use crate::recipient::{Recipient, RecipientSurface};

/// The most questions with steps due one sweep takes up; the rest wait for
/// the next sweep, a second later.
const STEPS_BATCH: u32 = 100;

/// How many times a nudge that failed for a passing reason (a rate limit,
/// a platform briefly down) is tried; the step stays taken either way.
const NUDGE_ATTEMPTS: u32 = 3;

/// One nudge to send: on which channel, where, as a reply to what, saying
/// what, mentioning whom.
struct Send {
    channel: Arc<dyn Channel>,
    to: Destination,
    reply_to: Option<MessageRef>,
    text: String,
    mention: Vec<UserRef>,
}

impl Engine {
    /// Takes the steps that are due now, of up to [`STEPS_BATCH`] pending
    /// questions, whoever asked them.
    pub(crate) async fn take_due_steps(&self) {
        let now = self.inner.clock.now();
        let due = match self.inner.store.steps_due(now, STEPS_BATCH).await {
            Ok(due) => due,
            Err(error) => {
                warn!(%error, "could not look for reminders and escalations due; trying again at the next sweep");
                return;
            }
        };
        for record in due {
            self.take_steps(record, now).await;
        }
    }

    /// Takes `record`'s steps due at `now`, in order.
    async fn take_steps(&self, record: QuestionRecord, now: Timestamp) {
        let due: Vec<(usize, Step)> = record
            .steps
            .iter()
            .enumerate()
            .filter(|(_, step)| step.done.is_none() && step.at <= now)
            .map(|(index, step)| (index, step.clone()))
            .collect();
        let mut current = record;
        for (index, step) in due {
            let taken = match step.kind {
                StepKind::Remind => self.remind(&current, index, now).await,
                StepKind::Escalate => self.escalate(&current, index, &step, now).await,
                // Taken when it is recorded (a failure notice): never due.
                _ => Ok(None),
            };
            match taken {
                Ok(Some(taken)) => {
                    self.publish(taken.clone());
                    current = taken;
                }
                // Taken elsewhere, or the question ended meanwhile.
                Ok(None) => {}
                Err(error) => {
                    warn!(question = %current.id, %error, "could not take a reminder or an escalation; trying again at the next sweep");
                    return;
                }
            }
        }
    }

    /// Takes reminder `index` of `record`, then nudges the people who may
    /// answer under each delivered copy of the question's own recipient.
    async fn remind(
        &self,
        record: &QuestionRecord,
        index: usize,
        now: Timestamp,
    ) -> Result<Option<QuestionRecord>, askgate_store::StoreError> {
        let write = StepWrite::Planned {
            index,
            at: now,
            surfaces: &[],
        };
        let Some(taken) = self.inner.store.take_step(&record.id, write).await? else {
            return Ok(None);
        };
        let Some(recipient) = self.recipient(&taken.recipient) else {
            return Ok(Some(taken));
        };
        let left = u32::try_from((taken.expires_at - now).max(0) / 1000).unwrap_or(u32::MAX);
        let text = recipient.locale.chrome().reminder(left);
        let mut sends = Vec::new();
        for surface in taken.surfaces.iter().filter(|surface| surface.recipient.is_none()) {
            if let Some(send) = self.under_copy(surface, recipient, &text, true) {
                sends.push(send);
            }
        }
        info!(question = %taken.id, copies = sends.len(), "reminding the person");
        self.spawn_sends(&taken, sends);
        Ok(Some(taken))
    }

    /// Takes escalation `index` of `record` (to `step.to`): the question
    /// joins the surfaces of that recipient, is delivered there, and each
    /// copy delivered so far says so under it.
    async fn escalate(
        &self,
        record: &QuestionRecord,
        index: usize,
        step: &Step,
        now: Timestamp,
    ) -> Result<Option<QuestionRecord>, askgate_store::StoreError> {
        let target = step.to.as_deref().and_then(|name| self.recipient(name));
        let added: Vec<Surface> = target
            .filter(|target| target.name != record.recipient)
            .map(|target| {
                // Their chats: their page lists the questions addressed to
                // them only (the plan names no recipient without a chat).
                target
                    .surfaces
                    .iter()
                    .filter(|surface| !self.sends_nothing(&surface.channel))
                    .map(|surface| self.new_surface(&record.id, surface).escalated_to(&target.name))
                    .collect()
            })
            .unwrap_or_default();
        let write = StepWrite::Planned {
            index,
            at: now,
            surfaces: &added,
        };
        let Some(taken) = self.inner.store.take_step(&record.id, write).await? else {
            return Ok(None);
        };
        let Some(target) = target else {
            warn!(question = %taken.id, to = step.to.as_deref().unwrap_or_default(), "an escalation names a recipient no longer configured");
            return Ok(Some(taken));
        };
        info!(question = %taken.id, to = %target.name, "escalating the question");
        let keys: Vec<String> = added
            .iter()
            .filter(|surface| surface.state == SurfaceState::Sending)
            .map(Surface::key)
            .collect();
        let holder = format!("escalate-{}", ulid::Ulid::new().to_string().to_lowercase());
        self.spawn_deliveries_to(&taken, &keys, &holder);
        // The copies delivered before: the question's own and earlier
        // escalations'.
        let mut sends = Vec::new();
        for surface in &record.surfaces {
            let Some(owner) = self.recipient(record.owner(surface)) else {
                continue;
            };
            let text = owner.locale.chrome().escalated(&target.display_name);
            if let Some(send) = self.under_copy(surface, owner, &text, false) {
                sends.push(send);
            }
        }
        self.spawn_sends(&taken, sends);
        Ok(Some(taken))
    }

    /// The nudge of `text` under `surface`'s copy, of `owner`'s, mentioning
    /// who may answer there when `mention`; `None` when it has no copy to
    /// reply to (not delivered, askgate's page).
    fn under_copy(&self, surface: &Surface, owner: &Recipient, text: &str, mention: bool) -> Option<Send> {
        if surface.state != SurfaceState::Delivered || self.sends_nothing(&surface.channel) {
            return None;
        }
        let channel = self.inner.channels.get(&surface.channel)?.clone();
        let configured = owner.surface(&surface.channel)?;
        let reply_to = surface.delivery.as_ref()?.messages.first().cloned();
        let mention = if mention {
            people(channel.as_ref(), configured, owner)
        } else {
            Vec::new()
        };
        Some(Send {
            channel,
            to: Destination {
                conversation: surface.conversation.clone(),
                thread: configured.destination.thread.clone(),
            },
            reply_to,
            text: text.to_owned(),
            mention,
        })
    }

    /// Tells the admin of `owner` (its `notify_failures_to`), once per
    /// question, that the question could not reach `owner` on `channel`,
    /// and why.
    pub(crate) async fn notify_failure(&self, record: &QuestionRecord, owner: &str, channel: &str, reason: &str) {
        let Some(owner) = self.recipient(owner) else { return };
        let Some(admin) = owner
            .waiting
            .notify_failures_to
            .as_deref()
            .and_then(|name| self.recipient(name))
        else {
            return;
        };
        let now = self.inner.clock.now();
        let step = Step::planned(StepKind::NotifyFailure, now).to(&admin.name);
        let taken = match self.inner.store.take_step(&record.id, StepWrite::Once(&step)).await {
            Ok(Some(taken)) => taken,
            // Told already, for this question.
            Ok(None) => return,
            Err(error) => {
                warn!(question = %record.id, %channel, %error, "could not record the failure notice; the admin is not told");
                return;
            }
        };
        let reason = askgate_core::text::excerpt(reason);
        let text = admin
            .locale
            .chrome()
            .undeliverable(&owner.display_name, channel, &reason);
        let sends: Vec<Send> = admin
            .surfaces
            .iter()
            .filter(|surface| !self.sends_nothing(&surface.channel))
            .filter_map(|surface| {
                Some(Send {
                    channel: self.inner.channels.get(&surface.channel)?.clone(),
                    to: surface.destination.clone(),
                    reply_to: None,
                    text: text.clone(),
                    mention: Vec::new(),
                })
            })
            .collect();
        info!(question = %record.id, %channel, admin = %admin.name, "telling the admin a question could not be delivered");
        self.spawn_sends(&taken, sends);
    }

    /// Sends each nudge on its own task, trying a passing failure again a
    /// few times.
    fn spawn_sends(&self, record: &QuestionRecord, sends: Vec<Send>) {
        for send in sends {
            let clock = self.inner.clock.clone();
            let question = record.id.clone();
            tokio::spawn(async move {
                let nudge = Nudge::new(&send.to, &send.text)
                    .replying_to(send.reply_to.as_ref())
                    .mentioning(&send.mention);
                for attempt in 1..=NUDGE_ATTEMPTS {
                    match send.channel.nudge(&nudge).await {
                        Ok(()) => return,
                        Err(error) if error.is_retryable() && attempt < NUDGE_ATTEMPTS => {
                            warn!(question = %question, channel = send.channel.name(), attempt, %error, "could not send a reminder; trying again");
                            clock.sleep(retry_delay(&error, attempt - 1)).await;
                        }
                        Err(error) => {
                            warn!(question = %question, channel = send.channel.name(), %error, "could not send a reminder");
                            return;
                        }
                    }
                }
            });
        }
    }
}

/// Who may answer on `surface` of `owner`, to mention: its `answerers`, or
/// the person its direct conversation is with.
fn people(channel: &dyn Channel, surface: &RecipientSurface, owner: &Recipient) -> Vec<UserRef> {
    let ids = if surface.answerers.is_empty() {
        channel.direct_person(&surface.destination).into_iter().collect()
    } else {
        surface.answerers.clone()
    };
    ids.into_iter()
        .map(|id| UserRef {
            id,
            display_name: owner.display_name.clone(),
        })
        .collect()
}
