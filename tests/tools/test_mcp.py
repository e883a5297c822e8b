"""MCP tools from a real server process (the SDK's MCPServer), over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from agentloom.errors import ConfigError
from agentloom.loop import ToolContext
from agentloom.messages import ToolCallPart
from agentloom.tools import MCPServerConfig, MCPToolSource, ToolRegistry, tool

CTX = ToolContext()
SERVER = MCPServerConfig(
    name="test", command=sys.executable, args=("-m", "agentloom.testing.mcp_server"), timeout=20
)


# One server process for the module's tests: starting one takes about a second.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def source() -> AsyncIterator[MCPToolSource]:
    async with MCPToolSource([SERVER]) as src:
        yield src


async def test_tools_are_listed_as_server_dot_tool(source: MCPToolSource) -> None:
    names = sorted(t.name for t in source.tools)
    assert names == ["test.add", "test.echo", "test.fail", "test.slow"]
    add = next(t for t in source.tools if t.name == "test.add")
    assert add.description == "Add two integers and return the sum."
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    # Idempotence comes from the server's read-only/idempotent hints.
    assert add.idempotent is True
    assert next(t for t in source.tools if t.name == "test.echo").idempotent is False


async def test_calls_through_a_toolset(source: MCPToolSource) -> None:
    registry = ToolRegistry(source.tools)

    @tool
    def local(x: int) -> int:
        return x * 10

    registry.register(local)
    box = registry.toolbox(["test", "local"])  # the server alone: all its tools
    assert [s.name for s in box.specs] == [
        "test_add",
        "test_echo",
        "test_fail",
        "test_slow",
        "local",
    ]
    results = await asyncio.gather(
        box.call(ToolCallPart(id="1", name="test_add", arguments='{"a": 2, "b": 40}'), CTX),
        box.call(ToolCallPart(id="2", name="test.echo", arguments='{"text": "hi"}'), CTX),
        box.call(ToolCallPart(id="3", name="local", arguments='{"x": 4}'), CTX),
    )
    assert [(r.content, r.is_error) for r in results] == [
        ("42", False),
        ("hi", False),
        ("40", False),
    ]


async def test_a_failing_mcp_tool_is_an_error_result(source: MCPToolSource) -> None:
    box = ToolRegistry(source.tools).toolbox(["test.fail"], error_prompt="Try again.")
    result = await box.call(
        ToolCallPart(id="1", name="test_fail", arguments='{"message": "disk full"}'), CTX
    )
    assert result.is_error
    assert "disk full" in result.content and result.content.endswith("Try again.")


async def test_a_server_that_does_not_start_names_command_and_stderr() -> None:
    bad = MCPServerConfig(
        name="bad",
        command=sys.executable,
        args=("-m", "agentloom.testing.mcp_server", "--fail-start"),
        timeout=20,
    )
    with pytest.raises(ConfigError) as err:
        async with MCPToolSource([bad]):
            pass
    message = str(err.value)
    assert "MCP server 'bad' did not start" in message
    assert "--fail-start" in message
    assert "test server refusing to start" in message


async def test_a_missing_command_is_a_config_error() -> None:
    bad = MCPServerConfig(name="ghost", command="/nonexistent/mcp-server", timeout=5)
    with pytest.raises(
        ConfigError,
        match=r"MCP server 'ghost' did not start .*"
        r"/nonexistent/mcp-server",
    ):
        await MCPToolSource([bad]).start()


async def test_config_from_yaml_and_its_errors() -> None:
    c = MCPServerConfig.from_config(
        "files", {"command": ["python", "-m", "srv"], "args": ["--x"], "timeout": 5}
    )
    assert (c.command, c.args, c.timeout) == ("python", ("-m", "srv", "--x"), 5.0)
    assert c.max_output_bytes == 1_000_000
    assert MCPServerConfig.from_config(
        "files", {"url": "http://127.0.0.1:1/mcp", "max_output_bytes": 512}
    ).max_output_bytes == 512
    with pytest.raises(ConfigError, match=r"either command .* or url"):
        MCPServerConfig.from_config("x", {})
    with pytest.raises(ConfigError, match="unknown field"):
        MCPServerConfig.from_config("x", {"comand": "srv"})
    with pytest.raises(ConfigError, match="no dots"):
        MCPServerConfig(name="a.b", command="srv")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentloom.testing.mcp_server", "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_streamable_http_server(http_server: str) -> None:
    config = MCPServerConfig(name="remote", url=http_server, timeout=20)
    async with MCPToolSource([config]) as src:
        box = ToolRegistry(src.tools).toolbox(["remote.add"])
        result = await box.call(
            ToolCallPart(id="1", name="remote_add", arguments='{"a": 1, "b": 2}'), CTX
        )
    assert (result.content, result.is_error) == ("3", False)


async def test_a_server_that_never_answers_times_out_naming_the_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    silent = MCPServerConfig(
        name="mute",
        command=sys.executable,
        args=(
            "-c",
            # Says something on stderr, then never answers (until it is killed).
            "import sys,threading; print('waiting', file=sys.stderr, flush=True); "
            "threading.Event().wait()",
        ),
        timeout=0.5,
    )
    start = time.monotonic()
    with pytest.raises(
        ConfigError,
        match=r"MCP server 'mute' did not start .*timed out after "
        r"0\.5 s\nits stderr:\nwaiting",
    ):
        await MCPToolSource([silent]).start()
    assert time.monotonic() - start < 8


async def test_a_long_result_is_cut_at_max_output_bytes_and_says_so() -> None:
    small = MCPServerConfig(name="tight", command=sys.executable,
                            args=("-m", "agentloom.testing.mcp_server"), timeout=20,
                            max_output_bytes=100)
    async with MCPToolSource([small]) as src:
        echo = next(t for t in src.tools if t.name == "tight.echo")
        out = await echo({"text": "é" * 80}, CTX)  # 160 bytes of UTF-8
        assert out == "é" * 50 + "\n[output truncated at 100 bytes]"
        assert await echo({"text": "short"}, CTX) == "short"
    with pytest.raises(ConfigError, match="max_output_bytes must be positive"):
        MCPServerConfig.from_config("x", {"command": "x", "max_output_bytes": 0})


async def test_a_server_listing_too_many_tools_is_refused_at_start() -> None:
    crowded = MCPServerConfig(
        name="crowd", command=sys.executable, timeout=20,
        args=("-m", "agentloom.testing.mcp_server", "--extra-tools", "1000"))
    with pytest.raises(ConfigError, match=r"MCP server 'crowd' did not start .*lists more "
                                          r"than 1000 tools"):
        await MCPToolSource([crowded]).start()


async def test_a_long_description_is_cut_and_a_huge_schema_refused() -> None:
    def server(size: int) -> MCPServerConfig:
        return MCPServerConfig(name="wordy", command=sys.executable, timeout=20,
                               args=("-m", "agentloom.testing.mcp_server",
                                     "--big-tool", str(size)))

    async with MCPToolSource([server(20_000)]) as src:  # a 20 kB schema: taken
        big = next(t for t in src.tools if t.name == "wordy.big")
        assert big.description == "d" * 16_384 + " [description cut at 16384 characters]"
        assert "p" * 20_000 in json.dumps(big.parameters)
        assert await big({"text": "x"}, CTX) == "ok"
    with pytest.raises(ConfigError, match=r"MCP server 'wordy' did not start .*tool 'big' "
                                          r"has an input schema of \d+ bytes, over 262144"):
        await MCPToolSource([server(300_000)]).start()
