//! A text sketch of a question's card on askgate's page, in the page's own
//! words, for `askgate prompt render --channel web`.
//!
//! The page's wording lives once, in `assets/web-words.js` (its `DICT`, which a
//! test keeps equal to the chat channels' chrome where they say the same
//! thing); this module reads it from there rather than keep a second copy.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use askgate_core::{AskRequest, Locale};

use super::WORDS;

/// The page's words in `locale` (`submit` → `Submit`), read from `web-words.js`'s
/// `DICT`: each `key: 'words',` line of the locale's table.
pub(crate) fn page_words(locale: Locale) -> BTreeMap<&'static str, &'static str> {
    let opening = match locale {
        Locale::En => "    en: {",
        Locale::ZhCn => "    'zh-CN': {",
    };
    WORDS
        .lines()
        .skip_while(|line| *line != opening)
        .skip(1)
        .take_while(|line| line.trim() != "},")
        .filter_map(|line| {
            let (key, words) = line.trim().split_once(": '")?;
            Some((key, words.strip_suffix("',")?))
        })
        .collect()
}

/// The card of `request` as the page shows it before anything is chosen:
/// the kicker and time left, each question with its hint, its options (a
/// radio or a checkbox each, none chosen), the field for one's own words,
/// and the card's buttons ("Skip all" when there are several questions).
pub fn preview(request: &AskRequest, locale: Locale) -> String {
    let words = page_words(locale);
    let word = |key: &str| words.get(key).copied().unwrap_or_default();
    let chrome = locale.chrome();
    let questions = &request.questions;
    let single = request.is_single_choice();
    let mut out = String::new();
    let kicker = if questions.len() > 1 {
        word("kickerMany")
    } else {
        word("kickerOne")
    };
    let within = word("within").replace("{d}", &chrome.duration(request.timeout_seconds));
    let _ = writeln!(out, "{kicker} · {within}");
    for (index, question) in questions.iter().enumerate() {
        out.push('\n');
        if questions.len() > 1 {
            let step = word("stepOf")
                .replace("{i}", &(index + 1).to_string())
                .replace("{n}", &questions.len().to_string());
            let _ = writeln!(out, "{step}");
        }
        let hint = if question.multi_select {
            word("chooseAny")
        } else {
            word("chooseOne")
        };
        let _ = writeln!(out, "[{}] {hint}", question.header);
        let _ = writeln!(out, "{}", question.question);
        for option in &question.options {
            let control = if question.multi_select { "☐" } else { "○" };
            let _ = match &option.description {
                Some(description) => writeln!(out, "  {control} {} — {description}", option.label),
                None => writeln!(out, "  {control} {}", option.label),
            };
        }
        let _ = writeln!(out, "  {}: [{}…]", word("otherLabel"), word("otherPlaceholder"));
    }
    out.push('\n');
    let buttons = if single {
        vec![word("send"), word("skip")]
    } else if questions.len() > 1 {
        vec![word("back"), word("next"), word("submit"), word("skipAll")]
    } else {
        vec![word("submit"), word("skip")]
    };
    let buttons: Vec<String> = buttons.iter().map(|label| format!("[{label}]")).collect();
    let _ = writeln!(out, "{}", buttons.join(" "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_come_from_the_page_in_each_locale() {
        for locale in [Locale::En, Locale::ZhCn] {
            let words = page_words(locale);
            for key in [
                "kickerOne",
                "kickerMany",
                "within",
                "stepOf",
                "recommended",
                "skipAll",
                "chooseAny",
                "chooseOne",
                "otherLabel",
                "otherPlaceholder",
                "send",
                "submit",
                "back",
                "next",
                "skip",
            ] {
                assert!(words.get(key).is_some_and(|w| !w.is_empty()), "{locale}: {key}");
            }
        }
        assert_eq!(page_words(Locale::En).get("submit"), Some(&"Submit"));
        assert_eq!(
            page_words(Locale::ZhCn).get("skip"),
            Some(&Locale::ZhCn.chrome().skip_button())
        );
    }

    #[test]
    fn one_single_choice_question_is_a_radio_per_option_and_several_are_steps() {
        let one = askgate_core::validate_json(
            r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?",
                "options":[{"label":"Staging (Recommended)","description":"safe"},{"label":"Production"}]}],
                "timeoutSeconds":900}"#,
        )
        .unwrap_or_else(|errors| panic!("{errors:?}"));
        assert_eq!(
            preview(&one, Locale::En),
            "Question for you · Reply within 15 min\n\n\
             [Deploy] Choose one\nWhere should this build go?\n\
             \x20 ○ Staging (Recommended) — safe\n  ○ Production\n\
             \x20 Other — your own answer: [Type your answer…]\n\n[Send] [Skip]\n"
        );
        let two = askgate_core::validate_json(
            r#"{"questions":[
                {"id":"deploy","header":"Deploy","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
                {"id":"notify","header":"Notify","question":"Who?","multiSelect":true,"options":[{"label":"Team"},{"label":"On-call"}]}]}"#,
        )
        .unwrap_or_else(|errors| panic!("{errors:?}"));
        let shown = preview(&two, Locale::ZhCn);
        assert!(shown.starts_with("有问题需要你回答 · 请在 "), "{shown}");
        assert!(
            shown.contains("第 2 题，共 2 题\n[Notify] 可多选\nWho?\n  ☐ Team\n"),
            "{shown}"
        );
        assert!(shown.contains("  ○ Staging\n"), "{shown}");
        assert!(shown.ends_with("\n\n[上一步] [下一步] [提交] [全部跳过]\n"), "{shown}");
    }
}
