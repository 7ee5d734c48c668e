//! The database file's header as the file itself holds it, and the changes
//! to it that no SQLite connection makes: what tells a file overwritten in
//! place (a backup copied over it, another database, `: > askgate.db`) from
//! the file askgate writes.
//!
//! In WAL mode the main file changes only when a checkpoint copies pages
//! from the `-wal` file into it: askgate's own (SQLite's automatic
//! checkpoint after a commit), another connection's (a backup tool's, a
//! second process's) or the last connection's on closing. Every such copy
//! keeps what is checked here: the header's magic string and page size,
//! a size of whole pages, the database's identity (a random number askgate
//! writes once into the header's `user_version`, `mod.rs`), a file change
//! counter that never goes back, and a page count that never goes back
//! either (askgate never vacuums: pages freed go to the free list). So none
//! is tracked: nothing here can be tripped by a checkpoint, whoever runs it,
//! and it costs one `fstat` and one 100-byte read per transaction.
//!
//! `PRAGMA data_version` would not do: in WAL mode it changes when the
//! `-wal` index changes, and a `cp` over the main file leaves that alone.
//! Nor would the file's modification time: a backup tool's checkpoint
//! changes it as much as a `cp` does.
//!
//! What this cannot see: a copy of this same database that is not smaller
//! than the file had become (in WAL mode the change counter moves seldom:
//! the page count is what shows an older copy), and a foreign database
//! with the same 31-bit identity by chance. A `VACUUM` run by hand while
//! askgate runs shrinks the page count: it is taken for a change.

/// The bytes of the header askgate reads.
pub(super) const HEADER_BYTES: usize = 100;

/// What every SQLite database file begins with.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What askgate reads of a database file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    /// Bytes per page (offset 16).
    page_size: u32,
    /// The file change counter (offset 24).
    change_counter: u32,
    /// The `user_version` (offset 60): askgate's identity of the database.
    identity: u32,
    /// The page count (offset 28), when the header says it is valid (the
    /// version-valid-for number at offset 92 equals the change counter).
    pages: Option<u32>,
}

impl Header {
    /// The header in `bytes` (the file's first bytes), `None` when they are
    /// too few or not a SQLite database's.
    pub(super) fn parse(bytes: &[u8]) -> Option<Self> {
        let bytes = bytes.get(..HEADER_BYTES)?;
        if !bytes.starts_with(MAGIC) {
            return None;
        }
        let word = |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        // The page size is two bytes; 1 stands for 65536.
        let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
            1 => 65_536,
            size => u32::from(size),
        };
        let change_counter = word(24);
        let pages = Some(word(28)).filter(|&pages| pages != 0 && word(92) == change_counter);
        Some(Self {
            page_size,
            change_counter,
            identity: word(60),
            pages,
        })
    }
}

/// What the file must still be, and the highest change counter seen in it.
#[derive(Debug)]
pub(super) struct Expected {
    page_size: u32,
    /// The identities the file may show: the one its header had when the
    /// store opened it and the one the database holds (the same, unless the
    /// identity was set in this start and is still in the `-wal` file).
    identities: [u32; 2],
    change_counter: u32,
    /// The most pages the file was seen to hold.
    pages: u32,
}

impl Expected {
    /// What the file as opened (`header`) of the database with `identity`
    /// must go on being.
    pub(super) fn of(header: Header, identity: u32) -> Self {
        Self {
            page_size: header.page_size,
            identities: [header.identity, identity],
            change_counter: header.change_counter,
            pages: header.pages.unwrap_or(0),
        }
    }

