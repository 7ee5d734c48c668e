//! Signing in to the page with OpenID Connect, end to end: the real
//! `askgate serve` and a real provider, `oidc-provider` from npm (a
//! certified implementation, `tests/oidc/provider.mjs`), both on loopback.
//!
//! A person signs in through the provider's own login form, driven here as
//! a browser would (redirects followed, cookies kept, the form posted), sees
//! their pending question at `/web/me`, answers it, and signs out; a person
//! the provider knows but askgate does not, an unverified address, a wrong
//! issuer, a changed `state` and a code used twice are each refused.
//!
//! Its prerequisites are installed when they can be and reported when they
//! cannot; this test never skips: Node.js, and `oidc-provider` (`npm ci` in
//! `tests/oidc`).
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{ChildStdin, Command};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use support::browser::{KillOnDrop, NodeLines, ensure_node, npm_ci, spawn_lines};
use support::{AGENT_TOKEN, Server, repo_root, setup_lock};

const CLIENT_ID: &str = "askgate";
const CLIENT_SECRET: &str = "askgate-test-client-secret";
/// How long the provider may take to start.
const PROVIDER_START: Duration = Duration::from_secs(30);

/// Node.js, and `oidc-provider` in `tests/oidc`, one installer at a time.
fn ensure_oidc_provider(dir: &Path) {
    let _setup = setup_lock();
    ensure_node();
    npm_ci("oidc", dir);
}

/// The provider, started on 127.0.0.1; killed when dropped.
struct Provider {
    port: u16,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    _node: KillOnDrop,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Provider {
    fn start() -> Self {
        let dir = repo_root().join("tests").join("oidc");
        ensure_oidc_provider(&dir);
        let NodeLines {
            node,
            stdin,
            lines,
            stderr,
        } = spawn_lines(
            Command::new("node")
                .arg(dir.join("provider.mjs"))
                .current_dir(&dir)
                .env("OIDC_CLIENT_ID", CLIENT_ID)
                .env("OIDC_CLIENT_SECRET", CLIENT_SECRET),
        );
        let mut provider = Self {
            port: 0,
            stdin,
            lines,
            _node: node,
            stderr,
        };
        let said = provider.line();
        provider.port = said
            .strip_prefix("port ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the provider said {said:?}, not its port"));
        provider
    }

    fn line(&self) -> String {
        self.lines.recv_timeout(PROVIDER_START).unwrap_or_else(|_| {
            panic!(
                "the provider did not say what it should: {}",
                self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
            )
        })
    }

