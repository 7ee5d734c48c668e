//! `POST /web/{key}/api/questions/{id}/progress`: the steps a person
//! answered on the page, saved as they go (on Next), into the question's
//! stored progress, the one a partial chat reply saves. A reload or another
//! device opens the card on the first step still missing, and a chat reply
//! finishes it.

use askgate_engine::PageProgress;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{AnswerBody, PageQuestion};
use crate::AppState;
use crate::body::ApiJson;
use crate::error::ApiError;

/// The body is the answer route's, `{"answers": {<questionId>: {"options":
/// [...], "text": "..."}}}`, holding only the steps answered so far. Each
/// is checked as an answer is (`invalid_answer` or `answer_too_long`, with
/// its path); a question that has ended is a 409 `question_ended`. The
/// answer is the question's status and progress after the save.
pub(crate) async fn save(
    State(state): State<AppState>,
    page: PageQuestion,
    ApiJson(body): ApiJson<AnswerBody>,
) -> Result<Json<Value>, ApiError> {
    let PageQuestion { person, id } = page;
    match state
        .0
        .engine
        .save_page_progress(&person.name, &id, body.items())
        .await?
    {
        PageProgress::Saved(record) => Ok(Json(json!({"status": record.status, "progress": record.progress}))),
        PageProgress::AlreadyEnded(record) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "question_ended",
            format!("This question has ended ({}).", record.status),
        )),
        // A new outcome the page does not know: nothing it could act on.
        _ => Err(ApiError::new(
            StatusCode::CONFLICT,
            "question_ended",
            "This question can no longer be answered.",
        )),
    }
}
