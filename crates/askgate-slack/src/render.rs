//! askgate's presentations as Block Kit: a prompt's blocks, its summary, and
//! the modals for Other… and Answer…. Pure functions of what core decided;
//! nothing here talks to Slack.
//!
//! Every piece of agent text (and a person's own words in a summary) goes
//! through [`crate::markup::escape`] and into `mrkdwn` objects marked
//! `verbatim`, so that Slack links and mentions nothing in it.

use askgate_adapter::finish::finished;
use askgate_core::form::Form;
use askgate_core::render::{ButtonPrompt, TextActions, TextPrompt};
use askgate_core::{Limit, Summary};
use serde::{Deserialize, Serialize};
use slack_morphism::prelude::*;

use crate::limits::{self, BUTTON_TEXT, INPUT_LABEL, MODAL_TITLE, OPTION_TEXT, PLACEHOLDER, SECTION_TEXT};
use crate::markup::escape;

/// The block id of Other…'s one text input. It contains a colon, which no
/// question id can: a form's inputs are named by question id.
pub const OTHER_FIELD: &str = "askgate:answer";
/// The action id of a text input in askgate's modals.
pub const TEXT_INPUT: &str = "text";
/// The action id of a multi-select question's checkboxes.
pub const CHECKBOXES: &str = "checked";
/// What a checkboxes block's id adds to its question's id.
pub const CHECKBOXES_SUFFIX: &str = "#options";

/// What a modal carries for its submission, which names no channel: where
/// the button that opened it was. Its `private_metadata`, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The conversation (`C…`, `D…`).
    #[serde(rename = "c")]
    pub conversation: String,
    /// Whether several people see it (a channel), not a DM.
    #[serde(rename = "g", default)]
    pub group: bool,
    /// The thread the prompt is in, if any.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub thread_ts: Option<String>,
}

fn mrkdwn(text: String) -> SlackBlockText {
    SlackBlockMarkDownText::new(text).with_verbatim(true).into()
}

/// Plain text (nothing to escape) cut to `limit` in Slack's unit.
fn plain(text: &str, limit: Limit) -> SlackBlockPlainTextOnly {
    SlackBlockPlainText::new(limit.ellipsize(text)).into()
}

fn section(id: String, text: String) -> SlackBlock {
    SlackSectionBlock::new()
        .with_block_id(SlackBlockId(id))
        .with_text(mrkdwn(text))
        .into()
}

/// Escaped `text` as one section within [`SECTION_TEXT`]: a prompt's part
/// fits (core measured it with [`limits::measure`]).
fn sections(prefix: &str, text: &str) -> Vec<SlackBlock> {
    vec![section(format!("{prefix}0"), SECTION_TEXT.fit(text, escape))]
}

fn button(label: &str, token: &str, primary: bool) -> SlackActionBlockElement {
    let button = SlackBlockButtonElement::new(plain(label, BUTTON_TEXT))
        .with_action_id(SlackActionId(token.to_owned()))
        .with_value(token.to_owned());
    if primary {
        button.with_style(SlackBlockButtonStyle::Primary).into()
    } else {
        button.into()
    }
}

fn actions(elements: Vec<SlackActionBlockElement>) -> SlackBlock {
    SlackActionsBlock::new(elements)
        .with_block_id(SlackBlockId("askgate:actions".into()))
        .into()
}

/// The text a notification shows for `text` (Slack's `text` beside
/// blocks), escaped and within a section's limit.
pub fn fallback(text: &str) -> String {
    SECTION_TEXT.fit(text, escape)
}

/// One single-select question: the heading, header and question in a
/// section, the options' descriptions in a context block, then the options
/// as buttons (the first `primary`), Other… and Skip.
pub fn button_blocks(prompt: &ButtonPrompt) -> Vec<SlackBlock> {
    let heading = prompt.text.split("\n\n").next().unwrap_or_default();
    let mut blocks = vec![section(
        "askgate:question".into(),
        format!(
            "{}\n\n*{}*\n{}",
            escape(heading),
            escape(&prompt.header),
            escape(&prompt.question)
        ),
    )];
    let described: Vec<SlackContextBlockElement> = prompt
        .options
        .iter()
        .filter_map(|option| {
            let description = option.description.as_deref()?;
            let text = format!("*{}* — {}", escape(&option.label), escape(description));
            Some(SlackContextBlockElement::MarkDown(
                SlackBlockMarkDownText::new(limits::CONTEXT_TEXT.fit(&text, str::to_owned)).with_verbatim(true),
            ))
        })
        .collect();
    if !described.is_empty() {
        blocks.push(
            SlackContextBlock::new(described)
                .with_block_id(SlackBlockId("askgate:descriptions".into()))
                .into(),
        );
    }
    let mut elements: Vec<SlackActionBlockElement> = prompt
        .options
        .iter()
        .map(|option| button(&option.label, &option.token, option.primary))
        .collect();
    elements.extend(
        prompt
            .other
            .iter()
            .map(|other| button(&other.label, &other.token, false)),
    );
    elements.push(button(&prompt.skip.label, &prompt.skip.token, false));
    blocks.push(actions(elements));
    blocks
}

