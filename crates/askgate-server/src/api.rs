//! The agent API under `/v1`.

use std::convert::Infallible;
use std::time::Duration;

use askgate_core::validate::{ErrorCode, ValidationError, ValidationErrors};
use askgate_core::{QuestionId, validate, validate_with_max_timeout};
use askgate_engine::{Accepted, Engine, NewQuestion, SessionKind};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::auth::Agent;
use crate::body::ApiJson;
use crate::error::ApiError;
use crate::resource;
use crate::{AppState, Change};

/// The longest `?wait=` a request may hold: the contract's longest timeout.
/// A longer wait (`POST /v1/questions` up to an agent's `max_timeout`) is
/// polled again, or followed with the event stream, rather than held in one
/// request for days.
const MAX_WAIT_SECONDS: u64 = 3600;

/// The fields of a question request that are askgate's, not `ask_user`'s.
pub const ENVELOPE_FIELDS: [&str; 8] = [
    "to",
    "sessionId",
    "runId",
    "sessionKind",
    "toolCallId",
    "remind",
    "escalate",
    "callbackUrl",
];

/// The header that makes a `POST` safe to retry (the IETF httpapi draft's name).
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// The header of a response to a retried request: the question was asked
/// by an earlier request with the same idempotency key.
pub const REPLAYED_HEADER: axum::http::HeaderName = axum::http::HeaderName::from_static("idempotent-replayed");

/// The longest idempotency key, in characters.
const MAX_KEY_CHARS: usize = 255;

/// The query of the routes that can wait: `?wait=N` seconds. Read as plain
/// pairs, so that no query makes axum answer with a plain-text rejection;
/// parameters other than `wait` are ignored.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(crate) struct WaitQuery(Vec<(String, String)>);

impl WaitQuery {
    fn duration(&self) -> Result<Duration, ApiError> {
        let invalid = || {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "wait is one whole number of seconds.",
            )
            .at("wait")
        };
        let mut waits = self.0.iter().filter(|(name, _)| name == "wait");
        let (Some((_, wait)), None) = (waits.next(), waits.next()) else {
            return if self.0.iter().any(|(name, _)| name == "wait") {
                Err(invalid())
            } else {
                Ok(Duration::ZERO)
            };
        };
        let seconds: u64 = wait.parse().map_err(|_| invalid())?;
        Ok(Duration::from_secs(seconds.min(MAX_WAIT_SECONDS)))
    }
}

pub(crate) fn question_id(id: &str) -> Result<QuestionId, ApiError> {
    QuestionId::parse(id).map_err(|_| ApiError::not_found("question"))
}

/// A question request as read: askgate's envelope and the validated
/// `ask_user` arguments (`None` when they had problems, which were reported).
#[derive(Debug)]
pub(crate) struct QuestionFields {
    pub(crate) to: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) session_kind: SessionKind,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) request: Option<askgate_core::AskRequest>,
    /// The question's own reminders and escalations.
    pub(crate) nudges: askgate_engine::Nudges,
    /// The question's own result callback, as sent (checked against the
    /// agent's hosts by the caller, who knows the agent).
    pub(crate) callback_url: Option<String>,
}

