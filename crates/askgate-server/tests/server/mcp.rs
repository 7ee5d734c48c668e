//! The MCP tools with rmcp's own client: over an in-memory transport with
//! the engine in-process, over the bridge's HTTP backend against a served
//! askgate, and `/mcp` itself (authentication, the handshake). Answers are
//! given through the web page's API, as a person would. Every wait is bounded.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use askgate_server::mcp::{Backend, EngineBackend, HttpBackend, McpServer};
use askgate_server::{Agent, Allowed, AppState, McpSettings, ServerSettings, WebKey, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam, RequestMetaObject};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use support::{agent_one, send_to, state_in, web_recipient};

const TOKEN: &str = "agt_mcp_test_token_0123456789abcdef";
const KEY: &str = "web_key_me_0123456789abcdefghijklmn";
/// The bound on every wait in this file.
const BOUND: Duration = Duration::from_secs(20);

struct Fixture {
    state: AppState,
    router: Router,
    _stop: tokio::sync::watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn fixture(wait: Duration) -> Fixture {
    let settings = ServerSettings {
        agents: vec![agent_one(TOKEN)],
        web_keys: vec![WebKey {
            key: KEY.into(),
            recipient: "me".into(),
        }],
        mcp: McpSettings {
            wait,
            ..McpSettings::default()
        },
        ..ServerSettings::default()
    };
    fixture_with(settings).await
}

/// The server with these settings and a page for `me`, over a fresh store.
async fn fixture_with(settings: ServerSettings) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (state, stop) = state_in(dir.path(), vec![web_recipient("me", "Me")], settings).await;
    Fixture {
        router: app(state.clone()),
        state,
        _stop: stop,
        _dir: dir,
    }
}

/// A client that counts the progress notifications it gets.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<AtomicUsize>,
}

