"""The askgate clients: :class:`Client` (blocking) and :class:`AsyncClient`.

``ask_user`` asks with ``POST /v1/questions`` under an ``Idempotency-Key``
and then long-polls ``GET /v1/questions/{id}?wait=N`` until the question
ends. Both calls are safe to repeat, so a dropped connection, a proxy's
timeout or a restart of askgate costs a retry, never a second question or a
lost answer: before the question's id is known the same keyed ``POST`` finds
the question the first one asked (askgate keeps keys in its database), and
after it the ``GET`` picks the answer up wherever askgate stands. (``POST
/v1/ask`` would hold one connection for the whole wait, and a keyed call
whose connection broke keeps its question only for a grace period.)
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter

from .errors import AskgateError, ConnectionFailedError, from_response
from .models import AgentInfo, AskQuestion, CreateQuestionRequest, EscalationStep, Question
from .results import AskResult, result_of

__all__ = ["AsyncClient", "Client", "QuestionsInput"]

QuestionsInput = Sequence[AskQuestion | Mapping[str, Any]]
"""Questions as models or as the JSON objects of the ``ask_user`` contract."""

_QUESTIONS = TypeAdapter(list[AskQuestion])
_Model = TypeVar("_Model", bound=BaseModel)
_T = TypeVar("_T")

#: Statuses worth retrying: askgate restarting behind a proxy, or not saving just now.
_RETRY_STATUSES = frozenset({502, 503, 504})


class _RetryableError(Exception):
    """A failure worth retrying: no connection, or a 502/503/504 (``response``)."""

    def __init__(self, cause: str, response: httpx.Response | None = None) -> None:
        super().__init__(cause)
        self.response = response

    @property
    def after(self) -> float | None:
        """The reply's ``Retry-After``, in seconds, if it had one."""
        after = self.response.headers.get("retry-after") if self.response is not None else None
        return float(after) if after and after.isdigit() else None


class _Base:
    """What both clients share: the request bodies, the reading of replies,
    and the retry schedule."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        poll_seconds: int = 50,
        retry_for: float = 300.0,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        #: How long one ``GET ?wait=N`` holds, under common proxies' 60 s.
        self.poll_seconds = poll_seconds
        #: How long ``ask_user`` and ``wait`` keep retrying while askgate
        #: cannot be reached, before :class:`ConnectionFailedError`.
        self.retry_for = retry_for
        #: The timeout of one request that does not wait.
        self.timeout = timeout
        self._agent: AgentInfo | None = None

    def _request_body(
        self,
        questions: QuestionsInput,
        to: str | None,
        timeout_seconds: int | None,
        session_id: str | None,
        run_id: str | None,
        tool_call_id: str | None,
        remind: Iterable[str] | None,
        escalate: Iterable[EscalationStep | Mapping[str, Any]] | None,
        callback_url: str | None = None,
    ) -> dict[str, Any]:
        request = CreateQuestionRequest(
            to=to,
            questions=_QUESTIONS.validate_python(list(questions)),
            timeout_seconds=timeout_seconds,
            session_id=session_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            remind=list(remind) if remind is not None else None,
            escalate=[EscalationStep.model_validate(step) for step in escalate] if escalate is not None else None,
            callback_url=callback_url,
        )
        return request.body()

    def _only_recipient(self, agent: AgentInfo) -> str | None:
        """The recipient to ask when ``to`` is left out: the token's only one."""
        return agent.recipients[0].name if len(agent.recipients) == 1 else None

    @staticmethod
    def _read(response: httpx.Response, model: type[_Model]) -> _Model:
        """The reply as ``model``, or the typed exception of a refusal; a
        502/503/504 is :class:`_RetryableError`'d when the caller retries."""
        if response.status_code in _RETRY_STATUSES:
            raise _RetryableError(f"HTTP {response.status_code}", response)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise from_response(response.status_code, body, response.text)
        return model.model_validate_json(response.content)

    def _backoff(self, attempt: int, after: float | None) -> float:
        """The pause before retry ``attempt`` (0.25 s doubling to 5 s, jittered),
        or what askgate's ``Retry-After`` asked for."""
        if after is not None:
            return min(after, 30.0)
        return min(5.0, 0.25 * 2.0**attempt) * random.uniform(0.75, 1.25)

    def _refusal(self, retry: _RetryableError) -> AskgateError:
        """What a call made once raises for a failure it does not retry."""
        if retry.response is not None:
            response = retry.response
            try:
                body = response.json()
            except ValueError:
                body = None
            return from_response(response.status_code, body, response.text)
        return ConnectionFailedError("connection_failed", f"askgate at {self.base_url} could not be reached ({retry}).")

    def _give_up(self, cause: str) -> ConnectionFailedError:
        return ConnectionFailedError(
            "connection_failed",
            f"askgate at {self.base_url} could not be reached for {self.retry_for:g} s ({cause}); "
            "is `askgate serve` running there?",
        )


