//! The MCP server of one session ([`McpServer`], an rmcp `ServerHandler`):
//! calls the tools over a [`Backend`], waits at most `wait_seconds` with
//! progress notifications, cancels a question whose call is cancelled, and
//! cancels the session's pending questions when the session ends.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use askgate_core::validate::ValidationErrors;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::time::Instant;

use super::backend::{Ask, Backend, BackendError, Caller, Status};
use super::tools::{self, ASK_USER, AWAIT_ANSWER, CANCEL_QUESTION};
use crate::api;

/// The newest MCP revision askgate speaks: the last with sessions, which
/// askgate's one-pending-question-per-session rule is built on.
const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The header that names the streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The fields of `ask_user` that are askgate's rather than the contract's.
const ENVELOPE: [&str; 2] = ["to", "sessionId"];

/// The MCP server of one session. Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct McpServer {
    backend: Arc<dyn Backend>,
    session: Arc<Session>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

/// What one MCP session keeps: whose it is, and the questions it asked
/// that have not ended (cancelled when it ends).
struct Session {
    backend: Arc<dyn Backend>,
    /// The session's id when the transport has no header for it (stdio).
    fixed_id: Option<String>,
    owner: Mutex<Option<String>>,
    pending: Mutex<HashMap<String, Caller>>,
}

impl McpServer {
    /// A server over `backend`. `session` names the session when the
    /// transport does not (stdio); on streamable HTTP it is read from each
    /// request's `Mcp-Session-Id`.
    pub fn new(backend: Arc<dyn Backend>, session: Option<String>) -> Self {
        Self {
            session: Arc::new(Session {
                backend: backend.clone(),
                fixed_id: session,
                owner: Mutex::new(None),
                pending: Mutex::new(HashMap::new()),
            }),
            backend,
        }
    }

    /// Cancels the questions this session asked that are still pending: the
    /// session has ended (the stdio bridge calls it when its input closes;
    /// on streamable HTTP it happens when the session is dropped).
    pub async fn end_session(&self) {
        let pending = self.session.take_pending();
        cancel_all(self.backend.as_ref(), pending).await;
    }

    /// The agent session of a call: `mcp:<session id>`, or none when the
    /// transport has no sessions.
    fn session_id(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let header = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get(SESSION_HEADER))
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        header
            .or_else(|| self.session.fixed_id.clone())
            .map(|id| format!("mcp:{id}"))
    }

    async fn call(&self, name: &str, arguments: JsonObject, context: &RequestContext<RoleServer>) -> CallToolResult {
        let caller = match self
            .backend
            .caller(&context.extensions)
            .and_then(|caller| self.session.bind(caller))
        {
            Ok(caller) => caller,
            Err(error) => return tools::refused_result(&error),
        };
        let outcome = match name {
            ASK_USER => self.ask_user(&caller, arguments, context).await,
            AWAIT_ANSWER => match question_id(&arguments) {
                Ok(id) => self.wait_for(&caller, &id, context).await,
                Err(error) => Err(error),
            },
            _ => match question_id(&arguments) {
                Ok(id) => {
                    let status = self.backend.cancel(&caller, &id).await;
                    if status.is_ok() {
                        self.session.ended(&id);
                    }
                    status
                }
                Err(error) => Err(error),
            },
        };
        match outcome {
            Ok(status) => tools::status_result(&status),
            Err(error) => {
                tracing::info!(tool = name, %error, "mcp tool call refused");
                tools::refused_result(&error)
            }
        }
    }

    async fn ask_user(
        &self,
        caller: &Caller,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<Status, BackendError> {
        let mut errors = Vec::new();
        let fields = api::read_question(Value::Object(arguments), &ENVELOPE, None, &mut errors)?;
        let to = match fields.to {
            Some(to) => Some(to),
            None => api::default_recipient(&self.backend.recipients(caller).await?, &mut errors),
        };
        if !errors.is_empty() {
            return Err(crate::ApiError::from(ValidationErrors { errors }).into());
        }
        let (Some(to), Some(request)) = (to, fields.request) else {
            return Err(BackendError::invalid(
                "invalid_request",
                "",
                "The request is not valid.".into(),
            ));
        };
        let ask = Ask {
            to,
            session_id: fields.session_id.or_else(|| self.session_id(context)),
            request,
        };
        let status = self.backend.ask(caller, ask).await?;
        tracing::info!(question = %status.id, "mcp question asked");
        self.session.asked(&status.id, caller);
        self.wait_for(caller, &status.id, context).await
    }

    /// Waits for the question to end, for at most `wait_seconds`, sending
    /// progress notifications when the call carried a progress token. A
    /// cancelled call cancels the question (unless askgate is shutting down,
    /// which keeps it); askgate unreachable mid-wait leaves it pending.
    async fn wait_for(
        &self,
        caller: &Caller,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Status, BackendError> {
        let wait = self.backend.wait_limit().await;
        let started = Instant::now();
        let deadline = started + wait;
        let every = progress_interval(wait);
        let token = context.meta.get_progress_token();
        let mut sent = 0_u32;
        loop {
            if let Some(token) = &token {
                let elapsed = started.elapsed().as_secs();
                let notification = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                    .with_message(format!("Waiting for the user's answer ({elapsed} s so far)."));
                if let Err(error) = context.peer.notify_progress(notification).await {
                    tracing::debug!(question = %id, %error, "could not send a progress notification");
                }
                sent += 1;
            }
            let slice = every.min(deadline.saturating_duration_since(Instant::now()));
            let asked_at = Instant::now();
            let status = tokio::select! {
                status = self.backend.wait(caller, id, slice) => status,
                () = context.ct.cancelled() => return self.cancelled(caller, id).await,
            };
            let status = match status {
                Ok(status) => status,
                // The question's own id is all the model needs to carry on later.
                Err(BackendError::Unreachable(cause)) => {
                    tracing::warn!(question = %id, error = %cause, "askgate unreachable while waiting; returning pending");
                    return Ok(pending(id));
                }
                Err(error) => return Err(error),
            };
            if status.result.is_some() {
                self.session.ended(id);
                return Ok(status);
            }
            if self.backend.is_stopping() || Instant::now() >= deadline {
                return Ok(status);
            }
            // A wait that came back early without an end (askgate restarting
            // behind a bridge): pause rather than ask again at once.
            if asked_at.elapsed() < slice / 2 {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    () = context.ct.cancelled() => return self.cancelled(caller, id).await,
                }
            }
        }
    }

    async fn cancelled(&self, caller: &Caller, id: &str) -> Result<Status, BackendError> {
        if self.backend.is_stopping() {
            return Ok(pending(id));
        }
        tracing::info!(question = %id, "the mcp call was cancelled; cancelling its question");
        let status = self.backend.cancel(caller, id).await;
        if status.is_ok() {
            self.session.ended(id);
        }
        status
    }
}

