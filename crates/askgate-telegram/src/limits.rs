//! Telegram's limits on what askgate sends, each counted Telegram's way, in
//! one table. Source: the Bot API reference (core.telegram.org/bots/api),
//! the same words as in the machine-readable copy the fake Telegram checks
//! every request against (`askgate-testkit/spec/telegram`). Telegram counts
//! "characters" as Unicode code points (tdlib's `utf8_length`), and a
//! message's length after entity parsing: HTML tags and entities do not
//! count, the word joiners that defuse mentions do ([`measure`]).

use askgate_core::Limit;

use crate::markup::defuse_mentions;

/// `sendMessage.text`, `editMessageText.text`: "1-4096 characters after
/// entities parsing".
pub const MESSAGE_TEXT: Limit = Limit::code_points(4096);

/// `InlineKeyboardButton.callback_data`: "1-64 bytes".
pub const CALLBACK_DATA: Limit = Limit::bytes(64);

/// `answerCallbackQuery.text`: "0-200 characters".
pub const CALLBACK_ANSWER_TEXT: Limit = Limit::code_points(200);

/// `ForceReply.input_field_placeholder`: "1-64 characters".
pub const INPUT_FIELD_PLACEHOLDER: Limit = Limit::code_points(64);

/// `InlineKeyboardButton.text` has no published limit; askgate keeps a
/// button's text within a contract label's 64 characters (longer texts are
/// cut by Telegram's clients anyway).
pub const BUTTON_TEXT: Limit = Limit::code_points(64);

/// The length Telegram counts for agent or person text that askgate sends
/// through [`crate::markup::html`]: the text after entity parsing, i.e. the
/// text with its mentions defused, in code points.
pub fn measure(text: &str) -> usize {
    MESSAGE_TEXT.len(&defuse_mentions(text))
}

/// `text` for a message's HTML, within [`MESSAGE_TEXT`] after parsing: whole
/// when it fits, otherwise cut with `…`.
pub fn message_html(text: &str) -> String {
    crate::markup::html(&askgate_core::text::shorten(text, |text| {
        measure(text) <= MESSAGE_TEXT.max
    }))
}
