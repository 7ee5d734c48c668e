//! Whether the database file is still the one askgate writes, and the count
//! of commits.
//!
//! The file can stop being askgate's while it runs: deleted or replaced by
//! another file at its path (its device and inode change), or overwritten
//! in place (`cp backup.db askgate.db`, a truncation: [`super::header`]
//! says what gives that away). Either way what would be written now would
//! go where nobody reads it, or break the file that is there. So the writer
//! checks before each transaction and again after its commit, before it
//! answers anyone ([`Health::check`]); readiness checks too. Once the file
//! has changed the answer stays no until a restart: askgate's view of the
//! database (its page cache, its `-wal` file) belongs to the file it had.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::header::{Expected, HEADER_BYTES, Header};
use crate::StoreError;

/// How long to wait before reading a changed-looking file again: a read
/// that overlaps a checkpoint's write of page 1 may see half of each, so a
/// change is believed only when a second read shows it too.
const CONFIRM_AFTER: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub(super) struct Health {
    /// The database file, and its identity when opened.
    path: PathBuf,
    opened: Option<FileIdentity>,
    /// The main file as opened, read through its own descriptor, and what
    /// it must go on being. `None` where the file cannot be read so.
    main: Option<Mutex<MainFile>>,
    /// Why writes are refused, once the file was found changed.
    refused: Mutex<Option<FileRefusal>>,
    /// Durable commits so far.
    commits: AtomicU64,
}

/// Why the file is no longer askgate's: each write gets this error.
#[derive(Debug, Clone)]
pub(super) enum FileRefusal {
    /// Another file is at the path, or none.
    Replaced(PathBuf),
    /// The file was changed in place, for this reason.
    Changed { path: PathBuf, reason: String },
}

impl FileRefusal {
    pub(super) fn error(&self) -> StoreError {
        match self {
            Self::Replaced(path) => StoreError::FileReplaced(path.clone()),
            Self::Changed { path, reason } => StoreError::FileChanged {
                path: path.clone(),
                reason: reason.clone(),
            },
        }
    }
}

/// A file's identity: the same path holding another file (deleted and
/// recreated, or replaced by a restore) has another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The identity of the file at `path`; `None` when there is none.
    #[cfg(unix)]
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }

    /// Elsewhere only whether the file is still there.
    #[cfg(not(unix))]
    fn of(path: &Path) -> Option<Self> {
        path.exists().then_some(Self { device: 0, inode: 0 })
    }
}

/// The main database file, open for reading its header.
///
/// The descriptor stays open as long as the store: closing any descriptor
/// of a file drops every POSIX lock the process holds on it, SQLite's
/// included, so one is not opened and closed at each check.
#[derive(Debug)]
struct MainFile {
    file: File,
    expected: Expected,
}

impl MainFile {
    /// The file at `path`, which must hold the database with `identity`.
    fn open(path: &Path, identity: u32) -> Result<Option<Self>, StoreError> {
        let cannot = |error: &dyn std::fmt::Display| {
            StoreError::Unavailable(format!("the database file could not be read to watch it: {error}"))
        };
        let file = File::open(path).map_err(|error| cannot(&error))?;
        let (_, start) = match read_start(&file) {
            Ok(read) => read,
            // Not on this platform: the path's identity is still checked.
            Err(error) if error.kind() == std::io::ErrorKind::Unsupported => return Ok(None),
            Err(error) => return Err(cannot(&error)),
        };
        let header = Header::parse(&start).ok_or_else(|| cannot(&"it does not begin with a SQLite header"))?;
        Ok(Some(Self {
            file,
            expected: Expected::of(header, identity),
        }))
    }

    /// Whether the file can still be the database's; if not, why.
    fn check(&mut self) -> Result<(), String> {
        match read_start(&self.file) {
            Ok((size, start)) => self.expected.check(size, &start),
            // A file that cannot be read says nothing of who changed it;
            // the write will meet the same error and report it.
            Err(error) => {
                tracing::debug!(%error, "the database file's header could not be read");
                Ok(())
            }
        }
    }
}

/// The file's size and its first [`HEADER_BYTES`] (fewer if it is shorter).
#[cfg(unix)]
fn read_start(file: &File) -> std::io::Result<(u64, Vec<u8>)> {
    use std::os::unix::fs::FileExt as _;
    let size = file.metadata()?.len();
    let mut start = vec![0_u8; HEADER_BYTES];
    let mut read = 0;
    while read < HEADER_BYTES {
        match file.read_at(&mut start[read..], read as u64)? {
            0 => break,
            count => read += count,
        }
    }
    start.truncate(read);
    Ok((size, start))
}

#[cfg(not(unix))]
fn read_start(_: &File) -> std::io::Result<(u64, Vec<u8>)> {
    Err(std::io::ErrorKind::Unsupported.into())
}

impl Health {
    /// The health of the file at `path`, as it is now, holding the database
    /// whose identity (`PRAGMA user_version`) is `identity`.
    pub(super) fn open(path: &Path, identity: u32) -> Result<Self, StoreError> {
        Ok(Self {
            path: path.to_owned(),
            opened: FileIdentity::of(path),
            main: MainFile::open(path, identity)?.map(Mutex::new),
            refused: Mutex::new(None),
            commits: AtomicU64::new(0),
        })
    }

    /// Refuses when the file at the path is not the file opened, or the file
    /// opened was changed by someone else; and from then on. Blocks (it
    /// reads the file, and waits [`CONFIRM_AFTER`] to confirm a change).
    pub(super) fn check(&self) -> Result<(), FileRefusal> {
        if let Some(refusal) = lock(&self.refused).clone() {
            return Err(refusal);
        }
        let refusal = if self.opened.is_some() && FileIdentity::of(&self.path) != self.opened {
            FileRefusal::Replaced(self.path.clone())
        } else {
            match self.changed() {
                None => return Ok(()),
                Some(reason) => FileRefusal::Changed {
                    path: self.path.clone(),
                    reason,
                },
            }
        };
        let mut refused = lock(&self.refused);
        let refusal = refused.get_or_insert(refusal).clone();
        drop(refused);
        tracing::error!(
            error = %refusal.error(),
            "the database file is no longer askgate's: every write is refused until a restart; \
             if it was restored on purpose, move its -wal and -shm files away before restarting"
        );
        Err(refusal)
    }

    /// Why the file opened is no longer the database's, when it is not.
    fn changed(&self) -> Option<String> {
        let mut main = lock(self.main.as_ref()?);
        main.check().err()?;
        std::thread::sleep(CONFIRM_AFTER);
        main.check().err()
    }

    /// Whether the file opened was changed in place (not replaced at its
    /// path): then no connection of askgate's may checkpoint into it.
    pub(super) fn changed_in_place(&self) -> bool {
        matches!(*lock(&self.refused), Some(FileRefusal::Changed { .. }))
    }

    /// A write transaction committed.
    pub(super) fn committed(&self) {
        self.commits.fetch_add(1, Ordering::Relaxed);
    }

    /// Commits so far.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each holder replaces or updates the value whole: usable after a
    // panic elsewhere.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
