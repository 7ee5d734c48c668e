//! `GET /openapi.json`: the agent API described for tools and people.
//!
//! Written out here rather than generated with an annotation crate: the API
//! is a handful of routes whose bodies are the `ask_user` contract, whose
//! validation is hand-written for complete error reports (no derive to
//! annotate). A test checks that every `/v1` route of the router is described.

use askgate_core::guidance::{TOOL_DESCRIPTION, field_description};
use askgate_core::request::{LONGEST_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS};
use serde_json::{Value, json};

/// The OpenAPI 3.1 document of a server whose agents may wait at most the
/// contract's hour (no `max_timeout` configured longer).
pub fn document() -> Value {
    document_for(MAX_TIMEOUT_SECONDS)
}

/// The OpenAPI 3.1 document of a server whose longest agent `max_timeout`
/// is `max_timeout_seconds`: `POST /v1/questions` takes a `timeoutSeconds`
/// up to it (the token's own limit may be lower; then it is a 422
/// `invalid_timeout` naming that limit), while `POST /v1/ask` clamps to the
/// hour as the `ask_user` contract does.
pub fn document_for(max_timeout_seconds: u32) -> Value {
    let max_timeout_seconds = max_timeout_seconds.clamp(MAX_TIMEOUT_SECONDS, LONGEST_TIMEOUT_SECONDS);
    let ask_body = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/QuestionRequest"}}}
    });
    let create_body = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreateQuestionRequest"}}}
    });
    let errors = |codes: &[&str]| -> Value {
        codes
            .iter()
            .map(|code| {
                (
                    (*code).to_owned(),
                    json!({"$ref": format!("#/components/responses/{code}")}),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let mut create_responses = errors(&["400", "401", "403", "408", "409", "413", "415", "422", "429", "503"]);
    create_responses["201"] = json!({"description": "Accepted; the question resource.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Question"}}}});
    create_responses["200"] = json!({"description": "A retry: the Idempotency-Key (or toolCallId) was used before with the same request; the question asked then (header Idempotent-Replayed: true).", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Question"}}}});
    let mut ask_responses = errors(&["400", "401", "403", "408", "409", "413", "415", "422", "429", "503"]);
    ask_responses["200"] = json!({"description": "The tool result, once the question ends (leading whitespace keeps the connection alive); if askgate shuts down first, the question's id to pick the answer up later.", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/ToolResult"}, {"$ref": "#/components/schemas/Interrupted"}]}}}});
    let mut get_responses = errors(&["400", "401", "404", "503"]);
    get_responses["200"] = json!({"description": "The question resource.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Question"}}}});
    // Any whole number of seconds is taken (and clamped to 3600); the
    // maximum is the largest the server reads, so that the document refuses
    // no more and no less than the server does.
    let wait = json!({"name": "wait", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
        "description": "Hold the response until the question ends or this many seconds pass (at most 3600: larger values are clamped)."});
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let idempotency_key = json!({"name": "Idempotency-Key", "in": "header", "required": false,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": "Makes the call safe to retry: the same key with the same request finds the question the first call asked (POST /v1/ask re-attaches to it and waits); with another request it is 422 idempotency_key_reused. Keys are per agent token. A keyed POST /v1/ask whose caller went away keeps its question for a grace period (server.ask_retry_grace_seconds) before cancelling it."});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "askgate",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Structured questions from AI agents to people, in the chat apps they already use."
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/ask": {"post": {
                "operationId": "ask_user",
                "summary": "Ask the user and wait for the answer (the ask_user tool call).",
                "description": TOOL_DESCRIPTION,
                "parameters": [idempotency_key.clone()],
                "requestBody": ask_body,
                "responses": ask_responses
            }},
            "/v1/questions": {"post": {
                "operationId": "createQuestion",
                "summary": "Ask the user; returns at once (or after ?wait=N seconds) with the question resource.",
                "description": TOOL_DESCRIPTION,
                "parameters": [wait, idempotency_key],
                "requestBody": create_body,
                "responses": create_responses
            }},
            "/v1/questions/{id}": {"get": {
                "operationId": "getQuestion",
                "summary": "The question resource; ?wait=N holds until it ends or N seconds pass.",
                "parameters": [id, wait],
                "responses": get_responses
            }},
            "/v1/questions/{id}/events": {"get": {
                "operationId": "questionEvents",
                "summary": "Server-sent events: a `question` event with the resource now and at every change, until it ends.",
                "parameters": [id],
                "responses": {"200": {"description": "An event stream.", "content": {"text/event-stream": {}}}, "401": {"$ref": "#/components/responses/401"}, "404": {"$ref": "#/components/responses/404"}}
            }},
            "/v1/questions/{id}/cancel": {"post": {
                "operationId": "cancelQuestion",
                "summary": "Cancel a question; the waiting call gets no_answer. Idempotent.",
                "parameters": [id],
                "responses": get_responses
            }},
            "/v1/agent": agent_path(),
            "/v1/runs/{runId}/abort": abort_path()
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "An agent token from askgate's configuration."}},
            "schemas": schemas(max_timeout_seconds),
            "responses": {
                "400": error_response("Malformed: not JSON, or a bad query parameter."),
                "401": error_response("No or an unknown agent token."),
                "403": error_response("Not allowed: recipient_not_allowed, subagent_not_allowed."),
                "404": error_response("No such question (or not this agent's)."),
                "408": error_response("body_timeout: the body did not arrive within server.body_timeout_seconds of the headers; the connection is closed."),
                "409": error_response("question_pending: the session already waits for an answer."),
                "413": error_response("payload_too_large."),
                "415": error_response("unsupported_media_type: send application/json."),
                "422": error_response("Validation failed: every problem with its code and JSON path (spec §2); unknown_recipient (naming the recipients the token may ask); idempotency_key_reused."),
                "429": error_response("too_many_pending: the agent or the recipient has as many pending questions as [limits] allows."),
                "503": error_response("store_unavailable: askgate could not save (a full disk, a locked or replaced database); nothing changed, retry after Retry-After seconds.")
            }
        }
    })
}

