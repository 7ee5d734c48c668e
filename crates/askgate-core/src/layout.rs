//! The words of a prompt: the readable text layout (spec §4), the text of a
//! button message, and the summary a message is edited into (spec §7).
//!
//! Everything here is plain text with agent text left as given; escaping for
//! a platform's markup is the adapter's job, done on the whole string.

use std::fmt::Write as _;

use unicode_segmentation::UnicodeSegmentation;

use crate::answer::{AnswerItem, Answers};
use crate::chrome::{Chrome, Locale, Place};
use crate::request::{AskRequest, Question, QuestionOption};
use crate::text::{Limit, char_len, cut_within, ellipsize};
use crate::when::Deadline;

/// Free text in a summary is cut to this many user-perceived characters.
pub const SUMMARY_FREE_TEXT_GRAPHEMES: usize = 200;

/// The lengths (code points) a person's own words are cut to, in turn, in
/// the shortened forms of a summary ([`Summary::within`]); the last leaves
/// only the ellipsis.
const SHORTENED_FREE_TEXT: [usize; 5] = [500, 200, 80, 20, 0];

/// How the person answers a text prompt, which its closing instructions say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reading {
    /// By typing a reply (spec §4's instructions).
    Typed,
    /// Through the Answer… form and the Skip button: typed messages never
    /// reach askgate on this surface.
    Form,
}

/// The full readable text of a prompt (spec §4).
pub fn prompt_text(request: &AskRequest, locale: Locale) -> String {
    prompt_blocks(request, locale, None, Reading::Typed).join("\n\n")
}

/// The readable text of a prompt in as few messages as fit `max_chars` each:
/// one part unless the text is longer, then split between questions (and,
/// for a single question too long alone, between lines).
pub fn prompt_parts(request: &AskRequest, locale: Locale, max_chars: usize) -> Vec<String> {
    prompt_parts_for(request, locale, &|text| char_len(text) <= max_chars, Reading::Typed)
}

/// [`prompt_parts`] for a channel whose messages hold a text when `fits`
/// holds for it (its limit counted its way, after its escaping), with the
/// instructions for how the person answers.
pub fn prompt_parts_for(
    request: &AskRequest,
    locale: Locale,
    fits: &dyn Fn(&str) -> bool,
    reading: Reading,
) -> Vec<String> {
    prompt_parts_by(request, locale, None, fits, reading)
}

/// [`prompt_parts_for`] with the heading telling a long wait's `deadline`
/// in the person's local time ([`Chrome::heading_by`]).
pub fn prompt_parts_by(
    request: &AskRequest,
    locale: Locale,
    deadline: Option<&Deadline>,
    fits: &dyn Fn(&str) -> bool,
    reading: Reading,
) -> Vec<String> {
    let whole = prompt_blocks(request, locale, deadline, reading).join("\n\n");
    if fits(&whole) {
        return vec![whole];
    }
    let chrome = locale.chrome();
    // Each piece with the separator that stands before it in the whole text.
    let mut pieces = vec![("", heading(request, chrome, deadline))];
    for (index, block) in question_blocks(request, chrome).into_iter().enumerate() {
        pieces.push((if index == 0 { "\n\n" } else { "\n" }, block));
    }
    pieces.push(("\n\n", instructions(request, chrome, reading)));
    pack(&pieces, fits)
}

/// The message text that goes with native buttons: the heading, header and
/// question, and each option's description when any option has one.
pub fn button_text(question: &Question, timeout_seconds: u32, locale: Locale) -> String {
    button_text_by(question, timeout_seconds, locale, None)
}

/// [`button_text`] with the heading telling a long wait's `deadline` in the
/// person's local time ([`Chrome::heading_by`]).
pub fn button_text_by(
    question: &Question,
    timeout_seconds: u32,
    locale: Locale,
    deadline: Option<&Deadline>,
) -> String {
    let chrome = locale.chrome();
    let mut text = chrome.heading_by(1, timeout_seconds, deadline);
    text.push_str("\n\n");
    text.push_str(&question_line(question, None, chrome));
    if question.options.iter().any(|option| option.description.is_some()) {
        for option in &question.options {
            text.push_str("\n• ");
            text.push_str(&option_text(option));
        }
    }
    text
}

