"""Record real HTTP exchanges (a plain call and an SSE stream) from a loopback server, then
replay them with the server gone: same bytes, same chunk boundaries; strict and lenient
matching; useful mismatch messages; broken recording files."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agentloom.errors import ConfigError, ReplayMismatch
from agentloom.http._aiohttp import AiohttpTransport
from agentloom.recording import (
    Recorder,
    Recording,
    RecordingError,
    RecordTransport,
    ReplayTransport,
    call_context,
    current_call_context,
    request_hash,
)
from agentloom.redact import Redactor
from agentloom.testing.clock import FakeClock
from agentloom.transport import HttpRequest, TransportError

API_KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123"
SECRET = "hunter2-very-private"
# A multi-byte character split across two chunks: that chunk is not valid UTF-8 alone.
SSE_PIECES = [b'data: {"d": "Hel"}\n\n', b'data: {"d": "lo \xe2\x9c', b'\x93"}\n\n',
              b"data: [DONE]\n\n"]


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, dict[str, int], web.AppRunner]]:
    hits = {"chat": 0, "stream": 0}

    async def chat(request: web.Request) -> web.Response:
        hits["chat"] += 1
        body = await request.json()
        reply = {"id": "r1", "echo": body["messages"][-1]["content"], "n": hits["chat"]}
        return web.json_response(reply, headers={"x-request-id": "abc",
                                                 "set-cookie": "session=zzz"})

    async def stream(request: web.Request) -> web.StreamResponse:
        hits["stream"] += 1
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for piece in SSE_PIECES:
            await resp.write(piece)
            await asyncio.sleep(0.002)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/stream", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", hits, runner
    await runner.cleanup()


def _req(base: str, prompt: str, *, path: str = "/v1/chat/completions", stream: bool = False,
         model: str = "gpt-4o", user: str | None = None) -> HttpRequest:
    body: dict[str, Any] = {"model": model, "stream": stream,
                            "messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": prompt}]}
    if user is not None:
        body["user"] = user
    return HttpRequest(method="POST", url=f"{base}{path}", body=json.dumps(body).encode(),
                       headers={"authorization": f"Bearer {API_KEY}",
                                "content-type": "application/json"}, stream=stream)


async def _record(base: str, path: Path) -> tuple[bytes, list[bytes]]:
    recorder = Recorder(path, redactor=Redactor(secrets=[SECRET]))
    transport = RecordTransport(AiohttpTransport(), recorder)
    try:
        with call_context(step_id="summarize", turn=1):
            plain = await transport.handle(_req(base, f"Summarize: the code is {SECRET}"))
            plain_body = await plain.read()
        with call_context(step_id="stream_step", turn=1):
            streamed = await transport.handle(_req(base, "Stream it", path="/v1/stream",
                                                   stream=True))
            chunks = [c async for c in streamed.aiter_bytes()]
    finally:
        await transport.aclose()
    return plain_body, chunks


async def test_round_trip_replays_byte_for_byte_offline(
        server: tuple[str, dict[str, int], web.AppRunner], tmp_path: Path) -> None:
    base, hits, runner = server
    path = tmp_path / "rec.json"
    plain_body, chunks = await _record(base, path)
    assert b"".join(chunks) == b"".join(SSE_PIECES)
    assert hits == {"chat": 1, "stream": 1}
    await runner.cleanup()  # the server is gone: replay must not need it

    replay = ReplayTransport(path)
    with call_context(step_id="summarize", turn=1):
        resp = await replay.handle(_req(base, f"Summarize: the code is {SECRET}"))
    # The server echoed the secret; a recording never keeps a secret, even in a response.
    assert resp.status == 200
    assert await resp.read() == plain_body.replace(SECRET.encode(), b"[REDACTED]")
    assert resp.headers["x-request-id"] == "abc"
    with call_context(step_id="stream_step", turn=1):
        sresp = await replay.handle(_req(base, "Stream it", path="/v1/stream", stream=True))
    assert [c async for c in sresp.aiter_bytes()] == chunks  # same boundaries, same bytes
    assert replay.unused == []

    data = json.loads(path.read_text())
    assert data["format"] == "agentloom-recording" and data["version"] == 1
    ex = data["exchanges"]
    assert [(e["step_id"], e["turn"], e["attempt"]) for e in ex] == [
        ("summarize", 1, 1), ("stream_step", 1, 1)]
    assert ex[1]["response"]["chunks"][0]["t"] >= 0
    assert any("b64" in c for c in ex[1]["response"]["chunks"]) or len(chunks) == 1


async def test_artefact_holds_no_secret(server: tuple[str, dict[str, int], web.AppRunner],
                                        tmp_path: Path) -> None:
    base, _, _ = server
    path = tmp_path / "rec.json"
    await _record(base, path)
    text = path.read_text()
    assert API_KEY not in text and SECRET not in text and "session=zzz" not in text
    assert "[REDACTED]" in text
    ex = json.loads(text)["exchanges"][0]
    assert "headers" not in ex["request"], "request headers (auth) are never stored"
    assert ex["response"]["headers"]["set-cookie"] == "[REDACTED]"


async def test_strict_mismatch_shows_step_turn_and_diff(
        server: tuple[str, dict[str, int], web.AppRunner], tmp_path: Path) -> None:
    base, _, _ = server
    path = tmp_path / "rec.json"
    await _record(base, path)
    replay = ReplayTransport(path, redactor=Redactor(secrets=[SECRET]))
    with call_context(step_id="summarize", turn=1), pytest.raises(ReplayMismatch) as info:
        await replay.handle(_req(base, f"Summarise briefly: the code is {SECRET}"))
    msg = str(info.value)
    assert "step 'summarize' turn 1" in msg and str(path) in msg
    assert "--- recorded" in msg and "+++ this call" in msg
    lines = msg.splitlines()
    assert any(ln.startswith("-") and '"Summarize: the code is [REDACTED]"' in ln for ln in lines)
    assert any(ln.startswith("+") and '"Summarise briefly: the code is [REDACTED]"' in ln
               for ln in lines)
    assert not any(ln.startswith(("-", "+")) and '"Be brief."' in ln for ln in lines)
    assert SECRET not in msg
    # Same request, but recorded under another turn: strict refuses.
    with call_context(step_id="summarize", turn=2), pytest.raises(ReplayMismatch):
        await replay.handle(_req(base, f"Summarize: the code is {SECRET}"))


async def test_strict_consumes_records_once(
        server: tuple[str, dict[str, int], web.AppRunner], tmp_path: Path) -> None:
    base, _, _ = server
    path = tmp_path / "rec.json"
    await _record(base, path)
    replay = ReplayTransport(path)
    request = _req(base, f"Summarize: the code is {SECRET}")
    with call_context(step_id="summarize", turn=1):
        await replay.handle(request)
        with pytest.raises(ReplayMismatch, match="already used"):
            await replay.handle(request)
    assert len(replay.unused) == 1


async def test_lenient_matches_by_hash_alone(
        server: tuple[str, dict[str, int], web.AppRunner], tmp_path: Path) -> None:
    base, _, _ = server
    path = tmp_path / "rec.json"
    plain_body, _ = await _record(base, path)
    replay = ReplayTransport(path, mode="lenient")
    # No call context at all, and a volatile field that differs: still the same hash.
    request = _req(base, f"Summarize: the code is {SECRET}", user="someone-else")
    assert current_call_context.get() is None
    expected = plain_body.replace(SECRET.encode(), b"[REDACTED]")
    assert await (await replay.handle(request)).read() == expected
    assert await (await replay.handle(request)).read() == expected  # reused
    with pytest.raises(ReplayMismatch, match="lenient"):
        await replay.handle(_req(base, "never recorded"))
    with pytest.raises(ConfigError, match="strict"):
        ReplayTransport(path, mode="fuzzy")  # type: ignore[arg-type]


async def test_hash_ignores_host_and_query_but_not_model() -> None:
    a = _req("http://127.0.0.1:1111", "x")
    b = _req("https://api.example.com", "x")
    b.url += "?key=whatever"
    assert request_hash(a) == request_hash(b)
    assert request_hash(a) != request_hash(_req("http://h", "x", model="gpt-4o-mini"))
    assert request_hash(a) != request_hash(_req("http://h", "x", path="/v1/other"))


async def test_replay_latency_uses_recorded_offsets(
        server: tuple[str, dict[str, int], web.AppRunner], tmp_path: Path) -> None:
    base, _, _ = server
    path = tmp_path / "rec.json"
    await _record(base, path)
    recorded = json.loads(path.read_text())["exchanges"][1]["response"]["chunks"]
    clock = FakeClock()
    replay = ReplayTransport(path, replay_latency=True, clock=clock)
    with call_context(step_id="stream_step", turn=1):
        resp = await replay.handle(_req(base, "Stream it", path="/v1/stream", stream=True))
        _ = [c async for c in resp.aiter_bytes()]
    assert clock.sleeps == pytest.approx(
        [recorded[0]["t"]] + [b["t"] - a["t"] for a, b in itertools.pairwise(recorded)],
        abs=1e-6)
    assert clock.now() - 1000.0 == pytest.approx(recorded[-1]["t"], abs=1e-6)


async def test_transport_failure_is_recorded_and_replayed(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    path = tmp_path / "rec.json"
    transport = RecordTransport(AiohttpTransport(), Recorder(path))
    with call_context(step_id="s", turn=1), pytest.raises(TransportError) as recorded:
        await transport.handle(_req(dead, "hi"))
    await transport.aclose()
    replay = ReplayTransport(path)
    with call_context(step_id="s", turn=1), pytest.raises(TransportError) as replayed:
        await replay.handle(_req(dead, "hi"))
    assert replayed.value.phase == recorded.value.phase == "connect"
    assert replayed.value.request_sent is False


@pytest.mark.parametrize("content, fragment", [
    ('{"format": "agentloom-recording", "version": 1, "exchanges": [{"request_ha',
     "not valid JSON"),
    ('{"exchanges": []}', "not an AgentLoom recording"),
    ('{"format": "agentloom-recording", "version": 7, "exchanges": []}', "version 7"),
    ('{"format": "agentloom-recording", "version": 1, "exchanges": [{"request_hash": "x"}]}',
     "exchange #0 is incomplete"),
])
async def test_corrupt_or_truncated_file_names_the_file(tmp_path: Path, content: str,
                                                        fragment: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(content)
    replay = ReplayTransport(path)
    with pytest.raises(RecordingError) as info:
        await replay.handle(_req("http://h", "x"))
    assert str(path) in str(info.value) and fragment in str(info.value)
    with pytest.raises(RecordingError, match="not found"):
        Recording.load(tmp_path / "missing.json")


async def test_recording_save_is_atomic_and_reloads(tmp_path: Path) -> None:
    rec = Recording(exchanges=[{"request_hash": "h", "request": {}, "response": {
        "status": 200, "headers": {}, "text": "ok"}}])
    target = tmp_path / "sub" / "r.json"
    rec.save(target)
    assert Recording.load(target).exchanges == rec.exchanges
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]  # no temp files left


@contextlib.asynccontextmanager
async def _serving(handler: Any) -> AsyncIterator[str]:
    """A loopback server answering every path with `handler`; yields its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_retries_replay_in_recorded_order(tmp_path: Path) -> None:
    replies = iter([web.Response(status=429, headers={"retry-after": "1"}, text="slow"),
                    web.json_response({"ok": True})])

    async def handler(request: web.Request) -> web.Response:
        return next(replies)

    path = tmp_path / "rec.json"
    async with _serving(handler) as base:
        transport = RecordTransport(AiohttpTransport(), Recorder(path))
        with call_context(step_id="s", turn=1):
            for _ in range(2):
                await transport.handle(_req(base, "x"))
        await transport.aclose()
    attempts = [e["attempt"] for e in json.loads(path.read_text())["exchanges"]]
    assert attempts == [1, 2]
    replay = ReplayTransport(path)
    with call_context(step_id="s", turn=1):
        first = await replay.handle(_req("http://h", "x"))
        second = await replay.handle(_req("http://h", "x"))
    assert (first.status, first.headers["retry-after"]) == (429, "1")
    assert (second.status, json.loads(await second.read())) == (200, {"ok": True})