/// Reads a question request: the `ask_user` arguments at the top level plus
/// the fields of askgate's envelope named in `envelope` (any other field is
/// reported as unknown, the way `validate` reports it). `to` may be absent:
/// the caller then picks the token's one recipient ([`default_recipient`]).
/// `timeoutSeconds` is clamped to the contract's hour,
/// or with `max_timeout` (the non-blocking call's) kept up to it and
/// refused beyond. Every problem goes into `errors`; `Err` only when the
/// body is not an object at all.
pub(crate) fn read_question(
    body: Value,
    envelope: &[&str],
    max_timeout: Option<u32>,
    errors: &mut Vec<ValidationError>,
) -> Result<QuestionFields, ApiError> {
    let Value::Object(mut fields) = body else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_type",
            "The body must be a JSON object.",
        ));
    };
    let mut present = Map::new();
    for name in ENVELOPE_FIELDS.iter().filter(|name| envelope.contains(name)) {
        if let Some(value) = fields.remove(*name) {
            present.insert((*name).to_owned(), value);
        }
    }
    let mut text = |name: &str| -> Option<String> {
        match present.get(name) {
            // Refused on both stores alike: PostgreSQL cannot keep it in text.
            Some(Value::String(text)) if text.contains('\0') => {
                errors.push(error(ErrorCode::InvalidCharacter, name, nul_message(name)));
                None
            }
            Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
            None | Some(Value::Null) => None,
            Some(_) => {
                errors.push(error(
                    ErrorCode::InvalidType,
                    name,
                    format!("\"{name}\" must be a non-empty string."),
                ));
                None
            }
        }
    };
    let to = text("to");
    let session_id = text("sessionId");
    let run_id = text("runId");
    let tool_call_id = text("toolCallId");
    let callback_url = text("callbackUrl");
    let session_kind = match present.get("sessionKind") {
        None | Some(Value::Null) => SessionKind::Main,
        Some(Value::String(kind)) if kind == "main" => SessionKind::Main,
        Some(Value::String(kind)) if kind == "subagent" => SessionKind::Subagent,
        Some(_) => {
            errors.push(error(
                ErrorCode::InvalidType,
                "sessionKind",
                "\"sessionKind\" is \"main\" or \"subagent\".".into(),
            ));
            SessionKind::Main
        }
    };
    let nudges = crate::nudges::read(&present, errors);
    let arguments = Value::Object(fields);
    let validated = match max_timeout {
        None => validate(&arguments),
        Some(max) => validate_with_max_timeout(&arguments, max),
    };
    let request = match validated {
        Ok(request) => Some(request),
        Err(problems) => {
            errors.extend(problems.errors);
            None
        }
    };
    Ok(QuestionFields {
        to,
        session_id,
        run_id,
        session_kind,
        tool_call_id,
        request,
        nudges,
        callback_url,
    })
}

/// How long a question request may ask the person to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeoutLimit {
    /// `POST /v1/ask`, the blocking `ask_user` call: the contract's clamp.
    Contract,
    /// `POST /v1/questions`: up to the agent's `max_timeout`, refused beyond.
    UpToAgentLimit,
}

/// Reads the request of `POST /v1/questions` and `POST /v1/ask`: the
/// `ask_user` arguments at the top level plus askgate's envelope, and the
/// `Idempotency-Key` header (else the body's `toolCallId`). Every problem of
/// both is reported together.
fn new_question(
    engine: &Engine,
    agent: &Agent,
    headers: &HeaderMap,
    body: Value,
    limit: TimeoutLimit,
) -> Result<NewQuestion, ApiError> {
    let mut errors = Vec::new();
    let QuestionFields {
        to,
        session_id,
        run_id,
        session_kind,
        tool_call_id,
        request,
        nudges,
        callback_url,
    } = read_question(
        body,
        &ENVELOPE_FIELDS,
        (limit == TimeoutLimit::UpToAgentLimit).then_some(agent.max_timeout_seconds),
        &mut errors,
    )?;
    let callback_url = callback_url.and_then(|url| crate::callbacks::check(url, &agent.callback_hosts, &mut errors));
    // Left out, `to` is the one recipient this token may ask (as in MCP).
    let to = to.or_else(|| default_recipient(&askable(engine, agent), &mut errors));
    // The body's key is checked even when the header's is the one used:
    // the document refuses a bad `toolCallId` either way (found by schemathesis).
    let body_key = key_from(tool_call_id.as_deref(), "toolCallId", &mut errors);
    let idempotency_key = match headers.get(IDEMPOTENCY_KEY_HEADER) {
        // A header that is not visible ASCII is refused like a blank one
        // (as an empty key), never taken for "no key".
        Some(value) => key_from(
            Some(value.to_str().map(str::trim).unwrap_or_default()),
            "Idempotency-Key",
            &mut errors,
        ),
        None => body_key,
    };
    if !errors.is_empty() {
        return Err(ValidationErrors { errors }.into());
    }
    let (Some(to), Some(request)) = (to, request) else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            "The request is not valid.",
        ));
    };
    check_to(engine, agent, &to)?;
    Ok(NewQuestion {
        agent: agent.name.clone(),
        to,
        session_id,
        run_id,
        session_kind,
        request,
        idempotency_key,
        nudges,
        callback_url,
    })
}

