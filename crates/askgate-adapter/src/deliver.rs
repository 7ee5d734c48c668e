//! Delivering a prompt part by part, resuming after the parts an earlier
//! attempt sent ([`askgate_core::Outgoing::sent`]) and reporting the parts
//! that went out when a later one fails, so that no retry posts a prompt
//! twice and no failure loses track of a message.

use std::future::Future;

use askgate_core::channel::{ChannelError, Delivery, DeliveryError, MessageRef, Outgoing};

/// Sends the parts of `outgoing` that are not out yet, in order, each with
/// `send_part(index)`; every message of the prompt on success, or the error
/// with every message that is out.
pub async fn deliver_parts<F, Fut>(outgoing: &Outgoing<'_>, mut send_part: F) -> Result<Delivery, DeliveryError>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<MessageRef, ChannelError>>,
{
    let mut sent = outgoing.sent.to_vec();
    for index in sent.len()..outgoing.part_count() {
        match send_part(index).await {
            Ok(message) => sent.push(message),
            Err(error) => return Err(DeliveryError::new(error, sent)),
        }
    }
    Ok(Delivery::new(sent))
}

/// A key that names one part of one question's prompt, for platforms that
/// deduplicate sends by a key of the sender's (Discord's `nonce`).
pub fn idempotency_key(outgoing: &Outgoing<'_>, part: usize) -> String {
    format!("{}-{part}", outgoing.question)
}

#[cfg(test)]
mod tests {
    use askgate_core::channel::Destination;
    use askgate_core::render::TextPrompt;
    use askgate_core::{Presentation, QuestionId};

    use super::*;

    fn message(id: usize) -> MessageRef {
        MessageRef {
            conversation: "c".into(),
            message: id.to_string(),
        }
    }

    #[tokio::test]
    async fn a_retry_sends_only_the_parts_that_are_not_out_and_reports_partial_progress() {
        let question = QuestionId::parse("q1").unwrap_or_else(|_| unreachable!());
        let to = Destination {
            conversation: "c".into(),
            thread: None,
        };
        let prompt = Presentation::Text(TextPrompt::new(vec!["a".into(), "b".into(), "c".into()]));
        let first = Outgoing::new(&question, &to, &prompt);
        let mut calls = Vec::new();
        let failed = deliver_parts(&first, |index| {
            calls.push(index);
            async move {
                if index == 1 {
                    Err(ChannelError::Unavailable { reason: "502".into() })
                } else {
                    Ok(message(index))
                }
            }
        })
        .await
        .expect_err("the second part fails");
        assert_eq!(failed.delivery.messages, [message(0)]);
        assert!(!failed.delivery.complete);

        let second = first.after(&failed.delivery.messages);
        let delivery = deliver_parts(&second, |index| {
            calls.push(index);
            async move { Ok(message(index)) }
        })
        .await
        .expect("the rest goes out");
        assert_eq!(calls, [0, 1, 1, 2], "part 0 is never sent twice");
        assert_eq!(delivery.messages, [message(0), message(1), message(2)]);
        assert!(delivery.complete);
        assert_eq!(idempotency_key(&second, 2), "q1-2");
    }
}
