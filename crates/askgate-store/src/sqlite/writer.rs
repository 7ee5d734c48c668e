//! The writer thread: every write of the embedded store, with group commit.
//!
//! One thread owns the one writing connection. A write is sent to it as a
//! closure over that connection and answered once: the caller's task hands
//! off once and is woken once, instead of once per SQL statement as with
//! sqlx's SQLite driver (whose every statement is a round trip to its own
//! worker thread: 75 context switches per ask→answer cycle were measured).
//! That is why writes use `rusqlite` here while reads stay on sqlx's pool:
//! sqlx offers no way to run several statements in one hand-off.
//!
//! **Group commit.** The thread takes every write waiting when it is free
//! (up to [`MAX_BATCH`]), runs them in one `BEGIN IMMEDIATE` transaction,
//! each in its own savepoint, and commits once: one fsync for all of them.
//! Nobody is answered before that commit is durable (`synchronous = FULL`),
//! so what a caller is told was saved survives a crash or a power loss.
//!
//! - A write refused by a rule (a session busy, a cap reached, an unknown
//!   question) is rolled back to its savepoint, and the others still commit.
//! - A write that breaks (a full disk, an I/O error) or a commit that fails
//!   rolls the whole transaction back; the writes are then run again one per
//!   transaction, so that each gets its own outcome and no write is lost
//!   because another failed.
//! - When the transaction cannot begin (the file replaced or changed, the
//!   lock held by another process past the busy timeout), nothing ran:
//!   every write gets the same error at once.
//! - The file is checked again after the commit ([`Health::check`]): a file
//!   overwritten while the transaction ran gets no write acknowledged; each
//!   gets the error that says so.
//!
//! After a failure the connection is dropped and the next write opens a new
//! one, so that a connection left in an unknown state by SQLite (which may
//! roll a transaction back on its own after `SQLITE_FULL`) is never reused.
//!
//! Each write's outcome goes to readiness (`crate::readiness`), except the
//! readiness probe's own ([`Writer::probe`]).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use super::health::{FileRefusal, Health};
use crate::StoreError;
use crate::readiness::Readiness;

/// The most writes one transaction takes. Bounds how long one commit holds
/// the lock and how much work a failure makes run again.
const MAX_BATCH: usize = 512;

/// Writes wait this long for another process's write lock.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A write, as the caller hands it over: run with the connection inside the
/// writer's transaction, it may be run again when its batch failed.
pub(super) type Work<T> = dyn Fn(&Connection) -> Result<T, StoreError> + Send;

/// The handle to the writer thread, shared by every clone of the store.
#[derive(Debug)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Message>,
}

enum Message {
    Job(Box<dyn Job>),
    /// Finish the writes sent before, close the connection, and stop.
    Close(oneshot::Sender<()>),
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Job(_) => "Job",
            Self::Close(_) => "Close",
        })
    }
}

impl Writer {
    /// Opens the writing connection to `path` (which must exist: the
    /// migrations created it) and starts the thread.
    pub(super) fn start(path: &Path, health: Arc<Health>, readiness: Arc<Readiness>) -> Result<Self, StoreError> {
        let connection = open(path)?;
        let (jobs, queue) = mpsc::channel();
        let thread = Thread {
            path: path.to_owned(),
            connection: Some(connection),
            health,
            readiness,
        };
        std::thread::Builder::new()
            .name("askgate-sqlite-writer".to_owned())
            .spawn(move || thread.run(&queue))
            .map_err(|error| StoreError::Unavailable(format!("the writer thread could not start: {error}")))?;
        Ok(Self { jobs })
    }

    /// Runs `work` in the next transaction and returns its outcome once
    /// that transaction is committed (or failed).
    pub(super) async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.send(work, false).await
    }

    /// Like [`Writer::write`], for readiness's own probe: its outcome is
    /// the caller's to weigh, not a write's that readiness follows.
    pub(super) async fn probe<F>(&self, work: F) -> Result<(), StoreError>
    where
        F: Fn(&Connection) -> Result<(), StoreError> + Send + 'static,
    {
        self.send(work, true).await
    }

    async fn send<T, F>(&self, work: F, probe: bool) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, outcome) = oneshot::channel();
        let job = Op {
            work: Box::new(work),
            probe,
            outcome: None,
            reply,
        };
        self.jobs.send(Message::Job(Box::new(job))).map_err(|_| closed())?;
        outcome.await.map_err(|_| closed())?
    }

    /// Finishes the writes sent so far, closes the connection and stops the
    /// thread; writes after this fail.
    pub(super) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.jobs.send(Message::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the store is closed".to_owned())
}

