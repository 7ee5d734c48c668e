//! `@names` defused in text askgate sends, on platforms that find a
//! mention in plain text (Telegram's `@username`; a Matrix client that
//! still matches names, `@room`): an invisible word joiner after each `@`
//! that starts a name, so that the text reads the same and notifies no one.

/// The invisible character put after an `@` that starts a name.
pub const WORD_JOINER: char = '\u{2060}';

/// Whether `next`, right after an `@`, starts a name.
pub fn starts_name(next: char) -> bool {
    next.is_alphanumeric() || next == '_'
}

/// `text` with a [`WORD_JOINER`] after every `@` that starts a name.
pub fn defuse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '@' && chars.peek().is_some_and(|next| starts_name(*next)) {
            out.push(WORD_JOINER);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_at_that_starts_a_name_is_defused_and_nothing_else_changes() {
        assert_eq!(defuse("ask @alice or @_bob"), "ask @\u{2060}alice or @\u{2060}_bob");
        assert_eq!(defuse("ping @room now"), "ping @\u{2060}room now");
        assert_eq!(defuse("mail me@ example or @ 2"), "mail me@ example or @ 2");
    }
}
