"""A provider that sends header bytes that are not UTF-8 (`X-Request-Id: caf\\xe9`, an
ISO-8859-1 `Location`). aiohttp reads them as lone surrogates; the transport must hand on
text that encodes as UTF-8, or whatever writes the headers down (the run's recording, a
trace, the terminal) fails with UnicodeEncodeError. The server is a raw socket server on
loopback, since an HTTP server library would not send such bytes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentloom.http import AiohttpTransport, HttpRequest
from agentloom.recording import Recorder, Recording, RecordTransport

REPLY = (b"HTTP/1.1 500 Internal Server Error\r\n"
         b"X-Request-Id: caf\xe9\r\n"            # ISO-8859-1, not UTF-8
         b"X-Mixed: \x80\x81 ok\r\n"              # bytes no encoding names
         b"X-Fine: caf\xc3\xa9\r\n"               # real UTF-8 stays as it is
         b"Content-Length: 2\r\n\r\nno")


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(REPLY)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("stream", [False, True])
async def test_header_bytes_that_are_not_utf8_arrive_as_utf8_text(url: str,
                                                                  stream: bool) -> None:
    transport = AiohttpTransport()
    try:
        response = await transport.handle(HttpRequest(method="GET", url=url, stream=stream))
        assert await response.read() == b"no"
    finally:
        await transport.aclose()
    headers = response.headers
    for value in headers.values():
        value.encode("utf-8")  # raised UnicodeEncodeError: surrogates not allowed
    assert headers["x-request-id"] == "café"
    assert headers["x-mixed"] == "\x80\x81 ok"
    assert headers["x-fine"] == "café"


async def test_a_recording_of_such_a_reply_is_saved(url: str, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    transport = RecordTransport(AiohttpTransport(), Recorder(path))
    try:
        # Before: the recorder's save raised UnicodeEncodeError out of this call.
        response = await transport.handle(HttpRequest(method="GET", url=url))
    finally:
        await transport.aclose()
    assert response.status == 500
    (exchange,) = Recording.load(path).exchanges
    assert exchange["response"]["headers"]["x-request-id"] == "café"
