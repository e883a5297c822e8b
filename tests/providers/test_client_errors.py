"""ProviderClient error mapping through MockTransport: statuses, Retry-After forms,
request ids, bad bodies, transport failures, missing keys and attempt records."""

from __future__ import annotations

import email.utils
import json
from typing import Any

import pytest

from agentloom.errors import ConfigError, ProviderError
from agentloom.http import BufferedResponse, HttpRequest, MockTransport, TransportError
from agentloom.messages import Message, ModelRequest
from agentloom.providers import ProviderClient, get_protocol, vendor_endpoint
from agentloom.providers._base import AttemptRecord
from agentloom.providers._client import parse_retry_after

REQ = ModelRequest(model="gpt-4o", messages=(Message.user("hi"),))
OK_BODY = json.dumps({"id": "r", "model": "gpt-4o", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()


def client(handler: Any, *, key: str | None = "sk") -> tuple[ProviderClient, MockTransport]:
    transport = MockTransport(handler)
    ep = vendor_endpoint("openai", api_key=key, base_url="http://127.0.0.1:1/v1")
    return ProviderClient(ep, get_protocol("openai"), transport), transport


async def call(handler: Any, request: ModelRequest = REQ) -> tuple[ProviderError, AttemptRecord]:
    c, _ = client(handler)
    attempts: list[AttemptRecord] = []
    with pytest.raises(ProviderError) as info:
        await c.complete(request, on_attempt=attempts.append)
    assert len(attempts) == 1 and not attempts[0].ok
    return info.value, attempts[0]


@pytest.mark.parametrize(("status", "retryable"), [
    (429, True), (500, True), (502, True), (503, True), (504, True),
    (400, False), (401, False), (403, False), (404, False), (422, False),
])
async def test_status_errors(status: int, retryable: bool) -> None:
    body = json.dumps({"error": {"message": "nope", "type": "x"}}).encode()
    err, attempt = await call(lambda r: BufferedResponse(
        status=status, body=body, headers={"x-request-id": "req_7", "retry-after": "1.5"}))
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
    assert parse_retry_after(headers, now=NOW) == expected


async def test_malformed_200_body_is_a_retryable_body_error() -> None:
    err, _ = await call(lambda r: BufferedResponse(status=200, body=b"{not json"))
    assert (err.phase, err.request_sent, err.retryable, err.status) == ("body", True, True, 200)
    err, _ = await call(lambda r: BufferedResponse(status=200, body=b'{"choices": []}'))
    assert err.phase == "body"


async def test_transport_failure_keeps_phase_and_request_sent() -> None:
    def refuse(request: HttpRequest) -> BufferedResponse:
        raise TransportError("refused", phase="connect", request_sent=False)

    err, attempt = await call(refuse)
    assert (err.phase, err.request_sent, err.retryable, err.status) == (
        "connect", False, True, None)
    assert (attempt.phase, attempt.request_sent) == ("connect", False)


async def test_stream_drop_after_first_chunk_is_partial() -> None:
    class Dropping(BufferedResponse):
        async def aiter_bytes(self):  # type: ignore[no-untyped-def,override]
            yield b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
            raise TransportError("reset", phase="read", request_sent=True)

    events: list[Any] = []
    c, _ = client(lambda r: Dropping(status=200))
    with pytest.raises(ProviderError) as info:
        await c.complete(REQ.replace(stream=True), on_event=events.append)
    assert info.value.partial is True and info.value.phase == "read"
    assert len(events) == 1


async def test_stream_drop_before_any_chunk_is_not_partial() -> None:
    class Dropping(BufferedResponse):
        async def aiter_bytes(self):  # type: ignore[no-untyped-def,override]
            raise TransportError("reset", phase="read", request_sent=True)
            yield b""  # pragma: no cover

    c, _ = client(lambda r: Dropping(status=200))
    with pytest.raises(ProviderError) as info:
        await c.complete(REQ.replace(stream=True))
    assert info.value.partial is False


async def test_stream_with_error_status_reads_the_body() -> None:
    c, _ = client(lambda r: BufferedResponse(status=503, chunks=[b'{"error":', b'"busy"}']))
    with pytest.raises(ProviderError) as info:
        await c.complete(REQ.replace(stream=True))
    assert info.value.status == 503 and "busy" in str(info.value)


async def test_missing_key_names_the_variable_before_any_request() -> None:
    c, transport = client(lambda r: BufferedResponse(status=200, body=OK_BODY), key=None)
    attempts: list[AttemptRecord] = []
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await c.complete(REQ, on_attempt=attempts.append)
    assert transport.requests == [] and attempts == []


async def test_success_reports_one_ok_attempt() -> None:
    c, transport = client(lambda r: BufferedResponse(status=200, body=OK_BODY))
    attempts: list[AttemptRecord] = []
    resp = await c.complete(REQ, on_attempt=attempts.append)
    assert resp.text == "ok" and resp.time_to_first_token is None
    assert len(attempts) == 1 and attempts[0].ok and attempts[0].status == 200
    assert transport.requests[0].headers["authorization"] == "Bearer sk"
