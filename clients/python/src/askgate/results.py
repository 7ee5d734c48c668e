"""What a blocking ``ask_user`` returns: one of three typed results, made
for ``match``::

    match client.ask_user(questions, to="alice"):
        case Answered(answers=answers): ...
        case NoAnswer(reason=reason): ...
        case DeliveryFailed(reason=reason): ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .models import Question

__all__ = ["Answered", "AskResult", "DeliveryFailed", "NoAnswer", "result_of"]


@dataclass(frozen=True)
class Answered:
    """The person answered: the items chosen or written, by question id."""

    answers: dict[str, list[str]]
    #: The question resource, as it ended.
    question: Question | None = field(default=None, compare=False, repr=False)

    def to_tool_result(self) -> dict[str, Any]:
        """The exact ``ask_user`` tool result, for a model."""
        return {"status": "answered", "answers": {"answers": self.answers}}


@dataclass(frozen=True)
class NoAnswer:
    """No answer came: the question ``expired``, was ``skipped`` or ``cancelled``."""

    reason: Literal["expired", "skipped", "cancelled"]
    question: Question | None = field(default=None, compare=False, repr=False)

    def to_tool_result(self) -> dict[str, Any]:
        """The exact ``ask_user`` tool result, for a model."""
        return {"status": "no_answer"}


@dataclass(frozen=True)
class DeliveryFailed:
    """No surface could show the question; ``reason`` is the platform's
    refusal, as the resource records it (``None`` if it says none)."""

    reason: str | None
    question: Question | None = field(default=None, compare=False, repr=False)

    def to_tool_result(self) -> dict[str, Any]:
        """The exact ``ask_user`` tool result, for a model."""
        return {"status": "delivery_failed"}


AskResult = Answered | NoAnswer | DeliveryFailed
"""The result of a question that ended."""


def result_of(question: Question) -> AskResult:
    """The typed result of an ended question."""
    if question.status == "answered":
        result = question.result
        answers = result.answers.answers if result is not None and result.status == "answered" else {}
        return Answered(answers=answers, question=question)
    if question.status == "delivery_failed":
        reason = question.resolution.reason if question.resolution else None
        if reason is None:
            reason = next((d.reason for d in question.deliveries if d.reason), None)
        return DeliveryFailed(reason=reason, question=question)
    if question.status in ("expired", "skipped", "cancelled"):
        return NoAnswer(reason=question.status, question=question)
    raise ValueError(f"question {question.id} has not ended (status {question.status})")
