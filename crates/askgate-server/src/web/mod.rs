//! The web channel: askgate's own page, where a recipient answers through a
//! secret link (`/web/{key}`).
//!
//! [`WebChannel`] is the channel the engine delivers to; delivering shows the
//! question on the page, so nothing is sent anywhere. The page reads the
//! state (`api/state`: the first page of pending questions, how many are
//! pending, the latest ended) when it opens, the next pages (`api/pending`)
//! when the person asks for more, and after that is sent each changed
//! question over its event stream (`api/events`), in the shape the state
//! lists it, with the count after it: a person with thousands of questions
//! waiting gets a bounded state and a few hundred bytes per change, never
//! the whole list.

mod kind;
mod oidc;
mod person;
mod preview;
pub(crate) mod progress;

pub use kind::Web;
pub use oidc::{OidcPerson, OidcSettings, OidcSetupError, SignIn};
pub(crate) use oidc::{
    callback as oidc_callback, login as oidc_login, logout as oidc_logout, signed_out as oidc_signed_out,
};
pub use preview::preview;

use std::collections::BTreeMap;
use std::convert::Infallible;

use askgate_core::channel::{Channel, ChannelError, Delivery, DeliveryError, Outgoing};
use askgate_core::render::{ButtonLimits, FormLimits, FreeTextInput};
use askgate_core::request::MAX_QUESTIONS;
use askgate_core::{Capabilities, Presentation, QuestionId, Summary};
use askgate_engine::{DirectAnswer, DirectItem, Submitted};
use askgate_store::{QuestionRecord, StepKind};
use async_trait::async_trait;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::body::ApiJson;
use crate::error::ApiError;
use crate::resource::time;
use crate::{AppState, Change};
use person::{Person, person_for};

/// How many ended questions the page keeps showing (the state says so as
/// `recentLimit`, so that the page bounds what it is sent live the same way).
const RECENT_ON_PAGE: u32 = 10;

/// How many pending questions the state and each `api/pending` page list.
/// 50 is more than a person works through before scrolling back up (a card
/// is most of a phone's screen), yet keeps a page of questions of the size
/// agents ask (about 600 bytes each) near 30 KB, and the store reads it
/// from one index range however many are pending. "Show more" reads the
/// next 50.
const PENDING_PAGE: u32 = 50;

/// The most bytes of JSON a page of pending questions takes: a page stops
/// before the question that would take it past this (though it always has
/// one), so that 50 questions of the largest size askgate accepts make a
/// shorter page rather than a larger response. With [`RECENT_BYTES`], the
/// state stays under 100 KB: at most 64 KiB of pending questions, 24 KiB
/// of ended ones and a few hundred bytes of recipient and counts. (A single
/// question larger than this is sent alone: for any question the default
/// 64 KiB body limit lets in, the state stays under 100 KB all the same.)
const PAGE_BYTES: usize = 64 * 1024;

/// The most bytes of JSON the state's ended questions take (see
/// [`PAGE_BYTES`]): fewer than `recentLimit` of them when they are that large.
const RECENT_BYTES: usize = 24 * 1024;

const PAGE: &str = include_str!("../../assets/web.html");
const SCRIPT: &str = include_str!("../../assets/web.js");
/// The page's wording and how it words times (`askgateWords`), loaded before
/// [`SCRIPT`].
const WORDS: &str = include_str!("../../assets/web-words.js");
const STYLE: &str = include_str!("../../assets/web.css");

/// What askgate's page is called where askgate lists its channel kinds in
/// English (`askgate prompt render --help`). A summary names the page in
/// its reader's own language instead ([`askgate_core::Place::Page`]).
pub const DISPLAY_NAME: &str = "askgate's own web page";

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
            // What the page's card offers, declared as every channel does
            // (the conformance suite runs the scenarios these allow): no
            // typed messages; every question at once, its options as radios
            // or checkboxes beside a field for one's own words, its texts
            // whole (the largest a request holds fits these limits).
            capabilities: Capabilities::text(100_000)
                .with_buttons(ButtonLimits::new(16, 200, 255))
                .with_edits()
                .with_free_text(FreeTextInput::Inline)
                .with_private_notices()
                .without_typed_replies()
                .with_forms(FormLimits::new(MAX_QUESTIONS, 100_000, 100_000, 100_000).with_checkboxes()),
        }
    }
}

