//! The outbound half of the conformance suite: what an adapter sends and
//! how it edits, checked from outside against its fake platform. An
//! adapter's test implements [`PlatformUnderTest`] for its fake and calls
//! [`run`]; each check panics with the rule it found broken.

use std::time::{Duration, Instant};

use askgate_core::channel::{Channel, ChannelError, Delivery, Destination, Outgoing};
use askgate_core::render::TextPrompt;
use askgate_core::{AskRequest, Locale, Presentation, QuestionId, Summary, render, validate_json};
use async_trait::async_trait;

/// A message as the platform shows it, read back from the fake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The text a person sees (after the platform parsed its markup).
    pub text: String,
    /// The buttons, in order: their labels and payloads.
    pub buttons: Vec<(String, String)>,
    /// How many mentions (that would notify someone) the platform found in it.
    pub mentions: usize,
}

/// An adapter wired to its fake platform.
#[async_trait]
pub trait PlatformUnderTest: Send + Sync {
    /// The adapter, as the engine uses it.
    fn channel(&self) -> &dyn Channel;
    /// A conversation the fake knows, where prompts can be sent.
    fn destination(&self) -> Destination;
    /// The message with this platform id, as the platform shows it now.
    async fn shown(&self, conversation: &str, message: &str) -> Shown;
    /// Makes the next send fail for good ("chat not found" or the like).
    fn refuse_next_send(&self);
    /// Makes the platform answer the next send with its rate limit (a 429
    /// naming a delay); the least delay it will name.
    async fn rate_limit_next_send(&self) -> Duration;
    /// The text of every message in `conversation`, as the platform shows
    /// it, oldest first.
    async fn texts(&self, conversation: &str) -> Vec<String>;
}

/// Every check, in order.
pub async fn run(platform: &dyn PlatformUnderTest) {
    buttons_carry_the_tokens_verbatim_in_order(platform).await;
    text_prompts_are_sent_part_by_part_without_buttons(platform).await;
    a_text_prompt_on_a_channel_with_forms_carries_answer_and_skip(platform).await;
    a_retry_sends_only_the_parts_not_yet_out(platform).await;
    agent_text_is_literal_and_mentions_no_one(platform).await;
    finishing_keeps_the_text_adds_the_summary_and_removes_the_buttons(platform).await;
    a_refusal_is_rejected_not_retried(platform).await;
    a_rate_limit_is_waited_out_and_the_part_arrives_once(platform).await;
    declared_limits_fit_what_core_renders(platform);
}

fn request(json: &str) -> AskRequest {
    validate_json(json).unwrap_or_else(|errors| panic!("the suite's request is invalid: {errors}"))
}

fn single() -> AskRequest {
    request(
        r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?","options":[
        {"label":"Staging (Recommended)","description":"safe"},{"label":"Production"},{"label":"Canary"}]}]}"#,
    )
}

/// The id of the question a check asks: one per check, since a platform may
/// take a second send of the same question's part for a retry and drop it
/// (Discord's `nonce`, from `deliver::idempotency_key`).
fn question_id(check: u8) -> QuestionId {
    QuestionId::parse(&format!("01JCONFORMANCE{check:010}")).unwrap_or_else(|_| unreachable!("a valid id"))
}

async fn deliver(platform: &dyn PlatformUnderTest, question: &QuestionId, presentation: &Presentation) -> Delivery {
    let destination = platform.destination();
    let delivery = platform
        .channel()
        .deliver(&Outgoing::new(question, &destination, presentation))
        .await
        .unwrap_or_else(|error| panic!("MUST deliver a prompt the fake accepts: {error}"));
    assert!(!delivery.messages.is_empty(), "MUST return every message it sent");
    delivery
}

/// Spec §2.1, §2.2: one message with one button per option in order, then
/// Other… and Skip, each carrying its token verbatim.
pub async fn buttons_carry_the_tokens_verbatim_in_order(platform: &dyn PlatformUnderTest) {
    let caps = platform.channel().capabilities().clone();
    let question = question_id(0);
    let presentation = render(&single(), &caps, &question, Locale::En);
    let Presentation::Buttons(prompt) = &presentation else {
        panic!("a channel with buttons MUST get buttons for one single-select question; capabilities {caps:?}");
    };
    let delivery = deliver(platform, &question, &presentation).await;
    assert_eq!(delivery.messages.len(), 1, "buttons MUST go out as one message");
    let shown = platform
        .shown(&delivery.messages[0].conversation, &delivery.messages[0].message)
        .await;
    let mut expected: Vec<(String, String)> = prompt
        .options
        .iter()
        .map(|option| (option.label.clone(), option.token.clone()))
        .collect();
    expected.extend(
        prompt
            .other
            .iter()
            .map(|other| (other.label.clone(), other.token.clone())),
    );
    expected.push((prompt.skip.label.clone(), prompt.skip.token.clone()));
    assert_eq!(
        shown.buttons, expected,
        "buttons MUST be the options in order, then Other… and Skip, with their tokens"
    );
    assert!(
        shown.text.contains("Where should this build go?") && shown.text.contains("safe"),
        "{}",
        shown.text
    );
}

