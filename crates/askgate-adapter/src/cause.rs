//! Saying what went wrong on the way to a platform: HTTP clients word a
//! failure vaguely at the top ("error sending request") and precisely at the
//! bottom of its cause chain ("failed to lookup address information").
//!
//! Whatever a platform (or a proxy in front of it) says is outside text:
//! [`bounded`] cuts it to [`MAX_REASON_BYTES`] on one line before askgate
//! logs it or keeps it as a [`askgate_core::ChannelError`]'s reason, so that
//! a huge or multi-line error body can neither fill the log nor forge lines
//! in it.

use std::error::Error;

use askgate_core::text::{Limit, clean_field};

/// The most of an outside error text askgate logs or keeps, in UTF-8 bytes:
/// room for a platform's sentence and its code, not for a page of HTML.
pub const MAX_REASON_BYTES: usize = 300;

/// `error`'s own words, then its innermost cause when it has one:
/// `error sending request: Connection refused (os error 111)`, [`bounded`].
/// Only for errors whose chain holds no secret (a URL with a token in it is
/// taken out before: `reqwest::Error::without_url`, teloxide's redaction).
pub fn with_cause(error: &(dyn Error + 'static)) -> String {
    let Some(mut cause) = error.source() else {
        return bounded(&error.to_string());
    };
    while let Some(next) = cause.source() {
        cause = next;
    }
    bounded(&format!("{error}: {cause}"))
}

/// `text` on one line (every run of whitespace and control characters one
/// space) and at most [`MAX_REASON_BYTES`], with `…` where it was cut and
/// never a character split.
pub fn bounded(text: &str) -> String {
    // A cheap first cut, so that the careful one below (by user-perceived
    // characters) never walks a megabyte; the margin keeps a character that
    // straddles the limit whole for it to judge.
    let mut end = text.len().min(MAX_REASON_BYTES + 64);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Limit::bytes(MAX_REASON_BYTES).ellipsize(&clean_field(&text[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_innermost_cause_follows_the_error_s_own_words() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        assert_eq!(with_cause(&Outer(refused)), "error sending request: Connection refused");
        let alone = std::io::Error::other("disk full");
        assert_eq!(with_cause(&alone), "disk full");
    }

    #[test]
    fn outside_text_is_cut_to_one_short_line() {
        assert_eq!(bounded("Bad Request: chat not found"), "Bad Request: chat not found");
        assert_eq!(bounded("line one\nINFO forged line\r\n"), "line one INFO forged line");
        let huge = "é".repeat(1_000_000);
        let cut = bounded(&huge);
        assert!(cut.len() <= MAX_REASON_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…') && cut.starts_with("éé"), "{cut}");
        let cause = std::io::Error::other("<html>".repeat(100_000));
        assert!(with_cause(&Outer(cause)).len() <= MAX_REASON_BYTES);
    }
}
