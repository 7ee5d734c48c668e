//! Agent text made safe for Telegram: escaped for the HTML parse mode (with
//! teloxide's escaping helper), and `@mentions` defused so that no one is
//! notified by text an agent wrote.

/// `text` escaped for `parse_mode = HTML`, with mentions defused.
pub fn html(text: &str) -> String {
    teloxide::utils::html::escape(&defuse_mentions(text))
}

/// A word joiner after every `@` that starts a name, so that Telegram shows
/// `@username` but does not make it a mention entity (the adapters' shared
/// [`askgate_adapter::mention::defuse`]).
pub use askgate_adapter::mention::defuse as defuse_mentions;

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
