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
        Box::new(askgate_matrix::Matrix),
    ]
}

/// What `check-config` and `serve` tell the admin once a chat platform is
/// configured: the bot finds conversation ids itself
/// (`docs/adapter-spec.md` §4.10).
pub(crate) const FINDING_IDS: &str = "to find a chat's ids, write to the bot from that chat (any message in a direct chat; in a group, /start or a mention of the bot saying start): where no recipient is configured, it answers with the recipient block to paste, and askgate logs it";

/// The line about finding ids, when a chat platform (not only the web page)
/// is configured.
pub(crate) fn finding_ids<'a>(kinds: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    kinds.into_iter().any(|kind| kind != "web").then_some(FINDING_IDS)
}
