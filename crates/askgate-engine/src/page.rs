//! What askgate's own page does besides answering: saving the steps a
//! person answered as they go, into the same stored progress a partial chat
//! reply saves, so that a reload, another device or a chat reply finishes
//! what the page began.

use askgate_core::QuestionId;
use askgate_store::{ProgressSaved, QuestionRecord, StoreError};
use tracing::info;

use crate::engine::{DirectItem, Engine, EngineError, given_answers};

/// How many times the page's progress is merged again when other saves
/// (a chat reply, another tab) keep landing first, before it is refused as
/// busy (the page sends it again on the next step).
const PROGRESS_ATTEMPTS: u32 = 8;

/// What saving the page's progress did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageProgress {
    /// Saved: the question as it is now, still pending, with the progress.
    Saved(QuestionRecord),
    /// The question had ended already; nothing changed.
    AlreadyEnded(QuestionRecord),
}

impl Engine {
    /// The question `id` as the page of `recipient` may act on it: one
    /// addressed to them, ended or not. Every page action (an answer, a
    /// skip, a step's progress) asks this one place who may act.
    pub(crate) async fn page_question(&self, recipient: &str, id: &QuestionId) -> Result<QuestionRecord, EngineError> {
        self.get(id)
            .await?
            .filter(|r| r.recipient == recipient)
            .ok_or(EngineError::NotFound)
    }

    /// Saves steps answered on `recipient`'s page into question `id`'s
    /// progress: each item replaces what that step had (from the page or a
    /// chat reply), the others stay. The store compares and sets, so a chat
    /// reply saved meanwhile is read again and kept. Saving never ends the
    /// question, even when every step is answered now: the page's Submit
    /// does, or a chat reply. Live views hear of it as of a chat reply's
    /// progress, and the next chat reply is read on top of it.
    pub async fn save_page_progress(
        &self,
        recipient: &str,
        id: &QuestionId,
        items: Vec<DirectItem>,
    ) -> Result<PageProgress, EngineError> {
        if items.is_empty() {
            return Err(EngineError::InvalidAnswer {
                path: "answers".to_owned(),
                message: "Send at least one answered question.".to_owned(),
            });
        }
        let mut attempt = 0;
        loop {
            let record = self.page_question(recipient, id).await?;
            if record.status.is_final() {
                return Ok(PageProgress::AlreadyEnded(record));
            }
            let given = given_answers(&record.request, items.clone())?;
            let mut merged = record.progress.clone();
            for (question, answer) in given.iter() {
                merged.set(&record.request, question, answer.to_vec());
            }
            if merged == record.progress {
                return Ok(PageProgress::Saved(record));
            }
            match self.store().save_progress(id, &record.progress, &merged).await? {
                ProgressSaved::Saved => {
                    let updated = self.get(id).await?.ok_or(EngineError::NotFound)?;
                    info!(question = %id, recipient = %recipient, "progress saved on the page");
                    self.publish(updated.clone());
                    return Ok(PageProgress::Saved(updated));
                }
                ProgressSaved::Changed if attempt < PROGRESS_ATTEMPTS => attempt += 1,
                ProgressSaved::Changed => {
                    let busy = format!("question {id}: other replies kept saving their progress first");
                    return Err(StoreError::Unavailable(busy).into());
                }
                _ => {
                    let ended = self.get(id).await?.ok_or(EngineError::NotFound)?;
                    return Ok(PageProgress::AlreadyEnded(ended));
                }
            }
        }
    }
}
