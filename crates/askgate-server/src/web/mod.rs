//! The web channel: askgate's own page, where a recipient answers through a
//! secret link (`/web/{key}`).
//!
//! [`WebChannel`] is the channel the engine delivers to; delivering shows the
//! question on the page, so nothing is sent anywhere. The page reads the
//! whole state (`api/state`) when it opens, and after that is sent each
//! changed question over its event stream (`api/events`), in the shape the
//! state lists it: a person with thousands of questions waiting gets a few
//! hundred bytes per change, not the whole list again.

mod kind;

pub use kind::Web;

use std::collections::BTreeMap;
use std::convert::Infallible;

use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, MessageRef, Outgoing, UserRef};
use askgate_core::render::{ButtonLimits, FreeTextInput};
use askgate_core::{Capabilities, Presentation, QuestionId};
use askgate_engine::{DirectAnswer, DirectItem, Submitted, summary_of};
use askgate_store::QuestionRecord;
use async_trait::async_trait;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::body::ApiJson;
use crate::error::ApiError;
use crate::resource::time;
use crate::{AppState, Change};

/// How many ended questions the page keeps showing (the state says so as
/// `recentLimit`, so that the page bounds what it is sent live the same way).
const RECENT_ON_PAGE: u32 = 10;

const PAGE: &str = include_str!("../../assets/web.html");
const SCRIPT: &str = include_str!("../../assets/web.js");
const STYLE: &str = include_str!("../../assets/web.css");

/// The channel behind askgate's own page.
#[derive(Debug, Clone)]
pub struct WebChannel {
    name: String,
    capabilities: Capabilities,
}

impl WebChannel {
    /// A web channel with this configured name.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            capabilities: Capabilities::text(100_000)
                .with_buttons(ButtonLimits::new(16, 200, 255))
                .with_edits()
                .with_free_text(FreeTextInput::Inline)
                .with_private_notices(),
        }
    }
}

#[async_trait]
impl Channel for WebChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        // The page lists pending questions itself; the "message" is the page
        // entry, named by the question so that delivering twice is one entry.
        Ok(Delivery::new(vec![MessageRef {
            conversation: outgoing.to.conversation.clone(),
            message: outgoing.question.to_string(),
        }]))
    }

    async fn finish(&self, _delivery: &Delivery, _prompt: &Presentation, _summary: &str) -> Result<(), ChannelError> {
        // The page shows an ended question's summary from the store.
        Ok(())
    }
}

/// A secret page link: its key and the recipient it belongs to.
#[derive(Clone, PartialEq, Eq)]
pub struct WebKey {
    /// The secret in the link.
    pub key: String,
    /// The recipient's name.
    pub recipient: String,
}

impl std::fmt::Debug for WebKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebKey")
            .field("key", &"<redacted>")
            .field("recipient", &self.recipient)
            .finish()
    }
}

/// The recipient a link key belongs to; 404 for any other key.
fn recipient_for(state: &AppState, key: &str) -> Result<String, ApiError> {
    let mut found = None;
    // Compared in constant time, every key, so that timing tells nothing.
    for web in &state.0.web_keys {
        if constant_time_eq::constant_time_eq(web.key.as_bytes(), key.as_bytes()) {
            found = Some(web.recipient.clone());
        }
    }
    found.ok_or_else(|| ApiError::not_found("page"))
}

/// `GET /web/{key}`.
pub(crate) async fn page(State(state): State<AppState>, Path(key): Path<String>) -> Result<Response, ApiError> {
    recipient_for(&state, &key)?;
    Ok((
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(PAGE),
    )
        .into_response())
}

/// `GET /assets/web.js`.
pub(crate) async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

/// `GET /assets/web.css`.
pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// One question as the page shows it: in the state's lists and in an event
/// of the stream.
fn entry(record: &QuestionRecord) -> Value {
    json!({
        "id": record.id,
        "status": record.status,
        "createdAt": time(record.created_at),
        "expiresAt": time(record.expires_at),
        "resolvedAt": record.resolution.as_ref().map(|r| time(r.at)),
        "request": record.request,
        "summary": summary_of(record),
    })
}

