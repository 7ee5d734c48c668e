//! Signing in to the page with OpenID Connect (`[web.oidc]`), for
//! organisations that will not rely on secret links: `/web/me` is then the
//! page of the person who signed in.
//!
//! The flow is the authorization code flow with PKCE, a nonce and a state
//! (the `openidconnect` crate: discovery, the code exchange, the ID token's
//! signature, issuer, audience, expiry and nonce). `GET /web/oidc/login`
//! sends the browser to the provider; what it must remember until the
//! provider sends the browser back (state, nonce, PKCE verifier) rides in a
//! short-lived cookie, so that any replica can finish the sign-in.
//! `GET /web/oidc/callback` checks the state, exchanges the code, verifies
//! the ID token, and matches a configured person: by `oidc_subject` (the
//! token's `sub`), else by `email` when the provider says it is verified.
//! The session is a cookie too (`HttpOnly`, `SameSite=Lax`, `Secure` when
//! askgate is served over https, `Path=/web`, 12 hours). Both cookies are
//! encrypted and authenticated (AES-GCM, the `cookie` crate's private jar)
//! with a key derived from a secret askgate keeps like its other generated
//! ones (in the database with PostgreSQL, so every replica reads them).
//!
//! Signing out (`POST /web/oidc/logout`) ends every session of that person
//! begun before it: the time is kept in the store's settings
//! (`web.signed-out.<person>`), read on every request made with a session.
//! One value a person, however many devices, rather than a list of revoked
//! sessions that would only grow: the store has no way to forget a setting.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cookie::{Cookie, CookieJar, Key, SameSite};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreUserInfoClaims};
use openidconnect::{
    AsyncHttpClient, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest, HttpResponse, IssuerUrl, Nonce,
    OAuth2TokenResponse as _, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse as _,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Wording, html_page, wants_html};
use crate::AppState;
use crate::body::ApiJson;
use crate::error::ApiError;

/// The key in `/web/{key}` that means "the person signed in".
pub(crate) const ME: &str = "me";

/// The session cookie.
const SESSION_COOKIE: &str = "askgate_session";
/// The cookie that carries a sign-in from `login` to `callback`.
const LOGIN_COOKIE: &str = "askgate_login";
/// Where the sign-in cookie is sent: the callback only.
const CALLBACK_PATH: &str = "/web/oidc/callback";
/// How long a person has to sign in at the provider.
const LOGIN_LIFETIME: Duration = Duration::from_secs(600);
/// How long askgate trusts what discovery said (endpoints and signing keys)
/// before it asks again: a provider that rotates its keys is followed within it.
const DISCOVERY_LIFETIME: Duration = Duration::from_secs(600);
/// The most bytes askgate reads of any answer from the provider (discovery,
/// its keys, a token, user info are a few kilobytes each).
const MAX_PROVIDER_BYTES: usize = 1024 * 1024;
/// How long a call to the provider may take, connecting included.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(15);
/// The prefix of the settings that hold when each person last signed out.
const SIGNED_OUT: &str = "web.signed-out.";

/// A person who may sign in, and what identifies them at the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcPerson {
    /// The recipient whose page they get.
    pub recipient: String,
    /// Their address, matched when the provider says it is verified.
    pub email: Option<String>,
    /// Their `sub` at the provider, matched as it is.
    pub subject: Option<String>,
}

/// `[web.oidc]`, as `askgate serve` hands it over.
#[derive(Clone)]
pub struct OidcSettings {
    /// The provider's issuer URL (discovery is under it).
    pub issuer: String,
    /// askgate's client id at the provider.
    pub client_id: String,
    /// askgate's client secret at the provider.
    pub client_secret: String,
    /// The scopes asked for besides `openid`.
    pub scopes: Vec<String>,
    /// Where the provider sends the browser back: `<base>/web/oidc/callback`.
    pub redirect_url: String,
    /// The secret the cookies' key is derived from (at least 32 bytes).
    pub cookie_secret: String,
    /// Who may sign in.
    pub people: Vec<OidcPerson>,
    /// How long a session lasts.
    pub session_lifetime: Duration,
}

impl std::fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scopes", &self.scopes)
            .field("redirect_url", &self.redirect_url)
            .field("cookie_secret", &"<redacted>")
            .field("people", &self.people)
            .field("session_lifetime", &self.session_lifetime)
            .finish()
    }
}

