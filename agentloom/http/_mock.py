"""A transport that answers with a function instead of a network: for unit tests of
anything above the transport (providers, routing) without a server."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from agentloom.transport import BufferedResponse, HttpRequest

Handler = Callable[[HttpRequest], BufferedResponse | Awaitable[BufferedResponse]]


class MockTransport:
    """`MockTransport(handler)`: handler(request) returns a BufferedResponse, plain or async.

    Every request is kept in `requests`, in order. A handler may raise `TransportError` to
    stand for a network failure.
    """

    __slots__ = ("_handler", "requests")

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.requests: list[HttpRequest] = []

    async def handle(self, request: HttpRequest) -> BufferedResponse:
        self.requests.append(request)
        result = self._handler(request)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def aclose(self) -> None:
        return None