#[async_trait]
impl Channel for WebChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn display_name(&self) -> &str {
        DISPLAY_NAME
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    async fn deliver(&self, outgoing: &Outgoing<'_>) -> Result<Delivery, DeliveryError> {
        // The page lists pending questions itself; the "message" is the page
        // entry, named by the question so that delivering twice is one entry.
        // (The engine stores this with the question: `sends_nothing`.)
        Ok(Delivery::in_place(outgoing.question, outgoing.to))
    }

    async fn finish(
        &self,
        _delivery: &Delivery,
        _prompt: &Presentation,
        _summary: &Summary,
    ) -> Result<(), ChannelError> {
        // The page shows an ended question's summary from the store.
        Ok(())
    }

    fn sends_nothing(&self) -> bool {
        true
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

/// The person whose page `/web/{key}` is: for `me`, the person signed in
/// with OpenID Connect (401 `not_signed_in` without a session); for a link
/// key, the person it belongs to (404 for any other key).
async fn page_owner(state: &AppState, key: &str, headers: &HeaderMap) -> Result<Person, ApiError> {
    if key == oidc::ME {
        let name = oidc::session_person(state, headers)
            .await
            .ok_or_else(|| oidc::no_session(state))?;
        return person::person_named(state, name);
    }
    person_for(state, key)
}

/// `GET /web/{key}`. A wrong key gets a small page saying so when a browser
/// asks (a person followed a mistyped or old link), the API's JSON 404
/// otherwise.
pub(crate) async fn page(State(state): State<AppState>, Path(key): Path<String>, headers: HeaderMap) -> Response {
    if key == oidc::ME {
        if oidc::session_person(&state, &headers).await.is_none() {
            return oidc::sign_in_first(&state, &headers);
        }
    } else if let Err(error) = person_for(&state, &key) {
        return not_found_for(&headers, BAD_LINK, error);
    }
    (
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(PAGE),
    )
        .into_response()
}

/// A 404 for a route that has no page of its own (`/`): a small page
/// pointing at the page links when a browser asks, the API's JSON 404
/// (`not_found`) otherwise.
#[allow(clippy::unused_async, reason = "an axum handler is an async fn")]
pub(crate) async fn not_found(headers: HeaderMap) -> Response {
    not_found_for(&headers, NO_PAGE_HERE, ApiError::not_found("route"))
}

/// 404 as a page for a browser, as `error` for anyone else; either says it
/// depends on `Accept`, so that no cache hands one to the other.
fn not_found_for(headers: &HeaderMap, wording: Wording, error: ApiError) -> Response {
    let mut response = if wants_html(headers) {
        html_page(StatusCode::NOT_FOUND, wording)
    } else {
        error.into_response()
    };
    response
        .headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("accept"));
    response
}

/// What a page for a person says, in both of the chrome's languages (the
/// recipient, and so their locale, is not known here).
#[derive(Clone, Copy)]
struct Wording {
    title: &'static str,
    en: &'static str,
    zh: &'static str,
}

/// A page link whose key is wrong (mistyped, cut short, or replaced).
const BAD_LINK: Wording = Wording {
    title: "askgate: this link does not work",
    en: "This link does not work. Ask for a new one.",
    zh: "此链接无效，请索取新的链接。",
};

/// Anywhere else a browser lands, `/` above all.
const NO_PAGE_HERE: Wording = Wording {
    title: "askgate",
    en: "There is no page here. Your questions are at the link you were given, which starts with /web/.",
    zh: "这里没有页面。你的问题在发给你的链接里，链接以 /web/ 开头。",
};

/// Whether the client asked for HTML (a browser navigating) rather than
/// JSON or anything (`curl`, an API client, the page's own `fetch`).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            // `text/html;q=0` refuses HTML.
            let refused = parts.any(|param| {
                param
                    .trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("text/html") && !refused
        })
}

/// A small page in the page's own style; its text is ours, never a request's.
fn html_page(status: StatusCode, wording: Wording) -> Response {
    let Wording { title, en, zh } = wording;
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex, nofollow\">\n<meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n<link rel=\"stylesheet\" href=\"/assets/web.css\">\n\
         </head>\n<body>\n<header class=\"bar\"><div class=\"bar-inner\"><p class=\"brand\">askgate</p></div></header>\n\
         <main class=\"page\">\n<p class=\"notice\" data-kind=\"warn\" data-testid=\"notice\">{en}</p>\n\
         <p class=\"notice\" data-kind=\"warn\" lang=\"zh-CN\">{zh}</p>\n</main>\n</body>\n</html>\n"
    );
    (
        status,
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(body),
    )
        .into_response()
}

