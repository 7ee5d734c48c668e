//! The Standard Webhooks signature: `v1,<base64 HMAC-SHA256>` of
//! `"{webhook-id}.{webhook-timestamp}.{body}"` under the agent's secret.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

/// The prefix Standard Webhooks gives a secret, before its base64 key.
const PREFIX: &str = "whsec_";

/// The fewest key bytes askgate accepts: HMAC-SHA256's own block of 32
/// would be the ideal; 24 (192 bits) is what the specification's libraries
/// generate at the least.
const MIN_KEY_BYTES: usize = 24;

/// An agent's webhook signing key, read from its `whsec_<base64>` form.
#[derive(Clone)]
pub(crate) struct WebhookSecret {
    key: Vec<u8>,
}

/// Why a `webhook_secret` was refused; the value itself is never repeated.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum SecretError {
    /// No `whsec_` at its start.
    #[error("the secret must start with whsec_")]
    Prefix,
    /// Not base64 after the prefix.
    #[error("the secret after whsec_ must be base64")]
    Base64,
    /// Fewer than [`MIN_KEY_BYTES`] bytes.
    #[error("the secret must hold at least {MIN_KEY_BYTES} bytes of key")]
    Short,
}

impl std::fmt::Debug for WebhookSecret {
    // A key in a log line would let anyone sign as askgate.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

impl WebhookSecret {
    /// Reads `whsec_<base64>`.
    pub(crate) fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text.trim().strip_prefix(PREFIX).ok_or(SecretError::Prefix)?;
        let key = STANDARD.decode(encoded).map_err(|_| SecretError::Base64)?;
        if key.len() < MIN_KEY_BYTES {
            return Err(SecretError::Short);
        }
        Ok(Self { key })
    }

    /// The `webhook-signature` header's value for one delivery.
    pub(crate) fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_specifications_own_test_vector() {
        // From the Standard Webhooks reference libraries' tests.
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            secret.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_generated_secret_of_40_alphanumerics_is_a_valid_key() {
        // askgate generates `whsec_` and 40 letters and digits: base64
        // without padding, 30 bytes of key.
        let secret = WebhookSecret::parse(&format!("whsec_{}", "aB3".repeat(13) + "x")).unwrap();
        assert_eq!(secret.key.len(), 30);
    }

    #[test]
    fn a_secret_without_prefix_not_base64_or_short_is_refused() {
        assert_eq!(
            WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err(),
            SecretError::Prefix
        );
        assert_eq!(WebhookSecret::parse("whsec_!!!!").unwrap_err(), SecretError::Base64);
        assert_eq!(WebhookSecret::parse("whsec_c2hvcnQ=").unwrap_err(), SecretError::Short);
        assert!(
            !format!(
                "{:?}",
                WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap()
            )
            .contains("MfKQ")
        );
    }
}
