"""The real transport, on aiohttp: one pooled session, exceptions translated in one place.

aiohttp measured several times faster than httpx here (per call and, far more, under
hundreds of concurrent calls), so it carries every provider call. This is the only module
that imports aiohttp's client. It never follows redirects: callers that want them (the
attachment fetcher) follow each hop themselves, so every hop passes the address policy.
All aiohttp and asyncio failures become `TransportError` in `_translate`, with the phase
and whether the request reached the server, because retry and fallback decide on those.

A request made under `netguard.pinned(permit)` (the `http_request` tool and attachment
downloads run theirs so) goes through a second session whose connector resolves each name
once, through `_PinnedResolver`, and connects only to the addresses the pin allows: the
address checked is the address connected to, so a name that answers differently the second
time (DNS rebinding) reaches nothing it should not. That session caches no lookup and keeps
no connection alive (a pooled connection was checked under another request's rule). IP
literals, which aiohttp never resolves, are judged against the pin before the request.
The URL keeps its host name, so the Host header, TLS SNI and the certificate check are the
name's. Requests outside a pin (provider calls) use the ordinary pooled session, unchanged.

Replies are bounded: a body, counted after decompression (aiohttp inflates in bounded
pieces, so a gzip bomb stops at the cap, not at its inflated size), and a stream's total
are capped at `max_reply_bytes` (or the request's own `max_bytes`) by a plain counter;
past it the read stops with `BodyTooLarge`.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import client_exceptions as cx
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from agentloom.http.netguard import AddressRefused, Permit, allowed_only, current_pin
from agentloom.transport import (
    BodyTooLarge,
    BufferedResponse,
    HttpRequest,
    HttpTimeout,
    TransportError,
)

if TYPE_CHECKING:
    from agentloom.transport import HttpResponse

_DEFAULT_TIMEOUT = HttpTimeout()
DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024
# After the request went out: a read timeout, a hang-up, a truncated or malformed reply.
_READ_ERRORS = (
    cx.SocketTimeoutError, cx.ServerDisconnectedError, cx.ClientPayloadError,
    cx.ClientResponseError,
)


def _translate(exc: BaseException, *, got_headers: bool,
               total: float | None = None) -> TransportError:
    """Map one aiohttp/asyncio failure to a TransportError (the single mapping point)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if type(exc) is TimeoutError and total is not None:  # the whole-call limit, unnamed
        text = f"TimeoutError: no full reply within the call's timeout of {total:g} s"
    phase: str
    sent: bool | None
    # Order matters: several aiohttp classes inherit from more than one of these.
    if isinstance(exc, cx.ClientProxyConnectionError | cx.ClientHttpProxyError):
        phase, sent = "proxy", False
    elif isinstance(exc, cx.ClientSSLError | cx.ServerFingerprintMismatch):
        phase, sent = "tls", False
    elif isinstance(exc, cx.ClientConnectorError | cx.ConnectionTimeoutError):
        phase, sent = "connect", False
    elif isinstance(exc, cx.InvalidURL):
        phase, sent = "local", False
    elif isinstance(exc, _READ_ERRORS) or got_headers:
        phase, sent = "read", True
    else:
        # A reset or the overall time limit before any response: we cannot tell
        # whether the server saw the request.
        phase, sent = "send", None
    return TransportError(text, phase=phase, request_sent=sent)


