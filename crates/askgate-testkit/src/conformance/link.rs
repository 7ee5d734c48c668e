//! `/link` in the person's own direct conversation, a scenario of the
//! inbound suite ([`super::inbound::run`] runs it): the bot answers there
//! with the person's own page link, and the question waiting there is not
//! answered by it.

use std::collections::HashMap;

use askgate_core::{ButtonAction, Locale};
use askgate_store::QuestionStatus;
use serde_json::json;

use super::inbound::{PERSON, Person, SINGLE, Seen, Who, answered, submitted};

/// The link the scenario gives the person: a page key's shape.
const LINK: &str = "http://askgate.test/web/conformance-person-key-0123456789abcdefgh";

/// `docs/adapter-spec.md` §4.11: `/link` typed in the person's direct
/// conversation reaches the engine, which answers with their own page link
/// in that conversation (the adapter sends it without a link preview, which
/// would have the platform fetch the link); the question waiting there is
/// untouched, and the person then answers it as before.
pub async fn link_in_the_direct_conversation_answers_with_the_persons_own_link(person: &Person<'_>) {
    person
        .engine()
        .set_page_links(HashMap::from([(PERSON.to_owned(), LINK.to_owned())]));
    let mut asked = person.ask(PERSON, SINGLE).await;
    let seen = person
        .platform()
        .type_reply(Who::Recipient, &asked.record, "/link")
        .await;
    assert_eq!(
        seen,
        Seen::Reply {
            text: Locale::En.chrome().page_link(LINK)
        },
        "/link in the person's direct conversation MUST be answered there with their own page link (§4.11)"
    );
    let now = person.current(&asked.record.id).await;
    assert_eq!(
        (now.status, now.progress.is_empty()),
        (QuestionStatus::Pending, true),
        "/link MUST NOT answer the question waiting in the conversation"
    );
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Choose(0)).await;
    assert_eq!(seen, submitted(), "the person MUST still be able to answer");
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Staging (Recommended)"]}))
    );
}
