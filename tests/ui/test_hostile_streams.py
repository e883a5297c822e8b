"""Hostile connections, over real HTTP to the app on 127.0.0.1: more event streams than
the UI holds open (any page on any site can open them with EventSource), a stream kept
open for ever, a request head trickled in byte by byte (a slow-loris), and a decision
body trickled in. Nothing here sleeps or times anything: a bound that ends a stream is
counted in polls, and a wait is for a condition, with a generous cap so a regression
fails instead of hanging."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, ClientSession

from agentloom.store import RunRecord, SqliteStore
from agentloom.ui import UiSettings, create_app, serve
from tests.ui.test_api import WRITE, paused_run
from tests.ui.test_hostile_headers import GUARDS

CAP = 30.0
"""How long a wait for a condition may take before the test fails (not a timing check:
each condition is met within a few polls)."""


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "runs.db")
    async with s:
        yield s


class Served:
    """The app served as `agentloom ui` serves it (`serve`: a handler whose client left
    is not cancelled, unlike under aiohttp's test server), and a client session to it."""

    def __init__(self, store: SqliteStore, **kw: Any) -> None:
        kw.setdefault("poll_seconds", 0.01)
        self.settings = UiSettings(store=store, store_url=str(store.path), **kw)
        self.port = 0

    async def __aenter__(self) -> ClientSession:
        self._runner = await serve(create_app(self.settings), "127.0.0.1", 0)
        self.port = self._runner.addresses[0][1]
        self._session = ClientSession(f"http://127.0.0.1:{self.port}")
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()
        await self._runner.cleanup()

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)


async def _open_stream(client: ClientSession, run_id: str = "p1") -> ClientResponse:
    """An event stream of `run_id`, past its first event (so the UI counts it open)."""
    r = await client.get(f"/api/runs/{run_id}/events")
    assert r.status == 200, (r.status, await r.text())
    first = await asyncio.wait_for(r.content.readuntil(b"\n\n"), CAP)
    assert first.startswith(b"event: run\ndata: {"), first[:80]
    return r


async def _until_admitted(client: ClientSession) -> ClientResponse:
    """Ask for a stream until one is let in (a closed one's place is given back once the
    UI sees its client gone, at its next poll)."""
    async def attempt() -> ClientResponse:
        while True:
            r = await client.get("/api/runs/p1/events")
            if r.status == 200:
                await r.content.readuntil(b"\n\n")
                return r
            assert r.status == 503, r.status
            await r.read()
    return await asyncio.wait_for(attempt(), CAP)


class CountingStore(SqliteStore):
    """Counts `get_run`: each open stream's poll is one."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.polls = 0

    async def get_run(self, run_id: str) -> RunRecord | None:
        self.polls += 1
        return await super().get_run(run_id)


async def test_event_streams_past_the_bound_are_refused_with_a_503_and_given_back(
        tmp_path: Path) -> None:
    """Before: every stream was let in and polled the store for as long as its paused run
    stayed paused (for ever), and one whose client left went on until its next write (a
    ping, after 15 s of quiet). Now: 32 at once, the 33rd a 503 in JSON with the guard
    headers, and a closed one's place given back at its next poll."""
    async with CountingStore(tmp_path / "runs.db") as store:
        await paused_run(store)
        bound = UiSettings(store=store, store_url="").max_event_streams
        assert bound == 32
        async with Served(store, poll_seconds=0.05) as client:
            streams = [await _open_stream(client) for _ in range(bound)]
            try:
                refused = await client.get("/api/runs/p1/events")
                assert refused.status == 503
                assert refused.headers["Content-Type"].startswith("application/json")
                assert (await refused.json()) == {
                    "error": "too many open event streams (32): close a run page, or try "
                             "again later"}
                assert refused.headers["Retry-After"] == "5"
                assert {k: refused.headers.get(k) for k in GUARDS} == GUARDS
                assert (await client.get("/api/runs/p1")).status == 200  # the rest goes on
                # A page closed: its place comes back at the stream's next poll, not at its
                # next write (300 polls of quiet here), by when each of the others would
                # have polled hundreds of times.
                before = store.polls
                streams.pop().close()
                streams.append(await _until_admitted(client))
                assert store.polls - before < bound * 20, store.polls - before
                again = await client.get("/api/runs/p1/events")
                assert again.status == 503
                await again.read()
            finally:
                for r in streams:
                    r.close()


