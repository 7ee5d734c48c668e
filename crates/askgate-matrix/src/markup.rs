//! Agent text and a person's words made inert for Matrix. askgate sends
//! plain text only (`body`, never `formatted_body`), so no markup is ever
//! read from it; and every event carries `m.mentions`, so that homeservers
//! and clients that follow the spec's intentional mentions (v1.7) notify
//! only whom it names. For clients that still match names in the text,
//! `@room` and `@user:server` are defused as well.

/// An invisible character that keeps `@room` and `@user:server` from
/// being read as a mention by a client that still matches text.
const WORD_JOINER: char = '\u{2060}';

/// `text` with a word joiner after every `@` that starts a name, so that it
/// reads the same and mentions no one.
pub fn defuse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '@' && chars.peek().is_some_and(|next| next.is_alphanumeric() || *next == '_') {
            out.push(WORD_JOINER);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_and_user_mentions_are_defused_and_nothing_else_changes() {
        assert_eq!(defuse("ping @room now"), "ping @\u{2060}room now");
        assert_eq!(defuse("@alice:example.org"), "@\u{2060}alice:example.org");
        assert_eq!(defuse("<b>me@ x</b> & @ 2"), "<b>me@ x</b> & @ 2");
    }
}
