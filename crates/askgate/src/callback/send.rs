//! The engine's [`CallbackSender`]: one POST per attempt with reqwest, the
//! body signed by the agent's secret, a bounded time and a bounded read of
//! the receiver's answer.

use std::collections::BTreeMap;
use std::time::Duration;

use askgate_engine::CallbackSender;
use askgate_store::QuestionRecord;
use async_trait::async_trait;
use futures_util::StreamExt as _;

use super::WebhookSecret;

/// How long one attempt may take, connecting and answering included.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// The most of a receiver's answer askgate reads (and drops): enough to
/// reuse the connection, never a receiver's whole stream.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Sends result callbacks over HTTP(S), signed per agent.
pub(crate) struct HttpSender {
    client: reqwest::Client,
    signers: BTreeMap<String, WebhookSecret>,
}

impl HttpSender {
    /// A sender signing with each agent's secret, by agent name.
    pub(crate) fn new(signers: BTreeMap<String, WebhookSecret>) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            // A redirect would carry the signed result to a host the admin
            // did not name.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("askgate/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, signers })
    }
}

/// The body of a callback: Standard Webhooks' suggested envelope, with the
/// question resource as `GET /v1/questions/{id}` returns it in `data`.
pub(crate) fn body(question: &QuestionRecord, now: jiff::Timestamp) -> Vec<u8> {
    let envelope = serde_json::json!({
        "type": "question.ended",
        "timestamp": now.to_string(),
        "data": askgate_server::resource::question(question),
    });
    serde_json::to_vec(&envelope).unwrap_or_default()
}

#[async_trait]
impl CallbackSender for HttpSender {
    async fn send(&self, agent: &str, url: &str, webhook_id: &str, question: &QuestionRecord) -> Result<u16, String> {
        let signer = self
            .signers
            .get(agent)
            .ok_or_else(|| format!("agent \"{agent}\" has no webhook secret"))?;
        let now = jiff::Timestamp::now();
        let body = body(question, now);
        let timestamp = now.as_second();
        let response = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", webhook_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signer.sign(webhook_id, timestamp, &body))
            .body(body)
            .send()
            .await
            .map_err(|error| format!("{error}"))?;
        let status = response.status().as_u16();
        let mut read = 0;
        let mut stream = response.bytes_stream();
        while let Some(Ok(chunk)) = stream.next().await {
            read += chunk.len();
            if read >= MAX_ANSWER_BYTES {
                break;
            }
        }
        Ok(status)
    }
}
