//! The store when the disk fills up or its file is deleted, replaced or
//! overwritten in place: writes fail with an error that says so, readiness
//! says not ready with the reason; a full disk recovers without a restart
//! once space is back, nothing stored before is lost, and nothing is
//! written into a file that is no longer askgate's.
//!
//! The full disk is a real one: a small tmpfs, mounted by the test
//! (`tests/e2e/support/tmpfs.rs`, shared with the end-to-end fault suite).

#![allow(
    clippy::print_stdout,
    reason = "a test's figures go to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;
#[path = "../../../../tests/e2e/support/tmpfs.rs"]
mod tmpfs;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use askgate_core::channel::{Delivery, MessageRef};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore, Store, StoreError, WriteFailure};
use support::*;
use tmpfs::{Tmpfs, fill};
use tokio::task::JoinSet;

fn many_messages(count: usize) -> Delivery {
    Delivery::new(
        (0..count)
            .map(|index| MessageRef {
                conversation: CONVERSATION.to_owned(),
                message: format!("message-{index:06}-{}", "x".repeat(200)),
            })
            .collect(),
    )
}

#[tokio::test]
async fn a_full_disk_fails_writes_until_space_is_back_and_loses_nothing() {
    let disk = Tmpfs::mount("4m");
    let path = disk.path().join("askgate.db");
    let store = SqliteStore::open(&path).await.expect("the store opens");
    let kept = question("01HZX0000000000000000000F1", 1_000);
    store.insert(&kept).await.unwrap();
    store.ping().await.expect("ready before the disk fills");

    let filler = disk.path().join("filler");
    fill(&filler);
    // Writes that need new pages now fail; a large delivery certainly does.
    let other = question("01HZX0000000000000000000F2", 2_000);
    let mut failed = None;
    for attempt in 0..20 {
        let id = askgate_core::QuestionId::parse(&format!("01HZX00000000000000000G{attempt:03}")).unwrap();
        let mut record = other.clone();
        record.id = id.clone();
        let result = match store.insert(&record).await {
            Ok(()) => store.set_delivery(&id, CHANNEL, &many_messages(200)).await.map(drop),
            Err(error) => Err(error),
        };
        if let Err(error) = result {
            failed = Some(error);
            break;
        }
    }
    let error = failed.expect("a write fails once the disk is full");
    assert!(
        error.is_unavailable(),
        "a full disk is the database being unavailable: {error}"
    );
    let reason = store.ping().await.expect_err("not ready while writes fail").to_string();
    assert!(
        reason.contains("full") || reason.contains("disk"),
        "readiness gives the reason: {reason}"
    );
    assert!(
        store.write_failures().count(WriteFailure::Full) >= 1,
        "the failed write is counted as a full disk: {:?}",
        store.write_failures()
    );

    // Space is back: the very next write works, on a fresh connection.
    std::fs::remove_file(&filler).unwrap();
    store.ping().await.expect("ready again without a restart");
    let after = question("01HZX0000000000000000000F3", 3_000);
    store.insert(&after).await.expect("writes work again");
    store
        .resolve(&kept.id, &ended(QuestionStatus::Cancelled, 4_000, "cancelled"))
        .await
        .unwrap()
        .expect("the question stored before the disk filled is there and pending");

    // And everything reads back after reopening the file.
    store.close().await;
    let reopened = SqliteStore::open(&path).await.unwrap();
    assert_eq!(
        reopened.get(&kept.id).await.unwrap().unwrap().status,
        QuestionStatus::Cancelled
    );
    assert!(reopened.get(&after.id).await.unwrap().is_some());
    reopened.close().await;
}

#[tokio::test]
async fn a_database_file_deleted_or_replaced_is_noticed_by_writes_and_readiness() {
    let (store, _dir, path) = store().await;
    let kept = question("01HZX0000000000000000000H1", 1_000);
    store.insert(&kept).await.unwrap();
    store.ping().await.unwrap();

    // Someone restores a backup over it: the path now holds another file.
    let backup = path.with_extension("restored");
    std::fs::copy(&path, &backup).unwrap();
    std::fs::rename(&backup, &path).unwrap();

    match store.insert(&question("01HZX0000000000000000000H2", 2_000)).await {
        Err(StoreError::FileReplaced(file)) => assert_eq!(file, path),
        result => panic!("a write into a replaced file must be refused, got {result:?}"),
    }
    let reason = store.ping().await.expect_err("not ready").to_string();
    assert!(reason.contains("replaced"), "{reason}");

    // Deleted outright: the same.
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        store
            .resolve(&kept.id, &ended(QuestionStatus::Cancelled, 3_000, "cancelled"))
            .await,
        Err(StoreError::FileReplaced(_))
    ));
}

