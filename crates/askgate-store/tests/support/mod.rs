//! What the store's test files share: a store on a fresh file, and records
//! to put in it.
// Each test file uses part of it.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use askgate_core::channel::MessageRef;
use askgate_core::{AnswerItem, Answers, AskRequest, Locale, QuestionId, validate_json};
use askgate_store::{QuestionRecord, QuestionStatus, Resolution, SqliteStore};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tempfile::TempDir;

pub(crate) const CHANNEL: &str = "telegram";
pub(crate) const CONVERSATION: &str = "4242";

/// A store on a fresh file; the directory lives as long as the returned guard.
pub(crate) async fn store() -> (SqliteStore, TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("askgate.db");
    let store = SqliteStore::open(&path).await.expect("the store opens");
    (store, dir, path)
}

pub(crate) fn request() -> AskRequest {
    validate_json(
        r#"{"questions": [
            {"id": "deploy_target", "header": "Deploy", "question": "Where should I deploy?",
             "options": [{"label": "Staging (Recommended)", "description": "Safe to break"}, {"label": "Production"}],
             "multiSelect": false},
            {"id": "notify", "header": "Notify", "question": "Who should I tell?",
             "options": [{"label": "Team"}, {"label": "Nobody"}, {"label": "Ops"}],
             "multiSelect": true}
        ], "timeoutSeconds": 600}"#,
    )
    .expect("the test request is valid")
}

pub(crate) fn id(text: &str) -> QuestionId {
    QuestionId::parse(text).expect("a well-formed question id")
}

pub(crate) fn message(conversation: &str, message: &str) -> MessageRef {
    MessageRef {
        conversation: conversation.to_owned(),
        message: message.to_owned(),
    }
}

/// A pending question with only the required fields set.
pub(crate) fn question(name: &str, created_at: i64) -> QuestionRecord {
    QuestionRecord {
        id: id(name),
        status: QuestionStatus::Pending,
        agent: "build-bot".to_owned(),
        session_id: None,
        run_id: None,
        recipient: "alice".to_owned(),
        channel: CHANNEL.to_owned(),
        conversation: CONVERSATION.to_owned(),
        locale: Locale::En,
        request: request(),
        created_at,
        expires_at: created_at + 600_000,
        delivery: None,
        progress: Answers::new(),
        resolution: None,
    }
}

pub(crate) fn in_session(mut record: QuestionRecord, agent: &str, session: Option<&str>) -> QuestionRecord {
    agent.clone_into(&mut record.agent);
    record.session_id = session.map(str::to_owned);
    record
}

pub(crate) fn ended(status: QuestionStatus, at: i64, reason: &str) -> Resolution {
    Resolution {
        status,
        at,
        by: None,
        answers: None,
        reason: Some(reason.to_owned()),
        via: None,
    }
}

pub(crate) fn answers(request: &AskRequest) -> Answers {
    let mut answers = Answers::new();
    answers.set(
        request,
        "notify",
        vec![
            AnswerItem::Option {
                index: 0,
                label: "Team".to_owned(),
            },
            AnswerItem::FreeText {
                text: "and the on-call".to_owned(),
            },
        ],
    );
    answers.set(
        request,
        "deploy_target",
        vec![AnswerItem::Option {
            index: 0,
            label: "Staging (Recommended)".to_owned(),
        }],
    );
    answers
}

pub(crate) fn ids(records: &[QuestionRecord]) -> Vec<&str> {
    records.iter().map(|record| record.id.as_str()).collect()
}

pub(crate) async fn raw_connection(path: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path))
        .await
        .expect("a raw connection to the store's file")
}
