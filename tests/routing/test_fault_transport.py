"""FaultTransport on its own: each fault kind, picked by number or predicate, over a
MockTransport, and through the OpenAI provider client."""

from __future__ import annotations

import json

import pytest

from agentloom.errors import ProviderError
from agentloom.http._base import BufferedResponse, HttpRequest, TransportError
from agentloom.http._fault import Fault, FaultTransport
from agentloom.http._mock import MockTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import get_protocol
from agentloom.providers._client import ProviderClient
from agentloom.providers._endpoints import vendor_endpoint


def _sse(*texts: str) -> list[bytes]:
    out = []
    for t in texts:
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}],
        }
        out.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    return [*out, b"data: [DONE]\n\n"]


def _inner() -> MockTransport:
    return MockTransport(
        lambda req: BufferedResponse(
            status=200,
            headers={"content-type": "text/event-stream"},
            chunks=_sse("one ", "two ", "three"),
        )
    )


def _get(url: str = "http://127.0.0.1:1/x") -> HttpRequest:
    return HttpRequest(method="POST", url=url)


async def test_status_drop_timeout_bad_body_by_number() -> None:
    faults = FaultTransport(
        _inner(),
        {
            1: Fault.status(429, headers={"Retry-After": "2"}),
            2: Fault.drop(),
            3: Fault.timeout(),
            4: Fault.bad_body(),
        },
    )
    r1 = await faults.handle(_get())
    assert (r1.status, r1.headers["retry-after"]) == (429, "2")
    with pytest.raises(TransportError) as drop:
        await faults.handle(_get())
    assert (drop.value.phase, drop.value.request_sent) == ("connect", False)
    with pytest.raises(TransportError) as timeout:
        await faults.handle(_get())
    assert (timeout.value.phase, timeout.value.request_sent) == ("read", True)
    r4 = await faults.handle(_get())
    assert r4.status == 200 and await r4.read() == b"{not json"
    r5 = await faults.handle(_get())  # no fault: the inner transport answers
    assert r5.status == 200
    assert faults.injected == [(1, "status"), (2, "drop"), (3, "timeout"), (4, "bad_body")]


async def test_predicate_rules() -> None:
    faults = FaultTransport(_inner(), [(lambda n, req: "bad" in req.url, Fault.status(500))])
    assert (await faults.handle(_get("http://127.0.0.1:1/bad"))).status == 500
    assert (await faults.handle(_get("http://127.0.0.1:1/good"))).status == 200


async def test_drop_after_chunks_through_the_provider_marks_partial() -> None:
    endpoint = vendor_endpoint("generic_openai", base_url="http://127.0.0.1:1/v1")
    faults = FaultTransport(_inner(), {1: Fault.drop_after(2), 2: Fault.drop_after(0)})
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
