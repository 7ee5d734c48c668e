//! The bot's session: the client built (its stores in the channel's
//! folder) and signed in, either with a configured access token (its
//! device configured, or asked of the homeserver) or by logging in once with
//! the bot's password and keeping that session in `session.json`, so that
//! every later start is the same device with the same encryption keys.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use askgate_adapter::cause::bounded;
use askgate_core::ChannelError;
use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::encryption::EncryptionSettings;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{Login, MatrixSettings};
use crate::error::channel_error;
use crate::relay::{Homeserver, Relay};

/// How long one request to the homeserver may take (a sync's own wait
/// comes on top).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `whoami` answer, or kept session, askgate reads.
const SMALL_BYTES: usize = 64 * 1024;

/// The file a password login's session is kept in, in the channel's folder.
const KEPT: &str = "session.json";

/// A session askgate logged in for itself.
#[derive(Serialize, Deserialize)]
struct Kept {
    user_id: String,
    device_id: String,
    access_token: String,
}

/// A signed-in client, and the relay it reaches the homeserver through.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) client: Client,
    /// Serving while the session lives; `None` where no loopback port could
    /// be had (the homeserver is then reached directly, unbounded).
    _relay: Option<Relay>,
}

/// The client of `settings`, signed in, reaching the homeserver through a
/// relay that reads every answer within a bound (`relay`).
pub(crate) async fn connect(settings: &MatrixSettings) -> Result<Session, ChannelError> {
    let user_id = OwnedUserId::try_from(settings.user_id.as_str()).map_err(|_| ChannelError::Rejected {
        reason: format!("\"{}\" is not a Matrix user id", settings.user_id),
    })?;
    let homeserver = reqwest::Url::parse(&settings.homeserver).map_err(|error| ChannelError::Rejected {
        reason: format!("\"{}\" is not a URL: {error}", bounded(&settings.homeserver)),
    })?;
    let relay = match Relay::start(&homeserver, Homeserver) {
        Ok(relay) => Some(relay),
        Err(error) => {
            tracing::warn!(channel = %settings.name, %error, "could not start the relay that bounds the homeserver's answers; reading them directly");
            None
        }
    };
    let mut builder = Client::builder()
        // The homeserver the configuration names, whatever a login's
        // `well_known` says: through the relay.
        .respect_login_well_known(false)
        // The bot's device signed by the bot's own cross-signing identity,
        // made on first start where the account has none: clients that
        // share room keys only with devices their owner signed (Element's
        // "exclude insecure devices") still encrypt for askgate.
        .with_encryption_settings(EncryptionSettings {
            auto_enable_cross_signing: true,
            ..EncryptionSettings::default()
        })
        .request_config(RequestConfig::new().timeout(REQUEST_TIMEOUT).retry_limit(2));
    builder = match &relay {
        Some(relay) => {
            // No proxy between matrix-sdk and the relay on loopback; the
            // relay's own client uses the machine's proxy settings.
            let http = matrix_sdk::reqwest::Client::builder()
                .no_proxy()
                .build()
                .map_err(|error| ChannelError::Unavailable {
                    reason: bounded(&error.to_string()),
                })?;
            builder.homeserver_url(relay.url().as_str()).http_client(http)
        }
        None => builder.homeserver_url(&settings.homeserver),
    };
    if let Some(dir) = &settings.store_dir {
        std::fs::create_dir_all(dir).map_err(|error| ChannelError::Unavailable {
            reason: format!("could not create {}: {error}", dir.display()),
        })?;
        builder = builder.sqlite_store(dir, None);
    }
    let client = builder.build().await.map_err(|error| ChannelError::Unavailable {
        reason: bounded(&error.to_string()),
    })?;
    let (access_token, device_id) = match &settings.login {
        Login::Token(token) => {
            let device = match &settings.device_id {
                Some(device) => OwnedDeviceId::from(device.as_str()),
                None => device_of_token(&client, token.expose()).await?,
            };
            (token.expose().to_owned(), device)
        }
        Login::Password(password) => match kept(settings)? {
            Some(kept) => (kept.access_token, OwnedDeviceId::from(kept.device_id)),
            None => {
                log_in(&client, settings, password.expose()).await?;
                return Ok(Session { client, _relay: relay });
            }
        },
    };
    let session = MatrixSession {
        meta: SessionMeta { user_id, device_id },
        tokens: SessionTokens {
            access_token,
            refresh_token: None,
        },
    };
    client.restore_session(session).await.map_err(|error| match &error {
        matrix_sdk::Error::Http(_) => channel_error(&error),
        // The keys kept for another account or device.
        _ => ChannelError::Rejected {
            reason: format!(
                "the session could not be restored ({}); if the bot's account or device changed, remove {}",
                bounded(&error.to_string()),
                settings
                    .store_dir
                    .as_ref()
                    .map_or_else(|| "its data folder".to_owned(), |dir| dir.display().to_string())
            ),
        },
    })?;
    Ok(Session { client, _relay: relay })
}