/// Spec §2.1: a text presentation goes out part by part, with no buttons.
pub async fn text_prompts_are_sent_part_by_part_without_buttons(platform: &dyn PlatformUnderTest) {
    let presentation = Presentation::Text(TextPrompt::new(vec![
        "Part one of the prompt".into(),
        "Part two of the prompt".into(),
    ]));
    let delivery = deliver(platform, &question_id(1), &presentation).await;
    assert_eq!(delivery.messages.len(), 2, "each part MUST be one message, in order");
    for (message, expected) in delivery.messages.iter().zip(["Part one", "Part two"]) {
        let shown = platform.shown(&message.conversation, &message.message).await;
        assert!(shown.text.starts_with(expected), "{shown:?}");
        assert!(shown.buttons.is_empty(), "a text prompt MUST have no buttons");
    }
}

/// Spec §2.3, §2.4: markup in agent text arrives literally and no one is mentioned.
pub async fn agent_text_is_literal_and_mentions_no_one(platform: &dyn PlatformUnderTest) {
    let literal = "<b>bold</b> *star* _under_ [link](http://x) `code` @everyone @alice <!channel> &amp;";
    let presentation = Presentation::Text(TextPrompt::new(vec![literal.into()]));
    let delivery = deliver(platform, &question_id(2), &presentation).await;
    let shown = platform
        .shown(&delivery.messages[0].conversation, &delivery.messages[0].message)
        .await;
    let visible: String = shown.text.chars().filter(|c| !is_invisible(*c)).collect();
    assert_eq!(visible, literal, "agent text MUST arrive as literal text");
    assert_eq!(shown.mentions, 0, "agent text MUST NOT mention anyone");
}

/// Zero-width characters an adapter may insert to defuse mentions.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// Spec §3: the message is edited in place, its text kept, the summary
/// added, every button removed; finishing again succeeds.
pub async fn finishing_keeps_the_text_adds_the_summary_and_removes_the_buttons(platform: &dyn PlatformUnderTest) {
    let caps = platform.channel().capabilities().clone();
    let question = question_id(3);
    let presentation = render(&single(), &caps, &question, Locale::En);
    let delivery = deliver(platform, &question, &presentation).await;
    let summary = "Answered by Alice: Production";
    for attempt in ["first", "repeated"] {
        platform
            .channel()
            .finish(&delivery, &presentation, &Summary::new(summary))
            .await
            .unwrap_or_else(|error| panic!("finishing ({attempt}) MUST succeed: {error}"));
    }
    let shown = platform
        .shown(&delivery.messages[0].conversation, &delivery.messages[0].message)
        .await;
    assert!(
        shown.text.contains("Where should this build go?"),
        "the original text MUST stay: {}",
        shown.text
    );
    assert!(
        shown.text.contains(summary),
        "the summary MUST be added: {}",
        shown.text
    );
    assert!(shown.buttons.is_empty(), "every button MUST be removed");
}

/// Spec §2.6: a refusal for good is `Rejected` (the question fails at once).
pub async fn a_refusal_is_rejected_not_retried(platform: &dyn PlatformUnderTest) {
    platform.refuse_next_send();
    let presentation = Presentation::Text(TextPrompt::new(vec!["refused".into()]));
    let destination = platform.destination();
    match platform
        .channel()
        .deliver(&Outgoing::new(&question_id(4), &destination, &presentation))
        .await
    {
        Err(failed) => {
            assert!(
                matches!(&failed.error, ChannelError::Rejected { reason } if !reason.is_empty()),
                "a refusal MUST be ChannelError::Rejected, got {failed:?}"
            );
            assert!(failed.delivery.messages.is_empty(), "nothing went out");
        }
        Ok(delivery) => panic!("a refusal MUST be ChannelError::Rejected, got {delivery:?}"),
    }
}

