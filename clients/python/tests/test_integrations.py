"""The framework tools, invoked the way their frameworks invoke a tool (no
model): LangChain's ``invoke``/``ainvoke`` with the arguments a model would
give, and the OpenAI Agents SDK's ``on_invoke_tool(context, json_arguments)``.
Each returns the exact ``ask_user`` tool result the page's answer makes."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext
from conftest import AGENT_TOKEN, SOLO_TOKEN, Askgate, deploy_question
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from askgate import TOOL_DESCRIPTION, AsyncClient, Client
from askgate.integrations.langchain import AskUserTool
from askgate.integrations.openai_agents import ask_user_tool

ARGUMENTS: dict[str, Any] = {"questions": [deploy_question()], "timeoutSeconds": 300}
STAGING = {"status": "answered", "answers": {"answers": {"deploy_target": ["Staging (Recommended)"]}}}


def answer_first_pending(askgate: Askgate, option: int = 0) -> str:
    [shown] = askgate.pending_on_page()
    askgate.answer_on_page(shown["id"], {"deploy_target": {"options": [option], "text": None}})
    return str(shown["id"])


def test_the_langchain_tool_invoked_returns_the_answer(askgate: Askgate) -> None:
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        tool = AskUserTool(client=client, to="me")
        assert isinstance(tool, BaseTool)
        assert (tool.name, tool.description) == ("ask_user", TOOL_DESCRIPTION)
        assert set(tool.args) == {"questions", "timeoutSeconds"}
        with ThreadPoolExecutor(max_workers=1) as pool:
            output = pool.submit(tool.invoke, ARGUMENTS)
            answer_first_pending(askgate)
            assert json.loads(output.result(timeout=30)) == STAGING

            # As a model's tool call: LangChain answers with a ToolMessage.
            call = {"name": "ask_user", "args": ARGUMENTS, "id": "call_lc_1", "type": "tool_call"}
            message = pool.submit(tool.invoke, call)
            answer_first_pending(askgate, option=1)
            result = message.result(timeout=30)
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call_lc_1"
    assert json.loads(str(result.content)) == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


def test_the_langchain_tool_ainvoked_returns_the_answer(askgate: Askgate) -> None:
    async def scenario() -> str:
        async with AsyncClient(askgate.base_url, SOLO_TOKEN) as client:
            # No `to`: the token's only recipient.
            tool = AskUserTool(async_client=client)
            waiting = asyncio.create_task(tool.ainvoke(ARGUMENTS))
            await asyncio.to_thread(answer_first_pending, askgate)
            return str(await asyncio.wait_for(waiting, 30))

    assert json.loads(asyncio.run(scenario())) == STAGING


def test_the_openai_agents_tool_invoked_returns_the_answer(askgate: Askgate) -> None:
    async def scenario() -> tuple[str, str]:
        async with AsyncClient(askgate.base_url, AGENT_TOKEN) as client:
            tool = ask_user_tool(client, to="me")
            assert isinstance(tool, FunctionTool)
            assert (tool.name, tool.description, tool.strict_json_schema) == ("ask_user", TOOL_DESCRIPTION, True)
            assert tool.params_json_schema["required"] == ["questions", "timeoutSeconds"]
            json_arguments = json.dumps(ARGUMENTS)
            context = ToolContext(
                context=None, tool_name="ask_user", tool_call_id="call_oa_1", tool_arguments=json_arguments
            )
            waiting = asyncio.create_task(tool.on_invoke_tool(context, json_arguments))
            await asyncio.to_thread(answer_first_pending, askgate)
            first = str(await asyncio.wait_for(waiting, 30))
            # The SDK's tool call id is the idempotency key: the same call
            # again (a retried run) finds the question it asked, answered.
            again = str(await asyncio.wait_for(tool.on_invoke_tool(context, json_arguments), 30))
            return first, again

    first, again = asyncio.run(scenario())
    assert json.loads(first) == STAGING
    assert json.loads(again) == STAGING
