//! Failed writes counted by reason, for metrics: the writes that readiness
//! follows (`crate::readiness`) and that failed because the database could
//! not take them ([`StoreError::is_unavailable`]), for both stores. A write
//! refused by a rule (a busy session, a cap) is not a failure here.

use crate::StoreError;

/// Why a write failed, in the few words an alert can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteFailure {
    /// The disk (or the database's quota) is full.
    Full,
    /// A lock was held too long: another process's transaction (SQLite's
    /// busy timeout), a PostgreSQL lock timeout or deadlock.
    Locked,
    /// The database could not be reached or is closing: a lost connection,
    /// a pool that timed out, the store closed, a server shutting down.
    Unavailable,
    /// Anything else: an I/O error, a database file replaced or changed
    /// under askgate, an error of another kind.
    Other,
}

impl WriteFailure {
    /// Every reason, in the order [`WriteFailures`] keeps them.
    pub const ALL: [Self; 4] = [Self::Full, Self::Locked, Self::Unavailable, Self::Other];

    /// The reason as a metric label: `full`, `locked`, `unavailable`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Locked => "locked",
            Self::Unavailable => "unavailable",
            Self::Other => "other",
        }
    }

    /// The reason of a failed write's `error`. SQLite's errors reach the
    /// store as its own messages (the writer thread keeps only the text),
    /// which SQLite fixes per result code; PostgreSQL's keep their SQLSTATE.
    pub fn of(error: &StoreError) -> Self {
        match error {
            StoreError::Database(sqlx::Error::Database(db)) => db
                .code()
                .map_or(Self::Other, |code| Self::of_code(&code))
                .or_text(db.message()),
            StoreError::Database(
                sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed,
            ) => Self::Unavailable,
            StoreError::Unavailable(reason) => Self::Unavailable.or_text(reason),
            _ => Self::Other,
        }
    }

    /// The reason of a SQLSTATE (PostgreSQL: always five characters) or a
    /// result code (SQLite, as sqlx gives it: the extended code in decimal,
    /// at most four digits).
    fn of_code(code: &str) -> Self {
        if code.len() < 5
            && let Ok(sqlite) = code.parse::<u32>()
        {
            // The primary result code is the low byte of an extended one.
            return match sqlite & 0xff {
                13 => Self::Full,        // SQLITE_FULL
                5 | 6 => Self::Locked,   // SQLITE_BUSY, SQLITE_LOCKED
                14 => Self::Unavailable, // SQLITE_CANTOPEN
                _ => Self::Other,
            };
        }
        match code {
            // disk_full; the rest of class 53 (insufficient resources) is
            // the server out of memory or connections: unavailable below.
            "53100" => Self::Full,
            // lock_not_available, deadlock_detected, serialization_failure
            "55P03" | "40P01" | "40001" => Self::Locked,
            code if code.starts_with("08") || code.starts_with("53") || code.starts_with("57P") => Self::Unavailable,
            _ => Self::Other,
        }
    }

    /// `self`, unless `text` is one of the messages SQLite gives for a full
    /// disk or a lock (or the OS for a full disk), which say more.
    fn or_text(self, text: &str) -> Self {
        let text = text.to_ascii_lowercase();
        if text.contains("database or disk is full") || text.contains("no space left on device") {
            Self::Full
        } else if text.contains("database is locked") || text.contains("database table is locked") {
            Self::Locked
        } else {
            self
        }
    }
}

/// How many writes failed, by reason, since the store was opened
/// ([`crate::Store::write_failures`]): counters that only grow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteFailures([u64; 4]);

impl WriteFailures {
    /// The failures of one reason.
    pub fn count(&self, reason: WriteFailure) -> u64 {
        self.0[Self::slot(reason)]
    }

    /// The failures of every reason.
    pub(crate) fn total(&self) -> u64 {
        self.0.iter().fold(0, |total, count| total.saturating_add(*count))
    }

    /// Counts one more failure of `reason`.
    pub(crate) fn add(&mut self, reason: WriteFailure) {
        let slot = &mut self.0[Self::slot(reason)];
        *slot = slot.saturating_add(1);
    }

    fn slot(reason: WriteFailure) -> usize {
        match reason {
            WriteFailure::Full => 0,
            WriteFailure::Locked => 1,
            WriteFailure::Unavailable => 2,
            WriteFailure::Other => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn reason(error: &StoreError) -> &'static str {
        WriteFailure::of(error).as_str()
    }

    #[test]
    fn sqlite_messages_and_connection_failures_get_their_reason() {
        let unavailable = |text: &str| StoreError::Unavailable(text.to_owned());
        assert_eq!(reason(&unavailable("database or disk is full")), "full");
        assert_eq!(reason(&unavailable("database is locked")), "locked");
        assert_eq!(reason(&unavailable("the store is closed")), "unavailable");
        let io = std::io::Error::other("connection reset");
        assert_eq!(reason(&StoreError::Database(sqlx::Error::Io(io))), "unavailable");
        assert_eq!(reason(&StoreError::Database(sqlx::Error::PoolTimedOut)), "unavailable");
        assert_eq!(reason(&StoreError::FileReplaced(PathBuf::from("askgate.db"))), "other");
    }

    #[test]
    fn result_codes_and_sqlstates_get_their_reason() {
        let cases = [
            ("13", "full"),
            ("5", "locked"),
            ("517", "locked"),
            ("1", "other"),
            ("53100", "full"),
            ("55P03", "locked"),
            ("40P01", "locked"),
            ("08006", "unavailable"),
            ("57P01", "unavailable"),
            ("23505", "other"),
        ];
        for (code, expected) in cases {
            assert_eq!(WriteFailure::of_code(code).as_str(), expected, "{code}");
        }
    }

    #[test]
    fn counts_grow_by_reason() {
        let mut failures = WriteFailures::default();
        failures.add(WriteFailure::Full);
        failures.add(WriteFailure::Full);
        failures.add(WriteFailure::Locked);
        assert_eq!(failures.count(WriteFailure::Full), 2);
        assert_eq!(failures.count(WriteFailure::Locked), 1);
        assert_eq!(failures.count(WriteFailure::Unavailable), 0);
        assert_eq!(failures.count(WriteFailure::Other), 0);
        assert_eq!(failures.total(), 3);
    }
}
