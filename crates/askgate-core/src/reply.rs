//! Reading a typed reply against a pending prompt (spec §5).
//!
//! One interpretation serves every channel; a button tap is the most precise
//! reply ([`ReplyReader::chosen`]). The state between the replies to a
//! multi-question prompt is an [`Answers`] value the engine stores; nothing is
//! kept here.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::answer::{AnswerItem, Answers};
use crate::form::FormValue;
use crate::request::{AskRequest, MAX_QUESTION_CHARS, Question};
use crate::text::{fold_width, normalize};

/// Replies that skip the whole prompt, after normalization.
const SKIP_WORDS: &[&str] = &["skip", "/skip", "跳过"];

/// The label suffix that is optional when typing, normalized.
const RECOMMENDED_SUFFIX: &str = "(recommended)";

/// How far into a line a key's separator may stand: a key is a number, an id
/// (at most 64 characters) or a header (at most 12), so a separator further
/// in belongs to the answer.
const MAX_KEY_BYTES: usize = 4 * MAX_QUESTION_CHARS + 8;

/// How many parts of a multi-select reply a label may span (`Red, green`).
const MAX_PARTS_PER_LABEL: usize = 8;

/// What a reply did to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyOutcome {
    /// Every question now has an answer: the prompt resolves.
    Answered(Answers),
    /// Some questions of a multi-question prompt still lack an answer.
    Partial {
        /// Everything answered so far, this reply included.
        answers: Answers,
        /// Ids of the questions this reply answered, in question order.
        took: Vec<String>,
        /// Ids of the questions still without an answer.
        missing: Vec<String>,
    },
    /// The person skipped the whole prompt.
    Skipped,
    /// Nothing to read (an empty reply): the prompt stays open.
    NotAnAnswer,
}

/// Reads replies to one request. Build it once per pending prompt: it keeps
/// the normalized labels and keys so that each reply costs one pass.
#[derive(Debug, Clone)]
pub struct ReplyReader<'r> {
    request: &'r AskRequest,
    keys: Vec<QuestionKeys>,
}

#[derive(Debug, Clone)]
struct QuestionKeys {
    /// Normalized labels, by option index.
    labels: Vec<String>,
    /// The same without ` (Recommended)`.
    bare_labels: Vec<String>,
    /// Normalized header, as a line key.
    header: String,
    /// The question's normalized text, without a trailing `?`, as a line key
    /// (`Which region?: EU`).
    question: String,
    /// Whether some label contains a separator, so that parts must be rejoined.
    label_has_separator: bool,
}

impl<'r> ReplyReader<'r> {
    /// Prepares to read replies to `request`.
    pub fn new(request: &'r AskRequest) -> Self {
        let keys = request
            .questions
            .iter()
            .map(|question| {
                let labels: Vec<String> = question.options.iter().map(|option| normalize(&option.label)).collect();
                let bare_labels = labels.iter().map(|label| bare_normalized(label).into_owned()).collect();
                let label_has_separator = question
                    .options
                    .iter()
                    .any(|option| option.label.chars().map(fold_width).any(is_strong_separator));
                QuestionKeys {
                    labels,
                    bare_labels,
                    header: normalize(&question.header),
                    question: without_question_mark(&normalize(&question.question)).to_owned(),
                    label_has_separator,
                }
            })
            .collect();
        Self { request, keys }
    }

