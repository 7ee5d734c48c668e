//! [`SlackChannel`]: what Slack can show, and sending and updating prompts.
//!
//! A prompt is one message per part (Block Kit, with `text` for
//! notifications), with link and media unfurling off. A recipient that is a
//! user gets it in the DM askgate opens (`conversations.open`); a channel
//! gets a message, and answers happen in its thread. Posts to one
//! conversation go one at a time, at most about one a second (Slack's
//! posting limit), in their turn ([`SendLines`]); a 429 is waited out there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_adapter::SendLines;
use askgate_adapter::deliver::deliver_parts;
use askgate_adapter::nudge;
use askgate_core::channel::{
    Channel, ChannelError, Delivery, DeliveryError, Destination, MessageRef, Nudge, Outgoing, UserRef,
};
use askgate_core::render::{ButtonLimits, FormLimits, FreeTextInput, Measure};
use askgate_core::{Capabilities, Limit, Presentation, Summary, Unit};
use async_trait::async_trait;
use slack_morphism::prelude::*;
use tokio::time::Instant;

use crate::api::Api;
use crate::limits;
use crate::markup::escape;
use crate::render;

/// The least time between two posts to one conversation (Slack allows about
/// one message a second per channel, with short bursts).
pub const POST_INTERVAL: Duration = Duration::from_secs(1);

/// What people call the platform: summaries of questions answered here
/// name it ("Answered by Alice in Slack").
pub const DISPLAY_NAME: &str = "Slack";

/// What Slack can show: a prompt's part is one section of
/// [`limits::SECTION_TEXT`], counted in UTF-16 units after escaping
/// ([`limits::measure`]); buttons and modals with their texts counted the
/// same way; checkboxes for a multi-select question.
pub fn capabilities() -> Capabilities {
    Capabilities::text(limits::SECTION_TEXT.max)
        .with_measure(Measure::new(limits::measure))
        .with_buttons(
            ButtonLimits::new(limits::MAX_ACTIONS, limits::BUTTON_TEXT.max, limits::ACTION_ID.max)
                .counted_in(Unit::Utf16),
        )
        .with_edits()
        .with_free_text(FreeTextInput::Modal)
        .with_private_notices()
        .with_forms(
            FormLimits::new(
                limits::MAX_FORM_FIELDS,
                limits::MODAL_TITLE.max,
                limits::INPUT_LABEL.max,
                limits::PLACEHOLDER.max,
            )
            .with_checkboxes()
            .counted_in(Unit::Utf16),
        )
}

/// Whether a destination names a person (a Slack user id) rather than a
/// conversation.
pub fn is_user(id: &str) -> bool {
    id.starts_with('U') || id.starts_with('W')
}

/// A Slack app's bot as an askgate channel.
#[derive(Debug, Clone)]
pub struct SlackChannel {
    name: String,
    api: Api,
    capabilities: Capabilities,
    lines: SendLines,
    /// The DM opened for each user id.
    dms: Arc<Mutex<HashMap<String, String>>>,
    /// When each conversation may take its next post. Kept by hand, not
    /// with a rate-limiting crate: posts to a conversation already go one
    /// at a time in its line ([`SendLines`]), so pacing them is one instant
    /// per conversation, and a keyed limiter would add a second queue.
    next_post: Arc<Mutex<HashMap<String, Instant>>>,
}

impl SlackChannel {
    /// A channel named `name` for the bot whose Web API is `api`.
    pub fn new(name: &str, api: Api) -> Self {
        Self {
            name: name.to_owned(),
            api,
            capabilities: capabilities(),
            lines: SendLines::default(),
            dms: Arc::default(),
            next_post: Arc::default(),
        }
    }

    /// The Web API.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// The conversation a destination's messages go to: the DM (opened
    /// once) for a user, else the channel itself.
    async fn conversation(&self, to: &Destination) -> Result<String, ChannelError> {
        if !is_user(&to.conversation) {
            return Ok(to.conversation.clone());
        }
        if let Some(dm) = self
            .dms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&to.conversation)
        {
            return Ok(dm.clone());
        }
        let dm = self.api.open_dm(&to.conversation).await?;
        self.dms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(to.conversation.clone(), dm.clone());
        Ok(dm)
    }

    /// Posts `request` in its conversation's turn, paced, a 429 waited out.
    pub(crate) async fn post(&self, request: SlackApiChatPostMessageRequest) -> Result<MessageRef, ChannelError> {
        let conversation = request.channel.to_string();
        let (api, pace, key) = (self.api.clone(), Arc::clone(&self.next_post), conversation.clone());
        let (channel, ts) = self
            .lines
            .send(&conversation, move || {
                let (api, pace, key, request) = (api.clone(), Arc::clone(&pace), key.clone(), request.clone());
                async move {
                    let at = pace.lock().unwrap_or_else(PoisonError::into_inner).get(&key).copied();
                    if let Some(at) = at {
                        tokio::time::sleep_until(at).await;
                    }
                    let sent = api.post(&request).await;
                    pace.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key, Instant::now() + POST_INTERVAL);
                    sent
                }
            })
            .await?;
        Ok(MessageRef {
            conversation: channel,
            message: ts,
        })
    }
}

/// A message of `blocks` with `text` for notifications, unfurling off.
pub(crate) fn message(channel: &str, text: &str, blocks: Vec<SlackBlock>) -> SlackApiChatPostMessageRequest {
    SlackApiChatPostMessageRequest::new(
        channel.into(),
        SlackMessageContent::new()
            .with_text(render::fallback(text))
            .with_blocks(blocks),
    )
    .with_unfurl_links(false)
    .with_unfurl_media(false)
}

