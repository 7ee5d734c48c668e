//! The scenarios of the inbound suite ([`super::run`] runs those that apply):
//! each checks one rule of `docs/adapter-spec.md` §4 against a [`Person`]
//! and panics with the rule it found broken.

use std::time::{Duration, Instant};

use askgate_core::channel::Reaction;
use askgate_core::form::FormValue;
use askgate_core::{ButtonAction, Locale};
use askgate_store::QuestionStatus;
use serde_json::json;

use super::person::{GROUP, PATIENCE, PERSON, Person, SINGLE, SLOW_STORE, Seen, TWO, Who, answered, notice, submitted};

/// Spec §4.10: someone no recipient is configured for who writes to the bot
/// is told, in that conversation, the recipient block to configure — the
/// channel's name and their own id in it — and nothing reaches the engine.
pub async fn a_stranger_who_writes_is_told_the_recipient_block(person: &Person<'_>) {
    let handled = person.sink().handled().len();
    let seen = person.platform().write_privately(Who::Stranger, "hello?").await;
    let Seen::Reply { text } = &seen else {
        panic!("a stranger who writes MUST be told the recipient block (§4.10), saw {seen:?}");
    };
    assert!(
        text.starts_with(Locale::En.chrome().introduce()),
        "the block MUST be introduced in the engine's words: {text}"
    );
    let channel = person.platform().channel();
    for line in ["[recipients.".to_owned(), format!("channel = \"{}\"", channel.name())] {
        assert!(text.contains(&line), "the block MUST hold {line:?}: {text}");
    }
    assert_eq!(
        person.sink().handled().len(),
        handled,
        "an introduction MUST be decided without the engine (§4.10)"
    );
}

/// Spec §4.1, §4.5, §4.8: a tap on an option reaches the engine as
/// `ButtonPressed` with the button's token, the person sees "Answer
/// submitted", and the waiting agent gets exactly the option tapped.
pub async fn a_tap_on_an_option_answers_the_waiting_agent(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Choose(1)).await;
    assert_eq!(
        seen,
        submitted(),
        "a tap that answered MUST show the engine's notice to the person who tapped (§4.8)"
    );
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Production"]})),
        "the tap MUST answer with the option its token names (§4.5)"
    );
}

/// Spec §4.5, §4.8: typed replies to the question's message reach the
/// engine as `TextReply`, a partial one is confirmed by a reply naming what
/// is still needed, and the last one answers.
pub async fn typed_replies_answer_over_several_messages(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, TWO).await;
    let platform = person.platform();
    let seen = platform.type_reply(Who::Recipient, &asked.record, "1: 2").await;
    assert_eq!(
        seen,
        Seen::Reply {
            text: Locale::En.chrome().got_still_needed(&["Deploy"], &["Notify"])
        },
        "a partial typed answer MUST be confirmed by a reply naming what is still needed (§4.8)"
    );
    assert_eq!(person.current(&asked.record.id).await.status, QuestionStatus::Pending);
    platform.type_reply(Who::Recipient, &asked.record, "2: 1, 3").await;
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Production"], "notify": ["Team", "Pager"]})),
        "typed replies MUST reach the engine as typed (§4.5)"
    );
}

/// Spec §4.5, §4.8: Answer… opens a form with one field per question
/// (`AskForm`), and its submission (`FormSubmitted` with the form's token)
/// answers every question.
pub async fn answer_opens_a_form_whose_submission_answers(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, TWO).await;
    let token = asked.token(ButtonAction::Answer);
    let platform = person.platform();
    let seen = platform.tap(Who::Recipient, &asked.record, &token).await;
    assert_eq!(
        seen,
        Seen::Form {
            fields: vec!["deploy".into(), "notify".into()]
        },
        "Answer… MUST open a form with one field per question, in order (§4.8)"
    );
    let values = vec![FormValue::typed("deploy", "2"), FormValue::typed("notify", "1, 3")];
    let seen = platform
        .submit_form(Who::Recipient, &asked.record, &token, values)
        .await;
    assert_eq!(
        seen,
        submitted(),
        "a submitted form that answered MUST be confirmed (§4.8)"
    );
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Production"], "notify": ["Team", "Pager"]})),
        "each field MUST reach the engine named by its question id (§4.5)"
    );
}

