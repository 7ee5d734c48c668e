//! Discord's limits on what askgate sends, each counted Discord's way, in
//! one table. Source: Discord's developer documentation (API v10: "Message
//! Resource" → Create Message, "Message Components", "Interactions" →
//! Modal), checked against the OpenAPI document the fake Discord validates
//! every request with (`askgate-testkit/spec/discord`). Discord counts
//! characters as Unicode code points; escaping for its markdown adds
//! backslashes that count ([`measure`]).

use askgate_core::Limit;

use crate::markup::escape;

/// A message's `content` (also an interaction response's, a follow-up's):
/// "up to 2000 characters".
pub const CONTENT: Limit = Limit::code_points(2000);

/// A button's `label`: "max 80 characters".
pub const BUTTON_LABEL: Limit = Limit::code_points(80);

/// A component's `custom_id`: "max 100 characters".
pub const CUSTOM_ID: Limit = Limit::code_points(100);

/// Buttons a message can carry: 5 action rows of 5.
pub const MAX_BUTTONS: usize = 25;

/// A modal's `title`: "max 45 characters".
pub const MODAL_TITLE: Limit = Limit::code_points(45);

/// A text input's `label`: "max 45 characters".
pub const TEXT_INPUT_LABEL: Limit = Limit::code_points(45);

/// A text input's `placeholder`: "max 100 characters".
pub const TEXT_INPUT_PLACEHOLDER: Limit = Limit::code_points(100);

/// Text inputs a modal can carry: 5.
pub const MAX_MODAL_FIELDS: usize = 5;

/// The length Discord counts for text that askgate sends through
/// [`escape`]: the escaped text, in code points.
pub fn measure(text: &str) -> usize {
    CONTENT.len(&escape(text))
}

/// `text` escaped for a message's `content` and within [`CONTENT`] after
/// escaping: whole when it fits, otherwise cut with `…`. Never raw.
pub fn content(text: &str) -> String {
    CONTENT.fit(text, escape)
}
