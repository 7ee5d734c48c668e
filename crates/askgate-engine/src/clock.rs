//! The engine's clock, injected so that tests control time.
//!
//! Tests use [`Clock::manual`], whose time moves only when the test says so.
//! (tokio's paused time is not used: its auto-advance jumps to the next timer
//! whenever the runtime looks idle, and the runtime looks idle while SQLite
//! works on its own thread, so questions would expire mid-operation.)

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use askgate_store::Timestamp;
use tokio::sync::Notify;

/// Wall-clock time in milliseconds since the epoch, and sleeping until then.
#[derive(Debug, Clone)]
pub struct Clock(Source);

#[derive(Debug, Clone)]
enum Source {
    System,
    Manual(Arc<Manual>),
}

#[derive(Debug)]
struct Manual {
    now: AtomicI64,
    moved: Notify,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Source::System)
    }

    /// A clock at `now` that moves only with [`Clock::advance`].
    pub fn manual(now: Timestamp) -> Self {
        Self(Source::Manual(Arc::new(Manual {
            now: AtomicI64::new(now),
            moved: Notify::new(),
        })))
    }

    /// The current time, in milliseconds since the epoch.
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            Source::System => {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
                i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
            }
            Source::Manual(manual) => manual.now.load(Ordering::SeqCst),
        }
    }

    /// The time `by` from now.
    pub fn after(&self, by: Duration) -> Timestamp {
        self.now().saturating_add(millis(by))
    }

    /// Moves a manual clock forward, waking whatever sleeps until then.
    /// The system clock ignores it.
    pub fn advance(&self, by: Duration) {
        if let Source::Manual(manual) = &self.0 {
            manual.now.fetch_add(millis(by), Ordering::SeqCst);
            manual.moved.notify_waiters();
        }
    }

    /// Sleeps until the clock reads `at` or later.
    pub async fn sleep_until(&self, at: Timestamp) {
        match &self.0 {
            Source::System => {
                let wait = u64::try_from(at.saturating_sub(self.now())).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            Source::Manual(manual) => loop {
                let moved = manual.moved.notified();
                if manual.now.load(Ordering::SeqCst) >= at {
                    return;
                }
                moved.await;
            },
        }
    }

    /// Sleeps for `duration` of this clock's time.
    pub async fn sleep(&self, duration: Duration) {
        self.sleep_until(self.after(duration)).await;
    }
}

/// `duration` in the clock's unit, milliseconds (saturating).
pub fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
