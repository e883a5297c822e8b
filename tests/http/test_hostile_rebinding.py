"""DNS rebinding: a name that answers a public address to the address check and 127.0.0.1
(or the cloud metadata address) to the connection.

The check (`SandboxPolicy.check_url`, the attachments' `check_url`) and aiohttp's connector
each looked the name up, and nothing tied the second answer to the first: the connection
went wherever the second lookup said. Now a tool's or an attachment's request runs under a
netguard pin, and the transport's pinned resolver judges the very addresses it connects to.

No real DNS: both lookups (netguard's and aiohttp's threaded resolver) go through the
running loop's `getaddrinfo`, which `RebindingDNS` replaces for one name. The servers are
real aiohttp servers on 127.0.0.1 that record every request they get.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

# The TLS test's self-signed certificate (a test dependency, in the `test` extra).
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agentloom.errors import ConfigError, ToolError
from agentloom.http import AiohttpTransport, HttpRequest
from agentloom.http.netguard import AddressRefused, current_pin, pinned
from agentloom.loop import ToolContext
from agentloom.recording import Recorder, RecordTransport
from agentloom.tools import SandboxPolicy, SandboxViolation
from agentloom.tools.attachments import AttachmentPolicy, AttachmentSpec, load_attachment
from agentloom.tools.builtins import HttpRequestTool

NAME = "rebind.test"  # `.test` is reserved: it never resolves for real
PUBLIC = "93.184.216.34"
CTX = ToolContext()
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


class RebindingDNS:
    """A zero-TTL name: lookup i answers `answers[i]` (the last one from then on). Every
    lookup is recorded; any other name is unknown (no real DNS in tests)."""

    def __init__(self, *answers: str | tuple[str, ...]) -> None:
        self.answers = [(a,) if isinstance(a, str) else a for a in answers]
        self.lookups: list[tuple[str, ...]] = []

    async def getaddrinfo(self, host: Any, port: Any, *, family: int = 0, type: int = 0,
                          proto: int = 0, flags: int = 0) -> list[Any]:
        if host != NAME:
            raise socket.gaierror(socket.EAI_NONAME, f"{host!r}: no real DNS in tests")
        answer = self.answers[min(len(self.lookups), len(self.answers) - 1)]
        self.lookups.append(answer)
        port = int(port or 0)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)) if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answer
        ]


@dataclass
class Server:
    port: int = 0
    hits: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    sni: list[str | None] = field(default_factory=list)

    def url(self, path: str, host: str = NAME, scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


async def _start(app: web.Application, server: Server,
                 context: ssl.SSLContext | None = None) -> web.AppRunner:
    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        server.hits.append(f"{request.method} {request.path}")
        server.hosts.append(request.host)
        response: web.StreamResponse = await handler(request)
        return response

    app.middlewares.append(record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    server.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner


@pytest.fixture
async def loopback() -> AsyncIterator[tuple[Server, Server]]:
    """`secret`, the loopback service a rebinding name is after, and `door`, an allowed
    loopback server whose /to-secret redirects to the rebinding name."""
    secret, door = Server(), Server()

    async def image(request: web.Request) -> web.Response:
        return web.Response(body=PNG, content_type="image/png")

    secret_app = web.Application()
    secret_app.router.add_get("/secret", image)
    door_app = web.Application()

    async def to_secret(request: web.Request) -> web.Response:
        raise web.HTTPFound(secret.url("/secret"))

    door_app.router.add_get("/to-secret", to_secret)
    runners = [await _start(secret_app, secret), await _start(door_app, door)]
    yield secret, door
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


def _dns(monkeypatch: pytest.MonkeyPatch, *answers: str | tuple[str, ...]) -> RebindingDNS:
    dns = RebindingDNS(*answers)
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", dns.getaddrinfo)
    return dns


def _tool(transport: AiohttpTransport, *allowed: str) -> HttpRequestTool:
    policy = SandboxPolicy(allow_network=True, allowed_addresses=allowed)
    return HttpRequestTool(transport=transport, policy=policy, timeout=5)


async def _attach(url: str, transport: AiohttpTransport, *allowed: str) -> Any:
    policy = AttachmentPolicy.from_sandbox({"allowed_addresses": list(allowed)})
    return await load_attachment(AttachmentSpec(source=url), base_dir=Path("."),
                                 transport=transport, policy=policy)


# --- the hole: checked public, connected to loopback or metadata ----------------------------


@pytest.mark.parametrize("rebound", ["127.0.0.1", "169.254.169.254"])
async def test_http_request_to_a_rebinding_name_is_refused_at_connect(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch, rebound: str) -> None:
    secret, _ = loopback
    dns = _dns(monkeypatch, PUBLIC, rebound)
    with pytest.raises(SandboxViolation, match=(
            rf"refused '{secret.url('/secret')}': {NAME} resolves to a private, loopback "
            rf"or link-local address \({rebound}\) when connecting")):
        await _tool(transport)({"url": secret.url("/secret")}, CTX)
    assert secret.hits == []
    assert dns.lookups == [(PUBLIC,), (rebound,)]  # the check's, then the connection's


@pytest.mark.parametrize("rebound", ["127.0.0.1", "169.254.169.254"])
async def test_an_attachment_at_a_rebinding_name_is_refused_at_connect(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch, rebound: str) -> None:
    secret, _ = loopback
    dns = _dns(monkeypatch, PUBLIC, rebound)
    with pytest.raises(ConfigError, match=(
            rf"attachment URL refused: refused '{secret.url('/secret')}': {NAME} resolves "
            rf"to a private, loopback or link-local address \({rebound}\)")):
        await _attach(secret.url("/secret"), transport)
    assert secret.hits == []
    assert dns.lookups == [(PUBLIC,), (rebound,)]


async def test_a_redirect_to_a_rebinding_name_is_refused_at_connect_too(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The door (127.0.0.1 on its own port, allowed) redirects to the rebinding name on the
    secret's port, which no rule allows: the hop's check sees a public address, its
    connection is refused."""
    secret, door = loopback
    _dns(monkeypatch, PUBLIC, "127.0.0.1")
    allowed = f"127.0.0.1:{door.port}"
    with pytest.raises(SandboxViolation, match="when connecting"):
        await _tool(transport, allowed)({"url": door.url("/to-secret", "127.0.0.1")}, CTX)
    assert door.hits == ["GET /to-secret"] and secret.hits == []

    door.hits.clear()
    _dns(monkeypatch, PUBLIC, "127.0.0.1")
    with pytest.raises(ConfigError, match=r"attachment URL refused: .* when connecting"):
        await _attach(door.url("/to-secret", "127.0.0.1"), transport, allowed)
    assert door.hits == ["GET /to-secret"] and secret.hits == []


