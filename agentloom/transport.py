"""The transport seam's types: one request in, one response out.

Everything that speaks HTTP for us goes through a `Transport`, the way httpx's clients go
through `handle_async_request`. These records sit in the bottom layer so that providers can
build `HttpRequest`s and read `HttpResponse`s without importing `agentloom.http` (which
holds the implementations: aiohttp, mock, fault). Recording, replay and fault injection are
each a class that wraps another transport. No I/O here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import field
from typing import Protocol, runtime_checkable

from agentloom._record import FACTORY, FrozenRecord, Record, frozen_record, record, set_field


@frozen_record
class HttpTimeout(FrozenRecord):
    """Per-phase limits in seconds; None disables one. `read` is the idle limit (no byte
    for that long, a stream included; a reply read whole may take up to half as long
    again before it ends); `total` bounds the whole exchange, body included, so a reply
    that trickles forever still ends.

        HttpTimeout()                      # 10 s to connect, 300 s idle, 1800 s in all
        HttpTimeout(connect=2, read=30)    # tighter
        HttpTimeout(total=5)               # whole exchange, body included
    """

    connect: float | None = 10.0
    read: float | None = 300.0
    total: float | None = 1800.0

    def __init__(self, *, connect: float | None = 10.0, read: float | None = 300.0,
                 total: float | None = 1800.0) -> None:
        set_field(self, "connect", connect)
        set_field(self, "read", read)
        set_field(self, "total", total)
        for name in ("connect", "read", "total"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"HttpTimeout.{name} must be positive or None, got {value}")


@record
class HttpRequest(Record):
    """One HTTP request, as a provider builds it and a transport sends it."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    timeout: HttpTimeout | None = None
    stream: bool = False
    """Ask the transport not to read the body up front: the caller iterates it."""
    max_bytes: int | None = None
    """The most body bytes (after decompression, a whole stream included) to accept;
    None: the transport's own cap. Past it the transport raises BodyTooLarge."""

    def __init__(
        self, *, method: str, url: str, headers: dict[str, str] = FACTORY,
        body: bytes | None = None, timeout: HttpTimeout | None = None, stream: bool = False,
        max_bytes: int | None = None,
    ) -> None:
        self.method = method
        self.url = url
        self.headers = {} if headers is FACTORY else headers
        self.body = body
        self.timeout = timeout
        self.stream = stream
        self.max_bytes = max_bytes


class HttpResponse(Protocol):
    """A response whose body may still be arriving. Headers have lowercased keys."""

    status: int
    headers: dict[str, str]

    async def read(self) -> bytes: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Transport(Protocol):
    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Send the request. Raises `TransportError` (never a library's own exception)."""
        ...

    async def aclose(self) -> None: ...


class TransportError(Exception):
    """A request that got no HTTP response. `phase` says where it broke; `request_sent`
    is True/False/None (None: we cannot tell whether the server saw it)."""

    def __init__(self, message: str, *, phase: str, request_sent: bool | None) -> None:
        self.phase = phase
        self.request_sent = request_sent
        super().__init__(message)


class BodyTooLarge(TransportError):
    """A reply body (decompressed, or a stream's total) went past its byte cap. The
    transport stopped reading and dropped the connection; the same call would do it again."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"reply body larger than {limit} bytes", phase="read",
                         request_sent=True)


@record
class BufferedResponse(Record):
    """A response held in memory: what MockTransport, replay and tests return."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None
    """If set, `aiter_bytes` yields these pieces (for stream tests); else `body` whole."""

    def __init__(
        self, *, status: int, headers: dict[str, str] = FACTORY, body: bytes = b"",
        chunks: list[bytes] | None = None,
    ) -> None:
        self.status = status
        self.headers = {} if headers is FACTORY else headers
        self.body = body
        self.chunks = chunks

    async def read(self) -> bytes:
        if self.chunks is not None:
            return b"".join(self.chunks)
        return self.body

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks if self.chunks is not None else [self.body]:
            yield chunk

    async def aclose(self) -> None:
        return None