/// The recipients `agent` may ask, by name, sorted: those its token allows
/// that are configured.
pub(crate) fn askable(engine: &Engine, agent: &Agent) -> Vec<String> {
    let mut names: Vec<String> = engine
        .recipients()
        .filter(|recipient| agent.check_recipient(&recipient.name).is_ok())
        .map(|recipient| recipient.name.clone())
        .collect();
    names.sort();
    names
}

/// The most recipient names an error lists; past them it says how many more.
const MAX_LISTED_NAMES: usize = 20;

/// The most characters the listed names take in an error, so that the
/// sentence stays whole within an error's bound (names are configuration
/// keys, of any length).
const MAX_LISTED_NAMES_CHARS: usize = 240;

/// `names` as an error lists them: quoted, the first [`MAX_LISTED_NAMES`]
/// (fewer when they are long), then "and N more".
fn listed_names(names: &[String]) -> String {
    let mut listed = Vec::new();
    let mut chars = 0;
    for name in names.iter().take(MAX_LISTED_NAMES) {
        let quoted = format!("\"{}\"", askgate_core::text::excerpt(name));
        chars += quoted.chars().count() + 2;
        if chars > MAX_LISTED_NAMES_CHARS && !listed.is_empty() {
            break;
        }
        listed.push(quoted);
    }
    let more = names.len() - listed.len();
    let listed = listed.join(", ");
    if more == 0 {
        listed
    } else {
        format!("{listed} and {more} more")
    }
}

/// The subject of the sentences about whom a token may ask.
const TOKEN: &str = "this agent token";

/// Whom `who` (the agent token) may ask, as a clause: the names listed.
fn may_ask(who: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("{who} may ask no configured recipient")
    } else {
        format!("{who} may ask {}", listed_names(names))
    }
}

/// The recipient when a request names none: the only one the token may
/// ask; otherwise a problem at `to` listing the names it may ask.
pub(crate) fn default_recipient(askable: &[String], errors: &mut Vec<ValidationError>) -> Option<String> {
    if let [only] = askable {
        return Some(only.clone());
    }
    let message = if askable.is_empty() {
        format!("\"to\" is required, and {}.", may_ask(TOKEN, askable))
    } else {
        format!(
            "\"to\" is required when an agent token may ask several recipients; {}.",
            may_ask(TOKEN, askable)
        )
    };
    errors.push(error(ErrorCode::MissingField, "to", message));
    None
}

/// Whether `agent` may ask `to`, a configured recipient: `403
/// recipient_not_allowed` or `422 unknown_recipient` otherwise, each
/// listing the names it may ask (configuration keys, not secrets), so that
/// a mistyped name is put right from the error alone.
pub(crate) fn check_to(engine: &Engine, agent: &Agent, to: &str) -> Result<(), ApiError> {
    if let Err(mut refused) = agent.check_recipient(to) {
        refused.message = format!(
            "{}; {}.",
            refused.message.trim_end_matches('.'),
            may_ask("it", &askable(engine, agent))
        );
        return Err(refused);
    }
    if engine.recipient(to).is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_recipient",
            format!(
                "No recipient named \"{}\" is configured; {}.",
                askgate_core::text::excerpt(to),
                may_ask(TOKEN, &askable(engine, agent))
            ),
        )
        .at("to"));
    }
    Ok(())
}

