"""askgate's Python client: ask people structured questions from AI agents
and wait for the answer.

    from askgate import Client, Answered

    with Client("http://127.0.0.1:8080", token) as client:
        result = client.ask_user([...], to="alice")
"""

from .client import AsyncClient, Client, QuestionsInput
from .errors import (
    AskgateError,
    AuthenticationError,
    ConflictError,
    ConnectionFailedError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    UnavailableError,
)
from .guidance import TOOL_DESCRIPTION, TOOL_NAME
from .models import AskQuestion, Option, Question
from .results import Answered, AskResult, DeliveryFailed, NoAnswer

__version__ = "0.1.0"

__all__ = [
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "Answered",
    "AskQuestion",
    "AskResult",
    "AskgateError",
    "AsyncClient",
    "AuthenticationError",
    "Client",
    "ConflictError",
    "ConnectionFailedError",
    "DeliveryFailed",
    "InvalidRequestError",
    "NoAnswer",
    "NotFoundError",
    "Option",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Question",
    "QuestionsInput",
    "RateLimitedError",
    "UnavailableError",
]
