//! Agent text made literal for Discord's markdown.
//!
//! Written here: serenity's `MessageBuilder::push_safe` escapes only `*`,
//! `` ` `` and `_`, and leaves headings, lists, quotes, spoilers, strikes,
//! masked links and `<@id>` mention syntax to render. Mentions never ping in
//! any case (every message is sent with `allowed_mentions: {"parse": []}`);
//! escaping keeps them from even rendering as pills. What escaping adds
//! counts against Discord's limits ([`crate::limits::measure`]): a text is
//! cut or split after escaping, never sent unescaped.

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
}
