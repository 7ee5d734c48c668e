//! Who a question can be addressed to, where it is shown, and who may
//! answer it.

use askgate_core::Locale;
use askgate_core::channel::{ConversationKind, Destination, InboundEvent};

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
    /// Platform user ids allowed to answer. Empty: whoever is in the direct
    /// conversation, which is only ever the recipient; never anyone in a group.
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

    /// Whether the person behind `event` may answer here (spec §6).
    pub fn may_answer(&self, event: &InboundEvent) -> bool {
        if self.answerers.is_empty() {
            event.conversation_kind == ConversationKind::Direct
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
        }
    }

    /// Their surface on `channel`.
    pub fn surface(&self, channel: &str) -> Option<&RecipientSurface> {
        self.surfaces.iter().find(|surface| surface.channel == channel)
    }

    /// Whether the person behind `event`, on `channel`, may answer this
    /// recipient's questions there (spec §6).
    pub fn may_answer(&self, channel: &str, event: &InboundEvent) -> bool {
        self.surface(channel).is_some_and(|surface| surface.may_answer(event))
    }
}
