"""AiohttpTransport against a real aiohttp server on loopback: statuses, headers,
streaming as chunks arrive, drops, refused connections, timeouts, redirects."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from agentloom.http import AiohttpTransport, HttpRequest, HttpTimeout, TransportError


class Server:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[tuple[str, bytes, dict[str, str]]] = []
        self.seen_hang = False

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.seen.append((request.method, body, dict(request.headers)))
        return web.Response(status=int(request.query.get("status", 200)), body=body,
                            headers={"X-Request-Id": "req-1", "Retry-After": "3"})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b"first")
        await self.release.wait()  # the client must see "first" before this returns
        await resp.write(b"second")
        await resp.write_eof()
        return resp

    async def drop(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b"partial")
        assert request.transport is not None
        request.transport.abort()
        return resp

    async def hang(self, request: web.Request) -> web.Response:
        self.seen_hang = True
        await self.release.wait()
        return web.Response()

    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/echo")

    async def stall(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b"partial")
        await self.release.wait()
        return resp

    async def trickle(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for _ in range(int(request.query["n"])):
            await asyncio.sleep(float(request.query["gap"]))
            await resp.write(b"x")
        await resp.write_eof()
        return resp


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    s = Server()
    app = web.Application()
    app.add_routes([web.route("*", "/echo", s.echo), web.get("/stream", s.stream),
                    web.get("/drop", s.drop), web.get("/hang", s.hang),
                    web.get("/redirect", s.redirect), web.get("/stall", s.stall),
                    web.get("/trickle", s.trickle)])
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield s, f"http://127.0.0.1:{port}"
    s.release.set()
    await runner.cleanup()


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


async def test_buffered_post_with_status_and_lowercased_headers(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    s, url = server
    resp = await transport.handle(HttpRequest(method="POST", url=f"{url}/echo?status=503",
                                              headers={"X-Test": "1"}, body=b"payload"))
    assert resp.status == 503
    assert resp.headers["x-request-id"] == "req-1"
    assert resp.headers["retry-after"] == "3"
    assert await resp.read() == b"payload"
    assert s.seen[0][0] == "POST" and s.seen[0][2]["X-Test"] == "1"


async def test_session_is_reused(server: tuple[Server, str], transport: AiohttpTransport) -> None:
    _, url = server
    await transport.handle(HttpRequest(method="GET", url=f"{url}/echo"))
    first = transport._session
    await transport.handle(HttpRequest(method="GET", url=f"{url}/echo"))
    assert transport._session is first


async def test_stream_yields_chunks_as_they_arrive(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    s, url = server
    resp = await transport.handle(HttpRequest(method="GET", url=f"{url}/stream", stream=True))
    chunks = resp.aiter_bytes()
    assert await asyncio.wait_for(chunks.__anext__(), 5) == b"first"
    s.release.set()
    rest = [c async for c in chunks]
    assert b"".join(rest) == b"second"


async def test_drop_mid_stream_is_a_read_error_after_the_request_was_sent(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    resp = await transport.handle(HttpRequest(method="GET", url=f"{url}/drop", stream=True))
    got = []
    with pytest.raises(TransportError) as info:
        async for chunk in resp.aiter_bytes():
            got.append(chunk)
    assert info.value.phase == "read" and info.value.request_sent is True
    assert b"".join(got) == b"partial"


async def test_connect_refused_means_not_sent(transport: AiohttpTransport) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(method="POST", url=f"http://127.0.0.1:{port}/"))
    assert info.value.phase == "connect" and info.value.request_sent is False


async def test_read_timeout_means_sent(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(method="GET", url=f"{url}/hang",
                                           timeout=HttpTimeout(read=0.05)))
    assert info.value.phase == "read" and info.value.request_sent is True


# A buffered call with `read` at least twice `connect` has its limits kept by one timer of
# the transport's (`_Watch`) instead of aiohttp's: the same errors, the same bounds.


async def test_idle_before_headers_is_a_read_error_after_the_request_was_sent(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(method="GET", url=f"{url}/hang",
                                           timeout=HttpTimeout(connect=0.05, read=0.1)))
    assert info.value.phase == "read" and info.value.request_sent is True
    assert "SocketTimeoutError" in str(info.value)


async def test_idle_mid_body_is_a_read_error(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(method="GET", url=f"{url}/stall",
                                           timeout=HttpTimeout(connect=0.05, read=0.1)))
    assert info.value.phase == "read" and info.value.request_sent is True


async def test_a_body_that_keeps_coming_is_not_idle(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    # Bytes 0.02 s apart for ~0.4 s, past 1.5 x the idle limit of 0.2 s, so only a watch
    # that sees the body move lets it through.
    resp = await transport.handle(HttpRequest(
        method="GET", url=f"{url}/trickle?n=20&gap=0.02",
        timeout=HttpTimeout(connect=0.05, read=0.2)))
    assert await resp.read() == b"x" * 20


async def test_a_watched_call_that_ran_out_of_time_leaves_its_task_uncancelled(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    # The watch ends the call by cancelling its task: the transport takes that
    # cancellation back, so the caller's next await runs.
    with pytest.raises(TransportError):
        await transport.handle(HttpRequest(method="GET", url=f"{url}/hang",
                                           timeout=HttpTimeout(connect=0.05, read=0.1)))
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)
    resp = await transport.handle(HttpRequest(method="GET", url=f"{url}/echo",
                                              timeout=HttpTimeout(connect=0.05, read=0.1)))
    assert resp.status == 200


async def test_a_caller_cancelling_a_watched_call_gets_its_cancellation(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    s, url = server
    call = asyncio.ensure_future(transport.handle(HttpRequest(
        method="GET", url=f"{url}/hang", timeout=HttpTimeout(connect=5, read=30))))
    while not call.done() and not s.seen_hang:
        await asyncio.sleep(0.005)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert call.cancelled()


async def test_the_callers_own_time_limit_around_a_watched_call_stays_the_callers(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    with pytest.raises(TimeoutError) as info:
        async with asyncio.timeout(0.05):
            await transport.handle(HttpRequest(method="GET", url=f"{url}/hang",
                                               timeout=HttpTimeout(connect=5, read=30)))
    assert not isinstance(info.value, TransportError)


async def test_the_whole_call_limit_names_itself(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(
            method="GET", url=f"{url}/stall",
            # A second in all: the stall never ends, and a loaded machine still gets the
            # request out well before the whole call's limit (so the phase is "read").
            timeout=HttpTimeout(connect=0.5, read=None, total=1.0)))
    assert "no full reply within the call's timeout of 1 s" in str(info.value)
    assert info.value.phase == "read" and info.value.request_sent is True


async def test_redirects_are_not_followed(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    resp = await transport.handle(HttpRequest(method="GET", url=f"{url}/redirect"))
    assert resp.status == 302
    assert resp.headers["location"] == "/echo"


async def test_invalid_url_is_local(transport: AiohttpTransport) -> None:
    with pytest.raises(TransportError) as info:
        await transport.handle(HttpRequest(method="GET", url="not a url"))
    assert info.value.request_sent is False


async def test_aclose_then_reuse_opens_a_new_session(
    server: tuple[Server, str], transport: AiohttpTransport
) -> None:
    _, url = server
    await transport.handle(HttpRequest(method="GET", url=f"{url}/echo"))
    await transport.aclose()
    resp = await transport.handle(HttpRequest(method="GET", url=f"{url}/echo"))
    assert resp.status == 200
