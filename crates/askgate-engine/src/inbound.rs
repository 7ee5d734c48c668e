//! Inbound events from chat adapters: taps, typed replies and forms, applied
//! to the question they belong to (spec §5, §6).
//!
//! A reaction that changes nothing (Other…, Answer…, a refusal, a notice that
//! the question ended) is decided with reads only: nothing is written, not
//! even the event's id, so that it stays within a platform's few seconds
//! for a first response (a Discord modal, a Slack `views.open`).

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use askgate_core::channel::{
    ConversationKind, Destination, InboundError, InboundEvent, InboundKind, InboundSink, MessageRef, Reaction,
};
use askgate_core::chrome::Chrome;
use askgate_core::form::FormValue;
use askgate_core::request::MAX_FREE_TEXT_CHARS;
use askgate_core::{ButtonAction, ButtonToken, Locale, QuestionId, ReplyOutcome, ReplyReader};
use askgate_store::{EventKey, ForEvent, ProgressSaved, QuestionRecord, QuestionStatus, Resolution, StoreError};
use async_trait::async_trait;
use tracing::warn;

use crate::engine::{Engine, EngineError};

#[async_trait]
impl InboundSink for Engine {
    async fn handle(&self, channel: &str, event: InboundEvent) -> Result<Reaction, InboundError> {
        self.handle_event(channel, &event).await.map_err(|error| {
            warn!(channel, event = %event.event_id, %error, "an inbound event could not be applied; it stays unacknowledged");
            InboundError::Unavailable {
                reason: error.to_string(),
                notice: self.locale_in(channel, &event.conversation).chrome().not_saved().to_owned(),
            }
        })
    }

    async fn attach(&self, channel: &str, question: &QuestionId, message: MessageRef) {
        if let Err(error) = self.inner.store.attach_message(question, channel, &message).await {
            warn!(channel, %question, %error, "could not attach a message to its question");
        }
        self.lock_opening()
            .remove(&(channel.to_owned(), message.conversation.clone()));
    }

    async fn cursor(&self, channel: &str) -> Option<String> {
        match self.inner.store.setting(&cursor_key(channel)).await {
            Ok(cursor) => cursor,
            Err(error) => {
                warn!(channel, %error, "could not read the channel's cursor");
                None
            }
        }
    }

    async fn save_cursor(&self, channel: &str, cursor: &str) {
        if let Err(error) = self.inner.store.set_setting(&cursor_key(channel), cursor).await {
            warn!(channel, %error, "could not save the channel's cursor");
        }
    }

    fn stranger(&self, channel: &str, destination: &Destination) -> Option<Locale> {
        let addressed = self
            .recipients()
            .filter_map(|r| r.surface(channel))
            .any(|surface| addresses(&surface.destination, destination));
        (!addressed).then(|| self.locale_in(channel, &destination.conversation))
    }
}

/// Whether a recipient configured with `configured` is the one of the
/// conversation an adapter describes as `seen`: the same conversation, in
/// its thread if it names one; or the configured thread itself, where a
/// thread is a conversation of its own. A Discord thread is a channel with
/// its own id: a message there carries the thread's id alone, not the
/// parent channel a recipient names with `channel_id` beside `thread_id`.
fn addresses(configured: &Destination, seen: &Destination) -> bool {
    let same = configured.conversation == seen.conversation
        && (configured.thread.is_none() || configured.thread == seen.thread);
    same || (seen.thread.is_none() && configured.thread.as_deref() == Some(seen.conversation.as_str()))
}

/// How a message asks for the person's page link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkCommand {
    /// `/link` (Telegram's `/link@bot` too), or `link` after a mention of
    /// the bot: always the command.
    Explicit,
    /// `link` alone: the command only where no question is waiting, since
    /// it could be the answer to one.
    Bare,
}

