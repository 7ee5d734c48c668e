//! The store when the disk fills up or its file is deleted: writes fail
//! with an error that says so, readiness says not ready with the reason,
//! and once the cause is gone writes and readiness come back without a
//! restart. Nothing stored before is lost.
//!
//! The full disk is a real one: a small tmpfs, mounted by the test
//! (`tests/support/tmpfs.rs`, shared with the end-to-end fault suite).

mod support;
#[path = "../../../tests/support/tmpfs.rs"]
mod tmpfs;

use askgate_core::channel::{Delivery, MessageRef};
use askgate_store::{QuestionStatus, SqliteStore, Store, StoreError};
use support::*;
use tmpfs::{Tmpfs, fill};

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
