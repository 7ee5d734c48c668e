//! Reading a platform's answer within a bound: a platform, or a proxy in
//! front of it, that answers with a body of gigabytes must cost askgate no
//! more than [`MAX_ANSWER_BYTES`] of memory. Every answer askgate reads
//! from a platform over reqwest goes through [`read_capped`]; what is
//! larger is a failure of the platform's (retryable, as a 5xx is), said in
//! a few words.
//!
//! Hand-written because reqwest 0.12 has no limit of its own on a body's
//! size (`Response::bytes` reads whatever comes).

use std::fmt;

/// The largest answer askgate reads from a platform. Far above anything a
/// chat API answers askgate's calls with (a sent message, 100 updates of
/// `getUpdates`), far below what would hurt.
pub const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;

/// Why an answer could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The answer was larger than the limit (said, or found while reading);
    /// askgate stopped reading it.
    #[error("the answer was larger than {}, so askgate did not read it", Size(*limit))]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection failed while the body was read.
    #[error(transparent)]
    Failed(reqwest::Error),
}

/// `response`'s body, read chunk by chunk up to `limit` bytes: at once
/// [`ReadError::TooLarge`] when its `Content-Length` says more, and as
/// soon as more arrives otherwise. Dropping the response then closes its
/// connection: the rest is never read.
pub async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ReadError> {
    let said = response
        .content_length()
        .and_then(|length| usize::try_from(length).ok());
    if said.is_some_and(|length| length > limit) {
        return Err(ReadError::TooLarge { limit });
    }
    let mut body = Vec::with_capacity(said.unwrap_or(0).min(limit));
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Failed)? {
        if chunk.len() > limit - body.len() {
            return Err(ReadError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A byte count for a person: `2 MiB`, `512 KiB`, `100 bytes`.
struct Size(usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KIB: usize = 1024;
        match self.0 {
            bytes if bytes >= KIB * KIB && bytes % (KIB * KIB) == 0 => write!(f, "{} MiB", bytes / (KIB * KIB)),
            bytes if bytes >= KIB && bytes % KIB == 0 => write!(f, "{} KiB", bytes / KIB),
            bytes => write!(f, "{bytes} bytes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_said_in_words() {
        assert_eq!(
            ReadError::TooLarge {
                limit: MAX_ANSWER_BYTES
            }
            .to_string(),
            "the answer was larger than 2 MiB, so askgate did not read it"
        );
        assert_eq!(Size(512 * 1024).to_string(), "512 KiB");
        assert_eq!(Size(100).to_string(), "100 bytes");
    }
}