/// Whether `text` asks for the page link. Leading mentions (`<@U1>`,
/// `<@!1>`, `@bot`) are skipped, as platforms write a mention of the bot.
fn link_command(text: &str) -> Option<LinkCommand> {
    let mut words = text.split_whitespace().peekable();
    let mut mentioned = false;
    while words
        .peek()
        .is_some_and(|word| word.starts_with('@') || (word.starts_with("<@") && word.ends_with('>')))
    {
        words.next();
        mentioned = true;
    }
    let word = words.next()?.to_lowercase();
    if words.next().is_some() {
        return None;
    }
    let slash = word == "/link" || word.starts_with("/link@");
    match (slash, word == "link", mentioned) {
        (true, _, _) | (_, true, true) => Some(LinkCommand::Explicit),
        (_, true, false) => Some(LinkCommand::Bare),
        _ => None,
    }
}

/// The message a non-text message or a greeting replies to (a greeting
/// replies to none).
fn non_text_reply_to(kind: &InboundKind) -> Option<&MessageRef> {
    match kind {
        InboundKind::NonText { reply_to, .. } => reply_to.as_ref(),
        _ => None,
    }
}

/// The setting that holds `channel`'s cursor ([`InboundSink::cursor`]).
pub fn cursor_key(channel: &str) -> String {
    format!("cursor:{channel}")
}

impl Engine {
    async fn handle_event(&self, channel: &str, event: &InboundEvent) -> Result<Reaction, EngineError> {
        let store = &self.inner.store;
        // A redelivery of an event already applied changes nothing. This
        // read only saves a redelivery's work: what decides is the store,
        // which records the event in the same transaction as its effect
        // (`resolve_for_event`, `save_progress_for_event`), so two
        // deliveries handled at once never both apply.
        if store.event_seen(channel, &event.event_id).await? {
            return Ok(Reaction::Nothing);
        }
        let reaction = match &event.kind {
            InboundKind::ButtonPressed { token, .. } => self.pressed(channel, event, token).await?,
            // A modal closes when submitted: its outcome is confirmed with a notice.
            InboundKind::FreeTextSubmitted { token, text } => match ButtonToken::decode(token) {
                Ok(token) => {
                    self.answered(channel, event, &token.question, Given::Text(text), Confirm::Notice)
                        .await?
                }
                Err(_) => Reaction::Nothing,
            },
            InboundKind::FormSubmitted { token, values } => match ButtonToken::decode(token) {
                // A form closes when submitted: its outcome is a notice.
                Ok(token) => {
                    self.answered(channel, event, &token.question, Given::Form(values), Confirm::Notice)
                        .await?
                }
                Err(_) => Reaction::Nothing,
            },
            InboundKind::TextReply { text, reply_to, .. } => {
                // `/link` in a person's direct chat: their own page link.
                let link = (event.conversation_kind == ConversationKind::Direct)
                    .then(|| link_command(text))
                    .flatten();
                if link == Some(LinkCommand::Explicit)
                    && let Some(reaction) = self.link_reply(channel, event)
                {
                    return Ok(reaction);
                }
                match self.target(channel, event, reply_to.as_ref()).await? {
                    Target::Question(id) => {
                        self.answered(channel, event, &id, Given::Text(text), Confirm::InConversation)
                            .await?
                    }
                    Target::NothingPending(chrome) => match link.and_then(|_| self.link_reply(channel, event)) {
                        Some(reaction) => reaction,
                        None => Reaction::Reply {
                            text: chrome.nothing_pending().to_owned(),
                        },
                    },
                    Target::None => Reaction::Nothing,
                }
            }
            // A greeting in a recipient's conversation is no answer either.
            InboundKind::NonText { .. } | InboundKind::Greeting { .. } => {
                match self.target(channel, event, non_text_reply_to(&event.kind)).await? {
                    Target::Question(id) => match self.addressed(channel, event, &id).await? {
                        Addressed::Open(record) => not_an_answer(&record),
                        Addressed::Refused(reaction) => reaction,
                    },
                    Target::NothingPending(chrome) => Reaction::Reply {
                        text: chrome.nothing_pending().to_owned(),
                    },
                    Target::None => Reaction::Nothing,
                }
            }
            // A kind this engine does not know yet: nothing to apply.
            _ => Reaction::Nothing,
        };
        Ok(reaction)
    }