/// `GET /assets/web.js`.
pub(crate) async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

/// `GET /assets/web-words.js`.
pub(crate) async fn words() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], WORDS).into_response()
}

/// `GET /assets/web.css`.
pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// One question as the page shows it: in the state's lists and in an event
/// of the stream. An answer given elsewhere than the channel the page
/// answers through is summarized with where it was given. `recipient` is
/// whom it was asked of: the person, or a group they answer for.
fn entry(state: &AppState, record: &QuestionRecord) -> Value {
    let engine = &state.0.engine;
    let page = engine.page_channel(&record.recipient);
    let recipient = engine.recipient(&record.recipient).map_or_else(
        || json!({"name": record.recipient, "displayName": record.recipient}),
        |recipient| json!({"name": recipient.name, "displayName": recipient.display_name}),
    );
    json!({
        "id": record.id,
        "recipient": recipient,
        "status": record.status,
        "createdAt": time(record.created_at),
        "expiresAt": time(record.expires_at),
        // A reminder went out (taken in the store before it is sent): the
        // card's countdown turns red.
        "reminded": reminded(record),
        "resolvedAt": record.resolution.as_ref().map(|r| time(r.at)),
        "request": record.request,
        // Answered so far on any surface: the card shows those steps done.
        "progress": record.progress,
        "summary": engine.summary_of(record, Some(&page)),
    })
}

/// Whether a reminder step of `record`'s plan was taken.
fn reminded(record: &QuestionRecord) -> bool {
    record
        .steps
        .iter()
        .any(|step| step.kind == StepKind::Remind && step.done.is_some())
}

/// `GET /web/{key}/api/state`: the recipient, the first page of pending
/// questions (oldest first), how many are pending in all (`pendingCount`),
/// whether more are pending beyond the page (`more`: `api/pending` reads
/// them), and the latest ended questions (`recent`, the latest to end first).
pub(crate) async fn page_state(
    State(state): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let person = page_owner(&state, &key, &headers).await?;
    let engine = &state.0.engine;
    let recipient = engine
        .recipient(&person.name)
        .ok_or_else(|| ApiError::not_found("page"))?;
    let (pending, more) = pending_page(&state, &person, None).await?;
    let count = person::count(&state, &person)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let recent = person::ended(&state, &person, RECENT_ON_PAGE).await?;
    let (recent, _) = fill(&state, &recent, RECENT_ON_PAGE as usize, RECENT_BYTES, false);
    Ok(Json(json!({
        "recipient": {"name": recipient.name, "displayName": recipient.display_name, "locale": recipient.locale,
            "timeZone": recipient.waiting.zone.as_ref().map(askgate_core::when::Zone::name)},
        "pending": pending,
        "pendingCount": count,
        "more": more,
        "recent": recent,
        "recentLimit": RECENT_ON_PAGE,
    })))
}

/// The query of `api/pending`, read as plain pairs (as the agent API reads
/// `?wait=`), so that no query makes axum answer with a plain-text
/// rejection; parameters other than `after` are ignored.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(crate) struct PendingQuery(Vec<(String, String)>);

impl PendingQuery {
    /// The question to continue after: `None` for the first page. A value
    /// that is no question id at all, empty or given twice is a 400.
    fn after(&self) -> Result<Option<QuestionId>, ApiError> {
        let invalid = || {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "after is the id of the last question the page has, once.",
            )
            .at("after")
        };
        let mut afters = self.0.iter().filter(|(name, _)| name == "after");
        match (afters.next(), afters.next()) {
            (None, _) => Ok(None),
            (Some((_, id)), None) => QuestionId::parse(id).map(Some).map_err(|_| invalid()),
            (Some(_), Some(_)) => Err(invalid()),
        }
    }
}

/// `GET /web/{key}/api/pending?after={id}`: the next page of pending
/// questions, oldest first, after the question `after` (the last one the
/// page has; it may have ended since, and paging goes on from where it
/// was), in the state's shape: `pending`, `more`, `pendingCount`. Without
/// `after`, the first page. An `after` that is not one of this recipient's
/// questions is a 404 naming `after` (the store would start again from the
/// beginning, handing the page questions it already has; and another
/// recipient's question says nothing about this one's list).
pub(crate) async fn pending(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(query): Query<PendingQuery>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let person = page_owner(&state, &key, &headers).await?;
    let after = query.after()?;
    let engine = &state.0.engine;
    if let Some(after) = &after {
        let known = engine.get(after).await?.is_some_and(|record| person.sees(&record));
        if !known {
            return Err(ApiError::not_found("question").at("after"));
        }
    }
    let (pending, more) = pending_page(&state, &person, after.as_ref()).await?;
    let count = person::count(&state, &person)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({
        "pending": pending,
        "pendingCount": count,
        "more": more,
    })))
}

