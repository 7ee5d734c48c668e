//! Who a question can be addressed to, where it is shown, and who may
//! answer it.

use askgate_core::Locale;
use askgate_core::channel::{Channel, ConversationKind, Destination, InboundEvent};

use crate::plan::Waiting;

/// A configured recipient: a person (or a group of people) with one or more
/// surfaces. A question to them is shown on every surface; the first valid
/// answer on any of them wins. Their web page shows every question to them,
/// whichever surfaces it was sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// The name agents address (`to`).
    pub name: String,
    /// How askgate names them in notices ("This question is for Alice").
    pub display_name: String,
    /// Where their questions are shown, in the configured order; never empty.
    pub surfaces: Vec<RecipientSurface>,
    /// The language of askgate's wording for them.
    pub locale: Locale,
    /// Reminders, escalations, time zone and quiet hours for them.
    pub waiting: Waiting,
    /// For a group (a recipient whose surfaces name `answerers`): the
    /// people, by their own recipient's name, who may answer its questions
    /// on askgate's page, each through their own link. The page knows a
    /// person only by the link they opened, so a group's answerers hold
    /// there only for people named here; a group names none, nobody answers
    /// it on the page.
    pub people: Vec<String>,
}

/// One surface of a recipient: a channel, where on it, and who may answer
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientSurface {
    /// The channel's name in the configuration.
    pub channel: String,
    /// The channel's kind (`telegram`, `web`): what a summary calls it.
    pub kind: String,
    /// Where on that channel.
    pub destination: Destination,
    /// Platform user ids allowed to answer. Empty: the person a direct
    /// destination is with, as its channel names them
    /// ([`Channel::direct_person`]), in that direct conversation only;
    /// never anyone in a group.
    pub answerers: Vec<String>,
}

impl RecipientSurface {
    /// A surface on `channel` (of kind `kind`) at `destination`.
    pub fn new(channel: &str, kind: &str, destination: Destination, answerers: Vec<String>) -> Self {
        Self {
            channel: channel.to_owned(),
            kind: kind.to_owned(),
            destination,
            answerers,
        }
    }

    /// Whether the person behind `event` may answer here (spec §6): one of
    /// `answerers`; with none, `person` — whom the surface's channel says
    /// its direct destination is with ([`Channel::direct_person`]) — in a
    /// direct conversation, and no one else. Whoever else a platform lets
    /// into a private chat or a DM (a forwarded message's buttons, a bug, a
    /// forged event) is a stranger there as in a group.
    pub fn may_answer(&self, event: &InboundEvent, person: Option<&str>) -> bool {
        if self.answerers.is_empty() {
            event.conversation_kind == ConversationKind::Direct && person == Some(event.user.id.as_str())
        } else {
            self.answerers.contains(&event.user.id)
        }
    }
}

impl Recipient {
    /// A recipient with one surface: the shorthand of `channel = …`.
    pub fn on(name: &str, display_name: &str, surface: RecipientSurface, locale: Locale) -> Self {
        Self {
            name: name.to_owned(),
            display_name: display_name.to_owned(),
            surfaces: vec![surface],
            locale,
            waiting: Waiting::default(),
            people: Vec::new(),
        }
    }

    /// The same recipient, with `people` who answer it on the page.
    #[must_use]
    pub fn answered_on_the_page_by(mut self, people: Vec<String>) -> Self {
        self.people = people;
        self
    }

    /// Whether this is a group: a recipient whose surfaces name who may
    /// answer (`answerers`) rather than being one person's direct chat.
    pub fn is_group(&self) -> bool {
        self.surfaces.iter().any(|surface| !surface.answerers.is_empty())
    }

    /// The same recipient, with `waiting`.
    #[must_use]
    pub fn waiting(mut self, waiting: Waiting) -> Self {
        self.waiting = waiting;
        self
    }

    /// Their surface on `channel`.
    pub fn surface(&self, channel: &str) -> Option<&RecipientSurface> {
        self.surfaces.iter().find(|surface| surface.channel == channel)
    }

    /// Whether the person behind `event`, on `channel`, may answer this
    /// recipient's questions there (spec §6).
    pub fn may_answer(&self, channel: &dyn Channel, event: &InboundEvent) -> bool {
        self.surface(channel.name()).is_some_and(|surface| {
            let person = channel.direct_person(&surface.destination);
            surface.may_answer(event, person.as_deref())
        })
    }
}

#[cfg(test)]
mod tests {
    use askgate_core::channel::{InboundKind, MessageRef, UserRef};

    use super::*;

    fn event(user: &str, kind: ConversationKind) -> InboundEvent {
        InboundEvent {
            event_id: "e".into(),
            user: UserRef {
                id: user.into(),
                display_name: user.into(),
            },
            conversation: "c".into(),
            conversation_kind: kind,
            thread: None,
            kind: InboundKind::NonText {
                reply_to: None,
                message: MessageRef {
                    conversation: "c".into(),
                    message: "1".into(),
                },
            },
        }
    }

    fn surface(answerers: &[&str]) -> RecipientSurface {
        let destination = Destination {
            conversation: "c".into(),
            thread: None,
        };
        let answerers = answerers.iter().map(|id| (*id).to_owned()).collect();
        RecipientSurface::new("chat", "chat", destination, answerers)
    }

    #[test]
    fn without_answerers_only_the_person_of_the_direct_conversation_answers() {
        let direct = surface(&[]);
        assert!(direct.may_answer(&event("42", ConversationKind::Direct), Some("42")));
        assert!(!direct.may_answer(&event("43", ConversationKind::Direct), Some("42")));
        // A channel that names no one: no one.
        assert!(!direct.may_answer(&event("42", ConversationKind::Direct), None));
        // Never anyone in a group.
        assert!(!direct.may_answer(&event("42", ConversationKind::Group), Some("42")));
        // Listed answerers answer wherever the surface is, and only they.
        let listed = surface(&["7"]);
        assert!(listed.may_answer(&event("7", ConversationKind::Group), None));
        assert!(listed.may_answer(&event("7", ConversationKind::Direct), Some("42")));
        assert!(!listed.may_answer(&event("42", ConversationKind::Direct), Some("42")));
    }
}
