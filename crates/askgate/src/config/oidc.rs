//! `[web.oidc]`: signing in to the page with OpenID Connect, and who may
//! (recipients with `email` or `oidc_subject`).

use std::collections::BTreeMap;

use askgate_adapter::config::ConfigCheck;
use serde::Deserialize;

use super::Secret;
use super::recipients::RecipientConfig;

/// The scopes asked for besides `openid` when `scopes` is absent: the
/// address is how most people are matched.
const DEFAULT_SCOPES: [&str; 1] = ["email"];

/// `[web]`: the page.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawWeb {
    oidc: Option<RawOidc>,
}

impl RawWeb {
    /// Whether `[web.oidc]` is there at all (right or wrong).
    pub(super) fn configured(&self) -> bool {
        self.oidc.is_some()
    }
}

#[derive(Debug, Deserialize)]
struct RawOidc {
    issuer: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Option<Vec<String>>,
}

/// `[web.oidc]`, checked.
#[derive(Debug, Clone)]
pub(crate) struct OidcConfig {
    pub(crate) issuer: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    /// Besides `openid`.
    pub(crate) scopes: Vec<String>,
}

impl OidcConfig {
    /// What `check-config` says of it.
    pub(crate) fn describe(&self, recipients: &[RecipientConfig]) -> String {
        let people: Vec<&str> = recipients
            .iter()
            .filter(|r| r.email.is_some() || r.oidc_subject.is_some())
            .map(|r| r.name.as_str())
            .collect();
        format!(
            "sign-in with OpenID Connect: issuer {}, client \"{}\"; at /web/me: {}",
            self.issuer,
            self.client_id,
            if people.is_empty() {
                "nobody (no recipient has email or oidc_subject)".to_owned()
            } else {
                people.join(", ")
            }
        )
    }
}

