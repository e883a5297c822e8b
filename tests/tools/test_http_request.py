"""http_request against real loopback servers: allowed hops, refused hops, limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from agentloom.errors import ToolError
from agentloom.http import AiohttpTransport
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools.builtins import HttpRequestTool

CTX = ToolContext()


@dataclass
class Server:
    port: int
    hits: list[str] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Server, Server]]:
    a_app, b_app = web.Application(), web.Application()
    a, b = Server(0), Server(0)

    @web.middleware
    async def count_a(request: web.Request, handler):  # type: ignore[no-untyped-def]
        a.hits.append(f"{request.method} {request.path}")
        return await handler(request)

    @web.middleware
    async def count_b(request: web.Request, handler):  # type: ignore[no-untyped-def]
        b.hits.append(f"{request.method} {request.path}")
        return await handler(request)

    a_app.middlewares.append(count_a)
    b_app.middlewares.append(count_b)

    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def to_b(request: web.Request) -> web.Response:
        raise web.HTTPFound(b.url(request.query.get("path", "/secret")))

    async def to_ok(request: web.Request) -> web.Response:
        raise web.HTTPSeeOther("/echo")

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"y" * 100_000)

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such thing")

    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="late")

    async def secret(request: web.Request) -> web.Response:
        return web.Response(text="secret")

    async def echo(request: web.Request) -> web.Response:
        body = await request.text()
        auth = request.headers.get("Authorization", "-")
        return web.Response(text=f"{request.method} auth={auth} body={body}")

    a_app.router.add_get("/ok", ok)
    a_app.router.add_get("/to-b", to_b)
    a_app.router.add_post("/post-then-see-other", to_ok)
    a_app.router.add_get("/loop", loop)
    a_app.router.add_get("/big", big)
    a_app.router.add_get("/missing", missing)
    a_app.router.add_get("/slow", slow)
    a_app.router.add_route("*", "/echo", echo)
    b_app.router.add_get("/secret", secret)
    b_app.router.add_get("/echo", echo)
    runners = []
    for app, server in ((a_app, a), (b_app, b)):
        runner, port = await _serve(app)
        server.port = port
        runners.append(runner)
    yield a, b
    release.set()
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


def http(transport: AiohttpTransport, **policy: object) -> HttpRequestTool:
    return HttpRequestTool(
        transport=transport,
        policy=SandboxPolicy(**policy),  # type: ignore[arg-type]
        timeout=5,
    )


async def test_allowed_origin_is_fetched(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(transport, allow_network=True, allowed_addresses=(f"127.0.0.1:{a.port}",))
    assert await tool({"url": a.url("/ok")}, CTX) == "hello"


async def test_network_is_off_by_default(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(transport, allowed_addresses=(f"127.0.0.1:{a.port}",))
    with pytest.raises(SandboxViolation, match="network access is off"):
        await tool({"url": a.url("/ok")}, CTX)
    assert a.hits == []


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "[::1]", "localhost", "2130706433", "0x7f.0.0.1", "127.1", "[::ffff:127.0.0.1]"],
)
async def test_loopback_in_any_form_is_refused(servers, transport, host: str) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(transport, allow_network=True)
    with pytest.raises(SandboxViolation, match="refused"):
        await tool({"url": a.url("/ok", host=host)}, CTX)
    assert a.hits == []


async def test_private_and_link_local_addresses_are_refused_even_when_disabled(transport) -> None:  # type: ignore[no-untyped-def]
    tool = http(transport, enabled=False)
    for url in (
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
    ):
        with pytest.raises(SandboxViolation, match="private, loopback or link-local"):
            await tool({"url": url}, CTX)


async def test_a_redirect_to_a_disallowed_address_is_refused(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, b = servers
    tool = http(transport, allow_network=True, allowed_addresses=(f"127.0.0.1:{a.port}",))
    with pytest.raises(SandboxViolation, match=rf"refused 'http://127.0.0.1:{b.port}/secret'"):
        await tool({"url": a.url("/to-b")}, CTX)
    assert a.hits == ["GET /to-b"] and b.hits == []


async def test_allowed_redirects_are_followed_and_credentials_stay_home(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, b = servers
    tool = http(
        transport,
        allow_network=True,
        allowed_addresses=(f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"),
    )
    out = await tool(
        {"url": a.url("/to-b?path=/echo"), "headers": {"Authorization": "Bearer s3cret"}}, CTX
    )
    assert out == "GET auth=- body="
    # 303 after a POST: the next hop is a GET without the body.
    out = await tool(
        {
            "url": a.url("/post-then-see-other"),
            "method": "POST",
            "body": {"x": 1},
            "headers": {"Authorization": "Bearer s3cret"},
        },
        CTX,
    )
    assert out == "GET auth=Bearer s3cret body="


async def test_a_json_body_is_sent_as_json(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(transport, allow_network=True, allowed_addresses=("127.0.0.1",))
    out = await tool({"url": a.url("/echo"), "method": "post", "body": {"k": [1, 2]}}, CTX)
    assert out == 'POST auth=- body={"k": [1, 2]}'


async def test_more_than_five_redirects_is_an_error(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(transport, allow_network=True, allow_private_addresses=True)
    with pytest.raises(ToolError, match="more than 5 redirects"):
        await tool({"url": a.url("/loop")}, CTX)
    assert len(a.hits) == 6


async def test_domains_and_schemes_restrict_urls_even_when_disabled(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = http(
        transport, enabled=False, allowed_domains=("example.com",), allow_private_addresses=True
    )
    with pytest.raises(SandboxViolation, match=r"not in sandbox\.allowed_domains"):
        await tool({"url": a.url("/ok")}, CTX)
    off = http(transport, enabled=False, allow_network=False)
    with pytest.raises(SandboxViolation, match="network access is off"):
        await off({"url": a.url("/ok")}, CTX)
    for url in ("file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"):
        with pytest.raises(SandboxViolation, match="allowed_schemes"):
            await tool({"url": url}, CTX)
    assert a.hits == []


async def test_body_is_truncated_and_errors_carry_the_status(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = HttpRequestTool(
        transport=transport,
        policy=SandboxPolicy(
            allow_network=True, allowed_addresses=("127.0.0.1",), max_output_bytes=50
        ),
    )
    out = await tool({"url": a.url("/big")}, CTX)
    assert out == "y" * 50 + "\n[output truncated at 50 bytes]"
    with pytest.raises(ToolError, match="returned HTTP 404: no such thing"):
        await tool({"url": a.url("/missing")}, CTX)


async def test_the_timeout_is_enforced(servers, transport) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    tool = HttpRequestTool(
        transport=transport,
        timeout=0.2,
        policy=SandboxPolicy(allow_network=True, allowed_addresses=("127.0.0.1",)),
    )
    with pytest.raises(ToolError, match=r"timed out after 0\.2 s"):
        await tool({"url": a.url("/slow")}, CTX)


async def test_bad_arguments_are_tool_errors(transport) -> None:  # type: ignore[no-untyped-def]
    tool = http(transport, allow_network=True)
    with pytest.raises(ToolError, match="missing required argument 'url'"):
        await tool({}, CTX)
    with pytest.raises(ToolError, match="unsupported method 'TRACE'"):
        await tool({"url": "http://x/", "method": "TRACE"}, CTX)
