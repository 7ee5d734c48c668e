//! Reads of one question by id, on the caller's own thread.
//!
//! The store's other reads run on sqlx's pool, where every statement is a
//! hand-off to the connection's worker thread and back: two thread wake-ups,
//! each costing more on a loaded machine than the read itself (a lookup by
//! primary key in a WAL file, tens of microseconds). The lookup by id is on
//! every path a person's answer and a waiting agent take, so it runs here,
//! on a few `rusqlite` connections kept for it, without leaving the task's
//! thread. The service benchmark shows what it saved, at one cycle in
//! flight (`crates/askgate-server/benches/service.rs`).
//!
//! It never waits: a WAL reader does not wait for the writer, and these
//! connections have no busy timeout, so a read that would have to wait (the
//! rare lock a checkpoint or a recovery takes) fails at once and is made on
//! sqlx's pool instead, which waits as every other read does. So does a read
//! that fails in any other way: the pool's read then says what is wrong.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use askgate_core::QuestionId;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::row::QuestionRow;

/// Connections kept between reads; a read that finds none opens one.
const KEPT: usize = 4;

/// A read that could not be made on the caller's thread: make it on the
/// pool.
#[derive(Debug)]
pub(super) struct OnThePool;

/// The connections of the reads on the caller's thread.
#[derive(Debug)]
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    pub(super) fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            idle: Mutex::new(Vec::with_capacity(KEPT)),
        }
    }

    /// The question's row (`None`: no such question), or [`OnThePool`]
    /// when this read could not be made here.
    pub(super) fn question(&self, id: &QuestionId) -> Result<Option<QuestionRow>, OnThePool> {
        let connection = self.take().ok_or(OnThePool)?;
        match QuestionRow::by_id(&connection, id) {
            Ok(row) => {
                self.give_back(connection);
                Ok(row)
            }
            // The connection is dropped: whatever went wrong stays with it.
            Err(error) => {
                tracing::debug!(channel = "sqlite", %error, "a read by id is made on the pool instead");
                Err(OnThePool)
            }
        }
    }

    fn take(&self) -> Option<Connection> {
        let kept = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        kept.or_else(|| self.open())
    }

    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < KEPT {
            idle.push(connection);
        }
    }

    /// A read-only connection that never waits for a lock (no busy
    /// timeout), never creates the file, and never checkpoints when it
    /// closes (read-only, it could not; said all the same, as for the
    /// writer's connection: a file changed in place must not get askgate's
    /// pages, `health.rs`).
    fn open(&self) -> Option<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let opened = Connection::open_with_flags(&self.path, flags).and_then(|connection| {
            connection.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
            Ok(connection)
        });
        match opened {
            Ok(connection) => Some(connection),
            Err(error) => {
                tracing::debug!(channel = "sqlite", %error, "no connection for a read by id; made on the pool instead");
                None
            }
        }
    }
}
