//! [`DiscordChannel`]: what Discord can show, and sending and editing prompts.
//!
//! A prompt is one message per part, with `allowed_mentions: {"parse": []}`
//! so that nothing in it pings anyone, a `nonce` with `enforce_nonce` so
//! that Discord itself drops a repeated send, and markdown escaped. Buttons
//! are components: the options in the first row (the first `Primary`), then
//! Other… and Skip; a text prompt's Answer… and Skip go on its last part.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use askgate_adapter::SendLines;
use askgate_adapter::deliver::{deliver_parts, idempotency_key};
use askgate_adapter::nudge;
use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, Destination, MessageRef, Nudge, Outgoing};
use askgate_core::render::{ButtonLimits, FormLimits, FreeTextInput, Measure};
use askgate_core::{Capabilities, Presentation, Summary};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::limits;
use crate::render::{action_rows, button_rows, finished_content, message_body, nudge_body};
use crate::rest::Rest;

/// The prefix of a recipient that is a user: askgate opens the DM itself.
pub const USER_PREFIX: &str = "user:";

/// What people call the platform: summaries of questions answered here
/// name it ("Answered by Alice in Discord").
pub const DISPLAY_NAME: &str = "Discord";

/// What Discord can show: messages of [`limits::CONTENT`] counted after
/// escaping ([`limits::measure`]: a text heavy with markdown characters
/// takes more messages, and is never sent unescaped), buttons, modals.
/// `typed_replies` is whether typed messages reach askgate (the gateway
/// with the Message Content intent); without them a text prompt carries
/// Answer… and Skip.
pub fn capabilities(typed_replies: bool) -> Capabilities {
    let capabilities = Capabilities::text(limits::CONTENT.max)
        .with_measure(Measure::new(limits::measure))
        .with_buttons(ButtonLimits::new(
            limits::MAX_BUTTONS,
            limits::BUTTON_LABEL.max,
            limits::CUSTOM_ID.max,
        ))
        .with_edits()
        .with_free_text(FreeTextInput::Modal)
        .with_private_notices()
        .with_forms(FormLimits::new(
            limits::MAX_MODAL_FIELDS,
            limits::MODAL_TITLE.max,
            limits::TEXT_INPUT_LABEL.max,
            limits::TEXT_INPUT_PLACEHOLDER.max,
        ));
    if typed_replies {
        capabilities
    } else {
        capabilities.without_typed_replies()
    }
}

/// A Discord bot as an askgate channel.
#[derive(Debug, Clone)]
pub struct DiscordChannel {
    name: String,
    rest: Rest,
    /// What it can show with typed replies, and without.
    capabilities: Arc<[Capabilities; 2]>,
    /// Whether typed replies arrive: settled when the platform answers the
    /// runtime's check, which may come after the engine took the channel.
    typed_replies: Arc<AtomicBool>,
    lines: SendLines,
    /// The DM channel opened for each user id.
    dms: Arc<Mutex<HashMap<String, String>>>,
    /// When each channel's message bucket has room again, after a send used
    /// its last place (Discord's `X-RateLimit-*` headers).
    refills: Arc<Mutex<HashMap<String, tokio::time::Instant>>>,
}

/// The part of Discord's channel object askgate keeps (a DM it opened).
#[derive(Debug, Deserialize)]
struct SentChannel {
    id: String,
}

/// The part of Discord's message object askgate keeps.
#[derive(Debug, Deserialize)]
pub(crate) struct SentMessage {
    pub(crate) id: String,
    pub(crate) channel_id: String,
}

impl DiscordChannel {
    /// A channel named `name` for the bot whose REST client is `rest`.
    pub fn new(name: &str, rest: Rest, typed_replies: bool) -> Self {
        Self {
            name: name.to_owned(),
            rest,
            capabilities: Arc::new([capabilities(false), capabilities(true)]),
            typed_replies: Arc::new(AtomicBool::new(typed_replies)),
            lines: SendLines::default(),
            dms: Arc::default(),
            refills: Arc::default(),
        }
    }

    /// Whether typed replies arrive from now on (the gateway with the
    /// Message Content intent): what prompts rendered after this show.
    pub fn set_typed_replies(&self, typed_replies: bool) {
        self.typed_replies.store(typed_replies, Ordering::SeqCst);
    }

    /// The REST client.
    pub fn rest(&self) -> &Rest {
        &self.rest
    }

    /// The Discord channel a destination's messages go to: the thread when
    /// there is one, the DM (opened once) for a user.
    async fn channel_id(&self, to: &Destination) -> Result<String, ChannelError> {
        if let Some(thread) = &to.thread {
            return Ok(thread.clone());
        }
        let Some(user) = to.conversation.strip_prefix(USER_PREFIX) else {
            return Ok(to.conversation.clone());
        };
        if let Some(dm) = self.dms.lock().unwrap_or_else(PoisonError::into_inner).get(user) {
            return Ok(dm.clone());
        }
        let dm: SentChannel = self
            .rest
            .post("/users/@me/channels", &json!({ "recipient_id": user }))
            .await?;
        self.dms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(user.to_owned(), dm.id.clone());
        Ok(dm.id)
    }

