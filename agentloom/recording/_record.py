"""Recording at the transport seam: wrap any transport, keep every exchange.

`RecordTransport(inner, recorder)` passes each request through and hands the recorder a
redacted copy of it with the response: the whole body, or for a stream each chunk as it
arrived with its offset from the start of the request, so replay can keep chunk
boundaries and, if asked, the timing. Reasoning text is left out of both (`_reasoning`).
A stream is redacted as a whole when it ends
(`_redact_stream`): a secret split across chunks or events is caught, and the stored
chunks still concatenate to the stored stream. A transport failure is recorded too, so a replay
walks the same retries. The step id and turn come from `recording.current_call_context`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from agentloom import _jsontext
from agentloom._clock import SYSTEM_CLOCK, Clock
from agentloom.recording._context import CallContext, current_call_context
from agentloom.recording._format import (
    Recorder,
    encode_bytes,
    redact_json_text,
    request_hash,
)
from agentloom.recording._reasoning import strip_reasoning
from agentloom.recording._redact_stream import redact_stream
from agentloom.transport import (
    BodyTooLarge,
    BufferedResponse,
    HttpRequest,
    HttpResponse,
    TransportError,
)


def _cap_of(exc: TransportError) -> dict[str, int]:
    """A reply cut at its size cap replays as the same typed, non-retryable failure."""
    return {"max_bytes": exc.limit} if isinstance(exc, BodyTooLarge) else {}


def _without_reasoning(body: bytes) -> bytes:
    """A JSON reply without its reasoning text (the bytes as they came when it has
    none, or isn't JSON)."""
    if b"{" not in body[:64]:
        return body
    try:
        value = _jsontext.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body
    if not strip_reasoning(value):
        return body
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _redacted_hash(request: HttpRequest, plain: str, recorder: Recorder) -> dict[str, str]:
    """The hash with the run's secrets replaced, when it differs: a replay where a
    redacted output came back as `[REDACTED]` matches by it (see `request_hash`)."""
    redacted = request_hash(request, redactor=recorder.redactor)
    return {} if redacted == plain else {"redacted_hash": redacted}


def _redacted_url(recorder: Recorder, url: str) -> str:
    return recorder.redactor.redact_text(url)


class _RecordingStream:
    """Yields the inner response's chunks unchanged and records them on the way."""

    def __init__(self, inner: HttpResponse, done: Any, clock: Clock, start: float) -> None:
        self.status = inner.status
        self.headers = inner.headers
        self._inner = inner
        self._done = done
        self._clock = clock
        self._start = start
        self._chunks: list[tuple[float, bytes]] = []
        self._finished = False

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        complete = False
        error: dict[str, Any] | None = None
        try:
            async for chunk in self._inner.aiter_bytes():
                self._chunks.append((round(self._clock.now() - self._start, 6), chunk))
                yield chunk
            complete = True
        except TransportError as exc:
            # A stream that broke midway replays the same way: these chunks, then this.
            error = {"message": str(exc), "phase": exc.phase, "request_sent": exc.request_sent,
                     "t": round(self._clock.now() - self._start, 6), **_cap_of(exc)}
            raise
        finally:
            await self._finish(complete, error)

    async def _finish(self, complete: bool, error: dict[str, Any] | None = None) -> None:
        if self._finished:
            return
        self._finished = True
        await self._done(self._chunks, complete, error)

    async def aclose(self) -> None:
        await self._inner.aclose()
        await self._finish(False)


class RecordTransport:
    def __init__(self, inner: Any, recorder: Recorder, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._inner = inner
        self.recorder = recorder
        self._clock = clock

    async def handle(self, request: HttpRequest) -> HttpResponse:
        ctx = current_call_context.get() or CallContext()
        h = request_hash(request)
        base = {
            "step_id": ctx.step_id,
            "turn": ctx.turn,
            "attempt": self.recorder.next_attempt(ctx, h),
            "request_hash": h,
            **_redacted_hash(request, h, self.recorder),
            "request": {
                "method": request.method.upper(),
                "url": _redacted_url(self.recorder, request.url),
                "path": urlsplit(request.url).path,
                "body": self.recorder.redact_body(request.body),
                "stream": request.stream,
            },
        }
        start = self._clock.now()
        try:
            response = await self._inner.handle(request)
        except TransportError as exc:
            await self.recorder.add({**base, "elapsed": self._elapsed(start), "error": {
                "message": self._redact(str(exc)), "phase": exc.phase,
                "request_sent": exc.request_sent, **_cap_of(exc)}})
            raise
        headers = self._headers(response.headers)
        if request.stream:
            async def done(chunks: list[tuple[float, bytes]], complete: bool,
                           error: dict[str, Any] | None) -> None:
                recorded: dict[str, Any] = {
                    "status": response.status, "headers": headers,
                    "chunks": self._redact_chunks(chunks), "complete": complete}
                if error is not None:
                    recorded["stream_error"] = {**error, "message": self._redact(error["message"])}
                await self.recorder.add({**base, "elapsed": self._elapsed(start),
                                         "response": recorded})

            return _RecordingStream(response, done, self._clock, start)
        try:
            body = await response.read()
        finally:
            await response.aclose()
        await self.recorder.add({**base, "elapsed": self._elapsed(start), "response": {
            "status": response.status, "headers": headers,
            **self._redact_chunk(encode_bytes(_without_reasoning(body)))}})
        return BufferedResponse(status=response.status, headers=dict(response.headers),
                                body=body)

    def _elapsed(self, start: float) -> float:
        return round(self._clock.now() - start, 6)

    def _redact(self, text: str) -> str:
        return self.recorder.redactor.redact_text(text)

    def _redact_chunks(self, chunks: list[tuple[float, bytes]]) -> list[dict[str, Any]]:
        """The stream redacted as a whole (a secret split across chunks is caught); bytes
        that are not UTF-8 text fall back to chunk by chunk."""
        whole = redact_stream(chunks, self.recorder.redactor)
        if whole is not None:
            return whole
        return [self._redact_chunk({"t": t, **encode_bytes(data)}) for t, data in chunks]

    def _redact_chunk(self, item: dict[str, Any]) -> dict[str, Any]:
        if "text" in item:
            return {**item, "text": redact_json_text(item["text"], self.recorder.redactor)}
        return item

    def _headers(self, headers: dict[str, str]) -> dict[str, str]:
        return self.recorder.redactor.redact_headers(headers)

    async def aclose(self) -> None:
        await self.recorder.flush()  # what the run learned after the last exchange
        await self._inner.aclose()
