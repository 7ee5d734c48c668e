//! The MCP tool set, in one place: the tools' names, descriptions and
//! schemas, and the tool results they return. Both transports publish
//! exactly these.

use std::fmt::Write as _;
use std::sync::Arc;

use askgate_core::guidance::{TOOL_DESCRIPTION, TOOL_NAME, field_description};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::backend::{BackendError, Status};

/// `ask_user`: ask the person and wait (at most `[mcp] wait_seconds`).
pub const ASK_USER: &str = TOOL_NAME;
/// `await_answer`: keep waiting for a question `ask_user` left pending.
pub const AWAIT_ANSWER: &str = "await_answer";
/// `cancel_question`: cancel a question.
pub const CANCEL_QUESTION: &str = "cancel_question";

/// The description of `await_answer`.
pub const AWAIT_ANSWER_DESCRIPTION: &str = "\
Keep waiting for the user's answer to a question that ask_user (or an earlier await_answer) \
returned as {\"status\":\"pending\",\"questionId\":\"…\"}. Returns the same result ask_user \
would have: the answers, {\"status\":\"no_answer\"}, or pending again after a while, in which \
case call await_answer again with the same questionId.";

/// The description of `cancel_question`.
pub const CANCEL_QUESTION_DESCRIPTION: &str = "\
Cancel a question asked with ask_user that no longer needs an answer (for example because \
you found the answer yourself). Returns its result: {\"status\":\"no_answer\"}, or the answers \
if the user had already answered. Cancelling an ended question changes nothing.";

/// Every tool askgate publishes over MCP, in the order clients list them.
pub fn tools() -> Vec<Tool> {
    let output = Arc::new(object(output_schema()));
    vec![
        Tool::new(ASK_USER, TOOL_DESCRIPTION, object(ask_user_schema()))
            .with_title("Ask the user")
            .with_raw_output_schema(output.clone())
            .with_annotations(annotations(false, false)),
        Tool::new(AWAIT_ANSWER, AWAIT_ANSWER_DESCRIPTION, object(question_id_schema()))
            .with_title("Wait for the user's answer")
            .with_raw_output_schema(output.clone())
            .with_annotations(annotations(true, true)),
        Tool::new(
            CANCEL_QUESTION,
            CANCEL_QUESTION_DESCRIPTION,
            object(question_id_schema()),
        )
        .with_title("Cancel a question")
        .with_raw_output_schema(output)
        .with_annotations(annotations(false, true)),
    ]
}

fn annotations(read_only: bool, idempotent: bool) -> ToolAnnotations {
    // Not destructive, and askgate itself rather than the open world.
    ToolAnnotations::from_raw(None, Some(read_only), Some(false), Some(idempotent), Some(false))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// The `ask_user` arguments (spec §2), each field described the way the
/// model guidance says, plus askgate's `to` and `sessionId`. Validation is
/// askgate's own (every problem at once); the schema guides the model.
pub fn ask_user_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": 3,
                "description": field_description("questions"),
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {
                            "type": "string",
                            "pattern": "^[a-z][a-z0-9_]*$",
                            "maxLength": 64,
                            "description": field_description("questions[].id")
                        },
                        "header": {
                            "type": "string",
                            "description": field_description("questions[].header")
                        },
                        "question": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 300,
                            "description": field_description("questions[].question")
                        },
                        "options": {
                            "type": "array",
                            "minItems": 2,
                            "maxItems": 4,
                            "description": field_description("questions[].options"),
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "minLength": 1,
                                        "maxLength": 64,
                                        "description": field_description("questions[].options[].label")
                                    },
                                    "description": {
                                        "type": "string",
                                        "maxLength": 150,
                                        "description": field_description("questions[].options[].description")
                                    }
                                },
                                "required": ["label"],
                                "additionalProperties": false
                            }
                        },
                        "multiSelect": {
                            "type": "boolean",
                            "default": false,
                            "description": field_description("questions[].multiSelect")
                        }
                    },
                    "required": ["id", "header", "question", "options"],
                    "additionalProperties": false
                }
            },
            "timeoutSeconds": {
                "type": "integer",
                "default": 900,
                "description": field_description("timeoutSeconds")
            },
            "to": {
                "type": "string",
                "description": "Who to ask: a recipient's name in askgate's configuration. Leave it out when there is only one recipient you may ask."
            },
            "sessionId": {
                "type": "string",
                "description": "Your own session id, if you have one: a session has at most one question pending at a time. By default the session is this MCP session."
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

fn question_id_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questionId": {
                "type": "string",
                "minLength": 1,
                "description": "The questionId of a pending result."
            }
        },
        "required": ["questionId"],
        "additionalProperties": false
    })
}