    /// The request being read.
    pub fn request(&self) -> &'r AskRequest {
        self.request
    }

    /// Reads one typed reply, given what earlier replies answered.
    pub fn read(&self, so_far: &Answers, reply: &str) -> ReplyOutcome {
        let reply = reply.trim();
        let normalized = normalize(reply);
        if normalized.is_empty() {
            return ReplyOutcome::NotAnAnswer;
        }
        // An option that is literally called "Skip" wins over the skip word.
        if SKIP_WORDS.contains(&normalized.as_str())
            && !(0..self.keys.len()).any(|question| self.label_index(question, &normalized).is_some())
        {
            return ReplyOutcome::Skipped;
        }
        let mut answers = so_far.clone();
        let mut took = BTreeSet::new();
        if let [only] = self.request.questions.as_slice() {
            answers.set(self.request, &only.id, self.value(0, reply));
            took.insert(0);
        } else {
            self.read_lines(reply, &mut answers, &mut took);
        }
        self.outcome(answers, &took)
    }

    /// Reads a submitted form ([`crate::form`]): each field is one question's
    /// answer, read by the same rules as a typed reply to that question alone,
    /// with ticked checkboxes as chosen options. Empty fields leave their
    /// question as it was; a form whose every filled field says "skip" skips.
    pub fn read_form(&self, so_far: &Answers, values: &[FormValue]) -> ReplyOutcome {
        let mut answers = so_far.clone();
        let mut took = BTreeSet::new();
        let mut skip_words = 0;
        for value in values {
            let Some(question) = self.request.questions.iter().position(|q| q.id == value.id) else {
                continue;
            };
            let spec = &self.request.questions[question];
            let text = value.text.trim();
            let normalized = normalize(text);
            let mut checked: Vec<usize> = value
                .checked
                .iter()
                .copied()
                .filter(|&index| index < spec.options.len())
                .collect();
            checked.sort_unstable();
            checked.dedup();
            if normalized.is_empty() && checked.is_empty() {
                continue;
            }
            if checked.is_empty()
                && SKIP_WORDS.contains(&normalized.as_str())
                && self.label_index(question, &normalized).is_none()
            {
                skip_words += 1;
                continue;
            }
            let mut items: Vec<AnswerItem> = checked.iter().map(|&index| option_item(spec, index)).collect();
            if !normalized.is_empty() {
                for item in self.value(question, text) {
                    if !items.contains(&item) {
                        items.push(item);
                    }
                }
            }
            if !spec.multi_select {
                items.truncate(1);
            }
            answers.set(self.request, &spec.id, items);
            took.insert(question);
        }
        if took.is_empty() {
            return if skip_words > 0 {
                ReplyOutcome::Skipped
            } else {
                ReplyOutcome::NotAnAnswer
            };
        }
        self.outcome(answers, &took)
    }

    /// The answer a tap on option `index` gives a single-question prompt.
    pub fn chosen(&self, index: usize) -> Option<Answers> {
        let [only] = self.request.questions.as_slice() else {
            return None;
        };
        let option = only.options.get(index)?;
        let mut answers = Answers::new();
        let item = AnswerItem::Option {
            index,
            label: option.label.clone(),
        };
        answers.set(self.request, &only.id, vec![item]);
        Some(answers)
    }

    fn outcome(&self, answers: Answers, took: &BTreeSet<usize>) -> ReplyOutcome {
        if answers.is_complete(self.request) {
            return ReplyOutcome::Answered(answers);
        }
        let missing = answers.missing(self.request).into_iter().map(str::to_owned).collect();
        let took = took
            .iter()
            .map(|&index| self.request.questions[index].id.clone())
            .collect();
        ReplyOutcome::Partial { answers, took, missing }
    }

    /// Several questions: one answer a line, keyed or filling in order.
    /// Unkeyed lines beyond the last open question are dropped: there is
    /// nothing left for them to answer, and the prompt resolves.
    ///
    /// A blank line between two answers holds its question's place (`2`,
    /// blank, `Team` to three questions answers the first and the third),
    /// unless the reply has more lines than open questions: then blank lines
    /// are only spacing (`1`, blank, `2` to two questions answers both).
    /// Blank lines before the first and after the last line never count.
    fn read_lines(&self, reply: &str, answers: &mut Answers, took: &mut BTreeSet<usize>) {
        let lines: Vec<&str> = reply.lines().map(str::trim).collect();
        let first = lines.iter().position(|line| !line.is_empty()).unwrap_or(lines.len());
        let last = lines
            .iter()
            .rposition(|line| !line.is_empty())
            .map_or(first, |last| last + 1);
        // `None`: a blank line.
        let mut unkeyed: Vec<Option<&str>> = Vec::new();
        for &line in &lines[first..last] {
            if line.is_empty() {
                unkeyed.push(None);
                continue;
            }
            let keyed = self
                .keyed_segments(line)
                .or_else(|| self.keyed(line).map(|keyed| vec![keyed]));
            match keyed {
                Some(segments) => {
                    for (question, text) in segments {
                        answers.set(
                            self.request,
                            &self.request.questions[question].id,
                            self.value(question, text),
                        );
                        took.insert(question);
                    }
                }
                None => unkeyed.push(Some(line)),
            }
        }
        let open = self
            .request
            .questions
            .iter()
            .filter(|question| answers.get(&question.id).is_none())
            .count();
        if unkeyed.len() > open {
            unkeyed.retain(Option::is_some);
        }
        let mut held = BTreeSet::new();
        for line in unkeyed {
            let open = self
                .request
                .questions
                .iter()
                .enumerate()
                .position(|(index, question)| answers.get(&question.id).is_none() && !held.contains(&index));
            let Some(question) = open else { break };
            match line {
                Some(line) => {
                    answers.set(
                        self.request,
                        &self.request.questions[question].id,
                        self.value(question, line),
                    );
                    took.insert(question);
                }
                None => {
                    held.insert(question);
                }
            }
        }
    }

    /// `1: 2; 2: 1, 3` — several keyed answers on one line, when every
    /// `;`-separated segment has a key of its own.
    fn keyed_segments<'t>(&self, line: &'t str) -> Option<Vec<(usize, &'t str)>> {
        let segments: Vec<&str> = line
            .split(|c| fold_width(c) == ';')
            .map(str::trim)
            .filter(|segment| !segment.is_empty())
            .collect();
        if segments.len() < 2 {
            return None;
        }
        segments.into_iter().map(|segment| self.keyed(segment)).collect()
    }

    /// A line that starts with a question's number, id, header or text and a
    /// separator (`:` `=` `)`, full-width too, or a dash between spaces,
    /// `q1 - first`), then a non-empty answer. A label with a dash in it
    /// (`Canary - 5%`) is no key: only what names a question is.
    fn keyed<'t>(&self, line: &'t str) -> Option<(usize, &'t str)> {
        for (at, c) in line.char_indices().take_while(|&(at, _)| at <= MAX_KEY_BYTES) {
            let separator = fold_width(c);
            let width = match separator {
                ':' | '=' | ')' => c.len_utf8(),
                ' ' => match dash_after_space(&line[at..]) {
                    Some(width) => width,
                    None => continue,
                },
                _ => continue,
            };
            let key = &line[..at];
            let rest = &line[at + width..];
            if rest.trim().is_empty() || (separator == ':' && is_clock_time(key, rest)) {
                continue;
            }
            if let Some(question) = self.key_question(key) {
                return Some((question, rest.trim()));
            }
        }
        None
    }

    fn key_question(&self, key: &str) -> Option<usize> {
        let key = normalize(key);
        if key.is_empty() {
            return None;
        }
        if key.bytes().all(|b| b.is_ascii_digit()) {
            // A number names a question or nothing; it is never a header.
            let number: usize = key.parse().ok()?;
            return (1..=self.keys.len()).contains(&number).then(|| number - 1);
        }
        self.request
            .questions
            .iter()
            .zip(&self.keys)
            .position(|(question, keys)| {
                key == question.id || key == keys.header || without_question_mark(&key) == keys.question
            })
    }

    /// One question's answer, read from `text` (non-empty).
    fn value(&self, question: usize, text: &str) -> Vec<AnswerItem> {
        let text = text.trim();
        let normalized = normalize(text);
        let spec = &self.request.questions[question];
        if let Some(index) = self.label_index(question, &normalized) {
            return vec![option_item(spec, index)];
        }
        if !spec.multi_select {
            return match self.number_index(question, &normalized) {
                Some(index) => vec![option_item(spec, index)],
                None => vec![free_text(text)],
            };
        }
        self.multi_value(question, text)
    }

    /// A multi-select answer: split into parts; options in option order, then
    /// the other parts as free text; no option at all → one free-text answer.
    fn multi_value(&self, question: usize, text: &str) -> Vec<AnswerItem> {
        let spec = &self.request.questions[question];
        let parts = strong_parts(text);
        let mut chosen = BTreeSet::new();
        let mut others = Vec::new();
        let mut at = 0;
        while at < parts.len() {
            if let Some((index, last)) = self.label_spanning(question, text, &parts, at) {
                chosen.insert(index);
                at = last + 1;
                continue;
            }
            let (start, end) = parts[at];
            let part = &text[start..end];
            match self.part_options(question, part) {
                Some(indexes) => chosen.extend(indexes),
                // A part with nothing to read (a lone `.` between commas) is noise, not words.
                None if normalize(part).is_empty() => {}
                None => others.push(part),
            }
            at += 1;
        }
        if chosen.is_empty() {
            return vec![free_text(text)];
        }
        chosen
            .into_iter()
            .map(|index| option_item(spec, index))
            .chain(others.into_iter().map(free_text))
            .collect()
    }

    /// A label that contains separators, spread over parts `at..=last`.
    fn label_spanning(
        &self,
        question: usize,
        text: &str,
        parts: &[(usize, usize)],
        at: usize,
    ) -> Option<(usize, usize)> {
        if !self.keys[question].label_has_separator {
            return None;
        }
        let furthest = (at + MAX_PARTS_PER_LABEL).min(parts.len() - 1);
        (at + 1..=furthest).rev().find_map(|last| {
            let span = &text[parts[at].0..parts[last].1];
            self.label_index(question, &normalize(span)).map(|index| (index, last))
        })
    }

    /// The options one part names: a label, a number, options joined by
    /// `and` / `&` / `和`, or numbers separated by spaces (`1 3`).
    fn part_options(&self, question: usize, part: &str) -> Option<Vec<usize>> {
        let normalized = normalize(part);
        if let Some(index) = self.option_index(question, &normalized) {
            return Some(vec![index]);
        }
        let joined: Vec<&str> = normalized
            .split(" and ")
            .flat_map(|piece| piece.split(['&', '和']))
            .map(str::trim)
            .filter(|piece| !piece.is_empty())
            .collect();
        if joined.len() > 1 {
            let all: Option<Vec<Vec<usize>>> = joined
                .iter()
                .map(|piece| self.numbers_or_option(question, piece))
                .collect();
            return all.map(|lists| lists.concat());
        }
        self.numbers_or_option(question, &normalized)
    }

    fn numbers_or_option(&self, question: usize, normalized: &str) -> Option<Vec<usize>> {
        if let Some(index) = self.option_index(question, normalized) {
            return Some(vec![index]);
        }
        let numbers: Option<Vec<usize>> = normalized
            .split(' ')
            .map(|token| self.number_index(question, token))
            .collect();
        numbers.filter(|numbers| numbers.len() > 1)
    }

    fn option_index(&self, question: usize, normalized: &str) -> Option<usize> {
        self.label_index(question, normalized)
            .or_else(|| self.number_index(question, normalized))
    }

    /// The option whose label this is, ` (Recommended)` optional.
    fn label_index(&self, question: usize, normalized: &str) -> Option<usize> {
        let keys = &self.keys[question];
        keys.labels.iter().position(|label| label == normalized).or_else(|| {
            let typed = bare_normalized(normalized);
            keys.bare_labels.iter().position(|label| *label == typed)
        })
    }

    /// The option with this number: `2`, `2.`, `2)`, `(2)`, `#2`.
    fn number_index(&self, question: usize, normalized: &str) -> Option<usize> {
        let digits = normalized
            .strip_prefix('(')
            .and_then(|inner| inner.strip_suffix(')'))
            .or_else(|| normalized.strip_prefix('#'))
            .or_else(|| normalized.strip_suffix(')'))
            .or_else(|| normalized.strip_suffix('.'))
            .unwrap_or(normalized)
            .trim();
        if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: usize = digits.parse().ok()?;
        (1..=self.keys[question].labels.len())
            .contains(&number)
            .then(|| number - 1)
    }
}

