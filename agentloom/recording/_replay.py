"""Replay at the transport seam: answer every request from a recording, no network.

`ReplayTransport(recording, mode="strict"|"lenient", replay_latency=False)` finds the
exchange for the current call (step id and turn from `recording.current_call_context`,
plus the canonical request hash) and gives back its status, headers and body, or its
stream chunk by chunk with the recorded boundaries. A recorded transport failure is
raised again. With `replay_latency`, the recorded offsets are slept through the clock
seam. No match raises `ReplayMismatch` with a diff against the nearest record; nothing
is ever made up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.recording._context import current_call_context
from agentloom.recording._format import (
    Matcher,
    Recording,
    ReplayMode,
    decode_bytes,
)
from agentloom.redact import Redactor
from agentloom.transport import (
    BodyTooLarge,
    BufferedResponse,
    HttpRequest,
    HttpResponse,
    TransportError,
)


def _replayed(error: dict[str, Any], what: str, phase: str,
              sent: bool | None) -> TransportError:
    if "max_bytes" in error:
        return BodyTooLarge(int(error["max_bytes"]))
    return TransportError(f"(replayed) {error.get('message', what)}",
                          phase=error.get("phase", phase),
                          request_sent=error.get("request_sent", sent))

class _ReplayedStream:
    def __init__(self, status: int, headers: dict[str, str], chunks: list[dict[str, Any]],
                 clock: Clock | None, error: dict[str, Any] | None = None) -> None:
        self.status = status
        self.headers = headers
        self._chunks = chunks
        self._clock = clock
        self._error = error

    async def read(self) -> bytes:
        return b"".join([c async for c in self.aiter_bytes()])

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        last = 0.0
        for item in self._chunks:
            if self._clock is not None:
                t = float(item.get("t", last))
                await self._clock.sleep(max(0.0, t - last))
                last = t
            yield decode_bytes(item)
        if self._error is not None:
            if self._clock is not None:
                await self._clock.sleep(max(0.0, float(self._error.get("t", last)) - last))
            raise _replayed(self._error, "stream broke", "read", True)

    async def aclose(self) -> None:
        return None


class ReplayTransport:
    def __init__(self, recording: Recording | str | Path, *, mode: ReplayMode = "strict",
                 replay_latency: bool = False, clock: Clock = SYSTEM_CLOCK,
                 redactor: Redactor | None = None) -> None:
        self._source = recording
        self._matcher: Matcher | None = None
        self.mode: ReplayMode = mode
        self._latency_clock = clock if replay_latency else None
        self._redactor = redactor or Redactor()
        if isinstance(recording, Recording):
            self._matcher = Matcher(recording, mode, self._redactor)
        elif mode not in ("strict", "lenient"):
            Matcher(Recording(), mode)  # raises the ConfigError for a bad mode

    async def _get_matcher(self) -> Matcher:
        if self._matcher is None:
            assert not isinstance(self._source, Recording)
            self._matcher = Matcher(await Recording.aload(self._source), self.mode,
                                    self._redactor)
        return self._matcher

    @property
    def unused(self) -> list[dict[str, Any]]:
        """Recorded exchanges no call has asked for (strict: a replay that ran short)."""
        if self._matcher is None:
            return []
        return [e for i, e in enumerate(self._matcher.recording.exchanges)
                if i not in self._matcher.used]

    async def handle(self, request: HttpRequest) -> HttpResponse:
        matcher = await self._get_matcher()
        exchange = matcher.take(request, current_call_context.get())
        error = exchange.get("error")
        if error is not None:
            if self._latency_clock is not None:
                await self._latency_clock.sleep(float(exchange.get("elapsed", 0.0)))
            raise _replayed(error, "transport error", "connect", None)
        resp = exchange["response"]
        status, headers = int(resp["status"]), dict(resp.get("headers") or {})
        if "chunks" in resp:
            return _ReplayedStream(status, headers, list(resp["chunks"]), self._latency_clock,
                                   resp.get("stream_error"))
        if self._latency_clock is not None:
            await self._latency_clock.sleep(float(exchange.get("elapsed", 0.0)))
        return BufferedResponse(status=status, headers=headers, body=decode_bytes(resp))

    async def aclose(self) -> None:
        return None