/// Why sign-in could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OidcSetupError {
    /// The cookie secret is shorter than the key derivation takes.
    #[error("the cookie secret is shorter than 32 bytes")]
    ShortSecret,
    /// The issuer or the redirect URL is not a URL.
    #[error("{0} is not a URL: {1}")]
    Url(&'static str, String),
    /// The HTTP client could not be built.
    #[error("could not build the provider's HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Sign-in with OpenID Connect, ready to serve (`ServerSettings::oidc`).
pub struct SignIn {
    settings: OidcSettings,
    issuer: IssuerUrl,
    redirect: RedirectUrl,
    key: Key,
    /// Cookies marked `Secure`: askgate is reached over https.
    secure: bool,
    http: ProviderHttp,
    /// What discovery said, and when.
    discovered: Mutex<Option<(Instant, CoreProviderMetadata)>>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl SignIn {
    /// Checks `settings` and builds the provider's HTTP client.
    pub fn new(settings: OidcSettings) -> Result<Self, OidcSetupError> {
        if settings.cookie_secret.len() < 32 {
            return Err(OidcSetupError::ShortSecret);
        }
        let issuer =
            IssuerUrl::new(settings.issuer.clone()).map_err(|e| OidcSetupError::Url("issuer", e.to_string()))?;
        let redirect = RedirectUrl::new(settings.redirect_url.clone())
            .map_err(|e| OidcSetupError::Url("the redirect URL", e.to_string()))?;
        let client = reqwest::Client::builder()
            // Following a redirect would let a provider's answer send
            // askgate anywhere (server-side request forgery).
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(PROVIDER_TIMEOUT)
            .build()?;
        Ok(Self {
            secure: settings.redirect_url.starts_with("https://"),
            key: Key::derive_from(settings.cookie_secret.as_bytes()),
            issuer,
            redirect,
            http: ProviderHttp(client),
            discovered: Mutex::new(None),
            settings,
        })
    }

    /// The provider's metadata, from discovery (cached a while).
    async fn metadata(&self) -> Result<CoreProviderMetadata, String> {
        if let Some((at, metadata)) = &*self.discovered.lock().unwrap_or_else(PoisonError::into_inner)
            && at.elapsed() < DISCOVERY_LIFETIME
        {
            return Ok(metadata.clone());
        }
        // The issuer in the document must be the configured one (the crate
        // checks): a provider answering for another issuer is refused.
        let metadata = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|error| error_chain(&error))?;
        *self.discovered.lock().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// askgate's client at the provider, from discovery; the page saying
    /// sign-in is unavailable when discovery failed.
    async fn client(&self) -> Result<ProviderClient, Response> {
        let metadata = self.metadata().await.map_err(|error| {
            tracing::warn!(%error, "sign-in: the provider's discovery failed");
            html_page(StatusCode::BAD_GATEWAY, PROVIDER_TROUBLE)
        })?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.clone())),
        )
        .set_redirect_uri(self.redirect.clone()))
    }

    /// A cookie: `HttpOnly`, `SameSite=Lax` (sent when the provider sends
    /// the browser back, a top-level navigation; never on a cross-site
    /// POST), `Secure` over https.
    fn cookie(&self, name: &'static str, value: String, path: &'static str, lifetime: Duration) -> Cookie<'static> {
        Cookie::build((name, value))
            .path(path)
            .http_only(true)
            .secure(self.secure)
            .same_site(SameSite::Lax)
            .max_age(cookie::time::Duration::seconds(
                i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX),
            ))
            .build()
    }

    /// The `Set-Cookie` value that stores `payload`, encrypted, in `name`.
    fn sealed(
        &self,
        name: &'static str,
        payload: &impl Serialize,
        path: &'static str,
        lifetime: Duration,
    ) -> HeaderValue {
        let mut jar = CookieJar::new();
        let text = serde_json::to_string(payload).unwrap_or_default();
        jar.private_mut(&self.key).add(self.cookie(name, text, path, lifetime));
        let sealed = jar.get(name).map(ToString::to_string).unwrap_or_default();
        HeaderValue::from_str(&sealed).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The `Set-Cookie` value that removes `name`.
    fn cleared(&self, name: &'static str, path: &'static str) -> HeaderValue {
        let cookie = self.cookie(name, String::new(), path, Duration::ZERO);
        HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The payload of the cookie `name` of the request, when askgate sealed
    /// it (any other value, changed or forged, fails to decrypt).
    fn opened<T: for<'de> Deserialize<'de>>(&self, headers: &HeaderMap, name: &str) -> Option<T> {
        let mut jar = CookieJar::new();
        for value in headers.get_all(header::COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            for cookie in Cookie::split_parse(text.to_owned()).flatten() {
                if cookie.name() == name {
                    jar.add_original(cookie);
                }
            }
        }
        let cookie = jar.private(&self.key).get(name)?;
        serde_json::from_str(cookie.value()).ok()
    }

    /// The configured person the provider's claims name: by subject first,
    /// then by a verified email address.
    fn person(&self, subject: &str, email: Option<&str>, verified: bool) -> Option<&OidcPerson> {
        let people = &self.settings.people;
        people
            .iter()
            .find(|person| person.subject.as_deref() == Some(subject))
            .or_else(|| {
                let email = email.filter(|_| verified)?;
                people.iter().find(|person| {
                    person
                        .email
                        .as_deref()
                        .is_some_and(|wanted| wanted.eq_ignore_ascii_case(email))
                })
            })
    }
}

/// askgate's client at the provider: its endpoints as discovery gave them
/// (authorization set; token and user info maybe), the redirect URL set.
type ProviderClient = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// What the sign-in cookie carries from `login` to `callback`.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    /// Milliseconds since the epoch after which it is refused.
    exp: u64,
}

