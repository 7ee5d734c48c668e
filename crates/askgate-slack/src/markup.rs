//! Text made literal for Slack's mrkdwn.
//!
//! Slack gives `<…>` its meaning (`<!channel>`, `<!here>`, `<@U…>`, `<#C…>`,
//! `<https://…|label>`) and decodes exactly three entities, so escaping `&`,
//! `<` and `>` keeps every mention and link out of agent text and a
//! person's own words while showing them as typed (Slack's "Formatting text
//! for app surfaces": escaping text). Slack has no escape for its
//! formatting marks (`*bold*`, `_italic_`, `~strike~`, `` `code` ``), which
//! take effect only at the start of a word: a zero-width space before each
//! mark keeps it literal and shows nothing. Written here: an HTML escaper
//! would also turn quotes into entities that Slack shows literally, and
//! slack-morphism has none.

/// Slack's formatting marks.
const MARKS: &[char] = &['*', '_', '~', '`'];

/// A zero-width space: no word starts after it.
const DEFUSE: char = '\u{200B}';

/// `text` with `&`, `<` and `>` escaped as Slack's entities, and each
/// formatting mark kept literal by a zero-width space before it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if MARKS.contains(&c) => {
                out.push(DEFUSE);
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as a block of code (```` ``` ````), shown and copied as is: only
/// `&`, `<` and `>` become entities (Slack turns them back), so no mention
/// or link is made and no invisible character ends up in what is copied.
/// `text` must hold no backticks.
pub fn code_block(text: &str) -> String {
    let escaped = text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!("```{escaped}```")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_links_become_literal_text() {
        assert_eq!(
            escape("<!channel> & <@U123> <https://x.io|click>"),
            "&lt;!channel&gt; &amp; &lt;@U123&gt; &lt;https://x.io|click&gt;"
        );
        assert_eq!(escape("\"quoted\" it's"), "\"quoted\" it's");
        assert_eq!(escape("*bold* _it_"), "\u{200B}*bold\u{200B}* \u{200B}_it\u{200B}_");
    }
}
