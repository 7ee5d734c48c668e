//! Text normalization shared by validation, rendering and reply reading.
//!
//! Every comparison of a person's reply with an option, a key or a skip word
//! goes through [`normalize`], so that a label is found however it was typed
//! (spec §5), and every length limit of spec §2 is counted by [`char_len`].

use unicode_segmentation::UnicodeSegmentation;

/// Folds one full-width ASCII variant (U+FF01..U+FF5E) or the ideographic
/// space to its ASCII form; every other character is returned unchanged.
///
/// The fold maps one `char` to one `char`, so character positions found in the
/// folded text are positions in the original too.
pub fn fold_width(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        _ => c,
    }
}

/// Pairs of quotes that may surround a reply ("Staging", 「Staging」).
const QUOTE_PAIRS: &[(char, char)] = &[
    ('"', '"'),
    ('\'', '\''),
    ('`', '`'),
    ('\u{201C}', '\u{201D}'),
    ('\u{2018}', '\u{2019}'),
    ('\u{300C}', '\u{300D}'),
    ('\u{300E}', '\u{300F}'),
    ('\u{00AB}', '\u{00BB}'),
];

/// The normalized form of a reply, a label, a header or a key (spec §5):
/// full-width characters folded to ASCII, Unicode case-folded, trimmed,
/// whitespace runs collapsed to one space, surrounding quotes and one trailing
/// `.`, `!` or `。` dropped.
pub fn normalize(text: &str) -> String {
    let folded = if text.is_ascii() {
        // The common case: ASCII case folding is lowercasing, and no width fold applies.
        collapse_whitespace(text, |c| c.to_ascii_lowercase())
    } else {
        let widened: String = text.chars().map(fold_width).collect();
        let case_folded = caseless::default_case_fold_str(&widened);
        collapse_whitespace(&case_folded, |c| c)
    };
    let unquoted = strip_quotes(&folded);
    let trimmed = strip_trailing_stop(unquoted);
    let unquoted = strip_quotes(trimmed);
    if unquoted.len() == folded.len() {
        folded
    } else {
        unquoted.to_owned()
    }
}

/// Collapses whitespace (and control characters) into single spaces, trims
/// both ends, and maps every kept character through `map`.
fn collapse_whitespace(text: &str, map: impl Fn(char) -> char) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(map(c));
        }
    }
    out
}

/// Drops one pair of surrounding quotes and the whitespace inside them.
fn strip_quotes(text: &str) -> &str {
    let mut chars = text.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return text;
    };
    if QUOTE_PAIRS.iter().any(|&(open, close)| open == first && close == last) {
        text[first.len_utf8()..text.len() - last.len_utf8()].trim()
    } else {
        text
    }
}

/// Drops one trailing full stop or exclamation mark.
fn strip_trailing_stop(text: &str) -> &str {
    match text.chars().next_back() {
        Some(stop @ ('.' | '!' | '。')) => text[..text.len() - stop.len_utf8()].trim_end(),
        _ => text,
    }
}

/// The text of an agent-written field as askgate keeps it: trimmed, and every
/// run of whitespace or control characters (a newline included) made one
/// space, so that agent text cannot add lines to a prompt's layout.
pub fn clean_field(text: &str) -> String {
    collapse_whitespace(text, |c| c)
}

/// The number of Unicode scalar values: how the limits of spec §2 are counted.
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// The first `max` user-perceived characters (grapheme clusters) of `text`:
/// an emoji with modifiers or a letter with combining marks is never split.
pub fn truncate_graphemes(text: &str, max: usize) -> &str {
    match text.grapheme_indices(true).nth(max) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// `text` cut to `max` user-perceived characters, with `…` where it was cut.
pub fn ellipsize(text: &str, max: usize) -> String {
    if truncate_graphemes(text, max).len() == text.len() {
        return text.to_owned();
    }
    format!("{}…", truncate_graphemes(text, max.saturating_sub(1)).trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_case_width_space_quotes_and_one_stop() {
        assert_eq!(normalize("  Staging   (Recommended) "), "staging (recommended)");
        assert_eq!(normalize("ＳＴＡＧＩＮＧ"), "staging");
        assert_eq!(normalize("２"), "2");
        assert_eq!(normalize("\"Production\""), "production");
        assert_eq!(normalize("「生产」"), "生产");
        assert_eq!(normalize("“Canary”."), "canary");
        assert_eq!(normalize("Canary!!"), "canary!");
        assert_eq!(normalize("好的。"), "好的");
        assert_eq!(normalize("STRASSE"), normalize("straße"));
        assert_eq!(normalize("a\n\tb"), "a b");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize("\""), "\"");
        assert_eq!(normalize("\"\""), "");
    }

    #[test]
    fn fold_width_is_one_to_one() {
        assert_eq!(fold_width('：'), ':');
        assert_eq!(fold_width('，'), ',');
        assert_eq!(fold_width('；'), ';');
        assert_eq!(fold_width('\u{3000}'), ' ');
        assert_eq!(fold_width('、'), '、');
        assert_eq!(fold_width('中'), '中');
    }

    #[test]
    fn truncation_never_splits_a_user_perceived_character() {
        let family = "👨\u{200D}👩\u{200D}👧";
        let text = format!("{}{family}x", "a".repeat(11));
        assert_eq!(truncate_graphemes(&text, 12), format!("{}{family}", "a".repeat(11)));
        assert_eq!(truncate_graphemes("e\u{301}e\u{301}", 1), "e\u{301}");
        assert_eq!(truncate_graphemes("short", 12), "short");
    }

    #[test]
    fn ellipsize_marks_only_a_real_cut() {
        assert_eq!(ellipsize("abcdef", 6), "abcdef");
        assert_eq!(ellipsize("abcdefg", 6), "abcde…");
        assert_eq!(ellipsize("", 3), "");
    }

    #[test]
    fn clean_field_keeps_text_on_one_line() {
        assert_eq!(clean_field("  Where\nshould\u{0}it   go? "), "Where should it go?");
    }
}
