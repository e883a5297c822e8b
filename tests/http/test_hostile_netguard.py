"""URLs the address guard cannot even read: a port past 65535 or not a number, an
unclosed IPv6 bracket. `check_url` promises AddressRefused with a reason; urllib's own
ValueError ("Port out of range 0-65535") came out instead, and an attachment URL from a
template (so, indirectly, from model output) then escaped its ConfigError mapping as a
bare ValueError. Every case fails while parsing: no name is looked up."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.http.netguard import AddressPolicy, AddressRefused, check_url, parse_host
from agentloom.tools.attachments import AttachmentSpec, load_attachment

UNREADABLE = [
    "http://example.com:99999/",
    "https://example.com:65536/x.png",
    "https://example.com:abc/x.png",
    "http://example.com:-1/",
    "http://[::1/",
]


@pytest.mark.parametrize("url", UNREADABLE)
async def test_an_unreadable_url_is_refused_with_a_reason(url: str) -> None:
    with pytest.raises(AddressRefused, match="URL is not valid"):
        parse_host(url)
    with pytest.raises(AddressRefused, match="URL is not valid"):
        await check_url(url, AddressPolicy())


@pytest.mark.parametrize("fetch", ["provider", "local"])
@pytest.mark.parametrize("url", UNREADABLE)
async def test_an_attachment_at_such_a_url_is_a_config_error(url: str, fetch: str) -> None:
    # The real transport: a fetch would end as a TransportError, not this refusal.
    spec = AttachmentSpec(type="image", source=url, fetch=fetch)  # type: ignore[arg-type]
    transport = AiohttpTransport()
    try:
        with pytest.raises(ConfigError, match="attachment URL refused"):
            await load_attachment(spec, base_dir=Path("."), transport=transport)
    finally:
        await transport.aclose()
