//! Properties of cutting text to a platform's limit (`text::Limit`) and of
//! rendering by a channel's own measure (`Capabilities::measure`), checked on
//! generated text rich in what breaks naive counting: emoji with modifiers
//! and joiners, combining marks, CJK, bidi controls, markup characters.
//!
//! - A cut never exceeds the limit in its unit, never splits a
//!   user-perceived character, and keeps the longest start that fits.
//! - `Limit::fit` counts after escaping, never exceeds the limit, and never
//!   returns raw text: whatever it returns is the escape of a start of the
//!   text (with `…` where it was cut).
//! - Every part of a rendered text prompt fits the channel's message limit
//!   as the channel measures it, whatever its escaping adds.
//! - A summary's chosen form fits whatever the predicate says fits, when
//!   any form does; its forms only get shorter.

use askgate_core::layout::{Ending, Summary};
use askgate_core::render::Measure;
use askgate_core::text::{Limit, Unit, cut_within};
use askgate_core::{AnswerItem, Answers, Capabilities, Locale, Presentation, QuestionId, render, validate};
use proptest::prelude::*;
use serde_json::json;
use unicode_segmentation::UnicodeSegmentation;

/// Pieces that stress counting: one grapheme of many code points, two UTF-16
/// units per code point, marks that a markup escape doubles.
const PIECES: &[&str] = &[
    "a",
    " ",
    "漢",
    "👍🏽",
    "👨\u{200D}👩\u{200D}👧\u{200D}👦",
    "e\u{301}\u{302}",
    "\u{202E}",
    "*",
    "<",
    "&",
    "@",
    "_",
    "\n",
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..120).prop_map(|pieces| pieces.concat())
}

fn unit() -> impl Strategy<Value = Unit> {
    prop::sample::select(vec![Unit::CodePoints, Unit::Utf16, Unit::Bytes])
}

/// An escaping that grows text as the platforms' do: a backslash before
/// markup characters, an entity for `<` and `&`.
fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '*' | '_' | '@' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn escaped_code_points(text: &str) -> usize {
    escape(text).chars().count()
}

fn boundaries(text: &str) -> Vec<usize> {
    let mut at: Vec<usize> = text.grapheme_indices(true).map(|(at, _)| at).collect();
    at.push(text.len());
    at
}

