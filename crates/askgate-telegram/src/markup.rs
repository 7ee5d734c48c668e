//! Agent text made safe for Telegram: escaped for the HTML parse mode (with
//! teloxide's escaping helper), and `@mentions` defused so that no one is
//! notified by text an agent wrote.

/// An invisible character that stops Telegram from reading `@name` as a mention.
const WORD_JOINER: char = '\u{2060}';

/// `text` escaped for `parse_mode = HTML`, with mentions defused.
pub fn html(text: &str) -> String {
    teloxide::utils::html::escape(&defuse_mentions(text))
}

/// Inserts a word joiner after every `@` that starts a name, so that
/// Telegram shows `@username` but does not make it a mention entity.
pub fn defuse_mentions(text: &str) -> String {
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
    fn markup_and_mentions_arrive_as_literal_text() {
        assert_eq!(html("<b>bold</b> & *_[]"), "&lt;b&gt;bold&lt;/b&gt; &amp; *_[]");
        assert_eq!(html("ask @alice or @_bob"), "ask @\u{2060}alice or @\u{2060}_bob");
        assert_eq!(html("mail me@ example or @ 2"), "mail me@ example or @ 2");
    }
}