async def _read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, or BodyTooLarge as soon as it passes `limit` bytes."""
    length = resp.content_length
    if length is not None and "content-encoding" not in resp.headers:
        if length > limit:
            resp.close()
            raise BodyTooLarge(limit)
        return await resp.read()  # exactly `length` bytes: already bounded
    parts: list[bytes] = []
    total = 0
    content = resp.content
    while chunk := await content.readany():
        total += len(chunk)
        if total > limit:
            resp.close()
            raise BodyTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


def _header_map(resp: aiohttp.ClientResponse) -> dict[str, str]:
    """The reply's headers, names lowercased, every value text that encodes as UTF-8.

    aiohttp reads a value's bytes that are not UTF-8 as lone surrogates (`caf\\xe9` comes
    out as `'caf\\udce9'`): a str that cannot be encoded as UTF-8, so one such header from
    a hostile server made saving the run's recording fail. Such a value is read as
    ISO-8859-1 instead, as httpx reads it: every byte one character, none lost.
    (Names with such bytes never get here: aiohttp's parser refuses them.)"""
    headers = {k.lower(): v for k, v in resp.headers.items()}
    if all(map(str.isascii, headers.values())):  # the every-call case
        return headers
    for name, value in headers.items():
        if not value.isascii():
            raw = value.encode("utf-8", "surrogateescape")
            try:
                headers[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                headers[name] = raw.decode("latin-1")
    return headers


class _StreamedResponse:
    """A response whose body is read as it arrives; `aiter_bytes` yields each piece."""

    __slots__ = ("_limit", "_resp", "headers", "status")

    def __init__(self, resp: aiohttp.ClientResponse, limit: int) -> None:
        self.status = resp.status
        self.headers = _header_map(resp)
        self._resp = resp
        self._limit = limit

    async def read(self) -> bytes:
        try:
            return await _read_capped(self._resp, self._limit)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _translate(exc, got_headers=True) from exc
        finally:
            self._resp.release()

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        content = self._resp.content
        left = self._limit
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    break
                left -= len(chunk)
                if left < 0:
                    self._resp.close()
                    raise BodyTooLarge(self._limit)
                yield chunk
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _translate(exc, got_headers=True) from exc
        finally:
            self._resp.release()

    async def aclose(self) -> None:
        self._resp.release()


class _Limits:
    """One HttpTimeout as aiohttp takes it: `full` has every limit (for streams), `bare`
    only the connect ones, for a buffered call whose `_Watch` keeps the rest."""

    __slots__ = ("bare", "full", "read", "total")

    def __init__(self, timeout: HttpTimeout) -> None:
        self.read, self.total = timeout.read, timeout.total
        self.full = aiohttp.ClientTimeout(
            total=timeout.total, connect=timeout.connect, sock_connect=timeout.connect,
            sock_read=timeout.read,
        )
        # The watch's idle clock starts with the call, not once the request is written:
        # with `read` at least twice `connect` (aiohttp rounds a connect limit of 5 s or
        # more up to the next second), a silence that long means connected and sent.
        # Otherwise (or without a connect limit) aiohttp's own timers stay in charge.
        connect = timeout.connect
        self.bare = (
            aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect)
            if connect is not None and (timeout.read is None or timeout.read >= 2 * connect)
            else None
        )


_NO_VARS = contextvars.Context()
"""The context a watch's look runs in: it reads no context variable, and a copy of the
caller's (what a timer takes by default) would be one more object alive per call."""


class _Watch:
    """A buffered call's two time limits on one timer. aiohttp arms three per call for
    them (the whole-call limit, and the idle limit, re-armed on every read from the
    socket), and timers are most of what a call costs it beyond the bytes.

    `total` is exact. The idle limit is looked at lazily, every `read / 2` from the start:
    two looks in a row that find the reply where the one before left it (no headers yet,
    or no body byte more) end the call. So a silent reply ends after at least `read` and
    under 1.5 x `read` seconds without a byte (aiohttp: exactly `read`), and a call that
    ends sooner, which is almost every call, costs one timer set and cancelled.
    """

    __slots__ = ("_at", "_deadline", "_handle", "_loop", "_quiet", "_seen", "_step",
                 "_task", "expired", "resp")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[object],
                 read: float | None, total: float | None) -> None:
        self._loop = loop
        self._task = task
        self._at = loop.time()
        self._step = None if read is None else read / 2
        self._deadline = None if total is None else self._at + total
        self._seen = -1  # body bytes at the last look; -1: no headers yet
        self._quiet = 0  # looks in a row that saw nothing new
        self.resp: aiohttp.ClientResponse | None = None
        self.expired: str | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        # Times are the scheduled ones, not the clock's: a timer may run a hair early.
        at = self._deadline if self._step is None else self._at + self._step
        if at is None:
            return
        if self._deadline is not None and at > self._deadline:
            at = self._deadline
        self._at = at
        self._handle = self._loop.call_at(at, self._look, context=_NO_VARS)

    def _look(self) -> None:
        self._handle = None
        if self._deadline is not None and self._at >= self._deadline:
            self._expire("total")
            return
        resp = self.resp
        seen = -1 if resp is None else resp.content.total_bytes
        if seen != self._seen:
            self._seen, self._quiet = seen, 0
        else:
            self._quiet += 1
            if self._quiet >= 2:
                self._expire("idle")
                return
        self._arm()

    def _expire(self, why: str) -> None:
        self.expired = why
        self._task.cancel()  # `handle` turns this cancellation into a TimeoutError

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class _PinnedResolver(AbstractResolver):
    """The pinned session's resolver: one lookup per connection (its connector caches
    none), and only the addresses the request's pin allows come out, in their order.
    AddressRefused when the pin allows none (or there is no pin: closed by default)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: AbstractResolver) -> None:
        self._inner = inner

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        permit = current_pin()
        if permit is None:
            raise AddressRefused(f"{host}: a pinned connection was made outside a pin")
        found = await self._inner.resolve(host, port, family)
        kept = set(allowed_only(host, port, [r["host"] for r in found], permit))
        return [r for r in found if r["host"] in kept]

    async def close(self) -> None:
        await self._inner.close()


def _check_literal(url: str, permit: Permit) -> None:
    """An IP-literal host (aiohttp connects to it with no lookup) judged against the pin,
    read the way aiohttp reads the URL."""
    try:
        parsed = URL(url)
        host, port = parsed.raw_host, parsed.port
    except (ValueError, TypeError):
        return  # aiohttp refuses the URL itself (InvalidURL)
    if not host:
        return
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return  # a name: the pinned resolver judges what it resolves to
    allowed_only(host, port or 0, [host], permit)


class AiohttpTransport:
    """The default transport: one aiohttp session, opened on first use in the running loop.

        transport = AiohttpTransport()                    # pool of 1000, keep-alive
        transport = AiohttpTransport(timeout=HttpTimeout(connect=2, read=30))
        transport = AiohttpTransport(max_reply_bytes=8 * 1024 * 1024)
        ...
        await transport.aclose()

    A request's own `timeout` and `max_bytes` win over the transport's.
    """

    __slots__ = ("_last_timeout", "_limit", "_limit_per_host", "_loop", "_max_reply_bytes",
                 "_pinned", "_pinned_loop", "_session", "_timeout", "_timeouts")

    def __init__(
        self, *, limit: int = 1000, limit_per_host: int = 0, timeout: HttpTimeout | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        if max_reply_bytes <= 0:
            raise ValueError(f"max_reply_bytes must be positive, got {max_reply_bytes}")
        self._max_reply_bytes = max_reply_bytes
        self._limit = limit
        self._limit_per_host = limit_per_host
        self._timeout = timeout or _DEFAULT_TIMEOUT
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pinned: aiohttp.ClientSession | None = None
        self._pinned_loop: asyncio.AbstractEventLoop | None = None
        self._timeouts: dict[HttpTimeout, _Limits] = {}
        # The last one asked for, by identity: an endpoint passes the same object on every
        # call, and the dict lookup hashes the dataclass field by field in Python.
        self._last_timeout: tuple[HttpTimeout, _Limits] | None = None

    def _limits(self, timeout: HttpTimeout) -> _Limits:
        last = self._last_timeout
        if last is not None and last[0] is timeout:
            return last[1]
        found = self._timeouts.get(timeout)
        if found is None:
            found = _Limits(timeout)
            if len(self._timeouts) < 64:  # bounded: timeouts are few in practice
                self._timeouts[timeout] = found
        self._last_timeout = (timeout, found)
        return found

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        # A session belongs to one loop; a sync caller may run a fresh loop per call.
        connector = aiohttp.TCPConnector(
            limit=self._limit, limit_per_host=self._limit_per_host, keepalive_timeout=30,
            enable_cleanup_closed=False,
        )
        self._session = self._new_session(connector)
        self._loop = loop
        return self._session

    def _open_pinned(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        """The session for requests under a pin. The system resolver, as the address
        check's own lookup uses; no lookup cached and no connection kept alive, so every
        connection is resolved, judged and made for its own request."""
        connector = aiohttp.TCPConnector(
            limit=self._limit, limit_per_host=self._limit_per_host, force_close=True,
            use_dns_cache=False, resolver=_PinnedResolver(ThreadedResolver(loop)),
            enable_cleanup_closed=False,
        )
        self._pinned = self._new_session(connector)
        self._pinned_loop = loop
        return self._pinned

    def _pinned_session(self, request: HttpRequest, permit: Permit) -> aiohttp.ClientSession:
        _check_literal(request.url, permit)
        loop = asyncio.get_running_loop()
        pinned = self._pinned
        if pinned is None or self._pinned_loop is not loop or pinned.closed:
            pinned = self._open_pinned(loop)
        return pinned

    def _new_session(self, connector: aiohttp.TCPConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            timeout=self._limits(self._timeout).full,
            auto_decompress=True,
            # A default header, not `skip_auto_headers`: aiohttp adds no User-Agent of its
            # own when one is there, and a session-wide skip list costs a sort and two
            # header copies on every request.
            headers={"User-Agent": "agentloom"},
        )

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """The reply; TransportError when the exchange fails, AddressRefused (before any
        byte is sent) when a request under a pin would reach an address it does not allow."""
        session = self._session
        permit = current_pin()
        if permit is not None:
            session = self._pinned_session(request, permit)
        elif session is None or self._loop is not asyncio.get_running_loop() or session.closed:
            session = self._open()
        limits = self._limits(request.timeout or self._timeout)
        limit = request.max_bytes or self._max_reply_bytes
        if limits.bare is None or request.stream:
            return await self._aiohttp_timed(session, request, limits, limit)
        # A reply read whole (almost every call), its time limits kept by one `_Watch`,
        # which cancels this task when one passes. The cancellation is turned into a
        # TimeoutError here as `asyncio.timeout` would (unless someone else cancelled the
        # task too), without its scope object, its two coroutines and its state checks:
        # `async with asyncio.timeout_at(None)` cost ~1.9 us a call (bench/README.md).
        loop = self._loop or asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        assert task is not None
        cancelling = task.cancelling()
        watch = _Watch(loop, task, limits.read, limits.total)
        resp: aiohttp.ClientResponse | None = None
        try:
            try:
                resp = await session.request(
                    request.method, request.url, data=request.body, headers=request.headers,
                    allow_redirects=False, timeout=limits.bare,
                )
                watch.resp = resp
                try:
                    body = await _read_capped(resp, limit)
                finally:
                    resp.release()
            except asyncio.CancelledError as exc:
                if watch.expired is not None and task.uncancel() <= cancelling:
                    raise TimeoutError from exc  # ours alone: the call ran out of time
                raise
            if watch.expired is not None:
                # The reply was in just as a limit passed: the cancel the watch asked for
                # is withdrawn, as `asyncio.timeout` withdraws its own.
                task.uncancel()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            # An idle call ends in aiohttp's words, as its own idle timer puts it.
            said = (cx.SocketTimeoutError("Timeout on reading data from socket")
                    if watch.expired == "idle" else exc)
            raise _translate(said, got_headers=resp is not None, total=limits.total) from exc
        finally:
            watch.cancel()
        return BufferedResponse(status=resp.status, headers=_header_map(resp), body=body)

    async def _aiohttp_timed(self, session: aiohttp.ClientSession, request: HttpRequest,
                             limits: _Limits, limit: int) -> HttpResponse:
        """A stream (its reader may run after this returns, so only aiohttp's timers can
        bound it), or limits the watch can't keep: aiohttp's own timers."""
        got_headers = False
        try:
            resp = await session.request(
                request.method, request.url, data=request.body, headers=request.headers,
                allow_redirects=False, timeout=limits.full,
            )
            got_headers = True
            if request.stream:
                return _StreamedResponse(resp, limit)
            try:
                body = await _read_capped(resp, limit)
            finally:
                resp.release()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _translate(exc, got_headers=got_headers, total=limits.total) from exc
        return BufferedResponse(status=resp.status, headers=_header_map(resp), body=body)

    async def aclose(self) -> None:
        sessions = (self._session, self._pinned)
        self._session = self._pinned = None
        for session in sessions:
            if session is not None and not session.closed:
                await session.close()
