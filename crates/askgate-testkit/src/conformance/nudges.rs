//! Nudges (`Channel::nudge`, `docs/adapter-spec.md` §2.10), run by every
//! chat adapter against its fake platform: the real engine delivers a
//! prompt through the adapter, the suite nudges under it as the engine's
//! reminders and escalations do, and reads back what the platform holds
//! ([`PersonPlatform::posted`]) — which the fake checked against the
//! platform's published spec.
//!
//! Each nudge MUST be exactly one new message, in the prompt's conversation,
//! a reply to the prompt's first message (a Telegram `reply_to_message`, a
//! Discord `message_reference`, a Slack thread reply); it MUST notify exactly
//! the people it mentions and no one else, whatever its text holds; its text
//! MUST arrive as written, within the platform's limit; and a nudge with no
//! message to reply to MUST be a message of its own where it was sent.

use askgate_core::channel::{Destination, MessageRef, Nudge};
use askgate_core::text::is_invisible;

use super::inbound::{GROUP, PERSON, Person, PersonPlatform, SINGLE, Who};
use super::scenario;

/// A reminder, as the engine words one.
pub const REMINDER: &str = "Still waiting for your answer — 2 min left.";

/// Markup and mention syntax of every platform, which a nudge's text MUST
/// show as written, mentioning no one.
pub const MARKUP: &str = "<b>x</b> @everyone <!channel> *bold* <@123> &amp;";

/// A note to a recipient with no message to reply to (an admin told that a
/// question could not reach its person).
pub const NOTE: &str = "A question for Alice could not be delivered: the platform refused it.";

/// A message the platform holds, as people see it: what a nudge is read
/// back as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    /// Its id, as in a [`MessageRef`].
    pub message: String,
    /// The id of the message it replies to: a Telegram `reply_to_message`,
    /// a Discord `message_reference`, a Slack thread's parent (`thread_ts`);
    /// `None` for a message of its own.
    pub reply_to: Option<String>,
    /// The text a person sees: markup rendered, escapes gone (a defusing
    /// zero-width character may stay).
    pub text: String,
    /// Who it notifies, as the platform reads it, in order: a person's
    /// platform user id, or a mass mention by its syntax (`@everyone`,
    /// `@here`, `<!channel>`, a role `<@&id>`, `@username`).
    pub mentions: Vec<String>,
}

/// Every nudge scenario [`run`] knows, in the order it runs them: what a
/// platform with groups runs, and what its test asserts ran.
pub const EVERY_NUDGE: [&str; 5] = [
    "a_reminder_replies_to_the_prompt_and_mentions_the_person",
    "a_reminder_in_a_group_mentions_the_person_and_no_one_else",
    "markup_in_a_nudge_arrives_as_written_and_mentions_no_one",
    "a_long_nudge_is_cut_to_the_platform_s_limit",
    "a_nudge_with_nothing_to_reply_to_is_a_message_of_its_own",
];

/// Every nudge scenario that applies to `platform`, in order, with one
/// engine and store for them all; returns the names of those that ran. The
/// fake MUST have refused nothing.
pub async fn run(platform: &dyn PersonPlatform) -> Vec<&'static str> {
    let person = Person::start(platform).await;
    let mut ran = Vec::new();
    let groups = person.features().groups;
    scenario!(ran, person; true, a_reminder_replies_to_the_prompt_and_mentions_the_person);
    scenario!(ran, person; groups, a_reminder_in_a_group_mentions_the_person_and_no_one_else);
    scenario!(ran, person; true, markup_in_a_nudge_arrives_as_written_and_mentions_no_one);
    scenario!(ran, person; true, a_long_nudge_is_cut_to_the_platform_s_limit);
    scenario!(ran, person; true, a_nudge_with_nothing_to_reply_to_is_a_message_of_its_own);
    let violations = platform.violations();
    assert!(
        violations.is_empty(),
        "every nudge MUST be valid by the platform's published spec; the fake refused {}:\n{}",
        violations.len(),
        violations.join("\n")
    );
    ran
}

/// A prompt the engine delivered to recipient `to`: where that recipient is
/// configured, and the prompt's first message.
async fn delivered(person: &Person<'_>, to: &str) -> (Destination, MessageRef) {
    let asked = person.ask(to, SINGLE).await;
    let first = asked
        .record
        .delivery()
        .and_then(|delivery| delivery.messages.first().cloned())
        .unwrap_or_else(|| panic!("the question to {to} was delivered"));
    let recipient = person
        .engine()
        .recipient(to)
        .unwrap_or_else(|| panic!("no recipient \"{to}\""));
    let destination = recipient
        .surfaces
        .first()
        .unwrap_or_else(|| panic!("\"{to}\" has a surface"))
        .destination
        .clone();
    (destination, first)
}

/// What the platform holds in `conversation`.
async fn posted(person: &Person<'_>, conversation: &str) -> Vec<Posted> {
    person
        .platform()
        .posted(conversation)
        .await
        .unwrap_or_else(|| panic!("a chat platform MUST let the suite read its messages back (PersonPlatform::posted)"))
}