/// `POST /v1/runs/{runId}/abort`: cancel a run's pending questions.
fn abort_path() -> Value {
    json!({"post": {
        "operationId": "abortRun",
        "summary": "The agent's run was aborted: cancel all of its pending questions.",
        "parameters": [{"name": "runId", "in": "path", "required": true, "schema": {"type": "string", "pattern": NO_NUL}}],
        "responses": {"200": {"description": "The cancelled question ids.", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"runId": {"type": "string"}, "cancelled": {"type": "array", "items": {"type": "string"}}}}}}},
            "401": {"$ref": "#/components/responses/401"},
            "422": error_response("invalid_character: the run id holds U+0000, which no run has.")}
    }})
}

/// `GET /v1/agent`: the token's name, recipients and MCP wait.
fn agent_path() -> Value {
    json!({"get": {
        "operationId": "getAgent",
        "summary": "This agent token: its name, the recipients it may ask (what `to` may name), and how long an MCP tool call waits.",
        "responses": {"200": {"description": "The agent.", "content": {"application/json": {"schema": {
            "type": "object", "required": ["name", "recipients", "mcp"], "properties": {
                "name": {"type": "string"},
                "recipients": {"type": "array", "items": {
                    "type": "object", "required": ["name", "displayName"], "properties": {
                        "name": {"type": "string"}, "displayName": {"type": "string"}}}},
                "mcp": {"type": "object", "required": ["waitSeconds"], "properties": {
                    "waitSeconds": {"type": "integer", "description": "[mcp] wait_seconds: the longest an MCP tool call waits before it returns pending."}}}}}}}},
            "401": {"$ref": "#/components/responses/401"}}
    }})
}

/// The white space of [`NOT_BLANK`], as the inside of a class.
macro_rules! blanks {
    () => {
        "\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
    };
}

/// A string with something other than white space in it: the envelope's
/// names are trimmed (`str::trim`) and refused empty. The class is Rust's
/// `char::is_whitespace` spelled out, since `\s` differs between regex
/// dialects (ECMA-262 counts U+FEFF, Python's `re` counts U+001C..U+001F).
const NOT_BLANK: &str = concat!("[^", blanks!(), "]");