    /// A tap on one of askgate's buttons.
    async fn pressed(&self, channel: &str, event: &InboundEvent, token: &str) -> Result<Reaction, EngineError> {
        let Ok(token) = ButtonToken::decode(token) else {
            return Ok(Reaction::Nothing);
        };
        let record = match self.addressed(channel, event, &token.question).await? {
            Addressed::Open(record) => record,
            Addressed::Refused(reaction) => return Ok(reaction),
        };
        let chrome = record.locale.chrome();
        let reader = ReplyReader::new(&record.request);
        let (status, answers) = match token.action {
            ButtonAction::Choose(index) => match reader.chosen(usize::from(index)) {
                Some(answers) => (QuestionStatus::Answered, Some(answers)),
                None => return Ok(Reaction::Nothing),
            },
            ButtonAction::Skip => (QuestionStatus::Skipped, None),
            ButtonAction::Answer => return Ok(self.ask_form(channel, &record)),
            ButtonAction::Other => {
                self.opened_free_text(channel, &event.conversation);
                return Ok(Reaction::AskFreeText {
                    question: record.id.clone(),
                    token: ButtonToken {
                        question: record.id.clone(),
                        action: ButtonAction::Other,
                    }
                    .encode(),
                    title: chrome.free_text_title().to_owned(),
                    placeholder: chrome.free_text_placeholder().to_owned(),
                    submit: chrome.submit_button().to_owned(),
                });
            }
        };
        Ok(match self.resolve_by(channel, &record, event, status, answers).await? {
            ForEvent::Applied(Some(_)) if status == QuestionStatus::Skipped => notice(chrome.skip_submitted(), false),
            ForEvent::Applied(Some(_)) => notice(chrome.answer_submitted(), false),
            ForEvent::Applied(None) => self.ended_notice(&record.id, chrome).await?,
            // Another delivery of this tap was applied: it reacts.
            _ => Reaction::Nothing,
        })
    }

    /// A typed reply, a modal's text, or a submitted form (each field read
    /// by the rules of a typed reply to its question) for question `id`.
    async fn answered(
        &self,
        channel: &str,
        event: &InboundEvent,
        id: &QuestionId,
        given: Given<'_>,
        confirm: Confirm,
    ) -> Result<Reaction, EngineError> {
        // Another partial reply to the same prompt may be saved between
        // reading the progress and saving it (the store refuses then): read
        // again and take this one on top of it.
        let mut attempt = 0;
        let (record, skipped, applied) = loop {
            let record = match self.addressed(channel, event, id).await? {
                Addressed::Open(record) => record,
                Addressed::Refused(reaction) => return Ok(reaction),
            };
            let reader = ReplyReader::new(&record.request);
            let outcome = match given {
                Given::Text(text) => reader.read(&record.progress, text),
                Given::Form(values) => reader.read_form(&record.progress, values),
            };
            let skipped = matches!(outcome, ReplyOutcome::Skipped);
            match self.apply(channel, &record, event, outcome).await? {
                Some(applied) => break (record, skipped, applied),
                None if attempt < PROGRESS_ATTEMPTS => attempt += 1,
                None => {
                    let busy = format!("question {}: other replies kept saving their progress first", record.id);
                    return Err(StoreError::Unavailable(busy).into());
                }
            }
        };
        let chrome = record.locale.chrome();
        Ok(match (applied, confirm) {
            (Applied::Refused(reaction), _) => reaction,
            (Applied::Partial(text), Confirm::InConversation) => Reaction::Reply { text },
            // The message itself is edited into the summary: no reply needed.
            (Applied::Resolved, Confirm::InConversation) => Reaction::Nothing,
            (Applied::Partial(text), Confirm::Notice) => notice(&text, false),
            (Applied::Resolved, Confirm::Notice) if skipped => notice(chrome.skip_submitted(), false),
            (Applied::Resolved, Confirm::Notice) => notice(chrome.answer_submitted(), false),
        })
    }

