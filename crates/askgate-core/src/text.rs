//! Text normalization shared by validation, rendering and reply reading.
//!
//! Every comparison of a person's reply with an option, a key or a skip word
//! goes through [`normalize`], so that a label is found however it was typed
//! (spec §5), and every length limit of spec §2 is counted by [`char_len`].

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization as _;
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

/// Whether `c` is invisible: Unicode's `Default_Ignorable_Code_Point`
/// (`DerivedCoreProperties.txt`), the characters a renderer shows as
/// nothing — zero-width space, joiners and non-joiners, the word joiner,
/// the byte order mark, bidirectional marks, embeddings and isolates, the
/// soft hyphen, variation selectors, tag characters, Hangul fillers. Written
/// here: no maintained crate publishes this property (`unicode-properties`
/// has the general category, whose `Cf` also holds visible signs such as
/// U+0600 and misses the variation selectors and fillers), and the
/// property's ranges are fixed by Unicode's stability policy.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The normalized form of a reply, a label, a header or a key (spec §5):
/// invisible characters ([`is_invisible`]) dropped, full-width characters
/// folded to ASCII, composed (Unicode NFC: `café` typed with a combining
/// accent is `café`), Unicode case-folded, trimmed, whitespace runs
/// collapsed to one space, surrounding quotes and one trailing `.`, `!` or
/// `。` dropped. Two texts that look the same normalize alike.
pub fn normalize(text: &str) -> String {
    let folded = if text.is_ascii() {
        // The common case: ASCII case folding is lowercasing, and no width
        // fold, composition or invisible character applies.
        collapse_whitespace(text, |c| c.to_ascii_lowercase())
    } else {
        // Invisible characters go first, so that one between a letter and
        // its combining accent does not keep them apart; canonically
        // equivalent texts compose to the same one, so they fold alike.
        let composed: String = text
            .chars()
            .filter(|&c| !is_invisible(c))
            .map(fold_width)
            .nfc()
            .collect();
        let case_folded = caseless::default_case_fold_str(&composed);
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
///
/// For the contract's own limits (a header's 12 characters). A text going
/// to a platform is cut by the platform's unit instead ([`Limit`]).
pub fn ellipsize(text: &str, max: usize) -> String {
    if truncate_graphemes(text, max).len() == text.len() {
        return text.to_owned();
    }
    format!("{}…", truncate_graphemes(text, max.saturating_sub(1)).trim_end())
}

/// The most characters of a request's own text an error message quotes
/// ([`excerpt`]).
pub const EXCERPT_CHARS: usize = 64;

/// `text` as an error message may quote it: whole up to [`EXCERPT_CHARS`]
/// code points, otherwise its start with `…`, never a user-perceived
/// character split (a cluster longer than the excerpt is left out whole). An
/// error names what is wrong; it does not hand a 60 KB id back.
pub fn excerpt(text: &str) -> String {
    // Only the start is walked ([`Limit::ellipsize`]): the text may be as large as the request.
    Limit::code_points(EXCERPT_CHARS).ellipsize(text)
}

/// How a platform counts the length of a text: each platform's limits are
/// published in one of these, and a limit counted in another unit is broken
/// by the texts where the two differ (an emoji family is one grapheme, seven
/// code points and eleven UTF-16 units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unit {
    /// Unicode scalar values (Telegram's and Discord's "characters").
    CodePoints,
    /// UTF-16 code units (Slack's text limits, Telegram's entity offsets).
    Utf16,
    /// UTF-8 bytes (Telegram's `callback_data`).
    Bytes,
}

impl Unit {
    /// The length of `text` in this unit.
    pub fn len(self, text: &str) -> usize {
        match self {
            Self::CodePoints => text.chars().count(),
            Self::Utf16 => text.encode_utf16().count(),
            Self::Bytes => text.len(),
        }
    }
}

/// One of a platform's limits: at most `max`, counted in `unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limit {
    /// The most the platform takes.
    pub max: usize,
    /// How it counts.
    pub unit: Unit,
}

impl Limit {
    /// At most `max`, counted in `unit`.
    pub const fn new(max: usize, unit: Unit) -> Self {
        Self { max, unit }
    }

    /// At most `max` Unicode code points.
    pub const fn code_points(max: usize) -> Self {
        Self {
            max,
            unit: Unit::CodePoints,
        }
    }

    /// At most `max` UTF-16 code units.
    pub const fn utf16(max: usize) -> Self {
        Self { max, unit: Unit::Utf16 }
    }

    /// At most `max` UTF-8 bytes.
    pub const fn bytes(max: usize) -> Self {
        Self { max, unit: Unit::Bytes }
    }

    /// The length of `text` in this limit's unit.
    pub fn len(self, text: &str) -> usize {
        self.unit.len(text)
    }

    /// Whether `text` is within the limit.
    pub fn fits(self, text: &str) -> bool {
        self.len(text) <= self.max
    }

    /// The longest start of `text` within the limit that ends between two
    /// user-perceived characters (possibly empty).
    pub fn cut(self, text: &str) -> &str {
        cut_within(self.head(text), |prefix| self.fits(prefix))
    }

    /// `text` whole when it fits; otherwise cut ([`Limit::cut`]) with `…`
    /// where it was cut, the ellipsis within the limit too.
    pub fn ellipsize(self, text: &str) -> String {
        let head = self.head(text);
        // A head shorter than the text is over the limit already.
        if head.len() == text.len() && self.fits(text) {
            return text.to_owned();
        }
        shorten(head, |text| self.fits(text))
    }

