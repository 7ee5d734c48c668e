//! Slack's limits on what askgate sends, each counted Slack's way, in one
//! table. Source: Slack's Block Kit reference (api.slack.com/reference/block-kit:
//! "Blocks" → section, actions; "Block elements" → button, checkboxes,
//! `plain_text_input`; "Composition objects" → text, option; "Views" →
//! modal), as tabulated in the fake Slack's limits file
//! (`askgate-testkit/spec/slack`), which checks every request against it.
//! Slack counts text lengths in UTF-16 code units; escaping `&`, `<` and
//! `>` as entities and the zero-width spaces that keep formatting marks
//! literal count too ([`measure`]).

use askgate_core::Limit;

use crate::markup::escape;

/// A section block's `text`: "Maximum length … is 3000 characters". A
/// prompt's part is one section.
pub const SECTION_TEXT: Limit = Limit::utf16(3000);

/// A message's `text` without blocks (a nudge): chat.postMessage, "For
/// best results, limit the number of characters in the `text` field to
/// 4,000 characters" (Slack truncates past 40,000).
pub const MESSAGE_TEXT: Limit = Limit::utf16(4000);

/// A context block's text element (an option's description).
pub const CONTEXT_TEXT: Limit = Limit::utf16(3000);

/// A button's `text`: "Maximum length … is 75 characters".
pub const BUTTON_TEXT: Limit = Limit::utf16(75);

/// A button's `action_id`: "Maximum length … is 255 characters".
pub const ACTION_ID: Limit = Limit::utf16(255);

/// Elements an actions block holds: 25.
pub const MAX_ACTIONS: usize = 25;

/// A modal's `title`, `submit` and `close`: "Maximum length … is 24 characters".
pub const MODAL_TITLE: Limit = Limit::utf16(24);

/// An input block's `label`: "Maximum length … is 2000 characters".
pub const INPUT_LABEL: Limit = Limit::utf16(2000);

/// A `plain_text_input`'s `placeholder`: "Maximum length … is 150 characters".
pub const PLACEHOLDER: Limit = Limit::utf16(150);

/// An option's `text` (a checkbox): "Maximum length … is 75 characters".
pub const OPTION_TEXT: Limit = Limit::utf16(75);

/// Blocks a modal holds: 100; askgate's forms stay far below with 10 fields.
pub const MAX_FORM_FIELDS: usize = 10;

/// The length Slack counts for text that askgate sends through
/// [`escape`]: the escaped text, in UTF-16 code units.
pub fn measure(text: &str) -> usize {
    SECTION_TEXT.len(&escape(text))
}
