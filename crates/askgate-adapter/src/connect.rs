//! Bringing a channel up without ever stopping askgate: its credentials
//! checked ([`ChannelRuntime::check`]), then its webhook registered
//! ([`ChannelRuntime::register`]), each tried again with the [`backoff`]
//! while the platform is out of reach or failing, every step reported as
//! the channel's [`ChannelState`]. A platform down when askgate starts
//! leaves its channel `connecting`, and the rest of askgate (the web page,
//! `/v1`, MCP, the other channels) serves meanwhile; a platform that
//! refuses the configuration for good (a bad token) leaves it `refused`.

use std::fmt;

use tracing::{error, info, warn};

use crate::backoff::{backoff, retry_delay};
use crate::config::CheckError;
use crate::runtime::{ChannelRuntime, Shutdown};

/// Where a configured channel stands with its platform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelState {
    /// Not up yet: its check or its webhook's registration has not
    /// succeeded, and is being tried again. `reason`: the last failure,
    /// `None` before the first attempt ended.
    Connecting {
        /// What the last attempt ran into.
        reason: Option<String>,
    },
    /// The platform accepted its credentials (and its webhook address). A
    /// long-lived connection (polling, a gateway, a socket) then keeps itself
    /// up, trying again on its own after a failure.
    Up,
    /// The platform refused its configuration for good (a refused token, a
    /// webhook address it will not take): down until the admin fixes the
    /// key named in `reason` and restarts askgate.
    Refused {
        /// The problem, with its key and fix.
        reason: String,
    },
}

impl ChannelState {
    /// `connecting`, `up` or `refused`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Connecting { .. } => "connecting",
            Self::Up => "up",
            Self::Refused { .. } => "refused",
        }
    }

    /// The last failure, if any.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Connecting { reason } => reason.as_deref(),
            Self::Up => None,
            Self::Refused { reason } => Some(reason),
        }
    }

    /// Whether it is up.
    pub fn is_up(&self) -> bool {
        *self == Self::Up
    }
}

impl fmt::Display for ChannelState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            Some(reason) => write!(f, "{}: {reason}", self.as_str()),
            None => f.write_str(self.as_str()),
        }
    }
}

/// Where the channels' states go (`/readyz`, the `askgate_channel_up` metric).
pub trait StateReport: Send + Sync {
    /// Channel `channel` is now in `state`.
    fn report(&self, channel: &str, state: ChannelState);
}

/// Checks `runtime`'s credentials, then registers its webhook at `base`
/// (the public URL, no trailing slash), each tried again with the
/// [`backoff`] (a platform's own delay after a 429) while the platform is
/// out of reach or failing, each step reported to `report`. Returns what
/// the check found (`bot @askgate_bot, polling`) once the channel is up;
/// `None` when the platform refused for good (reported as
/// [`ChannelState::Refused`]) or askgate is shutting down.
pub async fn bring_up(
    runtime: &dyn ChannelRuntime,
    base: &str,
    report: &dyn StateReport,
    shutdown: &Shutdown,
) -> Option<String> {
    let channel = runtime.name();
    let mut attempt = 0;
    let found = loop {
        let checked = tokio::select! {
            () = shutdown.clone().wait() => return None,
            checked = runtime.check() => checked,
        };
        let problem = match checked {
            Ok(found) => break found,
            Err(CheckError::Refused(problem)) => {
                error!(%channel, %problem, "the platform refused the channel's configuration; askgate serves without this channel until it is fixed and askgate restarted");
                report.report(
                    channel,
                    ChannelState::Refused {
                        reason: problem.to_string(),
                    },
                );
                return None;
            }
            Err(CheckError::Unreachable(problem)) => problem,
        };
        let pause = backoff(attempt);
        warn!(%channel, attempt, ?pause, error = %problem.what, "the channel's platform could not be reached; trying again");
        report.report(
            channel,
            ChannelState::Connecting {
                reason: Some(problem.what),
            },
        );
        if stopped_during(shutdown, pause).await {
            return None;
        }
        attempt = attempt.saturating_add(1);
    };
    let mut attempt = 0;
    loop {
        let registered = tokio::select! {
            () = shutdown.clone().wait() => return None,
            registered = runtime.register(base) => registered,
        };
        let error = match registered {
            Ok(()) => break,
            Err(error) => error,
        };
        if !error.is_retryable() {
            let reason = format!("channels.{channel}: the platform refused askgate's webhook address: {error}");
            error!(%channel, %error, "the platform refused askgate's webhook address; askgate serves without this channel until it is fixed and askgate restarted");
            report.report(channel, ChannelState::Refused { reason });
            return None;
        }
        let pause = retry_delay(&error, attempt);
        warn!(%channel, attempt, ?pause, %error, "could not register the channel's webhook; trying again");
        report.report(
            channel,
            ChannelState::Connecting {
                reason: Some(format!("registering the webhook: {error}")),
            },
        );
        if stopped_during(shutdown, pause).await {
            return None;
        }
        attempt = attempt.saturating_add(1);
    }
    info!(%channel, %found, "the channel is up");
    report.report(channel, ChannelState::Up);
    Some(found)
}

