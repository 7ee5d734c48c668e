//! `docs/adapter-spec.md` §4.10, checked for one adapter: the recipient
//! block a conversation that is no recipient's is told, pasted into the
//! configuration as is, addresses exactly that conversation.

use askgate_adapter::config::{AdapterKind, ConfigCheck};
use askgate_adapter::{Inbound, Introduction, introduce};
use askgate_core::channel::{ConversationKind, InboundEvent, InboundKind, MessageRef, UserRef};

/// A greeting from `user` (`id`, `name`) in `conversation` (and `thread`).
pub fn greeting(kind: ConversationKind, conversation: &str, thread: Option<&str>, user: (&str, &str)) -> InboundEvent {
    InboundEvent {
        event_id: "greeting".to_owned(),
        user: UserRef {
            id: user.0.to_owned(),
            display_name: user.1.to_owned(),
        },
        conversation: conversation.to_owned(),
        conversation_kind: kind,
        thread: thread.map(str::to_owned),
        kind: InboundKind::Greeting {
            message: MessageRef {
                conversation: conversation.to_owned(),
                message: "1".to_owned(),
            },
        },
    }
}

/// Asserts that `inbound` introduces the conversation of `event` with a
/// block that `kind` reads, with no problem, as a recipient addressed at
/// the introduction's destination, with the writer among its answerers
/// where the conversation is a group; returns the block.
///
/// # Panics
///
/// When any of that does not hold: this is a test helper.
pub fn the_block_configures_its_conversation<I: Inbound>(
    kind: &dyn AdapterKind,
    inbound: &I,
    event: &InboundEvent,
) -> String {
    let Some(Introduction { destination, keys }) = inbound.introduction(event) else {
        panic!("an adapter MUST say which keys address a conversation (§4.10): {event:?}");
    };
    let block = introduce::snippet("chat", event, &keys);
    let mut pasted: toml::Table = toml::from_str(&block).unwrap_or_else(|error| panic!("{error}: {block}"));
    let Some(toml::Value::Table(recipients)) = pasted.remove("recipients") else {
        panic!("the block is one [recipients.<name>] table: {block}");
    };
    let (name, recipient) = recipients.into_iter().next().unwrap_or_else(|| panic!("{block}"));
    let toml::Value::Table(mut recipient) = recipient else {
        panic!("{block}");
    };
    // The keys askgate itself reads; the rest is the adapter's addressing.
    assert_eq!(
        recipient.remove("channel"),
        Some(toml::Value::String("chat".into())),
        "{block}"
    );
    recipient.remove("display_name");
    let env = |_: &str| None;
    let mut check = ConfigCheck::new(&env);
    let address = kind.recipient(&mut check, &name, recipient);
    assert!(check.problems().is_empty(), "{block}: {:?}", check.problems());
    let address = address.unwrap_or_else(|| panic!("{block} is a recipient"));
    assert_eq!(
        address.destination, destination,
        "the block MUST address the conversation it was told in: {block}"
    );
    if event.conversation_kind == ConversationKind::Group {
        assert!(
            address.answerers.contains(&event.user.id),
            "in a group the writer MUST be an answerer: {block}"
        );
    }
    block
}
