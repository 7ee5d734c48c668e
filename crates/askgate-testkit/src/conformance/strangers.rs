//! Strangers in the person's own direct conversation, a scenario of the
//! inbound suite ([`super::inbound::run`] runs it): a private chat or a DM
//! is the person's, and askgate does not take a platform's word that
//! nobody else can act there.

use askgate_core::channel::Reaction;
use askgate_core::{ButtonAction, Locale};
use askgate_store::QuestionStatus;
use serde_json::json;

use super::inbound::{PERSON, Person, SINGLE, Seen, Who, answered, submitted};

/// Spec §6, `docs/adapter-spec.md` §4.1, §4.8: with no `answerers`, only the
/// person a direct conversation is with may answer there (the adapter names
/// them from the recipient's destination, `Channel::direct_person`). A
/// stranger's tap delivered into the person's private chat or DM — no
/// platform should let one in, a forwarded message or a forged event could —
/// is refused as in a group, with an alert only they see, and changes
/// nothing; the person then answers.
pub async fn a_stranger_in_the_direct_conversation_is_refused_and_changes_nothing(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let expected = Locale::En.chrome().not_for_you(&person.display_name(PERSON));
    let token = asked.token(ButtonAction::Choose(1));
    let seen = person.platform().tap(Who::Stranger, &asked.record, &token).await;
    // The engine refused it, whatever the platform could show of that.
    let taps = person.sink().taps(&token);
    assert!(
        !taps.is_empty()
            && taps.iter().all(|tap| tap.outcome
                == Ok(Reaction::Notice {
                    text: expected.clone(),
                    alert: true
                })),
        "a stranger's tap in the person's direct conversation MUST reach the engine, which refuses it (§4.1): {taps:?}"
    );
    if person.platform().notices_outside_conversations() || seen != Seen::Nothing {
        let Seen::Notice { text, alert } = &seen else {
            panic!(
                "a stranger's tap in the person's direct conversation MUST be refused with a notice only they see (§4.8), saw {seen:?}"
            );
        };
        assert!(
            *alert || !person.platform().alerts(),
            "a stranger's tap MUST be refused with an alert (§4.8), saw {seen:?}"
        );
        assert_eq!(*text, expected, "the refusal MUST be the engine's");
    }
    // (A typed message there is not asked for here: where an adapter takes
    // whoever writes in a DM for the one it is with — a Discord or Slack DM
    // names its person only by its writer — the driver tells them their own
    // recipient block (§4.10) before the engine sees it, once an hour, and
    // the scenario that checks that block comes later. The engine refuses a
    // stranger's typed reply in a direct conversation as it refuses a tap.)
    let now = person.current(&asked.record.id).await;
    assert_eq!(
        (now.status, now.progress.is_empty()),
        (QuestionStatus::Pending, true),
        "a stranger in the person's direct conversation MUST change nothing"
    );
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Choose(0)).await;
    assert_eq!(seen, submitted(), "the person MUST still be able to answer");
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Staging (Recommended)"]}))
    );
}
