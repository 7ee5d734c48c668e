//! Test doubles for askgate's own tests.
//!
//! [`FakeChannel`] is a channel that records everything the engine asks of it
//! and can be told to fail, so that engine tests exercise the real engine and
//! the real store with no platform. [`telegram::FakeTelegram`] is a fake
//! Telegram Bot API server on `127.0.0.1:0`, with real `Update` samples
//! (Discord and Slack fakes follow). [`conformance`] is the suite every
//! adapter runs against its fake. Nothing here is used outside tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use askgate_core::channel::{Channel, ChannelError, Delivery, Destination, MessageRef};
use askgate_core::render::{ButtonLimits, FreeTextInput};
use askgate_core::{Capabilities, Presentation};
use async_trait::async_trait;
use tokio::sync::Notify;

pub mod conformance;
pub mod fake;
pub mod telegram;

/// One call the engine made on a [`FakeChannel`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `deliver`, with what was delivered and the messages it "sent".
    Deliver {
        /// Where.
        to: Destination,
        /// What.
        presentation: Presentation,
        /// The messages the fake reported.
        delivery: Delivery,
    },
    /// `finish`: the message edited into its summary.
    Finish {
        /// The delivery that was edited.
        delivery: Delivery,
        /// The summary.
        summary: String,
    },
    /// `post`: a reply in a conversation.
    Post {
        /// Where.
        to: Destination,
        /// Threaded to.
        reply_to: Option<MessageRef>,
        /// What.
        text: String,
    },
}

/// A channel that records calls and answers as it is told.
#[derive(Debug, Clone)]
pub struct FakeChannel {
    name: String,
    capabilities: Capabilities,
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    calls: Mutex<Vec<Call>>,
    failures: Mutex<VecDeque<ChannelError>>,
    next_message: Mutex<u64>,
    changed: Notify,
}

impl FakeChannel {
    /// A fake with native buttons (as a chat platform has them).
    pub fn with_buttons(name: &str) -> Self {
        Self::new(
            name,
            Capabilities {
                buttons: Some(ButtonLimits {
                    max_buttons: 25,
                    max_label_chars: 80,
                    max_token_bytes: 64,
                }),
                max_message_chars: 4096,
                edit_messages: true,
                free_text_input: FreeTextInput::Modal,
                private_notices: true,
            },
        )
    }

    /// A fake with these capabilities.
    pub fn new(name: &str, capabilities: Capabilities) -> Self {
        Self {
            name: name.to_owned(),
            capabilities,
            state: Arc::default(),
        }
    }

    /// Makes the next deliveries fail with these errors, in order.
    pub fn fail_next(&self, errors: impl IntoIterator<Item = ChannelError>) {
        lock(&self.state.failures).extend(errors);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }

    /// The deliveries so far.
    pub fn deliveries(&self) -> Vec<(Presentation, Delivery)> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Deliver {
                    presentation, delivery, ..
                } => Some((presentation, delivery)),
                _ => None,
            })
            .collect()
    }

    /// The summaries messages were edited into so far.
    pub fn summaries(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Finish { summary, .. } => Some(summary),
                _ => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the calls so far.
    pub async fn wait_for(&self, done: impl Fn(&[Call]) -> bool) {
        loop {
            let changed = self.state.changed.notified();
            if done(&lock(&self.state.calls)) {
                return;
            }
            changed.await;
        }
    }

    fn record(&self, call: Call) {
        lock(&self.state.calls).push(call);
        self.state.changed.notify_waiters();
    }

    fn message(&self, conversation: &str) -> MessageRef {
        let mut next = lock(&self.state.next_message);
        *next += 1;
        MessageRef {
            conversation: conversation.to_owned(),
            message: next.to_string(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl Channel for FakeChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, to: &Destination, prompt: &Presentation) -> Result<Delivery, ChannelError> {
        let failure = lock(&self.state.failures).pop_front();
        if let Some(error) = failure {
            self.state.changed.notify_waiters();
            return Err(error);
        }
        let count = match prompt {
            Presentation::Buttons(_) => 1,
            Presentation::Text(text) => text.parts.len().max(1),
        };
        let delivery = Delivery {
            messages: (0..count).map(|_| self.message(&to.conversation)).collect(),
        };
        self.record(Call::Deliver {
            to: to.clone(),
            presentation: prompt.clone(),
            delivery: delivery.clone(),
        });
        Ok(delivery)
    }

    async fn finish(&self, delivery: &Delivery, _prompt: &Presentation, summary: &str) -> Result<(), ChannelError> {
        self.record(Call::Finish {
            delivery: delivery.clone(),
            summary: summary.to_owned(),
        });
        Ok(())
    }

    async fn post(
        &self,
        to: &Destination,
        reply_to: Option<&MessageRef>,
        text: &str,
    ) -> Result<MessageRef, ChannelError> {
        let message = self.message(&to.conversation);
        self.record(Call::Post {
            to: to.clone(),
            reply_to: reply_to.cloned(),
            text: text.to_owned(),
        });
        Ok(message)
    }
}
