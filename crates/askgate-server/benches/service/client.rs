//! The client side: the agent's and the person's requests, over one shared
//! `reqwest` client.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Result;

pub(crate) const AGENT_TOKEN: &str = "agt_bench0123456789abcdefghijklmnopqrstuvwxyz";
pub(crate) const WEB_KEY: &str = "benchkey0123456789abcdefghijklmnopqrstuvwx";
pub(crate) const RECIPIENT: &str = "alice";

/// The `?wait=` of the waiting agents.
pub(crate) const WAIT_SECONDS: u64 = 60;
/// The longest any ordinary request may take.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a waiting agent's request may take.
pub(crate) const LONG_POLL_TIMEOUT: Duration = Duration::from_secs(WAIT_SECONDS + 30);

/// The question every cycle asks (its text numbered).
const OPTIONS: [&str; 3] = ["Staging (Recommended)", "Production", "Canary"];

/// An HTTP client of one server.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// A client of the server at `base` (`http://127.0.0.1:PORT`).
    pub(crate) fn new(http: reqwest::Client, base: String) -> Self {
        Self { http, base }
    }

    /// The shared client: connections kept, no Nagle delay.
    pub(crate) fn http() -> Result<reqwest::Client> {
        Ok(reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(usize::MAX)
            // Below the server's idle timeout (60 s), so that the client
            // never reuses a connection the server is closing.
            .pool_idle_timeout(Duration::from_secs(30))
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(10))
            .build()?)
    }

    /// `GET path`, which must answer 200.
    pub(crate) async fn get_ok(&self, path: &str) -> Result<()> {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let body = response.bytes().await?;
        if status != reqwest::StatusCode::OK {
            return Err(format!("GET {path}: HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        Ok(())
    }

    /// Creates a pending question, in `session` if given; returns its id.
    pub(crate) async fn create(&self, session: Option<&str>, label: &str) -> Result<String> {
        let mut body = json!({
            "to": RECIPIENT,
            "questions": [{
                "id": "deploy_target",
                "header": "Deploy",
                "question": format!("Where should build {label} go?"),
                "options": [
                    {"label": OPTIONS[0], "description": "Safe, resets nightly"},
                    {"label": OPTIONS[1], "description": "Live traffic; needs a change ticket"},
                    {"label": OPTIONS[2]}
                ]
            }],
            "timeoutSeconds": 900
        });
        if let Some(session) = session {
            body["sessionId"] = json!(session);
        }
        let response = self
            .http
            .post(format!("{}/v1/questions", self.base))
            .bearer_auth(AGENT_TOKEN)
            .json(&body)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        if status != reqwest::StatusCode::CREATED {
            return Err(format!("POST /v1/questions: HTTP {status}: {value}").into());
        }
        match value.get("id").and_then(Value::as_str) {
            Some(id) => Ok(id.to_owned()),
            None => Err(format!("POST /v1/questions: no id in {value}").into()),
        }
    }

    /// The waiting agent (`GET /v1/questions/{id}?wait=60`): the instant its
    /// response was in, and the question's resource.
    pub(crate) async fn wait(&self, id: &str) -> Result<(Instant, Value)> {
        let response = self
            .http
            .get(format!("{}/v1/questions/{id}?wait={WAIT_SECONDS}", self.base))
            .bearer_auth(AGENT_TOKEN)
            .timeout(LONG_POLL_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        let received = Instant::now();
        if status != reqwest::StatusCode::OK {
            return Err(format!("waiting for {id}: HTTP {status}: {value}").into());
        }
        Ok((received, value))
    }

    /// The person answers on the web page's API; returns the instant the
    /// response was in.
    pub(crate) async fn answer(&self, id: &str, answer: &Answer) -> Result<Instant> {
        let response = self
            .http
            .post(format!("{}/web/{WEB_KEY}/api/questions/{id}/answer", self.base))
            .json(&answer.body())
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await?;
        let returned = Instant::now();
        if status != reqwest::StatusCode::OK || value.get("status").and_then(Value::as_str) != Some("answered") {
            return Err(format!("answering {id}: HTTP {status}: {value}").into());
        }
        Ok(returned)
    }
}

/// What the person answers: a button, or words of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    Option(usize),
    Text(String),
}

impl Answer {
    /// The answer of cycle `cycle` of worker `worker` in phase `phase`: every
    /// other one a button (in turn), every other one a text that names the
    /// cycle, so that an answer delivered to the wrong agent is caught.
    pub(crate) fn for_cycle(phase: usize, worker: usize, cycle: usize) -> Self {
        if cycle.is_multiple_of(2) {
            Self::Option((cycle / 2 + worker) % OPTIONS.len())
        } else {
            Self::Text(format!("ship build {phase}-{worker}-{cycle} on Tuesday"))
        }
    }

    fn body(&self) -> Value {
        match self {
            Self::Option(index) => json!({"answers": {"deploy_target": {"options": [index]}}}),
            Self::Text(text) => json!({"answers": {"deploy_target": {"options": [], "text": text}}}),
        }
    }

    /// Whether the agent's resource holds exactly this answer; if not, why.
    pub(crate) fn check(&self, resource: &Value) -> Result<(), String> {
        let status = resource.get("status").and_then(Value::as_str).unwrap_or("(none)");
        if status != "answered" {
            return Err(format!("the agent got a question that is {status}, not answered"));
        }
        let expected = match self {
            Self::Option(index) => OPTIONS[*index],
            Self::Text(text) => text.as_str(),
        };
        let got = &resource["result"]["answers"]["answers"]["deploy_target"];
        if *got != json!([expected]) {
            return Err(format!("the agent got the answer {got}, not [{expected:?}]"));
        }
        Ok(())
    }
}
