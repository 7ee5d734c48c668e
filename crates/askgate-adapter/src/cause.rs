//! Saying what went wrong on the way to a platform: HTTP clients word a
//! failure vaguely at the top ("error sending request") and precisely at the
//! bottom of its cause chain ("failed to lookup address information").

use std::error::Error;

/// `error`'s own words, then its innermost cause when it has one:
/// `error sending request: Connection refused (os error 111)`. Only for
/// errors whose chain holds no secret (a URL with a token in it is taken out
/// before: `reqwest::Error::without_url`, teloxide's redaction).
pub fn with_cause(error: &(dyn Error + 'static)) -> String {
    let Some(mut cause) = error.source() else {
        return error.to_string();
    };
    while let Some(next) = cause.source() {
        cause = next;
    }
    format!("{error}: {cause}")
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
}
