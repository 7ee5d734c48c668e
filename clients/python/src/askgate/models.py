"""Typed models of askgate's agent API, as its ``/openapi.json`` describes
them (``components.schemas``). Field names are Python's (snake_case); the
JSON names (camelCase) are their aliases, and both are accepted on input.

Requests refuse unknown fields, as askgate does. Responses keep fields this
version does not know yet (``extra="allow"``), so that a newer askgate does
not break an older client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .guidance import FIELD_DESCRIPTIONS

__all__ = [
    "AgentInfo",
    "AgentRecipient",
    "AnsweredBy",
    "AnsweredResult",
    "AskQuestion",
    "CallbackAttempt",
    "CreateQuestionRequest",
    "Delivery",
    "DeliveredMessage",
    "DeliveryFailedResult",
    "Escalation",
    "EscalationStep",
    "ErrorBody",
    "ErrorDetail",
    "ErrorProblem",
    "Interrupted",
    "NoAnswerResult",
    "Option",
    "Question",
    "QuestionRequest",
    "QuestionStatus",
    "Reminder",
    "Resolution",
    "ToolResult",
]


class _Request(BaseModel):
    """A body askgate reads: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class _Response(BaseModel):
    """A body askgate writes: camelCase on the wire, newer fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Option(_Request):
    """One choice of a question (``AskQuestion.options[]``)."""

    label: str = Field(description=FIELD_DESCRIPTIONS["questions[].options[].label"])
    description: str | None = Field(default=None, description=FIELD_DESCRIPTIONS["questions[].options[].description"])


class AskQuestion(_Request):
    """One question of an ``ask_user`` call (schema ``AskQuestion``)."""

    id: str = Field(description=FIELD_DESCRIPTIONS["questions[].id"])
    header: str = Field(description=FIELD_DESCRIPTIONS["questions[].header"])
    question: str = Field(description=FIELD_DESCRIPTIONS["questions[].question"])
    options: list[Option] = Field(description=FIELD_DESCRIPTIONS["questions[].options"])
    multi_select: bool | None = Field(default=None, description=FIELD_DESCRIPTIONS["questions[].multiSelect"])


class EscalationStep(_Request):
    """One step of a question's own escalation ladder."""

    after: str | int
    """How long nobody answered: ``"10m"``, ``"1h30m"``, or seconds."""
    to: str
    """The recipient's name."""


class QuestionRequest(_Request):
    """The body of ``POST /v1/ask``: the ``ask_user`` arguments and askgate's
    envelope (schema ``QuestionRequest``). ``to`` may be left out when the
    agent token may ask one recipient only (askgate then asks that one)."""

    to: str | None = None
    """The recipient's name in askgate's configuration."""
    questions: list[AskQuestion]
    """One to three questions; prefer one."""
    timeout_seconds: int | None = None
    """How long to wait for an answer (default 900)."""
    session_id: str | None = None
    """The agent session; one pending question per session."""
    run_id: str | None = None
    """The agent run; aborting it cancels its questions."""
    session_kind: Literal["main", "subagent"] | None = None
    """``"main"`` (the default) or ``"subagent"``, which askgate refuses."""
    tool_call_id: str | None = None
    """The agent runtime's id of this tool call (an idempotency key when no
    ``Idempotency-Key`` header is sent)."""
    remind: list[str] | None = None
    """When to remind the person: ``"50%"``, ``"2m before"``, ``"10m"``."""
    escalate: list[EscalationStep] | None = None
    """An escalation ladder over the configured one."""
    callback_url: str | None = None
    """Where askgate POSTs the result when the question ends, signed by
    Standard Webhooks (a host the agent's configuration allows)."""

    def body(self) -> dict[str, Any]:
        """The JSON body, without the fields left unset."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class CreateQuestionRequest(QuestionRequest):
    """The body of ``POST /v1/questions`` (schema ``CreateQuestionRequest``):
    as :class:`QuestionRequest`, with ``timeout_seconds`` kept up to the
    agent token's ``max_timeout`` rather than clamped to an hour."""


QuestionStatus = Literal["pending", "answered", "expired", "skipped", "cancelled", "delivery_failed"]
"""The states of a question; every one but ``pending`` is final."""


