//! Prompts at the contract's edges, run on every platform through its real
//! adapter, the real engine and its fake — which checks every request
//! against the platform's own published spec (`askgate-testkit/spec`).
//!
//! For each style of text (the largest plain prompt, emoji families,
//! combining marks, CJK, right-to-left text with bidi controls, markup and
//! mention syntax, `@a@a…`) a three-question prompt with every field at the
//! contract's maximum and a one-question prompt are asked of a recipient
//! whose display name is 200 characters, answered in the person's own words
//! at the free-text maximum (2,000 characters, on every question), and
//! edited into their summaries. Each MUST be delivered, answered and edited;
//! no message may mention anyone or lose its text to markup; and the fake
//! MUST have refused nothing ([`PersonPlatform::violations`]).

use std::time::Duration;

use askgate_core::form::FormValue;
use askgate_core::request::{MAX_DESCRIPTION_CHARS, MAX_FREE_TEXT_CHARS, MAX_LABEL_CHARS, MAX_QUESTION_CHARS};
use askgate_core::{ButtonAction, Locale, Presentation, render};
use askgate_engine::Recipient;
use askgate_store::QuestionRecord;
use serde_json::{Value, json};
use unicode_segmentation::UnicodeSegmentation;

use super::inbound::{GROUP, PERSON, Person, PersonPlatform, Seen, Who, answered};

/// How long a delivery or an edit may take here: the run sends a person
/// some eighty messages, and a platform's pacing (Telegram: 20 a minute in
/// one chat) holds the later ones back.
const PACED: Duration = Duration::from_secs(180);

/// The styles of text, each a repeated unit. Each holds the platform's
/// trouble: units that are one user-perceived character but many code
/// points or UTF-16 units, invisible controls, and text every platform's
/// markup would read as formatting, mentions or links if not escaped.
pub const STYLES: &[(&str, &str)] = &[
    ("largest", "Abcdefghij "),
    ("emoji", "👨\u{200D}👩\u{200D}👧\u{200D}👦🏳\u{FE0F}\u{200D}🌈👍🏽"),
    ("combining", "e\u{301}\u{302}\u{303}a\u{308}\u{331}"),
    ("cjk", "漢字かなカナ한글"),
    ("rtl", "\u{202E}مرحبا\u{202C} \u{2067}שלום\u{2069}\u{200F} "),
    (
        "markup",
        "<b>&*_`~|#[x](y) @everyone @here <@123> <@&1> <!channel> <#C1> &lt; ",
    ),
    ("mentions", "@a"),
];

/// `unit` repeated after `lead` to at most `max` code points, cut between
/// user-perceived characters.
fn filled(lead: &str, unit: &str, max: usize) -> String {
    let mut text = lead.to_owned();
    'fill: loop {
        for grapheme in unit.graphemes(true) {
            if text.chars().count() + grapheme.chars().count() > max {
                break 'fill;
            }
            text.push_str(grapheme);
        }
    }
    text.trim_end().to_owned()
}

/// A question with every field at the contract's maximum in `unit`.
fn question(index: usize, unit: &str, multi_select: bool) -> Value {
    let options: Vec<Value> = (0..4)
        .map(|option| {
            json!({
                // A distinct lead keeps the labels distinct however `unit` normalizes.
                "label": filled(&format!("{option}{index} "), unit, MAX_LABEL_CHARS),
                "description": filled(&format!("{option} "), unit, MAX_DESCRIPTION_CHARS),
            })
        })
        .collect();
    json!({
        "id": format!("q{index}"),
        "header": filled(&format!("{index}"), unit, 60),
        "question": filled(&format!("{index} "), unit, MAX_QUESTION_CHARS),
        "multiSelect": multi_select,
        "options": options,
    })
}

/// One edge prompt: its name, the unit of text its style repeats (the
/// person answers in it too), and the request.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The style and the prompt's shape, for messages.
    pub name: String,
    /// The style's repeated unit ([`STYLES`]).
    pub unit: &'static str,
    /// The `ask_user` arguments.
    pub request: Value,
}

