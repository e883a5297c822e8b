"""The fault-injection suite: real HTTP to loopback fake servers, faults injected by the
server script or by FaultTransport, time on a FakeClock. Each failure ends as the rules
say: retried and recovered, fallen back, or failed fast, with the right attempts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from agentloom.errors import ProviderError
from agentloom.http._aiohttp import AiohttpTransport
from agentloom.http._fault import Fault, FaultTransport
from agentloom.messages import Message, ModelRequest
from agentloom.providers._base import AttemptRecord
from agentloom.routing import CallFailed, FallbackEntry, RetryPolicy
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing._server import FakeBadBody, FakeDrop, FakeError, FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer


@dataclass
class Rig:
    primary: FakeOpenAIServer
    backup: FakeOpenAIServer
    faults: FaultTransport
    clock: FakeClock
    runtime: Runtime

    def client(self, *, fallback: bool = False, retry: RetryPolicy | None = None):  # type: ignore[no-untyped-def]
        entries = [FallbackEntry(provider="backup", model="backup-model")] if fallback else []
        return self.runtime.client(
            provider="primary",
            model="gpt-4o-mini",
            fallback=entries,
            retry=retry or RetryPolicy(max_retries=2),
        )


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    async with FakeOpenAIServer() as primary, FakeOpenAIServer() as backup:
        assert isinstance(primary, FakeOpenAIServer) and isinstance(backup, FakeOpenAIServer)
        clock = FakeClock()
        faults = FaultTransport(AiohttpTransport())
        runtime = Runtime(transport=faults, clock=clock)
        runtime.add_providers(
            {
                "primary": {"type": "openai", "base_url": primary.openai_base_url},
                "backup": {"type": "openai", "base_url": backup.openai_base_url},
            }
        )
        try:
            yield Rig(primary, backup, faults, clock, runtime)
        finally:
            await runtime.aclose()
            await faults.aclose()


def _req(stream: bool = False) -> ModelRequest:
    return ModelRequest(model="gpt-4o-mini", messages=(Message.user("hello"),), stream=stream)


async def test_429_with_retry_after_seconds_is_retried_and_recovers(rig: Rig) -> None:
    rig.primary.script(FakeError(status=429, headers={"Retry-After": "3"}), "recovered")
    records: list[AttemptRecord] = []
    response = await rig.client().complete(_req(), on_attempt=records.append)
    assert response.text == "recovered" and response.provider == "primary"
    assert [(r.attempt, r.ok, r.status, r.request_sent) for r in records] == [
        (1, False, 429, True),
        (2, True, 200, True),
    ]
    assert records[1].wait_before_seconds == 3.0
    assert rig.clock.sleeps == [3.0]


async def test_429_with_retry_after_http_date(rig: Rig) -> None:
    from email.utils import formatdate

    when = formatdate(rig.clock.wall() + 45, usegmt=True)
    rig.primary.script(FakeError(status=429, headers={"Retry-After": when}), "ok")
    await rig.client().complete(_req())
    assert rig.clock.sleeps == [45.0]


async def test_500s_spend_the_retries_then_fall_back(rig: Rig) -> None:
    rig.primary.script(*(FakeError(status=500) for _ in range(3)))
    rig.backup.script("from backup")
    records: list[AttemptRecord] = []
    response = await rig.client(fallback=True).complete(_req(), on_attempt=records.append)
    assert response.text == "from backup" and response.provider == "backup"
    assert rig.backup.requests[0].json["model"] == "backup-model"
    assert [(r.provider, r.attempt, r.ok, r.status) for r in records] == [
        ("primary", 1, False, 500),
        ("primary", 2, False, 500),
        ("primary", 3, False, 500),
        ("backup", 1, True, 200),
    ]
    assert len(rig.clock.sleeps) == 2


async def test_connection_dropped_before_the_request_is_retried(rig: Rig) -> None:
    rig.faults.add(1, Fault.drop())
    records: list[AttemptRecord] = []
    response = await rig.client().complete(_req(), on_attempt=records.append)
    assert response.provider == "primary"
    assert (records[0].ok, records[0].status, records[0].phase, records[0].request_sent) == (
        False,
        None,
        "connect",
        False,
    )
    assert len(rig.primary.requests) == 1  # the dropped one never arrived


async def test_server_closing_the_connection_is_retried(rig: Rig) -> None:
    rig.primary.script(FakeDrop(), "after the drop")
    records: list[AttemptRecord] = []
    response = await rig.client().complete(_req(), on_attempt=records.append)
    assert response.text == "after the drop"
    assert records[0].status is None and records[0].request_sent is not False
    assert len(rig.primary.requests) == 2


async def test_stream_dropped_before_the_first_chunk_falls_back(rig: Rig) -> None:
    rig.primary.script(FakeDrop(after_chunks=0))
    rig.backup.script(FakeReply(text="streamed from backup"))
    events: list[object] = []
    response = await rig.client(fallback=True, retry=RetryPolicy(max_retries=0)).complete(
        _req(stream=True), on_event=events.append
    )
    assert response.provider == "backup" and response.text == "streamed from backup"


async def test_stream_dropped_after_the_first_chunk_does_not_fall_back(rig: Rig) -> None:
    rig.primary.script(FakeDrop(after_chunks=3))
    events: list[object] = []
    records: list[AttemptRecord] = []
    with pytest.raises(ProviderError) as info:
        await rig.client(fallback=True).complete(
            _req(stream=True), on_event=events.append, on_attempt=records.append
        )
    err = info.value
    assert err.partial and err.request_sent is True
    assert err.retryable  # the step's own retry decides what comes next
    assert events and rig.backup.requests == []
    assert len(records) == 1 and len(rig.primary.requests) == 1


async def test_read_timeout_is_retried(rig: Rig) -> None:
    rig.faults.add(1, Fault.timeout())
    records: list[AttemptRecord] = []
    response = await rig.client().complete(_req(), on_attempt=records.append)
    assert response.provider == "primary"
    assert (records[0].phase, records[0].request_sent) == ("read", True)


async def test_malformed_body_is_retried(rig: Rig) -> None:
    rig.primary.script(FakeBadBody(), "good body")
    records: list[AttemptRecord] = []
    response = await rig.client().complete(_req(), on_attempt=records.append)
    assert response.text == "good body"
    assert (records[0].phase, records[0].ok) == ("body", False)


async def test_401_fails_fast(rig: Rig) -> None:
    rig.primary.script(FakeError(status=401, body={"error": {"message": "bad key"}}))
    records: list[AttemptRecord] = []
    with pytest.raises(CallFailed) as info:
        await rig.client().complete(_req(), on_attempt=records.append)
    err = info.value
    assert (err.status, err.retryable, err.request_sent, err.provider) == (
        401,
        False,
        True,
        "primary",
    )
    assert len(records) == 1 and rig.clock.sleeps == [] and len(rig.primary.requests) == 1


async def test_fault_transport_injected_status_with_headers(rig: Rig) -> None:
    rig.faults.add(lambda n, req: n <= 2, Fault.status(503, headers={"Retry-After": "1"}))
    records: list[AttemptRecord] = []
    await rig.client().complete(_req(), on_attempt=records.append)
    assert [r.status for r in records] == [503, 503, 200]
    assert rig.clock.sleeps == [1.0, 1.0]
    assert rig.faults.injected == [(1, "status"), (2, "status")]


async def test_breaker_opens_across_clients_of_one_runtime(rig: Rig) -> None:
    rig.primary.responder = lambda _body: FakeError(status=503)
    rig.backup.script(*(["ok"] * 10))
    for _ in range(2):  # 2 calls x 3 attempts = 6 failures >= threshold 5
        await rig.client(fallback=True).complete(_req())
    assert rig.runtime.breaker_snapshot()["primary"]["state"] == "open"
    seen = len(rig.primary.requests)
    response = await rig.client(fallback=True).complete(_req())
    assert response.provider == "backup" and len(rig.primary.requests) == seen


async def test_fallback_across_protocols_with_its_own_model() -> None:
    from agentloom.testing.fake_anthropic import FakeAnthropicServer

    async with FakeOpenAIServer() as oa, FakeAnthropicServer() as an:
        assert isinstance(oa, FakeOpenAIServer)
        oa.script(FakeError(status=503), FakeError(status=503))
        an.script("from claude")
        async with Runtime(clock=FakeClock()) as rt:
            rt.add_providers(
                {
                    "openai": {"base_url": oa.base_url + "/v1", "api_key": "sk"},
                    "anthropic": {"base_url": an.base_url, "api_key": "ak"},
                }
            )
            client = rt.client(
                model="gpt-4o",
                retry=RetryPolicy(max_retries=1),
                fallback=[FallbackEntry(provider="anthropic", model="claude-haiku-4-5")],
            )
            records: list[AttemptRecord] = []
            response = await client.complete(_req(), on_attempt=records.append)
    assert response.text == "from claude" and response.provider == "anthropic"
    assert an.requests[0].json["model"] == "claude-haiku-4-5"
    assert [(r.provider, r.ok) for r in records] == [
        ("openai", False),
        ("openai", False),
        ("anthropic", True),
    ]
    assert response.usage.cost_usd is not None  # priced from the anthropic section
