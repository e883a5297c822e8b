"""Real recorded traffic, replayed on loopback to our providers (see README.md here).

Each case is one recorded exchange. A loopback server sends the recorded reply byte for
byte (streams whole and line by line over HTTP; byte by byte straight into the stream
decoder); our public client (`ProviderClient` over `AiohttpTransport`) decodes it, and
the result is compared with what the recorded body says (`_oracle.py`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agentloom.errors import ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningPart,
    VendorPart,
)
from agentloom.providers import Endpoint, get_protocol
from agentloom.providers._assemble import ResponseBuilder
from agentloom.routing import ProviderClient

from ._oracle import ORACLES, Expected
from ._requests import Unmodelled, conversation, shape, tool_names

FIXTURES = Path(__file__).parent / "fixtures"
FAMILY_PROTOCOL = {"anthropic": "anthropic", "openai": "openai", "compat": "openai",
                   "gemini": "gemini", "responses": "openai"}
FAMILY_API = {"openai": "chat_completions", "compat": "chat_completions",
              "responses": "responses"}
"""OpenAI's two APIs are one protocol, `openai`; the endpoint's `api` picks the wire."""


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines = path.read_text().splitlines()
        cases.extend(json.loads(line) for line in lines[1:] if line.strip())
    return [c for c in cases if c["family"] in ORACLES]


CASES = load_cases()
STREAMS = [c for c in CASES if c["stream"]]
OK_STREAMS = [c for c in STREAMS if c["response"]["status"] == 200]
"""Streams with a 200 status: their body goes to the stream decoder."""


def key(case: dict[str, Any]) -> str:
    """A case's unique name: its family and id (one cassette may feed two families)."""
    return f"{case['family']}:{case['id']}"


def model_of(case: dict[str, Any]) -> str:
    body = case["request"]["body"]
    if case["family"] == "gemini":
        return str(case["request"]["path"].split("/models/")[1].split(":")[0])
    return str(body.get("model", "unknown"))


def base_path(case: dict[str, Any]) -> str:
    return {"anthropic": "", "gemini": "", "openai": "/v1"}.get(case["family"], "/v1")


