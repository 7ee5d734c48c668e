//! Where each configured channel stands with its platform — `connecting`,
//! `up` or `refused` ([`ChannelState`]) — as `askgate serve` brings it up
//! ([`askgate_adapter::connect::bring_up`]), for `/readyz`'s `channels`
//! and the `askgate_channel_up` metric.
//!
//! A channel that is down does not make askgate not ready: the web page,
//! `/v1` and MCP serve, questions wait for their chat surface (their
//! deliveries are retried) or are answered on the page, and a load
//! balancer that took askgate out of service would take that away too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use askgate_adapter::{ChannelState, StateReport};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::Metrics;

/// The channels' states. Cheap to clone; every clone sees the same states.
#[derive(Debug, Clone)]
pub struct ChannelStates(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    states: watch::Sender<BTreeMap<String, ChannelState>>,
    metrics: Option<Arc<Metrics>>,
}

impl Default for ChannelStates {
    /// No channels, and no metric kept.
    fn default() -> Self {
        Self(Arc::new(Inner {
            states: watch::channel(BTreeMap::new()).0,
            metrics: None,
        }))
    }
}

impl ChannelStates {
    /// States whose changes also set `metrics`' `askgate_channel_up`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self(Arc::new(Inner {
            states: watch::channel(BTreeMap::new()).0,
            metrics: Some(metrics),
        }))
    }

    /// Every channel's state now, by name.
    pub fn snapshot(&self) -> BTreeMap<String, ChannelState> {
        self.0.states.borrow().clone()
    }

    /// Waits until every channel's first attempt to come up has ended (it
    /// is up, refused, or `connecting` with the reason it is not up yet),
    /// for at most `within`: `serve` says where each stands, then serves
    /// whatever the platforms do.
    pub async fn first_attempts(&self, within: Duration) {
        let mut states = self.0.states.subscribe();
        let attempted = |states: &BTreeMap<String, ChannelState>| {
            states
                .values()
                .all(|state| *state != ChannelState::Connecting { reason: None })
        };
        let _ = tokio::time::timeout(within, states.wait_for(attempted)).await;
    }

    /// `{"tg": {"state": "connecting", "reason": "…"}, "web": {"state": "up"}}`.
    pub(crate) fn json(&self) -> Value {
        let states = self.0.states.borrow();
        let mut channels = Map::new();
        for (name, state) in states.iter() {
            let mut entry = json!({"state": state.as_str()});
            if let Some(reason) = state.reason() {
                entry["reason"] = json!(reason);
            }
            channels.insert(name.clone(), entry);
        }
        Value::Object(channels)
    }
}

impl StateReport for ChannelStates {
    fn report(&self, channel: &str, state: ChannelState) {
        if let Some(metrics) = &self.0.metrics {
            metrics.set_channel_up(channel, state.is_up());
        }
        self.0.states.send_modify(|states| {
            states.insert(channel.to_owned(), state);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn states_are_kept_by_name_and_set_the_metric() {
        let metrics = Arc::new(Metrics::new());
        let states = ChannelStates::new(Arc::clone(&metrics));
        states.report("tg", ChannelState::Connecting { reason: None });
        states.report("web", ChannelState::Up);
        let started = tokio::time::Instant::now();
        states.first_attempts(Duration::from_secs(3)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(3), "tg has not tried yet");
        states.report(
            "tg",
            ChannelState::Connecting {
                reason: Some("could not reach Telegram (getMe): refused.".into()),
            },
        );
        states.first_attempts(Duration::from_secs(3)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(3), "every channel has tried");
        assert_eq!(
            states.json(),
            json!({"tg": {"state": "connecting", "reason": "could not reach Telegram (getMe): refused."},
                   "web": {"state": "up"}})
        );
        let text = metrics.render();
        assert!(text.contains("askgate_channel_up{channel=\"tg\"} 0"), "{text}");
        assert!(text.contains("askgate_channel_up{channel=\"web\"} 1"), "{text}");
        states.report("tg", ChannelState::Up);
        assert!(metrics.render().contains("askgate_channel_up{channel=\"tg\"} 1"));
    }
}
