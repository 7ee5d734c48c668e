"""The MCP suite's client: the official MCP Python SDK driving the real askgate.

Run by tests/e2e/mcp.rs, which starts `askgate serve`, asserts on what this prints
and shows it (with both programs' logs) when something is wrong:

    python client.py --transport http|stdio --mode auto|legacy --base URL \
        --token AGENT_TOKEN --page-key WEB_KEY --askgate PATH [SCENARIO ...]

`http` connects to `<base>/mcp` with `Authorization: Bearer <token>`; `stdio`
launches `askgate mcp --url <base>` with `ASKGATE_TOKEN`, as MCP clients do.
`mode` is the SDK's: `auto` (its default: probe `server/discover`, fall back
to `initialize`) or `legacy` (the `initialize` handshake, as the clients of
2025 speak it). Each scenario opens its own MCP session, plays the agent
through the SDK and the person through the web page's API, and prints one
JSON line: `{"scenario", "seconds", "observed", "transportFaults"}` with what
it saw and what the transport could not read, plus `"error"` (a traceback) if
it broke off. The test decides what is right.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

# Every scenario ends within this, or fails saying where it was.
SCENARIO_TIMEOUT = 30.0
# How long the person looks for a question on the page, and how often.
FIND_TIMEOUT = 10.0
POLL_INTERVAL = 0.05


def dump(value: Any) -> Any:
    """A tool result or listing as its JSON on the wire."""
    return value.model_dump(by_alias=True, mode="json", exclude_none=True)


def describe(error: BaseException) -> dict[str, Any]:
    """An exception as data: its type, text, MCP error fields, and what it grouped."""
    described: dict[str, Any] = {"exception": type(error).__name__, "message": str(error)}
    for field in ("code", "data"):
        if hasattr(error, field):
            try:
                json.dumps(getattr(error, field))
                described[field] = getattr(error, field)
            except TypeError:
                described[field] = repr(getattr(error, field))
    if isinstance(error, BaseExceptionGroup):
        described["exceptions"] = [describe(inner) for inner in error.exceptions]
    if error.__cause__ is not None:
        described["cause"] = describe(error.__cause__)
    return described


async def outcome(call: Awaitable[Any]) -> dict[str, Any]:
    """A call's result as `{"result": …}`, or what it raised as `{"raised": …}`."""
    try:
        return {"result": dump(await call)}
    except Exception as error:  # noqa: BLE001 - what went wrong is the observation
        return {"raised": describe(error)}


class Person:
    """The person answering on askgate's web page (and the agent's HTTP view of a question)."""

    def __init__(self, http: httpx2.AsyncClient, base: str, page_key: str, token: str) -> None:
        self.http = http
        self.base = base
        self.page_key = page_key
        self.token = token

    async def find(self, text: str) -> str:
        """The id of the pending question whose first question reads `text`, once the page shows it."""
        with anyio.fail_after(FIND_TIMEOUT):
            while True:
                state = await self.state()
                for pending in state.get("pending", []):
                    questions = pending.get("request", {}).get("questions", [])
                    if questions and questions[0].get("question") == text:
                        return pending["id"]
                await anyio.sleep(POLL_INTERVAL)

    async def on_page(self, text: str) -> bool:
        """Whether some pending question on the page reads `text`."""
        state = await self.state()
        return any(
            any(question.get("question") == text for question in pending.get("request", {}).get("questions", []))
            for pending in state.get("pending", [])
        )

    async def state(self) -> dict[str, Any]:
        response = await self.http.get(f"{self.base}/web/{self.page_key}/api/state")
        response.raise_for_status()
        return response.json()

    async def answer(self, question_id: str, answers: dict[str, Any]) -> dict[str, Any]:
        """Answers on the page: `answers` maps question ids to `{"options": [...], "text": ...}`."""
        response = await self.http.post(
            f"{self.base}/web/{self.page_key}/api/questions/{question_id}/answer", json={"answers": answers}
        )
        return {"status": response.status_code, "body": response.json()}

    async def resource(self, question_id: str) -> dict[str, Any]:
        """`GET /v1/questions/{id}` as the asking agent."""
        response = await self.http.get(
            f"{self.base}/v1/questions/{question_id}", headers={"Authorization": f"Bearer {self.token}"}
        )
        return {"status": response.status_code, "body": response.json()}

    async def resource_until(self, question_id: str, done: Callable[[str], bool], within: float) -> dict[str, Any]:
        """Polls the resource until its status satisfies `done` or `within` seconds pass; the last one seen."""
        deadline = time.monotonic() + within
        while True:
            seen = await self.resource(question_id)
            if done(seen["body"].get("status", "")) or time.monotonic() > deadline:
                return seen
            await anyio.sleep(POLL_INTERVAL)