/// An id of the envelope (`sessionId`, `runId`, `toolCallId`): not blank,
/// as [`NOT_BLANK`] says, and without U+0000 anywhere, which askgate
/// refuses (`invalid_character`: PostgreSQL keeps no NUL in text).
const ID_TEXT: &str = concat!("^[^\\u0000]*[^\\u0000", blanks!(), "][^\\u0000]*$");

/// A reminder point, loosely (`50%`, `2m before`, `10m`): what the pattern
/// lets through may still be refused (`invalid_reminder`: `0%`, `0m`,
/// units out of order, a number too large), which JSON Schema cannot state.
const REMINDER: &str = "^([0-9]+%|[0-9dhms]+( before)?)$";

/// A duration, loosely (`10m`, `1h30m`, `2d`), refused as a reminder is.
const DURATION: &str = "^[0-9dhms]+$";

/// A path's run id: anything but U+0000, as [`ID_TEXT`].
const NO_NUL: &str = "^[^\\u0000]*$";

/// A string with something other than white space and control characters in
/// it: the `ask_user` text fields are cleaned of both
/// (`askgate_core::text::clean_field`) and refused empty, so `"\u0001"` is
/// as empty as `" "` is.
const VISIBLE: &str = "[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// The body of `POST /v1/ask`: the `ask_user` arguments and askgate's
/// envelope, every field described as the guidance says.
fn question_request() -> Value {
    json!({
        "type": "object",
        "required": ["questions"],
        "additionalProperties": false,
        "properties": {
            "to": {"type": ["string", "null"], "pattern": NOT_BLANK, "description": "The recipient's name in askgate's configuration. Leave it out (or null) when this agent token may ask exactly one recipient; otherwise it is required (422 missing_field at \"to\", naming the recipients the token may ask)."},
            "sessionId": {"type": ["string", "null"], "pattern": ID_TEXT, "description": "The agent session; one pending question per session."},
            "runId": {"type": ["string", "null"], "pattern": ID_TEXT, "description": "The agent run; aborting it cancels its questions."},
            "sessionKind": {"type": ["string", "null"], "enum": ["main", "subagent", null], "default": "main"},
            "toolCallId": {"type": ["string", "null"], "minLength": 1, "maxLength": 255, "pattern": ID_TEXT, "description": "The agent runtime's id of this tool call: an idempotency key when no Idempotency-Key header is sent."},
            "questions": {"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true, "items": {"$ref": "#/components/schemas/AskQuestion"}, "description": field_description("questions")},
            "timeoutSeconds": {"type": ["integer", "null"], "default": 900, "description": field_description("timeoutSeconds")},
            "remind": {"type": ["array", "null"], "maxItems": 10, "items": {"type": "string", "pattern": REMINDER},
                "description": "When to remind the person, over the agent's and the recipient's configured reminders: a share of the wait (\"50%\"), a time before it ends (\"2m before\"), or after the question was asked (\"10m\"). A point outside the wait is left out; one in the person's quiet hours waits for their end."},
            "callbackUrl": {"type": ["string", "null"], "format": "uri", "maxLength": 2048, "pattern": NOT_BLANK,
                "description": "Where to POST the question's result when it ends, signed by the Standard Webhooks specification, over the agent's configured callback_url: an http(s) URL on a host the agent's configuration allows ([agents.NAME] callback_hosts, or callback_url's host); any other is refused with 422 invalid_callback_url. The delivery is retried until a 2xx, for 24 hours after the end; its attempts are the resource's callbacks."},
            "escalate": {"type": ["array", "null"], "maxItems": 10,
                "description": "An escalation ladder, over the agent's and the recipient's configured one: after each step's time without an answer, the question is delivered to that recipient too; the first answer anywhere wins. A step that cannot happen before the question ends is refused (invalid_escalation).",
                "items": {"type": "object", "required": ["after", "to"], "additionalProperties": false, "properties": {
                    "after": {"oneOf": [{"type": "string", "pattern": DURATION}, {"type": "integer", "minimum": 1}], "description": "How long nobody answered: \"10m\", \"1h30m\", or seconds."},
                    "to": {"type": "string", "pattern": NOT_BLANK, "description": "The recipient's name."}
                }}}
        }
    })
}

/// What `timeoutSeconds` of `POST /v1/questions` says beyond the guidance.
fn long_wait_description(max_timeout_seconds: u32) -> String {
    format!(
        "{} Here (POST /v1/questions, not POST /v1/ask) a longer wait is kept rather than lowered, up to the agent token's max_timeout (agents.NAME.max_timeout: 3600 unless configured longer, at most {LONGEST_TIMEOUT_SECONDS}, 7 days; {max_timeout_seconds} is the longest any token here has); a longer one is refused with 422 invalid_timeout naming the token's limit. Poll GET /v1/questions/{{id}}?wait=N (N up to 3600) or follow its events for the answer.",
        field_description("timeoutSeconds")
    )
}

/// The `Interrupted` schema: `POST /v1/ask`'s answer when askgate stopped first.
fn interrupted_schema() -> Value {
    json!({
        "type": "object", "required": ["status", "questionId"],
        "description": "POST /v1/ask only, when askgate shut down before the question ended: it is still pending; pick its answer up with GET /v1/questions/{questionId}?wait=N once askgate is back.",
        "properties": {"status": {"const": "pending"}, "questionId": {"type": "string"}}
    })
}

/// The `callbacks` of the `Question` schema: its result callback's attempts.
fn callbacks_schema() -> Value {
    json!({"type": "array", "description": "For a question whose result is sent to a callback URL (its callbackUrl, or [agents.NAME] callback_url), in the answers of POST /v1/questions, GET /v1/questions/{id} and cancel (not in the event stream): each attempt so far, in order. status: delivered (a 2xx: never sent again), failed (tried again with backoff), gave_up (failed and the 24 hours after the end are over); httpStatus: the receiver's, null when it did not answer. Empty until the question ends.", "items": {
                    "type": "object", "required": ["attempt", "status", "at"], "properties": {
                        "attempt": {"type": "integer", "minimum": 1},
                        "status": {"type": "string", "enum": ["delivered", "failed", "gave_up"]},
                        "httpStatus": {"type": ["integer", "null"]},
                        "at": {"type": "string", "format": "date-time"}}}})
}

fn schemas(max_timeout_seconds: u32) -> Value {
    let mut create = question_request();
    create["properties"]["timeoutSeconds"] = json!({"type": ["integer", "null"], "default": 900,
        "maximum": max_timeout_seconds, "description": long_wait_description(max_timeout_seconds)});
    json!({
        "QuestionRequest": question_request(),
        "CreateQuestionRequest": create,
        "AskQuestion": {
            "type": "object",
            "required": ["id", "header", "question", "options"],
            "additionalProperties": false,
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 64, "description": field_description("questions[].id")},
                "header": {"type": "string", "pattern": VISIBLE, "description": field_description("questions[].header")},
                "question": {"type": "string", "minLength": 1, "maxLength": 300, "pattern": VISIBLE, "description": field_description("questions[].question")},
                "options": {"type": "array", "minItems": 2, "maxItems": 4, "uniqueItems": true, "description": field_description("questions[].options"), "items": {
                    "type": "object", "required": ["label"], "additionalProperties": false,
                    "properties": {
                        "label": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": VISIBLE, "description": field_description("questions[].options[].label")},
                        "description": {"type": ["string", "null"], "maxLength": 150, "description": field_description("questions[].options[].description")}
                    }
                }},
                "multiSelect": {"type": ["boolean", "null"], "default": false, "description": field_description("questions[].multiSelect")}
            }
        },
        "ToolResult": {
            "oneOf": [
                {"type": "object", "required": ["status", "answers"], "properties": {
                    "status": {"const": "answered"},
                    "answers": {"type": "object", "required": ["answers"], "properties": {"answers": {
                        "type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}}}}},
                {"type": "object", "required": ["status"], "properties": {"status": {"const": "no_answer"}}},
                {"type": "object", "required": ["status"], "properties": {"status": {"const": "delivery_failed"}}}
            ]
        },
        "Interrupted": interrupted_schema(),
        "Question": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "answered", "expired", "skipped", "cancelled", "delivery_failed"]},
                "to": {"type": "string"},
                "channel": {"type": "string", "description": "The channel of the first surface (deliveries lists them all)."},
                "deliveries": {
                    "type": "array",
                    "description": "One entry per surface of the recipient the question is shown on, in the recipient's order.",
                    "items": {"$ref": "#/components/schemas/Delivery"}
                },
                "sessionId": {"type": ["string", "null"]},
                "runId": {"type": ["string", "null"]},
                "request": {"type": "object"},
                "createdAt": {"type": "string", "format": "date-time"},
                "expiresAt": {"type": "string", "format": "date-time"},
                "resolvedAt": {"type": ["string", "null"], "format": "date-time"},
                "answeredBy": {"type": ["object", "null"], "description": "Who answered or skipped (the person, as their platform names them: id and displayName), whichever surface and recipient it was on — an escalation's too; null while pending or when nobody did.", "properties": {"id": {"type": "string"}, "displayName": {"type": "string"}}},
                "progress": {"type": "object", "description": "Partial answers of a multi-question prompt."},
                "resolution": {"type": ["object", "null"], "description": "status, reason, by {id, displayName}, via (the channel it was answered through), surface (its kind: telegram, discord, slack, matrix, web), answers by id with each item's kind (option | free_text)."},
                "result": {"oneOf": [{"$ref": "#/components/schemas/ToolResult"}, {"type": "null"}]},
                "reminders": {"type": "array", "description": "The reminders planned, in time order: when each is due (held to the end of the person's quiet hours: heldFrom is when it was due before), and when it was sent.", "items": {
                    "type": "object", "required": ["at"], "properties": {
                        "at": {"type": "string", "format": "date-time"},
                        "heldFrom": {"type": ["string", "null"], "format": "date-time"},
                        "sentAt": {"type": ["string", "null"], "format": "date-time"}}}},
                "escalations": {"type": "array", "description": "The escalations planned, in time order: to whom, when each is due, and when the question was escalated (its surfaces then join deliveries, each with its recipient).", "items": {
                    "type": "object", "required": ["to", "at"], "properties": {
                        "to": {"type": "string"},
                        "at": {"type": "string", "format": "date-time"},
                        "heldFrom": {"type": ["string", "null"], "format": "date-time"},
                        "escalatedAt": {"type": ["string", "null"], "format": "date-time"}}}},
                "callbacks": callbacks_schema()
            }
        },
        "Delivery": {
            "type": "object",
            "required": ["surface", "channel", "status", "messages"],
            "properties": {
                "surface": {"type": ["string", "null"], "description": "The kind of surface: telegram, discord, slack, matrix, web (null for a question stored before kinds were recorded)."},
                "channel": {"type": "string", "description": "The configured channel's name."},
                "recipient": {"type": ["string", "null"], "description": "The recipient the question was escalated to, for a surface of theirs; null for the question's own recipient's."},
                "status": {"type": "string", "enum": ["sending", "delivered", "failed"]},
                "reason": {"type": ["string", "null"], "description": "Why it failed: the platform's refusal, or \"the question ended before it was delivered\" for a surface sent nothing more once its question ended."},
                "messages": {"type": "array", "items": {"type": "object", "properties": {
                    "conversation": {"type": "string"}, "message": {"type": "string"}}}}
            }
        },
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "path": {"type": "string", "description": "The JSON path of the offending value."},
                "errors": {"type": "array", "maxItems": 50, "description": "The problems, when there were several: the first 50.", "items": {
                    "type": "object", "properties": {"code": {"type": "string"}, "path": {"type": "string"}, "message": {"type": "string"}}}},
                "errorCount": {"type": "integer", "description": "How many problems there were, when more than are listed."}
            }}}
        }
    })
}
