"""``ask_user`` as a LangChain (and LangGraph) tool::

    from askgate import Client
    from askgate.integrations.langchain import AskUserTool

    tool = AskUserTool(client=Client(url, token), to="alice")
    agent = create_react_agent(model, [tool])

The tool's description is askgate's model guidance; it returns the exact
``ask_user`` tool result as JSON text. Needs ``pip install askgate[langchain]``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool
from pydantic import ConfigDict

from ..client import AsyncClient, Client
from ..guidance import TOOL_DESCRIPTION, TOOL_NAME
from . import AskUserArguments, questions_of, tool_output

__all__ = ["AskUserTool"]


class AskUserTool(BaseTool):
    """Asks a person through askgate and waits for the answer.

    ``client`` serves ``invoke``; ``async_client`` (if given) serves
    ``ainvoke``, which otherwise runs the blocking client in a thread.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = TOOL_NAME
    description: str = TOOL_DESCRIPTION
    args_schema: type[AskUserArguments] = AskUserArguments
    client: Client | None = None
    async_client: AsyncClient | None = None
    to: str | None = None
    """The recipient; ``None`` is the agent token's only one."""
    session_id: str | None = None
    """The agent session, so that askgate holds one pending question per session."""

    def _run(self, questions: list[Any], timeoutSeconds: int | None = None, **_: Any) -> str:  # noqa: N803
        if self.client is None:
            raise ValueError("AskUserTool needs a client for invoke (or an async_client for ainvoke)")
        arguments = AskUserArguments(questions=questions, timeoutSeconds=timeoutSeconds)
        result = self.client.ask_user(
            questions_of(arguments), self.to, timeout_seconds=arguments.timeoutSeconds, session_id=self.session_id
        )
        return tool_output(result)

    async def _arun(self, questions: list[Any], timeoutSeconds: int | None = None, **kwargs: Any) -> str:  # noqa: N803
        if self.async_client is None:
            return str(await super()._arun(questions, timeoutSeconds=timeoutSeconds, **kwargs))
        arguments = AskUserArguments(questions=questions, timeoutSeconds=timeoutSeconds)
        result = await self.async_client.ask_user(
            questions_of(arguments), self.to, timeout_seconds=arguments.timeoutSeconds, session_id=self.session_id
        )
        return tool_output(result)
