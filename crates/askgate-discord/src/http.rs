//! Interactions-endpoint mode: Discord POSTs each interaction to a route of
//! askgate's own server, signed with the application's Ed25519 key. Every
//! request's signature is verified (serenity's verifier) before anything is
//! read, and its signed timestamp must be within 5 minutes of now, either
//! way, as Slack's is: a forged or missing signature, or a genuine one of a
//! request dated long ago (a replay), ahead, or not dated in seconds, gets
//! 401. `PING` gets `PONG`; any other
//! interaction goes to the shared driver, and its first response is the
//! HTTP answer — sent as soon as there is one (a deferral when the store is
//! slow), while the driver goes on to follow up.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use askgate_adapter::Driver;
use askgate_adapter::webhook::{Unverified, Verifier, route};
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Json};
use serde_json::json;
use serenity::model::application::Interaction;
use tracing::warn;

use crate::DiscordChannel;
use crate::decode::Update;
use crate::react::Responder;

/// How long the HTTP answer waits for the first response: Discord gives up
/// after 3 s, and the driver defers at 2 s.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// How far from now a request's signed timestamp may be, either way: the
/// window Slack's check keeps (slack-morphism's `MAX_TIMESTAMP_AGE_SECONDS`),
/// wide enough for a clock a little off and Discord's own retries, too
/// narrow for a request recorded once to be played again later.
pub const TIMESTAMP_WINDOW: Duration = Duration::from_secs(300);

/// What tells the verifier the time: the system clock, or a test's.
pub type Now = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Discord's Ed25519 signature over the timestamp and the raw body, with
/// the timestamp within [`TIMESTAMP_WINDOW`] of now.
pub struct Ed25519 {
    verifier: serenity::interactions_endpoint::Verifier,
    now: Now,
}

impl Ed25519 {
    /// A verifier for the application's public key (64 hex digits), on the
    /// system clock; `None` when it is not one.
    pub fn new(public_key: &str) -> Option<Self> {
        Self::with_clock(public_key, Arc::new(SystemTime::now))
    }

    /// [`Ed25519::new`] on the clock `now`.
    pub fn with_clock(public_key: &str, now: Now) -> Option<Self> {
        let bytes = hex32(public_key)?;
        let verifier = serenity::interactions_endpoint::Verifier::try_new(bytes).ok()?;
        Some(Self { verifier, now })
    }
}

impl Verifier for Ed25519 {
    /// Both signature headers present, the signature 128 hex digits and the
    /// timestamp a number: a request that fails these is refused before its
    /// body is read.
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), Unverified> {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let (Some(signature), Some(timestamp)) = (header("x-signature-ed25519"), header("x-signature-timestamp"))
        else {
            return Err(Unverified("the signature headers are missing"));
        };
        if signature.len() != 128 || !signature.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(Unverified("the signature is not 128 hex digits"));
        }
        if timestamp.is_empty() || !timestamp.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(Unverified("the timestamp is not a number"));
        }
        Ok(())
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Unverified> {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let (Some(signature), Some(timestamp)) = (header("x-signature-ed25519"), header("x-signature-timestamp"))
        else {
            return Err(Unverified("the signature headers are missing"));
        };
        self.verifier
            .verify(signature, timestamp, body)
            .map_err(|()| Unverified("the Ed25519 signature does not match"))?;
        // Signed, so Discord dated it: a genuine request of another time is
        // a replay (serenity's verifier checks the signature only).
        fresh(timestamp, (self.now)())
    }
}

/// Whether `timestamp` (Unix seconds, as Discord sends it) is within
/// [`TIMESTAMP_WINDOW`] of `now`.
fn fresh(timestamp: &str, now: SystemTime) -> Result<(), Unverified> {
    // Digits only: `u64`'s parser would take a leading `+` as well.
    let digits = !timestamp.is_empty() && timestamp.bytes().all(|b| b.is_ascii_digit());
    let (true, Ok(seconds)) = (digits, timestamp.parse::<u64>()) else {
        return Err(Unverified("the signature's timestamp is not Unix seconds"));
    };
    let dated = UNIX_EPOCH.checked_add(Duration::from_secs(seconds));
    let apart = dated.map(|dated| match now.duration_since(dated) {
        Ok(ago) => ago,
        Err(ahead) => ahead.duration(),
    });
    match apart {
        Some(apart) if apart <= TIMESTAMP_WINDOW => Ok(()),
        _ => Err(Unverified(
            "the signature's timestamp is not within 5 minutes of now (a replay, or a clock far off)",
        )),
    }
}