/// How a question ended, for its summary line.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// Answered by this person with these answers.
    Answered {
        /// Who answered, as the platform names them.
        by: &'a str,
        /// Where, when the summary names it: the surface the answer came
        /// from (Telegram, askgate's page).
        surface: Option<Place<'a>>,
        /// What they answered.
        answers: &'a Answers,
    },
    /// Skipped by this person.
    Skipped {
        /// Who skipped.
        by: &'a str,
        /// Where, when the summary names it.
        surface: Option<Place<'a>>,
    },
    /// Nobody answered in time.
    Expired,
    /// The agent cancelled, or its run was aborted.
    Cancelled,
}

/// The summary a question's message is edited into when it ends (spec §7),
/// as askgate's page shows it: a person's own words cut to
/// [`SUMMARY_FREE_TEXT_GRAPHEMES`].
pub fn summary(request: &AskRequest, ending: Ending<'_>, locale: Locale) -> String {
    summary_with(request, ending, locale, &|text| {
        ellipsize(text, SUMMARY_FREE_TEXT_GRAPHEMES)
    })
}

/// A question's summary in the forms a chat message may need: whole, then,
/// where the person's own words are long, with them shortened step by step
/// and a line saying so (the full answers stay in the agent's result and on
/// askgate's page). The adapter shows the longest form that fits its message
/// ([`Summary::within`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    forms: Vec<String>,
}

impl Summary {
    /// A summary of one form only.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            forms: vec![text.into()],
        }
    }

    /// The summary of a question that ended so.
    pub fn of(request: &AskRequest, ending: Ending<'_>, locale: Locale) -> Self {
        let mut forms = vec![summary_with(request, ending, locale, &str::to_owned)];
        let longest = match ending {
            Ending::Answered { answers, .. } => answers
                .iter()
                .flat_map(|(_, items)| items)
                .filter_map(|item| match item {
                    AnswerItem::FreeText { text } => Some(char_len(text)),
                    AnswerItem::Option { .. } => None,
                })
                .max(),
            _ => None,
        };
        if let Some(longest) = longest {
            let note = locale.chrome().answers_shortened();
            for max in SHORTENED_FREE_TEXT.into_iter().filter(|max| *max < longest) {
                let cut = |text: &str| Limit::code_points(max).ellipsize(text);
                let form = format!("{}\n{note}", summary_with(request, ending, locale, &cut));
                // Each form is shorter than the one before, or it is no use.
                if forms.last().is_some_and(|last| char_len(&form) < char_len(last)) {
                    forms.push(form);
                }
            }
        }
        Self { forms }
    }

    /// The whole summary.
    pub fn full(&self) -> &str {
        &self.forms[0]
    }

    /// The longest form for which `fits` holds (the whole summary when it
    /// does), or the shortest when none does.
    pub fn within(&self, fits: impl Fn(&str) -> bool) -> &str {
        self.forms
            .iter()
            .find(|form| fits(form))
            .or(self.forms.last())
            .map_or("", String::as_str)
    }
}

fn summary_with(
    request: &AskRequest,
    ending: Ending<'_>,
    locale: Locale,
    free_text: &dyn Fn(&str) -> String,
) -> String {
    let chrome = locale.chrome();
    match ending {
        Ending::Answered { by, surface, answers } => match request.questions.as_slice() {
            [only] => chrome.answered_by(by, surface, &answer_summary(answers.get(&only.id), chrome, free_text)),
            questions => {
                let mut text = chrome.answered_by_heading(by, surface);
                for question in questions {
                    text.push('\n');
                    text.push_str(&question.header);
                    text.push_str(": ");
                    text.push_str(&answer_summary(answers.get(&question.id), chrome, free_text));
                }
                text
            }
        },
        Ending::Skipped { by, surface } => chrome.skipped_by(by, surface),
        Ending::Expired => chrome.expired_summary().to_owned(),
        Ending::Cancelled => chrome.cancelled_summary().to_owned(),
    }
}

fn answer_summary(items: Option<&[AnswerItem]>, chrome: Chrome, free_text: &dyn Fn(&str) -> String) -> String {
    let Some(items) = items.filter(|items| !items.is_empty()) else {
        return "—".to_owned();
    };
    items
        .iter()
        .map(|item| match item {
            AnswerItem::Option { label, .. } => label.clone(),
            AnswerItem::FreeText { text } => free_text(text),
        })
        .collect::<Vec<_>>()
        .join(chrome.list_separator())
}

