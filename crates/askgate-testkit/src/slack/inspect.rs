//! What happened on the fake Slack, and waits for it: the calls, the
//! messages and modals as a person sees them, the deliveries to the app and
//! what came of them, the Socket Mode connections and frames.

use std::time::Duration;

use super::FakeSlack;
use super::state::{State, Stored};
use super::types::{
    Call, Delivery, DeliveryStatus, OpenedView, SeenMessage, SlackChannel, SocketConnection, SocketFrame, Submission,
    ViewOutcome, WaitTimeout,
};

impl FakeSlack {
    /// Every Web API call so far (and `response_url` POSTs), in order.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.state.lock().requests.calls().to_vec()
    }

    /// Every call refused as Slack's published spec refuses it, since the
    /// fake started: an unknown method, arguments the Web API spec refuses
    /// (`invalid_arguments`), blocks or views the Block Kit limits refuse
    /// (`invalid_blocks`, a view's `invalid_arguments`), `msg_too_long`,
    /// `no_text`, an answer to a view submission Slack cannot use. Each
    /// described with its error.
    pub fn violations(&self) -> Vec<String> {
        self.shared.state.lock().violations.clone()
    }

    /// The calls of one method so far.
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        self.shared
            .state
            .lock()
            .requests
            .calls()
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// A conversation as the fake knows it now.
    pub fn channel_info(&self, channel: &str) -> Option<SlackChannel> {
        self.shared.state.lock().channels.get(channel).cloned()
    }

    /// The messages of a conversation as people see them now, in order;
    /// ephemeral ones included, with [`SeenMessage::ephemeral_for`].
    pub fn messages(&self, channel: &str) -> Vec<SeenMessage> {
        seen_in(&self.shared.state.lock(), channel)
    }

    /// The messages in the thread of the message at `ts` (its replies,
    /// `thread_ts` = `ts`, not the message itself), in order, as people see
    /// them: with their text and whom they notify ([`SeenMessage::pings`]).
    /// Ephemeral ones are left out.
    pub fn replies_to(&self, channel: &str, ts: &str) -> Vec<SeenMessage> {
        seen_in(&self.shared.state.lock(), channel)
            .into_iter()
            .filter(|seen| seen.thread_ts.as_deref() == Some(ts) && seen.ts != ts && seen.ephemeral_for.is_none())
            .collect()
    }

    /// One message.
    pub fn message_at(&self, channel: &str, ts: &str) -> Option<SeenMessage> {
        let state = self.shared.state.lock();
        state.message_at(channel, ts).map(|index| state.messages[index].seen())
    }

    /// The ephemeral messages only this person sees, in order.
    pub fn ephemerals_for(&self, user: &str) -> Vec<SeenMessage> {
        ephemerals(&self.shared.state.lock(), user)
    }

    /// Every modal the app opened (or pushed), in order.
    pub fn views(&self) -> Vec<OpenedView> {
        self.shared.state.lock().views.clone()
    }

    /// One modal.
    pub fn view(&self, view_id: &str) -> Option<OpenedView> {
        self.shared
            .state
            .lock()
            .views
            .iter()
            .find(|view| view.id == view_id)
            .cloned()
    }

    /// The modal opened with this trigger id (e.g. a [`Click`](super::Click)'s).
    pub fn view_for_trigger(&self, trigger_id: &str) -> Option<OpenedView> {
        view_for(&self.shared.state.lock(), trigger_id)
    }

    /// Every delivery to the app so far, in order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.shared
            .state
            .lock()
            .deliveries
            .iter()
            .map(|delivery| delivery.record.clone())
            .collect()
    }

    /// One delivery.
    pub fn delivery(&self, id: usize) -> Option<Delivery> {
        self.shared
            .state
            .lock()
            .deliveries
            .get(id)
            .map(|delivery| delivery.record.clone())
    }

    /// What became of a submitted modal, once its acknowledgement came (or
    /// failed to).
    pub fn outcome(&self, submission: &Submission) -> Option<ViewOutcome> {
        self.shared
            .state
            .lock()
            .deliveries
            .get(submission.delivery)
            .and_then(|delivery| delivery.outcome.clone())
    }

    /// Every Socket Mode connection so far.
    pub fn connections(&self) -> Vec<SocketConnection> {
        let state = self.shared.state.lock();
        state.socket.connections.iter().map(|conn| conn.info.clone()).collect()
    }

    /// Every Socket Mode frame so far, both ways, in order.
    pub fn socket_frames(&self) -> Vec<SocketFrame> {
        self.shared.state.lock().socket.frames.clone()
    }

    // --- waits ---

    /// Waits until a message of the conversation satisfies `found`, and returns it.
    pub async fn wait_for_message(
        &self,
        channel: &str,
        timeout: Duration,
        found: impl Fn(&SeenMessage) -> bool,
    ) -> Result<SeenMessage, WaitTimeout> {
        self.wait(timeout, format!("a message in {channel}"), |state| {
            seen_in(state, channel).into_iter().find(|seen| found(seen))
        })
        .await
    }

    /// Waits until the message at `ts` has been edited and satisfies `found`.
    pub async fn wait_for_edit(
        &self,
        channel: &str,
        ts: &str,
        timeout: Duration,
        found: impl Fn(&SeenMessage) -> bool,
    ) -> Result<SeenMessage, WaitTimeout> {
        self.wait(timeout, format!("an edit of {ts} in {channel}"), |state| {
            let seen = state.messages[state.message_at(channel, ts)?].seen();
            (seen.edited && found(&seen)).then_some(seen)
        })
        .await
    }

    /// Waits until an ephemeral message for this person satisfies `found`.
    pub async fn wait_for_ephemeral(
        &self,
        user: &str,
        timeout: Duration,
        found: impl Fn(&SeenMessage) -> bool,
    ) -> Result<SeenMessage, WaitTimeout> {
        self.wait(timeout, format!("an ephemeral message for {user}"), |state| {
            ephemerals(state, user).into_iter().find(|seen| found(seen))
        })
        .await
    }

    /// Waits until a call of `method` satisfies `found`, and returns it.
    pub async fn wait_for_call(
        &self,
        method: &str,
        timeout: Duration,
        found: impl Fn(&Call) -> bool,
    ) -> Result<Call, WaitTimeout> {
        self.wait(timeout, format!("a call of {method}"), |state| {
            state
                .requests
                .calls()
                .iter()
                .find(|call| call.method == method && found(call))
                .cloned()
        })
        .await
    }

    /// Waits until at least `n` Socket Mode connections have been opened
    /// (closed ones included), and returns them all.
    pub async fn wait_for_connections(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<SocketConnection>, WaitTimeout> {
        self.wait(timeout, format!("{n} Socket Mode connection(s)"), |state| {
            (state.socket.connections.len() >= n)
                .then(|| state.socket.connections.iter().map(|conn| conn.info.clone()).collect())
        })
        .await
    }

    /// Waits until a delivery is acknowledged or given up, and returns it.
    pub async fn wait_for_ack(&self, delivery: usize, timeout: Duration) -> Result<Delivery, WaitTimeout> {
        self.wait(timeout, format!("delivery {delivery} to settle"), |state| {
            let record = &state.deliveries.get(delivery)?.record;
            matches!(record.status, DeliveryStatus::Acked { .. } | DeliveryStatus::Failed(_)).then(|| record.clone())
        })
        .await
    }

    /// Waits until the acknowledgement of a submitted modal came (or
    /// failed to), and returns what it did.
    pub async fn wait_for_outcome(
        &self,
        submission: &Submission,
        timeout: Duration,
    ) -> Result<ViewOutcome, WaitTimeout> {
        self.wait(
            timeout,
            format!("the outcome of submitting {}", submission.view_id),
            |state| state.deliveries.get(submission.delivery)?.outcome.clone(),
        )
        .await
    }

    /// Waits until the app opened a modal with this trigger id.
    pub async fn wait_for_view(&self, trigger_id: &str, timeout: Duration) -> Result<OpenedView, WaitTimeout> {
        self.wait(timeout, format!("a view opened with trigger {trigger_id}"), |state| {
            view_for(state, trigger_id)
        })
        .await
    }

    async fn wait<T>(
        &self,
        timeout: Duration,
        waited_for: String,
        check: impl Fn(&State) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        self.shared
            .state
            .wait(timeout, check, |state| WaitTimeout {
                waited_for,
                timeout,
                methods: state.requests.calls().iter().map(|call| call.method.clone()).collect(),
                deliveries: state.delivery_summaries(),
            })
            .await
    }
}

fn seen_in(state: &State, channel: &str) -> Vec<SeenMessage> {
    state
        .messages
        .iter()
        .filter(|stored| stored.channel == channel)
        .map(Stored::seen)
        .collect()
}

fn ephemerals(state: &State, user: &str) -> Vec<SeenMessage> {
    state
        .messages
        .iter()
        .filter(|stored| stored.ephemeral_for.as_deref() == Some(user))
        .map(Stored::seen)
        .collect()
}

fn view_for(state: &State, trigger_id: &str) -> Option<OpenedView> {
    state.views.iter().find(|view| view.trigger_id == trigger_id).cloned()
}