/// Spec §4.8: Other… opens a free-text input for the person who tapped
/// (`AskFreeText`), and what they write there is their answer.
pub async fn other_opens_a_free_text_input_whose_words_answer(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Other).await;
    assert_eq!(
        seen,
        Seen::FreeTextInput,
        "Other… MUST open a free-text input for the person who tapped (§4.8)"
    );
    let seen = person
        .platform()
        .answer_free_text(Who::Recipient, &asked.record, "own words")
        .await;
    assert!(
        seen == Seen::Nothing || seen == submitted(),
        "own words that answer MUST NOT be refused, saw {seen:?}"
    );
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["own words"]})),
        "the words written after Other… MUST be the answer"
    );
}

/// Spec §4.1, §4.8: the adapter does not judge who may answer; a stranger's
/// tap reaches the engine, which refuses it with an alert only the stranger
/// sees, and changes nothing; the person then answers.
pub async fn a_stranger_is_refused_and_changes_nothing(person: &Person<'_>) {
    let to = if person.features().groups { GROUP } else { PERSON };
    let mut asked = person.ask(to, SINGLE).await;
    let seen = person.tap(Who::Stranger, &asked, ButtonAction::Choose(1)).await;
    let Seen::Notice { text, alert } = &seen else {
        panic!("a stranger's tap MUST be refused with an alert only they see (§4.8), saw {seen:?}");
    };
    assert!(
        *alert || !person.platform().alerts(),
        "a stranger's tap MUST be refused with an alert (§4.8), saw {seen:?}"
    );
    if person.features().sink {
        let expected = Locale::En.chrome().not_for_you(&person.display_name(to));
        assert_eq!(*text, expected, "the refusal MUST be the engine's");
    }
    if person.typed_replies() && person.features().groups {
        // A typed reply to the question's message is refused the same way.
        let seen = person.platform().type_reply(Who::Stranger, &asked.record, "2").await;
        let refused = match &seen {
            Seen::Reply { text } | Seen::Notice { text, .. } => {
                !person.features().sink || *text == Locale::En.chrome().not_for_you(&person.display_name(to))
            }
            _ => false,
        };
        assert!(
            refused,
            "a stranger's typed reply MUST be refused visibly (§4.8), saw {seen:?}"
        );
    }
    let now = person.current(&asked.record.id).await;
    assert_eq!(
        (now.status, now.progress.is_empty()),
        (QuestionStatus::Pending, true),
        "a stranger MUST change nothing"
    );
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Choose(0)).await;
    assert_eq!(seen, submitted(), "the person MUST still be able to answer");
    assert_eq!(
        asked.result().await,
        answered(&json!({"deploy": ["Staging (Recommended)"]}))
    );
}

/// Spec §4.8: a second tap on an answered question is told so, and the
/// question is resolved once, by the first.
pub async fn a_second_tap_is_told_the_question_was_already_answered(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    assert_eq!(
        person.tap(Who::Recipient, &asked, ButtonAction::Choose(1)).await,
        submitted()
    );
    let first = person.current(&asked.record.id).await;
    assert_eq!(first.status, QuestionStatus::Answered);
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Choose(0)).await;
    if person.features().sink {
        assert_eq!(
            seen,
            notice(Locale::En.chrome().already_answered(), false),
            "a tap on an answered question MUST be told so (§4.8)"
        );
    } else {
        // The page words its own notices; it must not claim success.
        assert!(
            matches!(&seen, Seen::Notice { .. }) && seen != submitted(),
            "a tap on an answered question MUST be told it ended, saw {seen:?}"
        );
    }
    let after = person.current(&asked.record.id).await;
    assert_eq!(
        after.resolution, first.resolution,
        "the question MUST be resolved once, by the first tap"
    );
    assert_eq!(asked.result().await, answered(&json!({"deploy": ["Production"]})));
}

