//! `GET /openapi.json`: the agent API described for tools and people.
//!
//! Written out here rather than generated with an annotation crate: the API
//! is a handful of routes whose bodies are the `ask_user` contract, whose
//! validation is hand-written for complete error reports (no derive to
//! annotate). A test checks that every `/v1` route of the router is described.

use askgate_core::guidance::TOOL_DESCRIPTION;
use serde_json::{Value, json};

/// The OpenAPI 3.1 document.
pub fn document() -> Value {
    let ask_body = json!({
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/QuestionRequest"}}}
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
    let mut create_responses = errors(&["400", "401", "403", "409", "413", "415", "422"]);
    create_responses["201"] = json!({"description": "Accepted; the question resource.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Question"}}}});
    let mut ask_responses = errors(&["400", "401", "403", "409", "413", "415", "422"]);
    ask_responses["200"] = json!({"description": "The tool result, once the question ends (leading whitespace keeps the connection alive); if askgate shuts down first, the question's id to pick the answer up later.", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/ToolResult"}, {"$ref": "#/components/schemas/Interrupted"}]}}}});
    let mut get_responses = errors(&["400", "401", "404"]);
    get_responses["200"] = json!({"description": "The question resource.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Question"}}}});
    let wait = json!({"name": "wait", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "maximum": 3600},
        "description": "Hold the response until the question ends or this many seconds pass."});
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
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
                "requestBody": ask_body,
                "responses": ask_responses
            }},
            "/v1/questions": {"post": {
                "operationId": "createQuestion",
                "summary": "Ask the user; returns at once (or after ?wait=N seconds) with the question resource.",
                "description": TOOL_DESCRIPTION,
                "parameters": [wait],
                "requestBody": ask_body,
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
            "/v1/runs/{runId}/abort": {"post": {
                "operationId": "abortRun",
                "summary": "The agent's run was aborted: cancel all of its pending questions.",
                "parameters": [{"name": "runId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "The cancelled question ids.", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"runId": {"type": "string"}, "cancelled": {"type": "array", "items": {"type": "string"}}}}}}},
                    "401": {"$ref": "#/components/responses/401"}}
            }}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "An agent token from askgate's configuration."}},
            "schemas": schemas(),
            "responses": {
                "400": error_response("Malformed: not JSON, or a bad query parameter."),
                "401": error_response("No or an unknown agent token."),
                "403": error_response("Not allowed: recipient_not_allowed, subagent_not_allowed."),
                "404": error_response("No such question (or not this agent's)."),
                "409": error_response("question_pending: the session already waits for an answer."),
                "413": error_response("payload_too_large."),
                "415": error_response("unsupported_media_type: send application/json."),
                "422": error_response("Validation failed: every problem with its code and JSON path (spec §2).")
            }
        }
    })
}

/// A string with something other than white space in it (the server trims
/// such fields and refuses them empty).
const NOT_BLANK: &str = "\\S";

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn schemas() -> Value {
    json!({
        "QuestionRequest": {
            "type": "object",
            "required": ["to", "questions"],
            "additionalProperties": false,
            "properties": {
                "to": {"type": "string", "pattern": NOT_BLANK, "description": "The recipient's name in askgate's configuration."},
                "sessionId": {"type": ["string", "null"], "pattern": NOT_BLANK, "description": "The agent session; one pending question per session."},
                "runId": {"type": ["string", "null"], "pattern": NOT_BLANK, "description": "The agent run; aborting it cancels its questions."},
                "sessionKind": {"type": ["string", "null"], "enum": ["main", "subagent", null], "default": "main"},
                "questions": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"$ref": "#/components/schemas/AskQuestion"}},
                "timeoutSeconds": {"type": "integer", "default": 900, "description": "Clamped to 30..=3600."}
            }
        },
        "AskQuestion": {
            "type": "object",
            "required": ["id", "header", "question", "options"],
            "additionalProperties": false,
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 64, "description": "Unique snake_case answer key."},
                "header": {"type": "string", "pattern": NOT_BLANK, "description": "Short label; cut to 12 characters."},
                "question": {"type": "string", "minLength": 1, "maxLength": 300, "pattern": NOT_BLANK, "description": "One sentence."},
                "options": {"type": "array", "minItems": 2, "maxItems": 4, "items": {
                    "type": "object", "required": ["label"], "additionalProperties": false,
                    "properties": {
                        "label": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": NOT_BLANK},
                        "description": {"type": "string", "maxLength": 150}
                    }
                }},
                "multiSelect": {"type": "boolean", "default": false}
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
        "Interrupted": {
            "type": "object", "required": ["status", "questionId"],
            "description": "POST /v1/ask only, when askgate shut down before the question ended: it is still pending; pick its answer up with GET /v1/questions/{questionId}?wait=N once askgate is back.",
            "properties": {"status": {"const": "pending"}, "questionId": {"type": "string"}}
        },
        "Question": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "answered", "expired", "skipped", "cancelled", "delivery_failed"]},
                "to": {"type": "string"},
                "channel": {"type": "string"},
                "sessionId": {"type": ["string", "null"]},
                "runId": {"type": ["string", "null"]},
                "request": {"type": "object"},
                "createdAt": {"type": "string", "format": "date-time"},
                "expiresAt": {"type": "string", "format": "date-time"},
                "resolvedAt": {"type": ["string", "null"], "format": "date-time"},
                "progress": {"type": "object", "description": "Partial answers of a multi-question prompt."},
                "resolution": {"type": ["object", "null"], "description": "status, reason, by {id, displayName}, via (channel), answers by id with each item's kind (option | free_text)."},
                "result": {"oneOf": [{"$ref": "#/components/schemas/ToolResult"}, {"type": "null"}]}
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
