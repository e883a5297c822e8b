"""ProviderClient error mapping against a real server on loopback: statuses, Retry-After
forms, request ids, bad bodies, transport failures, missing keys and attempt records."""

from __future__ import annotations

import email.utils
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentloom.errors import ConfigError, ProviderError
from agentloom.http import AiohttpTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers import get_protocol, vendor_endpoint
from agentloom.providers._base import AttemptRecord
from agentloom.routing import ProviderClient, retry_after_seconds
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer

REQ = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),))


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as s:
        yield s  # type: ignore[misc]


@pytest.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    t = AiohttpTransport()
    yield t
    await t.aclose()


def client(base_url: str, transport: AiohttpTransport, *, key: str | None = "sk"
           ) -> ProviderClient:
    ep = vendor_endpoint("openai", api_key=key, base_url=base_url)
    return ProviderClient(ep, get_protocol("openai"), transport)


async def call(c: ProviderClient, request: ModelRequest = REQ
               ) -> tuple[ProviderError, AttemptRecord]:
    attempts: list[AttemptRecord] = []
    with pytest.raises(ProviderError) as info:
        await c.complete(request, on_attempt=attempts.append)
    assert len(attempts) == 1 and not attempts[0].ok
    return info.value, attempts[0]


@pytest.mark.parametrize(("status", "retryable"), [
    (429, True), (500, True), (502, True), (503, True), (504, True),
    (400, False), (401, False), (403, False), (404, False), (422, False),
])
async def test_status_errors(status: int, retryable: bool, server: FakeOpenAIServer,
                             transport: AiohttpTransport) -> None:
    server.script(FakeError(status=status, body={"error": {"message": "nope", "type": "x"}},
                            headers={"x-request-id": "req_7", "retry-after": "1.5"}))
    err, attempt = await call(client(server.openai_base_url, transport))
    assert (err.status, err.retryable, err.phase, err.request_sent) == (
        status, retryable, "status", True)
    assert err.provider == "openai" and err.model == "gpt-4o"
    assert err.request_id == "req_7" and err.retry_after == 1.5
    assert err.headers["retry-after"] == "1.5" and err.body and "nope" in err.body
    assert "HTTP" in str(err) and "nope" in str(err) and f"status={status}" in str(err)
    assert (attempt.status, attempt.phase, attempt.request_sent) == (status, "status", True)


NOW = 1_800_000_000.0


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "7"}, 7.0),
    ({"retry-after": " 0.25 "}, 0.25),
    ({"retry-after": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
    ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "-3"}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": ""}, None),
    ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ({"retry-after-ms": "bad", "retry-after": "9"}, 9.0),
    ({}, None),
])
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers, now_wall=NOW) == expected


async def test_malformed_200_body_is_a_retryable_body_error(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    c = client(server.openai_base_url, transport)
    server.script(FakeBadBody(body=b"{not json"), FakeBadBody(body=b'{"choices": []}'))
    err, _ = await call(c)
    assert (err.phase, err.request_sent, err.retryable, err.status) == ("body", True, True, 200)
    err, _ = await call(c)
    assert err.phase == "body"


async def test_a_refused_connection_was_never_sent(transport: AiohttpTransport) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err, attempt = await call(client(f"http://127.0.0.1:{port}/v1", transport))
    assert (err.phase, err.request_sent, err.retryable, err.status) == (
        "connect", False, True, None)
    assert (attempt.phase, attempt.request_sent) == ("connect", False)


async def test_stream_drop_after_text_arrived_is_partial(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    server.script(FakeDrop(after_chunks=2))  # the role delta, then one piece of text
    events: list[Any] = []
    with pytest.raises(ProviderError) as info:
        await client(server.openai_base_url, transport).complete(
            REQ.replace(stream=True), on_event=events.append)
    assert info.value.partial is True and info.value.phase == "read"
    assert info.value.request_sent is True and events


async def test_a_connection_dropped_before_any_reply_is_not_partial(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    server.script(FakeDrop())
    with pytest.raises(ProviderError) as info:
        await client(server.openai_base_url, transport).complete(REQ.replace(stream=True))
    assert info.value.partial is False and info.value.retryable is True


async def test_stream_with_error_status_reads_the_body(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    server.script(FakeError(status=503, body={"error": "busy"}))
    with pytest.raises(ProviderError) as info:
        await client(server.openai_base_url, transport).complete(REQ.replace(stream=True))
    assert info.value.status == 503 and "busy" in str(info.value)


async def test_missing_key_names_the_variable_before_any_request(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    attempts: list[AttemptRecord] = []
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await client(server.openai_base_url, transport, key=None).complete(
            REQ, on_attempt=attempts.append)
    assert server.requests == [] and attempts == []


async def test_success_reports_one_ok_attempt(
        server: FakeOpenAIServer, transport: AiohttpTransport) -> None:
    server.script(FakeReply(text="ok"))
    attempts: list[AttemptRecord] = []
    resp = await client(server.openai_base_url, transport).complete(
        REQ, on_attempt=attempts.append)
    assert resp.text == "ok" and resp.time_to_first_token is None
    assert len(attempts) == 1 and attempts[0].ok and attempts[0].status == 200
    assert server.requests[0].headers["authorization"] == "Bearer sk"