    /// Registers askgate's client with its redirect URI; waits until served.
    fn register(&mut self, redirect: &str) {
        writeln!(self.stdin, "{redirect}").expect("the provider reads its stdin");
        assert_eq!(self.line(), "ready");
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// askgate's configuration for sign-in against `issuer`, and the people:
/// `alice` by address, `bob` by subject, `eve` by an address the provider
/// does not call verified.
fn sign_in_config(issuer: &str) -> String {
    format!(
        "\n[web.oidc]\nissuer = \"{issuer}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\n\
         \n[recipients.alice]\nchannel = \"web\"\ndisplay_name = \"Alice\"\nemail = \"alice@example.com\"\n\
         \n[recipients.bob]\nchannel = \"web\"\noidc_subject = \"bob\"\n\
         \n[recipients.eve]\nchannel = \"web\"\nemail = \"eve@example.com\"\n"
    )
}

/// A browser, as far as sign-in needs one: it keeps cookies (by name: the
/// provider's and askgate's do not share names) and follows nothing by
/// itself, so that the test sees every hop.
struct Browser {
    http: reqwest::Client,
    cookies: BTreeMap<String, String>,
}

/// One response: status, `Location`, the cookies it set, its body.
struct Hop {
    status: u16,
    location: Option<String>,
    set: Vec<String>,
    body: String,
}

impl Browser {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .expect("an HTTP client"),
            cookies: BTreeMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn send(&mut self, request: reqwest::RequestBuilder) -> Hop {
        let response = request
            .header("cookie", self.cookie_header())
            .send()
            .await
            .expect("the request is answered");
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut set = Vec::new();
        for value in response.headers().get_all("set-cookie") {
            let text = value.to_str().expect("a cookie is text").to_owned();
            let pair = text.split(';').next().unwrap_or_default();
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let removed = value.is_empty() || text.to_ascii_lowercase().contains("max-age=0");
            if removed {
                self.cookies.remove(name.trim());
            } else {
                self.cookies.insert(name.trim().to_owned(), value.to_owned());
            }
            set.push(text);
        }
        let body = response.text().await.unwrap_or_default();
        assert!(status < 500 || status == 502, "{status}: {body}");
        Hop {
            status,
            location,
            set,
            body,
        }
    }

    async fn get(&mut self, url: &str, accept: &str) -> Hop {
        let request = self.http.get(url).header("accept", accept);
        self.send(request).await
    }

    async fn post_json(&mut self, url: &str, body: &Value) -> Hop {
        let request = self.http.post(url).json(body);
        self.send(request).await
    }

    /// Signs in as `login` at the provider, starting at askgate's
    /// `/web/oidc/login`, up to the provider sending the browser back: the
    /// callback URL, not yet followed.
    async fn sign_in_at_provider(&mut self, askgate: &str, login: &str) -> String {
        let callback = format!("{askgate}/web/oidc/callback");
        let mut url = format!("{askgate}/web/oidc/login");
        let mut origin = askgate.to_owned();
        for _ in 0..12 {
            let hop = self.get(&url, "text/html").await;
            match (hop.status, hop.location) {
                (302 | 303, Some(location)) => {
                    let next = absolute(&origin, &location);
                    if next.starts_with(&callback) {
                        return next;
                    }
                    origin = origin_of(&next);
                    url = next;
                }
                (200, None) => {
                    // The provider's login form: any login, any password.
                    let action = between(&hop.body, "action=\"", "\"")
                        .unwrap_or_else(|| panic!("no form on the provider's page: {}", hop.body));
                    let form = [("prompt", "login"), ("login", login), ("password", "any password")];
                    let posted = self.send(self.http.post(absolute(&origin, &action)).form(&form)).await;
                    assert!(
                        matches!(posted.status, 302 | 303),
                        "the provider's login answered {}: {}",
                        posted.status,
                        posted.body
                    );
                    url = absolute(&origin, &posted.location.expect("a redirect after login"));
                }
                (status, _) => panic!("signing in, {url} answered {status}: {}", hop.body),
            }
        }
        panic!("signing in as {login} never came back to askgate");
    }
}

fn origin_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split('/').next().unwrap_or_default();
    format!("http://{host}")
}

fn absolute(origin: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_owned()
    } else {
        format!("{origin}{location}")
    }
}

fn between(text: &str, start: &str, end: &str) -> Option<String> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(text[from..to].replace("&amp;", "&"))
}

/// The session cookie a response set, if any.
fn session_set(hop: &Hop) -> Option<&String> {
    hop.set
        .iter()
        .find(|cookie| cookie.starts_with("askgate_session=") && !cookie.starts_with("askgate_session=;"))
}

