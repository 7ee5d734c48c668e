//! What every fake platform API needs, whatever the platform.
//!
//! A fake platform API ([`crate::telegram`] now; Discord's REST API and
//! Slack's Web API next) is an axum `Router` on `127.0.0.1:0` that records
//! what it was asked, fails on demand and may push requests of its own to the
//! server under test. Only the platform's routes, payloads and error bodies
//! differ; the rest is here, with no platform's types in it:
//!
//! - [`Loopback`] (`server.rs`) serves a router on a port of the test's own
//!   and stops when dropped, open connections included; a handler finds the
//!   [`Connection`] its request came on and can drop it.
//! - [`Recorder`] (`record.rs`) keeps a fake's state, wakes waiters when
//!   something is recorded and waits for a condition on it with a timeout;
//!   [`Requests`] is the log of requests with failures queued per method or
//!   route.
//! - [`Fault`] and [`answer`] (`fault.rs`) apply a queued failure to one
//!   request: the platform's error answer (a 429 with its retry-after, a 5xx),
//!   a slow answer, or a dropped connection; [`huge_answer`] is an error
//!   page of any size, made as it is sent.
//! - [`push_in_order`] (`push.rs`) POSTs a fake's requests (a body and headers
//!   to a URL) to the server under test one at a time, each until a 2xx
//!   answer, as a platform delivers webhooks.

use std::sync::{Mutex, MutexGuard, PoisonError};

mod fault;
mod push;
mod record;
mod server;

pub use fault::{Fault, answer, huge_answer};
pub use push::{Next, NoAnswer, Push, Pushed, forward_url, push_client, push_in_order};
pub use record::{Recorder, Requests};
pub use server::{Connection, Loopback};

/// Locks a mutex, also after a panic elsewhere: a fake's state stays readable
/// for the test's own failure report.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