async def test_default_recorder_still_strips_keys_from_urls_and_headers(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({}, headers={"x-goog-api-key": "AIzaLEAK"})

    path = tmp_path / "rec.json"
    async with _serving(handler) as base:
        transport = RecordTransport(AiohttpTransport(), Recorder(path))  # no redactor given
        gemini = HttpRequest(
            method="POST", body=b"{}", headers={"x-goog-api-key": "AIzaLEAK"},
            url=base + "/v1beta/models/gemini-2.0-flash:generateContent?key=LEAKY1")
        await transport.handle(gemini)
        await transport.aclose()
    text = path.read_text()
    assert "LEAKY1" not in text and "AIzaLEAK" not in text
    assert json.loads(text)["exchanges"][0]["request"]["path"].endswith(":generateContent")


async def test_stream_that_broke_midway_replays_the_break(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"d": "par')
        await asyncio.sleep(0.01)  # let the two pieces travel apart
        await resp.write(b'tial"}\n\n')
        await asyncio.sleep(0.01)
        assert request.transport is not None
        request.transport.abort()  # the server goes away mid-stream
        return resp

    path = tmp_path / "rec.json"
    got: list[bytes] = []
    async with _serving(handler) as base:
        transport = RecordTransport(AiohttpTransport(), Recorder(path))
        with call_context(step_id="s", turn=1), pytest.raises(TransportError):
            resp = await transport.handle(_req(base, "x", stream=True))
            async for chunk in resp.aiter_bytes():
                got.append(chunk)
        await transport.aclose()
    replayed: list[bytes] = []
    with call_context(step_id="s", turn=1), pytest.raises(TransportError) as info:
        resp = await ReplayTransport(path).handle(_req("http://h", "x", stream=True))
        async for chunk in resp.aiter_bytes():
            replayed.append(chunk)
    # Byte for byte and piece for piece as received, then the same break.
    assert replayed == got and b"".join(got) == b'data: {"d": "partial"}\n\n'
    assert info.value.phase == "read" and info.value.request_sent is True