/// Spec §2.7, §2.8: a platform's rate limit is waited out for the delay it
/// names, and the part sent again in its conversation's turn: the send
/// succeeds, not before the delay, and the person sees the part once.
pub async fn a_rate_limit_is_waited_out_and_the_part_arrives_once(platform: &dyn PlatformUnderTest) {
    let wait = platform.rate_limit_next_send().await;
    let text = "Sent again after a rate limit";
    let presentation = Presentation::Text(TextPrompt::new(vec![text.into()]));
    let started = Instant::now();
    let delivery = deliver(platform, &question_id(7), &presentation).await;
    let waited = started.elapsed();
    assert!(
        waited >= wait,
        "a rate limit MUST be waited out: sent after {waited:?}, asked {wait:?}"
    );
    let [sent] = delivery.messages.as_slice() else {
        panic!("one part, one message: {delivery:?}");
    };
    let shown = platform.shown(&sent.conversation, &sent.message).await;
    assert!(shown.text.contains(text), "{shown:?}");
    let copies = platform
        .texts(&sent.conversation)
        .await
        .iter()
        .filter(|shown| shown.contains(text))
        .count();
    assert_eq!(copies, 1, "the part MUST arrive once");
}

/// Spec §2.1: on a channel with buttons and forms, a text prompt carries
/// Answer… and Skip, with their tokens, on its last part.
pub async fn a_text_prompt_on_a_channel_with_forms_carries_answer_and_skip(platform: &dyn PlatformUnderTest) {
    let caps = platform.channel().capabilities().clone();
    let question = question_id(5);
    let presentation = render(&two_questions(), &caps, &question, Locale::En);
    let Presentation::Text(prompt) = &presentation else {
        panic!("two questions MUST be text");
    };
    let delivery = deliver(platform, &question, &presentation).await;
    let last = delivery
        .messages
        .last()
        .unwrap_or_else(|| unreachable!("deliver checks it"));
    let shown = platform.shown(&last.conversation, &last.message).await;
    let expected: Vec<(String, String)> = prompt
        .actions
        .iter()
        .flat_map(|a| {
            [
                (a.answer.label.clone(), a.answer.token.clone()),
                (a.skip.label.clone(), a.skip.token.clone()),
            ]
        })
        .collect();
    assert_eq!(
        shown.buttons, expected,
        "a text prompt MUST carry exactly Answer… and Skip where core gave them, and no button otherwise"
    );
}

/// Spec §2.5: a retry after a partial delivery sends only the parts not yet
/// out, and returns every message of the prompt.
pub async fn a_retry_sends_only_the_parts_not_yet_out(platform: &dyn PlatformUnderTest) {
    let presentation = Presentation::Text(TextPrompt::new(vec!["First part".into(), "Second part".into()]));
    let question = question_id(6);
    let first = deliver(
        platform,
        &question,
        &Presentation::Text(TextPrompt::new(vec!["First part".into()])),
    )
    .await;
    let destination = platform.destination();
    let resumed = platform
        .channel()
        .deliver(&Outgoing::new(&question, &destination, &presentation).after(&first.messages))
        .await
        .unwrap_or_else(|error| panic!("MUST resume a delivery: {error}"));
    assert_eq!(
        resumed.messages.len(),
        2,
        "every message of the prompt MUST be returned"
    );
    assert_eq!(
        resumed.messages[0], first.messages[0],
        "the part already out MUST NOT be sent again"
    );
    let shown = platform
        .shown(&resumed.messages[1].conversation, &resumed.messages[1].message)
        .await;
    assert!(shown.text.starts_with("Second part"), "{shown:?}");
}

fn two_questions() -> AskRequest {
    request(
        r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?","options":[
        {"label":"Staging (Recommended)"},{"label":"Production"}]},
        {"id":"notify","header":"Notify","question":"Who should be told?","multiSelect":true,"options":[
        {"label":"Team"},{"label":"On-call"}]}]}"#,
    )
}

/// Spec §1: what core renders for the declared capabilities fits them.
pub fn declared_limits_fit_what_core_renders(platform: &dyn PlatformUnderTest) {
    let caps = platform.channel().capabilities();
    if !caps.typed_replies {
        let forms = caps.forms.unwrap_or_else(|| {
            panic!("a channel without typed replies MUST declare forms, or nothing can be answered")
        });
        assert!(
            forms.max_fields >= 3,
            "forms MUST hold three questions where typed replies never arrive"
        );
        assert!(caps.buttons.is_some(), "Answer… needs buttons");
    }
    let Some(limits) = caps.buttons else {
        return;
    };
    let longest = QuestionId::parse(&"Z".repeat(askgate_core::token::MAX_QUESTION_ID_BYTES))
        .unwrap_or_else(|_| unreachable!("a valid id"));
    let Presentation::Buttons(prompt) = render(&single(), caps, &longest, Locale::ZhCn) else {
        panic!("the declared button limits MUST carry a plain single-select question");
    };
    for token in prompt.options.iter().map(|o| &o.token).chain([&prompt.skip.token]) {
        assert!(
            token.len() <= limits.max_token_bytes,
            "{token} exceeds the declared payload limit"
        );
    }
    assert!(
        caps.max_message_chars >= 1000,
        "a message limit under 1000 characters cannot carry a question"
    );
}
