"""Who hears of a retry before its wait: the agent loop's `on_retry(attempt, error)`.

A context variable, not a parameter, so the request path pays nothing for it: the router
reads it only on the retry path, right before it sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from agentloom.errors import ProviderError

RetryListener = Callable[[int, ProviderError], None]

retry_listener: ContextVar[RetryListener | None] = ContextVar("agentloom_retry_listener",
                                                               default=None)
"""Called with the failed attempt's number and error when the router is about to wait and
try again."""