/// Part `index` of a text prompt: its text in sections, and on the part
/// that carries them, Answer… (primary) and Skip.
pub fn text_blocks(prompt: &TextPrompt, index: usize) -> Vec<SlackBlock> {
    let part = prompt.parts.get(index).map_or("", String::as_str);
    let mut blocks = sections("askgate:text", part);
    if let Some(TextActions { answer, skip, .. }) = &prompt.actions
        && prompt.actions_part() == Some(index)
    {
        blocks.push(actions(vec![
            button(&answer.label, &answer.token, true),
            button(&skip.label, &skip.token, false),
        ]));
    }
    blocks
}

/// A finished prompt: its text, then the summary in bold, each a section
/// within [`SECTION_TEXT`]; no buttons. The summary is its longest form
/// that fits ([`Summary::within`]).
pub fn summary_blocks(text: &str, summary: &Summary) -> Vec<SlackBlock> {
    // The bold markers around the summary.
    let summary = finished("", summary, SECTION_TEXT.max, 2, limits::measure).summary;
    let mut blocks = Vec::new();
    if !text.trim().is_empty() {
        blocks.push(section("askgate:text0".into(), SECTION_TEXT.fit(text, escape)));
    }
    blocks.push(section("askgate:summary".into(), format!("*{}*", escape(&summary))));
    blocks
}

fn modal(title: &str, submit: &str, callback: &str, origin: &Origin, blocks: Vec<SlackBlock>) -> SlackView {
    let metadata = serde_json::to_string(origin).unwrap_or_default();
    SlackView::Modal(
        SlackModalView::new(plain(title, MODAL_TITLE), blocks)
            .with_submit(plain(submit, MODAL_TITLE))
            .with_callback_id(SlackCallbackId(callback.to_owned()))
            .with_private_metadata(metadata),
    )
}

fn text_input(block_id: &str, label: &str, placeholder: &str, optional: bool) -> SlackBlock {
    let mut input = SlackBlockPlainTextInputElement::new()
        .with_action_id(SlackActionId(TEXT_INPUT.into()))
        .with_multiline(true)
        // Slack stops the person typing more than askgate takes.
        .with_max_length(
            askgate_core::request::MAX_FREE_TEXT_CHARS
                .try_into()
                .unwrap_or(u64::MAX),
        );
    if !placeholder.is_empty() {
        input = input.with_placeholder(plain(placeholder, PLACEHOLDER));
    }
    SlackInputBlock::new(plain(label, INPUT_LABEL), input.into())
        .with_block_id(SlackBlockId(block_id.to_owned()))
        .with_optional(optional)
        .into()
}

/// Other…'s modal: one required text input; `token` comes back as its
/// `callback_id`.
pub fn free_text_view(token: &str, title: &str, placeholder: &str, submit: &str, origin: &Origin) -> SlackView {
    let blocks = vec![text_input(OTHER_FIELD, title, placeholder, false)];
    modal(title, submit, token, origin, blocks)
}

/// Answer…'s modal: per question a required text input; for a multi-select
/// question its options as checkboxes before it, and then either may be
/// left empty (ticked options, or one's own words).
pub fn form_view(form: &Form, origin: &Origin) -> SlackView {
    let mut blocks = Vec::new();
    for field in &form.fields {
        if !field.checkboxes.is_empty() {
            let options = field
                .checkboxes
                .iter()
                .enumerate()
                .map(|(index, label)| {
                    SlackBlockChoiceItem::new(
                        SlackBlockPlainText::new(OPTION_TEXT.ellipsize(label)).into(),
                        index.to_string(),
                    )
                })
                .collect();
            let checkboxes = SlackBlockCheckboxesElement::new(options).with_action_id(SlackActionId(CHECKBOXES.into()));
            blocks.push(
                SlackInputBlock::new(plain(&field.label, INPUT_LABEL), checkboxes.into())
                    .with_block_id(SlackBlockId(format!("{}{CHECKBOXES_SUFFIX}", field.id)))
                    .with_optional(true)
                    .into(),
            );
        }
        let label = if field.checkboxes.is_empty() {
            field.label.clone()
        } else {
            // The label is the checkboxes'; the text input is for one's own words.
            INPUT_LABEL.ellipsize(&field.placeholder)
        };
        blocks.push(text_input(
            &field.id,
            &label,
            &field.placeholder,
            !field.checkboxes.is_empty(),
        ));
    }
    let submit = if form.submit.is_empty() {
        "Submit"
    } else {
        form.submit.as_str()
    };
    modal(&form.title, submit, &form.token, origin, blocks)
}
