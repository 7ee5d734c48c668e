//! What a Telegram message says and shows, as pure functions of what core
//! decided: a prompt's keyboard and first text, a finished message's HTML,
//! a nudge's mentions. Nothing here talks to Telegram ([`crate::channel`]
//! sends).
//!
//! Agent text and a person's words go through [`html`] (escaped, `@names`
//! defused); only the mentions a nudge names can notify anyone.

use askgate_adapter::finish::finished;
use askgate_adapter::nudge;
use askgate_core::channel::{ChannelError, UserRef};
use askgate_core::{Limit, Summary};
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use crate::limits;
use crate::markup::html;

/// The longest name a nudge shows for a person it mentions: askgate's own
/// bound (a Telegram name is a first and a last name of up to 64
/// characters each), so that the mentions leave the text its room.
const MENTION_NAME: Limit = Limit::code_points(64);

/// A nudge's HTML: a text mention (`tg://user?id=…`, which notifies that
/// person) for each person in `mention`, once each and named by their display
/// name (their id where they have none), then `text` escaped with its
/// `@names` defused, cut so that the whole is within [`limits::MESSAGE_TEXT`]
/// after parsing. Nothing but the mentions can notify anyone.
pub(crate) fn nudge_html(text: &str, mention: &[UserRef]) -> Result<String, ChannelError> {
    let mut lead = String::new();
    let mut lead_len = 0;
    for person in nudge::people(mention, "Telegram", |id| id.bytes().all(|byte| byte.is_ascii_digit()))? {
        let id = &person.id;
        let name = person.display_name.trim();
        let name = MENTION_NAME.ellipsize(if name.is_empty() { &person.id } else { name });
        lead.push_str("<a href=\"tg://user?id=");
        lead.push_str(id);
        lead.push_str("\">");
        lead.push_str(&html(&name));
        lead.push_str("</a> ");
        // The name as Telegram counts it after parsing, and the space.
        lead_len += limits::measure(&name) + 1;
    }
    let room = limits::MESSAGE_TEXT.max.saturating_sub(lead_len);
    let text = askgate_core::text::shorten(text, |text| limits::measure(text) <= room);
    Ok(format!("{lead}{}", html(&text)))
}

/// The finished message's HTML: the prompt's text, then the summary in
/// bold, within [`limits::MESSAGE_TEXT`] after parsing (the line break
/// between them counts; tags do not).
pub(crate) fn finished_html(text: &str, summary: &Summary) -> String {
    const GAP: &str = "\n\n";
    let laid = finished(
        text,
        summary,
        limits::MESSAGE_TEXT.max,
        GAP.chars().count(),
        limits::measure,
    );
    if laid.text.is_empty() {
        format!("<b>{}</b>", html(&laid.summary))
    } else {
        format!("{}{GAP}<b>{}</b>", html(&laid.text), html(&laid.summary))
    }
}

/// One option a row, then Other… and Skip side by side.
pub(crate) fn keyboard(prompt: &askgate_core::render::ButtonPrompt) -> InlineKeyboardMarkup {
    let mut rows: Vec<Vec<InlineKeyboardButton>> = prompt
        .options
        .iter()
        .map(|option| {
            vec![InlineKeyboardButton::callback(
                option.label.clone(),
                option.token.clone(),
            )]
        })
        .collect();
    let mut last = Vec::new();
    if let Some(other) = &prompt.other {
        last.push(InlineKeyboardButton::callback(other.label.clone(), other.token.clone()));
    }
    last.push(InlineKeyboardButton::callback(
        prompt.skip.label.clone(),
        prompt.skip.token.clone(),
    ));
    rows.push(last);
    InlineKeyboardMarkup::new(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str, name: &str) -> UserRef {
        UserRef::new(id, name)
    }

    #[test]
    fn a_nudge_mentions_each_person_once_by_link_and_escapes_its_text() {
        let html = nudge_html(
            "<b>x</b> @everyone",
            &[person("42", "A<l>ice"), person("42", "Alice"), person("7", " ")],
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            html,
            "<a href=\"tg://user?id=42\">A&lt;l&gt;ice</a> <a href=\"tg://user?id=7\">7</a> \
             &lt;b&gt;x&lt;/b&gt; @\u{2060}everyone"
        );
        assert!(matches!(
            nudge_html("hi", &[person("U123", "Alice")]),
            Err(ChannelError::Rejected { .. })
        ));
    }

    #[test]
    fn a_long_nudge_is_cut_within_the_limit_after_parsing() {
        let html = nudge_html(&"@a ".repeat(3000), &[person("42", &"N".repeat(100))])
            .unwrap_or_else(|error| panic!("{error}"));
        // What Telegram counts: the text without its tags, entities decoded.
        let parsed = html
            .replace("<a href=\"tg://user?id=42\">", "")
            .replace("</a>", "")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let length = limits::MESSAGE_TEXT.len(&parsed);
        assert!((4090..=4096).contains(&length), "{length}");
        assert!(
            parsed.starts_with(&format!("{}… @\u{2060}a", "N".repeat(63))),
            "{parsed}"
        );
        assert!(parsed.ends_with('…'), "{parsed}");
    }
}