/// Every edge prompt: per style, three questions (the second multi-select)
/// and one single-select question.
pub fn requests() -> Vec<Edge> {
    STYLES
        .iter()
        .flat_map(|(name, unit)| {
            let three = json!({
                "questions": [question(1, unit, false), question(2, unit, true), question(3, unit, false)],
                "timeoutSeconds": 900,
            });
            let one = json!({"questions": [question(1, unit, false)], "timeoutSeconds": 900});
            let edge = |shape: &str, request| Edge {
                name: format!("{name}, {shape}"),
                unit,
                request,
            };
            [edge("three questions", three), edge("one question", one)]
        })
        .collect()
}

/// A person's own words at the free-text maximum in `unit`, without what a
/// typed reply would read otherwise (`;` separates answers).
fn own_words(unit: &str) -> String {
    filled("My own words: ", &unit.replace(';', " "), MAX_FREE_TEXT_CHARS)
}

/// A display name of 200 characters, with mention and markup syntax in it.
fn long_name(base: &str) -> String {
    filled(&format!("{base} "), "@everyone <@123> *Ω* 👨\u{200D}👩\u{200D}👧 ", 200)
}

/// Zero-width characters an adapter may insert to defuse mentions or marks.
fn visible(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '\u{200B}' | '\u{200C}' | '\u{2060}' | '\u{FEFF}'))
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Runs every edge prompt on `platform`; returns how many were asked.
pub async fn run(platform: &dyn PersonPlatform) -> usize {
    let person = Person::start_with(platform, |recipients: Vec<Recipient>| {
        recipients
            .into_iter()
            .map(|mut recipient| {
                recipient.display_name = long_name(&recipient.display_name);
                recipient
            })
            .collect()
    })
    .await;
    let mut asked_count = 0;
    for Edge { name, unit, request } in requests() {
        edge(&person, &name, &request.to_string(), unit).await;
        asked_count += 1;
    }
    if person.features().strangers {
        a_stranger_is_told_a_long_name_within_the_notice(&person).await;
    }
    let violations = platform.violations();
    assert!(
        violations.is_empty(),
        "every request MUST be valid by the platform's published spec; the fake refused {}:\n{}",
        violations.len(),
        violations.join("\n")
    );
    asked_count
}

/// One edge prompt: delivered and shown literally, answered in the
/// person's own words at the maximum, edited into its summary.
async fn edge(person: &Person<'_>, name: &str, request: &str, unit: &str) {
    let platform = person.platform();
    let mut asked = person.ask_within(PERSON, request, PACED).await;
    let record = asked.record.clone();
    let capabilities = person.capabilities();
    let presentation = render(&record.request, &capabilities, &record.id, record.locale);
    for (index, message) in messages(&record).iter().enumerate() {
        let Some(shown) = platform.shown(message).await else {
            continue;
        };
        assert_eq!(shown.mentions, 0, "{name}: a prompt MUST mention no one: {shown:?}");
        if let Presentation::Text(text) = &presentation {
            let part = text.parts.get(index).map_or("", String::as_str);
            assert_eq!(
                visible(&shown.text),
                visible(part),
                "{name}: part {index} MUST arrive as literal text"
            );
        }
    }
    let words = own_words(unit);
    let ids: Vec<String> = record.request.questions.iter().map(|q| q.id.clone()).collect();
    let expected: serde_json::Map<String, Value> = ids.iter().map(|id| (id.clone(), json!([words]))).collect();
    if matches!(presentation, Presentation::Buttons(_)) && person.free_text() {
        let seen = person.tap(Who::Recipient, &asked, ButtonAction::Other).await;
        assert_eq!(seen, Seen::FreeTextInput, "{name}: Other… MUST open a free-text input");
        platform.answer_free_text(Who::Recipient, &record, &words).await;
    } else if person.forms() {
        let token = asked.token(ButtonAction::Answer);
        let seen = platform.tap(Who::Recipient, &record, &token).await;
        assert_eq!(
            seen,
            Seen::Form { fields: ids.clone() },
            "{name}: Answer… MUST open the form (the fake refused it otherwise)"
        );
        let values = ids.iter().map(|id| FormValue::typed(id, &words)).collect();
        platform.submit_form(Who::Recipient, &record, &token, values).await;
    } else if person.typed_replies() {
        if let [_] = ids.as_slice() {
            platform.type_reply(Who::Recipient, &record, &words).await;
        } else {
            for number in 1..=ids.len() {
                platform
                    .type_reply(Who::Recipient, &record, &format!("{number}: {words}"))
                    .await;
            }
        }
    } else {
        panic!("{name}: the platform offers no way to answer in one's own words");
    }
    assert_eq!(
        asked.result().await,
        answered(&Value::Object(expected)),
        "{name}: the agent MUST get the person's words whole"
    );
    let ended = finished(person, &record).await;
    let Some(first) = messages(&ended).into_iter().next() else {
        return;
    };
    let Some(shown) = platform.shown(&first).await else {
        return;
    };
    assert_eq!(shown.mentions, 0, "{name}: a summary MUST mention no one: {shown:?}");
    assert!(
        shown.buttons.is_empty(),
        "{name}: a summary MUST have no buttons: {shown:?}"
    );
    let chrome = Locale::En.chrome();
    assert!(
        shown.text.contains("Answered by"),
        "{name}: the message MUST say it was answered: {}",
        shown.text
    );
    let max = platform.channel().capabilities().max_message_chars;
    let measure = platform.channel().capabilities().measure;
    if ids.len() > 1 && measure.len(&words) * ids.len() > max {
        // Three answers of 2,000 characters fit no message of Telegram,
        // Discord or Slack (a Matrix message holds them).
        assert!(
            shown.text.contains(chrome.answers_shortened()),
            "{name}: a summary whose answers were shortened MUST say so: {}",
            shown.text
        );
    }
}