    /// Applies what a reply or a form said to an open question; `None` when
    /// another reply saved progress since `record` was read.
    async fn apply(
        &self,
        channel: &str,
        record: &QuestionRecord,
        event: &InboundEvent,
        outcome: ReplyOutcome,
    ) -> Result<Option<Applied>, EngineError> {
        let chrome = record.locale.chrome();
        if let ReplyOutcome::Partial { answers, .. } | ReplyOutcome::Answered(answers) = &outcome
            && let Some((_, chars)) = answers.too_long()
        {
            // Refused whole, never cut: the person decides what to leave out.
            let text = chrome.answer_too_long(chars, MAX_FREE_TEXT_CHARS);
            return Ok(Some(Applied::Refused(Reaction::Reply { text })));
        }
        let resolved = match outcome {
            ReplyOutcome::NotAnAnswer => return Ok(Some(Applied::Refused(not_an_answer(record)))),
            ReplyOutcome::Partial { answers, took, missing } => {
                let key = EventKey {
                    channel,
                    event_id: &event.event_id,
                };
                match self
                    .inner
                    .store
                    .save_progress_for_event(&record.id, &record.progress, &answers, key)
                    .await?
                {
                    ForEvent::Applied(ProgressSaved::Saved) => {}
                    ForEvent::Applied(ProgressSaved::Changed) => return Ok(None),
                    // Another delivery of this reply was applied: it reacts.
                    ForEvent::Seen => return Ok(Some(Applied::Refused(Reaction::Nothing))),
                    _ => return Ok(Some(Applied::Refused(self.ended_notice(&record.id, chrome).await?))),
                }
                if let Some(updated) = self.get(&record.id).await? {
                    self.publish(updated);
                }
                let header = |id: &String| record.request.question(id).map_or(id.clone(), |q| q.header.clone());
                let took: Vec<String> = took.iter().map(header).collect();
                let missing: Vec<String> = missing.iter().map(header).collect();
                let took: Vec<&str> = took.iter().map(String::as_str).collect();
                let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
                return Ok(Some(Applied::Partial(chrome.got_still_needed(&took, &missing))));
            }
            ReplyOutcome::Skipped => {
                self.resolve_by(channel, record, event, QuestionStatus::Skipped, None)
                    .await?
            }
            ReplyOutcome::Answered(answers) => {
                self.resolve_by(channel, record, event, QuestionStatus::Answered, Some(answers))
                    .await?
            }
        };
        match resolved {
            ForEvent::Applied(Some(_)) => Ok(Some(Applied::Resolved)),
            ForEvent::Applied(None) => Ok(Some(Applied::Refused(self.ended_notice(&record.id, chrome).await?))),
            _ => Ok(Some(Applied::Refused(Reaction::Nothing))),
        }
    }

    /// The form Answer… opens, if the channel has forms that can hold it.
    fn ask_form(&self, channel: &str, record: &QuestionRecord) -> Reaction {
        let limits = self.inner.channels.get(channel).and_then(|c| c.capabilities().forms);
        match limits.and_then(|limits| askgate_core::form::form(&record.request, &limits, &record.id, record.locale)) {
            Some(form) => Reaction::AskForm {
                question: record.id.clone(),
                form,
            },
            None => Reaction::Nothing,
        }
    }

    /// The language to speak in a conversation: its recipient's, else the
    /// one every recipient on the channel shares, else English.
    pub(crate) fn locale_in(&self, channel: &str, conversation: &str) -> Locale {
        let on_channel: Vec<(&crate::Recipient, &crate::RecipientSurface)> = self
            .recipients()
            .filter_map(|r| Some((r, r.surface(channel)?)))
            .collect();
        if let Some((recipient, _)) = on_channel
            .iter()
            .find(|(_, surface)| surface.destination.conversation == conversation)
        {
            return recipient.locale;
        }
        match on_channel.split_first() {
            Some(((first, _), rest)) if rest.iter().all(|(r, _)| r.locale == first.locale) => first.locale,
            _ => Locale::En,
        }
    }

