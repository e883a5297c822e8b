"""FaultTransport on its own (each fault kind, picked by number or predicate) and through
the OpenAI provider client, over the real transport and a fake server on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentloom.errors import ProviderError
from agentloom.http._aiohttp import AiohttpTransport
from agentloom.http._fault import Fault, FaultTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import get_protocol
from agentloom.providers._endpoints import vendor_endpoint
from agentloom.routing import ProviderClient
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.transport import HttpRequest, TransportError


@pytest.fixture
async def inner() -> AsyncIterator[tuple[FakeOpenAIServer, AiohttpTransport]]:
    async with FakeOpenAIServer(responder=lambda _body: FakeReply(text="one two three")) as s:
        transport = AiohttpTransport()
        try:
            yield s, transport  # type: ignore[misc]
        finally:
            await transport.aclose()


def _post(server: FakeOpenAIServer, path: str = "/v1/chat/completions") -> HttpRequest:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    return HttpRequest(method="POST", url=server.base_url + path, body=body.encode(),
                       headers={"content-type": "application/json"})


async def test_status_drop_timeout_bad_body_by_number(inner: Any) -> None:
    server, transport = inner
    faults = FaultTransport(
        transport,
        {
            1: Fault.status(429, headers={"Retry-After": "2"}),
            2: Fault.drop(),
            3: Fault.timeout(),
            4: Fault.bad_body(),
        },
    )
    r1 = await faults.handle(_post(server))
    assert (r1.status, r1.headers["retry-after"]) == (429, "2")
    with pytest.raises(TransportError) as drop:
        await faults.handle(_post(server))
    assert (drop.value.phase, drop.value.request_sent) == ("connect", False)
    with pytest.raises(TransportError) as timeout:
        await faults.handle(_post(server))
    assert (timeout.value.phase, timeout.value.request_sent) == ("read", True)
    r4 = await faults.handle(_post(server))
    assert r4.status == 200 and await r4.read() == b"{not json"
    r5 = await faults.handle(_post(server))  # no fault: the inner transport answers
    assert r5.status == 200
    assert faults.injected == [(1, "status"), (2, "drop"), (3, "timeout"), (4, "bad_body")]


async def test_predicate_rules(inner: Any) -> None:
    server, transport = inner
    faults = FaultTransport(transport, [(lambda n, req: "bad" in req.url, Fault.status(500))])
    assert (await faults.handle(_post(server, "/v1/chat/completions?bad"))).status == 500
    assert (await faults.handle(_post(server))).status == 200


async def test_drop_after_chunks_through_the_provider_marks_partial(inner: Any) -> None:
    server, transport = inner
    endpoint = vendor_endpoint("generic_openai", base_url=server.openai_base_url)
    faults = FaultTransport(transport, {1: Fault.drop_after(2), 2: Fault.drop_after(0)})
    client = ProviderClient(endpoint, get_protocol("openai"), faults)
    request = ModelRequest(model="m", messages=(Message.user("hi"),), stream=True)
    seen: list[object] = []
    with pytest.raises(ProviderError) as after:
        await client.complete(request, on_event=seen.append)
    assert after.value.partial and after.value.phase == "read" and seen
    with pytest.raises(ProviderError) as before:
        await client.complete(request)
    assert not before.value.partial and before.value.retryable
    response = await client.complete(request)
    assert response.text == "one two three"