/// Sleeps `pause`; whether askgate began shutting down meanwhile.
async fn stopped_during(shutdown: &Shutdown, pause: std::time::Duration) -> bool {
    tokio::select! {
        () = shutdown.clone().wait() => true,
        () = tokio::time::sleep(pause) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use askgate_core::channel::{Channel, ChannelError};
    use async_trait::async_trait;
    use tokio::sync::watch;

    use super::*;
    use crate::config::Problem;

    /// A runtime whose checks and registrations answer as queued (then succeed).
    #[derive(Default)]
    struct Scripted {
        checks: Mutex<VecDeque<CheckError>>,
        registrations: Mutex<VecDeque<ChannelError>>,
        registered: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl ChannelRuntime for Scripted {
        fn name(&self) -> &'static str {
            "tg"
        }

        fn channel(&self) -> Arc<dyn Channel> {
            unreachable!("bring_up never asks for the channel")
        }

        async fn check(&self) -> Result<String, CheckError> {
            let next = self.checks.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
            next.map_or_else(|| Ok("bot @b".to_owned()), Err)
        }

        async fn register(&self, base: &str) -> Result<(), ChannelError> {
            let next = self
                .registrations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            if let Some(error) = next {
                return Err(error);
            }
            self.registered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(base.to_owned());
            Ok(())
        }
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl StateReport for Seen {
        fn report(&self, channel: &str, state: ChannelState) {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!("{channel} {state}"));
        }
    }

    fn problem(what: &str) -> Problem {
        Problem {
            key: "channels.tg.token".into(),
            what: what.into(),
            fix: "fix it.".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_platform_is_tried_again_with_the_backoff_until_it_answers() {
        let runtime = Scripted::default();
        runtime.checks.lock().unwrap().extend([
            CheckError::Unreachable(problem("could not reach Telegram (getMe): refused.")),
            CheckError::Unreachable(problem("could not reach Telegram (getMe): 500.")),
        ]);
        runtime.registrations.lock().unwrap().extend([
            ChannelError::Unavailable { reason: "500".into() },
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(7),
            },
        ]);
        let seen = Seen::default();
        let (_stop, stopping) = watch::channel(false);
        let started = tokio::time::Instant::now();
        let found = bring_up(&runtime, "https://a.test", &seen, &Shutdown::new(stopping)).await;
        assert_eq!(found.as_deref(), Some("bot @b"));
        // 0.5 s and 1 s after the checks, 0.5 s after the 500, the 429's own 7 s.
        assert_eq!(started.elapsed(), Duration::from_millis(9000));
        assert_eq!(*runtime.registered.lock().unwrap(), ["https://a.test"]);
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                "tg connecting: could not reach Telegram (getMe): refused.",
                "tg connecting: could not reach Telegram (getMe): 500.",
                "tg connecting: registering the webhook: the platform is unavailable: 500",
                "tg connecting: registering the webhook: rate limited by the platform; retry after 7s",
                "tg up",
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_leaves_the_channel_refused_and_is_not_tried_again() {
        let runtime = Scripted::default();
        runtime.checks.lock().unwrap().push_back(CheckError::Refused(problem(
            "Telegram refused it (getMe): Unauthorized.",
        )));
        let seen = Seen::default();
        let (_stop, stopping) = watch::channel(false);
        assert_eq!(
            bring_up(&runtime, "b", &seen, &Shutdown::new(stopping.clone())).await,
            None
        );
        assert_eq!(
            *seen.0.lock().unwrap(),
            ["tg refused: channels.tg.token: Telegram refused it (getMe): Unauthorized. Fix: fix it."]
        );

        let runtime = Scripted::default();
        runtime.registrations.lock().unwrap().push_back(ChannelError::Rejected {
            reason: "bad webhook: HTTPS url must be provided".into(),
        });
        let seen = Seen::default();
        assert_eq!(bring_up(&runtime, "b", &seen, &Shutdown::new(stopping)).await, None);
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                "tg refused: channels.tg: the platform refused askgate's webhook address: the platform refused: bad webhook: HTTPS url must be provided"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn shutting_down_ends_the_retries() {
        let runtime = Scripted::default();
        runtime
            .checks
            .lock()
            .unwrap()
            .extend((0..100).map(|_| CheckError::Unreachable(problem("down."))));
        let seen = Seen::default();
        let (stop, stopping) = watch::channel(false);
        let shutdown = Shutdown::new(stopping);
        let bringing = bring_up(&runtime, "b", &seen, &shutdown);
        let stopping = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            let _ = stop.send(true);
        };
        let (found, ()) = tokio::join!(bringing, stopping);
        assert_eq!(found, None);
        assert!(
            seen.0
                .lock()
                .unwrap()
                .iter()
                .all(|state| state == "tg connecting: down.")
        );
    }
}