    /// Resolves `record` as the person of `event` said, recording the event
    /// in the same transaction.
    async fn resolve_by(
        &self,
        channel: &str,
        record: &QuestionRecord,
        event: &InboundEvent,
        status: QuestionStatus,
        answers: Option<askgate_core::Answers>,
    ) -> Result<ForEvent<Option<QuestionRecord>>, EngineError> {
        let resolution = Resolution {
            by: Some(event.user.clone()),
            answers,
            via: Some(channel.to_owned()),
            surface: record
                .surfaces
                .iter()
                .find(|surface| surface.channel == channel)
                .map(|surface| surface.kind.clone()),
            ..self.resolution(status, None)
        };
        let key = EventKey {
            channel,
            event_id: &event.event_id,
        };
        self.resolve_for(&record.id, resolution, Some(key)).await
    }

    /// The question a typed message belongs to (spec §6): the one whose
    /// message it replies to; in a direct conversation otherwise, the newest
    /// pending one there; in a group otherwise, none.
    async fn target(
        &self,
        channel: &str,
        event: &InboundEvent,
        reply_to: Option<&MessageRef>,
    ) -> Result<Target, EngineError> {
        let store = &self.inner.store;
        let group = event.conversation_kind == ConversationKind::Group;
        if group && reply_to.is_none() {
            return Ok(Target::None);
        }
        // A question on its way to this channel may be the very one replied
        // to, or land in this very conversation (a DM whose id askgate learns
        // from the send's answer): wait for its delivery a moment, with reads
        // only. Only a question asked moments ago: one whose delivery keeps
        // failing must not hold up every message to the bot. Whether one is
        // on its way is read after the lookups came up empty, and they are
        // made once more after that, so a delivery stored between the two
        // reads is found.
        let mut waited = Duration::ZERO;
        let mut on_its_way = true;
        loop {
            if let Some(reply_to) = reply_to
                && let Some(id) = store.question_for_message(channel, reply_to).await?
            {
                return Ok(Target::Question(id));
            }
            if !group
                && let Some(id) = store
                    .newest_pending_in_conversation(channel, &event.conversation)
                    .await?
            {
                return Ok(Target::Question(id));
            }
            if !on_its_way || waited >= DELIVERY_RECORD_WAIT {
                break;
            }
            // One indexed query, not a read of every pending question: this
            // runs for every message that matches no question. A reply to a
            // force-reply whose message is not attached yet waits too.
            let since = self.inner.clock.now() - JUST_ASKED_MS;
            on_its_way = (reply_to.is_some() && self.free_text_opening(channel, &event.conversation))
                || store.undelivered_since(channel, since).await?;
            if on_its_way {
                tokio::time::sleep(DELIVERY_RECORD_POLL).await;
                waited += DELIVERY_RECORD_POLL;
            }
        }
        if group {
            // A reply in a thread that is no question's.
            return Ok(Target::None);
        }
        Ok(Target::NothingPending(
            self.locale_in(channel, &event.conversation).chrome(),
        ))
    }

    /// The reply to `/link` in a direct chat: the page link of the person
    /// who wrote it, when they are a person recipient on this channel (the
    /// one its direct chat is with, as the channel names them:
    /// [`crate::Recipient::may_answer`]); `None` otherwise (a stranger's message
    /// goes on as any other). The writer decides, not the conversation's
    /// id: a Discord or Slack DM's id is not the one configured (a user id).
    fn link_reply(&self, channel: &str, event: &InboundEvent) -> Option<Reaction> {
        let chat = self.inner.channels.get(channel)?;
        let person = self.people().find(|person| person.may_answer(chat.as_ref(), event))?;
        let chrome = person.locale.chrome();
        let text = match self.page_link(&person.name) {
            Some(link) => chrome.page_link(&link),
            None => chrome.no_page_link().to_owned(),
        };
        Some(Reaction::Reply { text })
    }