fn heading(request: &AskRequest, chrome: Chrome, deadline: Option<&Deadline>) -> String {
    chrome.heading_by(request.questions.len(), request.timeout_seconds, deadline)
}

fn prompt_blocks(request: &AskRequest, locale: Locale, deadline: Option<&Deadline>, reading: Reading) -> Vec<String> {
    let chrome = locale.chrome();
    vec![
        heading(request, chrome, deadline),
        question_blocks(request, chrome).join("\n"),
        instructions(request, chrome, reading),
    ]
}

fn question_blocks(request: &AskRequest, chrome: Chrome) -> Vec<String> {
    let numbered = request.questions.len() > 1;
    request
        .questions
        .iter()
        .enumerate()
        .map(|(index, question)| {
            let number = numbered.then_some(index + 1);
            let indent = if numbered { "   " } else { "" };
            let mut block = question_line(question, number, chrome);
            for (option_index, option) in question.options.iter().enumerate() {
                write!(block, "\n{indent}{}) {}", option_index + 1, option_text(option))
                    .expect("writing to a String cannot fail");
            }
            block
        })
        .collect()
}

fn question_line(question: &Question, number: Option<usize>, chrome: Chrome) -> String {
    let mark = if question.multi_select { chrome.choose_any() } else { "" };
    let prefix = number.map(|n| format!("{n}. ")).unwrap_or_default();
    format!("{prefix}{}{mark} — {}", question.header, question.question)
}

fn option_text(option: &QuestionOption) -> String {
    match &option.description {
        Some(description) => format!("{} — {description}", option.label),
        None => option.label.clone(),
    }
}

/// An example multi-select answer that names options the question has.
fn multi_example(question: &Question) -> &'static str {
    if question.options.len() >= 3 { "1, 3" } else { "1, 2" }
}

fn instructions(request: &AskRequest, chrome: Chrome, reading: Reading) -> String {
    if reading == Reading::Form {
        return chrome.form_hint().to_owned();
    }
    let how = match request.questions.as_slice() {
        [only] if only.multi_select => chrome.reply_multi(multi_example(only)),
        [_] => chrome.reply_single().to_owned(),
        questions => {
            let examples: Vec<String> = questions
                .iter()
                .enumerate()
                .map(|(index, question)| {
                    let answer = match (question.multi_select, index) {
                        (true, _) => multi_example(question),
                        (false, 0) => "2",
                        (false, _) => "1",
                    };
                    format!("{}: {answer}", index + 1)
                })
                .collect();
            chrome.reply_several(&examples)
        }
    };
    format!("{how}{}{}", chrome.sentence_gap(), chrome.skip_hint())
}

/// Packs pieces into parts for which `fits` holds, each piece after its own
/// separator within a part; a piece too long for a part alone is split
/// between lines, then between user-perceived characters.
fn pack(pieces: &[(&str, String)], fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for (separator, piece) in pieces {
        for (line_index, piece) in split_long(piece, fits).into_iter().enumerate() {
            let separator = if line_index == 0 { separator } else { "\n" };
            if current.is_empty() {
                current = piece;
                continue;
            }
            let joined = format!("{current}{separator}{piece}");
            if fits(&joined) {
                current = joined;
            } else {
                parts.push(std::mem::replace(&mut current, piece));
            }
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

fn split_long(piece: &str, fits: &dyn Fn(&str) -> bool) -> Vec<String> {
    if fits(piece) {
        return vec![piece.to_owned()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in piece.lines() {
        let mut rest = line;
        while !rest.is_empty() {
            let mut chunk = cut_within(rest, fits);
            if chunk.is_empty() {
                // One user-perceived character longer than a message (the
                // contract's limits make it impossible): sent whole rather
                // than split, so that no loop can stall.
                chunk = rest.graphemes(true).next().unwrap_or(rest);
            }
            rest = &rest[chunk.len()..];
            if current.is_empty() {
                chunk.clone_into(&mut current);
                continue;
            }
            let joined = format!("{current}\n{chunk}");
            if fits(&joined) {
                current = joined;
            } else {
                out.push(std::mem::replace(&mut current, chunk.to_owned()));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
