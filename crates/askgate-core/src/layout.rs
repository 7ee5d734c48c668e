//! The words of a prompt: the readable text layout (spec §4), the text of a
//! button message, and the summary a message is edited into (spec §7).
//!
//! Everything here is plain text with agent text left as given; escaping for
//! a platform's markup is the adapter's job, done on the whole string.

use std::fmt::Write as _;

use crate::answer::{AnswerItem, Answers};
use crate::chrome::{Chrome, Locale};
use crate::request::{AskRequest, Question, QuestionOption};
use crate::text::{char_len, ellipsize};

/// Free text in a summary is cut to this many user-perceived characters.
pub const SUMMARY_FREE_TEXT_GRAPHEMES: usize = 200;

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
    prompt_blocks(request, locale, Reading::Typed).join("\n\n")
}

/// The readable text of a prompt in as few messages as fit `max_chars` each:
/// one part unless the text is longer, then split between questions (and,
/// for a single question too long alone, between lines).
pub fn prompt_parts(request: &AskRequest, locale: Locale, max_chars: usize) -> Vec<String> {
    prompt_parts_for(request, locale, max_chars, Reading::Typed)
}

/// [`prompt_parts`], with the instructions for how the person answers.
pub fn prompt_parts_for(request: &AskRequest, locale: Locale, max_chars: usize, reading: Reading) -> Vec<String> {
    let whole = prompt_blocks(request, locale, reading).join("\n\n");
    if char_len(&whole) <= max_chars {
        return vec![whole];
    }
    let chrome = locale.chrome();
    // Each piece with the separator that stands before it in the whole text.
    let mut pieces = vec![("", chrome.heading(request.questions.len(), request.timeout_seconds))];
    for (index, block) in question_blocks(request, chrome).into_iter().enumerate() {
        pieces.push((if index == 0 { "\n\n" } else { "\n" }, block));
    }
    pieces.push(("\n\n", instructions(request, chrome, reading)));
    pack(&pieces, max_chars)
}

/// The message text that goes with native buttons: the heading, header and
/// question, and each option's description when any option has one.
pub fn button_text(question: &Question, timeout_seconds: u32, locale: Locale) -> String {
    let chrome = locale.chrome();
    let mut text = chrome.heading(1, timeout_seconds);
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
        /// Where, when the summary names it: the kind of surface the answer
        /// came from (`telegram`, `web`).
        surface: Option<&'a str>,
        /// What they answered.
        answers: &'a Answers,
    },
    /// Skipped by this person.
    Skipped {
        /// Who skipped.
        by: &'a str,
        /// Where, when the summary names it.
        surface: Option<&'a str>,
    },
    /// Nobody answered in time.
    Expired,
    /// The agent cancelled, or its run was aborted.
    Cancelled,
}

/// The summary a question's message is edited into when it ends (spec §7).
pub fn summary(request: &AskRequest, ending: Ending<'_>, locale: Locale) -> String {
    let chrome = locale.chrome();
    match ending {
        Ending::Answered { by, surface, answers } => match request.questions.as_slice() {
            [only] => chrome.answered_by(by, surface, &answer_summary(answers.get(&only.id), chrome)),
            questions => {
                let mut text = chrome.answered_by_heading(by, surface);
                for question in questions {
                    text.push('\n');
                    text.push_str(&question.header);
                    text.push_str(": ");
                    text.push_str(&answer_summary(answers.get(&question.id), chrome));
                }
                text
            }
        },
        Ending::Skipped { by, surface } => chrome.skipped_by(by, surface),
        Ending::Expired => chrome.expired_summary().to_owned(),
        Ending::Cancelled => chrome.cancelled_summary().to_owned(),
    }
}

fn answer_summary(items: Option<&[AnswerItem]>, chrome: Chrome) -> String {
    let Some(items) = items.filter(|items| !items.is_empty()) else {
        return "—".to_owned();
    };
    items
        .iter()
        .map(|item| match item {
            AnswerItem::Option { label, .. } => label.clone(),
            AnswerItem::FreeText { text } => ellipsize(text, SUMMARY_FREE_TEXT_GRAPHEMES),
        })
        .collect::<Vec<_>>()
        .join(chrome.list_separator())
}

fn prompt_blocks(request: &AskRequest, locale: Locale, reading: Reading) -> Vec<String> {
    let chrome = locale.chrome();
    vec![
        chrome.heading(request.questions.len(), request.timeout_seconds),
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

/// Packs pieces into parts of at most `max_chars`, each piece after its own
/// separator within a part; a piece longer than a part alone is split between
/// lines, then characters.
fn pack(pieces: &[(&str, String)], max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for (separator, piece) in pieces {
        for (line_index, piece) in split_long(piece, max_chars).into_iter().enumerate() {
            let separator = if line_index == 0 { separator } else { "\n" };
            if current.is_empty() {
                current = piece;
            } else if char_len(&current) + char_len(separator) + char_len(&piece) <= max_chars {
                current.push_str(separator);
                current.push_str(&piece);
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

fn split_long(piece: &str, max_chars: usize) -> Vec<String> {
    if char_len(piece) <= max_chars {
        return vec![piece.to_owned()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in piece.lines() {
        let chars: Vec<char> = line.chars().collect();
        for chunk in chars.chunks(max_chars) {
            let chunk: String = chunk.iter().collect();
            if current.is_empty() {
                current = chunk;
            } else if char_len(&current) + 1 + chunk.chars().count() <= max_chars {
                current.push('\n');
                current.push_str(&chunk);
            } else {
                out.push(std::mem::replace(&mut current, chunk));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