/// 64 hex digits as 32 bytes. Written here: serenity's parser is private,
/// and one fixed-size key needs no crate.
pub fn hex32(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut bytes = [0_u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(bytes)
}

/// The route `path` (e.g. `/discord/dc`) that takes this channel's interactions.
pub fn router(path: &str, driver: Driver<DiscordChannel>, verifier: Ed25519) -> Router {
    let name = askgate_core::Channel::name(driver.inbound().as_ref()).to_owned();
    route(&name.clone(), path, verifier, move |_, body| {
        let (driver, name) = (driver.clone(), name.clone());
        async move {
            let interaction: Interaction = match serde_json::from_slice(&body) {
                Ok(interaction) => interaction,
                Err(error) => {
                    warn!(channel = %name, %error, "a request to the interactions endpoint was not an interaction");
                    return StatusCode::BAD_REQUEST.into_response();
                }
            };
            if matches!(interaction, Interaction::Ping(_)) {
                return Json(json!({"type": 1})).into_response();
            }
            let (responder, first) = Responder::over_http(&interaction, driver.inbound().rest().clone());
            let update = Update::Interaction {
                interaction: Box::new(interaction),
                responder: Arc::clone(&responder),
            };
            // The driver runs on: after a deferral it follows up by REST. The
            // task ends when the engine and the follow-up are done.
            tokio::spawn(async move {
                let _ = driver.take(&update).await;
                // An interaction askgate ignores (a slash command) still gets
                // an answer: the receiver below sees the responder dropped.
                drop(update);
                drop(responder);
            });
            match tokio::time::timeout(ANSWER_WITHIN, first).await {
                Ok(Ok(response)) => Json(response).into_response(),
                // Ignored, or not decided in time: acknowledge without a message.
                _ => Json(json!({"type": 6})).into_response(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the headers alone prove wrong is refused before the body is read.
    #[test]
    fn missing_or_malformed_signature_headers_are_refused_from_the_headers() {
        let verifier = Ed25519::new(&"e".repeat(64)).unwrap_or_else(|| unreachable!());
        let check = |signature: Option<&str>, timestamp: Option<&str>| {
            let mut headers = HeaderMap::new();
            for (name, value) in [("x-signature-ed25519", signature), ("x-signature-timestamp", timestamp)] {
                if let Some(value) = value {
                    let value = axum::http::HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!());
                    headers.insert(name, value);
                }
            }
            verifier.check_headers(&headers).is_ok()
        };
        let good = "ab".repeat(64);
        assert!(check(Some(&good), Some("1700000000")));
        assert!(!check(None, Some("1700000000")));
        assert!(!check(Some(&good), None));
        assert!(!check(Some("abcd"), Some("1700000000")));
        assert!(!check(Some(&"zz".repeat(64)), Some("1700000000")));
        assert!(!check(Some(&good), Some("hello")));
        assert!(!check(Some(&good), Some("")));
    }

    #[test]
    fn a_timestamp_counts_within_5_minutes_of_now_either_way() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        for fresh_enough in ["1800000000", "1799999700", "1800000300", "1799999999"] {
            assert_eq!(fresh(fresh_enough, now), Ok(()), "{fresh_enough}");
        }
        for stale_or_ahead in [
            "1799999699",
            "1800000301",
            "1799996400",
            "0",
            "1831536000",
            "18446744073709551615",
        ] {
            assert!(fresh(stale_or_ahead, now).is_err(), "{stale_or_ahead}");
        }
        for not_seconds in ["hello", "", " 1800000000", "1800000000.5", "-1", "1.8e9", "+1800000000"] {
            assert!(fresh(not_seconds, now).is_err(), "{not_seconds:?}");
        }
    }

    #[test]
    fn public_keys_are_64_hex_digits() {
        let key = "e".repeat(64);
        assert_eq!(hex32(&key), Some([0xee; 32]));
        assert_eq!(hex32(&"e".repeat(63)), None);
        assert_eq!(hex32(&format!("{}x", "e".repeat(63))), None);
    }
}