async def test_the_pin_holds_through_a_recording_transport(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`agentloom run --record` wraps the aiohttp transport; the pin reaches it through
    the wrapper (the same task), so a recorded run is guarded the same way."""
    secret, _ = loopback
    _dns(monkeypatch, PUBLIC, "127.0.0.1")
    recording = RecordTransport(transport, Recorder(str(tmp_path / "run.jsonl")))
    tool = HttpRequestTool(transport=recording, policy=SandboxPolicy(allow_network=True),
                           timeout=5)
    with pytest.raises(SandboxViolation, match="when connecting"):
        await tool({"url": secret.url("/secret")}, CTX)
    assert secret.hits == []


# --- what still works -----------------------------------------------------------------------


async def test_an_allowed_name_connects_to_its_checked_address_and_keeps_its_name(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin narrows the connection's own answer to the allowed addresses: a
    metadata address in it is dropped, the allowed loopback port is reached, and the
    request still names its host (only the lookup is pinned)."""
    secret, _ = loopback
    dns = _dns(monkeypatch, "127.0.0.1", ("169.254.169.254", "127.0.0.1"))
    allowed = f"127.0.0.1:{secret.port}"
    body = await _tool(transport, allowed)({"url": secret.url("/secret")}, CTX)
    assert "PNG" in body
    assert secret.hits == ["GET /secret"]
    assert secret.hosts == [f"{NAME}:{secret.port}"]
    assert dns.lookups == [("127.0.0.1",), ("169.254.169.254", "127.0.0.1")]

    _dns(monkeypatch, "127.0.0.1", ("169.254.169.254", "127.0.0.1"))
    part = await _attach(secret.url("/secret"), transport, allowed)
    assert part.data == PNG and secret.hits == ["GET /secret"] * 2


async def test_tls_still_sends_the_host_name_as_sni(
        tmp_path: Path, transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned HTTPS connection goes to 127.0.0.1 yet offers `rebind.test` in the TLS
    handshake (SNI), so the certificate is checked against the name (here it fails: the
    certificate is self-signed, and that refusal is the point)."""
    cert, key = _self_signed(tmp_path)
    server = Server()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: server.sni.append(name)  # type: ignore[assignment, func-returns-value]
    runner = await _start(web.Application(), server, context)
    try:
        _dns(monkeypatch, "127.0.0.1")
        tool = _tool(transport, f"127.0.0.1:{server.port}")
        with pytest.raises(ToolError, match=r"certificate|SSL|tls"):
            await tool({"url": server.url("/", scheme="https")}, CTX)
    finally:
        await runner.cleanup()
    assert server.sni == [NAME]


async def test_requests_outside_a_pin_are_unchanged(
        loopback: tuple[Server, Server], transport: AiohttpTransport,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider calls run under no pin: a model server on loopback stays reachable by
    name, through the ordinary pooled session."""
    secret, _ = loopback
    _dns(monkeypatch, "127.0.0.1")
    assert current_pin() is None
    response = await transport.handle(HttpRequest(method="GET", url=secret.url("/secret")))
    assert response.status == 200 and secret.hits == ["GET /secret"]


async def test_an_ip_literal_under_a_pin_is_judged_before_the_request(
        loopback: tuple[Server, Server], transport: AiohttpTransport) -> None:
    """aiohttp connects to an IP literal without a lookup, so the pin judges the literal
    itself, read as aiohttp reads the URL."""
    secret, _ = loopback
    with pinned(lambda host, port, address: False), pytest.raises(
            AddressRefused, match=r"127\.0\.0\.1 resolves to a private"):
        await transport.handle(HttpRequest(method="GET",
                                           url=secret.url("/secret", "127.0.0.1")))
    assert secret.hits == []


def test_a_pin_inside_a_pin_narrows_it() -> None:
    def only(address: str) -> Any:
        return lambda host, port, a: a == address or a == "10.0.0.1"

    with pinned(only("10.0.0.2")):
        with pinned(only("10.0.0.3")):
            pin = current_pin()
            assert pin is not None
            assert [pin("h", 80, a) for a in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [
                True, False, False]
        assert current_pin() is not None
    assert current_pin() is None


# --- a self-signed certificate for the TLS test ---------------------------------------------


def _self_signed(where: Path) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


@pytest.fixture(autouse=True)
def _no_pin_leaks() -> Iterator[None]:
    yield
    assert current_pin() is None