#[tokio::test]
async fn a_read_by_id_that_cannot_open_a_connection_of_its_own_is_made_on_the_pool() {
    let (store, _dir, path) = store().await;
    let kept = question("01HZX0000000000000000000R1", 1_000);
    store.insert(&kept).await.unwrap();
    // Deleted before any read by id: the read on the caller's thread finds
    // no connection kept and cannot open one (it never creates the file);
    // the pool's connection, open since the start, still reads the file.
    std::fs::remove_file(&path).unwrap();
    let read = store.get(&kept.id).await.expect("read on the pool");
    assert_eq!(read.map(|record| record.id), Some(kept.id));
    assert!(!path.exists(), "no read created the deleted file again");
}

/// The file's inode: the same file (written over in place) keeps it.
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).expect("the file is there").ino()
}

/// The page count in a database file's header.
fn pages_of(file: &[u8]) -> u32 {
    u32::from_be_bytes(file[28..32].try_into().expect("four bytes"))
}

/// The page count in the header of the file at `path` (as the file holds it).
fn pages(path: &Path) -> u32 {
    pages_of(&std::fs::read(path).expect("the file reads"))
}

/// Copies the `-wal` file's pages into the database file from another
/// connection, as a backup tool does while askgate runs.
async fn checkpoint_from_outside(path: &Path) {
    let mut outside = raw_connection(path).await;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut outside)
        .await
        .expect("the checkpoint runs");
}

/// Another askgate database, in a file of its own (complete: closed).
async fn another_database() -> (tempfile::TempDir, Vec<u8>) {
    let (other, dir, path) = store().await;
    other
        .insert(&question("01HZX0000000000000000000K9", 9_000))
        .await
        .expect("the other database takes a question");
    other.close().await;
    let bytes = std::fs::read(&path).expect("the other database reads");
    (dir, bytes)
}

/// Every write now fails with [`StoreError::FileChanged`] whose reason says
/// `why`, and readiness says the same.
async fn refused_because(store: &SqliteStore, path: &Path, kept: &QuestionRecord, why: &str) {
    match store.insert(&question("01HZX0000000000000000000K2", 2_000)).await {
        Err(StoreError::FileChanged { path: file, reason }) => {
            assert_eq!(file, path);
            assert!(reason.contains(why), "{reason:?} should say {why:?}");
        }
        result => panic!("a write into a file changed in place must be refused, got {result:?}"),
    }
    let reason = store.ping().await.expect_err("not ready").to_string();
    assert!(
        reason.contains("changed by another program") && reason.contains(why) && reason.contains("restart"),
        "{reason}"
    );
    // Every later write too: the refusal holds until a restart.
    for _ in 0..3 {
        let resolved = store
            .resolve(&kept.id, &ended(QuestionStatus::Cancelled, 3_000, "cancelled"))
            .await;
        assert!(matches!(resolved, Err(StoreError::FileChanged { .. })), "{resolved:?}");
        assert!(matches!(
            store.set_setting("telegram.offset", "8").await,
            Err(StoreError::FileChanged { .. })
        ));
        store.ping().await.expect_err("still not ready");
    }
}

#[tokio::test]
async fn a_database_file_overwritten_in_place_by_another_database_takes_no_write() {
    let (store, _dir, path) = store().await;
    let kept = question("01HZX0000000000000000000K1", 1_000);
    store.insert(&kept).await.unwrap();
    store.ping().await.unwrap();
    let (_other_dir, other) = another_database().await;

    // `cp other.db askgate.db`: the same file, another database in it.
    let inode_before = inode(&path);
    std::fs::write(&path, &other).unwrap();
    assert_eq!(inode(&path), inode_before, "written over in place");

    refused_because(&store, &path, &kept, "another database").await;
    // Nothing went into the file that is there now, not even on closing
    // (the last connection to close would copy askgate's pages into it).
    store.close().await;
    assert!(std::fs::read(&path).unwrap() == other, "the copied file was changed");
}