/// One page of `person`'s pending questions after `after`, as entries, and
/// whether more are pending beyond it.
async fn pending_page(
    state: &AppState,
    person: &Person,
    after: Option<&QuestionId>,
) -> Result<(Vec<Value>, bool), ApiError> {
    // One more than a page: whether it comes back says whether there is more.
    let records = person::pending(state, person, after, PENDING_PAGE + 1).await?;
    Ok(fill(state, &records, PENDING_PAGE as usize, PAGE_BYTES, true))
}

/// The entries of the first `records`, at most `limit`, that fit in
/// `budget` bytes of JSON (at least one when `at_least_one`, so that paging
/// always moves on), and whether any of `records` were left out.
fn fill(
    state: &AppState,
    records: &[QuestionRecord],
    limit: usize,
    budget: usize,
    at_least_one: bool,
) -> (Vec<Value>, bool) {
    let mut entries = Vec::new();
    let mut used = 0;
    for record in records.iter().take(limit) {
        let entry = entry(state, record);
        // `,` between entries.
        let size = entry.to_string().len() + 1;
        if used + size > budget && !(at_least_one && entries.is_empty()) {
            break;
        }
        used += size;
        entries.push(entry);
    }
    let more = entries.len() < records.len();
    (entries, more)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    answers: BTreeMap<String, AnswerEntry>,
}

