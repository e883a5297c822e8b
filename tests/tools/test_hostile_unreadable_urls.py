"""URLs urllib cannot read (`http://[::1/`: an unclosed IPv6 bracket) from the model or a
hostile server, where the tools read them themselves before netguard does: the sandbox's
URL check, an attachment's source, and a redirect's Location. Each escaped as urllib's bare
ValueError ("Invalid IPv6 URL"); each is now a refusal in words. Nothing is looked up or
fetched for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import ConfigError, ToolError
from agentloom.http import BufferedResponse, HttpRequest, MockTransport
from agentloom.loop import ToolContext
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools.attachments import AttachmentPolicy, AttachmentSpec, load_attachment
from agentloom.tools.builtins import HttpRequestTool

BAD = ["http://[::1/", "https://[::1/x.png", "http://[169.254.169.254/latest"]


def _never(request: HttpRequest) -> BufferedResponse:
    raise AssertionError(f"nothing may be fetched, got {request.url}")


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("url", BAD)
async def test_the_sandbox_refuses_an_unclosed_bracket(url: str, enabled: bool) -> None:
    policy = SandboxPolicy(enabled=enabled, allow_network=True)
    with pytest.raises(SandboxViolation, match=r"URL is not valid \(Invalid IPv6 URL\)"):
        await policy.check_url(url)
    tool = HttpRequestTool(transport=MockTransport(_never), policy=policy, timeout=5)
    with pytest.raises(SandboxViolation, match="URL is not valid"):
        await tool({"url": url}, ToolContext())


@pytest.mark.parametrize("fetch", ["local", "provider"])
@pytest.mark.parametrize("url", BAD)
async def test_an_attachment_with_an_unclosed_bracket_is_a_config_error(
        url: str, fetch: str) -> None:
    spec = AttachmentSpec(type="image", source=url, fetch=fetch)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"attachment URL refused: URL is not valid"):
        await load_attachment(spec, base_dir=Path("."), transport=MockTransport(_never))


def _redirect_to(location: str) -> MockTransport:
    seen: list[str] = []

    def reply(request: HttpRequest) -> BufferedResponse:
        seen.append(request.url)
        if len(seen) > 1:
            raise AssertionError(f"the redirect was followed to {request.url}")
        return BufferedResponse(status=302, headers={"location": location}, body=b"")

    return MockTransport(reply)


@pytest.mark.parametrize("location", ["http://[::1/", "//[::1/x"])
async def test_a_redirect_to_an_unclosed_bracket_is_refused(location: str) -> None:
    # 203.0.113.7 (TEST-NET-3) is not global; allowing it lets the first hop through
    # without any name lookup, and the mock answers it.
    policy = SandboxPolicy(allow_network=True, allowed_addresses=("203.0.113.7",))
    tool = HttpRequestTool(transport=_redirect_to(location), policy=policy, timeout=5)
    with pytest.raises(ToolError, match=r"redirects to a URL that is not valid"):
        await tool({"url": "http://203.0.113.7/a"}, ToolContext())

    from_sandbox = {"allowed_addresses": ["203.0.113.7"]}

    with pytest.raises(ConfigError, match=r"redirect to a URL that is not valid"):
        await load_attachment(AttachmentSpec(source="http://203.0.113.7/a.png"),
                              base_dir=Path("."), transport=_redirect_to(location),
                              policy=AttachmentPolicy.from_sandbox(from_sandbox))