/// Logs in with the password as a new device named `askgate`, and keeps
/// the session where the channel has a folder.
async fn log_in(client: &Client, settings: &MatrixSettings, password: &str) -> Result<(), ChannelError> {
    let response = client
        .matrix_auth()
        .login_username(&settings.user_id, password)
        .initial_device_display_name("askgate")
        .send()
        .await
        .map_err(|error| channel_error(&error))?;
    tracing::info!(
        channel = %settings.name,
        device = %response.device_id,
        "logged in to the Matrix homeserver with the password: a new device"
    );
    if let Some(dir) = &settings.store_dir {
        let kept = Kept {
            user_id: response.user_id.to_string(),
            device_id: response.device_id.to_string(),
            access_token: response.access_token,
        };
        keep(dir, &kept).map_err(|error| ChannelError::Unavailable {
            reason: format!("could not keep the session in {}: {error}", dir.join(KEPT).display()),
        })?;
    }
    Ok(())
}

/// The session a password login kept, when it is the configured user's.
fn kept(settings: &MatrixSettings) -> Result<Option<Kept>, ChannelError> {
    let Some(path) = settings.store_dir.as_deref().map(|dir| dir.join(KEPT)) else {
        return Ok(None);
    };
    let bytes = match read_small(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(ChannelError::Unavailable {
                reason: format!("could not read {}: {error}", path.display()),
            });
        }
    };
    let kept: Kept = serde_json::from_slice(&bytes).map_err(|_| ChannelError::Rejected {
        reason: format!("{} is damaged: remove it to log in again", path.display()),
    })?;
    Ok((kept.user_id == settings.user_id).then_some(kept))
}

/// Writes `kept` readable by askgate's user only, whole or not at all.
fn keep(dir: &Path, kept: &Kept) -> std::io::Result<()> {
    let path: PathBuf = dir.join(KEPT);
    let partial = dir.join(format!("{KEPT}.partial"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)?;
    file.write_all(&serde_json::to_vec(kept).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    std::fs::rename(&partial, &path)
}

/// A file of at most [`SMALL_BYTES`].
fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(SMALL_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > SMALL_BYTES {
        return Err(std::io::Error::other("longer than a session"));
    }
    Ok(bytes)
}

/// The device `token` was issued to, asked of the homeserver (`GET
/// /account/whoami`) when the configuration names none. Asked over plain
/// HTTP: the client has no session until it knows the device. The answer
/// is read within [`SMALL_BYTES`].
async fn device_of_token(client: &Client, token: &str) -> Result<OwnedDeviceId, ChannelError> {
    let homeserver = client.homeserver();
    let url = format!(
        "{}/_matrix/client/v3/account/whoami",
        homeserver.as_str().trim_end_matches('/')
    );
    let unavailable = |error: &dyn std::fmt::Display| ChannelError::Unavailable {
        reason: bounded(&error.to_string()),
    };
    // The token goes in the request's header only.
    let mut response = client
        .http_client()
        .get(&url)
        .bearer_auth(token)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|error| unavailable(&error.without_url()))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| unavailable(&error.without_url()))?
    {
        if body.len() + chunk.len() > SMALL_BYTES {
            return Err(ChannelError::Unavailable {
                reason: format!("the homeserver's whoami answer is longer than {SMALL_BYTES} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let words = || {
        let code = answer["errcode"].as_str().unwrap_or("no error code");
        let error = answer["error"].as_str().unwrap_or("no explanation");
        bounded(&format!("HTTP {status}, {code}: {error}"))
    };
    match status {
        200 => answer["device_id"]
            .as_str()
            .map(OwnedDeviceId::from)
            .ok_or_else(|| ChannelError::Rejected {
                reason: "the access token belongs to no device: log the bot in with a device, then set device_id"
                    .into(),
            }),
        401 => Err(ChannelError::Unauthorized),
        429 => Err(ChannelError::RateLimited {
            retry_after: Duration::from_secs(5),
        }),
        500.. => Err(ChannelError::Unavailable { reason: words() }),
        _ => Err(ChannelError::Rejected { reason: words() }),
    }
}
