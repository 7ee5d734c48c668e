//! A PostgreSQL schema of a test's own, on the test server: the store suite
//! and the end-to-end tests of `[store] kind = "postgres"` each get an empty
//! schema, so that tests run side by side on one database and leave nothing
//! behind.
//!
//! The server is `ASKGATE_TEST_POSTGRES_URL`, else the local PostgreSQL with
//! trust authentication (`postgres://postgres@127.0.0.1:5432/postgres`)
//! that `.ci/run` starts when it is not running. No server is a failure
//! with a sentence saying so, never a skipped test.

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, Connection as _};

/// The test server's URL.
pub fn server_url() -> String {
    std::env::var("ASKGATE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// An empty schema, dropped (with everything in it) when this is dropped.
#[derive(Debug)]
pub struct Schema {
    name: String,
}

impl Schema {
    /// Creates a schema with a name no other test has.
    ///
    /// # Panics
    ///
    /// When the test server cannot be reached, naming it and how to start it.
    pub async fn create() -> Self {
        let url = server_url();
        let mut admin = PgConnection::connect(&url).await.unwrap_or_else(|error| {
            panic!(
                "PostgreSQL is not reachable at {url}: {error}. askgate's tests need it: start it \
                 (`pg_ctlcluster <version> main start`, as .ci/run does) or point \
                 ASKGATE_TEST_POSTGRES_URL at one"
            )
        });
        let name = format!("askgate_test_{}", ulid::Ulid::new().to_string().to_lowercase());
        sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .execute(&mut admin)
            .await
            .expect("a schema for the test");
        admin.close().await.ok();
        Self { name }
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A URL whose connections see only this schema (`search_path`), for a
    /// configuration's `[store] url`.
    pub fn url(&self) -> String {
        let server = server_url();
        let joiner = if server.contains('?') { '&' } else { '?' };
        format!("{server}{joiner}options=-c%20search_path%3D{}", self.name)
    }

    /// The same as connection options, for `PgStore::connect_with`.
    ///
    /// # Panics
    ///
    /// When `ASKGATE_TEST_POSTGRES_URL` is not a PostgreSQL URL.
    pub fn options(&self) -> PgConnectOptions {
        let options: PgConnectOptions = server_url()
            .parse()
            .expect("ASKGATE_TEST_POSTGRES_URL is a PostgreSQL URL");
        options.options([("search_path", self.name.as_str())])
    }

    /// Runs one statement in the schema, outside any store.
    ///
    /// # Panics
    ///
    /// When the statement fails: a test's own SQL.
    pub async fn execute(&self, sql: &str) {
        let mut conn = self.connect().await;
        sqlx::query(AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }

    /// Cuts the connections listening on this schema's change channel
    /// (`askgate:<schema>`), as a network fault would: every store's change
    /// feed on the schema, and no other test's.
    ///
    /// # Panics
    ///
    /// When the test server cannot be reached any more.
    pub async fn cut_listeners(&self) {
        self.execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE query = 'LISTEN \"askgate:{}\"' AND pid <> pg_backend_pid()",
            self.name
        ))
        .await;
    }

    /// A connection of the schema's own.
    ///
    /// # Panics
    ///
    /// When the test server cannot be reached any more.
    pub async fn connect(&self) -> PgConnection {
        PgConnection::connect_with(&self.options())
            .await
            .expect("a connection to the test schema")
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // Drop is not async: a thread of its own with a small runtime,
        // joined, so that the schema is gone when the test ends.
        let (url, name) = (server_url(), self.name.clone());
        let dropped = std::thread::spawn(move || -> Result<(), String> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| error.to_string())?;
            runtime.block_on(async {
                let mut admin = PgConnection::connect(&url).await.map_err(|error| error.to_string())?;
                sqlx::query(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {name} CASCADE")))
                    .execute(&mut admin)
                    .await
                    .map_err(|error| error.to_string())?;
                Ok(())
            })
        })
        .join();
        let failed = match dropped {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error,
            Err(panic) => format!("{panic:?}"),
        };
        // A test that failed already says why; a second panic would abort.
        assert!(
            std::thread::panicking(),
            "the test schema {} could not be dropped: {failed}",
            self.name
        );
    }
}