/// What the session cookie carries.
#[derive(Serialize, Deserialize)]
struct Session {
    /// The recipient whose page it opens.
    person: String,
    /// When it began and when it ends, in milliseconds since the epoch.
    iat: u64,
    exp: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An error and its causes on one line, for the log.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The person signed in with this request's session cookie: the recipient
/// whose page `/web/me` is. `None` without sign-in configured, without a
/// session, or with one that ended (expired, signed out, or for a person no
/// longer configured).
pub(crate) async fn session_person(state: &AppState, headers: &HeaderMap) -> Option<String> {
    let oidc = state.0.oidc.as_deref()?;
    let session: Session = oidc.opened(headers, SESSION_COOKIE)?;
    if session.exp <= now_ms() || !oidc.settings.people.iter().any(|p| p.recipient == session.person) {
        return None;
    }
    let signed_out = match state
        .0
        .engine
        .store()
        .setting(&format!("{SIGNED_OUT}{}", session.person))
        .await
    {
        Ok(value) => value.and_then(|text| text.parse::<u64>().ok()).unwrap_or(0),
        // Not knowing whether they signed out, askgate does not let them in.
        Err(error) => {
            tracing::warn!(%error, recipient = %session.person, "could not read when a person last signed out");
            return None;
        }
    };
    (session.iat > signed_out).then_some(session.person)
}

/// Why `/web/me` answers nothing: 401 `not_signed_in` when sign-in is
/// configured, the 404 of any unknown page otherwise.
pub(crate) fn no_session(state: &AppState) -> ApiError {
    if state.0.oidc.is_some() {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "not_signed_in",
            "Sign in first: GET /web/oidc/login.",
        )
    } else {
        ApiError::not_found("page")
    }
}

/// `GET /web/me` without a session: a browser is sent to sign in.
pub(crate) fn sign_in_first(state: &AppState, headers: &HeaderMap) -> Response {
    if state.0.oidc.is_some() && wants_html(headers) {
        return see_other("/web/oidc/login", None);
    }
    no_session(state).into_response()
}

/// A 303 to `location`, setting `cookie` when there is one.
fn see_other(location: &str, cookie: Option<HeaderValue>) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::CACHE_CONTROL, "no-store")]).into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The provider could not be reached, or answered something askgate refuses.
const PROVIDER_TROUBLE: Wording = Wording {
    title: "askgate: sign-in is not available",
    en: "Sign-in is not available right now: the sign-in provider could not be reached or answered wrongly. \
         Try again later, or use your page link.",
    zh: "现在无法登录：无法连接登录服务，或其应答有误。请稍后再试，或使用你的页面链接。",
};

