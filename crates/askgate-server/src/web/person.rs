//! Whose page a link opens, and that person's questions.
//!
//! A page link is a person's ([`askgate_engine::Engine::answers_for`]): it
//! shows their own questions and those of every group naming them among its
//! `people`, in one list, and an answer given there is theirs.

use askgate_core::QuestionId;
use askgate_store::QuestionRecord;

use crate::AppState;
use crate::error::ApiError;

/// The person a page link belongs to, and the recipients whose questions
/// they answer there (their own first).
#[derive(Debug, Clone)]
pub(crate) struct Person {
    /// Their recipient's name.
    pub(crate) name: String,
    /// Their own recipient's name, then each group's that names them.
    pub(crate) answers_for: Vec<String>,
}

impl Person {
    /// Whether `record` is one of this person's questions.
    pub(crate) fn sees(&self, record: &QuestionRecord) -> bool {
        self.answers_for.contains(&record.recipient)
    }
}

/// The person a link key belongs to; 404 for any other key, and for a key
/// of someone the engine does not know as a person (a group's, or one added
/// to the file since the start, which waits for a restart).
pub(crate) fn person_for(state: &AppState, key: &str) -> Result<Person, ApiError> {
    let mut found = None;
    // Compared in constant time, every key, so that timing tells nothing.
    for web in &state.credentials().web_keys {
        if constant_time_eq::constant_time_eq(web.key.as_bytes(), key.as_bytes()) {
            found = Some(web.recipient.clone());
        }
    }
    person_named(state, found.ok_or_else(|| ApiError::not_found("page"))?)
}

/// The person `name` (a recipient's name, as a key or a sign-in names
/// them); 404 when the engine does not know them as a person.
pub(crate) fn person_named(state: &AppState, name: String) -> Result<Person, ApiError> {
    let answers_for: Vec<String> = state
        .0
        .engine
        .answers_for(&name)
        .into_iter()
        .map(|recipient| recipient.name.clone())
        .collect();
    if answers_for.is_empty() {
        return Err(ApiError::not_found("page"));
    }
    Ok(Person { name, answers_for })
}

/// At most `limit` of `person`'s pending questions, oldest first, after
/// question `after` when given (a position in the order of every pending
/// question, whichever recipient's it is): one read, in the store's order.
pub(crate) async fn pending(
    state: &AppState,
    person: &Person,
    after: Option<&QuestionId>,
    limit: u32,
) -> Result<Vec<QuestionRecord>, ApiError> {
    state
        .0
        .engine
        .store()
        .pending_for_recipients(&person.answers_for, after, limit)
        .await
        .map_err(|e| ApiError::internal(&e))
}

/// How many of `person`'s questions are pending.
pub(crate) async fn count(state: &AppState, person: &Person) -> Result<u64, askgate_store::StoreError> {
    let store = state.0.engine.store();
    let mut count = 0;
    for name in &person.answers_for {
        count += store.count_pending_for_recipient(name).await?;
    }
    Ok(count)
}

/// At most `limit` of `person`'s ended questions, the latest to end first.
pub(crate) async fn ended(state: &AppState, person: &Person, limit: u32) -> Result<Vec<QuestionRecord>, ApiError> {
    let store = state.0.engine.store();
    let mut records = Vec::new();
    for name in &person.answers_for {
        records.extend(
            store
                .ended_for_recipient(name, limit)
                .await
                .map_err(|e| ApiError::internal(&e))?,
        );
    }
    let ended_at = |record: &QuestionRecord| record.resolution.as_ref().map(|r| r.at);
    records.sort_by(|a, b| {
        ended_at(b)
            .cmp(&ended_at(a))
            .then_with(|| b.id.as_str().cmp(a.id.as_str()))
    });
    records.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(records)
}
