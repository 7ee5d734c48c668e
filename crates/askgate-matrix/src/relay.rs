//! The homeserver's answers read within a bound, through askgate's relay
//! on loopback ([`askgate_adapter::relay`]): matrix-sdk reads every answer
//! whole with its own reqwest client, so its client talks to the relay,
//! which forwards each request to the homeserver (the access token in its
//! `Authorization` header, as matrix-sdk sent it) and reads the answer
//! within [`MAX_ANSWER_BYTES`], or [`MAX_SYNC_BYTES`] for a `/sync`.
//!
//! A call that gets no usable answer (none, or one too large) is answered
//! with a 502 and Matrix's own error JSON (`M_UNKNOWN`, the reason after
//! [`FAILED`]), which matrix-sdk reads as a passing server failure: tried
//! again by it, then [`askgate_core::ChannelError::Unavailable`].

use std::time::Duration;

use askgate_adapter::cause::bounded;
use askgate_adapter::read::MAX_ANSWER_BYTES;
use askgate_adapter::relay::{Failure, Relayed};
use axum::Json;
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub(crate) use askgate_adapter::relay::Relay;

/// The largest `/sync` answer askgate reads. A sync rightly carries more
/// than a call's answer (every room's new events and state, to-device
/// messages, a first sync's whole state), so its bound is larger; a room
/// event is at most 64 KiB (the spec's own limit).
pub const MAX_SYNC_BYTES: usize = 32 * 1024 * 1024;

/// How the reason of a relay's own answer starts.
pub(crate) const FAILED: &str = "askgate relay: ";

/// The path of `/sync`, in every version of the client-server API.
const SYNC: &str = "/sync";

/// The homeserver, as the relay serves it.
pub(crate) struct Homeserver;

impl Relayed for Homeserver {
    /// matrix-sdk sends the access token in the `Authorization` header.
    const HEADERS: &'static [HeaderName] = &[header::AUTHORIZATION];
    /// Above matrix-sdk's own timeout (30 s, and a sync's 25 s wait on
    /// top), which is the one that counts.
    const TIMEOUT: Duration = Duration::from_secs(90);

    fn limit(&self, path: &str) -> usize {
        let path = path.split_once('?').map_or(path, |(path, _)| path);
        if path.starts_with("/_matrix/client/") && path.ends_with(SYNC) {
            MAX_SYNC_BYTES
        } else {
            MAX_ANSWER_BYTES
        }
    }

    fn failed(&self, failure: Failure) -> Response {
        let reason = match failure {
            Failure::NoAnswer(reason) => reason,
            Failure::TooLarge { status, reason } => format!("the homeserver (HTTP {}): {reason}", status.as_u16()),
            _ => "the request was too large to forward".to_owned(),
        };
        let error = format!("{FAILED}{}", bounded(&reason));
        (
            StatusCode::BAD_GATEWAY,
            Json(json!({ "errcode": "M_UNKNOWN", "error": error })),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_is_read_within_its_own_bound_and_every_other_call_within_the_common_one() {
        for sync in [
            "/_matrix/client/v3/sync?since=s72_1&timeout=25000",
            "/_matrix/client/r0/sync",
        ] {
            assert_eq!(Homeserver.limit(sync), MAX_SYNC_BYTES, "{sync}");
        }
        for call in [
            "/_matrix/client/v3/account/whoami",
            "/_matrix/client/v3/rooms/!r:hs/messages?dir=f&from=s72_1",
            "/_matrix/client/v3/rooms/!r:hs/send/m.room.message/t1?sync",
            "/_matrix/media/v3/download/hs/sync",
            "/sync",
        ] {
            assert_eq!(Homeserver.limit(call), MAX_ANSWER_BYTES, "{call}");
        }
    }
}
