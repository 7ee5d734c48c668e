//! Readiness follows the writes, on both stores (`readiness.rs` in the
//! crate has the rule): a write the database fails makes the store not
//! ready until a write succeeds; readiness's own probe write speaks only
//! when no write failed since the previous ping, and never while writes
//! keep failing, however small a write still fits.
// The tests are plain `async fn`s that `on_both_stores!` declares as tests
// twice: clippy's `allow-unwrap-in-tests` sees no `#[test]` on them.
#![allow(clippy::unwrap_used)]

use crate::support;

use askgate_store::{Store, StoreError, WriteFailure};
use support::*;

on_both_stores! {
    readiness_follows_the_writes_and_its_probe_never_outweighs_failing_ones,
}

/// Makes the database fail every insert of an event whose id starts with
/// `boom`, as a full disk fails a large write while small ones still fit.
async fn fail_booms(fresh: &Fresh) {
    if fresh.is_sqlite() {
        fresh
            .execute(
                "CREATE TRIGGER boom BEFORE INSERT ON inbound_events WHEN NEW.event_id LIKE 'boom%' \
                 BEGIN SELECT RAISE(ABORT, 'the disk is on fire'); END",
            )
            .await;
    } else {
        fresh
            .execute(
                "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                 IF NEW.event_id LIKE 'boom%' THEN RAISE EXCEPTION 'the disk is on fire'; END IF; \
                 RETURN NEW; END $$",
            )
            .await;
        fresh
            .execute("CREATE TRIGGER boom BEFORE INSERT ON inbound_events FOR EACH ROW EXECUTE FUNCTION boom()")
            .await;
    }
}

/// The probe's row: how many there are, and its value ("" when none).
async fn probe_row(fresh: &Fresh) -> (i64, String) {
    let count = fresh
        .int("SELECT CAST(count(*) AS BIGINT) FROM settings WHERE key = 'readiness_probe'")
        .await;
    let value = fresh
        .text("SELECT coalesce(max(value), '') FROM settings WHERE key = 'readiness_probe'")
        .await;
    (count, value)
}

/// The failed writes the store counted, whatever their reason.
fn failures(store: &dyn Store) -> u64 {
    let counted = store.write_failures();
    WriteFailure::ALL.iter().map(|reason| counted.count(*reason)).sum()
}

fn failed(outcome: Result<bool, StoreError>) {
    let error = outcome.expect_err("the write fails");
    assert!(error.is_unavailable(), "{error}");
    assert!(error.to_string().contains("the disk is on fire"), "{error}");
}

async fn readiness_follows_the_writes_and_its_probe_never_outweighs_failing_ones(fresh: Fresh) {
    let store = fresh.store();
    store.ping().await.expect("ready at first");
    fail_booms(&fresh).await;

    // A write fails: not ready, saying why, and no probe tried.
    failed(store.record_event(CHANNEL, "boom-1").await);
    let reason = store
        .ping()
        .await
        .expect_err("not ready after a failed write")
        .to_string();
    assert!(reason.contains("the disk is on fire"), "{reason}");
    assert_eq!(probe_row(&fresh).await.0, 0, "no probe while writes fail");
    // Writes keep failing between pings: still no probe, still not ready.
    for attempt in 2..5 {
        failed(store.record_event(CHANNEL, &format!("boom-{attempt}")).await);
        store.ping().await.expect_err("not ready while writes keep failing");
    }
    assert_eq!(probe_row(&fresh).await.0, 0, "no probe while writes keep failing");

    // No write since the previous ping (the load balancer took the
    // instance out): the probe speaks, with a write as large as a question.
    store.ping().await.expect("ready again once the probe's write commits");
    let (count, probe) = probe_row(&fresh).await;
    assert_eq!(count, 1);
    assert!(probe.len() >= 64 * 1024, "a probe of {} bytes", probe.len());

    // A write that succeeds makes it ready at once, without a probe.
    failed(store.record_event(CHANNEL, "boom-5").await);
    assert!(store.record_event(CHANNEL, "fine").await.unwrap());
    store.ping().await.expect("ready after a write succeeded");
    assert_eq!(probe_row(&fresh).await.1, probe, "no probe ran");

    // A write refused by a rule says nothing of the database.
    let record = question("q1", 1);
    store.insert(&record).await.unwrap();
    assert!(matches!(store.insert(&record).await, Err(StoreError::Duplicate(_))));
    store.ping().await.expect("a refusal by a rule leaves readiness alone");

    // Each failed write was counted for metrics, the refusal was not, nor
    // was the probe's write.
    assert_eq!(failures(store.as_ref()), 5);
}