/// `GET /v1/agent`: what this agent token is: its name, who it may ask
/// (what `to` may name), and how long an MCP tool call waits (`[mcp]
/// wait_seconds`, which the stdio bridge follows).
pub(crate) async fn agent(State(state): State<AppState>, agent: Agent) -> Json<Value> {
    let engine = &state.0.engine;
    let recipients: Vec<Value> = askable(engine, &agent)
        .iter()
        .filter_map(|name| engine.recipient(name))
        .map(|recipient| json!({"name": recipient.name, "displayName": recipient.display_name}))
        .collect();
    Json(json!({
        "name": agent.name,
        "recipients": recipients,
        "mcp": {"waitSeconds": state.0.mcp.wait.as_secs()},
    }))
}

/// An idempotency key as sent (`None`: none was), or a problem at `path`.
fn key_from(key: Option<&str>, path: &str, errors: &mut Vec<ValidationError>) -> Option<String> {
    match key {
        None => None,
        Some(key) if !key.is_empty() && key.chars().count() <= MAX_KEY_CHARS => Some(key.to_owned()),
        Some(_) => {
            errors.push(error(
                ErrorCode::InvalidType,
                path,
                format!("An idempotency key is 1 to {MAX_KEY_CHARS} visible characters, unique per call."),
            ));
            None
        }
    }
}

/// Why a `name` holding U+0000 is refused.
fn nul_message(name: &str) -> String {
    format!("\"{name}\" must not contain the NUL character (U+0000).")
}

pub(crate) fn error(code: ErrorCode, path: &str, message: String) -> ValidationError {
    ValidationError {
        code,
        path: path.to_owned(),
        message,
    }
}

/// `POST /v1/questions`: accept a question; `?wait=N` holds the answer up to N s.
pub(crate) async fn create_question(
    State(state): State<AppState>,
    agent: Agent,
    Query(query): Query<WaitQuery>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let wait = query.duration()?;
    let engine = &state.0.engine;
    let question = new_question(engine, &agent, &headers, body, TimeoutLimit::UpToAgentLimit)?;
    let Accepted { record, replayed } = engine.ask_with(question).await?;
    let record = if wait.is_zero() {
        record
    } else {
        state.wait(&record.id, wait).await?
    };
    let body = Json(question_resource(engine, &agent, &record).await);
    Ok(if replayed {
        // The first request created it; this one finds it (RFC 9110: 200).
        (StatusCode::OK, [(REPLAYED_HEADER, "true")], body).into_response()
    } else {
        (StatusCode::CREATED, body).into_response()
    })
}