class Client(_Base):
    """A blocking client of askgate's agent API.

    ``Client("http://127.0.0.1:8080", token)``; use it as a context manager
    or call :meth:`close`. ``poll_seconds`` is how long one long-poll holds
    (keep it under your proxies' idle timeout), ``retry_for`` how long
    waiting calls keep retrying an askgate that cannot be reached.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        poll_seconds: int = 50,
        retry_for: float = 300.0,
        timeout: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, token, poll_seconds=poll_seconds, retry_for=retry_for, timeout=timeout)
        self._http = http_client or httpx.Client()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def _send(
        self, method: str, path: str, model: type[_Model], *, timeout: float | None = None, **kwargs: Any
    ) -> _Model:
        try:
            response = self._http.request(
                method,
                self.base_url + path,
                headers={**self._headers, **kwargs.pop("headers", {})},
                timeout=timeout or self.timeout,
                **kwargs,
            )
        except httpx.TransportError as error:
            raise _RetryableError(f"{type(error).__name__}: {error}") from error
        return self._read(response, model)

    def _retrying(self, call: Callable[[], _T]) -> _T:
        """``call()`` until it does not fail in a retryable way, for up to
        ``retry_for`` seconds of failures in a row."""
        attempt = 0
        failing_since: float | None = None
        while True:
            try:
                return call()
            except _RetryableError as retry:
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > self.retry_for:
                    raise self._give_up(str(retry)) from retry
                time.sleep(self._backoff(attempt, retry.after))
                attempt += 1

    def _once(self, call: Callable[[], _T]) -> _T:
        """``call()`` once; a retryable failure becomes its typed error."""
        try:
            return call()
        except _RetryableError as retry:
            raise self._refusal(retry) from retry

    def agent(self) -> AgentInfo:
        """``GET /v1/agent``: this token's name and the recipients it may ask."""
        return self._once(lambda: self._send("GET", "/v1/agent", AgentInfo))

    def ask(
        self,
        questions: QuestionsInput,
        to: str | None = None,
        *,
        timeout_seconds: int | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        remind: Iterable[str] | None = None,
        escalate: Iterable[EscalationStep | Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
        callback_url: str | None = None,
    ) -> Question:
        """``POST /v1/questions``: asks and returns at once with the question
        resource. With ``idempotency_key`` (or ``tool_call_id``), asking
        again with the same request returns the same question. ``to`` left
        out is the token's only recipient, when it has one. ``callback_url``:
        askgate POSTs the result there when the question ends, signed by
        Standard Webhooks (docs/webhooks.md), instead of being waited for."""
        if to is None:
            self._agent = self._agent or self.agent()
            to = self._only_recipient(self._agent)
        body = self._request_body(
            questions, to, timeout_seconds, session_id, run_id, tool_call_id, remind, escalate, callback_url
        )
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._once(lambda: self._send("POST", "/v1/questions", Question, json=body, headers=headers))

    def get(self, question_id: str, *, wait: int | None = None) -> Question:
        """``GET /v1/questions/{id}``; ``wait`` holds up to that many seconds
        until it ends."""
        params = {"wait": wait} if wait else None
        timeout = self.timeout + (wait or 0)
        return self._once(
            lambda: self._send("GET", f"/v1/questions/{question_id}", Question, params=params, timeout=timeout)
        )

    def wait(self, question_id: str) -> AskResult:
        """Waits until the question ends (long-polling, retrying while askgate
        cannot be reached) and returns its result."""
        while True:
            question = self._retrying(lambda: self._poll(question_id))
            if question.ended:
                return result_of(question)

    def _poll(self, question_id: str) -> Question:
        return self._send(
            "GET",
            f"/v1/questions/{question_id}",
            Question,
            params={"wait": self.poll_seconds},
            timeout=self.timeout + self.poll_seconds,
        )

    def cancel(self, question_id: str) -> Question:
        """``POST /v1/questions/{id}/cancel``: ends it with no answer
        (idempotent); returns the question as it ended."""
        return self._once(lambda: self._send("POST", f"/v1/questions/{question_id}/cancel", Question))

    def ask_user(
        self,
        questions: QuestionsInput,
        to: str | None = None,
        *,
        timeout_seconds: int | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        remind: Iterable[str] | None = None,
        escalate: Iterable[EscalationStep | Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> AskResult:
        """Asks and blocks until the question ends: :class:`~askgate.Answered`,
        :class:`~askgate.NoAnswer` or :class:`~askgate.DeliveryFailed`.

        Safe across dropped connections and restarts of askgate: every
        attempt carries the same idempotency key (``idempotency_key``, else
        ``tool_call_id``, else a new random one), so a retry finds the
        question the first attempt asked. Refusals raise
        :class:`~askgate.AskgateError` subclasses.
        """
        if to is None:
            self._agent = self._agent or self._retrying(lambda: self._send("GET", "/v1/agent", AgentInfo))
            to = self._only_recipient(self._agent)
        body = self._request_body(questions, to, timeout_seconds, session_id, run_id, tool_call_id, remind, escalate)
        key = idempotency_key or tool_call_id or f"askgate-py-{uuid.uuid4()}"
        question = self._retrying(
            lambda: self._send("POST", "/v1/questions", Question, json=body, headers={"Idempotency-Key": key})
        )
        if question.ended:
            return result_of(question)
        return self.wait(question.id)


class AsyncClient(_Base):
    """The asyncio client: the same operations as :class:`Client`, awaited.

    Use it as an async context manager or call :meth:`aclose`.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        poll_seconds: int = 50,
        retry_for: float = 300.0,
        timeout: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, token, poll_seconds=poll_seconds, retry_for=retry_for, timeout=timeout)
        self._http = http_client or httpx.AsyncClient()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    async def _send(
        self, method: str, path: str, model: type[_Model], *, timeout: float | None = None, **kwargs: Any
    ) -> _Model:
        try:
            response = await self._http.request(
                method,
                self.base_url + path,
                headers={**self._headers, **kwargs.pop("headers", {})},
                timeout=timeout or self.timeout,
                **kwargs,
            )
        except httpx.TransportError as error:
            raise _RetryableError(f"{type(error).__name__}: {error}") from error
        return self._read(response, model)

    async def _retrying(self, call: Callable[[], Awaitable[_T]]) -> _T:
        attempt = 0
        failing_since: float | None = None
        while True:
            try:
                return await call()
            except _RetryableError as retry:
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > self.retry_for:
                    raise self._give_up(str(retry)) from retry
                await asyncio.sleep(self._backoff(attempt, retry.after))
                attempt += 1

    async def _once(self, call: Callable[[], Awaitable[_T]]) -> _T:
        try:
            return await call()
        except _RetryableError as retry:
            raise self._refusal(retry) from retry

    async def agent(self) -> AgentInfo:
        """``GET /v1/agent``: this token's name and the recipients it may ask."""
        return await self._once(lambda: self._send("GET", "/v1/agent", AgentInfo))

    async def ask(
        self,
        questions: QuestionsInput,
        to: str | None = None,
        *,
        timeout_seconds: int | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        remind: Iterable[str] | None = None,
        escalate: Iterable[EscalationStep | Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
        callback_url: str | None = None,
    ) -> Question:
        """``POST /v1/questions``: as :meth:`Client.ask`."""
        if to is None:
            self._agent = self._agent or await self.agent()
            to = self._only_recipient(self._agent)
        body = self._request_body(
            questions, to, timeout_seconds, session_id, run_id, tool_call_id, remind, escalate, callback_url
        )
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return await self._once(lambda: self._send("POST", "/v1/questions", Question, json=body, headers=headers))

    async def get(self, question_id: str, *, wait: int | None = None) -> Question:
        """``GET /v1/questions/{id}``: as :meth:`Client.get`."""
        params = {"wait": wait} if wait else None
        timeout = self.timeout + (wait or 0)
        return await self._once(
            lambda: self._send("GET", f"/v1/questions/{question_id}", Question, params=params, timeout=timeout)
        )

    async def wait(self, question_id: str) -> AskResult:
        """Waits until the question ends: as :meth:`Client.wait`."""
        while True:
            question = await self._retrying(
                lambda: self._send(
                    "GET",
                    f"/v1/questions/{question_id}",
                    Question,
                    params={"wait": self.poll_seconds},
                    timeout=self.timeout + self.poll_seconds,
                )
            )
            if question.ended:
                return result_of(question)

    async def cancel(self, question_id: str) -> Question:
        """``POST /v1/questions/{id}/cancel``: as :meth:`Client.cancel`."""
        return await self._once(lambda: self._send("POST", f"/v1/questions/{question_id}/cancel", Question))

    async def ask_user(
        self,
        questions: QuestionsInput,
        to: str | None = None,
        *,
        timeout_seconds: int | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        remind: Iterable[str] | None = None,
        escalate: Iterable[EscalationStep | Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> AskResult:
        """Asks and waits until the question ends: as :meth:`Client.ask_user`."""
        if to is None:
            agent = self._agent
            if agent is None:
                agent = self._agent = await self._retrying(lambda: self._send("GET", "/v1/agent", AgentInfo))
            to = self._only_recipient(agent)
        body = self._request_body(questions, to, timeout_seconds, session_id, run_id, tool_call_id, remind, escalate)
        key = idempotency_key or tool_call_id or f"askgate-py-{uuid.uuid4()}"
        question = await self._retrying(
            lambda: self._send("POST", "/v1/questions", Question, json=body, headers={"Idempotency-Key": key})
        )
        if question.ended:
            return result_of(question)
        return await self.wait(question.id)
