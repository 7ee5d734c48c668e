"""``ask_user`` as a tool of agent frameworks, each a few lines on the
client: :mod:`askgate.integrations.langchain` (``pip install
askgate[langchain]``) and :mod:`askgate.integrations.openai_agents` (``pip
install askgate[openai-agents]``). Each describes itself to the model with
:data:`askgate.TOOL_DESCRIPTION` and returns the exact ``ask_user`` tool
result as JSON text."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from ..guidance import FIELD_DESCRIPTIONS
from ..models import AskQuestion
from ..results import AskResult

__all__ = ["AskUserArguments", "questions_of", "tool_output"]


class AskUserArguments(BaseModel):
    """The arguments a model gives the ``ask_user`` tool (the contract's)."""

    questions: list[AskQuestion] = Field(description=FIELD_DESCRIPTIONS["questions"])
    timeoutSeconds: int | None = Field(  # noqa: N815 - the contract's name, as the model writes it
        default=None,
        description=FIELD_DESCRIPTIONS["timeoutSeconds"],
    )


def tool_output(result: AskResult) -> str:
    """The tool result a model reads: ``{"status": "answered", ...}`` as JSON."""
    return json.dumps(result.to_tool_result(), ensure_ascii=False)


def questions_of(arguments: AskUserArguments) -> list[dict[str, Any]]:
    """The questions, as the client sends them."""
    return [question.model_dump(by_alias=True, exclude_none=True) for question in arguments.questions]