    /// Posts `body` to `channel_id` in its turn ([`SendLines`]): after the
    /// channel's bucket has room (Discord said when, with the last send), and
    /// a 429 that comes anyway is waited out and sent again there.
    pub(crate) async fn send(&self, channel_id: &str, body: Value) -> Result<MessageRef, ChannelError> {
        let (rest, refills) = (self.rest.clone(), Arc::clone(&self.refills));
        let path = format!("/channels/{channel_id}/messages");
        let channel = channel_id.to_owned();
        let sent: SentMessage = self
            .lines
            .send(channel_id, move || {
                let (rest, refills, path, body, channel) = (
                    rest.clone(),
                    Arc::clone(&refills),
                    path.clone(),
                    body.clone(),
                    channel.clone(),
                );
                async move {
                    let refill = refills
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get(&channel)
                        .copied();
                    if let Some(refill) = refill {
                        tokio::time::sleep_until(refill).await;
                    }
                    let (sent, pause) = rest.post_paced(&path, &body).await?;
                    if let Some(pause) = pause {
                        refills
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(channel, tokio::time::Instant::now() + pause);
                    }
                    Ok(sent)
                }
            })
            .await?;
        Ok(MessageRef {
            conversation: sent.channel_id,
            message: sent.id,
        })
    }
}

/// A nonce of at most 25 characters (Discord's limit) for an idempotency
/// key: FNV-1a, which is stable across processes and versions.
pub(crate) fn nonce(key: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("ag{hash:016x}")
}

#[async_trait]
impl Channel for DiscordChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        DISPLAY_NAME
    }

    /// `user:<id>`, the DM askgate opens with that user; a channel id names
    /// no one (a DM channel's own id is never configured).
    fn direct_person(&self, destination: &Destination) -> Option<String> {
        destination
            .conversation
            .strip_prefix(USER_PREFIX)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities[usize::from(self.typed_replies.load(Ordering::SeqCst))]
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        let channel_id = self.channel_id(outgoing.to).await?;
        let channel_id = channel_id.as_str();
        deliver_parts(outgoing, |index| async move {
            let nonce = Some(nonce(&idempotency_key(outgoing, index)));
            let body = match outgoing.prompt {
                Presentation::Buttons(buttons) => message_body(&buttons.text, button_rows(buttons), nonce),
                Presentation::Text(text) => {
                    let part = text.parts.get(index).map_or("", String::as_str);
                    let components = match &text.actions {
                        Some(actions) if text.actions_part() == Some(index) => action_rows(actions),
                        _ => Vec::new(),
                    };
                    message_body(part, components, nonce)
                }
                other => {
                    return Err(ChannelError::Rejected {
                        reason: format!("this adapter cannot show {other:?}"),
                    });
                }
            };
            self.send(channel_id, body).await
        })
        .await
    }

    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        let Some(first) = delivery.messages.first() else {
            return Ok(());
        };
        let body = json!({
            "content": finished_content(prompt.part_text(0), summary),
            "components": [],
            "allowed_mentions": {"parse": []},
        });
        let path = format!("/channels/{}/messages/{}", first.conversation, first.message);
        self.rest.patch::<serde::de::IgnoredAny>(&path, &body).await?;
        // A text prompt's Answer… and Skip sit on its last part: remove them there too.
        if let (Presentation::Text(text), Some(last)) = (prompt, delivery.messages.last())
            && text.actions.is_some()
            && last != first
        {
            let path = format!("/channels/{}/messages/{}", last.conversation, last.message);
            self.rest
                .patch::<serde::de::IgnoredAny>(&path, &json!({"components": []}))
                .await?;
        }
        Ok(())
    }

    /// One message in the conversation of `nudge.reply_to` when given (a
    /// DM's own channel, a thread), a reply to it; otherwise in
    /// `nudge.to`'s channel, thread or DM, as a prompt goes. In the
    /// channel's turn, like any message.
    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        let body = nudge_body(nudge.text, nudge.mention, nudge.reply_to)?;
        let sent = match nudge.reply_to {
            Some(message) => self.send(&message.conversation, body).await,
            None => match self.channel_id(nudge.to).await {
                Ok(channel_id) => self.send(&channel_id, body).await,
                Err(error) => Err(error),
            },
        };
        nudge::logged(&self.name, sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_short_stable_and_distinct() {
        let a = nonce("01JCONFORMANCE0000000000-0");
        assert!(a.len() <= 25, "{a}");
        assert_eq!(a, nonce("01JCONFORMANCE0000000000-0"));
        assert_ne!(a, nonce("01JCONFORMANCE0000000000-1"));
    }
}