/// The sign-in could not be finished: state, code or token refused.
const SIGN_IN_FAILED: Wording = Wording {
    title: "askgate: sign-in failed",
    en: "This sign-in could not be finished (it expired, was already used, or was changed on the way). \
         <a href=\"/web/oidc/login\">Sign in again</a>.",
    zh: "此次登录无法完成（已过期、已使用过或途中被更改）。<a href=\"/web/oidc/login\">重新登录</a>。",
};

/// The provider signed in someone askgate does not know.
const UNKNOWN_PERSON: Wording = Wording {
    title: "askgate: not one of the people here",
    en: "You signed in, but you are not one of the people askgate asks. \
         Ask whoever runs askgate to add your email address or subject.",
    zh: "你已登录，但你不在 askgate 提问的人员之中。请联系 askgate 的管理员添加你的邮箱地址或标识。",
};

/// After signing out.
const SIGNED_OUT_PAGE: Wording = Wording {
    title: "askgate: signed out",
    en: "You are signed out. <a href=\"/web/oidc/login\">Sign in again</a>.",
    zh: "你已退出登录。<a href=\"/web/oidc/login\">重新登录</a>。",
};

/// Sign-in is not configured here.
fn not_configured(headers: &HeaderMap) -> Response {
    super::not_found_for(headers, super::NO_PAGE_HERE, ApiError::not_found("route"))
}

/// `GET /web/oidc/login`: to the provider, with a fresh state, nonce and
/// PKCE challenge, remembered in the sign-in cookie.
pub(crate) async fn login(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(oidc) = state.0.oidc.as_deref() else {
        return not_configured(&headers);
    };
    let client = match oidc.client().await {
        Ok(client) => client,
        Err(page) => return page,
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in &oidc.settings.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, csrf, nonce) = request.set_pkce_challenge(challenge).url();
    let pending = Pending {
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
        exp: now_ms().saturating_add(millis(LOGIN_LIFETIME)),
    };
    let cookie = oidc.sealed(LOGIN_COOKIE, &pending, CALLBACK_PATH, LOGIN_LIFETIME);
    see_other(url.as_str(), Some(cookie))
}

/// `GET /web/oidc/callback?code=…&state=…`: finishes a sign-in begun in
/// this browser, and on success sends it to `/web/me` with a session.
/// Whatever happens, the sign-in cookie is removed: a sign-in is finished once.
pub(crate) async fn callback(
    State(state): State<AppState>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    let Some(oidc) = state.0.oidc.as_deref() else {
        return not_configured(&headers);
    };
    let mut response = finish(oidc, &query, &headers).await;
    response
        .headers_mut()
        .append(header::SET_COOKIE, oidc.cleared(LOGIN_COOKIE, CALLBACK_PATH));
    response
}

