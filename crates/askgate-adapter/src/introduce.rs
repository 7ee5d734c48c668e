//! Finding chat ids is the bot's job: a conversation that is no recipient's
//! and writes to the bot (a DM, or `/start` in a group) is answered with the
//! recipient block to paste into askgate's configuration — its chat id, its
//! thread, the writer's user id for `answerers` — so that no admin has to
//! dig ids out of a platform's developer tools (`docs/adapter-spec.md` §4.10).
//!
//! The [`crate::Driver`] decides when, the same way on every platform; an
//! adapter says only which keys address a conversation
//! ([`crate::Inbound::introduction`]) and, for platforms without bot
//! commands, reads greetings with [`is_greeting`].

use askgate_core::channel::{ConversationKind, Destination, InboundEvent, InboundKind};

/// The recipient keys that address one conversation, as an adapter knows
/// them (`chat_id`, `topic`, `answerers` for Telegram).
#[derive(Debug, Clone, PartialEq)]
pub struct Introduction {
    /// The destination a recipient configured with [`Introduction::keys`]
    /// addresses: exactly what the adapter's [`crate::AdapterKind::recipient`]
    /// makes of them, so the engine can tell whether one is configured.
    pub destination: Destination,
    /// The addressing keys, in the order they are shown.
    pub keys: Vec<(&'static str, toml::Value)>,
}

/// Whether the conversation of `event` is told its recipient block when it
/// is no recipient's: anything said in a direct conversation, only a
/// greeting ([`InboundKind::Greeting`]) in a group, so that a bot added to
/// a busy channel does not answer every message there.
pub fn is_introduced(event: &InboundEvent) -> bool {
    match &event.kind {
        InboundKind::Greeting { .. } => true,
        InboundKind::TextReply { .. } | InboundKind::NonText { .. } => {
            event.conversation_kind == ConversationKind::Direct
        }
        _ => false,
    }
}

/// The words a greeting is made of, after a mention of the bot: `start`,
/// `help`, `askgate`, `id`.
const GREETINGS: [&str; 4] = ["start", "help", "askgate", "id"];

/// Whether `text` greets the bot rather than answer (for platforms without
/// bot commands: Discord and Slack messages). A greeting is a command
/// (`/start`, `/help`, `/askgate`, `/id`) or a mention (`<@U123>`,
/// `@askgate`) followed by one of those words, with nothing else said:
/// `@askgate start`, `<@U0BOT> id`, `/start`.
pub fn is_greeting(text: &str) -> bool {
    let mut words = text.split_whitespace().peekable();
    let mut mentioned = false;
    while let Some(word) = words.peek() {
        if is_mention(word) {
            mentioned = true;
            words.next();
        } else {
            break;
        }
    }
    let (Some(word), None) = (words.next(), words.next()) else {
        return false;
    };
    let word = word.trim_end_matches(['!', '.', '?']).to_ascii_lowercase();
    let command = word.strip_prefix('/');
    let named = command.unwrap_or(&word);
    (command.is_some() || mentioned) && GREETINGS.contains(&named)
}

/// `<@U0123>`, `<@!123>` (Discord's nickname form), `@name`.
fn is_mention(word: &str) -> bool {
    (word.starts_with("<@") && word.ends_with('>') && word.len() > 3) || (word.len() > 1 && word.starts_with('@'))
}

/// The recipient block for `channel`'s conversation of `event`, ready to
/// paste: its name from the writer's name, the channel, a display name,
/// then `keys`. Values are written by the `toml` crate, so a name with
/// quotes stays a string; backticks and control characters are dropped
/// from names, so the block cannot close the code block it is shown in.
pub fn snippet(channel: &str, event: &InboundEvent, keys: &[(&'static str, toml::Value)]) -> String {
    let display_name: String = event
        .user
        .display_name
        .chars()
        .filter(|c| !c.is_control() && *c != '`')
        .collect();
    let display_name = display_name.trim();
    let name = match event.conversation_kind {
        ConversationKind::Direct => recipient_name(display_name),
        ConversationKind::Group => "team".to_owned(),
    };
    let mut lines = vec![
        format!("[recipients.{name}]"),
        format!("channel = {}", toml::Value::String(channel.to_owned())),
    ];
    if !display_name.is_empty() {
        lines.push(format!(
            "display_name = {}",
            toml::Value::String(display_name.to_owned())
        ));
    }
    lines.extend(keys.iter().map(|(key, value)| format!("{key} = {value}")));
    lines.join("\n")
}

/// A recipient name from a person's name: lowercase ASCII letters, digits
/// and `_` (`Alice Smith` → `alice_smith`); `me` when nothing is left
/// (`小李`).
fn recipient_name(display_name: &str) -> String {
    let mut name = String::new();
    for c in display_name.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('_') {
            name.push('_');
        }
        if name.len() >= 32 {
            break;
        }
    }
    let name = name.trim_end_matches('_');
    if name.is_empty() {
        "me".to_owned()
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use askgate_core::channel::{MessageRef, UserRef};

    use super::*;

    fn event(kind: ConversationKind, display_name: &str) -> InboundEvent {
        InboundEvent {
            event_id: "1".into(),
            user: UserRef {
                id: "42".into(),
                display_name: display_name.into(),
            },
            conversation: "7".into(),
            conversation_kind: kind,
            thread: None,
            kind: InboundKind::Greeting {
                message: MessageRef {
                    conversation: "7".into(),
                    message: "1".into(),
                },
            },
        }
    }

    #[test]
    fn greetings_are_commands_or_a_mention_and_a_word_and_nothing_else() {
        for greeting in [
            "/start",
            "/HELP",
            "<@U0BOT> start",
            "<@!123> id",
            "@askgate askgate",
            "  /start  ",
            "<@U1> start!",
        ] {
            assert!(is_greeting(greeting), "{greeting:?}");
        }
        for other in [
            "start",
            "help me choose",
            "<@U0BOT> start the deploy",
            "/start now",
            "/deploy",
            "<@U0BOT>",
            "2",
            "",
            "Production",
        ] {
            assert!(!is_greeting(other), "{other:?}");
        }
    }

    #[test]
    fn a_direct_conversation_is_introduced_on_anything_a_group_only_on_a_greeting() {
        let mut direct = event(ConversationKind::Direct, "Alice");
        assert!(is_introduced(&direct));
        direct.kind = InboundKind::TextReply {
            message: MessageRef {
                conversation: "7".into(),
                message: "1".into(),
            },
            text: "hello".into(),
            reply_to: None,
        };
        assert!(is_introduced(&direct));
        let mut group = direct.clone();
        group.conversation_kind = ConversationKind::Group;
        assert!(!is_introduced(&group), "an ordinary message in a group");
        group.kind = event(ConversationKind::Group, "Alice").kind;
        assert!(is_introduced(&group));
        group.kind = InboundKind::ButtonPressed {
            token: "ag1:x:0".into(),
            message: MessageRef {
                conversation: "7".into(),
                message: "1".into(),
            },
        };
        assert!(!is_introduced(&group), "a tap is never a greeting");
    }

    #[test]
    fn the_block_is_valid_toml_whatever_the_name() {
        let keys = vec![("chat_id", toml::Value::Integer(42))];
        assert_eq!(
            snippet("tg", &event(ConversationKind::Direct, "Alice Smith"), &keys),
            "[recipients.alice_smith]\nchannel = \"tg\"\ndisplay_name = \"Alice Smith\"\nchat_id = 42"
        );
        let tricky = event(ConversationKind::Direct, "\"Bob\" ```\n[agents.x] 小李 \\");
        let block = snippet("tg", &tricky, &keys);
        assert!(!block.contains('`'), "{block}");
        let parsed: toml::Table = toml::from_str(&block).unwrap_or_else(|error| panic!("{error}: {block}"));
        let recipient = &parsed["recipients"]["bob_agents_x"];
        assert_eq!(recipient["display_name"].as_str(), Some("\"Bob\" [agents.x] 小李 \\"));
        assert_eq!(parsed.len(), 1, "nothing outside the recipient: {block}");
        let group = snippet(
            "tg",
            &event(ConversationKind::Group, "小李"),
            &[
                ("chat_id", toml::Value::Integer(-5)),
                ("answerers", toml::Value::Array(vec![toml::Value::Integer(42)])),
            ],
        );
        assert_eq!(
            group,
            "[recipients.team]\nchannel = \"tg\"\ndisplay_name = \"小李\"\nchat_id = -5\nanswerers = [42]"
        );
        assert_eq!(recipient_name("小李"), "me");
    }
}
