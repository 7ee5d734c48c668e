//! `type = "web"`: askgate's own page as a configured channel. It has no
//! keys of its own and no inbound connection: the page is served by
//! askgate's server (`web/`), and a recipient's page is named after them.
//! Its prompt preview is a sketch of the page's card.

use std::sync::Arc;

use askgate_adapter::config::{AdapterKind, Address, ChannelSettings, ConfigCheck, ServerContext};
use askgate_adapter::runtime::ChannelRuntime;
use askgate_core::channel::{Channel, Destination};
use askgate_core::{AskRequest, Capabilities, Locale};
use async_trait::async_trait;
use serde::Deserialize;

use super::WebChannel;

/// `type = "web"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Web;

/// A web channel has no keys besides `type`.
#[derive(Debug, Deserialize)]
struct NoKeys {}

#[derive(Debug, Clone)]
struct WebSettings {
    name: String,
}

impl ChannelSettings for WebSettings {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "web"
    }

    fn start(&self) -> Arc<dyn ChannelRuntime> {
        Arc::new(WebRuntime {
            channel: Arc::new(WebChannel::new(&self.name)),
        })
    }
}

struct WebRuntime {
    channel: Arc<WebChannel>,
}

#[async_trait]
impl ChannelRuntime for WebRuntime {
    fn name(&self) -> &str {
        self.channel.name()
    }

    fn channel(&self) -> Arc<dyn Channel> {
        self.channel.clone()
    }

    async fn check(&self) -> Result<String, askgate_adapter::CheckError> {
        Ok("askgate's own page".to_owned())
    }
}

impl AdapterKind for Web {
    fn kind(&self) -> &'static str {
        "web"
    }

    fn display_name(&self) -> &'static str {
        super::DISPLAY_NAME
    }

    fn preview_capabilities(&self) -> Capabilities {
        WebChannel::new(self.kind()).capabilities().clone()
    }

    /// The page draws its cards itself, in its own words: a sketch of the
    /// card, not the presentation the engine hands the web channel.
    fn sketch(&self, request: &AskRequest, locale: Locale) -> Option<String> {
        Some(super::preview(request, locale))
    }

    fn channel(
        &self,
        check: &mut ConfigCheck<'_>,
        name: &str,
        table: toml::Table,
        _server: ServerContext<'_>,
    ) -> Option<Box<dyn ChannelSettings>> {
        let NoKeys {} = check.table(&format!("channels.{name}"), table)?;
        Some(Box::new(WebSettings { name: name.to_owned() }))
    }

    fn recipient(&self, check: &mut ConfigCheck<'_>, name: &str, table: toml::Table) -> Option<Address> {
        let NoKeys {} = check.table(&format!("recipients.{name}"), table)?;
        // The page's conversation is the recipient itself.
        Some(Address {
            destination: Destination {
                conversation: name.to_owned(),
                thread: None,
            },
            answerers: Vec::new(),
        })
    }
}
