//! askgate's Slack adapter, on slack-morphism.
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | `type = "slack"`: the channel's keys (bot token, mode, app token, signing secret, API URL) and recipients' (`user_id`, or `channel_id` + `answerers`) |
//! | [`channel`] | [`SlackChannel`]: capabilities, posting prompts in each conversation's turn (paced, 429s waited out), updating them into summaries, opening DMs |
//! | [`render`] | what a message says and shows: prompts, summaries and modals as Block Kit (pure functions) |
//! | [`decode`] | clicks, modal submissions and messages → askgate's normalized [`askgate_core::InboundEvent`]s |
//! | [`react`] | the shared driver's [`askgate_adapter::Inbound`]; the engine's reactions as ephemeral messages, modals and thread replies |
//! | [`runtime`] | [`SlackRuntime`]: `auth.test`, then Socket Mode or the HTTP endpoints |
//! | [`socket`] | Socket Mode (slack-morphism's listener): an envelope acknowledged once its event is stored |
//! | [`http`] | the HTTP way in: the events and interactivity endpoints in askgate's server, every request's signature checked |
//! | [`api`] | the Web API methods askgate calls, with Slack's errors and 429 delays kept |
//! | [`bounded`] | the connector that reads each of Slack's answers within a bound |
//! | [`markup`] | escaping text for Slack's mrkdwn |
//! | [`limits`] | Slack's limits on what askgate sends, in UTF-16 units, and the length Slack counts after escaping |
//!
//! The adapter declares what Slack can show and translates; it never
//! decides how a prompt looks (`askgate_core::render`) or what a reply means
//! (the engine). It depends on askgate-core, askgate-adapter and
//! slack-morphism only (`docs/adapter-spec.md`; `docs/channels/slack.md`).

pub mod api;
pub mod bounded;
pub mod channel;
pub mod config;
pub mod decode;
pub mod http;
pub mod limits;
pub mod markup;
pub mod react;
pub mod render;
pub mod runtime;
pub mod socket;

pub use channel::SlackChannel;
pub use config::{Slack, SlackSettings};
pub use runtime::SlackRuntime;
