"""URLs urllib cannot read (`http://[::1/`: an unclosed IPv6 bracket) from the model or a
hostile server, where the tools read them themselves before netguard does: the sandbox's
URL check, an attachment's source, and a redirect's Location. Each escaped as urllib's bare
ValueError ("Invalid IPv6 URL"); each is now a refusal in words. Nothing is looked up or
fetched for them: the real transport is used, and a fetch would end as a TransportError.
The redirect comes from a real server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agentloom.errors import ConfigError, ToolError
from agentloom.http import AiohttpTransport
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools.attachments import AttachmentPolicy, AttachmentSpec, load_attachment
from agentloom.tools.builtins import HttpRequestTool

BAD = ["http://[::1/", "https://[::1/x.png", "http://[169.254.169.254/latest"]


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("url", BAD)
async def test_the_sandbox_refuses_an_unclosed_bracket(
        url: str, enabled: bool, transport: AiohttpTransport) -> None:
    policy = SandboxPolicy(enabled=enabled, allow_network=True)
    with pytest.raises(SandboxViolation, match=r"URL is not valid \(Invalid IPv6 URL\)"):
        await policy.check_url(url)
    tool = HttpRequestTool(transport=transport, policy=policy, timeout=5)
    with pytest.raises(SandboxViolation, match="URL is not valid"):
        await tool({"url": url}, ToolContext())


@pytest.mark.parametrize("fetch", ["local", "provider"])
@pytest.mark.parametrize("url", BAD)
async def test_an_attachment_with_an_unclosed_bracket_is_a_config_error(
        url: str, fetch: str, transport: AiohttpTransport) -> None:
    spec = AttachmentSpec(type="image", source=url, fetch=fetch)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"attachment URL refused: URL is not valid"):
        await load_attachment(spec, base_dir=Path("."), transport=transport)


@pytest.fixture
async def redirector() -> AsyncIterator[tuple[str, list[str], list[str]]]:
    """A server on 127.0.0.1 whose `/a?to=LOCATION` redirects there: its base URL, the
    paths it was asked for, and the Location to send (set by the test)."""
    hits: list[str] = []
    location: list[str] = []

    async def hop(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(status=302, headers={"Location": location[0]})

    app = web.Application()
    app.router.add_get("/{name}", hop)
    async with TestServer(app, host="127.0.0.1") as server:
        yield f"127.0.0.1:{server.port}", hits, location


@pytest.mark.parametrize("location", ["http://[::1/", "//[::1/x"])
async def test_a_redirect_to_an_unclosed_bracket_is_refused(
        location: str, transport: AiohttpTransport,
        redirector: tuple[str, list[str], list[str]]) -> None:
    server, hits, sent = redirector
    sent.append(location)
    policy = SandboxPolicy(allow_network=True, allowed_addresses=(server,))
    tool = HttpRequestTool(transport=transport, policy=policy, timeout=5)
    with pytest.raises(ToolError, match=r"redirects to a URL that is not valid"):
        await tool({"url": f"http://{server}/a"}, ToolContext())
    assert hits == ["/a"]  # the first hop answered, the redirect not followed

    with pytest.raises(ConfigError, match=r"redirect to a URL that is not valid"):
        await load_attachment(AttachmentSpec(source=f"http://{server}/a.png"),
                              base_dir=Path("."), transport=transport,
                              policy=AttachmentPolicy.from_sandbox(
                                  {"allowed_addresses": [server]}))
    assert hits == ["/a", "/a.png"]