/// Sends `nudge`, and returns the one message it added to `conversation`.
async fn nudged(person: &Person<'_>, conversation: &str, nudge: &Nudge<'_>) -> Posted {
    let before = posted(person, conversation).await;
    person
        .platform()
        .channel()
        .nudge(nudge)
        .await
        .unwrap_or_else(|error| panic!("a nudge the platform takes MUST be sent: {error}"));
    let new: Vec<Posted> = posted(person, conversation)
        .await
        .into_iter()
        .filter(|message| !before.iter().any(|old| old.message == message.message))
        .collect();
    let [message] = new.as_slice() else {
        panic!(
            "a nudge MUST be exactly one new message in conversation {conversation}, found {}: {new:?}",
            new.len()
        );
    };
    message.clone()
}

/// The text without the zero-width characters that defuse mentions and marks.
fn visible(text: &str) -> String {
    text.chars().filter(|c| !is_invisible(*c)).collect()
}

fn assert_replies(message: &Posted, to: &MessageRef) {
    assert_eq!(
        message.reply_to.as_deref(),
        Some(to.message.as_str()),
        "a nudge MUST reply to the prompt's first message, in its conversation: {message:?}"
    );
}

/// A reminder under a prompt in the person's direct conversation replies
/// to the prompt's first message and mentions the person, once.
pub async fn a_reminder_replies_to_the_prompt_and_mentions_the_person(person: &Person<'_>) {
    let (to, first) = delivered(person, PERSON).await;
    let alice = person.platform().user(Who::Recipient);
    let mention = [alice.clone()];
    let nudge = Nudge::new(&to, REMINDER).replying_to(Some(&first)).mentioning(&mention);
    let message = nudged(person, &first.conversation, &nudge).await;
    assert_replies(&message, &first);
    assert!(
        visible(&message.text).contains(REMINDER),
        "a nudge MUST show its text: {message:?}"
    );
    assert_eq!(
        message.mentions,
        [alice.id],
        "a reminder MUST notify exactly the people it mentions: {message:?}"
    );
}

/// In a group, a reminder mentions the person it is for, and no one else
/// in the group is notified.
pub async fn a_reminder_in_a_group_mentions_the_person_and_no_one_else(person: &Person<'_>) {
    let (to, first) = delivered(person, GROUP).await;
    let alice = person.platform().user(Who::Recipient);
    // The same person twice is mentioned once.
    let mention = [alice.clone(), alice.clone()];
    let nudge = Nudge::new(&to, REMINDER).replying_to(Some(&first)).mentioning(&mention);
    let message = nudged(person, &first.conversation, &nudge).await;
    assert_replies(&message, &first);
    assert!(visible(&message.text).contains(REMINDER), "{message:?}");
    assert_eq!(
        message.mentions,
        [alice.id],
        "a reminder in a group MUST notify exactly the people it mentions: {message:?}"
    );
}

/// Markup and mention syntax in a nudge's text arrive as written and
/// notify no one (an escalation's word on an earlier copy mentions no one).
pub async fn markup_in_a_nudge_arrives_as_written_and_mentions_no_one(person: &Person<'_>) {
    let to = if person.features().groups { GROUP } else { PERSON };
    let (to, first) = delivered(person, to).await;
    let nudge = Nudge::new(&to, MARKUP).replying_to(Some(&first));
    let message = nudged(person, &first.conversation, &nudge).await;
    assert_replies(&message, &first);
    assert_eq!(
        visible(&message.text).trim(),
        MARKUP,
        "a nudge's text MUST arrive as written: {message:?}"
    );
    assert!(
        message.mentions.is_empty(),
        "nothing in a nudge's text MUST notify anyone: {message:?}"
    );
}

/// A text longer than any message is cut with `…` within the platform's
/// limit (the fake refuses a message over it), its start kept.
pub async fn a_long_nudge_is_cut_to_the_platform_s_limit(person: &Person<'_>) {
    let (to, first) = delivered(person, PERSON).await;
    let text = format!("{REMINDER} {}", "<&*_@x> ".repeat(2000));
    let alice = [person.platform().user(Who::Recipient)];
    let nudge = Nudge::new(&to, &text).replying_to(Some(&first)).mentioning(&alice);
    let message = nudged(person, &first.conversation, &nudge).await;
    assert_replies(&message, &first);
    let shown = visible(&message.text);
    assert!(
        shown.contains(REMINDER) && shown.trim_end().ends_with('…'),
        "a long nudge MUST be cut with … within the platform's limit: {message:?}"
    );
    assert_eq!(message.mentions, [alice[0].id.clone()], "{message:?}");
}

/// A note with nothing to reply to (to an admin) is a message of its own
/// where it was sent: for a person addressed by user id, the direct
/// conversation the prompt went to.
pub async fn a_nudge_with_nothing_to_reply_to_is_a_message_of_its_own(person: &Person<'_>) {
    let (to, first) = delivered(person, PERSON).await;
    let nudge = Nudge::new(&to, NOTE);
    let message = nudged(person, &first.conversation, &nudge).await;
    assert_eq!(
        message.reply_to, None,
        "a nudge with nothing to reply to MUST be a message of its own: {message:?}"
    );
    assert_eq!(visible(&message.text).trim(), NOTE, "{message:?}");
    assert!(message.mentions.is_empty(), "{message:?}");
}
