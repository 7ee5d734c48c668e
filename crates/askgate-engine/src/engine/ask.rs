//! Accepting a question: checked, stored before anything is sent (once per
//! idempotency key), then delivered in the background.

use super::{Accepted, Engine, EngineError, NewQuestion, SessionKind};
use askgate_core::QuestionId;
use askgate_core::answer::Answers;
use askgate_core::channel::Delivery;
use askgate_store::{IdempotencyKey, InsertRules, Inserted, QuestionRecord, QuestionStatus, StoreError, Surface};
use sha2::Digest as _;
use tracing::info;

use crate::plan::{Nudges, Source, plan};

impl Engine {
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
        match self.insert_kept(&record, &rules).await {
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

    /// Stores a new question, and keeps the record for the wait that
    /// follows (`fresh`) when it is stored as new. Its slot is reserved
    /// before the insert: a change made between the commit and the return
    /// here leaves it unfilled.
    async fn insert_kept(&self, record: &QuestionRecord, rules: &InsertRules) -> Result<Inserted, StoreError> {
        self.inner.fresh.expect(&record.id);
        let inserted = self.inner.store.insert_with(record, rules).await;
        if matches!(inserted, Ok(Inserted::New)) {
            self.inner.fresh.fill(record);
        } else {
            self.inner.fresh.forget(&record.id);
        }
        inserted
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