async def test_an_event_stream_ends_after_its_lifetime_and_gives_its_place_back(
        store: SqliteStore) -> None:
    """A paused run's stream never ended. Now it ends after `stream_seconds` (counted in
    polls: 5 of 0.01 here) with no `end` event, so EventSource reconnects (and gets the
    run as it is then); its place is free again."""
    await paused_run(store)
    async with Served(store, stream_seconds=0.05, max_event_streams=1) as client:
        for _ in range(3):  # one place, taken and given back each time
            r = await client.get("/api/runs/p1/events")
            assert r.status == 200
            text = await asyncio.wait_for(r.text(), CAP)
            assert text.startswith("event: run\ndata: {"), text[:80]
            assert "event: end" not in text


async def test_a_request_head_trickled_in_is_cut_off(store: SqliteStore) -> None:
    """Before: a connection that never finished its head was kept for aiohttp's default
    keep-alive, 3630 s (200 of them all stayed open; docs/ui.md). Now: `request_seconds`
    after it opened, or after its last answer, a connection with no whole head is closed."""
    served = Served(store, request_seconds=0.2)
    async with served:
        reader, writer = await served.connect()
        writer.write(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), CAP) == b""  # closed, no answer
        writer.close()

        # After an answer on a kept-alive connection, the same bound for the next head.
        reader, writer = await served.connect()
        writer.write(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CAP)
        assert head.startswith(b"HTTP/1.1 200 "), head
        writer.write(b"GET /api/runs HTTP/1.1\r\nHost: 127.")
        await writer.drain()
        rest = await asyncio.wait_for(reader.read(), CAP)  # the first body, then closed
        assert rest.startswith(b'{"runs":[]') and b"HTTP/1.1" not in rest, rest
        writer.close()


async def test_the_head_bound_does_not_cut_an_event_stream(store: SqliteStore) -> None:
    """A stream outlives the head bound: it lasts 50 polls of 0.01 s (half a second at
    least), the bound is 0.1 s, and it still ends whole, by its lifetime."""
    await paused_run(store)
    async with Served(store, request_seconds=0.1, stream_seconds=0.5) as client:
        r = await client.get("/api/runs/p1/events")
        text = await asyncio.wait_for(r.text(), CAP)  # a stream cut off raises here
        assert text.startswith("event: run\ndata: {") and "event: end" not in text


async def test_a_decision_body_trickled_in_is_answered_408(store: SqliteStore) -> None:
    """aiohttp bounds a body's size (64 KiB here), not the time it takes to come: a
    decision whose body never came held its request for ever."""
    await paused_run(store)
    served = Served(store, request_seconds=0.2)
    async with served:
        reader, writer = await served.connect()
        head = "".join(f"{k}: {v}\r\n" for k, v in {
            "Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": "100",
            **WRITE}.items())
        writer.write(f"POST /api/runs/p1/decision HTTP/1.1\r\n{head}\r\n{{".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), CAP)  # answered, then closed
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert answer.endswith(b'{"error":"the body did not come within 0.2 seconds"}')
        for guard in GUARDS:
            assert guard.encode() in answer
        writer.close()
    record = await store.get_run("p1")
    assert record is not None and record.status == "paused"


async def test_another_sites_page_gets_no_event_stream(store: SqliteStore) -> None:
    """A page on another site can point EventSource (or fetch) at the UI: it can't read
    the answer, but each stream it opened was held and polled the store. Now what a
    browser marks as coming from another site's page is refused at once, holding no place;
    the UI's own page (same origin) and programs (no Origin) are served."""
    await paused_run(store)
    served = Served(store, max_event_streams=1)
    async with served as client:
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                        {"Origin": "http://localhost:3000"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            for path in ("/api/runs/p1/events", "/api/runs?limit=200"):
                r = await client.get(path, headers=headers)
                assert r.status == 403, (headers, path, r.status)
                assert (await r.json()) == {
                    "error": "a read of the API from another site's page is refused"}
                assert {k: r.headers.get(k) for k in GUARDS} == GUARDS
        # A page of the UI itself, or a link followed from anywhere, is served.
        page = await client.get("/runs/p1", headers={"Sec-Fetch-Site": "cross-site"})
        assert page.status == 200
        await page.read()
        own = await client.get("/api/runs/p1/events", headers={
            "Origin": f"http://127.0.0.1:{served.port}", "Sec-Fetch-Site": "same-origin"})
        assert own.status == 200  # the one place was still free
        own.close()
