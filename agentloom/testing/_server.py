"""The base of every fake provider server: a real aiohttp web server on 127.0.0.1.

A fake server holds a script: each request takes the next entry (a `FakeReply`, a
`FakeError`, a `FakeDrop`), or, when the script is empty, asks `responder(request_json)`.
Each protocol subclass turns a `FakeReply` into its own wire format, plain or streamed.
Use it as `async with` inside a running loop, or `start_in_thread()` from sync code (the
CLI in a subprocess, the Agent's sync API).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(slots=True, kw_only=True)
class FakeReply:
    """A model reply, in provider-neutral terms."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    reasoning: str | None = None
    reasoning_signature: str | None = None
    finish_reason: str | None = None
    """The provider's own word; each server picks its default (stop, end_turn, STOP)."""
    model: str | None = None
    input_tokens: int = 12
    output_tokens: int = 7
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    chunks: int | None = None
    """How many pieces a streamed text is cut into; default: one per word."""


@dataclass(slots=True, kw_only=True)
class FakeError:
    status: int
    body: str | dict[str, Any] = "error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class FakeDrop:
    """Close the connection: before any response (after_chunks=None) or after sending
    that many streamed chunks."""

    after_chunks: int | None = None


@dataclass(slots=True, kw_only=True)
class FakeBadBody:
    """A 200 response whose body is not what the protocol promises."""

    body: bytes = b"{not json"


Scripted = FakeReply | FakeError | FakeDrop | FakeBadBody


@dataclass(slots=True, kw_only=True)
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


def split_text(text: str, pieces: int | None) -> list[str]:
    """Cut text into stream chunks: `pieces` equal-ish parts, or one per word."""
    if not text:
        return []
    if pieces is None:
        words = text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, pos = [], 0
    for i in range(pieces):
        step = size + (1 if i < extra else 0)
        out.append(text[pos : pos + step])
        pos += step
    return out


class FakeServer:
    """Subclasses add routes in `routes()` and call `self.next_entry(request_json)`."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        responder: Callable[[Any], Scripted] | None = None,
        chunk_delay: float = 0.0,
    ) -> None:
        self.latency = latency
        self.chunk_delay = chunk_delay
        self.responder = responder or (lambda _body: FakeReply(text="Hello from the fake server."))
        self.requests: list[SeenRequest] = []
        self._script: deque[Scripted] = deque()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    # --- scripting ---------------------------------------------------------------------

    def script(self, *entries: Scripted | str) -> FakeServer:
        """Queue replies; a plain string is a text reply."""
        for entry in entries:
            self._script.append(FakeReply(text=entry) if isinstance(entry, str) else entry)
        return self

    def next_entry(self, body: Any) -> Scripted:
        if self._script:
            return self._script.popleft()
        return self.responder(body)

    @property
    def pending(self) -> int:
        return len(self._script)

    def take(self, request: web.Request, body: Any
             ) -> web.StreamResponse | tuple[FakeReply, int | None]:
        """The next entry, settled the same way for every protocol: a response to send as
        it is (an error, a connection dropped before any reply, a bad body), or the reply
        to encode with after how many streamed chunks to drop the connection (None: never).
        """
        entry = self.next_entry(body)
        if isinstance(entry, FakeError):
            return self.error_response(self.error_body(entry))
        if isinstance(entry, FakeBadBody):
            return web.Response(status=200, body=entry.body, content_type="application/json")
        if isinstance(entry, FakeDrop):
            if entry.after_chunks is None:
                self.drop(request)
                return web.Response(status=500)  # never sent: the connection is gone
            scripted = self.responder(body)
            reply = scripted if isinstance(scripted, FakeReply) else FakeReply(
                text="Hello from the fake server.")
            return reply, entry.after_chunks
        return entry, None

    def error_body(self, entry: FakeError) -> FakeError:
        """A scripted error in the protocol's own envelope; as given here."""
        return entry

    # --- lifecycle ---------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._port}"

    async def start(self) -> FakeServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.add_routes(self.routes())
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, reuse_address=True)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def start_in_thread(self) -> FakeServer:
        """Serve from a background thread with its own loop; `stop_thread()` ends it."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._thread_loop = loop
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop_thread(self) -> None:
        if self._thread_loop is not None and self._thread is not None:
            self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start_in_thread()

    def __exit__(self, *exc: object) -> None:
        self.stop_thread()

    # --- helpers for subclasses --------------------------------------------------------

    async def record(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.requests.append(
            SeenRequest(method=request.method, path=request.path,
                        headers={k.lower(): v for k, v in request.headers.items()}, json=body)
        )
        if self.latency:
            await asyncio.sleep(self.latency)
        return body

    @staticmethod
    def error_response(entry: FakeError) -> web.Response:
        body = entry.body if isinstance(entry.body, str) else json.dumps(entry.body)
        return web.Response(status=entry.status, text=body, headers=entry.headers,
                            content_type="application/json")

    @staticmethod
    def drop(request: web.Request) -> None:
        transport = request.transport
        if transport is not None:
            transport.abort()

    async def stream_lines(
        self, request: web.Request, lines: list[bytes], *, content_type: str,
        drop_after: int | None = None,
    ) -> web.StreamResponse:
        """Send pre-encoded chunks one by one (SSE events or NDJSON lines)."""
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        for i, line in enumerate(lines):
            if drop_after is not None and i >= drop_after:
                self.drop(request)
                return response
            await response.write(line)
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
        await response.write_eof()
        return response