    /// Whether a file of `size` bytes beginning with `start` can still be
    /// this database's file; if not, what happened to it, as a clause ("it
    /// was truncated to 0 bytes"). Remembers the change counter seen.
    pub(super) fn check(&mut self, size: u64, start: &[u8]) -> Result<(), String> {
        if size == 0 {
            return Err("it was truncated to 0 bytes".to_owned());
        }
        let Some(header) = Header::parse(start) else {
            return Err(if size < HEADER_BYTES as u64 {
                format!("it was cut to {size} bytes, too short for a SQLite database")
            } else {
                "it no longer begins with a SQLite database header".to_owned()
            });
        };
        if header.page_size != self.page_size {
            return Err(format!(
                "it holds a database of {}-byte pages, not {}-byte ones",
                header.page_size, self.page_size
            ));
        }
        if !size.is_multiple_of(u64::from(self.page_size)) {
            return Err(format!(
                "its size, {size} bytes, is not a whole number of {}-byte pages",
                self.page_size
            ));
        }
        if !self.identities.contains(&header.identity) {
            return Err(format!(
                "it holds another database (identity {:08x}, not {:08x})",
                header.identity, self.identities[1]
            ));
        }
        // Serial-number arithmetic: the counter may wrap after 2^32 commits.
        if header.change_counter.wrapping_sub(self.change_counter) > u32::MAX / 2 {
            return Err(format!(
                "it holds an older copy of the database (file change counter {}, was {})",
                header.change_counter, self.change_counter
            ));
        }
        if let Some(pages) = header.pages
            && pages < self.pages
        {
            return Err(format!(
                "it holds an older copy of the database ({pages} pages, it had {})",
                self.pages
            ));
        }
        self.change_counter = header.change_counter;
        self.pages = self.pages.max(header.pages.unwrap_or(0));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(page_size: u16, change_counter: u32, identity: u32) -> Vec<u8> {
        sized(page_size, change_counter, identity, 2)
    }

    /// A header that says the database has `pages` pages.
    fn sized(page_size: u16, change_counter: u32, identity: u32, pages: u32) -> Vec<u8> {
        let mut bytes = vec![0_u8; 4096];
        bytes[..16].copy_from_slice(MAGIC);
        bytes[16..18].copy_from_slice(&page_size.to_be_bytes());
        bytes[24..28].copy_from_slice(&change_counter.to_be_bytes());
        bytes[28..32].copy_from_slice(&pages.to_be_bytes());
        bytes[60..64].copy_from_slice(&identity.to_be_bytes());
        bytes[92..96].copy_from_slice(&change_counter.to_be_bytes());
        bytes
    }

    fn expected() -> Expected {
        Expected::of(Header::parse(&header(4096, 10, 7)).unwrap(), 7)
    }

    #[test]
    fn checkpoints_that_move_the_counter_on_pass() {
        let mut expected = expected();
        for counter in [10, 11, 11, 40] {
            expected.check(8192, &header(4096, counter, 7)).unwrap();
        }
        // Across the wrap of the counter too.
        let mut expected = Expected::of(Header::parse(&header(4096, u32::MAX - 1, 7)).unwrap(), 7);
        expected.check(4096, &header(4096, 3, 7)).unwrap();
    }

    #[test]
    fn a_file_overwritten_or_cut_is_told_apart() {
        let cases: [(u64, Vec<u8>, &str); 7] = [
            (0, Vec::new(), "truncated to 0 bytes"),
            (50, header(4096, 10, 7)[..50].to_vec(), "too short"),
            (4096, vec![0; 4096], "no longer begins"),
            (8192, header(1, 10, 7), "65536-byte pages"),
            (6000, header(4096, 10, 7), "not a whole number"),
            (
                8192,
                header(4096, 12, 8),
                "another database (identity 00000008, not 00000007)",
            ),
            (8192, header(4096, 9, 7), "older copy"),
        ];
        for (size, start, says) in cases {
            let reason = expected().check(size, &start).unwrap_err();
            assert!(reason.contains(says), "{reason:?} should say {says:?}");
        }
    }

    #[test]
    fn a_copy_with_fewer_pages_than_seen_is_an_older_one() {
        let mut expected = expected();
        expected.check(8192, &sized(4096, 10, 7, 30)).unwrap();
        expected.check(8192, &sized(4096, 10, 7, 30)).unwrap();
        let reason = expected.check(8192, &sized(4096, 10, 7, 29)).unwrap_err();
        assert!(
            reason.contains("older copy of the database (29 pages, it had 30)"),
            "{reason}"
        );
        // A page count the header does not vouch for says nothing.
        let mut unvouched = sized(4096, 10, 7, 1);
        unvouched[92..96].copy_from_slice(&9_u32.to_be_bytes());
        expected.check(8192, &unvouched).unwrap();
    }

    #[test]
    fn the_counter_seen_last_is_the_one_compared() {
        let mut expected = expected();
        expected.check(4096, &header(4096, 20, 7)).unwrap();
        assert!(expected.check(4096, &header(4096, 15, 7)).is_err());
    }

    #[test]
    fn an_identity_set_in_this_start_passes_before_and_after_its_checkpoint() {
        let mut expected = Expected::of(Header::parse(&header(4096, 10, 0)).unwrap(), 99);
        expected.check(4096, &header(4096, 10, 0)).unwrap();
        expected.check(4096, &header(4096, 11, 99)).unwrap();
    }
}