impl ClientHandler for Client {
    async fn on_progress(&self, _params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

/// An MCP session with `backend`, over an in-memory transport.
async fn connect(backend: Arc<dyn Backend>) -> (RunningService<RoleClient, Client>, Client) {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let server = McpServer::new(backend, Some("test-session".into()));
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::default();
    let running = client.clone().serve(client_side).await.unwrap();
    (running, client)
}

fn in_process(fixture: &Fixture) -> Arc<dyn Backend> {
    let agent = Agent {
        name: "one".into(),
        allowed: Allowed::All,
        max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
        callback_hosts: Vec::new(),
    };
    Arc::new(EngineBackend::for_agent(fixture.state.clone(), agent))
}

fn deploy_question() -> Value {
    json!({"questions": [{"id": "deploy_target", "header": "Deploy", "question": "Where should this build go?",
        "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]}]})
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

fn with_progress(mut params: CallToolRequestParams) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)));
    params.meta = Some(meta);
    params
}

/// The id of the question pending on the page, once there is one.
async fn pending_on_page(router: &Router) -> String {
    let found = tokio::time::timeout(BOUND, async {
        loop {
            let request = Request::get(format!("/web/{KEY}/api/state"))
                .body(Body::empty())
                .unwrap();
            let (_, state) = send_to(router, request).await;
            if let Some(id) = state["pending"][0]["id"].as_str() {
                return id.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    found.await.expect("a question reaches the page")
}

/// The person taps option `index` of `deploy_target` on the page.
async fn answer(router: &Router, id: &str, index: usize) {
    let body = json!({"answers": {"deploy_target": {"options": [index]}}});
    let request = Request::post(format!("/web/{KEY}/api/questions/{id}/answer"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, body) = send_to(router, request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn text(result: &CallToolResult, n: usize) -> String {
    result.content[n].as_text().unwrap().text.clone()
}

async fn call_bounded(client: &RunningService<RoleClient, Client>, params: CallToolRequestParams) -> CallToolResult {
    tokio::time::timeout(BOUND, client.call_tool(params))
        .await
        .expect("the call ends in time")
        .unwrap()
}

#[tokio::test]
async fn the_tools_are_listed_with_their_schemas_and_the_guidance_word_for_word() {
    let fixture = fixture(Duration::from_secs(2)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["ask_user", "await_answer", "cancel_question"]);
    let ask = &tools[0];
    assert_eq!(
        ask.description.as_deref(),
        Some(askgate_core::guidance::TOOL_DESCRIPTION)
    );
    let schema = Value::Object((*ask.input_schema).clone());
    let properties: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(properties, ["questions", "timeoutSeconds", "to", "sessionId"]);
    assert_eq!(schema["required"], json!(["questions"]));
    let question = &schema["properties"]["questions"]["items"];
    assert_eq!(question["required"], json!(["id", "header", "question", "options"]));
    let options = question["properties"]["options"]["description"].as_str().unwrap();
    for rule in [
        "every selectable choice",
        "recommended option first",
        " (Recommended)",
        "\"Other\"",
    ] {
        assert!(options.contains(rule), "options say {rule:?}: {options}");
    }
    assert!(
        question["properties"]["multiSelect"]["description"]
            .as_str()
            .unwrap()
            .contains("only when several")
    );
    assert!(
        question["properties"]["question"]["description"]
            .as_str()
            .unwrap()
            .contains("one sentence")
    );
    // Every field says what the OpenAPI document says: one source.
    let option = &question["properties"]["options"]["items"]["properties"];
    support::assert_fields_described(&schema["properties"], &question["properties"], option);
    for tool in &tools {
        let output = Value::Object((**tool.output_schema.as_ref().unwrap()).clone());
        assert_eq!(output["type"], "object", "{}", tool.name);
    }
    let await_schema = Value::Object((*tools[1].input_schema).clone());
    assert_eq!(await_schema["required"], json!(["questionId"]));
}

#[tokio::test]
async fn ask_user_answered_on_the_page_returns_the_exact_tool_result_with_progress() {
    // A 5 s wait reports progress every second.
    let fixture = fixture(Duration::from_secs(5)).await;
    let (client, counter) = connect(in_process(&fixture)).await;
    let asking = {
        let peer = client.peer().clone();
        tokio::spawn(async move {
            peer.call_tool(with_progress(call("ask_user", deploy_question())))
                .await
                .unwrap()
        })
    };
    let id = pending_on_page(&fixture.router).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    answer(&fixture.router, &id, 1).await;
    let result = tokio::time::timeout(BOUND, asking).await.unwrap().unwrap();
    let expected = json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}});
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(expected.clone()));
    assert_eq!(serde_json::from_str::<Value>(&text(&result, 0)).unwrap(), expected);
    assert!(
        counter.progress.load(Ordering::SeqCst) >= 2,
        "progress is reported while waiting"
    );
}

#[tokio::test]
async fn past_wait_seconds_ask_user_is_pending_and_await_answer_picks_the_answer_up() {
    let fixture = fixture(Duration::from_secs(1)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    let started = tokio::time::Instant::now();
    let result = call_bounded(&client, call("ask_user", deploy_question())).await;
    assert!(started.elapsed() >= Duration::from_secs(1) && started.elapsed() < Duration::from_secs(5));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["status"], "pending");
    let id = structured["questionId"].as_str().unwrap().to_owned();
    assert_eq!(structured, json!({"status": "pending", "questionId": id}));
    assert!(text(&result, 1).contains("await_answer"), "{}", text(&result, 1));

    let again = call_bounded(&client, call("await_answer", json!({"questionId": id}))).await;
    assert_eq!(again.structured_content, Some(structured));
    answer(&fixture.router, &id, 0).await;
    let answered = call_bounded(&client, call("await_answer", json!({"questionId": id}))).await;
    assert_eq!(
        answered.structured_content,
        Some(json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}}))
    );
}

#[tokio::test]
async fn a_validation_failure_is_a_tool_error_listing_every_problem_with_its_path() {
    let fixture = fixture(Duration::from_secs(1)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    let bad = json!({"questions": [{"id": "Bad", "header": "", "question": "?", "options": [{"label": "Other"}]}],
        "runId": "r1"});
    let result = call_bounded(&client, call("ask_user", bad)).await;
    assert_eq!(result.is_error, Some(true));
    let listing = text(&result, 0);
    for line in [
        "invalid_id at questions[0].id",
        "empty_header at questions[0].header",
        "option_count at questions[0].options",
        "other_option_not_allowed at questions[0].options[0].label",
        "unknown_field at runId",
    ] {
        assert!(listing.contains(line), "{line:?} in {listing}");
    }
    let errors = &result.structured_content.unwrap()["error"]["errors"];
    assert_eq!(errors.as_array().unwrap().len(), 5, "{errors}");
    let unknown = call_bounded(&client, call("await_answer", json!({}))).await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown, 0).contains("missing_field at questionId"));
    let nobody = call_bounded(
        &client,
        call(
            "ask_user",
            json!({"to": "nobody", "questions": deploy_question()["questions"]}),
        ),
    )
    .await;
    assert!(text(&nobody, 0).contains("unknown_recipient"), "{}", text(&nobody, 0));
}

#[tokio::test]
async fn one_pending_question_per_session_and_cancel_question_ends_it() {
    let fixture = fixture(Duration::from_secs(1)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    let first = call_bounded(&client, call("ask_user", deploy_question())).await;
    let id = first.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = call_bounded(&client, call("ask_user", deploy_question())).await;
    assert_eq!(second.is_error, Some(true));
    assert_eq!(second.structured_content.unwrap()["error"]["code"], "question_pending");
    // Its own sessionId is another session.
    let mut elsewhere = deploy_question();
    elsewhere["sessionId"] = json!("elsewhere");
    let other = call_bounded(&client, call("ask_user", elsewhere)).await;
    assert_eq!(other.structured_content.unwrap()["status"], "pending");

    let cancelled = call_bounded(&client, call("cancel_question", json!({"questionId": id}))).await;
    assert_eq!(cancelled.structured_content, Some(json!({"status": "no_answer"})));
    let again = call_bounded(&client, call("cancel_question", json!({"questionId": id}))).await;
    assert_eq!(again.structured_content, Some(json!({"status": "no_answer"})));
    let third = call_bounded(&client, call("ask_user", deploy_question())).await;
    assert_eq!(third.structured_content.unwrap()["status"], "pending");
}

/// The status of a question, as its agent sees it through `/v1`.
async fn status_of(router: &Router, id: &str) -> String {
    let request = Request::get(format!("/v1/questions/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (_, resource) = send_to(router, request).await;
    resource["status"].as_str().unwrap_or_default().to_owned()
}

async fn until_status(router: &Router, id: &str, wanted: &str) {
    let reached = tokio::time::timeout(BOUND, async {
        while status_of(router, id).await != wanted {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    reached.await.unwrap_or_else(|_| panic!("{id} becomes {wanted}"));
}

#[tokio::test]
async fn a_cancelled_call_and_an_ended_session_cancel_their_questions() {
    let fixture = fixture(Duration::from_secs(30)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    // The client gives up on the call: dropping it makes rmcp send
    // notifications/cancelled.
    let asking = {
        let peer = client.peer().clone();
        tokio::spawn(async move { peer.call_tool(call("ask_user", deploy_question())).await })
    };
    let id = pending_on_page(&fixture.router).await;
    asking.abort();
    until_status(&fixture.router, &id, "cancelled").await;

    // A question left pending when the session ends is cancelled with it.
    let fixture = self::fixture(Duration::from_secs(1)).await;
    let (client, _) = connect(in_process(&fixture)).await;
    let pending = call_bounded(&client, call("ask_user", deploy_question())).await;
    let id = pending.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status_of(&fixture.router, &id).await, "pending");
    client.cancel().await.unwrap();
    until_status(&fixture.router, &id, "cancelled").await;
}

#[tokio::test]
async fn the_bridge_backend_asks_waits_and_cancels_through_v1() {
    let fixture = fixture(Duration::from_secs(1)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(askgate_server::serve(listener, fixture.state.clone(), async move {
        let _ = stopped.await;
    }));
    // No --wait-seconds: the bridge follows the server's [mcp] wait_seconds (1 s).
    let backend = HttpBackend::new(&base, TOKEN.into(), None).unwrap();
    let (client, _) = connect(Arc::new(backend)).await;
    let started = tokio::time::Instant::now();
    let result = call_bounded(&client, call("ask_user", deploy_question())).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let id = result.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(&fixture.router, &id, 1).await;
    let answered = call_bounded(&client, call("await_answer", json!({"questionId": id}))).await;
    assert_eq!(
        answered.structured_content,
        Some(json!({"status": "answered", "answers": {"answers": {"deploy_target": ["Production"]}}}))
    );
    let bad = call_bounded(&client, call("ask_user", json!({"questions": []}))).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(
        text(&bad, 0).contains("question_count at questions"),
        "{}",
        text(&bad, 0)
    );
    let missing = call_bounded(&client, call("await_answer", json!({"questionId": "nope"}))).await;
    assert_eq!(missing.structured_content.unwrap()["error"]["code"], "not_found");

    let second = call_bounded(&client, call("ask_user", deploy_question())).await;
    let id = second.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = call_bounded(&client, call("cancel_question", json!({"questionId": id}))).await;
    assert_eq!(cancelled.structured_content, Some(json!({"status": "no_answer"})));
    client.cancel().await.unwrap();
    let _ = stop.send(());
    tokio::time::timeout(BOUND, server).await.unwrap().unwrap().unwrap();
}

fn mcp_post(token: Option<&str>, body: &Value) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Body::from(body.to_string())).unwrap()
}

#[tokio::test]
async fn the_mcp_route_takes_agent_tokens_only() {
    let fixture = fixture(Duration::from_secs(1)).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    for token in [None, Some("wrong")] {
        let (status, body) = send_to(&fixture.router, mcp_post(token, &initialize)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["error"]["code"], "unauthorized");
    }
    let response = tokio::time::timeout(
        BOUND,
        tower::ServiceExt::oneshot(fixture.router.clone(), mcp_post(Some(TOKEN), &initialize)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("mcp-session-id"));
    let mut host = mcp_post(Some(TOKEN), &initialize);
    host.headers_mut().insert(header::HOST, "evil.example".parse().unwrap());
    let response = tower::ServiceExt::oneshot(fixture.router.clone(), host).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn without_to_the_only_recipient_the_token_may_ask_is_asked_else_the_choices_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let settings = ServerSettings {
        agents: vec![askgate_server::AgentToken {
            name: "two".into(),
            token: TOKEN.into(),
            allowed: Allowed::Only(vec!["you".into()]),
            max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
            callback_hosts: Vec::new(),
        }],
        mcp: McpSettings {
            wait: Duration::from_secs(1),
            ..McpSettings::default()
        },
        ..ServerSettings::default()
    };
    let recipients = vec![web_recipient("me", "Me"), web_recipient("you", "You")];
    let (state, _stop) = state_in(dir.path(), recipients, settings).await;
    let everyone = Agent {
        name: "one".into(),
        allowed: Allowed::All,
        max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
        callback_hosts: Vec::new(),
    };
    let (client, _) = connect(Arc::new(EngineBackend::for_agent(state.clone(), everyone))).await;
    let result = call_bounded(&client, call("ask_user", deploy_question())).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result, 0).contains(
            "missing_field at to: \"to\" is required when an agent token may ask several recipients; \
             this agent token may ask \"me\", \"you\"."
        ),
        "{}",
        text(&result, 0)
    );

    let only_you = Agent {
        name: "two".into(),
        allowed: Allowed::Only(vec!["you".into()]),
        max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
        callback_hosts: Vec::new(),
    };
    let (client, _) = connect(Arc::new(EngineBackend::for_agent(state.clone(), only_you))).await;
    let result = call_bounded(&client, call("ask_user", deploy_question())).await;
    let id = result.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let router = app(state);
    let request = Request::get(format!("/v1/questions/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, resource) = send_to(&router, request).await;
    assert_eq!((status, &resource["to"]), (StatusCode::OK, &json!("you")), "{resource}");
    let mut to_me = deploy_question();
    to_me["to"] = json!("me");
    to_me["sessionId"] = json!("other");
    let refused = call_bounded(&client, call("ask_user", to_me)).await;
    assert_eq!(
        refused.structured_content.unwrap()["error"]["code"],
        "recipient_not_allowed"
    );
}

const TOKEN_TWO: &str = "agt_mcp_test_token_two_0123456789ab";

/// Agents `one` (`TOKEN`) and `two` (`TOKEN_TWO`), a page for `me`, and
/// `mcp` as the MCP settings.
async fn two_agents(mcp: McpSettings) -> Fixture {
    let settings = ServerSettings {
        agents: vec![
            agent_one(TOKEN),
            askgate_server::AgentToken {
                name: "two".into(),
                token: TOKEN_TWO.into(),
                allowed: Allowed::All,
                max_timeout_seconds: askgate_core::request::MAX_TIMEOUT_SECONDS,
                callback_hosts: Vec::new(),
            },
        ],
        web_keys: vec![WebKey {
            key: KEY.into(),
            recipient: "me".into(),
        }],
        mcp,
        ..ServerSettings::default()
    };
    fixture_with(settings).await
}

/// A request to `/mcp` as `token`, in `session` when one is given.
fn mcp_request(method: &str, token: &str, session: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .header(header::HOST, "127.0.0.1")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => request.body(Body::empty()).unwrap(),
    }
}

/// Sends a request to the router; its response, whose body may stream on.
async fn mcp_send(router: &Router, request: Request<Body>) -> axum::response::Response {
    tokio::time::timeout(BOUND, tower::ServiceExt::oneshot(router.clone(), request))
        .await
        .expect("answered in time")
        .unwrap()
}

/// The whole body of a response, as text.
async fn body_text(response: axum::response::Response) -> String {
    let bytes = tokio::time::timeout(BOUND, http_body_util::BodyExt::collect(response.into_body()))
        .await
        .expect("the body ends in time")
        .unwrap()
        .to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Opens an MCP session as `token` (initialize, then initialized): its id.
async fn open_session(router: &Router, token: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let response = mcp_send(router, mcp_request("POST", token, None, Some(&initialize))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    body_text(response).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = mcp_send(router, mcp_request("POST", token, Some(&session), Some(&initialized))).await;
    assert!(response.status().is_success(), "{}", response.status());
    session
}

/// `tools/list` in `session` as `token`: the status, and the body once it has ended.
async fn list_tools_in(router: &Router, token: &str, session: &str) -> (StatusCode, String) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let response = mcp_send(router, mcp_request("POST", token, Some(session), Some(&list))).await;
    (response.status(), body_text(response).await)
}

/// `ask_user` in `session`: the response, streaming while the call waits.
async fn start_ask(router: &Router, session: &str) -> axum::response::Response {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ask_user", "arguments": deploy_question()}});
    let response = mcp_send(router, mcp_request("POST", TOKEN, Some(session), Some(&call))).await;
    assert_eq!(response.status(), StatusCode::OK);
    response
}

/// What another agent gets for a session that is not its own, and anyone for
/// a session that does not exist: one and the same 404.
fn assert_unknown_session(status: StatusCode, body: &str, what: &str) {
    assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
    let body: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{what}: {body}"));
    assert_eq!(
        body,
        json!({"error": {"code": "not_found", "message": "There is no such MCP session."}}),
        "{what}"
    );
}

#[tokio::test]
async fn another_agent_can_neither_use_read_nor_end_a_session() {
    let fixture = two_agents(McpSettings {
        wait: Duration::from_secs(1),
        ..McpSettings::default()
    })
    .await;
    let router = &fixture.router;
    let session = open_session(router, TOKEN).await;
    // A question the session asked and left pending (wait_seconds passed).
    let pending = body_text(start_ask(router, &session).await).await;
    let id = pending_on_page(router).await;
    assert!(pending.contains(&id), "{pending}");
    assert_eq!(status_of(router, &id).await, "pending");

    let tools_list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    for (what, method, body) in [
        ("DELETE", "DELETE", None),
        ("GET (the event stream)", "GET", None),
        ("POST (tools/list)", "POST", Some(&tools_list)),
    ] {
        let response = mcp_send(router, mcp_request(method, TOKEN_TWO, Some(&session), body)).await;
        let status = response.status();
        assert_unknown_session(status, &body_text(response).await, &format!("another agent's {what}"));
        let response = mcp_send(router, mcp_request(method, TOKEN, Some("no-such-session"), body)).await;
        let status = response.status();
        assert_unknown_session(status, &body_text(response).await, &format!("{what} in no session"));
    }

    // The owner's session and question are untouched.
    assert_eq!(status_of(router, &id).await, "pending");
    let (status, listed) = list_tools_in(router, TOKEN, &session).await;
    assert_eq!(status, StatusCode::OK);
    assert!(listed.contains("ask_user"), "{listed}");

    // The owner ends it: 204 (the MCP clients expect 200 or 204), and its
    // question is cancelled with it.
    let response = mcp_send(router, mcp_request("DELETE", TOKEN, Some(&session), None)).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    until_status(router, &id, "cancelled").await;
    let (status, body) = list_tools_in(router, TOKEN, &session).await;
    assert_unknown_session(status, &body, "the ended session");
}

#[tokio::test]
async fn past_the_cap_a_tokens_session_idle_longest_is_closed_and_busy_ones_never() {
    let fixture = two_agents(McpSettings {
        wait: Duration::from_secs(30),
        max_sessions_per_token: 2,
        ..McpSettings::default()
    })
    .await;
    let router = &fixture.router;
    let first = open_session(router, TOKEN).await;
    let second = open_session(router, TOKEN).await;
    // The first is used after the second was opened: the second idled longest.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(list_tools_in(router, TOKEN, &first).await.0, StatusCode::OK);
    // Another token's sessions count for it alone.
    let others = open_session(router, TOKEN_TWO).await;

    let third = open_session(router, TOKEN).await;
    let (status, body) = list_tools_in(router, TOKEN, &second).await;
    assert_unknown_session(status, &body, "the session closed for the cap");
    for session in [&first, &third] {
        assert_eq!(list_tools_in(router, TOKEN, session).await.0, StatusCode::OK);
    }
    assert_eq!(list_tools_in(router, TOKEN_TWO, &others).await.0, StatusCode::OK);

    // Both sessions wait for the person: neither is closed for a new one,
    // which is refused instead.
    let waiting_first = start_ask(router, &first).await;
    let first_id = pending_on_page(router).await;
    let waiting_third = start_ask(router, &third).await;
    let third_id = tokio::time::timeout(BOUND, async {
        loop {
            let request = Request::get(format!("/web/{KEY}/api/state"))
                .body(Body::empty())
                .unwrap();
            let (_, state) = send_to(router, request).await;
            let ids: Vec<String> = state["pending"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|entry| entry["id"].as_str().map(str::to_owned))
                .collect();
            if let Some(id) = ids.into_iter().find(|id| *id != first_id) {
                return id;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the second question reaches the page");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let refused = mcp_send(router, mcp_request("POST", TOKEN, None, Some(&initialize))).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let body: Value = serde_json::from_str(&body_text(refused).await).unwrap();
    assert_eq!(body["error"]["code"], "too_many_sessions", "{body}");
    for id in [&first_id, &third_id] {
        assert_eq!(status_of(router, id).await, "pending");
    }

    // Once a call has returned, its session is idle again and gives way.
    answer(router, &first_id, 0).await;
    let answered = body_text(waiting_first).await;
    assert!(answered.contains("Staging"), "{answered}");
    let fourth = open_session(router, TOKEN).await;
    let (status, body) = list_tools_in(router, TOKEN, &first).await;
    assert_unknown_session(status, &body, "the session idle again, closed for the cap");
    assert_eq!(list_tools_in(router, TOKEN, &fourth).await.0, StatusCode::OK);
    assert_eq!(status_of(router, &third_id).await, "pending");
    drop(waiting_third);
}

/// `ask_user` over MCP keeps the contract's clamp, whatever the agent's
/// `max_timeout` lets `POST /v1/questions` take: a day is lowered to the hour.
#[tokio::test]
async fn ask_user_over_mcp_keeps_the_contracts_hour_for_an_agent_allowed_longer() {
    let mut agent = agent_one(TOKEN);
    agent.max_timeout_seconds = 7 * 86_400;
    let fixture = fixture_with(ServerSettings {
        agents: vec![agent],
        mcp: McpSettings {
            wait: Duration::from_millis(200),
            ..McpSettings::default()
        },
        ..ServerSettings::default()
    })
    .await;
    let agent = Agent {
        name: "one".into(),
        allowed: Allowed::All,
        max_timeout_seconds: 7 * 86_400,
        callback_hosts: Vec::new(),
    };
    let (client, _) = connect(Arc::new(EngineBackend::for_agent(fixture.state.clone(), agent))).await;
    let mut question = deploy_question();
    question["timeoutSeconds"] = json!(86_400);
    let result = call_bounded(&client, call("ask_user", question)).await;
    let id = result.structured_content.unwrap()["questionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let request = Request::get(format!("/v1/questions/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let (status, resource) = send_to(&fixture.router, request).await;
    assert_eq!(status, StatusCode::OK, "{resource}");
    assert_eq!(resource["request"]["timeoutSeconds"], 3600, "{resource}");
}
