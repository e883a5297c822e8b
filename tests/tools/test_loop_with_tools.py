"""The loop with a real ToolSet: built-ins, a Python tool, an MCP tool and a workflow
function, two calls in one reply, errors fed back, results in call order."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agentloom.http import AiohttpTransport
from agentloom.loop import run_loop
from agentloom.messages import Message, ModelRequest, ToolResultPart
from agentloom.testing.scripted import ScriptedModel, tool_call
from agentloom.tools import (
    FunctionTool,
    MCPServerConfig,
    MCPToolSource,
    SandboxPolicy,
    default_registry,
    tool,
)


@pytest.fixture
async def web_server() -> AsyncIterator[str]:
    async def weather(request: web.Request) -> web.Response:
        return web.json_response({"city": request.query["city"], "temp_c": 21})

    app = web.Application()
    app.router.add_get("/weather", weather)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"127.0.0.1:{port}"
    await runner.cleanup()


@tool
def convert(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


async def test_one_loop_uses_every_kind_of_tool(web_server: str, tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("bring an umbrella")
    policy = SandboxPolicy(
        allow_network=True, allowed_addresses=(web_server,), readable_paths=(str(tmp_path),)
    )

    async def body(args: dict[str, Any]) -> object:
        return f"{args['who']} has {args['n']} meetings"

    agenda = FunctionTool(
        "agenda", "Meetings of a person.", {"who": {"type": "str"}, "n": {"type": "int"}}, body
    )
    transport = AiohttpTransport()
    mcp = MCPServerConfig(
        name="calc", command=sys.executable, args=("-m", "agentloom.testing.mcp_server"), timeout=20
    )
    try:
        async with MCPToolSource([mcp]) as source:
            registry = default_registry(
                transport=transport, policy=policy, tools=[convert, agenda, *source.tools]
            )
            box = registry.toolbox(
                ["http_request", "file_read", "convert", "calc.add", "agenda"],
                error_prompt="Check the arguments.",
            )
            model = ScriptedModel(
                [
                    [
                        tool_call(
                            "http_request",
                            {"url": f"http://{web_server}/weather?city=Oslo"},
                            id="a",
                        ),
                        tool_call("file_read", {"path": str(tmp_path / "note.txt")}, id="b"),
                    ],
                    [
                        tool_call("convert", {"celsius": 21}, id="c"),
                        tool_call("calc_add", {"a": 2, "b": 3}, id="d"),
                        tool_call("agenda", '{"who": "Ada", "n": "2"}', id="e"),
                        tool_call("file_read", {"path": "/etc/passwd"}, id="f"),
                        tool_call("convert", "{oops", id="g"),
                    ],
                    "21 °C (69.8 °F), umbrella.",
                ]
            )
            request = ModelRequest(model="scripted", messages=(Message.user("Weather?"),))
            result = await run_loop(model, request, tools=box)
    finally:
        await transport.aclose()

    assert result.text == "21 °C (69.8 °F), umbrella."
    assert [s.name for s in model.requests[0].tools] == [
        "http_request",
        "file_read",
        "convert",
        "calc_add",
        "agenda",
    ]
    tool_results = [
        p for m in result.new_messages for p in m.parts if isinstance(p, ToolResultPart)
    ]
    by_id = {p.call_id: p for p in tool_results}
    assert [p.call_id for p in tool_results] == ["a", "b", "c", "d", "e", "f", "g"]
    assert by_id["a"].content == '{"city": "Oslo", "temp_c": 21}'
    assert by_id["b"].content == "bring an umbrella"
    assert by_id["c"].content == "69.8"
    assert by_id["d"].content == "5"
    assert by_id["e"].content == "Ada has 2 meetings"
    assert by_id["f"].is_error and "refused to read '/etc/passwd'" in by_id["f"].content
    assert by_id["f"].content.endswith("Check the arguments.")
    assert by_id["g"].is_error and "not valid JSON" in by_id["g"].content
