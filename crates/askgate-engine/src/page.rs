//! askgate's own page, as the engine sees it: who a page link belongs to,
//! which questions that person may answer there, and an answer given there.
//!
//! A page link is a *person's*: a recipient who is one person (a direct chat,
//! or the page alone). That person answers on it their own questions and
//! those of every group that names them among its `people`
//! ([`Recipient::people`]); an answer given there is recorded as theirs
//! (`web:<name>`, their display name), so a group's result names who
//! answered. A group has no link of its own: the page cannot tell who holds
//! a shared link, so a group's `answerers` could not hold there.

use askgate_core::QuestionId;
use askgate_core::channel::UserRef;
use askgate_store::{QuestionRecord, QuestionStatus, Resolution};

use crate::engine::{DirectAnswer, Engine, EngineError, Submitted, WEB, direct_answers};
use crate::recipient::Recipient;

impl Engine {
    /// The people who have a page link: every recipient who is not a group.
    pub fn people(&self) -> impl Iterator<Item = &Recipient> {
        self.recipients().filter(|recipient| !recipient.is_group())
    }

    /// The recipients whose questions `person` answers on their page: their
    /// own, then each group naming them, by name. Empty when `person` is no
    /// person with a link (a group, or no recipient at all).
    pub fn answers_for(&self, person: &str) -> Vec<&Recipient> {
        let Some(own) = self.recipient(person).filter(|recipient| !recipient.is_group()) else {
            return Vec::new();
        };
        let mut groups: Vec<&Recipient> = self
            .recipients()
            .filter(|recipient| recipient.is_group() && recipient.people.iter().any(|name| name == person))
            .collect();
        groups.sort_by(|a, b| a.name.cmp(&b.name));
        std::iter::once(own).chain(groups).collect()
    }

    /// Question `id`, when `person` may answer it on their page; otherwise
    /// [`EngineError::NotFound`], whether it exists or not.
    pub async fn page_question(&self, person: &str, id: &QuestionId) -> Result<QuestionRecord, EngineError> {
        let record = self.get(id).await?.ok_or(EngineError::NotFound)?;
        let theirs = self
            .answers_for(person)
            .iter()
            .any(|recipient| recipient.name == record.recipient);
        if theirs { Ok(record) } else { Err(EngineError::NotFound) }
    }

    /// Who `person` is when they answer on the page: `web:<name>` and their
    /// display name.
    pub fn page_person(&self, person: &str) -> Result<UserRef, EngineError> {
        let recipient = self
            .recipient(person)
            .filter(|recipient| !recipient.is_group())
            .ok_or(EngineError::NotFound)?;
        Ok(UserRef {
            id: format!("{WEB}:{}", recipient.name),
            display_name: recipient.display_name.clone(),
        })
    }

    /// Applies an answer that `person` gave on their page to question `id`
    /// (theirs or a group's that names them), recorded as theirs.
    pub async fn submit(&self, person: &str, id: &QuestionId, answer: DirectAnswer) -> Result<Submitted, EngineError> {
        let by = self.page_person(person)?;
        let record = self.page_question(person, id).await?;
        if record.status.is_final() {
            return Ok(Submitted::AlreadyEnded(record));
        }
        let (status, answers) = match answer {
            DirectAnswer::Skip => (QuestionStatus::Skipped, None),
            DirectAnswer::Answers(items) => (
                QuestionStatus::Answered,
                Some(direct_answers(&record.request, items, &record.progress)?),
            ),
        };
        let resolution = Resolution {
            by: Some(by),
            answers,
            via: Some(self.page_channel(&record.recipient)),
            surface: Some(WEB.to_owned()),
            ..self.resolution(status, None)
        };
        match self.resolve(id, resolution).await? {
            Some(resolved) => Ok(Submitted::Resolved(resolved)),
            None => Ok(Submitted::AlreadyEnded(
                self.get(id).await?.ok_or(EngineError::NotFound)?,
            )),
        }
    }

    /// The channel a recipient's web page answers through: their surface on
    /// askgate's page when they have one, else the first page channel
    /// configured, else `web`. Every recipient has a page, listed or not.
    pub fn page_channel(&self, recipient: &str) -> String {
        let on_page = |channel: &str| self.sends_nothing(channel);
        if let Some(surface) = self
            .recipient(recipient)
            .and_then(|r| r.surfaces.iter().find(|surface| on_page(&surface.channel)))
        {
            return surface.channel.clone();
        }
        let mut pages: Vec<&String> = self.inner.channels.keys().filter(|name| on_page(name)).collect();
        pages.sort();
        pages.first().map_or_else(|| WEB.to_owned(), |name| (*name).clone())
    }

    /// Replaces every person's page link (by their recipient's name): what
    /// `/link` answers in their direct chat. Called at start and on each
    /// rotation of the keys.
    pub fn set_page_links(&self, links: std::collections::HashMap<String, String>) {
        *self
            .inner
            .page_links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = links;
    }

    /// `person`'s page link, if they have one.
    pub(crate) fn page_link(&self, person: &str) -> Option<String> {
        self.inner
            .page_links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(person)
            .cloned()
    }
}
