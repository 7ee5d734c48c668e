"""The clients against the real askgate, the person answering on the web page."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from conftest import AGENT_TOKEN, SOLO_TOKEN, Askgate, deploy_question

import askgate
from askgate import (
    Answered,
    AsyncClient,
    AuthenticationError,
    Client,
    ConflictError,
    ConnectionFailedError,
    DeliveryFailed,
    InvalidRequestError,
    NoAnswer,
    NotFoundError,
    Question,
)

T = TypeVar("T")

NOTIFY = {
    "id": "notify",
    "header": "Notify",
    "question": "Whom should the release note go to?",
    "options": [{"label": "Team (Recommended)"}, {"label": "Customers"}, {"label": "Nobody"}],
    "multiSelect": True,
}


def in_background(call: Callable[[], T]) -> tuple[ThreadPoolExecutor, Future[T]]:
    pool = ThreadPoolExecutor(max_workers=1)
    return pool, pool.submit(call)


def outcome(pool: ThreadPoolExecutor, future: Future[T], timeout: float = 30) -> T:
    try:
        return future.result(timeout=timeout)
    finally:
        pool.shutdown(wait=False)


def test_a_question_answered_on_the_page_returns_the_exact_typed_result(askgate: Askgate) -> None:
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        pool, future = in_background(
            lambda: client.ask_user([deploy_question(), NOTIFY], to="me", timeout_seconds=600, session_id="s-1")
        )
        [shown] = askgate.pending_on_page()
        assert [q["id"] for q in shown["request"]["questions"]] == ["deploy_target", "notify"]
        assert not future.done()
        askgate.answer_on_page(
            shown["id"],
            {"deploy_target": {"options": [1], "text": None}, "notify": {"options": [0, 1], "text": None}},
        )
        result = outcome(pool, future)
    assert result == Answered(answers={"deploy_target": ["Production"], "notify": ["Team (Recommended)", "Customers"]})
    assert isinstance(result, Answered)
    assert result.to_tool_result() == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"], "notify": ["Team (Recommended)", "Customers"]}},
    }
    question = result.question
    assert isinstance(question, Question)
    assert (question.id, question.status, question.to, question.session_id) == (shown["id"], "answered", "me", "s-1")
    assert question.answered_by is not None and question.answered_by.display_name == "Me"
    assert question.deliveries[0].channel == "web"
    assert question.result is not None and question.result.status == "answered"


def test_the_async_client_returns_an_answer_in_the_persons_own_words(askgate: Askgate) -> None:
    async def scenario() -> askgate.AskResult:
        async with AsyncClient(askgate.base_url, AGENT_TOKEN) as client:
            waiting = asyncio.create_task(client.ask_user([deploy_question()], to="me"))
            [shown] = await asyncio.to_thread(askgate.pending_on_page)
            await asyncio.to_thread(
                askgate.answer_on_page, shown["id"], {"deploy_target": {"options": [], "text": "Canary first"}}
            )
            return await asyncio.wait_for(waiting, 30)

    assert asyncio.run(scenario()) == Answered(answers={"deploy_target": ["Canary first"]})


def test_ask_get_wait_and_the_idempotency_key(askgate: Askgate) -> None:
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        question = client.ask([deploy_question()], to="me", timeout_seconds=120, idempotency_key="key-1", run_id="r-1")
        assert isinstance(question, Question)
        assert (question.status, question.to, question.run_id, question.ended) == ("pending", "me", "r-1", False)
        assert question.expires_at is not None and question.created_at is not None
        assert (question.expires_at - question.created_at).total_seconds() == pytest.approx(120, abs=1)
        again = client.ask([deploy_question()], to="me", timeout_seconds=120, idempotency_key="key-1", run_id="r-1")
        assert again.id == question.id
        assert client.get(question.id).status == "pending"
        held = time.monotonic()
        assert client.get(question.id, wait=1).status == "pending"
        assert time.monotonic() - held >= 0.9
        askgate.answer_on_page(question.id, {"deploy_target": {"options": [0], "text": None}})
        assert client.wait(question.id) == Answered(answers={"deploy_target": ["Staging (Recommended)"]})
        ended = client.get(question.id)
        assert ended.status == "answered" and ended.resolved_at is not None


def test_to_left_out_is_the_tokens_only_recipient(askgate: Askgate) -> None:
    with Client(askgate.base_url, SOLO_TOKEN) as client:
        question = client.ask([deploy_question()])
        assert question.to == "me"
        client.cancel(question.id)
    with Client(askgate.base_url, AGENT_TOKEN) as client, pytest.raises(InvalidRequestError) as refused:
        # Agent `one` may ask everybody: askgate needs to be told whom.
        client.ask([deploy_question()])
    assert (refused.value.code, refused.value.path, refused.value.status_code) == ("missing_field", "to", 422)


def test_a_blocking_ask_user_survives_kill_9_and_a_restart(askgate: Askgate) -> None:
    with Client(askgate.base_url, AGENT_TOKEN, poll_seconds=50) as client:
        pool, future = in_background(
            lambda: client.ask_user([deploy_question()], to="me", timeout_seconds=600, session_id="agent-session")
        )
        [before] = askgate.pending_on_page()
        askgate.kill()
        askgate.start()
        # The same question, still pending, and only it: the retry re-attached.
        [after] = askgate.pending_on_page()
        assert after["id"] == before["id"]
        assert not future.done()
        askgate.answer_on_page(after["id"], {"deploy_target": {"options": [1], "text": None}})
        result = outcome(pool, future)
    assert result == Answered(answers={"deploy_target": ["Production"]})
    assert result.question is not None and result.question.id == before["id"]
    state = askgate.http.get("/web/svc-test-web-key-me-0123456789abcdefghijklmnop/api/state").json()
    assert state["pendingCount"] == 0 and len(state["recent"]) == 1


def test_ask_user_waits_for_an_askgate_that_is_down_when_it_asks(askgate: Askgate) -> None:
    askgate.kill()
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        pool, future = in_background(
            lambda: client.ask_user([deploy_question()], to="me", idempotency_key="asked-while-down")
        )
        askgate.start()
        [shown] = askgate.pending_on_page()
        askgate.answer_on_page(shown["id"], {"deploy_target": {"options": [0], "text": None}})
        assert outcome(pool, future) == Answered(answers={"deploy_target": ["Staging (Recommended)"]})


def test_an_askgate_that_cannot_be_reached_is_a_typed_error(askgate: Askgate) -> None:
    askgate.kill()
    with Client(askgate.base_url, AGENT_TOKEN, retry_for=0.5) as client:
        with pytest.raises(ConnectionFailedError) as refused:
            client.ask_user([deploy_question()], to="me")
        assert refused.value.code == "connection_failed"
        with pytest.raises(ConnectionFailedError):
            client.get("q_x")


def test_cancel_ends_a_waiting_ask_user_with_no_answer(askgate: Askgate) -> None:
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        pool, future = in_background(lambda: client.ask_user([deploy_question()], to="me"))
        [shown] = askgate.pending_on_page()
        cancelled = client.cancel(shown["id"])
        assert (cancelled.status, cancelled.ended) == ("cancelled", True)
        result = outcome(pool, future)
        assert result == NoAnswer(reason="cancelled")
        assert result.to_tool_result() == {"status": "no_answer"}
        # Idempotent.
        assert client.cancel(shown["id"]).status == "cancelled"


def test_a_skip_on_the_page_is_no_answer_skipped(askgate: Askgate) -> None:
    async def scenario() -> askgate.AskResult:
        async with AsyncClient(askgate.base_url, AGENT_TOKEN) as client:
            question = await client.ask([deploy_question()], to="me")
            await asyncio.to_thread(askgate.skip_on_page, question.id)
            return await client.wait(question.id)

    assert asyncio.run(scenario()) == NoAnswer(reason="skipped")


def test_a_question_nobody_answers_expires_with_no_answer(askgate: Askgate) -> None:
    # 30 s is the shortest timeout the contract allows.
    with Client(askgate.base_url, AGENT_TOKEN, poll_seconds=10) as client:
        started = time.monotonic()
        result = client.ask_user([deploy_question()], to="me", timeout_seconds=30)
    assert result == NoAnswer(reason="expired")
    assert 29 <= time.monotonic() - started < 60
    assert result.question is not None and result.question.status == "expired"


def test_validation_errors_come_back_typed_with_code_and_path(askgate: Askgate) -> None:
    bad = {"id": "Deploy Target", "header": "Deploy", "question": "Where?", "options": [{"label": "Staging"}]}
    with Client(askgate.base_url, AGENT_TOKEN) as client:
        with pytest.raises(InvalidRequestError) as refused:
            client.ask_user([bad], to="me")
        error = refused.value
        assert error.status_code == 422
        problems = {(problem.code, problem.path) for problem in error.errors}
        assert ("invalid_id", "questions[0].id") in problems, error.errors
        assert ("option_count", "questions[0].options") in problems, error.errors
        assert (error.code, error.path) in problems
        assert error.message

        with pytest.raises(InvalidRequestError) as refused:
            client.ask([deploy_question()], to="nobody")
        assert (refused.value.code, refused.value.path) == ("unknown_recipient", "to")

        # This agent takes no callbacks: a question's own callbackUrl is
        # refused at its path, before anything is asked.
        with pytest.raises(InvalidRequestError) as refused:
            client.ask([deploy_question()], to="me", callback_url="https://hooks.example.com/x")
        assert (refused.value.code, refused.value.path) == ("invalid_callback_url", "callbackUrl")

        with pytest.raises(NotFoundError) as refused:
            client.get("q_00000000000000000000000000")
        assert (refused.value.code, refused.value.status_code) == ("not_found", 404)

        first = client.ask([deploy_question()], to="me", session_id="one-at-a-time")
        with pytest.raises(ConflictError) as refused:
            client.ask([deploy_question()], to="me", session_id="one-at-a-time")
        assert (refused.value.code, refused.value.path) == ("question_pending", "sessionId")
        assert first.id in refused.value.message

    with Client(askgate.base_url, "not-a-token") as client, pytest.raises(AuthenticationError) as refused:
        client.ask_user([deploy_question()], to="me")
    assert (refused.value.code, refused.value.status_code) == ("unauthorized", 401)


def test_the_result_types_match_every_ending() -> None:
    answered = Question.model_validate(
        {"id": "q_1", "status": "answered", "result": {"status": "answered", "answers": {"answers": {"a": ["x"]}}}}
    )
    assert askgate.results.result_of(answered) == Answered(answers={"a": ["x"]})
    failed: dict[str, Any] = {
        "id": "q_2",
        "status": "delivery_failed",
        "deliveries": [{"channel": "tg", "status": "failed", "reason": "chat not found", "messages": []}],
        "result": {"status": "delivery_failed"},
    }
    result = askgate.results.result_of(Question.model_validate(failed))
    assert result == DeliveryFailed(reason="chat not found")
    assert result.to_tool_result() == {"status": "delivery_failed"}
    with pytest.raises(ValueError):
        askgate.results.result_of(Question.model_validate({"id": "q_3", "status": "pending"}))