#[tokio::test]
async fn a_database_file_truncated_in_place_takes_no_write() {
    let (store, _dir, path) = store().await;
    let kept = question("01HZX0000000000000000000K1", 1_000);
    store.insert(&kept).await.unwrap();
    store.ping().await.unwrap();

    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();

    refused_because(&store, &path, &kept, "truncated to 0 bytes").await;
    store.close().await;
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        0,
        "nothing was written into it"
    );
}

#[tokio::test]
async fn an_older_copy_of_the_database_put_back_in_place_takes_no_write() {
    let (store, _dir, path) = store().await;
    let kept = question("01HZX0000000000000000000K1", 1_000);
    store.insert(&kept).await.unwrap();
    let insert = async |from: i64, to: i64| {
        for n in from..to {
            store
                .insert(&question(&format!("01HZX0000000000000000L{n:04}"), 2_000 + n))
                .await
                .unwrap();
        }
    };
    insert(0, 20).await;
    checkpoint_from_outside(&path).await;
    let old = std::fs::read(&path).unwrap();
    insert(20, 70).await;
    checkpoint_from_outside(&path).await;
    store
        .ping()
        .await
        .expect("another connection's checkpoints are no change");
    assert!(pages(&path) > pages_of(&old), "the database grew since the copy");

    std::fs::write(&path, &old).unwrap();
    refused_because(&store, &path, &kept, "older copy").await;
}

/// The other side: checkpoints change the file all the time, askgate's own
/// (SQLite's automatic one after a commit) and other connections' (a backup
/// tool's), and none may pass for a change made behind askgate's back,
/// however the reads of the header fall among them (readiness reads it too,
/// from other threads, all along).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_writes_among_checkpoints_are_never_taken_for_a_change() {
    let (store, _dir, path) = store().await;
    let done = Arc::new(AtomicBool::new(false));
    let pinger = {
        let (done, store) = (done.clone(), store.clone());
        tokio::spawn(async move {
            let mut pings = 0_u32;
            while !done.load(Ordering::Relaxed) {
                store.ping().await.expect("ready all along");
                pings += 1;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            pings
        })
    };

    // Askgate's own checkpoints alone: only they copy pages into the file.
    let pages_before = pages(&path);
    write_many(&store, 0).await;
    let pages_between = pages(&path);
    assert!(pages_between > pages_before, "askgate's own checkpoints never ran");

    // And another connection's too, every 2 ms.
    let checkpointer = {
        let (done, path) = (done.clone(), path.clone());
        tokio::spawn(async move {
            let mut outside = raw_connection(&path).await;
            let mut copied = 0_u32;
            while !done.load(Ordering::Relaxed) {
                let (_, _, pages): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                    .fetch_one(&mut outside)
                    .await
                    .expect("the checkpoint runs");
                copied += u32::from(pages > 0);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            copied
        })
    };
    write_many(&store, 1).await;
    done.store(true, Ordering::Relaxed);
    let (copied, pings) = (checkpointer.await.unwrap(), pinger.await.unwrap());
    store.ping().await.expect("ready at the end");
    assert_eq!(store.pending().await.unwrap().len(), 2 * 5 * 250);
    let pages_after = pages(&path);
    println!(
        "5000 inserts, 2500 resolutions: the file grew from {pages_before} to {pages_between} pages by askgate's \
         checkpoints, to {pages_after} with {copied} outside checkpoints that copied pages; {pings} pings"
    );
    assert!(copied >= 10, "only {copied} outside checkpoints copied pages");
    assert!(pings >= 10, "only {pings} pings");
}

/// 2,500 inserts from 5 writers at once, every other one then resolved.
async fn write_many(store: &SqliteStore, phase: i64) {
    let mut writers = JoinSet::new();
    for writer in 0..5 {
        let store = store.clone();
        writers.spawn(async move {
            for n in 0..500 {
                let name = format!("01HZX0000000000000{phase}{writer}{n:05}");
                store.insert(&question(&name, n)).await.expect("the insert is saved");
                if n % 2 == 0 {
                    let resolution = ended(QuestionStatus::Cancelled, n + 1, "cancelled");
                    store.resolve(&id(&name), &resolution).await.expect("saved");
                }
            }
        });
    }
    while let Some(result) = writers.join_next().await {
        result.expect("a writer finished");
    }
}