/// Whether `url` is https, or http to this machine (a provider run for a
/// test or on the same host): anything else would send the client secret
/// and the codes in the clear.
fn acceptable_issuer(url: &str) -> bool {
    if url.starts_with("https://") {
        return url.len() > "https://".len();
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        authority.rsplit_once(':').map_or(authority, |(host, _)| host)
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Reads `[web.oidc]`; `None` when absent or wrong (problems go to `check`).
pub(super) fn oidc(raw: &RawWeb, check: &mut ConfigCheck<'_>) -> Option<OidcConfig> {
    let raw = raw.oidc.as_ref()?;
    let issuer = match raw.issuer.as_deref() {
        None => {
            check.problem(
                "web.oidc.issuer",
                "sign-in needs the provider's issuer URL.",
                "add issuer = \"https://login.example.com/realms/main\" (discovery is read from \
                 <issuer>/.well-known/openid-configuration).",
            );
            None
        }
        Some(text) => check.value("web.oidc.issuer", text).filter(|issuer| {
            let fine = acceptable_issuer(issuer);
            if !fine {
                check.problem(
                    "web.oidc.issuer",
                    format!("\"{issuer}\" is not an https URL."),
                    "write the provider's https issuer URL, exactly as its discovery document names it \
                     (http only for a provider on this machine: localhost or 127.0.0.1).",
                );
            }
            fine
        }),
    };
    let client_id = match raw.client_id.as_deref() {
        None => {
            check.problem(
                "web.oidc.client_id",
                "sign-in needs askgate's client id at the provider.",
                "register askgate as a confidential client and add client_id = \"askgate\".",
            );
            None
        }
        Some(text) => check.value("web.oidc.client_id", text),
    };
    let client_secret = check.required_secret(
        "web.oidc.client_secret",
        raw.client_secret.as_deref(),
        "sign-in needs askgate's client secret at the provider.",
        "client_secret = \"${ASKGATE_OIDC_SECRET}\"",
        "the secret",
    );
    let scopes = raw
        .scopes
        .clone()
        .unwrap_or_else(|| DEFAULT_SCOPES.iter().map(|&scope| scope.to_owned()).collect());
    for scope in &scopes {
        if scope.is_empty() || scope.chars().any(|c| c.is_whitespace() || c == '"' || c == '\\') {
            check.problem(
                "web.oidc.scopes",
                format!("\"{scope}\" is not a scope."),
                "list scopes one word each, e.g. scopes = [\"email\", \"profile\"].",
            );
        }
    }
    Some(OidcConfig {
        issuer: issuer?,
        client_id: client_id?,
        client_secret: client_secret?,
        // `openid` is always asked for; listed again it would be twice.
        scopes: scopes.into_iter().filter(|scope| scope != "openid").collect(),
    })
}

/// Checks the people who may sign in: an address looks like one, a group
/// (a recipient with `people` or named answerers) signs nobody in, no two recipients
/// share an address or a subject, and with `[web.oidc]` absent the keys say
/// nothing (a problem, so that the admin is not left wondering).
pub(super) fn people(recipients: &[RecipientConfig], configured: bool, check: &mut ConfigCheck<'_>) {
    let mut emails: BTreeMap<String, &str> = BTreeMap::new();
    let mut subjects: BTreeMap<&str, &str> = BTreeMap::new();
    for recipient in recipients {
        let name = recipient.name.as_str();
        let key = |field: &str| format!("recipients.{name}.{field}");
        if recipient.email.is_none() && recipient.oidc_subject.is_none() {
            continue;
        }
        let field = if recipient.email.is_some() {
            "email"
        } else {
            "oidc_subject"
        };
        if !configured {
            check.problem(
                &key(field),
                "nobody signs in: [web.oidc] is not configured.",
                "add [web.oidc] with issuer, client_id and client_secret, or remove the key.",
            );
        }
        let group = !recipient.people.is_empty() || recipient.is_group();
        if group {
            check.problem(
                &key(field),
                "this recipient is a group (its people or answerers are named): sign-in opens the page of one person.",
                "give the key to each of its people's own recipients; they see the group's questions there.",
            );
        }
        if let Some(email) = &recipient.email {
            let at = email.split_once('@');
            if at.is_none_or(|(local, domain)| local.is_empty() || domain.is_empty())
                || email.contains(char::is_whitespace)
            {
                check.problem(
                    &key("email"),
                    format!("\"{email}\" is not an email address."),
                    "write the address the provider has for them, e.g. email = \"alice@example.com\".",
                );
            } else if let Some(first) = emails.insert(email.to_lowercase(), name) {
                check.problem(
                    &key("email"),
                    format!("recipient \"{first}\" has the same address."),
                    "give each person their own address.",
                );
            }
        }
        if let Some(subject) = &recipient.oidc_subject {
            if subject.is_empty() {
                check.problem(
                    &key("oidc_subject"),
                    "the subject is empty.",
                    "write the person's `sub` at the provider, or remove the key.",
                );
            } else if let Some(first) = subjects.insert(subject, name) {
                check.problem(
                    &key("oidc_subject"),
                    format!("recipient \"{first}\" has the same subject."),
                    "give each person their own subject.",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const BASE: &str = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n";

    fn env(name: &str) -> Option<String> {
        (name == "OIDC_SECRET").then(|| "a-client-secret".to_owned())
    }

    fn problems(text: &str) -> Vec<String> {
        match parse(&format!("{BASE}{text}"), &env) {
            Ok(_) => Vec::new(),
            Err(problems) => problems.0.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn sign_in_is_read_with_its_people() {
        let text = format!(
            "{BASE}[web.oidc]\nissuer = \"https://login.example.com/realms/main\"\nclient_id = \"askgate\"\n\
             client_secret = \"${{OIDC_SECRET}}\"\n\
             [recipients.alice]\nchannel = \"web\"\nemail = \"alice@example.com\"\n\
             [recipients.bob]\nchannel = \"web\"\noidc_subject = \"248289761001\"\n\
             [recipients.carol]\nchannel = \"web\"\n"
        );
        let config = parse(&text, &env).unwrap();
        let oidc = config.oidc.as_ref().unwrap();
        assert_eq!(oidc.client_secret.expose(), "a-client-secret");
        assert_eq!(oidc.scopes, ["email"]);
        assert_eq!(
            oidc.describe(&config.recipients),
            "sign-in with OpenID Connect: issuer https://login.example.com/realms/main, client \"askgate\"; \
             at /web/me: alice, bob"
        );
        assert!(
            !format!("{config:?}").contains("a-client-secret"),
            "the secret is never shown"
        );
        assert_eq!(config.recipients[0].email.as_deref(), Some("alice@example.com"));
        assert_eq!(config.recipients[1].oidc_subject.as_deref(), Some("248289761001"));
    }

    #[test]
    fn a_loopback_provider_may_be_http_and_no_other() {
        for issuer in ["http://127.0.0.1:9000", "http://localhost:9000/x", "http://[::1]:9000"] {
            let said = problems(&format!(
                "[web.oidc]\nissuer = \"{issuer}\"\nclient_id = \"a\"\nclient_secret = \"s\"\n\
                 [recipients.me]\nchannel = \"web\"\n"
            ));
            assert!(said.is_empty(), "{issuer}: {said:#?}");
        }
        for issuer in [
            "http://login.example.com",
            "ftp://127.0.0.1",
            "login.example.com",
            "https://",
        ] {
            let said = problems(&format!(
                "[web.oidc]\nissuer = \"{issuer}\"\nclient_id = \"a\"\nclient_secret = \"s\"\n\
                 [recipients.me]\nchannel = \"web\"\n"
            ));
            assert!(
                said.iter()
                    .any(|line| line.starts_with("web.oidc.issuer") && line.contains("not an https URL")),
                "{issuer}: {said:#?}"
            );
        }
    }

    #[test]
    fn every_problem_of_sign_in_is_reported() {
        let said = problems(
            "[web.oidc]\nscopes = [\"two words\"]\n\
             [recipients.a]\nchannel = \"web\"\nemail = \"not-an-address\"\n\
             [recipients.b]\nchannel = \"web\"\nemail = \"x@example.com\"\noidc_subject = \"s1\"\n\
             [recipients.c]\nchannel = \"web\"\nemail = \"X@example.com\"\noidc_subject = \"s1\"\n",
        );
        for (key, words) in [
            ("web.oidc.issuer", "issuer URL"),
            ("web.oidc.client_id", "client id"),
            ("web.oidc.client_secret", "client secret"),
            ("web.oidc.scopes", "not a scope"),
            ("recipients.a.email", "not an email address"),
            ("recipients.c.email", "recipient \"b\" has the same address"),
            ("recipients.c.oidc_subject", "recipient \"b\" has the same subject"),
        ] {
            assert!(
                said.iter().any(|line| line.starts_with(key) && line.contains(words)),
                "nothing said of {key} ({words}): {said:#?}"
            );
        }
        // A group's page is its people's: it signs nobody in.
        let said = problems(
            "[web.oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"a\"\nclient_secret = \"s\"\n\
             [recipients.alice]\nchannel = \"web\"\n\
             [recipients.ops]\nchannel = \"web\"\npeople = [\"alice\"]\nemail = \"ops@example.com\"\n",
        );
        assert!(
            said.iter()
                .any(|line| line.starts_with("recipients.ops.email") && line.contains("is a group")),
            "{said:#?}"
        );
        // Without [web.oidc], an address signs nobody in: said.
        let said = problems("[recipients.a]\nchannel = \"web\"\nemail = \"a@example.com\"\n");
        assert!(
            said.iter()
                .any(|line| line.starts_with("recipients.a.email") && line.contains("[web.oidc]")),
            "{said:#?}"
        );
    }
}