/// `GET /web/{key}/api/state`: the recipient, pending and recent questions.
pub(crate) async fn page_state(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = recipient_for(&state, &key)?;
    let engine = &state.0.engine;
    let recipient = engine.recipient(&name).ok_or_else(|| ApiError::not_found("page"))?;
    let store = engine.store();
    let pending = store
        .pending_for_recipient(&name)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let recent = store
        .recent_for_recipient(&name, RECENT_ON_PAGE * 2)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let recent: Vec<Value> = recent
        .iter()
        .filter(|r| r.status.is_final())
        .take(RECENT_ON_PAGE as usize)
        .map(entry)
        .collect();
    Ok(Json(json!({
        "recipient": {"name": recipient.name, "displayName": recipient.display_name, "locale": recipient.locale},
        "pending": pending.iter().map(entry).collect::<Vec<_>>(),
        "recent": recent,
        "recentLimit": RECENT_ON_PAGE,
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    answers: BTreeMap<String, AnswerEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerEntry {
    #[serde(default)]
    options: Vec<usize>,
    #[serde(default)]
    text: Option<String>,
}

async fn submit(state: &AppState, key: &str, id: &str, answer: DirectAnswer) -> Result<Json<Value>, ApiError> {
    let name = recipient_for(state, key)?;
    let id = QuestionId::parse(id).map_err(|_| ApiError::not_found("question"))?;
    let engine = &state.0.engine;
    let recipient = engine.recipient(&name).ok_or_else(|| ApiError::not_found("page"))?;
    let by = UserRef {
        id: format!("web:{name}"),
        display_name: recipient.display_name.clone(),
    };
    match engine.submit(&name, &id, by, answer).await? {
        Submitted::Resolved(record) => Ok(Json(json!({"status": record.status}))),
        Submitted::AlreadyEnded(record) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "question_ended",
            format!("This question has ended ({}).", record.status),
        )),
    }
}

/// `POST /web/{key}/api/questions/{id}/answer`.
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path((key, id)): Path<(String, String)>,
    ApiJson(body): ApiJson<AnswerBody>,
) -> Result<Json<Value>, ApiError> {
    let items = body
        .answers
        .into_iter()
        .map(|(id, entry)| DirectItem {
            id,
            options: entry.options,
            text: entry.text,
        })
        .collect();
    submit(&state, &key, &id, DirectAnswer::Answers(items)).await
}

/// `POST /web/{key}/api/questions/{id}/skip`. The body (`{}`) must be JSON,
/// as every state-changing route's: a cross-site form cannot send it.
pub(crate) async fn skip(
    State(state): State<AppState>,
    Path((key, id)): Path<(String, String)>,
    ApiJson(_): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    submit(&state, &key, &id, DirectAnswer::Skip).await
}

/// `GET /web/{key}/api/events`: a `changed` event whenever one of this
/// recipient's questions is created, progresses or ends, carrying that
/// question as the state lists it (pending, or ended with its summary; an
/// ended question leaves the pending list for the recent one). When the
/// stream fell behind and changes were lost, a `changed` event with
/// `{"missed": true}` tells the page to read the whole state again. (The
/// event keeps the name it had when it was a bare "read again": a page
/// loaded before an upgrade still reads the state on every event.)
pub(crate) async fn events(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let name = recipient_for(&state, &key)?;
    // Subscribed before the response starts: a page that reads the state
    // once the stream is open misses nothing in between.
    let changes = state.0.engine.subscribe();
    let stream = futures_util::stream::unfold((changes, name, state), |(mut changes, name, state)| async move {
        let data = match state
            .next_change(&mut changes, |record| record.recipient == name)
            .await?
        {
            Change::Matching(record) => entry(&record),
            Change::Missed => json!({"missed": true}),
        };
        let event = Event::default().event("changed").data(data.to_string());
        Some((Ok(event), (changes, name, state)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