class ReplayServer:
    """Answers every request with the case named in its `x-case` header, as recorded."""

    def __init__(self) -> None:
        self.cases = {key(c): c for c in CASES}
        self.seen: list[tuple[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        case = self.cases[request.headers["x-case"]]
        self.seen.append((request.path, await request.json()))
        resp = case["response"]
        body = resp["body"].encode("utf-8")
        ctype = resp["content_type"] or "application/json"
        if request.headers.get("x-chunking") != "lines":
            return web.Response(status=resp["status"], body=body,
                                headers={"content-type": ctype})
        out = web.StreamResponse(status=resp["status"], headers={"content-type": ctype})
        await out.prepare(request)
        for line in body.splitlines(keepends=True):
            await out.write(line)
        await out.write_eof()
        return out

    async def __aenter__(self) -> ReplayServer:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


@pytest.fixture
async def replay() -> AsyncIterator[tuple[ReplayServer, AiohttpTransport]]:
    transport = AiohttpTransport()
    async with ReplayServer() as server:
        yield server, transport
    await transport.aclose()


def endpoint_for(case: dict[str, Any], url: str, chunking: str) -> Endpoint:
    return Endpoint(name=case["vendor"], protocol=FAMILY_PROTOCOL[case["family"]],
                    base_url=url + base_path(case), api_key="test-key",
                    api=FAMILY_API.get(case["family"]),
                    headers={"x-case": key(case), "x-chunking": chunking})


def request_for(case: dict[str, Any]) -> ModelRequest:
    return ModelRequest(model=model_of(case), messages=(Message.user("replay"),),
                        stream=case["stream"])


def check(resp: ModelResponse, want: Expected) -> None:
    assert resp.text == want.text
    got_calls = [(c.name, json.loads(c.arguments) if c.arguments.strip() else {})
                 for c in resp.tool_calls]
    assert got_calls == want.tool_calls
    assert all(c.id for c in resp.tool_calls)
    assert resp.finish_reason == want.finish_reason
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
            u.reasoning_tokens) == want.usage
    assert resp.reasoning == want.reasoning
    assert [p.signature for p in resp.parts
            if isinstance(p, ReasoningPart) and p.signature] == want.signatures
    assert resp.model == (want.model or model_of_placeholder(resp))
    assert [p.data for p in resp.parts if isinstance(p, VendorPart)] == want.vendor_blocks


def model_of_placeholder(resp: ModelResponse) -> str:
    return resp.model  # the reply named no model: ours is then the requested one


async def complete(case: dict[str, Any], server: ReplayServer, transport: AiohttpTransport,
                   chunking: str) -> ModelResponse | ProviderError:
    protocol = get_protocol(FAMILY_PROTOCOL[case["family"]])
    client = ProviderClient(endpoint_for(case, server.url, chunking), protocol, transport)
    try:
        return await client.complete(request_for(case))
    except ProviderError as exc:
        return exc


def check_outcome(case: dict[str, Any], got: ModelResponse | ProviderError) -> None:
    want = ORACLES[case["family"]](case)
    if want.error_status is not None:
        assert isinstance(got, ProviderError), got
        assert got.status == want.error_status
        assert got.retryable == (want.error_status in (429, 500, 502, 503, 504, 529))
        return
    assert isinstance(got, ModelResponse), got
    check(got, want)


@pytest.mark.parametrize("case", CASES, ids=[key(c) for c in CASES])
async def test_recorded_reply_decodes(
    case: dict[str, Any], replay: tuple[ReplayServer, AiohttpTransport]
) -> None:
    server, transport = replay
    check_outcome(case, await complete(case, server, transport, "whole"))


@pytest.mark.parametrize("case", STREAMS, ids=[key(c) for c in STREAMS])
async def test_recorded_stream_decodes_line_by_line(
    case: dict[str, Any], replay: tuple[ReplayServer, AiohttpTransport]
) -> None:
    server, transport = replay
    check_outcome(case, await complete(case, server, transport, "lines"))


@pytest.mark.parametrize("case", OK_STREAMS, ids=[key(c) for c in OK_STREAMS])
def test_recorded_stream_decodes_byte_by_byte(case: dict[str, Any]) -> None:
    want = ORACLES[case["family"]](case)
    protocol = get_protocol(FAMILY_PROTOCOL[case["family"]])
    request = request_for(case)
    endpoint = endpoint_for(case, "http://127.0.0.1:1", "bytes")
    decoder = protocol.stream_decoder(request, endpoint)
    builder = ResponseBuilder(request.model)
    body = case["response"]["body"].encode("utf-8")
    try:
        for i in range(len(body)):
            for event in decoder.feed(body[i:i + 1]):
                builder.add(event)
        for event in decoder.close():
            builder.add(event)
    except ProviderError as exc:
        assert want.error_status is not None, exc
        assert exc.status == want.error_status
        return
    assert want.error_status is None
    check(builder.build(provider=endpoint.name), want)


# --- our request for the same conversation --------------------------------------------

def _comparable(case: dict[str, Any]) -> ModelRequest | None:
    try:
        return conversation(case)
    except Unmodelled:
        return None


SHAPE_FAMILIES = ("anthropic", "openai", "gemini", "compat", "responses")
ACCEPTED_FIELDS = {
    family: {key for c in CASES if c["family"] == family and c["response"]["status"] == 200
             for key in c["request"]["body"]}
    for family in SHAPE_FAMILIES
}
"""Top-level fields some recorded request sent and the provider accepted."""

SHAPED = [(c, r) for c in CASES if c["family"] in SHAPE_FAMILIES
          and c["response"]["status"] == 200 and (r := _comparable(c)) is not None]


@pytest.mark.parametrize(("case", "request_"), SHAPED, ids=[key(c) for c, _r in SHAPED])
def test_our_request_has_the_recorded_requests_shape(
    case: dict[str, Any], request_: ModelRequest
) -> None:
    family = case["family"]
    recorded = case["request"]["body"]
    protocol = get_protocol(FAMILY_PROTOCOL[family])
    endpoint = endpoint_for(case, "https://api.example.test", "whole")
    ours = json.loads(protocol.encode(request_, endpoint).body)
    assert shape(family, ours) == shape(family, recorded)
    assert sorted(tool_names(family, ours)) == sorted(tool_names(family, recorded))
    extra = set(ours) - ACCEPTED_FIELDS[family]
    assert not extra, f"fields no recorded request sent: {extra}"
