"""A hostile MCP server over stdio or HTTP: replies too long to keep, or that never end.

The server is a real process speaking raw newline-delimited JSON-RPC (so it can send what
the SDK's own server never would): its `flood` tool answers with `size` bytes of text in
one line, or, with size -1, a line that never ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agentloom.errors import ConfigError
from agentloom.messages import ToolCallPart
from agentloom.tools import MCPServerConfig, MCPToolSource, ToolRegistry
from agentloom.tools._mcp import MAX_MESSAGE_BYTES
from agentloom.tools.contracts import ToolContext

pytest.importorskip("mcp")

CTX = ToolContext()
_SERVER = r'''
import json, os, sys
out = sys.stdout.buffer
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "f", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "flood", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        size = msg["params"]["arguments"]["size"]
        out.write(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"'
                  % mid)
        chunk, sent = b"x" * 65536, 0
        while size < 0 or sent < size:
            out.write(chunk[: 65536 if size < 0 else min(65536, size - sent)])
            sent += 65536
        out.write(b'"}]}}\n')
        out.flush()
        continue
    else:
        result = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}).encode() + b"\n")
    out.flush()
'''


def _config(tmp_path: Path) -> MCPServerConfig:
    script = tmp_path / "flood_server.py"
    script.write_text(_SERVER)
    # The call timeout is long: the bound, not a timeout, must end a flood.
    return MCPServerConfig(name="f", command=sys.executable,
                           args=(str(script), str(tmp_path / "pid")), timeout=15)


def _call(size: int) -> ToolCallPart:
    return ToolCallPart(id="1", name="f_flood", arguments={"size": size})


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_reply_that_never_ends_fails_the_call_at_the_bound(tmp_path: Path) -> None:
    async with MCPToolSource([_config(tmp_path)]) as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        result = await box.call(_call(-1), CTX)
        assert result.is_error
        assert f"larger than {MAX_MESSAGE_BYTES} bytes" in result.content
        assert "connection was closed" in result.content
        # The connection is over, and every later call says why.
        again = await box.call(_call(10), CTX)
        assert again.is_error
        assert "is not connected: the server sent a message larger than" in again.content
    assert _gone(int((tmp_path / "pid").read_text()))


async def test_a_reply_over_the_bound_is_refused_not_read_whole(tmp_path: Path) -> None:
    async with MCPToolSource([_config(tmp_path)]) as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        result = await box.call(_call(MAX_MESSAGE_BYTES + 4 * 1024 * 1024), CTX)
    assert result.is_error
    assert f"larger than {MAX_MESSAGE_BYTES} bytes" in result.content


async def test_a_reply_under_the_bound_comes_back_cut_at_max_output_bytes(
        tmp_path: Path) -> None:
    async with MCPToolSource([_config(tmp_path)]) as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        big = await box.call(_call(3 * 1024 * 1024), CTX)
        small = await box.call(_call(5), CTX)
    assert not big.is_error
    assert big.content == "x" * 1_000_000 + "\n[output truncated at 1000000 bytes]"
    assert (small.content, small.is_error) == ("xxxxx", False)


async def test_a_server_that_floods_stderr_and_fails_is_quoted_from_its_end() -> None:
    # 20 MB of stderr before it exits: the start error quotes the last lines, read from
    # the file's end, where the whole file was read into memory to take its last 4000.
    script = ("import sys; sys.stderr.write('x' * 20_000_000 + '\\nlast words\\n'); "
              "sys.stderr.flush(); sys.exit(3)")
    flood = MCPServerConfig(name="flood", command=sys.executable, args=("-c", script),
                            timeout=20)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as err:
            async with MCPToolSource([flood]):
                pass
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert "MCP server 'flood' did not start" in message
    assert message.endswith("last words")
    assert len(message) < 6000
    assert peak < 8_000_000, peak  # the old read held the 20 MB text (and a copy)


# The same over streamable HTTP: an aiohttp app on 127.0.0.1 that answers the handshake
# and `tools/list` properly, then answers `flood` with `size` bytes of text in one JSON
# body, or (mode "sse") in one SSE event; size -1 never ends.


async def _http_flood(request: web.Request) -> web.StreamResponse:
    if request.method == "GET":  # no stream of server-initiated messages
        return web.Response(status=405)
    if request.method == "DELETE":
        return web.Response()
    msg = await request.json()
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        return web.Response(status=202)
    if method != "tools/call":
        result: dict[str, Any] = {}
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "f", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "flood", "inputSchema": {"type": "object"}}]}
        return web.json_response({"jsonrpc": "2.0", "id": mid, "result": result},
                                 headers={"mcp-session-id": "s1"})
    size, sse = msg["params"]["arguments"]["size"], msg["params"]["arguments"]["mode"] == "sse"
    response = web.StreamResponse(
        headers={"content-type": "text/event-stream" if sse else "application/json"})
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):
        await response.write((b"event: message\ndata: " if sse else b"")
                             + b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":'
                               b'"text","text":"' % mid)
        chunk, sent = b"x" * 65536, 0
        while size < 0 or sent < size:
            await response.write(chunk[: 65536 if size < 0 else min(65536, size - sent)])
            sent += 65536
        await response.write(b'"}]}}' + (b"\n\n" if sse else b""))
    return response


@contextlib.asynccontextmanager
async def _http_source() -> AsyncIterator[MCPToolSource]:
    app = web.Application()
    app.router.add_route("*", "/mcp", _http_flood)
    async with TestServer(app, host="127.0.0.1") as server:
        config = MCPServerConfig(name="f", url=str(server.make_url("/mcp")), timeout=15)
        async with MCPToolSource([config]) as src:
            yield src


def _http_call(size: int, mode: str) -> ToolCallPart:
    return ToolCallPart(id="1", name="f_flood", arguments={"size": size, "mode": mode})


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_an_http_reply_over_the_bound_is_refused_not_read_whole(mode: str) -> None:
    async with _http_source() as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        tracemalloc.start()
        try:
            result = await box.call(_http_call(64 * 1024 * 1024, mode), CTX)
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.is_error
        assert f"larger than {MAX_MESSAGE_BYTES} bytes" in result.content
        assert "connection was closed" in result.content
        again = await box.call(_http_call(10, mode), CTX)
    assert again.is_error
    assert "is not connected: the server sent a message larger than" in again.content
    # The SDK read the whole 64 MB JSON body (about 136 MB at peak) before cutting it.
    assert peak < 48_000_000, peak


async def test_an_http_reply_that_never_ends_fails_the_call_at_the_bound() -> None:
    async with _http_source() as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        result = await box.call(_http_call(-1, "sse"), CTX)
    assert result.is_error
    assert f"larger than {MAX_MESSAGE_BYTES} bytes" in result.content


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_an_http_reply_under_the_bound_comes_back_cut_at_max_output_bytes(
        mode: str) -> None:
    async with _http_source() as src:
        box = ToolRegistry(src.tools).toolbox(["f"])
        big = await box.call(_http_call(3 * 1024 * 1024, mode), CTX)
        small = await box.call(_http_call(5, mode), CTX)
    # Over SSE the SDK's own 1 MiB event limit failed this 3 MB reply.
    assert not big.is_error, big.content
    assert big.content == "x" * 1_000_000 + "\n[output truncated at 1000000 bytes]"
    assert (small.content, small.is_error) == ("xxxxx", False)
