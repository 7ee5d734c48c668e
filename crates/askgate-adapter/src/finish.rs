//! The words of a finished prompt's message: the prompt's text and, under
//! it, its summary, together within the message's limit as the platform
//! counts it (after the adapter's escaping, in its unit).
//!
//! The summary is what the message must say now, so it is placed first: its
//! longest form that fits ([`Summary::within`], the person's own words
//! shortened where they must be, saying so), and the prompt's text gives way
//! to it, cut with `…`. Every adapter that edits one message into its
//! summary lays it out through [`finished`].

use askgate_core::Summary;
use askgate_core::text::shorten;

/// The finished message's two texts, unescaped: the prompt's text (cut, or
/// empty when no room is left) and the summary (its longest form that fits).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finished {
    /// What is left of the prompt's text.
    pub text: String,
    /// The summary.
    pub summary: String,
}

/// Lays out `text` and `summary` in a message of at most `max`, where
/// `measure` is a text's length once escaped, in the platform's unit, and
/// `overhead` what the layout adds around the two (a line break between
/// them, bold markers) in the same unit. `measure` must be additive over the
/// two texts, each escaped on its own.
pub fn finished(
    text: &str,
    summary: &Summary,
    max: usize,
    overhead: usize,
    measure: impl Fn(&str) -> usize,
) -> Finished {
    let fits_alone = |summary: &str| measure(summary) + overhead <= max;
    // Even the shortest form is cut if it must be: a message is never refused.
    let summary = shorten(summary.within(fits_alone), fits_alone);
    let room = max.saturating_sub(measure(&summary) + overhead);
    let text = shorten(text, |text| measure(text) <= room);
    Finished { text, summary }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doubled(text: &str) -> usize {
        // An escaping that doubles every `*`.
        text.chars().count() + text.matches('*').count()
    }

    #[test]
    fn the_summary_fits_first_and_the_text_gives_way() {
        let summary = Summary::new("Answered by Alice: Production");
        let both = finished("Where?", &summary, 100, 6, doubled);
        assert_eq!(both.text, "Where?");
        assert_eq!(both.summary, "Answered by Alice: Production");
        let cut = finished(&"*".repeat(40), &summary, 60, 6, doubled);
        assert_eq!(cut.summary, "Answered by Alice: Production");
        assert!(doubled(&cut.text) + doubled(&cut.summary) + 6 <= 60, "{cut:?}");
        assert!(cut.text.ends_with('…'), "{cut:?}");
        let none = finished("Where?", &summary, 35, 6, doubled);
        assert_eq!(none.text, "");
        let tight = finished("Where?", &summary, 20, 6, doubled);
        assert!(
            doubled(&tight.summary) + 6 <= 20 && tight.summary.ends_with('…'),
            "{tight:?}"
        );
    }
}
