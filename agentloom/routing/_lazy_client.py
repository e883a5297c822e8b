"""Clients a `Runtime` hands out before any call: one that builds its provider client on
the first call (so the transport and the local server start only when a call happens,
inside the running loop), and one for a candidate the router always skips.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from agentloom.messages import ModelRequest, ModelResponse
from agentloom.providers import AttemptSink, Endpoint, EventSink, ModelClient
from agentloom.transport import HttpTimeout


class ClientSource(Protocol):
    """What a `LazyClient` asks for its client: the `Runtime`."""

    async def provider_client(self, endpoint: Endpoint | None,
                              timeout: HttpTimeout | None) -> ModelClient: ...


class UnusableClient:
    """The client of a candidate the router always skips (`Candidate.unavailable`)."""

    async def complete(self, request: ModelRequest, **_: Any) -> ModelResponse:
        raise AssertionError("an unusable fallback candidate was called")


class LazyClient:
    """A provider client built on first call: the transport and the local server are
    created only when a call really happens, inside the running loop."""

    __slots__ = ("_client", "_endpoint", "_runtime", "_timeout")

    def __init__(
        self, runtime: ClientSource, endpoint: Endpoint | None, timeout: HttpTimeout | None
    ) -> None:
        self._runtime = runtime
        self._endpoint = endpoint
        self._timeout = timeout
        self._client: ModelClient | None = None

    def complete(
        self,
        request: ModelRequest,
        *,
        on_event: EventSink | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> Coroutine[Any, Any, ModelResponse]:
        # Not a coroutine of its own once the client exists: the built client's call is
        # handed back as is, one frame fewer on every call and every resumption.
        client = self._client
        if client is not None:
            return client.complete(request, on_event=on_event, on_attempt=on_attempt)
        return self._first(request, on_event, on_attempt)

    async def _first(
        self, request: ModelRequest, on_event: EventSink | None, on_attempt: AttemptSink | None
    ) -> ModelResponse:
        client = self._client
        if client is None:
            client = self._client = await self._runtime.provider_client(
                self._endpoint, self._timeout)
        return await client.complete(request, on_event=on_event, on_attempt=on_attempt)
