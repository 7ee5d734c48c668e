//! What the store's test files share: a fresh store of either kind (a
//! SQLite file in a temporary directory, or a PostgreSQL schema of its own),
//! the macro that runs one test on both, and records to put in them.
// Test support: a failed setup step is the test's failure.
#![allow(clippy::unwrap_used)]
// Each test file uses part of it.
#![allow(dead_code, unreachable_pub, unused_macros)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use askgate_core::channel::MessageRef;
use askgate_core::{AnswerItem, Answers, AskRequest, Locale, QuestionId, validate_json};
use askgate_store::{PgStore, QuestionRecord, QuestionStatus, Resolution, SqliteStore, Store, StoreError, Surface};
use askgate_testkit::postgres::Schema;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{AssertSqlSafe, Connection};
use tempfile::TempDir;

/// Declares each named test of the file (an `async fn(Fresh)`) twice: on a
/// fresh SQLite file (`on_sqlite::name`) and on a fresh PostgreSQL schema
/// (`on_postgres::name`). Attributes before a name (`#[should_panic]`) go
/// on both.
macro_rules! on_both_stores {
    ($($(#[$attr:meta])* $test:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                $(#[$attr])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(crate::support::Fresh::sqlite().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                $(#[$attr])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(crate::support::Fresh::postgres().await).await;
                }
            )*
        }
    };
}
#[allow(unused_imports)] // by the files that run on both stores
pub(crate) use on_both_stores;

/// A store no other test touches, and a way to reach its database behind
/// the store's back (to break a row, or to count what the store keeps).
pub(crate) struct Fresh {
    pub(crate) store: Arc<dyn Store>,
    place: Place,
}

enum Place {
    Sqlite { _dir: TempDir, path: PathBuf },
    Postgres(Schema),
}

impl Fresh {
    /// A store on a new file in a new temporary directory.
    pub(crate) async fn sqlite() -> Self {
        let (store, dir, path) = store().await;
        Self {
            store: Arc::new(store),
            place: Place::Sqlite { _dir: dir, path },
        }
    }

    /// A store in a new schema of the test PostgreSQL (dropped again when
    /// the test ends). No PostgreSQL is a failure, never a skip.
    pub(crate) async fn postgres() -> Self {
        let schema = Schema::create().await;
        let store = PgStore::connect_with(schema.options(), 4)
            .await
            .expect("the PostgreSQL store opens");
        Self {
            store: Arc::new(store),
            place: Place::Postgres(schema),
        }
    }

    /// The store, to share with tasks.
    pub(crate) fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// Another store on the same database: a restart, or another replica.
    pub(crate) async fn reopen(&self) -> Arc<dyn Store> {
        match &self.place {
            Place::Sqlite { path, .. } => Arc::new(SqliteStore::open(path).await.expect("the file opens again")),
            Place::Postgres(schema) => Arc::new(
                PgStore::connect_with(schema.options(), 4)
                    .await
                    .expect("the schema opens again"),
            ),
        }
    }

    /// Another store on the same database, or why it could not open.
    pub(crate) async fn try_reopen(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match &self.place {
            Place::Sqlite { path, .. } => Arc::new(SqliteStore::open(path).await?),
            Place::Postgres(schema) => Arc::new(PgStore::connect_with(schema.options(), 4).await?),
        })
    }

    /// Whether the store is the SQLite one (for SQL only one understands).
    pub(crate) fn is_sqlite(&self) -> bool {
        matches!(self.place, Place::Sqlite { .. })
    }

    /// Runs SQL both databases understand, outside the store.
    pub(crate) async fn execute(&self, sql: &str) {
        let sql = AssertSqlSafe(sql.to_owned());
        match &self.place {
            Place::Sqlite { path, .. } => {
                sqlx::query(sql).execute(&mut raw_connection(path).await).await.unwrap();
            }
            Place::Postgres(schema) => {
                sqlx::query(sql).execute(&mut schema.connect().await).await.unwrap();
            }
        }
    }

    /// The one integer a query selects (`CAST(… AS BIGINT)` where
    /// PostgreSQL's type would be another).
    pub(crate) async fn int(&self, sql: &str) -> i64 {
        self.scalar(sql).await
    }

    /// The one text a query selects.
    pub(crate) async fn text(&self, sql: &str) -> String {
        self.scalar(sql).await
    }

    /// The one value a query selects, of a type both databases decode.
    async fn scalar<T>(&self, sql: &str) -> T
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Sqlite>
            + sqlx::Type<sqlx::Sqlite>
            + for<'r> sqlx::Decode<'r, sqlx::Postgres>
            + sqlx::Type<sqlx::Postgres>
            + Send
            + Unpin,
    {
        let sql = AssertSqlSafe(sql.to_owned());
        match &self.place {
            Place::Sqlite { path, .. } => sqlx::query_scalar(sql)
                .fetch_one(&mut raw_connection(path).await)
                .await
                .unwrap(),
            Place::Postgres(schema) => sqlx::query_scalar(sql)
                .fetch_one(&mut schema.connect().await)
                .await
                .unwrap(),
        }
    }
}

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
        surfaces: vec![Surface::sending(CHANNEL, "telegram", CONVERSATION)],
        locale: Locale::En,
        request: request(),
        created_at,
        expires_at: created_at + 600_000,
        progress: Answers::new(),
        resolution: None,
        steps: Vec::new(),
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
        surface: None,
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