class AnsweredAnswers(_Response):
    """``answers`` of an answered result: the items by question id."""

    answers: dict[str, list[str]]


class AnsweredResult(_Response):
    """``{"status": "answered", "answers": {"answers": {id: [items]}}}``."""

    status: Literal["answered"]
    answers: AnsweredAnswers


class NoAnswerResult(_Response):
    """``{"status": "no_answer"}``: expired, skipped or cancelled."""

    status: Literal["no_answer"]


class DeliveryFailedResult(_Response):
    """``{"status": "delivery_failed"}``: no surface could show the question."""

    status: Literal["delivery_failed"]


ToolResult = AnsweredResult | NoAnswerResult | DeliveryFailedResult
"""The exact tool result of an ended question (schema ``ToolResult``)."""


class Interrupted(_Response):
    """``POST /v1/ask`` only, when askgate shut down first: the question is
    still pending (schema ``Interrupted``)."""

    status: Literal["pending"]
    question_id: str


class DeliveredMessage(_Response):
    """A platform message that shows the question."""

    conversation: str | None = None
    message: str | None = None


class Delivery(_Response):
    """One surface the question is shown on (schema ``Delivery``)."""

    surface: str | None = None
    channel: str
    recipient: str | None = None
    status: Literal["sending", "delivered", "failed"]
    reason: str | None = None
    messages: list[DeliveredMessage] = Field(default_factory=list)


class AnsweredBy(_Response):
    """The person who answered or skipped, as their platform names them."""

    id: str | None = None
    display_name: str | None = None


class Resolution(_Response):
    """How a question ended."""

    status: str | None = None
    reason: str | None = None
    by: AnsweredBy | None = None
    via: str | None = None
    surface: str | None = None
    answers: dict[str, Any] | None = None


class Reminder(_Response):
    """A planned reminder."""

    at: datetime
    held_from: datetime | None = None
    sent_at: datetime | None = None


class Escalation(_Response):
    """A planned escalation."""

    to: str
    at: datetime
    held_from: datetime | None = None
    escalated_at: datetime | None = None


class CallbackAttempt(_Response):
    """One attempt at sending the question's result to its callback URL."""

    attempt: int
    status: Literal["delivered", "failed", "gave_up"]
    http_status: int | None = None
    at: datetime


class Question(_Response):
    """The question resource (schema ``Question``), as ``POST
    /v1/questions``, ``GET /v1/questions/{id}`` and ``cancel`` return it."""

    id: str
    status: QuestionStatus
    to: str | None = None
    channel: str | None = None
    deliveries: list[Delivery] = Field(default_factory=list)
    session_id: str | None = None
    run_id: str | None = None
    request: dict[str, Any] | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    resolved_at: datetime | None = None
    answered_by: AnsweredBy | None = None
    progress: dict[str, Any] = Field(default_factory=dict)
    resolution: Resolution | None = None
    result: ToolResult | None = Field(default=None, discriminator="status")
    reminders: list[Reminder] = Field(default_factory=list)
    escalations: list[Escalation] = Field(default_factory=list)
    callbacks: list[CallbackAttempt] | None = None

    @property
    def ended(self) -> bool:
        """Whether the question has ended (every status but ``pending``)."""
        return self.status != "pending"


class AgentRecipient(_Response):
    """A recipient the agent token may ask."""

    name: str
    display_name: str


class AgentMcp(_Response):
    """The MCP settings an agent follows."""

    wait_seconds: int


class AgentInfo(_Response):
    """``GET /v1/agent``: the token's name, recipients and MCP wait."""

    name: str
    recipients: list[AgentRecipient]
    mcp: AgentMcp


class ErrorProblem(_Response):
    """One problem of a request askgate refused."""

    code: str
    path: str | None = None
    message: str


class ErrorDetail(_Response):
    """``error`` of an error body."""

    code: str
    message: str
    path: str | None = None
    errors: list[ErrorProblem] | None = None
    error_count: int | None = None


class ErrorBody(_Response):
    """Every error askgate answers with (schema ``Error``)."""

    error: ErrorDetail
