"""``ask_user`` as an OpenAI Agents SDK function tool::

    from agents import Agent
    from askgate import AsyncClient
    from askgate.integrations.openai_agents import ask_user_tool

    agent = Agent(name="deployer", tools=[ask_user_tool(AsyncClient(url, token), to="alice")])

The tool's description is askgate's model guidance; the SDK's tool call id
is the question's idempotency key; it returns the exact ``ask_user`` tool
result as JSON text. Needs ``pip install askgate[openai-agents]``.
"""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, RunContextWrapper
from agents.strict_schema import ensure_strict_json_schema

from ..client import AsyncClient
from ..guidance import TOOL_DESCRIPTION, TOOL_NAME
from . import AskUserArguments, questions_of, tool_output

__all__ = ["ask_user_tool"]


def ask_user_tool(client: AsyncClient, to: str | None = None, *, session_id: str | None = None) -> FunctionTool:
    """The ``ask_user`` function tool asking ``to`` (``None``: the agent
    token's only recipient) through ``client``."""

    async def invoke(context: RunContextWrapper[Any], json_arguments: str) -> str:
        arguments = AskUserArguments.model_validate_json(json_arguments)
        tool_call_id = getattr(context, "tool_call_id", None)
        result = await client.ask_user(
            questions_of(arguments),
            to,
            timeout_seconds=arguments.timeoutSeconds,
            session_id=session_id,
            tool_call_id=tool_call_id or None,
        )
        return tool_output(result)

    return FunctionTool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        params_json_schema=ensure_strict_json_schema(AskUserArguments.model_json_schema()),
        on_invoke_tool=invoke,
    )