/// What every tool returns as `structuredContent`: the tool result of spec
/// §3, `pending` with the question's id while the person has not answered,
/// or askgate's error object when the call was refused.
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "anyOf": [
            {"type": "object", "required": ["status", "answers"], "properties": {
                "status": {"const": "answered"},
                "answers": {"type": "object", "required": ["answers"], "properties": {"answers": {
                    "type": "object",
                    "description": "The answers by question id: the chosen options' labels, or the user's own words.",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}}}}}}},
            {"type": "object", "required": ["status"], "properties": {"status": {"const": "no_answer"}}},
            {"type": "object", "required": ["status"], "properties": {"status": {"const": "delivery_failed"}}},
            {"type": "object", "required": ["status", "questionId"], "properties": {
                "status": {"const": "pending"},
                "questionId": {"type": "string"}}},
            {"type": "object", "required": ["error"], "properties": {"error": {
                "type": "object", "required": ["code", "message"], "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "path": {"type": "string"},
                    "errors": {"type": "array", "items": {"type": "object", "properties": {
                        "code": {"type": "string"}, "path": {"type": "string"}, "message": {"type": "string"}}}}}}}}
        ]
    })
}

/// The tool result of a question: the exact result of spec §3 once it has
/// ended, else `pending` with a sentence telling the model what to do next.
pub fn status_result(status: &Status) -> CallToolResult {
    match &status.result {
        Some(result) => CallToolResult::structured(json!(result)),
        None => {
            let mut result = CallToolResult::structured(json!({"status": "pending", "questionId": status.id}));
            result.content.push(ContentBlock::text(format!(
                "The user has not answered yet; the question is still open. Call {AWAIT_ANSWER} with \
                 {{\"questionId\": \"{}\"}} to keep waiting for the answer.",
                status.id
            )));
            result
        }
    }
}

/// A refused call as a tool error: every problem listed in the text (code,
/// JSON path, message), so that the model can fix its call in one round
/// trip, and askgate's error object as `structuredContent`.
pub fn refused_result(error: &BackendError) -> CallToolResult {
    let refusal = error.refusal();
    let mut text = format!("askgate refused this call ({}): {}", refusal.code, refusal.message);
    if !refusal.problems.is_empty() {
        text.push_str("\nFix every problem below and call again:");
        for problem in &refusal.problems {
            if problem.path.is_empty() {
                let _ = write!(text, "\n- {}: {}", problem.code, problem.message);
            } else {
                let _ = write!(
                    text,
                    "
- {} at {}: {}",
                    problem.code, problem.path, problem.message
                );
            }
        }
    } else if let Some(path) = &refusal.path {
        let _ = write!(text, " (at {path})");
    }
    let mut body = json!({"code": refusal.code, "message": refusal.message});
    if let Some(path) = &refusal.path {
        body["path"] = json!(path);
    }
    if !refusal.problems.is_empty() {
        body["errors"] = json!(refusal.problems);
    }
    let mut result = CallToolResult::structured_error(json!({ "error": body }));
    result.content = vec![ContentBlock::text(text)];
    result
}
