"""A user and password in a base URL (a proxy's login) go as `Authorization: Basic`;
beside a key the provider sends as `Authorization: Bearer` they are refused once, when
the endpoint is made, in words that name the clash and not the password."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from agentloom.cli import main
from agentloom.errors import ConfigError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import Endpoint, get_protocol, vendor_endpoint
from agentloom.routing import ProviderClient
from agentloom.testing.fake_anthropic import FakeAnthropicServer
from agentloom.testing.fake_ollama import FakeOllamaServer

PASSWORD = "pa55-w0rd-xyz"


def with_login(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://proxyuser:{PASSWORD}@{rest}"


def basic() -> str:
    return "Basic " + base64.b64encode(f"proxyuser:{PASSWORD}".encode()).decode()


@pytest.mark.parametrize(("vendor", "key"), [
    ("openai", "sk-1"), ("generic_openai", "sk-1"), ("ollama", "ok-1"),
])
def test_a_login_beside_a_bearer_key_is_refused_naming_no_password(vendor: str,
                                                                   key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        vendor_endpoint(vendor, api_key=key, base_url=with_login("http://127.0.0.1:1/v1"))
    said = str(caught.value)
    assert f"provider {vendor!r}" in said and "Authorization: Bearer" in said
    assert PASSWORD not in said and "proxyuser" not in said


def test_a_login_beside_an_authorization_header_is_refused() -> None:
    with pytest.raises(ConfigError, match="an Authorization header of its own"):
        vendor_endpoint("generic_openai", base_url=with_login("http://127.0.0.1:1/v1"),
                        headers={"Authorization": "Token abc"})


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:1/v1/@team",  # an @ in the path is no login
    "http://127.0.0.1:1/v1?owner=a@b",
])
def test_an_at_sign_outside_the_authority_is_no_login(url: str) -> None:
    assert vendor_endpoint("openai", api_key="sk-1", base_url=url).base_url == url


async def test_a_keyless_server_behind_a_login_gets_it_as_basic() -> None:
    async with FakeOllamaServer() as server:
        transport = AiohttpTransport()
        endpoint = Endpoint(name="ollama", protocol="ollama",
                            base_url=with_login(server.base_url))
        client = ProviderClient(endpoint, get_protocol("ollama"), transport)
        try:
            reply = await client.complete(
                ModelRequest(model="llama3", messages=(Message.user("hi"),)))
        finally:
            await transport.aclose()
    assert reply.text
    assert server.requests[0].headers["authorization"] == basic()


async def test_a_key_in_its_own_header_goes_beside_the_login() -> None:
    async with FakeAnthropicServer() as server:
        transport = AiohttpTransport()
        endpoint = vendor_endpoint("anthropic", api_key="ak-1",
                                   base_url=with_login(server.base_url))
        client = ProviderClient(endpoint, get_protocol("anthropic"), transport)
        try:
            await client.complete(ModelRequest(
                model="claude-3-5-haiku-latest", messages=(Message.user("hi"),),
                max_tokens=64))
        finally:
            await transport.aclose()
    seen = server.requests[0].headers
    assert seen["authorization"] == basic() and seen["x-api-key"] == "ak-1"


def test_the_cli_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: f\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    monkeypatch.setenv("OPENAI_BASE_URL", with_login("http://127.0.0.1:1/v1"))
    code = main(["run", str(flow), "--provider", "openai", "--model", "gpt-4o-mini"])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "base URL carries a user name and password" in lines[0]
    assert PASSWORD not in out + err
    store = tmp_path / ".agentloom" / "runs.db"
    assert not store.exists() or PASSWORD.encode() not in store.read_bytes()
