//! A question's own result callback: `callbackUrl` in the envelope of
//! `POST /v1/questions` and `POST /v1/ask`, taken only to a host the agent's
//! configuration allows (`[agents.NAME] callback_hosts`, and its
//! `callback_url`'s host). Sending it is the engine's and the binary's.

use askgate_core::validate::{ErrorCode, ValidationError};

use crate::api::error;

/// The longest `callbackUrl`, in characters (the common practical limit
/// of URLs).
pub const MAX_CALLBACK_URL_CHARS: usize = 2048;

/// The lower-cased host of an http(s) URL; `None` for anything else (another
/// scheme, no host, not a URL).
pub fn host_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    parsed.host_str().map(str::to_ascii_lowercase)
}

/// Checks the `callbackUrl` `url` against `hosts`, the hosts this agent's
/// questions may name: the URL when it may be used, else a problem in
/// `errors`. The URL itself is never repeated in the message (it may hold
/// a secret path).
pub(crate) fn check(url: String, hosts: &[String], errors: &mut Vec<ValidationError>) -> Option<String> {
    let refuse = |errors: &mut Vec<ValidationError>, message: String| {
        errors.push(error(ErrorCode::InvalidCallbackUrl, "callbackUrl", message));
        None
    };
    if url.chars().count() > MAX_CALLBACK_URL_CHARS {
        return refuse(
            errors,
            format!("\"callbackUrl\" is at most {MAX_CALLBACK_URL_CHARS} characters long."),
        );
    }
    let Some(host) = host_of(&url) else {
        return refuse(
            errors,
            "\"callbackUrl\" must be an http or https URL with a host, as \"https://hooks.example.com/askgate\"."
                .to_owned(),
        );
    };
    if hosts.is_empty() {
        return refuse(
            errors,
            "This agent takes no callbackUrl: its configuration allows no callback hosts ([agents.NAME] callback_hosts or callback_url).".to_owned(),
        );
    }
    if !hosts.contains(&host) {
        return refuse(
            errors,
            format!(
                "\"callbackUrl\" may only name a host this agent's configuration allows ({}).",
                hosts
                    .iter()
                    .take(10)
                    .map(|host| format!("\"{}\"", askgate_core::text::excerpt(host)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(url: &str, hosts: &[&str]) -> Result<String, (String, String)> {
        let hosts: Vec<String> = hosts.iter().map(|host| (*host).to_owned()).collect();
        let mut errors = Vec::new();
        check(url.to_owned(), &hosts, &mut errors).ok_or_else(|| {
            let error = errors.pop().expect("a problem when refused");
            (error.code.as_str().to_owned(), error.message)
        })
    }

    #[test]
    fn a_url_on_an_allowed_host_is_taken_whatever_its_case() {
        assert_eq!(
            checked("https://Hooks.Example.com/a?b=1", &["hooks.example.com"]),
            Ok("https://Hooks.Example.com/a?b=1".to_owned())
        );
        assert!(checked("http://127.0.0.1:9000/x", &["127.0.0.1"]).is_ok());
    }

    #[test]
    fn other_hosts_schemes_and_non_urls_are_refused_without_repeating_the_url() {
        for url in [
            "https://evil.example/steal-token-123",
            "https://hooks.example.com.evil.example/",
            "https://hooks.example.com@evil.example/",
            "ftp://hooks.example.com/",
            "file:///etc/passwd",
            "not a url",
            "",
        ] {
            let (code, message) = checked(url, &["hooks.example.com"]).expect_err(url);
            assert_eq!(code, "invalid_callback_url", "{url}");
            assert!(
                url.is_empty() || !message.contains(url),
                "the URL is not echoed: {message}"
            );
        }
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_CALLBACK_URL_CHARS));
        assert!(checked(&long, &["hooks.example.com"]).is_err());
    }

    #[test]
    fn an_agent_without_callback_hosts_takes_none() {
        let (_, message) = checked("https://hooks.example.com/", &[]).expect_err("no hosts");
        assert!(message.contains("callback_hosts"), "{message}");
    }
}