/// The question's messages on its first surface.
fn messages(record: &QuestionRecord) -> Vec<askgate_core::channel::MessageRef> {
    record.delivery().map(|d| d.messages.clone()).unwrap_or_default()
}

/// The question once every copy was edited into its summary: the fake
/// refused no edit.
async fn finished(person: &Person<'_>, record: &QuestionRecord) -> QuestionRecord {
    tokio::time::timeout(PACED, async {
        loop {
            let current = person.current(&record.id).await;
            if current.surfaces.iter().all(|surface| surface.finished) {
                return current;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the question's message was not edited into its summary within {PACED:?}: the platform refused the edit?"
        )
    })
}

/// A stranger's tap is told whom the question is for, however long that
/// recipient's name: within the platform's notice limit, named as far as it fits.
async fn a_stranger_is_told_a_long_name_within_the_notice(person: &Person<'_>) {
    let to = if person.features().groups { GROUP } else { PERSON };
    let single = r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?",
        "options":[{"label":"Staging"},{"label":"Production"}]}],"timeoutSeconds":600}"#;
    let mut asked = person.ask(to, single).await;
    let seen = person.tap(Who::Stranger, &asked, ButtonAction::Choose(1)).await;
    let Seen::Notice { text, .. } = &seen else {
        panic!("a stranger's tap MUST be refused with a notice, saw {seen:?}");
    };
    if person.features().sink {
        assert_eq!(
            visible(text),
            visible(&Locale::En.chrome().not_for_you(&person.display_name(to))),
            "the refusal MUST name the recipient as far as it fits"
        );
    }
    person.tap(Who::Recipient, &asked, ButtonAction::Choose(0)).await;
    assert_eq!(asked.result().await, answered(&json!({"deploy": ["Staging"]})));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edge_prompt_is_valid_and_at_the_contract_s_limits() {
        for Edge { name, request, .. } in requests() {
            let valid = askgate_core::validate(&request).unwrap_or_else(|errors| panic!("{name}: {errors}"));
            let question = &valid.questions[0];
            assert!(
                question.question.chars().count() > MAX_QUESTION_CHARS - 12,
                "{name}: the question is near its limit"
            );
            for option in &question.options {
                assert!(option.label.chars().count() > MAX_LABEL_CHARS - 12, "{name}");
            }
        }
        assert_eq!(own_words("@a").chars().count(), MAX_FREE_TEXT_CHARS);
        assert!(long_name("Alice").chars().count() > 190);
    }

    #[test]
    fn visible_text_drops_only_defusing_characters() {
        assert_eq!(visible(" @\u{2060}a \u{202E}x "), "@a \u{202E}x");
    }
}
