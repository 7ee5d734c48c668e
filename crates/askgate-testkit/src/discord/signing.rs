//! HTTP interactions as Discord sends them: a JSON body sent to the
//! application's interactions endpoint with `X-Signature-Ed25519` (the hex
//! Ed25519 signature of the timestamp followed by the body) and
//! `X-Signature-Timestamp` (Unix seconds), signed with the application's key,
//! whose public half (hex) is what the endpoint verifies with; and the
//! answer, which Discord takes as the interaction's first response if it
//! comes within 3 s.

use std::fmt::Write as _;
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use serde_json::Value;

use super::http::INTERACTION_RESPONSE_WINDOW;
use super::state::unix_millis;
use super::types::{HttpAnswer, Signature};

/// The application's signing key: fixed, so that a test's configuration can
/// name its public key, and generated from no randomness.
const APPLICATION_KEY: [u8; 32] = *b"askgate-fake-discord-signing-key";
/// The key a forged signature is made with.
const FORGER_KEY: [u8; 32] = *b"someone-else-s-key-not-discord-s";

/// The application's key.
pub(crate) fn application_key() -> SigningKey {
    SigningKey::from_bytes(&APPLICATION_KEY)
}

/// The public half of a key, as Discord shows it in the developer portal:
/// 64 hex digits.
pub(crate) fn public_key_hex(key: &SigningKey) -> String {
    hex(key.verifying_key().as_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

/// The signature headers Discord would send with this body now (or as
/// `signature` says).
pub(crate) fn signature_headers(key: &SigningKey, body: &[u8], signature: Signature) -> Vec<(String, String)> {
    let now = unix_millis() / 1000;
    let timestamp = match signature {
        Signature::Dated(from_now) => now.saturating_add_signed(from_now).to_string(),
        Signature::Timestamped(timestamp) => timestamp.to_owned(),
        _ => now.to_string(),
    };
    let signer = match signature {
        Signature::Valid | Signature::Dated(_) | Signature::Timestamped(_) => key.clone(),
        Signature::Forged => SigningKey::from_bytes(&FORGER_KEY),
        Signature::Missing => return Vec::new(),
    };
    let message = [timestamp.as_bytes(), body].concat();
    vec![
        ("X-Signature-Ed25519".to_owned(), hex(&signer.sign(&message).to_bytes())),
        ("X-Signature-Timestamp".to_owned(), timestamp),
    ]
}

/// The client that POSTs interactions: it gives up after the 3 s Discord
/// waits for an answer.
pub(crate) fn interactions_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(INTERACTION_RESPONSE_WINDOW)
        // The endpoint is a local address; a proxy from the environment must not intercept it.
        .no_proxy()
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
}

/// POSTs an interaction to an endpoint as Discord does, and returns the answer.
pub(crate) async fn post(
    client: &reqwest::Client,
    key: &SigningKey,
    url: &str,
    payload: &Value,
    signature: Signature,
) -> HttpAnswer {
    let body = payload.to_string().into_bytes();
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("User-Agent", "Discord-Interactions/1.0 (+https://discord.com)");
    for (name, value) in signature_headers(key, &body, signature) {
        request = request.header(name, value);
    }
    match request.body(body).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            match response.text().await {
                Ok(text) => HttpAnswer {
                    status: Some(status),
                    body: if text.trim().is_empty() {
                        Value::Null
                    } else {
                        serde_json::from_str(&text).unwrap_or(Value::String(text))
                    },
                    error: None,
                },
                Err(error) => HttpAnswer {
                    status: Some(status),
                    body: Value::Null,
                    error: Some(format!("the body could not be read: {error}")),
                },
            }
        }
        Err(error) => HttpAnswer {
            status: None,
            body: Value::Null,
            error: Some(if error.is_timeout() {
                format!("no answer within {INTERACTION_RESPONSE_WINDOW:?}")
            } else {
                format!("no answer: {error}")
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signature as Ed25519Signature, Verifier, VerifyingKey};

    use super::{Signature, application_key, public_key_hex, signature_headers};

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap_or_default())
            .collect()
    }

    fn verifies(headers: &[(String, String)], body: &[u8]) -> bool {
        let key = public_key_hex(&application_key());
        let key: [u8; 32] = unhex(&key).try_into().unwrap_or([0; 32]);
        let Ok(key) = VerifyingKey::from_bytes(&key) else {
            return false;
        };
        let signature: [u8; 64] = unhex(&headers[0].1).try_into().unwrap_or([0; 64]);
        let message = [headers[1].1.as_bytes(), body].concat();
        key.verify(&message, &Ed25519Signature::from_bytes(&signature)).is_ok()
    }

    #[test]
    fn the_signature_covers_the_timestamp_and_the_body() {
        let body = br#"{"type":1}"#;
        let headers = signature_headers(&application_key(), body, Signature::Valid);
        assert_eq!(headers[0].0, "X-Signature-Ed25519");
        assert_eq!(headers[0].1.len(), 128);
        assert!(verifies(&headers, body));
        assert!(!verifies(&headers, br#"{"type":2}"#), "another body");
        let forged = signature_headers(&application_key(), body, Signature::Forged);
        assert!(!verifies(&forged, body));
        assert!(signature_headers(&application_key(), body, Signature::Missing).is_empty());
        // Dated otherwise, and still Discord's signature.
        let now: i64 = signature_headers(&application_key(), body, Signature::Valid)[1]
            .1
            .parse()
            .unwrap_or_default();
        let hour_ago = signature_headers(&application_key(), body, Signature::Dated(-3600));
        let dated: i64 = hour_ago[1].1.parse().unwrap_or_default();
        assert!((now - 3600 - dated).abs() <= 1, "{now} {dated}");
        assert!(verifies(&hour_ago, body));
        let hello = signature_headers(&application_key(), body, Signature::Timestamped("hello"));
        assert_eq!(hello[1].1, "hello");
        assert!(verifies(&hello, body));
        assert_eq!(public_key_hex(&application_key()).len(), 64);
    }
}