/// Opens a writing connection with the settings every write relies on.
fn open(path: &Path) -> Result<Connection, StoreError> {
    // No CREATE: a file deleted behind askgate's back must not be recreated
    // empty (the health check refuses before this, this is the second lock).
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let connection = Connection::open_with_flags(path, flags).map_err(unavailable)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(unavailable)?;
    // FULL, not WAL's usual NORMAL: with NORMAL a commit is durable only
    // after the next checkpoint, and a power loss can undo it. An answer the
    // person saw acknowledged must be on disk, so every commit syncs the WAL.
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(unavailable)?;
    Ok(connection)
}

/// Connections kept open until the process exits: the writer's, once the
/// file was changed in place. While one connection of the process stays
/// open no other can take the lock that closing the last one takes to
/// checkpoint the `-wal` file into the database file, which would write
/// askgate's pages into the file that is there now (a restored backup).
static KEPT: Mutex<Vec<Connection>> = Mutex::new(Vec::new());

/// A database failure as the store reports it: the database cannot take
/// writes now, for the reason SQLite gives.
#[expect(clippy::needless_pass_by_value, reason = "written `map_err(unavailable)`")]
pub(super) fn unavailable(error: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

/// One write waiting for its outcome.
trait Job: Send {
    /// Whether this is readiness's probe, whose outcome readiness does not
    /// follow.
    fn is_probe(&self) -> bool;
    /// Runs the write inside the open transaction.
    fn apply(&mut self, connection: &Connection) -> Applied;
    /// Tells readiness the outcome of the last [`Job::apply`] (a probe's
    /// excepted).
    fn note(&self, readiness: &Readiness);
    /// Answers with the outcome of the last [`Job::apply`].
    fn reply(self: Box<Self>);
    /// Answers with an error that stopped the write's transaction.
    fn fail(self: Box<Self>, error: StoreError);
}

/// What one write did inside the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    /// It wrote (or found nothing to change): keep it.
    Done,
    /// A rule refused it: undo it alone.
    Refused,
    /// The database failed under it: the transaction is lost.
    Broken,
}

struct Op<T> {
    work: Box<Work<T>>,
    probe: bool,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T: Send> Job for Op<T> {
    fn is_probe(&self) -> bool {
        self.probe
    }

    fn note(&self, readiness: &Readiness) {
        if let (false, Some(outcome)) = (self.probe, &self.outcome) {
            readiness.note(outcome);
        }
    }

    fn apply(&mut self, connection: &Connection) -> Applied {
        let outcome = (self.work)(connection);
        let applied = match &outcome {
            Ok(_) => Applied::Done,
            Err(error) if error.is_unavailable() => Applied::Broken,
            Err(_) => Applied::Refused,
        };
        self.outcome = Some(outcome);
        applied
    }

    fn reply(self: Box<Self>) {
        let outcome = self
            .outcome
            .unwrap_or_else(|| Err(StoreError::Unavailable("the write did not run".to_owned())));
        // A caller that went away no longer needs to know.
        let _ = self.reply.send(outcome);
    }

    fn fail(self: Box<Self>, error: StoreError) {
        let _ = self.reply.send(Err(error));
    }
}

/// Why a transaction did not commit, or its writes are not acknowledged.
enum Failure {
    /// Each write gets this error: nothing ran (the transaction did not
    /// begin), or the file changed under the commit.
    Refused(Refusal),
    /// While the writes ran or at the commit: rolled back.
    RolledBack {
        /// The error when it was the commit (or a savepoint), not a write.
        error: Option<StoreError>,
    },
}

/// An error every waiting write can be given (errors are not `Clone`).
#[derive(Clone)]
enum Refusal {
    File(FileRefusal),
    Unavailable(String),
}

impl Refusal {
    /// The error `error`, to give to each write.
    fn of(error: &StoreError) -> Self {
        match error {
            StoreError::Unavailable(reason) => Self::Unavailable(reason.clone()),
            other => Self::Unavailable(other.to_string()),
        }
    }

    fn error(&self) -> StoreError {
        match self {
            Self::File(refusal) => refusal.error(),
            Self::Unavailable(reason) => StoreError::Unavailable(reason.clone()),
        }
    }
}

struct Thread {
    path: PathBuf,
    /// `None` after a failure, until the next write opens a new one.
    connection: Option<Connection>,
    health: Arc<Health>,
    readiness: Arc<Readiness>,
}

impl Thread {
    fn run(mut self, queue: &mpsc::Receiver<Message>) {
        // Ends when every handle is gone (the store dropped) or on Close.
        while let Ok(first) = queue.recv() {
            let mut batch = Vec::new();
            let mut close = None;
            match first {
                Message::Job(job) => batch.push(job),
                Message::Close(done) => close = Some(done),
            }
            while close.is_none() && batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(Message::Job(job)) => batch.push(job),
                    Ok(Message::Close(done)) => close = Some(done),
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.settle(batch);
            }
            if let Some(done) = close {
                self.retire();
                let _ = done.send(());
                return;
            }
        }
        self.retire();
    }