/// A nudge's `text`: `<@U…>` for each person in `mention` (once each), then
/// `text` escaped (so that no `<!channel>`, `<@U…>` or link in it is read),
/// within [`limits::MESSAGE_TEXT`].
fn nudge_text(text: &str, mention: &[UserRef]) -> Result<String, ChannelError> {
    // An id is letters and digits: anything else could close the `<@…>`.
    let people = nudge::people(mention, "Slack", |id| {
        id.bytes().all(|byte| byte.is_ascii_alphanumeric())
    })?;
    let lead = nudge::at_mentions(&people);
    let room = Limit::utf16(limits::MESSAGE_TEXT.max.saturating_sub(limits::MESSAGE_TEXT.len(&lead)));
    Ok(format!("{lead}{}", room.fit(text, escape)))
}

fn update(at: &MessageRef, text: &str, blocks: Vec<SlackBlock>) -> SlackApiChatUpdateRequest {
    SlackApiChatUpdateRequest::new(
        at.conversation.as_str().into(),
        SlackMessageContent::new()
            .with_text(render::fallback(text))
            .with_blocks(blocks),
        at.message.as_str().into(),
    )
}

#[async_trait]
impl Channel for SlackChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        DISPLAY_NAME
    }

    /// A user id (`U…`, `W…`): the DM askgate opens with them.
    fn direct_person(&self, destination: &Destination) -> Option<String> {
        is_user(&destination.conversation).then(|| destination.conversation.clone())
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        let conversation = self.conversation(outgoing.to).await?;
        let conversation = conversation.as_str();
        let thread = outgoing.to.thread.as_deref();
        deliver_parts(outgoing, |index| async move {
            let blocks = match outgoing.prompt {
                Presentation::Buttons(buttons) => render::button_blocks(buttons),
                Presentation::Text(text) => render::text_blocks(text, index),
                other => {
                    return Err(ChannelError::Rejected {
                        reason: format!("this adapter cannot show {other:?}"),
                    });
                }
            };
            let mut request = message(conversation, outgoing.prompt.part_text(index), blocks);
            if let Some(thread) = thread {
                request = request.with_thread_ts(thread.into());
            }
            self.post(request).await
        })
        .await
    }

    async fn finish(&self, delivery: &Delivery, prompt: &Presentation, summary: &Summary) -> Result<(), ChannelError> {
        let Some(first) = delivery.messages.first() else {
            return Ok(());
        };
        let blocks = render::summary_blocks(prompt.part_text(0), summary);
        self.api.update(&update(first, summary.full(), blocks)).await?;
        // A text prompt's Answer… and Skip sit on its last part: remove them there too.
        if let (Presentation::Text(text), Some(last)) = (prompt, delivery.messages.last())
            && text.actions.is_some()
            && last != first
        {
            let index = delivery.messages.len() - 1;
            let part = prompt.part_text(index);
            let without = askgate_core::render::TextPrompt::new(text.parts.clone());
            self.api
                .update(&update(last, part, render::text_blocks(&without, index)))
                .await?;
        }
        Ok(())
    }

    /// One message, without blocks, in the conversation of
    /// `nudge.reply_to` when given (an IM's own id), in its thread: the
    /// destination's thread where the prompt is in one (a reply's `ts` is
    /// no thread), else the prompt's message's. Otherwise a message of its
    /// own in `nudge.to` (the DM opened for a user id), in its thread if it
    /// names one. In the conversation's turn, like any post.
    async fn nudge(&self, nudge: &Nudge<'_>) -> Result<(), ChannelError> {
        let text = nudge_text(nudge.text, nudge.mention)?;
        let (conversation, thread) = match nudge.reply_to {
            Some(message) => (
                message.conversation.clone(),
                Some(nudge.to.thread.clone().unwrap_or_else(|| message.message.clone())),
            ),
            None => (self.conversation(nudge.to).await?, nudge.to.thread.clone()),
        };
        let mut request = SlackApiChatPostMessageRequest::new(
            conversation.as_str().into(),
            SlackMessageContent::new().with_text(text),
        )
        .with_unfurl_links(false)
        .with_unfurl_media(false);
        if let Some(thread) = thread {
            request = request.with_thread_ts(thread.into());
        }
        nudge::logged(&self.name, self.post(request).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str) -> UserRef {
        UserRef::new(id, "Alice")
    }

    #[test]
    fn a_nudge_mentions_exactly_its_people_and_nothing_in_its_text() {
        let text = nudge_text(
            "<b>x</b> @everyone <!channel> *bold*",
            &[person("U1"), person("U1"), person("W2")],
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            text,
            "<@U1> <@W2> &lt;b&gt;x&lt;/b&gt; @everyone &lt;!channel&gt; \u{200B}*bold\u{200B}*"
        );
        assert!(matches!(
            nudge_text("hi", &[person("U1>|<!channel")]),
            Err(ChannelError::Rejected { .. })
        ));
        let long = nudge_text(&"<".repeat(2000), &[person("U1")]).unwrap_or_else(|error| panic!("{error}"));
        assert!(
            limits::MESSAGE_TEXT.fits(&long) && long.ends_with('…'),
            "{}",
            long.len()
        );
        assert!(long.starts_with("<@U1> &lt;"), "{long}");
    }
}