class Run:
    """One run of the scenarios, over one transport in one negotiation mode."""

    def __init__(self, args: argparse.Namespace, person: Person) -> None:
        self.args = args
        self.person = person
        # What the transport could not read (over stdio: a line on askgate mcp's
        # stdout that is not an MCP frame), in the sessions of the current scenario.
        self.faults: list[dict[str, Any]] = []

    async def on_message(self, message: Any) -> None:
        """The SDK's message handler: records transport faults, ignores the rest."""
        if isinstance(message, Exception):
            self.faults.append(describe(message))

    @asynccontextmanager
    async def session(self, token: str | None = None, statuses: list[int] | None = None) -> AsyncIterator[Client]:
        """A new MCP session as the agent (`token`, default the agent's own; `""` for none).

        Over HTTP, `statuses` collects the status of every response the SDK got."""
        token = self.args.token if token is None else token
        if self.args.transport == "http":
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            # The SDK's timeouts (30 s, and 300 s to read a response stream).
            timeout = httpx2.Timeout(30.0, read=300.0)

            async def record(response: httpx2.Response) -> None:
                if statuses is not None:
                    statuses.append(response.status_code)

            hooks = {"response": [record]}
            async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks, trust_env=False) as http:
                transport = streamable_http_client(f"{self.args.base}/mcp", http_client=http)
                async with Client(transport, mode=self.args.mode, message_handler=self.on_message) as client:
                    yield client
        else:
            env = {"ASKGATE_TOKEN": token, "RUST_LOG": "info", "NO_PROXY": "127.0.0.1,localhost"}
            server = StdioServerParameters(command=self.args.askgate, args=["mcp", "--url", self.args.base], env=env)
            async with Client(server, mode=self.args.mode, message_handler=self.on_message) as client:
                yield client

    def text(self, scenario: str, question: str) -> str:
        """A question text no other scenario or run asks, so the person finds the right one."""
        return f"[{self.args.transport}/{self.args.mode}/{scenario}] {question}"

    def deploy(self, scenario: str) -> tuple[str, dict[str, Any]]:
        """A one-question `ask_user` call to `me`, and its question's text."""
        text = self.text(scenario, "Where should this build go?")
        arguments = {
            "to": "me",
            "questions": [
                {
                    "id": "deploy_target",
                    "header": "Deploy",
                    "question": text,
                    "options": [
                        {"label": "Staging (Recommended)", "description": "Safe to try"},
                        {"label": "Production"},
                    ],
                }
            ],
        }
        return text, arguments

    async def list_tools(self, observed: dict[str, Any]) -> None:
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version
            observed["tools"] = dump(await client.list_tools())["tools"]

    async def answered(self, observed: dict[str, Any]) -> None:
        """`ask_user` with two questions (one multiSelect), answered on the page while it waits."""
        text, arguments = self.deploy("answered")
        arguments["questions"].append(
            {
                "id": "checks",
                "header": "Checks",
                "question": "Which checks should run before it?",
                "options": [{"label": "Unit tests"}, {"label": "Lint"}, {"label": "Integration"}],
                "multiSelect": True,
            }
        )
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version
            async with anyio.create_task_group() as group:
                started = time.monotonic()

                async def ask() -> None:
                    observed["call"] = await outcome(client.call_tool("ask_user", arguments))
                    observed["callSeconds"] = time.monotonic() - started

                group.start_soon(ask)
                question_id = await self.person.find(text)
                observed["questionId"] = question_id
                observed["pageAnswer"] = await self.person.answer(
                    question_id,
                    {"deploy_target": {"options": [1], "text": None}, "checks": {"options": [0, 2], "text": None}},
                )

    async def pending_then_await(self, observed: dict[str, Any]) -> None:
        """`ask_user` past wait_seconds → pending; `await_answer` → pending again; answered → answered.

        Every call carries a progress token, and records the progress notifications it got."""
        text, arguments = self.deploy("pending_then_await")
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version

            async def call(name: str, arguments: dict[str, Any], key: str) -> None:
                progress: list[dict[str, Any]] = []
                started = time.monotonic()

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    seconds = time.monotonic() - started
                    progress.append({"progress": value, "total": total, "message": message, "seconds": seconds})

                observed[key] = await outcome(client.call_tool(name, arguments, progress_callback=on_progress))
                observed[key]["seconds"] = time.monotonic() - started
                observed[key]["progress"] = progress

            await call("ask_user", arguments, "ask")
            observed["pageQuestionId"] = await self.person.find(text)
            question_id = observed["ask"].get("result", {}).get("structuredContent", {}).get("questionId")
            if not isinstance(question_id, str):
                return
            await call("await_answer", {"questionId": question_id}, "awaitPending")
            async with anyio.create_task_group() as group:
                group.start_soon(call, "await_answer", {"questionId": question_id}, "awaitAnswered")
                # The person answers while await_answer waits.
                await anyio.sleep(0.3)
                observed["pageAnswer"] = await self.person.answer(
                    question_id, {"deploy_target": {"options": [0], "text": None}}
                )

    async def validation(self, observed: dict[str, Any]) -> None:
        """`ask_user` with five problems in two questions."""
        arguments = {
            "to": "me",
            "questions": [
                {"id": "Bad Id", "header": "  ", "question": "Pick one", "options": [{"label": "Only"}]},
                {
                    "id": "second",
                    "header": "Second",
                    "question": self.text("validation", "Which one?"),
                    "options": [{"label": "A"}, {"label": "Other"}],
                    "multiSelect": "yes",
                },
            ],
        }
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version
            observed["call"] = await outcome(client.call_tool("ask_user", arguments))
        observed["onPage"] = await self.person.on_page(self.text("validation", "Which one?"))

    async def cancelled(self, observed: dict[str, Any]) -> None:
        """A waiting `ask_user` given up by the client (the SDK sends notifications/cancelled):
        the question is cancelled while the session is still open; the session may ask again."""
        text, arguments = self.deploy("cancelled")
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version
            async with anyio.create_task_group() as group:
                scope = anyio.CancelScope()

                async def ask() -> None:
                    with scope:
                        observed["call"] = await outcome(client.call_tool("ask_user", arguments))

                group.start_soon(ask)
                question_id = await self.person.find(text)
                observed["questionId"] = question_id
                scope.cancel()
            observed["callReturned"] = "call" in observed
            cancelled_at = time.monotonic()
            observed["resource"] = await self.person.resource_until(question_id, lambda s: s != "pending", 10.0)
            observed["resourceSeconds"] = time.monotonic() - cancelled_at
            # The session's one pending question is gone: it may ask again.
            again_text, again = self.deploy("cancelled-again")
            async with anyio.create_task_group() as group:

                async def ask_again() -> None:
                    observed["again"] = await outcome(client.call_tool("ask_user", again))

                group.start_soon(ask_again)
                again_id = await self.person.find(again_text)
                observed["againAnswer"] = await self.person.answer(
                    again_id, {"deploy_target": {"options": [1], "text": None}}
                )

    async def question_pending(self, observed: dict[str, Any]) -> None:
        """A second `ask_user` in the session while the first waits; then cancel_question ends the first."""
        first_text, first = self.deploy("question_pending")
        second_text, second = self.deploy("question_pending-second")
        async with self.session() as client:
            observed["protocolVersion"] = client.protocol_version
            async with anyio.create_task_group() as group:

                async def ask() -> None:
                    observed["first"] = await outcome(client.call_tool("ask_user", first))

                group.start_soon(ask)
                question_id = await self.person.find(first_text)
                observed["questionId"] = question_id
                observed["second"] = await outcome(client.call_tool("ask_user", second))
                observed["secondOnPage"] = await self.person.on_page(second_text)
                observed["cancel"] = await outcome(client.call_tool("cancel_question", {"questionId": question_id}))
            observed["resource"] = await self.person.resource(question_id)

    async def no_token(self, observed: dict[str, Any]) -> None:
        """Connecting without a token, and with a wrong one: the SDK is refused."""
        for key, token in (("without", ""), ("wrong", "not-a-token")):
            statuses: list[int] = []
            observed[key] = {"httpStatuses": statuses}
            try:
                with anyio.fail_after(10):
                    async with self.session(token, statuses) as client:
                        observed[key]["connected"] = client.protocol_version
                        observed[key]["listTools"] = await outcome(client.list_tools())
            except Exception as error:  # noqa: BLE001 - the refusal is the observation
                observed[key]["raised"] = describe(error)