    /// Lets the connection go: closed, or kept open until the process exits
    /// when the file was changed in place.
    fn retire(&mut self) {
        self.keep_if_changed();
        drop(self.connection.take());
    }

    /// Moves the connection to [`KEPT`] (which says why) once the file was
    /// changed in place.
    fn keep_if_changed(&mut self) {
        if !self.health.changed_in_place() {
            return;
        }
        if let Some(connection) = self.connection.take() {
            // Should it be closed all the same, still no checkpoint then.
            let _ = connection.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
            KEPT.lock().unwrap_or_else(PoisonError::into_inner).push(connection);
        }
    }

    /// Commits `batch` together, or each write alone when that fails, and
    /// answers every write.
    fn settle(&mut self, mut batch: Vec<Box<dyn Job>>) {
        match self.commit(&mut batch) {
            Ok(changed) => {
                self.health.committed();
                // A commit that changed nothing says nothing of room to write.
                if changed {
                    self.readiness.wrote();
                }
                for job in batch {
                    job.reply();
                }
            }
            Err(Failure::Refused(refusal)) => {
                let error = refusal.error();
                if batch.iter().any(|job| !job.is_probe()) {
                    self.readiness.failed(&error);
                }
                for job in batch {
                    job.fail(refusal.error());
                }
            }
            Err(Failure::RolledBack { error }) if batch.len() == 1 => {
                let job = batch.pop().expect("one write");
                match error {
                    Some(error) => {
                        if !job.is_probe() {
                            self.readiness.failed(&error);
                        }
                        job.fail(error);
                    }
                    None => {
                        job.note(&self.readiness);
                        job.reply();
                    }
                }
            }
            Err(Failure::RolledBack { .. }) => {
                tracing::debug!(writes = batch.len(), "a group commit failed; its writes run one by one");
                for job in batch {
                    self.settle(vec![job]);
                }
            }
        }
    }

    /// One transaction for the whole batch, each write in a savepoint.
    /// Whether a write (not the probe) changed a row.
    fn commit(&mut self, batch: &mut [Box<dyn Job>]) -> Result<bool, Failure> {
        self.check_file()?;
        if self.connection.is_none() {
            match open(&self.path) {
                Ok(connection) => self.connection = Some(connection),
                Err(error) => return Err(Failure::Refused(Refusal::of(&error))),
            }
        }
        let connection = self.connection.as_ref().expect("opened above");
        if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
            self.connection = None;
            return Err(Failure::Refused(Refusal::of(&unavailable(error))));
        }
        let outcome = run_all(connection, batch);
        let outcome = outcome.and_then(|changed| {
            connection
                .execute_batch("COMMIT")
                .map(|()| changed)
                .map_err(|error| Some(unavailable(error)))
        });
        let error = match outcome {
            Ok(changed) => {
                // Committed, perhaps into a file overwritten meanwhile:
                // then nothing is acknowledged.
                self.check_file()?;
                return Ok(changed);
            }
            Err(error) => error,
        };
        // Undo what the transaction holds; a connection that cannot say
        // it is clean again is not used again.
        let _ = connection.execute_batch("ROLLBACK");
        let reason = error
            .as_ref()
            .map_or_else(|| "a write failed".to_owned(), ToString::to_string);
        tracing::warn!(%reason, "a write transaction failed; the connection is replaced");
        self.connection = None;
        Err(Failure::RolledBack { error })
    }

    /// [`Health::check`], keeping the connection open for good once the
    /// file was changed in place.
    fn check_file(&mut self) -> Result<(), Failure> {
        self.health.check().map_err(|refusal| {
            self.keep_if_changed();
            Failure::Refused(Refusal::File(refusal))
        })
    }
}

/// Runs each write in its own savepoint; whether a write other than the
/// probe changed a row. `Err(None)` when a write broke (its own outcome says
/// why), `Err(Some(..))` when a savepoint statement failed.
fn run_all(connection: &Connection, batch: &mut [Box<dyn Job>]) -> Result<bool, Option<StoreError>> {
    // Cached: parsing these twice per write showed in the profile.
    let statement = |sql: &str| {
        connection
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute([]))
            .map(drop)
            .map_err(|error| Some(unavailable(error)))
    };
    let mut changed = false;
    for job in batch {
        statement("SAVEPOINT write")?;
        let before = connection.total_changes();
        match job.apply(connection) {
            Applied::Done => changed |= !job.is_probe() && connection.total_changes() != before,
            Applied::Refused => statement("ROLLBACK TO write")?,
            Applied::Broken => return Err(None),
        }
        statement("RELEASE write")?;
    }
    Ok(changed)
}