/// `GET /v1/questions/{id}`; `?wait=N` holds until it ends or N s pass.
pub(crate) async fn get_question(
    State(state): State<AppState>,
    agent: Agent,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<Json<Value>, ApiError> {
    let wait = query.duration()?;
    let id = question_id(&id)?;
    let record = state.wait_for_agent(&agent.name, &id, wait).await?;
    Ok(Json(question_resource(&state.0.engine, &agent, &record).await))
}

/// The question resource with its result callback's attempts (`callbacks`),
/// as the routes that answer with one question show it. Only a question
/// with a result callback has the list; one that cannot be read now is left
/// out rather than failing the whole request. The attempts are read only
/// for an agent that takes callbacks: the others' answers cost no extra
/// store read.
async fn question_resource(engine: &Engine, agent: &Agent, record: &askgate_store::QuestionRecord) -> Value {
    let mut body = resource::question(record);
    if agent.callback_hosts.is_empty() {
        return body;
    }
    if let Ok(Some(attempts)) = engine.callback_attempts(&record.id).await
        && let Some(fields) = body.as_object_mut()
    {
        fields.insert("callbacks".to_owned(), resource::callbacks(&attempts));
    }
    body
}

/// The question, if it exists and this agent asked it (404 otherwise: an
/// agent cannot probe for other agents' questions).
pub(crate) async fn owned(
    engine: &Engine,
    agent: &Agent,
    id: &QuestionId,
) -> Result<askgate_store::QuestionRecord, ApiError> {
    engine
        .get(id)
        .await?
        .filter(|record| record.agent == agent.name)
        .ok_or_else(|| ApiError::not_found("question"))
}

/// `GET /v1/questions/{id}/events`: the resource now, then at every change,
/// as server-sent events; the stream ends after the question does.
pub(crate) async fn question_events(
    State(state): State<AppState>,
    agent: Agent,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = question_id(&id)?;
    let changes = state.0.engine.subscribe();
    let first = owned(&state.0.engine, &agent, &id).await?;
    let stream = futures_util::stream::unfold(
        (Some(first), changes, state, false),
        move |(next, mut changes, state, ended)| {
            let id = id.clone();
            async move {
                if ended {
                    return None;
                }
                let record = match next {
                    Some(record) => record,
                    None => loop {
                        match state.next_change(&mut changes, |record| record.id == id).await? {
                            Change::Matching(record) => break (*record).clone(),
                            Change::Missed => {
                                if let Ok(Some(record)) = state.0.engine.get(&id).await {
                                    break record;
                                }
                            }
                        }
                    },
                };
                let event = Event::default()
                    .event("question")
                    .data(resource::question(&record).to_string());
                let ended = record.status.is_final();
                Some((Ok(event), (None, changes, state, ended)))
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `POST /v1/questions/{id}/cancel`.
pub(crate) async fn cancel_question(
    State(state): State<AppState>,
    agent: Agent,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = question_id(&id)?;
    let record = state.0.engine.cancel(&agent.name, &id).await?;
    Ok(Json(question_resource(&state.0.engine, &agent, &record).await))
}

/// `POST /v1/runs/{runId}/abort`: cancel every pending question of the run.
pub(crate) async fn abort_run(
    State(state): State<AppState>,
    agent: Agent,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    // No run is named so (its questions were refused); refused as they were.
    if run_id.contains('\0') {
        let problem = error(ErrorCode::InvalidCharacter, "runId", nul_message("runId"));
        return Err(ValidationErrors { errors: vec![problem] }.into());
    }
    let cancelled = state.0.engine.abort_run(&agent.name, &run_id).await?;
    Ok(Json(json!({ "runId": run_id, "cancelled": cancelled })))
}

/// `POST /v1/ask`: the blocking tool call. Errors in the request get their
/// status at once; once the question is accepted the response starts (200)
/// and stays open until it ends, with a space sent now and then so that a
/// caller who went away is noticed — then the question is cancelled. JSON
/// allows leading whitespace, so the body is always exactly the tool result,
/// or, when askgate shuts down first, `{"status":"pending","questionId":…}`.
///
/// With an idempotency key, a retry after a dropped connection re-attaches
/// to the same question (and gets its result if it has ended); a question
/// whose caller went away is cancelled only once no call has re-attached to
/// it within the grace period (`ask_retry_grace`).
pub(crate) async fn ask(
    State(state): State<AppState>,
    agent: Agent,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let question = new_question(&state.0.engine, &agent, &headers, body, TimeoutLimit::Contract)?;
    let keyed = question.idempotency_key.is_some();
    let engine = state.0.engine.clone();
    let Accepted { record, replayed } = engine.ask_with(question).await?;
    let id = record.id.to_string();
    let guard = CancelOnDrop {
        engine,
        agent: agent.name,
        id: Some(record.id.clone()),
        grace: keyed.then(|| (state.0.ask_retry_grace, state.0.attached.attach(&record.id))),
    };
    let keepalive = state.0.ask_keepalive;
    let stream = futures_util::stream::unfold((Some(guard), state), move |(guard, state)| async move {
        let mut guard = guard?;
        let id = guard.id.clone()?;
        match state.wait(&id, keepalive).await {
            Ok(record) if record.status.is_final() => {
                guard.id = None;
                let result = resource::tool_result(&record)
                    .map(|result| json!(result))
                    .unwrap_or_default();
                Some((Ok(Bytes::from(format!("{result}\n"))), (None, state)))
            }
            Ok(_) if state.is_stopping() => {
                // askgate is restarting, not the agent giving up: keep the
                // question, and end the response with JSON the agent can act
                // on: the question is still pending, and its answer can be
                // picked up with `GET /v1/questions/{id}?wait=N`.
                guard.id = None;
                let pending = json!({"status": "pending", "questionId": id.as_str()});
                Some((Ok(Bytes::from(format!("{pending}\n"))), (None, state)))
            }
            Ok(_) => Some((Ok(Bytes::from_static(b" ")), (Some(guard), state))),
            Err(error) => {
                tracing::error!(question = %id, %error, "waiting for an answer failed");
                guard.id = None;
                Some((
                    Err(std::io::Error::other("waiting for the answer failed")),
                    (None, state),
                ))
            }
        }
    });
    let mut response = (
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (QUESTION_ID_HEADER, id),
        ],
        Body::from_stream(stream),
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert(REPLAYED_HEADER, axum::http::HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// The header of `POST /v1/ask` responses that names the question, so that
/// a caller whose connection broke can pick the answer up with `GET /v1/questions/{id}`.
pub const QUESTION_ID_HEADER: axum::http::HeaderName = axum::http::HeaderName::from_static("askgate-question-id");

/// Cancels the question of a `POST /v1/ask` whose caller went away; for a
/// keyed call, only after the grace period, and only if no retry has
/// re-attached to it by then.
struct CancelOnDrop {
    engine: Engine,
    agent: String,
    id: Option<QuestionId>,
    grace: Option<(Duration, Attachment)>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let grace = self.grace.take();
        let Some(id) = self.id.take() else {
            return;
        };
        let engine = self.engine.clone();
        let agent = std::mem::take(&mut self.agent);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            if let Some((grace, attachment)) = grace {
                tracing::info!(question = %id, ?grace, "the asking agent went away; its question is cancelled unless it retries");
                let attached = attachment.detach();
                tokio::time::sleep(grace).await;
                if attached.is_attached(&id) {
                    return;
                }
            }
            tracing::info!(question = %id, "the asking agent went away; cancelling its question");
            if let Err(error) = engine.cancel(&agent, &id).await {
                tracing::warn!(question = %id, %error, "could not cancel an abandoned question");
            }
        });
    }
}

/// The keyed `POST /v1/ask` calls waiting on each question, so that a call
/// that went away can tell whether a retry has re-attached since.
#[derive(Debug, Default, Clone)]
pub(crate) struct Attached(std::sync::Arc<std::sync::Mutex<std::collections::HashMap<QuestionId, usize>>>);

impl Attached {
    /// Counts one more call waiting on `id`, until the attachment is detached.
    pub(crate) fn attach(&self, id: &QuestionId) -> Attachment {
        *self.lock().entry(id.clone()).or_insert(0) += 1;
        Attachment {
            attached: self.clone(),
            id: Some(id.clone()),
        }
    }

    fn is_attached(&self, id: &QuestionId) -> bool {
        self.lock().contains_key(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<QuestionId, usize>> {
        // Each update is one whole change of one count: consistent even if a holder panicked.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One keyed call waiting on a question; dropping it detaches the call.
#[derive(Debug)]
pub(crate) struct Attachment {
    attached: Attached,
    id: Option<QuestionId>,
}

impl Attachment {
    /// Detaches now; returns the registry to check later.
    fn detach(mut self) -> Attached {
        self.release();
        self.attached.clone()
    }

    fn release(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let mut counts = self.attached.lock();
        if let Some(count) = counts.get_mut(&id) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&id);
            }
        }
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.release();
    }
}