/// Spec §4.5, §4.8: Skip ends the question with no answer for the agent.
pub async fn skip_gives_the_agent_no_answer(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let seen = person.tap(Who::Recipient, &asked, ButtonAction::Skip).await;
    assert_eq!(
        seen,
        notice(Locale::En.chrome().skip_submitted(), false),
        "Skip MUST be confirmed (§4.8)"
    );
    assert_eq!(asked.result().await, json!({"status": "no_answer"}));
    assert_eq!(person.current(&asked.record.id).await.status, QuestionStatus::Skipped);
}

/// Spec §4.6, §4.7: with a store slower than any first-response budget, a
/// tap is still applied once and shown; a platform with a budget defers.
pub async fn a_slow_store_still_applies_the_tap_once(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let token = asked.token(ButtonAction::Choose(1));
    let deferred_before = person.platform().deferrals();
    person.sink().delay_next(1, SLOW_STORE);
    let started = Instant::now();
    let seen = person.platform().tap(Who::Recipient, &asked.record, &token).await;
    assert!(
        started.elapsed() >= SLOW_STORE,
        "the suite's slow store was not in the tap's way: it took {:?}",
        started.elapsed()
    );
    assert_eq!(
        seen,
        submitted(),
        "a tap MUST be shown once the engine decided, however long the store took (§4.7)"
    );
    assert_eq!(asked.result().await, answered(&json!({"deploy": ["Production"]})));
    let taps = person.sink().taps(&token);
    let applied = taps
        .iter()
        .filter(|handled| handled.outcome.as_ref().is_ok_and(|r| *r != Reaction::Nothing))
        .count();
    assert_eq!(
        applied, 1,
        "a slow tap MUST be applied once; any redelivery is recognized: {taps:?}"
    );
    if let (Some(before), Some(after)) = (deferred_before, person.platform().deferrals()) {
        assert!(
            after > before,
            "a platform with a first-response budget MUST defer when the engine has not answered within it (§4.7)"
        );
    }
}

/// Spec §4.6: an event whose effect could not be stored is not lost. Where
/// the platform redelivers, the adapter does not acknowledge it and it comes
/// again, without the person tapping again; where it never does, the person
/// is told it was not saved, and their next tap answers.
pub async fn a_failing_store_loses_no_answer(person: &Person<'_>) {
    let mut asked = person.ask(PERSON, SINGLE).await;
    let token = asked.token(ButtonAction::Choose(1));
    person.sink().fail_next(1);
    let seen = person.platform().tap(Who::Recipient, &asked.record, &token).await;
    let taps = person.sink().taps(&token);
    let Some(failed) = taps.first().filter(|handled| handled.outcome.is_err()) else {
        panic!("the suite's failing store was not in the tap's way: {taps:?}");
    };
    if person.platform().redelivers(&failed.event) {
        let ended = person.ended_within(&asked.record.id, Duration::from_secs(1)).await;
        assert!(
            ended.is_some(),
            "an event whose effect was not stored MUST NOT be acknowledged: it was never delivered again (§4.6); \
             the question is still pending {PATIENCE:?} after the tap"
        );
        let taps = person.sink().taps(&token);
        assert!(
            taps.iter()
                .all(|handled| handled.event.event_id == failed.event.event_id),
            "the person tapped once: only that event may come again, under its own id (§4.2): {taps:?}"
        );
        let applied = taps
            .iter()
            .filter(|handled| handled.outcome.as_ref().is_ok_and(|r| *r != Reaction::Nothing))
            .count();
        assert_eq!(applied, 1, "the redelivered tap MUST be applied once: {taps:?}");
        assert_eq!(
            seen,
            submitted(),
            "the redelivered tap MUST be shown as answered, and the failure not at all"
        );
    } else {
        assert_eq!(
            seen,
            notice(Locale::En.chrome().not_saved(), person.platform().alerts()),
            "where the platform never redelivers, the person MUST be told the answer was not saved (§4.6)"
        );
        assert_eq!(
            person.current(&asked.record.id).await.status,
            QuestionStatus::Pending,
            "an answer that was not stored MUST NOT count"
        );
        let seen = person.platform().tap(Who::Recipient, &asked.record, &token).await;
        assert_eq!(seen, submitted(), "trying again MUST answer");
    }
    assert_eq!(asked.result().await, answered(&json!({"deploy": ["Production"]})));
}
