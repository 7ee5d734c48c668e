//! [`HttpBackend`]: the tools over a running askgate's `/v1` API, for the
//! stdio bridge (`askgate mcp --url URL`). The token is the bridge's; `/v1`
//! checks it, and who it may ask, on every request.
//!
//! reqwest, the workspace's HTTP client (the binary and the tests use it
//! already): waits are `GET /v1/questions/{id}?wait=N` in slices, so that
//! dropping one (a cancelled call) closes its connection at once.

use std::time::Duration;

use askgate_core::ToolResult;
use serde::Deserialize;
use serde_json::json;

use super::backend::{Ask, Backend, BackendError, Caller, Problem, Refusal, Status};

/// Time to set up a connection to askgate.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a request may take beyond the wait it asks for.
const REQUEST_SLACK: Duration = Duration::from_secs(15);

/// A client of askgate's `/v1` API with one agent token.
pub struct HttpBackend {
    client: reqwest::Client,
    base: String,
    token: String,
    /// `--wait-seconds`, else the server's `[mcp] wait_seconds`, read once.
    wait: tokio::sync::OnceCell<Duration>,
}

impl std::fmt::Debug for HttpBackend {
    // The token is a secret: it never reaches a log through Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// The part of the question resource the tools read.
#[derive(Debug, Deserialize)]
struct Resource {
    id: String,
    result: Option<ToolResult>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorObject,
}

#[derive(Debug, Deserialize)]
struct ErrorObject {
    code: String,
    message: String,
    path: Option<String>,
    #[serde(default)]
    errors: Vec<Problem>,
}

/// `GET /v1/agent`.
#[derive(Debug, Deserialize)]
struct AgentInfo {
    recipients: Vec<RecipientName>,
    mcp: AgentMcp,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentMcp {
    wait_seconds: u64,
}

#[derive(Debug, Deserialize)]
struct RecipientName {
    name: String,
}

impl HttpBackend {
    /// A client of the askgate at `base` (`http://127.0.0.1:8080`) with
    /// `token`; tool calls wait at most `wait`, or, without it, what the
    /// server's `[mcp] wait_seconds` says.
    pub fn new(base: &str, token: String, wait: Option<Duration>) -> Result<Self, BackendError> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|error| BackendError::Unreachable(error.to_string()))?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            token,
            wait: wait.map_or_else(tokio::sync::OnceCell::new, |wait| {
                tokio::sync::OnceCell::new_with(Some(wait))
            }),
        })
    }

    async fn agent(&self) -> Result<AgentInfo, BackendError> {
        self.send(self.client.get(self.url("/v1/agent")), REQUEST_SLACK).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request and reads a JSON answer, or askgate's error.
    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<T, BackendError> {
        let response = request
            .bearer_auth(&self.token)
            .timeout(timeout)
            .send()
            .await
            .map_err(|error| BackendError::Unreachable(without_url(&error)))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|error| BackendError::Unreachable(without_url(&error)))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|error| {
                BackendError::Unreachable(format!("askgate answered {status} with unreadable JSON: {error}"))
            });
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(ErrorBody { error }) => Err(BackendError::Refused(Refusal {
                code: error.code,
                message: error.message,
                path: error.path,
                problems: error.errors,
            })),
            Err(_) => Err(BackendError::Unreachable(format!("askgate answered {status}"))),
        }
    }

    fn question_path(id: &str, what: &str) -> Result<String, BackendError> {
        // Checked here, so that no id becomes another path.
        askgate_core::QuestionId::parse(id).map_err(|_| {
            BackendError::Refused(Refusal {
                code: "not_found".into(),
                message: "There is no such question.".into(),
                path: Some("questionId".into()),
                problems: Vec::new(),
            })
        })?;
        Ok(format!("/v1/questions/{id}{what}"))
    }
}

/// An error's sentence without its URL (which is the configured base and
/// tells the model nothing).
fn without_url(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(error) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&error.to_string());
        source = error.source();
    }
    text
}

fn status(resource: Resource) -> Status {
    Status {
        id: resource.id,
        result: resource.result,
    }
}

#[async_trait::async_trait]
impl Backend for HttpBackend {
    fn caller(&self, _extensions: &rmcp::model::Extensions) -> Result<Caller, BackendError> {
        Ok(Caller { agent: None })
    }

    async fn recipients(&self, _caller: &Caller) -> Result<Vec<String>, BackendError> {
        let agent = self.agent().await?;
        Ok(agent.recipients.into_iter().map(|r| r.name).collect())
    }

    async fn ask(&self, _caller: &Caller, ask: Ask) -> Result<Status, BackendError> {
        let mut body = json!(ask.request);
        body["to"] = json!(ask.to);
        if let Some(session) = &ask.session_id {
            body["sessionId"] = json!(session);
        }
        // One key for the call: a retry after a lost connection finds the
        // question the first attempt asked instead of asking again.
        let key = ulid::Ulid::new().to_string();
        let attempt = || {
            self.client
                .post(self.url("/v1/questions"))
                .header("idempotency-key", &key)
                .json(&body)
        };
        let resource: Resource = match self.send(attempt(), REQUEST_SLACK).await {
            Err(BackendError::Unreachable(cause)) => {
                tracing::warn!(error = %cause, "asking through askgate failed; trying once more");
                self.send(attempt(), REQUEST_SLACK).await?
            }
            other => other?,
        };
        Ok(status(resource))
    }

    async fn wait(&self, _caller: &Caller, id: &str, max: Duration) -> Result<Status, BackendError> {
        let path = Self::question_path(id, "")?;
        let seconds = max.as_secs() + u64::from(max.subsec_nanos() > 0);
        let request = self.client.get(self.url(&path)).query(&[("wait", seconds)]);
        let resource: Resource = self.send(request, max + REQUEST_SLACK).await?;
        Ok(status(resource))
    }

    async fn wait_limit(&self) -> Duration {
        let read = self.wait.get_or_try_init(|| async {
            let agent = self.agent().await?;
            Ok::<_, BackendError>(Duration::from_secs(agent.mcp.wait_seconds))
        });
        match read.await {
            Ok(wait) => *wait,
            Err(error) => {
                // Read again on the next call; this one waits the default.
                tracing::warn!(%error, "could not read askgate's [mcp] wait_seconds; waiting the default");
                super::DEFAULT_WAIT
            }
        }
    }

    async fn cancel(&self, _caller: &Caller, id: &str) -> Result<Status, BackendError> {
        let path = Self::question_path(id, "/cancel")?;
        let request = self.client.post(self.url(&path));
        let resource: Resource = self.send(request, REQUEST_SLACK).await?;
        Ok(status(resource))
    }
}
