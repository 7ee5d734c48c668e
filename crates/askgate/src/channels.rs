//! The channels askgate has: the one place where adapters are wired in.
//! Adding a platform is one adapter crate and one line here; configuration
//! and `serve` handle every kind alike through `askgate_adapter`'s traits.

use askgate_adapter::config::AdapterKind;

/// Every kind of channel, by its `type` value.
pub(crate) fn kinds() -> Vec<Box<dyn AdapterKind>> {
    vec![
        Box::new(askgate_server::Web),
        Box::new(askgate_telegram::Telegram),
        Box::new(askgate_discord::Discord),
        Box::new(askgate_slack::Slack),
    ]
}
