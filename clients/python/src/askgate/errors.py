"""The exceptions of the askgate client. Every refusal askgate answers with
becomes an :class:`AskgateError` subclass chosen by the HTTP status, carrying
askgate's ``code``, ``path`` (the JSON path of the offending value, when it
names one) and ``message``, and every problem when there were several."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as _PydanticError

from .models import ErrorBody, ErrorProblem

__all__ = [
    "AskgateError",
    "AuthenticationError",
    "ConflictError",
    "ConnectionFailedError",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitedError",
    "UnavailableError",
]


class AskgateError(Exception):
    """askgate refused a request (or could not be reached: see
    :class:`ConnectionFailedError`)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: str | None = None,
        status_code: int | None = None,
        errors: list[ErrorProblem] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" + (f" (at {path})" if path else ""))
        #: askgate's error code, e.g. ``invalid_length`` or ``not_found``.
        self.code = code
        #: askgate's sentence about it.
        self.message = message
        #: The JSON path of the offending value (``questions[0].options``), if any.
        self.path = path
        #: The HTTP status, or ``None`` when askgate could not be reached.
        self.status_code = status_code
        #: Every problem, when askgate reported several (else the one above).
        self.errors: list[ErrorProblem] = errors or [ErrorProblem(code=code, path=path, message=message)]


class InvalidRequestError(AskgateError):
    """400 or 422: the request is malformed or not valid (every problem is in ``errors``)."""


class AuthenticationError(AskgateError):
    """401: no agent token, or one askgate does not know."""


class PermissionDeniedError(AskgateError):
    """403: the token may not ask this recipient, or a sub-agent asked."""


class NotFoundError(AskgateError):
    """404: no such question (or not this agent's)."""


class ConflictError(AskgateError):
    """409: ``question_pending``, the session already waits for an answer."""


class PayloadTooLargeError(AskgateError):
    """413: the body is larger than askgate's ``max_body_bytes``."""


class RateLimitedError(AskgateError):
    """429: ``too_many_pending``."""


class UnavailableError(AskgateError):
    """503: askgate could not save just now; nothing changed."""


class ConnectionFailedError(AskgateError):
    """askgate could not be reached (or kept failing) for longer than the
    client retries: ``code`` is ``connection_failed``."""


_BY_STATUS: dict[int, type[AskgateError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: UnavailableError,
}


def from_response(status_code: int, body: Any, text: str) -> AskgateError:
    """The exception for an error response with JSON ``body`` (or only ``text``)."""
    kind = _BY_STATUS.get(status_code, AskgateError)
    try:
        detail = ErrorBody.model_validate(body).error
    except _PydanticError:
        return kind("http_error", f"HTTP {status_code}: {text[:400]}", status_code=status_code)
    return kind(detail.code, detail.message, path=detail.path, status_code=status_code, errors=detail.errors)
