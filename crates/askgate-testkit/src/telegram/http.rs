//! Webhook delivery: while a webhook is set and a base stands in for its
//! host, the fake POSTs the queued updates there as Telegram does, the oldest
//! first, each until a 2xx answer, and keeps `getWebhookInfo`'s
//! `last_error_date` and `last_error_message` in Telegram's words.

use std::sync::Arc;

use axum::http::StatusCode;

use super::state::{Shared, State, unix_now, update_id};
use super::{WEBHOOK_RETRY_PAUSE, WebhookDelivery};
use crate::fake::{Next, NoAnswer, Push, Pushed, forward_url, push_in_order};

const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";

impl State {
    /// The oldest queued update, if a webhook is set and there is a base to
    /// deliver it to, with its `update_id`.
    fn next_delivery(&self) -> Option<(Push, i64)> {
        let webhook = self.webhook.as_ref()?;
        let base = self.webhook_base.as_deref()?;
        let update = self.queue.front()?;
        let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        if let Some(secret) = &webhook.secret_token {
            headers.push((SECRET_HEADER.to_owned(), secret.clone()));
        }
        let push = Push {
            url: forward_url(base, &webhook.url),
            headers,
            body: update.to_string().into_bytes(),
        };
        Some((push, update_id(update)))
    }

    /// Records an attempt to deliver the update with this `update_id`; an
    /// acknowledged update leaves the queue.
    fn record_delivery(&mut self, pushed: Pushed<i64>) {
        let id = pushed.note;
        let acknowledged = pushed.acknowledged();
        self.deliveries.push(WebhookDelivery {
            update_id: id,
            url: pushed.push.url,
            status: pushed.outcome.as_ref().ok().map(StatusCode::as_u16),
            at: pushed.at,
        });
        if acknowledged {
            // By id: a `raw` update with a lower id may have been queued before it meanwhile.
            if let Some(at) = self.queue.iter().position(|update| update_id(update) == id) {
                self.queue.remove(at);
            }
        } else {
            let message = match pushed.outcome {
                Ok(status) => format!("Wrong response from the webhook: {status}"),
                Err(no_answer) => in_telegram_words(no_answer),
            };
            self.last_webhook_error = Some((unix_now(), message));
        }
    }
}

/// The delivery task: one update at a time, the oldest first, each until the
/// webhook acknowledges it. It holds the state, not a handle, so it cannot
/// keep the fake alive.
pub(crate) async fn deliver_webhooks(shared: Arc<Shared>, client: reqwest::Client) {
    let next = || {
        let state = shared.state.lock();
        if state.closed {
            return Next::Stop;
        }
        match state.next_delivery() {
            Some((push, update_id)) => Next::Push(push, update_id),
            None => Next::Idle,
        }
    };
    let record = |pushed| shared.state.record(|state| state.record_delivery(pushed));
    push_in_order(&client, &shared.updates_changed, WEBHOOK_RETRY_PAUSE, next, record).await;
}

/// Why a delivery got no answer, as `getWebhookInfo` reports it.
fn in_telegram_words(no_answer: NoAnswer) -> String {
    match no_answer {
        NoAnswer::Timeout => "Read timeout expired".to_owned(),
        NoAnswer::Refused => "Connection refused".to_owned(),
        NoAnswer::Reset => "Connection reset by peer".to_owned(),
        NoAnswer::Other(error) => error,
    }
}