SCENARIOS = ["list_tools", "answered", "pending_then_await", "validation", "cancelled", "question_pending", "no_token"]


async def main() -> None:
    # The SDK's warnings (such as "Session termination failed: 202" when it
    # closes a session) go to stderr, which the test reads.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(levelname)s: %(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["http", "stdio"], required=True)
    parser.add_argument("--mode", choices=["auto", "legacy"], required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--page-key", required=True)
    parser.add_argument("--askgate", required=True)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"some of {', '.join(SCENARIOS)}")
    args = parser.parse_args()
    unknown = [scenario for scenario in args.scenarios if scenario not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; they are {SCENARIOS}")
    args.scenarios = args.scenarios or SCENARIOS
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0), trust_env=False) as http:
        run = Run(args, Person(http, args.base, args.page_key, args.token))
        for scenario in args.scenarios:
            observed: dict[str, Any] = {}
            run.faults = []
            report: dict[str, Any] = {"scenario": scenario, "observed": observed, "transportFaults": run.faults}
            started = time.monotonic()
            try:
                with anyio.fail_after(SCENARIO_TIMEOUT):
                    await getattr(run, scenario)(observed)
            except BaseException as error:  # noqa: BLE001 - reported, and the next scenario runs
                if isinstance(error, KeyboardInterrupt):
                    raise
                report["error"] = "".join(traceback.format_exception(error))
            report["seconds"] = round(time.monotonic() - started, 3)
            print(json.dumps(report), flush=True)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
