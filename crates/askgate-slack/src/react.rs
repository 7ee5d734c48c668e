//! Slack's inbound side for the shared driver ([`askgate_adapter::Inbound`]),
//! and the engine's [`Reaction`] shown the Slack way: a notice is an
//! ephemeral message only the acting person sees (`chat.postEphemeral`, in
//! the thread where they acted); Other… and Answer… open a modal with the
//! click's trigger id; a reply to a typed message is a message in its
//! thread (or in the DM).

use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::{Driver, Inbound, Introduction, Taken};
use askgate_core::channel::{
    ConversationKind, Destination, InboundError, InboundEvent, InboundKind, InboundSink, Reaction,
};
use async_trait::async_trait;
use slack_morphism::prelude::*;
use tracing::warn;

use crate::SlackChannel;
use crate::channel::message;
use crate::decode::{Ack, AckKind, Update, decode};
use crate::markup::{code_block, escape};
use crate::render::{fallback, form_view, free_text_view};

impl SlackChannel {
    async fn ephemeral(&self, ack: &Ack, text: &str) {
        let mut request = SlackApiChatPostEphemeralRequest::new(
            ack.channel.as_str().into(),
            ack.user.as_str().into(),
            SlackMessageContent::new().with_text(fallback(text)),
        );
        if let Some(thread) = &ack.thread_ts {
            request = request.with_thread_ts(thread.as_str().into());
        }
        if let Err(error) = self.api().post_ephemeral(&request).await {
            warn!(channel = askgate_core::Channel::name(self), %error, "could not show a Slack notice");
        }
    }

    async fn open(&self, trigger_id: &str, view: SlackView) {
        if let Err(error) = self.api().open_view(trigger_id, view).await {
            warn!(channel = askgate_core::Channel::name(self), %error, "could not open a Slack modal");
        }
    }

    async fn reply(&self, ack: &Ack, text: &str) {
        self.post_reply(ack, message(&ack.channel, text, Vec::new())).await;
    }

    /// `text`, then `snippet` as a block of code, in reply to the message.
    async fn reply_with_code(&self, ack: &Ack, text: &str, snippet: &str) {
        let mut request = message(&ack.channel, text, Vec::new());
        request.content.text = Some(format!("{}\n{}", escape(text), code_block(snippet)));
        self.post_reply(ack, request).await;
    }

    async fn post_reply(&self, ack: &Ack, mut request: SlackApiChatPostMessageRequest) {
        if let Some(thread) = &ack.thread_ts {
            request = request.with_thread_ts(thread.as_str().into());
        }
        // In the conversation's turn, after earlier replies there.
        if let Err(error) = self.post(request).await {
            warn!(channel = askgate_core::Channel::name(self), %error, "could not reply to a Slack message");
        }
    }
}

#[async_trait]
impl Inbound for SlackChannel {
    type Update = Update;
    type Ack = Ack;

    fn name(&self) -> &str {
        askgate_core::Channel::name(self)
    }

    fn decode(&self, update: &Update) -> Option<(InboundEvent, Ack)> {
        decode(update)
    }

    /// The Events API retries an event (a message) until it is answered
    /// with 2xx, and Socket Mode sends an unacknowledged envelope again; a
    /// click or a modal submission comes once, so the driver tells the
    /// person when one was not stored.
    fn redelivers(&self, event: &InboundEvent) -> bool {
        match event.kind {
            InboundKind::TextReply { .. } | InboundKind::Greeting { .. } | InboundKind::NonText { .. } => true,
            // Clicks and submissions, and any kind added later: where it
            // is not known to come again, the person is told.
            _ => false,
        }
    }

    /// A DM is addressed by its person (`user_id`, askgate opens the DM); a
    /// channel by its id, with the writer as the answerer.
    fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
        let id = |id: &str| toml::Value::String(id.to_owned());
        let (conversation, keys) = match event.conversation_kind {
            ConversationKind::Direct => (event.user.id.clone(), vec![("user_id", id(&event.user.id))]),
            ConversationKind::Group => (
                event.conversation.clone(),
                vec![
                    ("channel_id", id(&event.conversation)),
                    ("answerers", toml::Value::Array(vec![id(&event.user.id)])),
                ],
            ),
        };
        Some(Introduction {
            destination: Destination {
                conversation,
                thread: None,
            },
            keys,
        })
    }

    async fn react(&self, ack: Ack, reaction: Reaction, _sink: &Arc<dyn InboundSink>) {
        match (&ack.kind, reaction) {
            (
                AckKind::Click { trigger_id },
                Reaction::AskFreeText {
                    token,
                    title,
                    placeholder,
                    submit,
                    ..
                },
            ) => {
                let view = free_text_view(&token, &title, &placeholder, &submit, &ack.origin());
                self.open(trigger_id, view).await;
            }
            (AckKind::Click { trigger_id }, Reaction::AskForm { form, .. }) => {
                self.open(trigger_id, form_view(&form, &ack.origin())).await;
            }
            (AckKind::Message, Reaction::Reply { text }) => self.reply(&ack, &text).await,
            (AckKind::Message, Reaction::Introduce { text, snippet }) => {
                self.reply_with_code(&ack, &text, &snippet).await;
            }
            (_, Reaction::Notice { text, .. } | Reaction::Reply { text }) => self.ephemeral(&ack, &text).await,
            // Nothing to show, or a modal without a click to open it from.
            _ => {}
        }
    }
}

/// How long a click's acknowledgement (the Socket Mode envelope, the HTTP
/// answer) waits for the engine: Slack gives up at 3 s.
const ANSWER_WITHIN: Duration = Duration::from_millis(2500);

/// Drives a click or a modal submission, and returns once it was taken or
/// [`ANSWER_WITHIN`] passed, whichever comes first: the driver goes on
/// meanwhile. (Slack never sends one again, and one that was not stored is
/// told to the person: there is nothing to hold the acknowledgement for.)
pub async fn take_interaction(driver: Driver<SlackChannel>, update: Update) {
    let handling = tokio::spawn(async move {
        let _ = take(&driver, update).await;
    });
    let _ = tokio::time::timeout(ANSWER_WITHIN, handling).await;
}

/// Drives one update: its sender's name looked up, then the shared driver.
/// A click or a submission whose effect could not be stored is not sent
/// again by Slack ([`Inbound::redelivers`]): the person is told to try
/// again, and it counts as taken. An event that could not be stored is
/// `Err`: leave it unacknowledged.
///
/// # Errors
///
/// The engine could not store an Events API event's effect.
pub async fn take(driver: &Driver<SlackChannel>, update: Update) -> Result<Taken, InboundError> {
    let update = match update.user() {
        Some(user) => {
            let name = driver.inbound().api().display_name(&user).await;
            update.named(name)
        }
        None => update,
    };
    driver.take(&update).await
}
