//! Matrix's limits on what askgate sends. The client-server API bounds a
//! whole event at 65,536 bytes of JSON (the spec's "Size limits"); askgate
//! keeps a message's text far below that, in UTF-8 bytes after JSON
//! escaping, so that the event's other fields and an edit's copy of the
//! text (`m.new_content` beside the fallback `body`) always fit.

use askgate_core::Limit;

/// The longest text of one message, in UTF-8 bytes once escaped for JSON
/// ([`measure`]). An edit carries the text twice (`body` and
/// `m.new_content.body`): twice this, with room to spare, is within the
/// 65,536 bytes of an event.
pub const MESSAGE_TEXT: usize = 16_000;

/// The most answers of a poll askgate sends: MSC3381 asks clients to
/// show up to 20.
pub const POLL_ANSWERS: usize = 20;

/// The longest poll answer text, in code points: askgate's own bound, as
/// MSC3381 sets none; a label is at most 60 characters (spec §2) and Skip
/// and Other… are short.
pub const POLL_ANSWER_TEXT: Limit = Limit::code_points(200);

/// The longest answer id, in bytes: askgate's button token, which is
/// ASCII; MSC3381 sets no bound, and an id of up to 100 bytes is kept
/// well within the event.
pub const POLL_ANSWER_ID: usize = 100;

/// A text's length as [`MESSAGE_TEXT`] counts it: UTF-8 bytes once
/// defused ([`crate::markup::defuse`]: three for each word joiner) and
/// escaped as a JSON string (`"` and `\` take two bytes, a control
/// character six).
pub fn measure(text: &str) -> usize {
    let mut chars = text.chars().peekable();
    let mut bytes = 0;
    while let Some(c) = chars.next() {
        bytes += match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if u32::from(c) < 0x20 => 6,
            '@' if chars
                .peek()
                .is_some_and(|next| askgate_adapter::mention::starts_name(*next)) =>
            {
                1 + askgate_adapter::mention::WORD_JOINER.len_utf8()
            }
            c => c.len_utf8(),
        };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_measured_as_its_json_string_once_defused() {
        for text in [
            "plain",
            "quote \" and \\ slash",
            "line\nbreak\tand \u{1}",
            "生产 🚀",
            "@room and me@ x",
        ] {
            let json = serde_json::to_string(&crate::markup::defuse(text)).unwrap_or_default();
            assert_eq!(measure(text), json.len() - 2, "{text:?}");
        }
    }
}