    /// Checks that the event may act on question `id`: same channel and
    /// conversation, the person allowed, the question still open.
    async fn addressed(&self, channel: &str, event: &InboundEvent, id: &QuestionId) -> Result<Addressed, EngineError> {
        let Some(mut record) = self.get(id).await? else {
            return Ok(Addressed::Refused(Reaction::Nothing));
        };
        // The platform may deliver a tap on a prompt before askgate stored
        // where the prompt went (the send's answer is still on its way): wait
        // for the delivery a moment, with reads only. (Real time, not the
        // engine's clock: this is a bounded poll of the store, not a deadline.)
        // Where on this channel the question went; a question never sent
        // here knows nothing of this event.
        // The recipients whose surface on this channel is in the event's
        // conversation: the question's own, and those it was escalated to.
        // A surface's conversation is where the question was delivered (a
        // DM's own id, not the user id it was addressed to).
        let here = |record: &QuestionRecord| -> Vec<String> {
            record
                .surfaces
                .iter()
                .filter(|surface| surface.channel == channel && surface.conversation == event.conversation)
                .map(|surface| record.owner(surface).to_owned())
                .collect()
        };
        let sending = |record: &QuestionRecord| {
            record
                .surfaces
                .iter()
                .any(|surface| surface.channel == channel && surface.delivery.is_none())
        };
        let mut waited = Duration::ZERO;
        while here(&record).is_empty()
            && sending(&record)
            && record.status == QuestionStatus::Pending
            && waited < DELIVERY_RECORD_WAIT
        {
            tokio::time::sleep(DELIVERY_RECORD_POLL).await;
            waited += DELIVERY_RECORD_POLL;
            record = self.get(id).await?.ok_or(EngineError::NotFound)?;
        }
        let recipients = here(&record);
        if recipients.is_empty() {
            // A token or reply from somewhere the question was never sent.
            return Ok(Addressed::Refused(Reaction::Nothing));
        }
        let chrome = record.locale.chrome();
        let recipient = self.recipient(&record.recipient);
        let on = self.inner.channels.get(channel);
        let may_answer = recipients.iter().any(|name| {
            self.recipient(name)
                .zip(on)
                .is_some_and(|(r, on)| r.may_answer(on.as_ref(), event))
        });
        if !may_answer {
            let name = recipient.map_or(record.recipient.as_str(), |r| r.display_name.as_str());
            return Ok(Addressed::Refused(notice(&chrome.not_for_you(name), true)));
        }
        if record.status.is_final() {
            // Ended by this very event, through another delivery of it that
            // was stored after this one's first look: that one reacts.
            if self.inner.store.event_seen(channel, &event.event_id).await? {
                return Ok(Addressed::Refused(Reaction::Nothing));
            }
            return Ok(Addressed::Refused(ended(record.status, chrome)));
        }
        Ok(Addressed::Open(Box::new(record)))
    }

