//! A small tmpfs to fill up: a real full disk for the fault tests. Shared
//! by the end-to-end suites (through `support`) and the store's own tests
//! (by path), so that both fill a disk the same way.
//!
//! Mounting needs root (`CAP_SYS_ADMIN`), as CI and this project's machines
//! have; elsewhere the test fails saying so, it never skips.

use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::path::Path;
use std::process::Command;

/// A small tmpfs, unmounted when dropped (also when the test panics).
pub(crate) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    pub(crate) fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap_or_else(|error| panic!("this test needs mount(8) to mount a small tmpfs: {error}"));
        assert!(
            output.status.success(),
            "this test needs root (CAP_SYS_ADMIN) to mount a {size} tmpfs and fill it, and mount failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Self { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            // Still busy: detach it now, it goes once the last file closes.
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

/// Writes a file at `path` until the file system is full; returns its size.
pub(crate) fn fill(path: &Path) -> u64 {
    let mut file = File::create(path).expect("the filler file can be created");
    let mut written = 0_u64;
    // Big writes first, then ever smaller ones for the last pages.
    for size in [64 * 1024, 4096, 512, 1] {
        let chunk = vec![0xa5_u8; size];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(count) => written += count as u64,
                Err(error) if error.kind() == ErrorKind::StorageFull => break,
                Err(error) => panic!("filling {} failed otherwise than full: {error}", path.display()),
            }
        }
    }
    assert!(
        matches!(file.write(&[0]), Err(error) if error.kind() == ErrorKind::StorageFull),
        "the file system is not full"
    );
    written
}