impl AnswerBody {
    /// One item per question answered, as the engine takes them.
    pub(crate) fn items(self) -> Vec<DirectItem> {
        self.answers
            .into_iter()
            .map(|(id, entry)| DirectItem {
                id,
                options: entry.options,
                text: entry.text,
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerEntry {
    #[serde(default)]
    options: Vec<usize>,
    #[serde(default)]
    text: Option<String>,
}

/// The page and question of an answer or a skip, checked from the path
/// alone: a wrong key or a question id that cannot be one is refused before
/// a byte of the body is read, so that a client without the link cannot
/// hold a connection open by declaring a body it never sends.
pub(crate) struct PageQuestion {
    /// The person whose page it is.
    person: Person,
    id: QuestionId,
}

impl axum::extract::FromRequestParts<AppState> for PageQuestion {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Path((key, id)) = Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found("page"))?;
        let person = page_owner(state, &key, &parts.headers).await?;
        let id = QuestionId::parse(&id).map_err(|_| ApiError::not_found("question"))?;
        Ok(Self { person, id })
    }
}

async fn submit(state: &AppState, page: PageQuestion, answer: DirectAnswer) -> Result<Json<Value>, ApiError> {
    let PageQuestion { person, id } = page;
    match state.0.engine.submit(&person.name, &id, answer).await? {
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
    page: PageQuestion,
    ApiJson(body): ApiJson<AnswerBody>,
) -> Result<Json<Value>, ApiError> {
    submit(&state, page, DirectAnswer::Answers(body.items())).await
}

/// `POST /web/{key}/api/questions/{id}/skip`. The body (`{}`) must be JSON,
/// as every state-changing route's: a cross-site form cannot send it.
pub(crate) async fn skip(
    State(state): State<AppState>,
    page: PageQuestion,
    ApiJson(_): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    submit(&state, page, DirectAnswer::Skip).await
}

/// `GET /web/{key}/api/events`: a `changed` event whenever one of this
/// recipient's questions is created, progresses or ends, carrying that
/// question as the state lists it (pending, or ended with its summary; an
/// ended question leaves the pending list for the recent one), each
/// followed by a `count` event, `{"pendingCount": n}`, counted after the
/// change. When the stream fell behind and changes were lost, a `changed`
/// event with `{"missed": true}` tells the page to read the state again.
/// (The event keeps the name it had when it was a bare "read again": a page
/// loaded before an upgrade still reads the state on every event, and
/// ignores `count`.)
///
/// The count comes from the store, not from the page adding up events: a
/// page that holds one page of thousands of questions cannot tell whether
/// a pending question it has not loaded is new or one it counted already
/// (progress on it, or a change that crossed its read of the state), nor
/// whether one that ended was counted. Counted after each change, the last
/// count the page has is right once changes stop, however they interleaved.
pub(crate) async fn events(
    State(state): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let person = page_owner(&state, &key, &headers).await?;
    // Subscribed before the response starts: a page that reads the state
    // once the stream is open misses nothing in between.
    let changes = state.0.engine.subscribe();
    let stream = futures_util::stream::unfold(
        (changes, person, state, false),
        |(mut changes, person, state, count_due)| async move {
            if count_due {
                match person::count(&state, &person).await {
                    Ok(count) => {
                        let data = json!({"pendingCount": count});
                        let event = Event::default().event("count").data(data.to_string());
                        return Some((Ok(event), (changes, person, state, false)));
                    }
                    // The next change counts again; a page that reads the
                    // state meanwhile gets it counted there.
                    Err(error) => tracing::warn!(%error, person = %person.name, "could not count pending questions"),
                }
            }
            let (data, count_due) = match state.next_change(&mut changes, |record| person.sees(record)).await? {
                Change::Matching(record) => (entry(&state, &record), true),
                Change::Missed => (json!({"missed": true}), false),
            };
            let event = Event::default().event("changed").data(data.to_string());
            Some((Ok(event), (changes, person, state, count_due)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use askgate_core::Locale;
    use axum::Router;
    use axum::body::Body;
    use axum::http::{HeaderValue, Request};
    use axum::routing::get;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;

    #[test]
    fn the_page_takes_as_long_an_answer_as_askgate_does() {
        let limit = askgate_core::request::MAX_FREE_TEXT_CHARS;
        assert!(
            SCRIPT.contains(&format!("maxlength: '{limit}'")),
            "web.js caps the answer at {limit}"
        );
    }

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn only_a_client_asking_for_html_gets_html() {
        assert!(wants_html(&accept("text/html,application/xhtml+xml,*/*;q=0.8")));
        assert!(wants_html(&accept("application/json, TEXT/HTML; q=0.5")));
        assert!(!wants_html(&HeaderMap::new()));
        assert!(!wants_html(&accept("*/*")));
        assert!(!wants_html(&accept("application/json")));
        assert!(!wants_html(&accept("text/html;q=0")));
    }

    /// `/` as lib.rs routes it: a small page for a browser, JSON otherwise.
    #[tokio::test]
    async fn the_root_is_a_page_for_browsers_and_json_for_api_clients() {
        let router: Router = Router::new().route("/", get(not_found));
        let get_root = |accept: Option<&'static str>| {
            let mut request = Request::get("/");
            if let Some(accept) = accept {
                request = request.header(header::ACCEPT, accept);
            }
            router.clone().oneshot(request.body(Body::empty()).unwrap())
        };

        let response = get_root(Some("text/html,*/*;q=0.8")).await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert!(
            response.headers()[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert_eq!(response.headers()[header::VARY], "accept");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("There is no page here."), "{body}");
        assert!(body.contains("这里没有页面。"), "{body}");

        for accept in [None, Some("application/json")] {
            let response = get_root(accept).await.unwrap();
            assert_eq!(response.status(), StatusCode::NOT_FOUND);
            assert_eq!(response.headers()[header::VARY], "accept");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["error"]["code"], "not_found", "{body}");
        }
    }

    /// Where the page says what a chat channel says, it says it in the same
    /// words (`askgate-core`'s chrome): a person who uses both reads one askgate.
    /// The keys of one language's table in web-words.js's `DICT`: each line
    /// `key: '…',` (or `"…"`) between `start` and `end`.
    fn dict_keys(start: &str, end: &str) -> Vec<String> {
        let from = WORDS.find(start).expect("the table starts");
        let rest = &WORDS[from + start.len()..];
        let to = rest.find(end).expect("the table ends");
        rest[..to]
            .lines()
            .filter_map(|line| line.trim().split_once(':'))
            .map(|(key, _)| key.trim())
            .filter(|key| !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_word_of_the_page_is_there_in_chinese_too() {
        let en = dict_keys("    en: {\n", "\n    'zh-CN': {");
        let zh = dict_keys("    'zh-CN': {\n", "\n  };");
        assert!(en.len() > 40, "the English table was read: {en:?}");
        let missing: Vec<&String> = en.iter().filter(|key| !zh.contains(key)).collect();
        assert!(missing.is_empty(), "web-words.js has no zh-CN wording for {missing:?}");
        let extra: Vec<&String> = zh.iter().filter(|key| !en.contains(key)).collect();
        assert!(extra.is_empty(), "web-words.js has zh-CN wording only for {extra:?}");
    }

    #[test]
    fn the_page_words_shared_things_as_the_chrome_does() {
        for locale in [Locale::En, Locale::ZhCn] {
            let chrome = locale.chrome();
            for (key, words) in [
                ("empty", chrome.nothing_pending()),
                ("otherPlaceholder", chrome.free_text_placeholder()),
                ("submit", chrome.submit_button()),
                ("skip", chrome.skip_button()),
                ("submitted", chrome.answer_submitted()),
                ("skippedNotice", chrome.skip_submitted()),
                ("status_cancelled", chrome.cancelled_summary()),
                ("listSep", chrome.list_separator()),
            ] {
                let line = format!("{key}: '{words}',");
                assert!(WORDS.contains(&line), "web-words.js ({locale}) should have {line}");
            }
            // The countdown's units, as the text prompt words a duration.
            for (key, seconds, n) in [
                ("days", 86_400, 1),
                ("hours", 3600, 1),
                ("minutes", 900, 15),
                ("seconds", 45, 45),
            ] {
                let words = chrome.duration(seconds).replace(&n.to_string(), "{n}");
                let line = format!("{key}: '{words}',");
                assert!(WORDS.contains(&line), "web-words.js ({locale}) should have {line}");
            }
        }
    }

    /// A deadline on another day reads on the page as in a chat prompt
    /// (`askgate_core::when::local_deadline`): web.js fills its
    /// `deadlineDay` with its own weekday and month names, which must be
    /// the chrome's, in the same order.
    #[test]
    fn the_page_words_a_deadline_as_the_chat_prompts_do() {
        use askgate_core::when::{Zone, local_deadline};
        // Monday 7 Dec 2026, 09:32 UTC; then the same time every day for
        // 400 days (through 2027, which is not a leap year): every weekday
        // and every month.
        let start = 1_796_635_920_000_i64;
        let month_days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        for locale in [Locale::En, Locale::ZhCn] {
            let words = preview::page_words(locale);
            let weekdays: Vec<&str> = words["weekdays"].split(' ').collect();
            let months: Vec<&str> = words["months"].split(' ').collect();
            assert_eq!((weekdays.len(), months.len()), (7, 12), "web.js ({locale})");
            let (mut day, mut month) = (7, 11);
            for k in 1..=400_usize {
                day += 1;
                if day > month_days[month] {
                    (day, month) = (1, (month + 1) % 12);
                }
                let at = start + i64::try_from(k).unwrap() * 86_400_000;
                let page = words["deadlineDay"]
                    .replace("{weekday}", weekdays[k % 7])
                    .replace("{day}", &day.to_string())
                    .replace("{month}", months[month])
                    .replace("{time}", "09:32");
                assert_eq!(
                    page,
                    local_deadline(at, start, &Zone::utc(), locale),
                    "{locale}, day {k}"
                );
            }
        }
    }

    #[test]
    fn chinese_wording_puts_no_space_before_de() {
        assert!(WORDS.contains("forWho: '{name}的问题',"));
        let wording = WORDS.lines().filter(|line| !line.trim_start().starts_with("//"));
        for line in wording {
            assert!(!line.contains(" 的"), "a stray space before 的 in web.js: {line}");
        }
    }

    #[test]
    fn the_font_stack_has_common_cjk_system_fonts() {
        for font in [
            "\"PingFang SC\"",
            "\"Hiragino Sans GB\"",
            "\"Microsoft YaHei\"",
            "\"Noto Sans CJK SC\"",
            "\"Source Han Sans SC\"",
        ] {
            assert!(STYLE.contains(font), "web.css's font stack lacks {font}");
        }
    }

    /// The count and "Show more" are worded in both of the page's languages,
    /// with the numbers the page puts in them.
    #[test]
    fn the_page_words_its_count_and_show_more_in_both_languages() {
        for locale in [Locale::En, Locale::ZhCn] {
            let words = preview::page_words(locale);
            for (key, holes) in [
                ("waiting", &["{n}"][..]),
                ("shownOf", &["{shown}", "{n}"][..]),
                ("showMore", &[][..]),
                ("loadingMore", &[][..]),
            ] {
                let said = words.get(key).copied().unwrap_or_default();
                assert!(!said.is_empty(), "web-words.js ({locale}) should word {key}");
                for hole in holes {
                    assert!(
                        said.contains(hole),
                        "web.js ({locale}): {key} should have {hole}: {said}"
                    );
                }
            }
        }
    }
}