    fn lock_opening(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<(String, String), Instant>> {
        self.inner.opening.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that a free-text input was opened in `conversation`, until its
    /// message is attached (or [`OPENING_FOR`] passed: its send failed).
    fn opened_free_text(&self, channel: &str, conversation: &str) {
        let mut opening = self.lock_opening();
        opening.retain(|_, at| at.elapsed() < OPENING_FOR);
        opening.insert((channel.to_owned(), conversation.to_owned()), Instant::now());
    }

    /// Whether a free-text input opened in `conversation` moments ago is not
    /// attached yet.
    fn free_text_opening(&self, channel: &str, conversation: &str) -> bool {
        self.lock_opening()
            .get(&(channel.to_owned(), conversation.to_owned()))
            .is_some_and(|at| at.elapsed() < OPENING_FOR)
    }

    async fn ended_notice(&self, id: &QuestionId, chrome: Chrome) -> Result<Reaction, EngineError> {
        let status = self.get(id).await?.map_or(QuestionStatus::Cancelled, |r| r.status);
        Ok(ended(status, chrome))
    }
}

/// How long a tap waits for its prompt's delivery to be stored, and how
/// often it looks. Storing takes milliseconds, seconds on a loaded disk; an
/// adapter with a first-response budget defers meanwhile (the wait is reads
/// only), and the answer follows.
const DELIVERY_RECORD_WAIT: Duration = Duration::from_secs(3);
const DELIVERY_RECORD_POLL: Duration = Duration::from_millis(25);

/// How recent a question must be for a direct message to wait for its
/// delivery to be stored, in milliseconds.
const JUST_ASKED_MS: i64 = 10_000;

/// How long a free-text input counts as being opened: its message is sent
/// in its conversation's turn, which after a burst can take this long.
const OPENING_FOR: Duration = Duration::from_secs(60);

/// What a person gave as their answer.
#[derive(Clone, Copy)]
enum Given<'a> {
    /// A typed message or a modal's one field.
    Text(&'a str),
    /// A form's fields.
    Form(&'a [FormValue]),
}

/// How the outcome of a typed answer is confirmed: in the conversation (a
/// typed message: progress as a reply, the answer by the edited prompt), or
/// as a notice (a modal, which closes and leaves nothing else to show).
#[derive(Clone, Copy)]
enum Confirm {
    InConversation,
    Notice,
}

/// What a reply or a form did to an open question.
enum Applied {
    /// Nothing applied; show this.
    Refused(Reaction),
    /// Progress saved; confirm what was taken and what is still missing.
    Partial(String),
    /// The question ended with it.
    Resolved,
}

/// How many times a partial reply is read again when others keep saving
/// progress first, before it is refused as busy (to be sent again).
const PROGRESS_ATTEMPTS: u32 = 8;

enum Target {
    Question(QuestionId),
    NothingPending(Chrome),
    None,
}

enum Addressed {
    Open(Box<QuestionRecord>),
    Refused(Reaction),
}

fn notice(text: &str, alert: bool) -> Reaction {
    Reaction::Notice {
        text: text.to_owned(),
        alert,
    }
}

fn not_an_answer(record: &QuestionRecord) -> Reaction {
    Reaction::Reply {
        text: record.locale.chrome().not_an_answer().to_owned(),
    }
}

fn ended(status: QuestionStatus, chrome: Chrome) -> Reaction {
    let text = match status {
        QuestionStatus::Answered => chrome.already_answered(),
        QuestionStatus::Expired => chrome.expired(),
        _ => chrome.closed(),
    };
    notice(text, false)
}

#[cfg(test)]
mod tests {
    use askgate_core::channel::Destination;

    use super::{LinkCommand, addresses, link_command};

    fn at(conversation: &str, thread: Option<&str>) -> Destination {
        Destination {
            conversation: conversation.to_owned(),
            thread: thread.map(str::to_owned),
        }
    }

    #[test]
    fn a_recipient_addresses_its_conversation_its_thread_and_a_thread_that_is_a_conversation() {
        // A whole chat or channel: every thread in it.
        assert!(addresses(&at("-100", None), &at("-100", None)));
        assert!(addresses(&at("-100", None), &at("-100", Some("7"))));
        // A thread of a conversation (a Telegram topic, a Slack thread): that thread only.
        assert!(addresses(&at("-100", Some("7")), &at("-100", Some("7"))));
        assert!(!addresses(&at("-100", Some("7")), &at("-100", Some("8"))));
        assert!(!addresses(&at("-100", Some("7")), &at("-100", None)));
        // A Discord thread, told of by its own id.
        assert!(addresses(&at("444", Some("455")), &at("455", None)));
        assert!(!addresses(&at("444", Some("455")), &at("466", None)));
        assert!(!addresses(&at("444", None), &at("455", None)));
    }

    #[test]
    fn link_is_asked_for_by_slash_by_mention_and_alone() {
        for text in [
            "/link",
            "/LINK",
            " /link@askgate_bot ",
            "<@U0BOT> link",
            "<@!123> Link",
            "@askgate link",
        ] {
            assert_eq!(link_command(text), Some(LinkCommand::Explicit), "{text}");
        }
        assert_eq!(link_command("link"), Some(LinkCommand::Bare));
        assert_eq!(link_command(" Link "), Some(LinkCommand::Bare));
        for text in [
            "",
            "links",
            "the link",
            "link please",
            "/linked",
            "<@U0BOT>",
            "/link now",
        ] {
            assert_eq!(link_command(text), None, "{text}");
        }
    }
}
