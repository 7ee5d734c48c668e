//! Agent text made literal for Discord's markdown.
//!
//! Written here: serenity's `MessageBuilder::push_safe` escapes only `*`,
//! `` ` `` and `_`, and leaves headings, lists, quotes, spoilers, strikes,
//! masked links and `<@id>` mention syntax to render. Mentions never ping in
//! any case (every message is sent with `allowed_mentions: {"parse": []}`);
//! escaping keeps them from even rendering as pills.

/// Characters Discord's markdown gives a meaning anywhere in a line.
const MARKDOWN: &[char] = &['\\', '*', '_', '~', '`', '|', '[', ']', '(', ')', '<', '>', '#', '@'];

/// `text` with every markdown character escaped by a backslash (Discord shows
/// `\*` as `*`), and `1.` at the start of a line kept from becoming a list.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let mut digits_only = true;
        for c in line.chars() {
            let at_start = out.ends_with('\n') || out.is_empty();
            // `- item`, `+ item` and `1. item` make lists only at a line's start.
            let list_mark = ((c == '-' || c == '+') && at_start) || (c == '.' && digits_only && !at_start);
            if MARKDOWN.contains(&c) || list_mark {
                out.push('\\');
            }
            digits_only = digits_only && c.is_ascii_digit();
            out.push(c);
        }
    }
    out
}

/// Characters that could reach someone or somewhere: mention and link syntax.
const ESSENTIAL: &[char] = &['\\', '<', '>', '@', '[', ']', '(', ')'];

/// [`escape`], unless that is longer than `max` characters (a text made
/// mostly of markdown characters): then only mention and link syntax is
/// escaped, and where even that does not fit, nothing — pings are off for
/// every message anyway (`allowed_mentions`), and a prompt is never cut.
pub fn escape_within(text: &str, max: usize) -> String {
    let full = escape(text);
    if full.chars().count() <= max {
        return full;
    }
    let mut essential = String::with_capacity(text.len() + 64);
    for c in text.chars() {
        if ESSENTIAL.contains(&c) {
            essential.push('\\');
        }
        essential.push(c);
    }
    if essential.chars().count() <= max {
        essential
    } else {
        text.to_owned()
    }
}

/// The text a person sees for `escaped`: backslashes before punctuation
/// dropped, as Discord renders them. For tests and length checks.
pub fn shown(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(char::is_ascii_punctuation) {
            if let Some(next) = chars.next() {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_mentions_are_escaped_and_read_back_as_typed() {
        let literal = "<b>bold</b> *star* _under_ [link](http://x) `code` @everyone <@123> ~~s~~ ||spoiler||\n# heading\n- item\n1. first\n> quote";
        let escaped = escape(literal);
        assert!(
            escaped.contains("\\*star\\*") && escaped.contains("\\<\\@123\\>"),
            "{escaped}"
        );
        assert!(
            escaped.contains("\n\\# heading\n\\- item\n1\\. first\n\\> quote"),
            "{escaped}"
        );
        assert_eq!(shown(&escaped), literal);
        let mentions = "@everyone @here <@123> <@!123> <@&456>";
        assert_eq!(escape(mentions), r"\@everyone \@here \<\@123\> \<\@!123\> \<\@&456\>");
        // Plain words stay as they are; the layout's own numbering is kept from list rendering.
        assert_eq!(escape("Deploy — where?"), "Deploy — where?");
        assert_eq!(escape("2) Production"), "2\\) Production");
    }

    #[test]
    fn text_too_marked_up_to_escape_whole_is_escaped_less_never_cut() {
        let stars = "*".repeat(1500);
        let within = escape_within(&stars, 2000);
        assert_eq!(within, stars, "mention and link syntax only: none here");
        let links = format!("{}<@1>", "*".repeat(1400));
        assert!(escape_within(&links, 2000).ends_with("\\<\\@1\\>"));
        assert_eq!(shown(&escape_within("a *b*", 2000)), "a *b*");
    }
}
