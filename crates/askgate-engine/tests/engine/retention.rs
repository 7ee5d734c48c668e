//! Retention in controlled time: what ended more than the retention ago
//! goes, what ended since stays, and the loop runs at start and then hourly.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_engine::retention::PRUNE_EVERY;
use support::*;

const DAY: Duration = Duration::from_secs(86_400);
const RETENTION: Duration = Duration::from_secs(30 * 86_400);

#[tokio::test]
async fn questions_that_ended_longer_ago_than_the_retention_are_deleted_and_younger_ones_kept() {
    let h = harness().await;
    let old = h.ask("alice", single()).await;
    h.engine.cancel("agent-1", &old.id).await.unwrap();
    h.clock.advance(10 * DAY);
    let newer = h.ask("alice", single()).await;
    h.engine.cancel("agent-1", &newer.id).await.unwrap();

    // 29 days after the first ended: nothing is old enough.
    h.clock.advance(19 * DAY);
    assert_eq!(h.engine.prune_once(RETENTION).await.unwrap().questions, 0);

    // 31 days after: the first goes, the second (21 days) stays.
    h.clock.advance(2 * DAY);
    assert_eq!(h.engine.prune_once(RETENTION).await.unwrap().questions, 1);
    assert!(h.engine.get(&old.id).await.unwrap().is_none());
    assert!(h.engine.get(&newer.id).await.unwrap().is_some());

    // A year on, it goes too; the store's tests show a pending one never
    // does (here the timers would expire it first).
    h.clock.advance(365 * DAY);
    assert_eq!(h.engine.prune_once(RETENTION).await.unwrap().questions, 1);
    assert!(h.engine.get(&newer.id).await.unwrap().is_none());
}

#[tokio::test]
async fn the_retention_loop_runs_at_start_and_then_every_hour_until_shut_down() {
    let half_hour = PRUNE_EVERY / 2;
    let h = harness().await;
    let first = h.ask("alice", single()).await;
    h.engine.cancel("agent-1", &first.id).await.unwrap();
    h.clock.advance(DAY);
    let second = h.ask("alice", single()).await;
    h.engine.cancel("agent-1", &second.id).await.unwrap();
    // The first is 31 days less half an hour old, the second half an hour
    // short of 30 days.
    h.clock.advance(RETENTION.saturating_sub(half_hour));

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let engine = h.engine.clone();
    let retention = tokio::spawn(async move {
        engine
            .run_retention(RETENTION, async {
                let _ = stopped.await;
            })
            .await;
    });
    until(|| async { h.engine.get(&first.id).await.unwrap().is_none() }).await;
    let second_is_kept = || async { h.engine.get(&second.id).await.unwrap().is_some() };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(second_is_kept().await, "younger than the retention at the first run");

    // Old enough a quarter of an hour later, but the next run is on the hour.
    h.clock.advance(half_hour + PRUNE_EVERY / 4);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(second_is_kept().await, "no run before the hour is up");
    h.clock.advance(PRUNE_EVERY / 4);
    until(|| async { !second_is_kept().await }).await;

    stop.send(()).unwrap();
    tokio::time::timeout(PATIENCE, retention).await.unwrap().unwrap();
}

/// Waits until `done` says so, for at most [`PATIENCE`].
async fn until<F, Fut>(mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(PATIENCE, async {
        while !done().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("in time");
}