/// The callback's work; its response, without the sign-in cookie's removal.
// The checks in the order the flow makes them; split, they would read out of order.
#[allow(clippy::too_many_lines)]
async fn finish(oidc: &SignIn, query: &[(String, String)], headers: &HeaderMap) -> Response {
    let param = |name: &str| {
        let mut found = query
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.as_str());
        match (found.next(), found.next()) {
            (Some(value), None) => Some(value),
            _ => None,
        }
    };
    let refused = |reason: &str| {
        tracing::info!(reason, "sign-in refused");
        html_page(StatusCode::BAD_REQUEST, SIGN_IN_FAILED)
    };
    let Some(pending) = oidc.opened::<Pending>(headers, LOGIN_COOKIE) else {
        return refused("no sign-in was begun in this browser, or its cookie was changed");
    };
    if pending.exp <= now_ms() {
        return refused("the sign-in took too long");
    }
    let Some(returned) = param("state") else {
        return refused("the provider's answer has no state");
    };
    if !constant_time_eq::constant_time_eq(returned.as_bytes(), pending.state.as_bytes()) {
        return refused("the state is not the one this browser was sent with");
    }
    if let Some(error) = param("error") {
        tracing::info!(error, "sign-in: the provider refused");
        return html_page(StatusCode::FORBIDDEN, SIGN_IN_FAILED);
    }
    let Some(code) = param("code") else {
        return refused("the provider's answer has no code");
    };
    let client = match oidc.client().await {
        Ok(client) => client,
        Err(page) => return page,
    };
    let exchange = match client.exchange_code(AuthorizationCode::new(code.to_owned())) {
        Ok(exchange) => exchange,
        Err(error) => {
            tracing::warn!(error = %error_chain(&error), "sign-in: the provider has no token endpoint");
            return html_page(StatusCode::BAD_GATEWAY, PROVIDER_TROUBLE);
        }
    };
    // A code used once already, or not issued for this verifier, is refused
    // by the provider here.
    let tokens = match exchange
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(&oidc.http)
        .await
    {
        Ok(tokens) => tokens,
        Err(error) => return refused(&format!("the code exchange failed: {}", error_chain(&error))),
    };
    let Some(id_token) = tokens.id_token() else {
        return refused("the provider sent no ID token");
    };
    let verifier = client.id_token_verifier();
    let claims = match id_token.claims(&verifier, &Nonce::new(pending.nonce)) {
        Ok(claims) => claims,
        Err(error) => return refused(&format!("the ID token is not valid: {}", error_chain(&error))),
    };
    let subject = claims.subject().as_str().to_owned();
    let mut email = claims.email().map(|email| email.as_str().to_owned());
    let mut email_verified = claims.email_verified() == Some(true);
    // Providers that keep the ID token small put the address in user info
    // only; asked only when a person is matched by address.
    let wants_email = oidc.settings.people.iter().any(|person| person.email.is_some());
    if email.is_none() && wants_email && oidc.person(&subject, None, false).is_none() {
        match user_info(
            &client,
            tokens.access_token().clone(),
            claims.subject().clone(),
            &oidc.http,
        )
        .await
        {
            Ok(info) => {
                email = info.email().map(|email| email.as_str().to_owned());
                email_verified = info.email_verified() == Some(true);
            }
            Err(error) => tracing::info!(%error, "sign-in: user info could not be read"),
        }
    }
    let Some(person) = oidc.person(&subject, email.as_deref(), email_verified) else {
        tracing::info!(
            subject,
            "sign-in refused: no configured person has this subject or verified email"
        );
        return html_page(StatusCode::FORBIDDEN, UNKNOWN_PERSON);
    };
    let now = now_ms();
    let session = Session {
        person: person.recipient.clone(),
        iat: now,
        exp: now.saturating_add(millis(oidc.settings.session_lifetime)),
    };
    tracing::info!(recipient = %person.recipient, "a person signed in to the page");
    let cookie = oidc.sealed(SESSION_COOKIE, &session, "/web", oidc.settings.session_lifetime);
    see_other("/web/me", Some(cookie))
}

/// The user info of the person the access token is for; `subject` must match.
async fn user_info(
    client: &ProviderClient,
    token: openidconnect::AccessToken,
    subject: openidconnect::SubjectIdentifier,
    http: &ProviderHttp,
) -> Result<CoreUserInfoClaims, String> {
    client
        .user_info(token, Some(subject))
        .map_err(|error| error_chain(&error))?
        .request_async(http)
        .await
        .map_err(|error| error_chain(&error))
}

/// `POST /web/oidc/logout` (a JSON body, `{}`: a cross-site form cannot
/// send one): ends the session, and every other session of the same person
/// begun before now; the cookie is removed.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap, ApiJson(_): ApiJson<Value>) -> Response {
    let Some(oidc) = state.0.oidc.as_deref() else {
        return ApiError::not_found("route").into_response();
    };
    if let Some(person) = session_person(&state, &headers).await {
        let key = format!("{SIGNED_OUT}{person}");
        if let Err(error) = state.0.engine.store().set_setting(&key, &now_ms().to_string()).await {
            return ApiError::unavailable(&error).into_response();
        }
        tracing::info!(recipient = %person, "a person signed out of the page");
    }
    let mut response = axum::Json(json!({"signedOut": true})).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, oidc.cleared(SESSION_COOKIE, "/web"));
    response
}

/// `GET /web/oidc/signed-out`: where the page goes after signing out.
#[allow(clippy::unused_async, reason = "an axum handler is an async fn")]
pub(crate) async fn signed_out() -> Response {
    html_page(StatusCode::OK, SIGNED_OUT_PAGE)
}

