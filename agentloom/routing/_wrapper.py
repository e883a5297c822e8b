"""`WrapperClient`: the one base of a `ModelClient` that wraps another.

A wrapper (journalling, forced tool choice, instrumentation, ...) overrides `complete` and
calls `self.inner.complete`; everything else it does not define (`model`, `candidates`,
`breaker_snapshot`, ...) reads through to the wrapped client, as PydanticAI's
`WrapperModel` does, so wrappers stack without each re-writing the delegation.
"""

from __future__ import annotations

from typing import Any

from agentloom.messages import ModelRequest, ModelResponse
from agentloom.providers import AttemptSink, EventSink, ModelClient


class WrapperClient:
    """Delegates to `inner`; subclasses override `complete` (and nothing else need).

        class Logged(WrapperClient):
            async def complete(self, request, **kw):
                log(request)
                return await self.inner.complete(request, **kw)
    """

    __slots__ = ("inner",)

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being rebuilt): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> ModelResponse:
        return await self.inner.complete(request, on_event=on_event, on_attempt=on_attempt)
