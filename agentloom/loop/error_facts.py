"""What a summary says of an error: facts about it (its type, status, phase, whether the
request was sent), never its text, and a provider failure named by its kind."""

from __future__ import annotations

from typing import Any

from agentloom.errors import AgentLoopError, ProviderError, provider_error_class
from agentloom.providers import AttemptRecord


def attr(obj: object, name: str) -> Any:
    return getattr(obj, name, None) if obj is not None else None


def error_fields(error: BaseException, attempts: list[AttemptRecord]) -> dict[str, Any]:
    """Facts about the error, never its text. The cause of a wrapped error is what failed."""

    root: BaseException = error
    # A plain AgentLoopError wraps what failed; its subclasses (budget ends, typed
    # provider failures) are what failed.
    if type(error) is AgentLoopError and error.__cause__ is not None:
        root = error.__cause__
    status = attr(root, "status")
    sent_flags = [a.request_sent for a in attempts]
    attempts_sent: int | None
    if not attempts or all(s is None for s in sent_flags):
        attempts_sent = None
    else:
        attempts_sent = sum(1 for s in sent_flags if s is True)
    request_sent = attr(root, "request_sent")
    return {
        "error_type": type(root).__name__,
        "provider_status_code": status if isinstance(status, int) else None,
        "error_phase": attr(root, "phase"),
        "error_request_sent": request_sent if isinstance(request_sent, bool) else None,
        "error_request_id": attr(root, "request_id"),
        "error_attempts_sent": attempts_sent,
    }


_GENERIC = frozenset({"ProviderError", "CallFailed", "TransportError"})


def kind_name(error_type: str | None, status: int | None, phase: str | None) -> str | None:
    """A failed attempt's error named by its kind (ProviderUnavailable, AuthError, ...)
    when the record only says it was a provider or transport error."""
    if error_type is None or error_type in _GENERIC:
        return provider_error_class(status, phase).__name__
    return error_type


def error_type_name(error: BaseException) -> str:
    """The type name a summary gives an error: a provider failure by its kind."""
    if isinstance(error, ProviderError):
        return kind_name(type(error).__name__, error.status, error.phase) or "ProviderError"
    return type(error).__name__