/// Why a call to the provider failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProviderHttpError {
    /// The request could not be made or its answer read.
    #[error("the provider could not be reached: {0}")]
    Request(#[from] reqwest::Error),
    /// The answer was larger than askgate reads.
    #[error("the provider's answer is larger than {MAX_PROVIDER_BYTES} bytes")]
    TooLarge,
    /// The answer could not be turned into a response.
    #[error("the provider's answer could not be read: {0}")]
    Http(#[from] axum::http::Error),
}

/// The HTTP client `openidconnect` calls the provider with: askgate's
/// reqwest (rustls), no redirects, a timeout, and every answer read up to
/// [`MAX_PROVIDER_BYTES`].
struct ProviderHttp(reqwest::Client);

impl<'c> AsyncHttpClient<'c> for ProviderHttp {
    type Error = ProviderHttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, ProviderHttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)?;
            let mut response = self.0.execute(request).await?;
            let mut builder = axum::http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_PROVIDER_BYTES {
                    return Err(ProviderHttpError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(builder.body(body)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oidc(people: Vec<OidcPerson>) -> SignIn {
        SignIn::new(OidcSettings {
            issuer: "https://id.example.com".into(),
            client_id: "askgate".into(),
            client_secret: "secret".into(),
            scopes: vec!["email".into()],
            redirect_url: "https://askgate.example.com/web/oidc/callback".into(),
            cookie_secret: "0123456789abcdefghijklmnopqrstuvwxyzABCD".into(),
            people,
            session_lifetime: Duration::from_secs(3600),
        })
        .unwrap()
    }

    fn person(recipient: &str, email: Option<&str>, subject: Option<&str>) -> OidcPerson {
        OidcPerson {
            recipient: recipient.into(),
            email: email.map(Into::into),
            subject: subject.map(Into::into),
        }
    }

    #[test]
    fn a_person_is_matched_by_subject_or_by_a_verified_address_only() {
        let oidc = oidc(vec![
            person("alice", Some("Alice@Example.com"), None),
            person("bob", None, Some("sub-bob")),
        ]);
        let who = |subject, email, verified| oidc.person(subject, email, verified).map(|p| p.recipient.clone());
        assert_eq!(who("x", Some("alice@example.com"), true).as_deref(), Some("alice"));
        assert_eq!(
            who("x", Some("alice@example.com"), false),
            None,
            "an unverified address"
        );
        assert_eq!(who("sub-bob", None, false).as_deref(), Some("bob"));
        assert_eq!(who("sub-bob", Some("alice@example.com"), true).as_deref(), Some("bob"));
        assert_eq!(who("mallory", Some("mallory@example.com"), true), None);
    }

    #[test]
    fn cookies_are_sealed_and_refused_when_changed() {
        let oidc = oidc(Vec::new());
        let session = Session {
            person: "alice".into(),
            iat: 1,
            exp: 2,
        };
        let set = oidc.sealed(SESSION_COOKIE, &session, "/web", Duration::from_secs(60));
        let set = set.to_str().unwrap();
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/web", "Max-Age=60"] {
            assert!(set.contains(attribute), "{set} lacks {attribute}");
        }
        assert!(!set.contains("alice"), "the session is encrypted: {set}");
        let pair = set.split(';').next().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(&format!("a=b; {pair}")).unwrap());
        let opened: Session = oidc.opened(&headers, SESSION_COOKIE).unwrap();
        assert_eq!(opened.person, "alice");
        // One character changed: refused.
        let (name, value) = pair.split_once('=').unwrap();
        let mut bytes = value.as_bytes().to_vec();
        bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
        let changed = format!("{name}={}", String::from_utf8(bytes).unwrap());
        headers.insert(header::COOKIE, HeaderValue::from_str(&changed).unwrap());
        assert!(oidc.opened::<Session>(&headers, SESSION_COOKIE).is_none());
        // Sealed under another name (the sign-in cookie's value as a session): refused.
        let login = oidc.sealed(LOGIN_COOKIE, &session, CALLBACK_PATH, Duration::from_secs(60));
        let value = login
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .split_once('=')
            .unwrap()
            .1
            .to_owned();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("{SESSION_COOKIE}={value}")).unwrap(),
        );
        assert!(oidc.opened::<Session>(&headers, SESSION_COOKIE).is_none());
    }
}
