//! What readiness needs beyond a query that answers: the file is the one
//! opened, the last write did not fail; and the count of commits.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::StoreError;

#[derive(Debug)]
pub(super) struct Health {
    /// The database file, and its identity when opened.
    path: PathBuf,
    opened: Option<FileIdentity>,
    /// Why the last write failed, until one succeeds.
    failed_write: Mutex<Option<String>>,
    /// Durable commits so far.
    commits: AtomicU64,
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

impl Health {
    /// The health of the file at `path`, as it is now.
    pub(super) fn of(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            opened: FileIdentity::of(path),
            failed_write: Mutex::new(None),
            commits: AtomicU64::new(0),
        }
    }

    /// Refuses when the file at the path is not the file opened.
    pub(super) fn check_file(&self) -> Result<(), StoreError> {
        if self.opened.is_some() && FileIdentity::of(&self.path) != self.opened {
            return Err(StoreError::FileReplaced(self.path.clone()));
        }
        Ok(())
    }

    /// Why the last write failed, if it did.
    pub(super) fn failed_write(&self) -> Option<String> {
        self.lock().clone()
    }

    /// A write transaction committed.
    pub(super) fn committed(&self) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        *self.lock() = None;
    }

    /// A write transaction failed for this reason.
    pub(super) fn write_failed(&self, error: &StoreError) {
        self.write_failed_because(error.to_string());
    }

    /// A write transaction failed for this reason.
    pub(super) fn write_failed_because(&self, reason: String) {
        *self.lock() = Some(reason);
    }

    /// Commits so far.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<String>> {
        // One Option replaced whole: consistent even if a holder panicked.
        self.failed_write.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
