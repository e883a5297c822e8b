"""What a `Router` chooses between: a `Candidate` (one provider and model with its own
settings), the checks that tell whether one can take a request, and `CallFailed`, the
error when none could.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from agentloom._record import FACTORY, FrozenRecord, frozen_record, set_field
from agentloom.errors import AgentLoomError, ProviderError
from agentloom.messages import ModelRequest
from agentloom.pricing import Price
from agentloom.providers import AttemptRecord, Capabilities, ModelClient, check_attachments
from agentloom.routing._breaker import CircuitBreaker
from agentloom.routing._limiter import RateLimiter
from agentloom.routing._retry import RetryPolicy

CheckHook = Callable[[ModelRequest, Capabilities], "str | None"]
"""Returns why a provider cannot take a request, or None if it can."""


@frozen_record
class Candidate(FrozenRecord):
    """One provider + model to try, with its own settings."""

    provider: str
    model: str
    client: ModelClient
    protocol: str | None = None
    """The wire protocol the candidate's provider speaks (informational)."""
    retry: RetryPolicy | None = None
    """None: the router's policy."""
    capabilities: Capabilities | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """Extra body parameters; the request's own `extra` wins over them."""
    headers: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int | None = None
    """Ceiling: used when the request sets none, and caps a larger one."""
    price: Price | None = None
    """A price for this model that wins over the table (a profile's pricing)."""
    breaker: CircuitBreaker | None = None
    limiter: RateLimiter | None = None
    unavailable: str | None = None
    """Why this candidate can't be used at all (a fallback provider whose key isn't set):
    it is then skipped like a provider that can't take the request. It matters only when
    the chain reaches it, so a working primary never trips over it."""

    def __init__(
        self, *, provider: str, model: str, client: ModelClient, protocol: str | None = None,
        retry: RetryPolicy | None = None, capabilities: Capabilities | None = None,
        params: Mapping[str, Any] = FACTORY, headers: Mapping[str, str] = FACTORY,
        max_tokens: int | None = None, price: Price | None = None,
        breaker: CircuitBreaker | None = None, limiter: RateLimiter | None = None,
        unavailable: str | None = None,
    ) -> None:
        set_field(self, "provider", provider)
        set_field(self, "model", model)
        set_field(self, "client", client)
        set_field(self, "protocol", protocol)
        set_field(self, "retry", retry)
        set_field(self, "capabilities", capabilities)
        set_field(self, "params", {} if params is FACTORY else params)
        set_field(self, "headers", {} if headers is FACTORY else headers)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "price", price)
        set_field(self, "breaker", breaker)
        set_field(self, "limiter", limiter)
        set_field(self, "unavailable", unavailable)


class CallFailed(ProviderError):
    """Every candidate failed. Its attributes are the decisive error's (the last real
    failure, preferred over "cannot take this request" refusals), so callers read
    `.status`, `.retryable`, `.request_sent` as for any ProviderError.

    Attributes:
        errors: every candidate's error, in order.
        attempts: every attempt made, as reported to on_attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        decisive: ProviderError,
        retryable: bool,
        errors: Sequence[ProviderError],
        attempts: Sequence[AttemptRecord],
    ) -> None:
        super().__init__(
            message,
            provider=decisive.provider,
            model=decisive.model,
            status=decisive.status,
            phase=decisive.phase,
            request_sent=decisive.request_sent,
            retryable=retryable,
            headers=decisive.headers,
            retry_after=decisive.retry_after,
            body=decisive.body,
            request_id=decisive.request_id,
            partial=getattr(decisive, "partial", False),
        )
        self.errors = tuple(errors)
        self.attempts = tuple(attempts)


def check_tools(request: ModelRequest, capabilities: Capabilities) -> str | None:
    if request.tools and not capabilities.tools:
        return "the model does not support tool calling"
    return None


def check_media(request: ModelRequest, capabilities: Capabilities) -> str | None:
    """Attachments (images, PDFs, audio), by the providers' capability facts."""
    if not has_media(request.messages):
        return None  # the common case: nothing to check
    try:
        reason = check_attachments([p for m in request.messages for p in m.parts], capabilities)
    except AgentLoomError as exc:
        return str(exc)
    return reason or None


def has_media(messages: Sequence[Any]) -> bool:
    # Plain loops: this runs before every attempt, and a generator per call costs more
    # than the scan of a short conversation.
    for m in messages:
        for p in m.parts:
            if p.kind in MEDIA_KINDS:
                return True
    return False


MEDIA_KINDS = frozenset({"image", "document", "audio"})
DEFAULT_CHECKS: tuple[CheckHook, ...] = (check_tools, check_media)
