"""Attachments: every row of the spec's source and media-type tables, the size limit, the
address policy on every redirect hop, the sandbox rules, and the capability check.
Downloads go through the real AiohttpTransport to a loopback aiohttp server."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.http.netguard import AddressPolicy
from agentloom.messages import AudioPart, DocumentPart, ImagePart
from agentloom.providers import get_protocol
from agentloom.tools.attachments import (
    MAX_BYTES,
    AttachmentPolicy,
    AttachmentSpec,
    check_attachments,
    load_attachment,
)
from agentloom.transport import Transport

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 40
LOCAL = AttachmentPolicy(addresses=AddressPolicy(allowed=("127.0.0.1",)))
BY_NAME = AttachmentPolicy(addresses=AddressPolicy(allowed=("localhost",)))


class Site:
    """A loopback web server with a few routes for downloads and redirects."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.port = 0
        self.release = asyncio.Event()

    async def handler(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request.path)
        name = request.match_info["name"]
        if name == "photo.jpg":
            return web.Response(body=PNG, content_type="image/png")  # extension wins
        if name == "noext":
            return web.Response(body=PNG, content_type="image/webp")
        if name == "doc":
            return web.Response(body=b"%PDF-1.7", content_type="application/pdf")
        if name == "big":
            return web.Response(body=b"x" * 2048, content_type="image/png")
        if name == "chunked":
            response = web.StreamResponse(headers={"Content-Type": "image/png"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(8):
                await response.write(b"y" * 256)
            await response.write_eof()
            return response
        if name.startswith("hop"):
            left = int(name[3:])
            target = "/f/noext" if left == 0 else f"/f/hop{left - 1}"
            raise web.HTTPFound(target)
        if name == "to-loopback":
            raise web.HTTPFound(f"http://127.0.0.1:{self.port}/f/noext")
        if name == "to-decimal":
            raise web.HTTPFound(f"http://2130706433:{self.port}/f/noext")
        if name == "slow":
            await self.release.wait()  # set when the test's server stops
            return web.Response(body=PNG)
        if name == "to-ftp":
            raise web.HTTPFound("ftp://example.com/a.png")
        return web.Response(status=404, text="no such file")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = Site()
    app = web.Application()
    app.router.add_get("/f/{name}", s.handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    s.port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield s
    s.release.set()
    await runner.cleanup()


@pytest.fixture
async def transport() -> AsyncIterator[Transport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


async def load(spec: AttachmentSpec, transport: Transport, policy: AttachmentPolicy,
               base_dir: Path = Path(".")) -> object:
    return await load_attachment(spec, base_dir=base_dir, transport=transport, policy=policy)


# --- URLs -------------------------------------------------------------------------------


async def test_download_media_type_from_extension_then_content_type(
    site: Site, transport: Transport
) -> None:
    url = f"http://127.0.0.1:{site.port}/f"
    part = await load(AttachmentSpec(source=f"{url}/photo.jpg"), transport, LOCAL)
    assert part == ImagePart(media_type="image/jpeg", data=PNG)
    part = await load(AttachmentSpec(source=f"{url}/noext"), transport, LOCAL)
    assert part == ImagePart(media_type="image/webp", data=PNG)
    part = await load(AttachmentSpec(source=f"{url}/doc", type="pdf"), transport, LOCAL)
    assert part == DocumentPart(media_type="application/pdf", data=b"%PDF-1.7")
    with pytest.raises(ConfigError, match="HTTP 404"):
        await load(AttachmentSpec(source=f"{url}/missing"), transport, LOCAL)


async def test_redirects_followed_and_counted(site: Site, transport: Transport) -> None:
    url = f"http://127.0.0.1:{site.port}/f"
    part = await load(AttachmentSpec(source=f"{url}/hop4"), transport, LOCAL)
    assert isinstance(part, ImagePart) and part.data == PNG
    assert site.hits == ["/f/hop4", "/f/hop3", "/f/hop2", "/f/hop1", "/f/hop0", "/f/noext"]
    with pytest.raises(ConfigError, match="more than 5 redirects"):
        await load(AttachmentSpec(source=f"{url}/hop5"), transport, LOCAL)
    with pytest.raises(ConfigError, match="non-HTTP"):
        await load(AttachmentSpec(source=f"{url}/to-ftp"), transport, LOCAL)


async def test_redirect_to_loopback_is_refused(site: Site, transport: Transport) -> None:
    # The first hop is allowed by name; the redirect's own address is checked again.
    url = f"http://localhost:{site.port}/f"
    assert isinstance(await load(AttachmentSpec(source=f"{url}/noext"), transport, BY_NAME),
                      ImagePart)
    site.hits.clear()
    with pytest.raises(ConfigError, match=r"127\.0\.0\.1 a private, loopback"):
        await load(AttachmentSpec(source=f"{url}/to-loopback"), transport, BY_NAME)
    with pytest.raises(ConfigError, match=r"2130706433 is 127\.0\.0\.1"):
        await load(AttachmentSpec(source=f"{url}/to-decimal"), transport, BY_NAME)
    assert site.hits == ["/f/to-loopback", "/f/to-decimal"]  # the targets were never fetched


@pytest.mark.parametrize("fetch", ["local", "provider"])
@pytest.mark.parametrize("url", [
    "http://localhost/a.png", "http://127.0.0.1/a.png", "http://2130706433/a.png", "http://0x7f.1/a.png",
    "http://[::1]/a.png", "http://169.254.169.254/latest/meta-data",
    "http://10.0.0.8/a.png", "https://192.168.1.1/a.png",
])
async def test_private_addresses_refused_with_either_fetch(
    url: str, fetch: str, transport: Transport
) -> None:
    with pytest.raises(ConfigError, match="private, loopback or link-local"):
        await load(AttachmentSpec(source=url, fetch=fetch), transport,  # type: ignore[arg-type]
                   AttachmentPolicy())


async def test_fetch_provider_sends_the_url(transport: Transport) -> None:
    spec = AttachmentSpec(source="https://93.184.215.14/cat.jpg", fetch="provider")
    part = await load(spec, transport, AttachmentPolicy())
    assert part == ImagePart(media_type="image/jpeg", url="https://93.184.215.14/cat.jpg")
    with pytest.raises(ConfigError, match="images only"):
        await load(AttachmentSpec(source="https://93.184.215.14/a.pdf", type="pdf",
                                  fetch="provider"), transport, AttachmentPolicy())


async def test_sandbox_network_rules_apply_to_downloads(
    site: Site, transport: Transport
) -> None:
    url = f"http://127.0.0.1:{site.port}/f/noext"
    off = AttachmentPolicy(allow_network=False, addresses=LOCAL.addresses)
    with pytest.raises(ConfigError, match="allow_network"):
        await load(AttachmentSpec(source=url), transport, off)
    elsewhere = AttachmentPolicy(allowed_domains=("example.com",), addresses=LOCAL.addresses)
    with pytest.raises(ConfigError, match="allowed_domains"):
        await load(AttachmentSpec(source=url), transport, elsewhere)
    here = AttachmentPolicy(allowed_domains=("127.0.0.1",), addresses=LOCAL.addresses)
    assert isinstance(await load(AttachmentSpec(source=url), transport, here), ImagePart)
    assert site.hits == ["/f/noext"]


@pytest.mark.parametrize("name", ["big", "chunked"])
async def test_download_size_limit(site: Site, transport: Transport, name: str) -> None:
    small = AttachmentPolicy(addresses=LOCAL.addresses, max_bytes=1024)
    with pytest.raises(ConfigError, match="larger than"):
        await load(AttachmentSpec(source=f"http://127.0.0.1:{site.port}/f/{name}"),
                   transport, small)


async def test_download_timeout(site: Site, transport: Transport) -> None:
    hasty = AttachmentPolicy(addresses=LOCAL.addresses, download_timeout=0.05)
    with pytest.raises(ConfigError, match=r"download took over 0\.05 s"):
        await load(AttachmentSpec(source=f"http://127.0.0.1:{site.port}/f/slow"), transport,
                   hasty)
    assert AttachmentPolicy().download_timeout == 30.0


# --- inline sources ---------------------------------------------------------------------


async def test_data_url_decoded_and_its_type_wins(transport: Transport) -> None:
    data = "data:image/gif;base64," + base64.b64encode(b"GIF89a").decode()
    part = await load(AttachmentSpec(source=data, media_type="image/png"), transport, LOCAL)
    assert part == ImagePart(media_type="image/gif", data=b"GIF89a")
    text = await load(AttachmentSpec(source="data:audio/wav,RIFF%00", type="audio"),
                      transport, LOCAL)
    assert text == AudioPart(media_type="audio/wav", data=b"RIFF\0")
    with pytest.raises(ConfigError, match="contradicts"):
        await load(AttachmentSpec(source="data:application/pdf;base64,JVBERg==",
                                  type="image"), transport, LOCAL)
    with pytest.raises(ConfigError, match="invalid base64"):
        await load(AttachmentSpec(source="data:image/png;base64,@@@"), transport, LOCAL)


async def test_base64_string_sent_as_is(transport: Transport) -> None:
    raw = bytes(range(256)) * 2
    encoded = base64.b64encode(raw).decode()
    part = await load(AttachmentSpec(source=encoded, media_type="image/jpeg"), transport, LOCAL)
    assert part == ImagePart(media_type="image/jpeg", data=raw)
    fallback = await load(AttachmentSpec(source=encoded, type="audio"), transport, LOCAL)
    assert fallback == AudioPart(media_type="audio/wav", data=raw)


async def test_inline_size_limit(transport: Transport) -> None:
    small = AttachmentPolicy(max_bytes=100)
    payload = base64.b64encode(b"z" * 200).decode()
    with pytest.raises(ConfigError, match="larger than"):
        await load(AttachmentSpec(source=payload, media_type="image/png"), transport, small)
    with pytest.raises(ConfigError, match="larger than"):
        await load(AttachmentSpec(source="data:image/png;base64," + payload), transport, small)
    assert MAX_BYTES == 20 * 1024 * 1024


# --- files ------------------------------------------------------------------------------


async def test_file_relative_to_base_dir_and_fallbacks(
    tmp_path: Path, transport: Transport
) -> None:
    (tmp_path / "invoices").mkdir()
    (tmp_path / "invoices" / "may.pdf").write_bytes(b"%PDF")
    (tmp_path / "clip").write_bytes(b"RIFF")
    (tmp_path / "pic").write_bytes(PNG)
    (tmp_path / "song.mp3").write_bytes(b"ID3")
    policy = AttachmentPolicy()
    doc = await load(AttachmentSpec(source="invoices/may.pdf", type="pdf"), transport, policy,
                     tmp_path)
    assert doc == DocumentPart(media_type="application/pdf", data=b"%PDF")
    assert await load(AttachmentSpec(source="clip", type="audio"), transport, policy,
                      tmp_path) == AudioPart(media_type="audio/wav", data=b"RIFF")
    assert await load(AttachmentSpec(source="pic"), transport, policy,
                      tmp_path) == ImagePart(media_type="image/png", data=PNG)
    assert await load(AttachmentSpec(source="song.mp3", type="audio"), transport, policy,
                      tmp_path) == AudioPart(media_type="audio/mpeg", data=b"ID3")
    with pytest.raises(ConfigError, match="contradicts"):
        await load(AttachmentSpec(source="invoices/may.pdf"), transport, policy, tmp_path)
    with pytest.raises(ConfigError, match="contradicts"):
        await load(AttachmentSpec(source="pic", media_type="application/pdf"), transport,
                   policy, tmp_path)


async def test_missing_and_too_large_files(tmp_path: Path, transport: Transport) -> None:
    with pytest.raises(ConfigError, match=r"not found: .*nope\.png"):
        await load(AttachmentSpec(source="nope.png"), transport, AttachmentPolicy(), tmp_path)
    big = tmp_path / "big.png"
    with big.open("wb") as handle:  # sparse: 20 MB + 1 byte without writing them
        handle.truncate(MAX_BYTES + 1)
    with pytest.raises(ConfigError, match="larger than 20 MB"):
        await load(AttachmentSpec(source="big.png"), transport, AttachmentPolicy(), tmp_path)


async def test_sandbox_paths_resolved_first(tmp_path: Path, transport: Transport) -> None:
    allowed = tmp_path / "data"
    allowed.mkdir()
    (allowed / "ok.png").write_bytes(PNG)
    (tmp_path / "secret.png").write_bytes(PNG)
    (allowed / "link.png").symlink_to(tmp_path / "secret.png")
    policy = AttachmentPolicy(sandbox_enabled=True, readable_paths=(allowed,))
    assert isinstance(await load(AttachmentSpec(source="data/ok.png"), transport, policy,
                                 tmp_path), ImagePart)
    for source in ("secret.png", "data/../secret.png", "data/link.png",
                   str(tmp_path / "secret.png")):
        with pytest.raises(ConfigError, match="outside the sandbox"):
            await load(AttachmentSpec(source=source), transport, policy, tmp_path)
    # With the sandbox off, the same file is readable.
    assert isinstance(await load(AttachmentSpec(source="secret.png"), transport,
                                 AttachmentPolicy(), tmp_path), ImagePart)


def test_spec_validation() -> None:
    with pytest.raises(ConfigError, match="image, pdf or audio"):
        AttachmentSpec(source="x", type="video")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="local or provider"):
        AttachmentSpec(source="x", fetch="remote")  # type: ignore[arg-type]


# --- the provider capability table ------------------------------------------------------

IMAGE = ImagePart(data=PNG)
IMAGE_URL = ImagePart(url="https://example.com/a.png")
PDF = DocumentPart(data=b"%PDF")
WAV = AudioPart(media_type="audio/wav", data=b"RIFF")
MP3 = AudioPart(media_type="audio/mpeg", data=b"ID3")
OGG = AudioPart(media_type="audio/ogg", data=b"OggS")


@pytest.mark.parametrize(
    ("protocol", "model", "accepted"),
    [
        ("anthropic", "claude-sonnet-4-5", {"image", "image_url", "pdf"}),
        ("gemini", "gemini-2.5-flash", {"image", "pdf", "wav", "mp3", "ogg"}),
        ("ollama", "llama3.2:3b", {"image"}),
    ],
)
def test_capability_table(protocol: str, model: str, accepted: set[str]) -> None:
    caps = get_protocol(protocol).capabilities(model)
    parts = {"image": IMAGE, "image_url": IMAGE_URL, "pdf": PDF, "wav": WAV, "mp3": MP3,
             "ogg": OGG}
    for name, part in parts.items():
        reason = check_attachments([part], caps)
        assert (reason is None) == (name in accepted), (protocol, name, reason)
    assert check_attachments([], caps) is None


def test_capability_table_openai_row() -> None:
    caps = get_protocol("openai").capabilities("gpt-4o")
    assert check_attachments([IMAGE, IMAGE_URL], caps) is None
    assert check_attachments([PDF], caps) is not None
    assert check_attachments([WAV, MP3], caps) is None
    assert check_attachments([OGG], caps) is not None
