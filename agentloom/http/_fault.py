"""Fault injection at the transport seam: make any transport fail on cue.

`FaultTransport(inner, faults)` passes requests to `inner` except those a rule picks, for
which it answers an error status (with headers such as Retry-After), drops the connection
before the request or after N streamed chunks, times out, or returns a garbled body. Rules
pick requests by number (1-based, counting every request this transport saw) or by a
predicate, so a test can say "the 1st and 2nd calls get a 503, the 3rd goes through".
Providers, routing and the engine run unchanged on top: no monkeypatching.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from agentloom.transport import (
    BufferedResponse,
    HttpRequest,
    HttpResponse,
    Transport,
    TransportError,
)

FaultKind = Literal["status", "drop", "drop_after", "timeout", "bad_body"]
Predicate = Callable[[int, HttpRequest], bool]


@dataclass(slots=True, frozen=True, kw_only=True)
class Fault:
    """What to do to one request. Build with the class methods:

    Fault.status(429, headers={"retry-after": "2"})
    Fault.drop()                 # connection refused/reset before the request is sent
    Fault.drop_after(1)          # a streamed body breaks after 1 chunk
    Fault.timeout()              # no response within the read timeout
    Fault.bad_body()             # 200 with a body that is not the protocol's JSON
    """

    kind: FaultKind
    status_code: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: int = 0

    @classmethod
    def status(
        cls,
        code: int,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | str = b'{"error": {"message": "injected fault"}}',
    ) -> Fault:
        data = body.encode() if isinstance(body, str) else body
        return cls(
            kind="status",
            status_code=code,
            headers={k.lower(): v for k, v in (headers or {}).items()},
            body=data,
        )

    @classmethod
    def drop(cls) -> Fault:
        return cls(kind="drop")

    @classmethod
    def drop_after(cls, chunks: int) -> Fault:
        return cls(kind="drop_after", chunks=chunks)

    @classmethod
    def timeout(cls) -> Fault:
        return cls(kind="timeout")

    @classmethod
    def bad_body(cls, body: bytes = b"{not json") -> Fault:
        return cls(kind="bad_body", body=body)


class FaultTransport:
    """Wrap `inner`; `faults` maps request numbers (or predicates) to a Fault.

    FaultTransport(inner, {1: Fault.status(503), 2: Fault.drop()})
    FaultTransport(inner, [(lambda n, req: "anthropic" in req.url, Fault.status(500))])
    """

    def __init__(
        self,
        inner: Transport,
        faults: Mapping[int, Fault] | Iterable[tuple[Predicate, Fault]] = (),
    ) -> None:
        self.inner = inner
        self._by_number: dict[int, Fault] = {}
        self._rules: list[tuple[Predicate, Fault]] = []
        if isinstance(faults, Mapping):
            self._by_number = dict(faults)
        else:
            self._rules = list(faults)
        self.count = 0
        """Requests seen so far."""
        self.injected: list[tuple[int, FaultKind]] = []
        """(request number, fault kind) for every fault applied."""

    def add(self, when: int | Predicate, fault: Fault) -> None:
        if isinstance(when, int):
            self._by_number[when] = fault
        else:
            self._rules.append((when, fault))

    def _pick(self, number: int, request: HttpRequest) -> Fault | None:
        fault = self._by_number.get(number)
        if fault is not None:
            return fault
        for predicate, rule in self._rules:
            if predicate(number, request):
                return rule
        return None

    async def handle(self, request: HttpRequest) -> HttpResponse:
        self.count += 1
        number = self.count
        fault = self._pick(number, request)
        if fault is None:
            return await self.inner.handle(request)
        self.injected.append((number, fault.kind))
        if fault.kind == "status":
            return BufferedResponse(
                status=fault.status_code,
                headers={"content-type": "application/json", **fault.headers},
                body=fault.body,
            )
        if fault.kind == "drop":
            raise TransportError(
                "connection dropped before the request was sent (injected)",
                phase="connect",
                request_sent=False,
            )
        if fault.kind == "timeout":
            raise TransportError(
                "no response within the read timeout (injected)", phase="read", request_sent=True
            )
        if fault.kind == "bad_body":
            return BufferedResponse(
                status=200, headers={"content-type": "application/json"}, body=fault.body
            )
        response = await self.inner.handle(request)
        return _BreakingResponse(response, fault.chunks)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _BreakingResponse:
    """The inner response, whose byte stream breaks after `after` chunks."""

    __slots__ = ("_after", "_inner", "headers", "status")

    def __init__(self, inner: HttpResponse, after: int) -> None:
        self._inner = inner
        self._after = after
        self.status = inner.status
        self.headers = inner.headers

    async def read(self) -> bytes:
        parts = [chunk async for chunk in self.aiter_bytes()]
        return b"".join(parts)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        sent = 0
        async for chunk in self._inner.aiter_bytes():
            if sent >= self._after:
                break
            yield chunk
            sent += 1
        raise TransportError(
            f"connection dropped after {sent} chunk(s) (injected)", phase="read", request_sent=True
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
