//! What an admin is told about a PostgreSQL URL: where it points and what
//! answered, or what is wrong in words (the server unreachable, the login
//! refused, the database missing), never showing the password.

use std::str::FromStr as _;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection as _, Executor as _};

use super::PgStore;
use crate::StoreError;

impl PgStore {
    /// Whether `url` reads as a PostgreSQL URL, without connecting: the
    /// parser's complaint otherwise (which never repeats the URL).
    pub fn check_url(url: &str) -> Result<(), StoreError> {
        // sqlx reads any scheme (a mysql:// URL would be tried as PostgreSQL).
        let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
        if !matches!(scheme, "postgres" | "postgresql") {
            return Err(StoreError::Unavailable(
                "the URL is not a PostgreSQL URL: it must start with postgres://".to_owned(),
            ));
        }
        PgConnectOptions::from_str(url)
            .map(drop)
            .map_err(|error| StoreError::Unavailable(format!("the URL is not a PostgreSQL URL: {error}")))
    }

    /// Connects once, without migrating, and says what answered
    /// ("PostgreSQL 15.19, database \"askgate\" on db:5432 as askgate"), or
    /// why it could not ([`StoreError::Unavailable`], in words).
    pub async fn check(url: &str) -> Result<String, StoreError> {
        Self::check_url(url)?;
        let options = PgConnectOptions::from_str(url)?;
        let mut conn = PgConnection::connect_with(&options)
            .await
            .map_err(|error| explain(&options, &error))?;
        let version: String = sqlx::query_scalar("SHOW server_version")
            .fetch_one(&mut conn)
            .await
            .map_err(|error| explain(&options, &error))?;
        conn.execute("SELECT 1")
            .await
            .map_err(|error| explain(&options, &error))?;
        conn.close().await.ok();
        Ok(format!(
            "PostgreSQL {version}, database \"{}\" on {} as {}",
            database(&options),
            place(&options),
            options.get_username()
        ))
    }
}

/// Where the options point: `host:port`, or the socket.
fn place(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}

fn database(options: &PgConnectOptions) -> &str {
    options.get_database().unwrap_or(options.get_username())
}

/// A connection's failure, in words an admin can act on. PostgreSQL's own
/// messages name the user and the database, never the password.
pub(super) fn explain(options: &PgConnectOptions, error: &sqlx::Error) -> StoreError {
    let at = place(options);
    let said = match error {
        sqlx::Error::Io(io) => format!("cannot reach the PostgreSQL server at {at}: {io}"),
        sqlx::Error::Tls(tls) => format!("the TLS connection to {at} failed: {tls}"),
        sqlx::Error::PoolTimedOut => format!("the PostgreSQL server at {at} did not answer in time"),
        sqlx::Error::Database(db) => match db.code().as_deref() {
            // invalid_password, invalid_authorization_specification
            Some("28P01" | "28000") => format!(
                "the PostgreSQL server at {at} refused the login of user \"{}\": {}",
                options.get_username(),
                db.message()
            ),
            // invalid_catalog_name
            Some("3D000") => format!(
                "the database \"{}\" does not exist on {at}: create it (createdb) or fix the URL",
                database(options)
            ),
            _ => format!("the PostgreSQL server at {at} said: {}", db.message()),
        },
        other => format!("PostgreSQL at {at}: {other}"),
    };
    StoreError::Unavailable(said)
}