proptest! {
    #![proptest_config(crate::proptest_config())]

    #[test]
    fn a_cut_fits_keeps_whole_characters_and_is_the_longest(text in text(), max in 0usize..200, unit in unit()) {
        let limit = Limit::new(max, unit);
        let cut = limit.cut(&text);
        prop_assert!(limit.fits(cut));
        prop_assert!(text.starts_with(cut));
        prop_assert!(boundaries(&text).contains(&cut.len()), "a cut inside a grapheme");
        let next = boundaries(&text).into_iter().find(|at| *at > cut.len());
        if let Some(next) = next {
            prop_assert!(!limit.fits(&text[..next]), "a longer start fits too");
        }
    }

    #[test]
    fn a_fit_counts_after_escaping_and_is_never_raw(text in text(), max in 0usize..200) {
        let limit = Limit::code_points(max);
        let fitted = limit.fit(&text, escape);
        prop_assert!(limit.fits(&fitted), "{} over {max}", fitted.chars().count());
        if fitted == escape(&text) {
            return Ok(());
        }
        // Shortened: the escape of a start of the text, then the ellipsis.
        if fitted.is_empty() {
            return Ok(());
        }
        let start = boundaries(&text)
            .into_iter()
            .map(|at| text[..at].trim_end())
            .find(|start| escape(&format!("{start}…")) == fitted);
        prop_assert!(start.is_some(), "not the escape of a start of the text: {fitted:?}");
    }

    #[test]
    fn every_part_fits_the_channel_as_it_measures(unit_text in text(), max in 120usize..600) {
        let field = |n: usize| {
            let base: String = unit_text.graphemes(true).cycle().take(n).collect();
            if base.trim().is_empty() { "x".to_owned() } else { base }
        };
        let request = validate(&json!({"questions": [
            {"id": "a", "header": "A", "question": format!("1 {}", field(80)), "options": [
                {"label": format!("1 {}", field(20)), "description": field(40)},
                {"label": format!("2 {}", field(20))}]},
            {"id": "b", "header": "B", "question": format!("2 {}", field(80)), "multiSelect": true, "options": [
                {"label": format!("3 {}", field(20))}, {"label": format!("4 {}", field(20))}]},
        ]}));
        let Ok(request) = request else { return Ok(()) };
        let capabilities = Capabilities::text(max).with_measure(Measure::new(escaped_code_points));
        let id = QuestionId::parse("01JPROPERTY0000000000000000").unwrap_or_else(|_| unreachable!("a valid id"));
        let Presentation::Text(prompt) = render(&request, &capabilities, &id, Locale::En) else {
            return Err(TestCaseError::fail("two questions render as text"));
        };
        for part in &prompt.parts {
            // A part is cut only between user-perceived characters, so one
            // character longer than a message alone is the only excuse.
            let single = part.graphemes(true).count() == 1;
            prop_assert!(capabilities.message_fits(part) || single, "{} over {max}", escaped_code_points(part));
        }
    }

    #[test]
    fn a_summary_picks_the_longest_form_that_fits(words in text(), max in 40usize..3000) {
        let request = validate(&json!({"questions": [
            {"id": "a", "header": "A", "question": "Where?", "options": [{"label": "One"}, {"label": "Two"}]},
            {"id": "b", "header": "B", "question": "When?", "options": [{"label": "Now"}, {"label": "Later"}]},
        ]})).unwrap_or_else(|errors| panic!("{errors}"));
        let words = if words.trim().is_empty() { "x".to_owned() } else { words.repeat(8) };
        let mut answers = Answers::new();
        answers.set(&request, "a", vec![AnswerItem::FreeText { text: words.clone() }]);
        answers.set(&request, "b", vec![AnswerItem::FreeText { text: words }]);
        let summary = Summary::of(&request, Ending::Answered { by: "Alice", surface: None, answers: &answers }, Locale::En);
        let fits = |text: &str| escaped_code_points(text) <= max;
        let chosen = summary.within(fits);
        let shortest = summary.within(|_| false);
        prop_assert!(fits(chosen) || chosen == shortest);
        if fits(summary.full()) {
            prop_assert_eq!(chosen, summary.full());
        }
        prop_assert!(escaped_code_points(shortest) <= escaped_code_points(summary.full()));
    }
}

#[test]
fn the_longest_start_that_fits_is_found_by_bisection() {
    let text = "ab👍🏽cd";
    assert_eq!(cut_within(text, |start| start.chars().count() <= 3), "ab");
    assert_eq!(cut_within(text, |start| start.chars().count() <= 4), "ab👍🏽");
    assert_eq!(cut_within(text, |_| false), "");
}

#[test]
fn a_shortened_summary_says_so_and_keeps_the_options() {
    let request = validate(&json!({"questions": [
        {"id": "a", "header": "Deploy", "question": "Where?", "options": [{"label": "Staging"}, {"label": "Prod"}]},
        {"id": "b", "header": "Notes", "question": "Anything else?", "options": [{"label": "No"}, {"label": "Yes"}]},
    ]}))
    .unwrap_or_else(|errors| panic!("{errors}"));
    let mut answers = Answers::new();
    answers.set(
        &request,
        "a",
        vec![AnswerItem::Option {
            index: 0,
            label: "Staging".into(),
        }],
    );
    answers.set(&request, "b", vec![AnswerItem::FreeText { text: "w".repeat(2000) }]);
    let summary = Summary::of(
        &request,
        Ending::Answered {
            by: "Alice",
            surface: None,
            answers: &answers,
        },
        Locale::En,
    );
    assert!(
        summary.full().contains(&"w".repeat(2000)),
        "the whole summary keeps the words"
    );
    let short = summary.within(|text| text.chars().count() <= 400);
    assert!(short.chars().count() <= 400, "{short}");
    assert!(short.contains("Deploy: Staging"), "{short}");
    assert!(short.contains("…"), "{short}");
    assert!(short.ends_with(Locale::En.chrome().answers_shortened()), "{short}");
    let long_name = "N".repeat(300);
    let named = Summary::of(
        &request,
        Ending::Skipped {
            by: &long_name,
            surface: None,
        },
        Locale::En,
    );
    assert!(named.full().chars().count() < 100, "a name is cut: {}", named.full());
}