/// Reads one reply with a fresh [`ReplyReader`]; prefer keeping a reader
/// per pending prompt when many replies are read.
pub fn read_reply(request: &AskRequest, so_far: &Answers, reply: &str) -> ReplyOutcome {
    ReplyReader::new(request).read(so_far, reply)
}

fn option_item(question: &Question, index: usize) -> AnswerItem {
    AnswerItem::Option {
        index,
        label: question.options[index].label.clone(),
    }
}

fn free_text(text: &str) -> AnswerItem {
    AnswerItem::FreeText {
        text: text.trim().to_owned(),
    }
}

/// A normalized label without its ` (Recommended)` suffix, normalized again:
/// what stood before the suffix may itself end in `!` or be quoted
/// (`"Yes." (Recommended)` is typed `yes`).
fn bare_normalized(normalized: &str) -> Cow<'_, str> {
    match normalized.strip_suffix(RECOMMENDED_SUFFIX) {
        Some(rest) => Cow::Owned(normalize(rest)),
        None => Cow::Borrowed(normalized),
    }
}

fn is_strong_separator(c: char) -> bool {
    matches!(c, ',' | ';' | '、' | '\n' | '\r')
}

/// The byte ranges of the non-empty, trimmed parts of `text` between
/// `,` `;` `、` `，` `；` and line breaks.
fn strong_parts(text: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut push = |from: usize, to: usize| {
        let piece = &text[from..to];
        let lead = piece.len() - piece.trim_start().len();
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            parts.push((from + lead, from + lead + trimmed.len()));
        }
    };
    for (at, c) in text.char_indices() {
        if is_strong_separator(fold_width(c)) {
            push(start, at);
            start = at + c.len_utf8();
        }
    }
    push(start, text.len());
    parts
}

/// The length of ` - ` (or an en or em dash between spaces) at the start
/// of `text`, the dash separator of a keyed line.
fn dash_after_space(text: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    let (_, space) = chars.next()?;
    let (_, dash) = chars.next()?;
    let (at, after) = chars.next()?;
    (space == ' ' && matches!(dash, '-' | '–' | '—') && after == ' ').then(|| at + after.len_utf8())
}

/// A normalized question text without its trailing question mark.
fn without_question_mark(text: &str) -> &str {
    text.strip_suffix(['?', '？']).map_or(text, str::trim_end)
}

/// `14:30` or `9:05am` is a time of day, not key `14` and answer `30`.
fn is_clock_time(key: &str, rest: &str) -> bool {
    let hour: Vec<char> = key.trim_end().chars().map(fold_width).collect();
    let hour = (1..=2).contains(&hour.len()) && hour.iter().all(char::is_ascii_digit);
    let mut minutes = rest.chars().map(fold_width);
    let two_digits =
        minutes.next().is_some_and(|c| c.is_ascii_digit()) && minutes.next().is_some_and(|c| c.is_ascii_digit());
    hour && two_digits && !minutes.next().is_some_and(|c| c.is_ascii_digit())
}