fn pending(id: &str) -> Status {
    Status {
        id: id.to_owned(),
        result: None,
    }
}

/// How often progress is reported while waiting: every 5 s, more often for
/// short waits, never more than once a second.
fn progress_interval(wait: Duration) -> Duration {
    (wait / 5).clamp(Duration::from_secs(1), Duration::from_secs(5))
}

/// The `questionId` argument of `await_answer` and `cancel_question`.
fn question_id(arguments: &JsonObject) -> Result<String, BackendError> {
    let mut unknown = arguments.keys().filter(|key| *key != "questionId");
    if let Some(key) = unknown.next() {
        let key = askgate_core::text::excerpt(key);
        return Err(BackendError::invalid(
            "unknown_field",
            &key,
            format!("\"{key}\" is not an argument of this tool; it takes only questionId."),
        ));
    }
    match arguments.get("questionId") {
        Some(Value::String(id)) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        None | Some(Value::Null) => Err(BackendError::invalid(
            "missing_field",
            "questionId",
            "\"questionId\" is required: the id of a pending result.".into(),
        )),
        Some(_) => Err(BackendError::invalid(
            "invalid_type",
            "questionId",
            "\"questionId\" must be a non-empty string.".into(),
        )),
    }
}

impl Session {
    /// The caller, if the session is theirs: the first caller owns it.
    fn bind(&self, caller: Caller) -> Result<Caller, BackendError> {
        let mut owner = self.owner.lock().unwrap_or_else(PoisonError::into_inner);
        match owner.as_deref() {
            None => *owner = Some(caller.name().to_owned()),
            Some(name) if name == caller.name() => {}
            Some(_) => return Err(crate::ApiError::unauthorized().into()),
        }
        Ok(caller)
    }

    fn asked(&self, id: &str, caller: &Caller) {
        self.lock().insert(id.to_owned(), caller.clone());
    }

    fn ended(&self, id: &str) {
        self.lock().remove(id);
    }

    fn take_pending(&self) -> HashMap<String, Caller> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Caller>> {
        // Every update is one insert or remove: consistent even if a holder panicked.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn cancel_all(backend: &dyn Backend, pending: HashMap<String, Caller>) {
    if backend.is_stopping() {
        return;
    }
    for (id, caller) in pending {
        tracing::info!(question = %id, "the mcp session ended; cancelling its question");
        if let Err(error) = backend.cancel(&caller, &id).await {
            tracing::warn!(question = %id, %error, "could not cancel the question of an ended mcp session");
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let pending = self.take_pending();
        if pending.is_empty() || self.backend.is_stopping() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let backend = self.backend.clone();
        // Ends by itself once the cancels are done: each is one store write
        // (in-process) or one request with a timeout (a bridge).
        runtime.spawn(async move { cancel_all(backend.as_ref(), pending).await });
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("askgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "askgate asks the user structured questions in their chat app. Call ask_user only when \
                 truly blocked on the user's decision; if it returns {\"status\":\"pending\"}, call \
                 await_answer with its questionId.",
            );
        info.protocol_version = PROTOCOL;
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if ![ASK_USER, AWAIT_ANSWER, CANCEL_QUESTION].contains(&name) {
            return Err(ErrorData::invalid_params(
                format!("there is no tool named \"{}\"", askgate_core::text::excerpt(name)),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        Ok(self.call(name, arguments, &context).await.into())
    }
}
