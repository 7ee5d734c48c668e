//! Matrix's inbound side for the shared driver ([`askgate_adapter::Inbound`]),
//! and the engine's [`Reaction`] shown the Matrix way: Matrix has no message
//! only one person sees, so every reaction is a reply, in the thread where
//! the event was; a notice (a refusal, "Answer submitted") is an
//! `m.notice`, a reply an `m.text`. Other… is a reply that asks the person to reply to it;
//! askgate attaches it to the question, so that the reply is the answer.
//!
//! A reply waits for its room's turn, so it is queued rather than awaited:
//! the sync loop must meanwhile go on taking everyone else's events.

use std::sync::Arc;

use askgate_adapter::{Inbound, Introduction};
use askgate_core::Limit;
use askgate_core::channel::{InboundEvent, InboundSink, Reaction};
use askgate_core::chrome::MAX_NAME_CHARS;
use async_trait::async_trait;
use serde_json::Value;
use tracing::warn;

use crate::MatrixChannel;
use crate::decode::{Ack, Update, decode};
use crate::render::{self, MESSAGE, Relation};

#[async_trait]
impl Inbound for MatrixChannel {
    type Update = Update;
    type Ack = Ack;

    fn name(&self) -> &str {
        askgate_core::Channel::name(self)
    }

    fn decode(&self, update: &Update) -> Option<(InboundEvent, Ack)> {
        decode(update, self.user_id())
    }

    /// An event comes again until the sync token after it is saved, which
    /// the sync loop does only once every event before it is stored.
    fn redelivers(&self, _event: &InboundEvent) -> bool {
        true
    }

    async fn react(&self, ack: Ack, reaction: Reaction, sink: &Arc<dyn InboundSink>) {
        let relation = || Relation {
            thread: ack.thread.as_deref(),
            reply_to: Some(ack.reply_to.as_str()),
        };
        let (content, attach): (Value, _) = match reaction {
            Reaction::Notice { text, .. } => (render::notice(&text, relation()), None),
            Reaction::Reply { text } => (render::message(&text, relation()), None),
            Reaction::Introduce { text, snippet } => (render::introduction(&text, &snippet, relation()), None),
            Reaction::AskFreeText { question, title, .. } => {
                let name = Limit::code_points(MAX_NAME_CHARS).ellipsize(&ack.user.display_name);
                let text = format!("{name}, {title}: reply to this message.");
                (render::message(&text, relation()), Some(question))
            }
            // Nothing to show; and Matrix has no forms (its capabilities
            // declare none): nothing asks for one.
            _ => return,
        };
        let (channel, sink) = (self.clone(), Arc::clone(sink));
        let room_id = ack.room.clone();
        self.queue(&ack.room, async move {
            let sent = match channel.room(&room_id).await {
                Ok(room) => channel.send_now(room, MESSAGE, content).await,
                Err(error) => Err(error),
            };
            match (sent, attach) {
                (Ok(message), Some(question)) => {
                    sink.attach(askgate_core::Channel::name(&channel), &question, message)
                        .await;
                }
                (Ok(_), None) => {}
                (Err(error), _) => {
                    warn!(channel = askgate_core::Channel::name(&channel), %error, "could not reply to a Matrix event");
                }
            }
        });
    }

    fn introduction(&self, event: &InboundEvent) -> Option<Introduction> {
        Some(crate::config::introduction(event))
    }
}
