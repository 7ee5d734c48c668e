//! Who a question can be addressed to, and who may answer it.

use askgate_core::Locale;
use askgate_core::channel::{ConversationKind, Destination, InboundEvent};

/// A configured recipient: a person (or a group of people) on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// The name agents address (`to`).
    pub name: String,
    /// How askgate names them in notices ("This question is for Alice").
    pub display_name: String,
    /// The channel's name in the configuration.
    pub channel: String,
    /// Where on that channel.
    pub destination: Destination,
    /// Platform user ids allowed to answer. Empty: whoever is in the direct
    /// conversation, which is only ever the recipient; never anyone in a group.
    pub answerers: Vec<String>,
    /// The language of askgate's wording for them.
    pub locale: Locale,
}

impl Recipient {
    /// Whether the person behind `event` may answer this recipient's questions
    /// (spec §6).
    pub fn may_answer(&self, event: &InboundEvent) -> bool {
        if self.answerers.is_empty() {
            event.conversation_kind == ConversationKind::Direct
        } else {
            self.answerers.contains(&event.user.id)
        }
    }
}
