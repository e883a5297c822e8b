"""`agentloom callback-server` without a token trusts whoever reaches it on loopback; a web
page open in the person's browser reaches it too. A DNS-rebinding page (its own host name
on 127.0.0.1) and a cross-site form or fetch are refused; a program that sends webhooks
(no Origin, no Sec-Fetch-Site) is not. A request that never finishes arriving is closed;
one with headers no URL holds, a chunked body or two lengths is answered, not dropped;
a run is resumed once however many decisions arrive for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentloom.cli import callback_server
from agentloom.store import Checkpoint, PauseInfo, SqliteStore


@pytest.fixture
async def port(tmp_path: Path) -> AsyncIterator[int]:
    state = callback_server._Server(str(tmp_path / "runs.db"), token=None)
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def _ask(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode("latin-1") + b"\r\n" + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}",
                                  "LOCALHOST"])
async def test_a_loopback_host_name_is_answered(port: int, host: str) -> None:
    host = host.format(port=port)
    status, body = await _ask(port, f"GET /pending HTTP/1.1\r\nHost: {host}\r\n")
    assert (status, body) == (200, {"paused_runs": []})


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.evil.example", ""])
async def test_another_host_name_is_refused(port: int, host: str) -> None:
    # What a DNS-rebinding page sends: its own name, now resolving to 127.0.0.1.
    head = "GET /pending HTTP/1.1\r\n" + (f"Host: {host.format(port=port)}\r\n"
                                          if host else "")
    status, body = await _ask(port, head)
    assert status == 403
    assert "answers only to a loopback host name" in body["error"]


@pytest.mark.parametrize("extra", ["Origin: http://evil.example\r\n",
                                   "Origin: null\r\n",
                                   "Sec-Fetch-Site: cross-site\r\n",
                                   "Sec-Fetch-Site: same-site\r\n"])
async def test_a_post_from_another_sites_page_is_refused(port: int, extra: str) -> None:
    head = f"POST /approve/r1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}"
    status, body = await _ask(port, head + "Content-Length: 0\r\n")
    assert (status, body) == (403, {"error": "a request from another site's web page is "
                                             "refused"})


async def test_a_program_posting_without_browser_headers_gets_through(port: int) -> None:
    # The guard lets it pass: the run is simply not paused in this (empty) store.
    head = f"POST /approve/r1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n"
    status, body = await _ask(port, head)
    assert status == 409 and "is not paused" in body["error"]
    same = (f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin\r\n"
            "Content-Length: 2\r\n")
    assert await _ask(port, same, b"{}") == (200, {"status": "received"})


async def test_a_request_that_never_finishes_arriving_is_closed(
        port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callback_server, "READ_SECONDS", 0.05)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /approve/r1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
                 b"\r\n{")  # nine bytes of the body never come
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=60)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


@pytest.mark.parametrize(("head", "error"), [
    ("GET /pending HTTP/1.1\r\nHost: [::1\r\n", "answers only to a loopback host name"),
    ("POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://[x\r\nContent-Length: 0\r\n",
     "a request from another site's web page is refused"),
])
async def test_a_header_no_url_could_hold_is_refused_and_the_server_goes_on(
        port: int, head: str, error: str) -> None:
    # Such a Host or Origin made urlsplit raise: the connection was dropped unanswered,
    # with a traceback on the server's stderr.
    status, body = await _ask(port, head)
    assert status == 403 and error in body["error"]
    assert await _ask(port, "GET /pending HTTP/1.1\r\nHost: 127.0.0.1\r\n") == (
        200, {"paused_runs": []})


async def test_a_chunked_body_is_refused_not_read_as_empty(port: int) -> None:
    head = ("POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n")
    status, body = await _ask(port, head, b"5\r\nhello\r\n0\r\n\r\n")
    assert status == 411 and "Content-Length" in body["error"]


async def test_two_content_lengths_that_disagree_are_refused(port: int) -> None:
    head = ("POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
            "Content-Length: 0\r\n")
    assert await _ask(port, head, b"{}") == (
        400, {"error": "Content-Length given twice, differently"})
    same = ("POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
            "Content-Length: 2\r\n")
    assert await _ask(port, same, b"{}") == (200, {"status": "received"})


async def test_a_second_decision_while_the_first_resumes_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    async with store:
        await store.create_run("p1", "gate", "h", {})
        await store.save_checkpoint("p1", Checkpoint(
            state={}, status="paused",
            paused=PauseInfo(step_id="approve", waiting_for="approval", prompt="ship?")))
    started: list[list[str]] = []
    release = asyncio.Event()

    async def resume_held_open(argv: list[str]) -> int:
        # The child process, held until the test lets it end: how long a real one takes
        # to claim the run is what the server must not depend on.
        started.append(argv)
        await release.wait()
        return 0

    monkeypatch.setattr(callback_server, "_resume", resume_held_open)
    state = callback_server._Server(str(tmp_path / "runs.db"), token=None)
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    head = "POST /{} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
    try:
        first = await _ask(port, head.format("approve/p1"))
        assert first[0] == 202 and first[1]["decision"] == "approved"
        assert await _ask(port, head.format("reject/p1")) == (
            409, {"error": "run 'p1' is being resumed already"})
        assert len(started) == 1 and started[0][-4:] == ["--store", str(tmp_path / "runs.db"),
                                                         "--", "p1"]
        assert "--approve" in started[0]
        release.set()
        while state.resumes:
            await asyncio.sleep(0)
    finally:
        server.close()
        await server.wait_closed()
