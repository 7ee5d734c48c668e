//! How a question ends: cancelled by its agent or its run, answered,
//! skipped or expired; the first resolution wins, and what follows it.

use super::{DirectItem, Engine, EngineError};
use askgate_core::answer::{AnswerItem, Answers};
use askgate_core::request::MAX_FREE_TEXT_CHARS;
use askgate_core::{AskRequest, QuestionId};
use askgate_store::{EventKey, ForEvent, QuestionRecord, QuestionStatus, Resolution};
use tracing::info;

impl Engine {
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
    ///
    /// It runs to the end even when its caller goes away: an HTTP handler
    /// is dropped when its client disconnects, and dropped between the
    /// store's write and [`Engine::ended`] it left an answer stored and the
    /// rest undone: the agent waiting here woken only by the next sweep's
    /// re-read, the question's messages left with their buttons until the
    /// next start ([`Engine::start`] edits what an earlier process left),
    /// live views not told. So the resolution is a task of its own, which
    /// the caller awaits.
    pub(crate) async fn resolve_for(
        &self,
        id: &QuestionId,
        resolution: Resolution,
        event: Option<EventKey<'_>>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, EngineError> {
        let engine = self.clone();
        let id = id.clone();
        let event = event.map(|event| (event.channel.to_owned(), event.event_id.to_owned()));
        let task = tokio::spawn(async move {
            let event = event.as_ref().map(|(channel, event_id)| EventKey { channel, event_id });
            engine.resolve_to_the_end(&id, resolution, event).await
        });
        match task.await {
            Ok(result) => result,
            // As if it had run in the caller's task.
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Err(EngineError::Store(askgate_store::StoreError::Unavailable(
                "askgate is shutting down".to_owned(),
            ))),
        }
    }

    /// [`Engine::resolve_for`]'s work, in its own task.
    async fn resolve_to_the_end(
        &self,
        id: &QuestionId,
        resolution: Resolution,
        event: Option<EventKey<'_>>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, EngineError> {
        let by_person = resolution.status.is_by_person();
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
    pub(super) fn ended(&self, record: &QuestionRecord) {
        self.lock_deadlines().remove(&(record.expires_at, record.id.clone()));
        info!(question = %record.id, channel = %record.channel(), status = %record.status, "question ended");
        self.inner.observer.question_resolved(record);
        self.wake_waiters(&record.id, Some(record));
        self.publish(record.clone());
        self.spawn_finish(record.clone());
    }

    pub(super) async fn expire(&self, id: &QuestionId) -> Result<(), EngineError> {
        let resolution = self.resolution(QuestionStatus::Expired, Some("expired"));
        self.resolve(id, resolution).await.map(|_| ())
    }
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