/// The URL with its `state` replaced.
fn with_state(url: &str, state: &str) -> String {
    let (base, query) = url.split_once('?').expect("a query");
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| {
            if pair.starts_with("state=") {
                format!("state={state}")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
}

fn question_for(recipient: &str) -> Value {
    json!({
        "to": recipient,
        "questions": [{
            "id": "deploy_target",
            "header": "Deploy",
            "question": "Where should this build go?",
            "options": [{"label": "Staging"}, {"label": "Production"}]
        }],
        "timeoutSeconds": 600
    })
}

// One person's sign-in, answer and sign-out, then the others': in the order
// a reader follows them.
#[allow(clippy::too_many_lines)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_with_openid_connect_answer_and_sign_out() {
    let mut provider = Provider::start();
    let mut server = Server::start_with("", &sign_in_config(&provider.issuer()));
    let askgate = server.base().to_owned();
    provider.register(&format!("{askgate}/web/oidc/callback"));
    let announced = server.stdout();
    assert!(
        announced.contains(&format!("redirect URI {askgate}/web/oidc/callback")),
        "serve says which redirect URI to register: {announced}"
    );

    // Questions for Alice and for `me`, asked through the agent API.
    let for_alice = server.create(&question_for("alice")).await;
    let for_alice = for_alice["id"].as_str().unwrap().to_owned();
    let for_me = server.create(&question_for("me")).await;
    let for_me = for_me["id"].as_str().unwrap().to_owned();

    // Not signed in: a browser is sent to sign in, the page's API says 401.
    let mut alice = Browser::new();
    let hop = alice.get(&format!("{askgate}/web/me"), "text/html").await;
    assert_eq!((hop.status, hop.location.as_deref()), (303, Some("/web/oidc/login")));
    let hop = alice
        .get(&format!("{askgate}/web/me/api/state"), "application/json")
        .await;
    assert_eq!(hop.status, 401, "{}", hop.body);
    assert!(hop.body.contains("not_signed_in"), "{}", hop.body);

    // A changed state: refused, no session.
    let back = alice.sign_in_at_provider(&askgate, "alice").await;
    let hop = alice.get(&with_state(&back, "forged-state"), "text/html").await;
    assert_eq!(hop.status, 400, "{}", hop.body);
    assert!(hop.body.contains("could not be finished"), "{}", hop.body);
    assert!(
        session_set(&hop).is_none(),
        "a changed state set a session: {:?}",
        hop.set
    );
    assert!(logged(&mut server, &["the state is not the one this browser was sent with"]).await);

    // Alice signs in.
    let back = alice.sign_in_at_provider(&askgate, "alice").await;
    let login_cookie = alice.cookies.get("askgate_login").cloned().expect("the sign-in cookie");
    let hop = alice.get(&back, "text/html").await;
    assert_eq!(
        (hop.status, hop.location.as_deref()),
        (303, Some("/web/me")),
        "{}",
        hop.body
    );
    let session = session_set(&hop).expect("a session cookie").clone();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/web", "Max-Age=43200"] {
        assert!(session.contains(attribute), "{session} lacks {attribute}");
    }
    assert!(
        !session.contains("Secure"),
        "askgate is served over http here: {session}"
    );
    let old_session = alice.cookies.get("askgate_session").cloned().expect("kept");

    // The code again, with the sign-in cookie again (all an eavesdropper
    // could have): the provider refuses the second exchange; no session.
    let mut replay = Browser::new();
    replay.cookies.insert("askgate_login".into(), login_cookie);
    let hop = replay.get(&back, "text/html").await;
    assert_eq!(hop.status, 400, "a replayed code: {}", hop.body);
    assert!(
        session_set(&hop).is_none(),
        "a replayed code set a session: {:?}",
        hop.set
    );
    assert!(
        logged(&mut server, &["the code exchange failed", "invalid_grant"]).await,
        "the provider refused the second exchange: {}",
        server.stderr()
    );

    // Her page, her question, not another's.
    let hop = alice.get(&format!("{askgate}/web/me"), "text/html").await;
    assert_eq!(hop.status, 200);
    assert!(hop.body.contains("/assets/web.js"), "the page itself");
    let hop = alice
        .get(&format!("{askgate}/web/me/api/state"), "application/json")
        .await;
    assert_eq!(hop.status, 200, "{}", hop.body);
    let state: Value = serde_json::from_str(&hop.body).unwrap();
    assert_eq!(state["recipient"]["name"], "alice", "{state}");
    let pending: Vec<&str> = state["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(pending, [for_alice.as_str()], "{state}");
    let answer = json!({"answers": {"deploy_target": {"options": [1]}}});
    let hop = alice
        .post_json(&format!("{askgate}/web/me/api/questions/{for_me}/answer"), &answer)
        .await;
    assert_eq!(hop.status, 404, "Alice cannot answer me's question: {}", hop.body);

    // She answers; the agent has it.
    let hop = alice
        .post_json(&format!("{askgate}/web/me/api/questions/{for_alice}/answer"), &answer)
        .await;
    assert_eq!(hop.status, 200, "{}", hop.body);
    let (status, resource) = server
        .get(&format!("/v1/questions/{for_alice}"), Some(AGENT_TOKEN))
        .await;
    assert_eq!(status, 200);
    assert_eq!(resource["status"], "answered", "{resource}");
    assert_eq!(
        resource["result"]["answers"]["answers"]["deploy_target"],
        json!(["Production"]),
        "{resource}"
    );
    assert_eq!(resource["answeredBy"]["id"], "web:alice", "{resource}");

    // Signing out: a form cannot (415, CSRF), JSON can; the old cookie then
    // opens nothing, and the response removes it.
    let form = alice
        .send(
            alice
                .http
                .post(format!("{askgate}/web/oidc/logout"))
                .form(&[("x", "1")]),
        )
        .await;
    assert_eq!(form.status, 415, "{}", form.body);
    let hop = alice.post_json(&format!("{askgate}/web/oidc/logout"), &json!({})).await;
    assert_eq!(hop.status, 200, "{}", hop.body);
    assert!(
        hop.set.iter().any(|c| c.starts_with("askgate_session=;") || c.starts_with("askgate_session=")
            && c.contains("Max-Age=0")),
        "{:?}",
        hop.set
    );
    let mut after = Browser::new();
    after.cookies.insert("askgate_session".into(), old_session);
    let hop = after
        .get(&format!("{askgate}/web/me/api/state"), "application/json")
        .await;
    assert_eq!(hop.status, 401, "the old cookie after signing out: {}", hop.body);
    let hop = after.get(&format!("{askgate}/web/me"), "text/html").await;
    assert_eq!((hop.status, hop.location.as_deref()), (303, Some("/web/oidc/login")));

    // Signing in again works (a session begun after signing out).
    let mut again = Browser::new();
    let back = again.sign_in_at_provider(&askgate, "alice").await;
    assert!(session_set(&again.get(&back, "text/html").await).is_some());
    let hop = again
        .get(&format!("{askgate}/web/me/api/state"), "application/json")
        .await;
    assert_eq!(hop.status, 200, "{}", hop.body);

    // Bob is matched by subject.
    let mut bob = Browser::new();
    let back = bob.sign_in_at_provider(&askgate, "bob").await;
    assert!(session_set(&bob.get(&back, "text/html").await).is_some());
    let hop = bob
        .get(&format!("{askgate}/web/me/api/state"), "application/json")
        .await;
    let state: Value = serde_json::from_str(&hop.body).unwrap();
    assert_eq!(state["recipient"]["name"], "bob", "{state}");

    // Mallory, whom the provider knows and askgate does not, and Eve, whose
    // address the provider does not call verified: refused, no session.
    for login in ["mallory", "eve"] {
        let mut browser = Browser::new();
        let back = browser.sign_in_at_provider(&askgate, login).await;
        let hop = browser.get(&back, "text/html").await;
        assert_eq!(hop.status, 403, "{login}: {}", hop.body);
        assert!(hop.body.contains("not one of the people"), "{login}: {}", hop.body);
        assert!(session_set(&hop).is_none(), "{login} got a session: {:?}", hop.set);
        let hop = browser
            .get(&format!("{askgate}/web/me/api/state"), "application/json")
            .await;
        assert_eq!(hop.status, 401, "{login}");
    }
}

/// askgate configured with another issuer than the provider's own (the
/// same provider, reached as `localhost`): discovery names the provider's
/// issuer, which is not the configured one, and sign-in is refused before
/// the browser is sent anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_answering_for_another_issuer_is_refused() {
    let mut provider = Provider::start();
    let wrong = format!("http://localhost:{}", provider.port);
    let mut server = Server::start_with("", &sign_in_config(&wrong));
    let askgate = server.base().to_owned();
    provider.register(&format!("{askgate}/web/oidc/callback"));

    let mut browser = Browser::new();
    let hop = browser.get(&format!("{askgate}/web/oidc/login"), "text/html").await;
    assert_eq!(hop.status, 502, "{}", hop.body);
    assert!(hop.location.is_none());
    assert!(hop.body.contains("Sign-in is not available"), "{}", hop.body);
    assert!(!browser.cookies.contains_key("askgate_login"));
    assert!(
        logged(&mut server, &["unexpected issuer"]).await,
        "discovery's issuer was refused: {}",
        server.stderr()
    );
    // And a callback with no sign-in begun is refused as such.
    let hop = browser
        .get(&format!("{askgate}/web/oidc/callback?code=x&state=y"), "text/html")
        .await;
    assert_eq!(hop.status, 400, "{}", hop.body);
}

/// Whether askgate's log says all of `words` within a few seconds (the log
/// is read in the background, a moment after the response that caused it).
async fn logged(server: &mut Server, words: &[&str]) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let log = server.stderr();
        if words.iter().all(|word| log.contains(word)) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
