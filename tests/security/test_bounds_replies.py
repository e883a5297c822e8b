"""Hostile replies from a provider: a huge body, a gzip bomb, a stream that never ends.
Each ends the call with a typed, non-retryable error (`ReplyTooLarge`) and the run with a
status, while the child's memory stays bounded. The server is a real loopback one."""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path

import pytest
from aiohttp import web
from bounds_helpers import HostileServer, llm_flow, run_cli

PEAK_MB = 300
MB = 1 << 20
CAP = 32 * MB
ENV = {"HOSTILE_KEY": "sk-hostile-test-key"}
calls: list[str] = []


def _gzip_bomb(inflated_mb: int) -> bytes:
    """A valid gzip member of `inflated_mb` MB of zeros, about 1000:1."""
    zeros = bytes(MB)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)  # after a full flush, blocks repeat
    tail = c.flush()[:-8]  # the end of the deflate stream, without the trailer for 2 MB
    crc = 0
    for _ in range(inflated_mb):
        crc = zlib.crc32(zeros, crc)
    trailer = crc.to_bytes(4, "little") + ((inflated_mb * MB) & 0xFFFFFFFF).to_bytes(4, "little")
    return first + block * (inflated_mb - 1) + tail + trailer


async def huge_body(request: web.Request) -> web.StreamResponse:
    """A 200 MB JSON reply, chunked, with no Content-Length to warn the client."""
    calls.append("huge")
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    await resp.write(b'{"id": "x", "object": "chat.completion", "model": "gpt-4o-mini", '
                     b'"choices": [{"index": 0, "finish_reason": "stop", "message": '
                     b'{"role": "assistant", "content": "')
    piece = b"a" * MB
    for _ in range(200):
        await resp.write(piece)
    await resp.write(b'"}}]}')
    return resp


BOMB = b""


async def gzip_bomb(request: web.Request) -> web.Response:
    calls.append("gzip")
    return web.Response(body=BOMB, headers={"Content-Type": "application/json",
                                            "Content-Encoding": "gzip"})


async def endless_sse(request: web.Request) -> web.StreamResponse:
    """A chat stream that never sends [DONE]: a delta of 64 KB of text, forever."""
    calls.append("sse")
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    event = ("data: " + json.dumps({
        "id": "x", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": "a" * 65536}, "finish_reason": None}],
    }) + "\n\n").encode()
    while True:
        await resp.write(event)


def _run(tmp_path: Path, handler: object, *, stream: bool = False,
         provider_extra: str = "") -> dict[str, object]:
    calls.clear()
    with HostileServer(handler) as server:
        flow = llm_flow(tmp_path, server, stream=stream, provider_extra=provider_extra)
        child = run_cli(["run", str(flow), "--json", "--no-checkpoint"], tmp_path, env=ENV)
    assert not child.killed, "the run never ended"
    assert "Traceback" not in child.stderr and "MemoryError" not in child.stderr
    assert child.peak_rss_mb < PEAK_MB, f"peak RSS {child.peak_rss_mb:.0f} MB"
    assert child.returncode == 1, child.stderr
    assert len(child.stdout) < MB  # --json prints the failure, not the reply
    return json.loads(child.stdout)  # type: ignore[no-any-return]


def _step_failure(result: dict[str, object]) -> dict[str, object]:
    assert result["status"] == "failed"
    step = result["steps"]["ask"]  # type: ignore[index]
    assert step["status"] == "failed"
    summary = step["summary"]
    assert summary["status"] == "provider_error"
    assert [a["error_type"] for a in summary["failed_attempts"]] == ["ReplyTooLarge"]
    return step  # type: ignore[no-any-return]


def test_a_200_mb_body_stops_at_the_cap(tmp_path: Path) -> None:
    result = _run(tmp_path, huge_body)
    step = _step_failure(result)
    assert f"larger than {CAP} bytes" in str(step["error"])
    assert calls == ["huge"], "an oversized reply must not be retried"


def test_a_gzip_bomb_stops_at_the_cap_on_the_inflated_size(tmp_path: Path) -> None:
    global BOMB
    BOMB = _gzip_bomb(1024)  # ~1 MB on the wire, 1 GB inflated
    assert len(BOMB) < 2 * MB
    result = _run(tmp_path, gzip_bomb)
    assert f"larger than {CAP} bytes" in str(_step_failure(result)["error"])
    assert calls == ["gzip"]


def test_an_endless_stream_stops_at_the_cap(tmp_path: Path) -> None:
    result = _run(tmp_path, endless_sse, stream=True)
    assert f"larger than {CAP} bytes" in str(_step_failure(result)["error"])
    assert calls == ["sse"]


def test_the_cap_is_set_per_provider(tmp_path: Path) -> None:
    result = _run(tmp_path, huge_body, provider_extra="    max_reply_bytes: 1000000\n")
    assert "larger than 1000000 bytes" in str(_step_failure(result)["error"])
    assert "providers.hostile.max_reply_bytes" in str(_step_failure(result)["error"])


async def test_an_oversized_reply_replays_as_the_same_typed_failure(tmp_path: Path) -> None:
    from agentloom.errors import ReplyTooLarge
    from agentloom.http import AiohttpTransport
    from agentloom.messages import Message, ModelRequest
    from agentloom.providers import get_protocol, vendor_endpoint
    from agentloom.recording import Recorder, RecordTransport, ReplayTransport
    from agentloom.routing import ProviderClient

    request = ModelRequest(model="gpt-4o-mini", messages=(Message.user("hi"),))
    path = tmp_path / "rec.json"
    with HostileServer(huge_body) as server:
        endpoint = vendor_endpoint("generic_openai", base_url=server.base_url, api_key="k")
        endpoint = dataclasses.replace(endpoint, max_reply_bytes=100_000)
        live = RecordTransport(AiohttpTransport(), Recorder(path))
        try:
            with pytest.raises(ReplyTooLarge):
                await ProviderClient(endpoint, get_protocol("openai"), live).complete(request)
        finally:
            await live.aclose()
    replayed = ProviderClient(endpoint, get_protocol("openai"), ReplayTransport(path))
    with pytest.raises(ReplyTooLarge) as info:
        await replayed.complete(request)
    assert info.value.retryable is False