    /// The start of `text` a cut can keep, and one character more: every
    /// unit counts a code point as at least one, so nothing past it fits,
    /// and the character after the last that could keeps that one's
    /// cluster whole. A cut then walks this much, not the whole of a text
    /// that may be as large as a request.
    fn head(self, text: &str) -> &str {
        text.char_indices()
            .nth(self.max.saturating_add(2))
            .map_or(text, |(at, _)| &text[..at])
    }

    /// `text` made ready for the platform by `escape` (its markup's escaping)
    /// and within the limit counted after escaping: whole when its escaped
    /// form fits, otherwise the escaped form of its longest start that fits
    /// with `…` after it. Never raw text, never over the limit, never a
    /// user-perceived character split; empty only when not even `…` fits.
    pub fn fit(self, text: &str, escape: impl Fn(&str) -> String) -> String {
        escape(&shorten(text, |text| self.fits(&escape(text))))
    }
}

/// `text` whole when `fits` holds for it; otherwise its longest start
/// (ending between user-perceived characters) that fits with `…` after it,
/// with the `…`; empty when not even that fits. `fits` must hold for every
/// start of a text it holds for ([`cut_within`]).
pub fn shorten(text: &str, fits: impl Fn(&str) -> bool) -> String {
    if fits(text) {
        return text.to_owned();
    }
    let shortened = |prefix: &str| format!("{}…", prefix.trim_end());
    let prefix = cut_within(text, |prefix| fits(&shortened(prefix)));
    let cut = shortened(prefix);
    if fits(&cut) { cut } else { String::new() }
}

/// The longest start of `text` ending at a grapheme cluster boundary for
/// which `fits` holds, found by bisection: `fits` must hold for every start
/// of a start it holds for (a length, with or without escaping, only grows
/// as text is added).
pub fn cut_within(text: &str, fits: impl Fn(&str) -> bool) -> &str {
    if fits(text) {
        return text;
    }
    let mut bounds: Vec<usize> = text.grapheme_indices(true).map(|(at, _)| at).collect();
    bounds.push(text.len());
    // bounds[0] is 0: the empty start. Find the last bound that fits.
    let (mut good, mut bad) = (0, bounds.len() - 1);
    if !fits("") {
        return "";
    }
    while bad - good > 1 {
        let middle = good + (bad - good) / 2;
        if fits(&text[..bounds[middle]]) {
            good = middle;
        } else {
            bad = middle;
        }
    }
    &text[..bounds[good]]
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
    fn an_excerpt_is_bounded_whatever_the_text() {
        assert_eq!(excerpt("deploy_target"), "deploy_target");
        let exact = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
        let cut = excerpt(&"x".repeat(60_000));
        assert_eq!(char_len(&cut), EXCERPT_CHARS);
        assert!(cut.ends_with('…'));
        // One user-perceived character of 60,000 code points is not split.
        let cluster = format!("a{}", "\u{301}".repeat(60_000));
        assert_eq!(excerpt(&cluster), "…");
        let emoji = "👩‍👩‍👧‍👦".repeat(100);
        assert!(char_len(&excerpt(&emoji)) <= EXCERPT_CHARS);
    }

    #[test]
    fn ellipsize_marks_only_a_real_cut() {
        assert_eq!(ellipsize("abcdef", 6), "abcdef");
        assert_eq!(ellipsize("abcdefg", 6), "abcde…");
        assert_eq!(ellipsize("", 3), "");
    }

    #[test]
    fn units_count_as_the_platforms_do() {
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(Unit::CodePoints.len(family), 5);
        assert_eq!(Unit::Utf16.len(family), 8);
        assert_eq!(Unit::Bytes.len(family), 18);
        assert_eq!(Unit::Utf16.len("e\u{301}"), 2);
    }

    #[test]
    fn a_cut_never_exceeds_the_limit_nor_splits_a_grapheme() {
        let family = "👨\u{200D}👩\u{200D}👧";
        let text = format!("ab{family}{family}");
        // 2 + 5 + 5 code points: 9 leaves room for one family only.
        assert_eq!(Limit::code_points(9).cut(&text), format!("ab{family}"));
        assert_eq!(Limit::code_points(6).cut(&text), "ab");
        assert_eq!(Limit::utf16(10).cut(&text), format!("ab{family}"));
        assert_eq!(Limit::code_points(12).cut(&text), text);
        let cut = Limit::code_points(9).ellipsize(&text);
        assert_eq!(cut, format!("ab{family}…"));
        assert_eq!(
            Limit::code_points(7).ellipsize(&text),
            "ab…",
            "a family and the ellipsis are 6"
        );
        assert_eq!(Limit::code_points(0).ellipsize("abc"), "");
        assert_eq!(Limit::code_points(3).ellipsize("abc"), "abc");
    }

    #[test]
    fn a_fit_counts_after_escaping_and_never_falls_back_to_raw_text() {
        let escape = |text: &str| text.replace('@', "\\@");
        let text = "@a@a@a@a@a";
        let fitted = Limit::code_points(10).fit(text, escape);
        assert!(Limit::code_points(10).fits(&fitted), "{fitted}");
        assert_eq!(fitted, "\\@a\\@a\\@a…");
        assert_eq!(Limit::code_points(15).fit(text, escape), escape(text));
    }

    #[test]
    fn clean_field_keeps_text_on_one_line() {
        assert_eq!(clean_field("  Where\nshould\u{0}it   go? "), "Where should it go?");
    }
}
