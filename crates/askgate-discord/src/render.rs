//! What a Discord message says and shows, as pure functions of what core
//! decided: a message's body (escaped content, components, no pings), a
//! prompt's button rows, a finished message's content, a nudge's
//! mentions. Nothing here talks to Discord ([`crate::channel`] sends).
//!
//! Buttons are components: the options in the first row (the first
//! `Primary`), then Other… and Skip; a text prompt's Answer… and Skip go on
//! its last part. Every body carries `allowed_mentions: {"parse": []}`, and
//! a nudge lets exactly its people be notified.

use askgate_adapter::finish::finished;
use askgate_adapter::nudge;
use askgate_core::channel::{ChannelError, MessageRef, UserRef};
use askgate_core::render::{ButtonPrompt, TextActions};
use askgate_core::{Limit, Summary};
use serde_json::{Value, json};

use crate::limits;
use crate::markup::escape;

/// Button styles (Discord's component docs).
const PRIMARY: u8 = 1;
const SECONDARY: u8 = 2;

/// A message's body: escaped content within Discord's limit
/// ([`limits::content`]), components, no pings, a nonce.
pub(crate) fn message_body(text: &str, components: Vec<Value>, nonce: Option<String>) -> Value {
    let mut body = json!({
        "content": limits::content(text),
        "components": Value::Array(components),
        "allowed_mentions": {"parse": []},
    });
    if let Some(nonce) = nonce {
        body["nonce"] = json!(nonce);
        body["enforce_nonce"] = json!(true);
    }
    body
}

/// A nudge's body: `<@id>` for each person in `mention` (once each), then
/// `text` escaped, within [`limits::CONTENT`]; `allowed_mentions` lets
/// exactly those people be notified (not even the author of the message it
/// replies to), and `message_reference` makes it a reply to `reply_to`, sent
/// even if that message is gone.
pub(crate) fn nudge_body(
    text: &str,
    mention: &[UserRef],
    reply_to: Option<&MessageRef>,
) -> Result<Value, ChannelError> {
    // A snowflake is digits; Discord refuses an `allowed_mentions.users`
    // with an id twice.
    let people = nudge::people(mention, "Discord", |id| id.bytes().all(|byte| byte.is_ascii_digit()))?;
    let users: Vec<&str> = people.iter().map(|person| person.id.as_str()).collect();
    let lead = nudge::at_mentions(&people);
    let room = Limit::code_points(limits::CONTENT.max.saturating_sub(limits::CONTENT.len(&lead)));
    let mut body = json!({
        "content": format!("{lead}{}", room.fit(text, escape)),
        "allowed_mentions": {"parse": [], "users": users, "replied_user": false},
    });
    if let Some(message) = reply_to {
        body["message_reference"] = json!({"message_id": message.message, "fail_if_not_exists": false});
    }
    Ok(body)
}

fn button(label: &str, token: &str, style: u8) -> Value {
    json!({"type": 2, "style": style, "label": label, "custom_id": token})
}

fn row(buttons: Vec<Value>) -> Value {
    json!({"type": 1, "components": Value::Array(buttons)})
}

/// The options in a row (the first `Primary`), then Other… and Skip.
pub(crate) fn button_rows(prompt: &ButtonPrompt) -> Vec<Value> {
    let options = prompt
        .options
        .iter()
        .map(|o| button(&o.label, &o.token, if o.primary { PRIMARY } else { SECONDARY }))
        .collect();
    let mut chrome: Vec<Value> = prompt
        .other
        .iter()
        .map(|other| button(&other.label, &other.token, SECONDARY))
        .collect();
    chrome.push(button(&prompt.skip.label, &prompt.skip.token, SECONDARY));
    vec![row(options), row(chrome)]
}

pub(crate) fn action_rows(actions: &TextActions) -> Vec<Value> {
    vec![row(vec![
        button(&actions.answer.label, &actions.answer.token, PRIMARY),
        button(&actions.skip.label, &actions.skip.token, SECONDARY),
    ])]
}

/// The edited content: the prompt's text and the summary under it in bold,
/// within [`limits::CONTENT`] after escaping; where both do not fit, the
/// summary's shorter forms, and the prompt's text gives way
/// ([`askgate_adapter::finish`]).
pub(crate) fn finished_content(text: &str, summary: &Summary) -> String {
    const GAP: &str = "\n\n";
    // The gap and the two pairs of bold markers.
    let overhead = GAP.len() + 4;
    let laid = finished(text, summary, limits::CONTENT.max, overhead, limits::measure);
    let summary = format!("**{}**", escape(&laid.summary));
    if laid.text.is_empty() {
        summary
    } else {
        format!("{}{GAP}{summary}", escape(&laid.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str) -> UserRef {
        UserRef::new(id, "Alice")
    }

    #[test]
    fn a_nudge_mentions_exactly_its_people_and_nothing_in_its_text() {
        let to = MessageRef {
            conversation: "9".into(),
            message: "77".into(),
        };
        let body = nudge_body(
            "<@1> @everyone *x*",
            &[person("42"), person("42"), person("43")],
            Some(&to),
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            body,
            json!({
                "content": "<@42> <@43> \\<\\@1\\> \\@everyone \\*x\\*",
                "allowed_mentions": {"parse": [], "users": ["42", "43"], "replied_user": false},
                "message_reference": {"message_id": "77", "fail_if_not_exists": false},
            })
        );
        let alone = nudge_body("hi", &[], None).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            alone,
            json!({"content": "hi", "allowed_mentions": {"parse": [], "users": [], "replied_user": false}})
        );
        assert!(matches!(
            nudge_body("hi", &[person("<@&1>")], None),
            Err(ChannelError::Rejected { .. })
        ));
        let long = nudge_body(&"*".repeat(3000), &[person("42")], None).unwrap_or_else(|error| panic!("{error}"));
        let content = long["content"].as_str().unwrap_or_default();
        assert!(limits::CONTENT.fits(content) && content.ends_with('…'), "{content}");
        assert!(content.starts_with("<@42> \\*"), "{content}");
    }

    #[test]
    fn a_summary_too_long_to_fit_makes_the_text_give_way() {
        let content = finished_content(&"x".repeat(990), &Summary::new("y".repeat(1500)));
        assert!(limits::CONTENT.fits(&content), "{}", content.chars().count());
        assert!(content.ends_with(&format!("{}**", "y".repeat(1500))));
        let short = finished_content("Where?", &Summary::new("Answered by Alice: Production"));
        assert_eq!(short, "Where?\n\n**Answered by Alice: Production**");
        // Escaping counts: a text of markdown characters is cut, never sent raw.
        let marked = finished_content(&"*".repeat(1500), &Summary::new("@everyone <@&1>"));
        assert!(limits::CONTENT.fits(&marked), "{}", marked.chars().count());
        assert!(marked.ends_with("**\\@everyone \\<\\@&1\\>**"), "{marked}");
        assert!(marked.starts_with("\\*\\*") && marked.contains('…'), "{marked}");
    }
}
