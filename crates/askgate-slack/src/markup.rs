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

/// `text` escaped, then cut to at most `max` characters without splitting
/// an entity (an ellipsis marks the cut).
pub fn escape_within(text: &str, max: usize) -> String {
    let escaped = escape(text);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(max.saturating_sub(1)).collect();
    if let Some(amp) = cut.rfind('&')
        && !cut[amp..].contains(';')
    {
        cut.truncate(amp);
    }
    cut.push('…');
    cut
}

/// `text` split into pieces of at most `max` characters, at line breaks
/// where it can (Slack's section text holds 3000).
pub fn chunks(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if current.chars().count() + line.chars().count() > max && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
        }
        if line.chars().count() > max {
            let chars: Vec<char> = line.chars().collect();
            for piece in chars.chunks(max) {
                pieces.push(piece.iter().collect());
            }
        } else {
            current.push_str(line);
        }
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current);
    }
    pieces
        .into_iter()
        .map(|piece| piece.trim_end_matches('\n').to_owned())
        .filter(|piece| !piece.is_empty())
        .collect()
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

    #[test]
    fn a_cut_never_splits_an_entity() {
        let cut = escape_within("abc<<<", 6);
        assert_eq!(cut, "abc…");
        assert_eq!(escape_within("short", 10), "short");
    }

    #[test]
    fn long_text_splits_at_lines() {
        let text = format!("{}\n{}\n{}", "a".repeat(6), "b".repeat(6), "c".repeat(14));
        assert_eq!(chunks(&text, 10), ["aaaaaa", "bbbbbb", "cccccccccc", "cccc"]);
        assert_eq!(chunks("one\ntwo", 10), ["one\ntwo"]);
    }
}
