"""A small real MCP server, for tests of MCP tool sources (ours and users').

Written with the official SDK's `MCPServer`; run it as a process:

    python -m agentloom.testing.mcp_server                      # stdio
    python -m agentloom.testing.mcp_server --http --port 8765   # streamable HTTP on 127.0.0.1

Tools: `add(a, b)`, `echo(text)`, `fail(message)` (always fails, so the client sees an
error result), `slow(seconds)` (sleeps, for timeout tests); `--extra-tools N` lists N
more, `--big-tool N` one with an N-character description and parameter schema.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer


def build_server(extra_tools: int = 0, big_tool: int = 0) -> MCPServer:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("agentloom-test")

    @server.tool(
        description="Add two integers and return the sum.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails with the given message.")
    def fail(message: str = "boom") -> str:
        raise ToolError(message)

    @server.tool(description="Sleep for some seconds, then answer 'done'.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    for i in range(extra_tools):  # a server with more tools than a client should take
        server.add_tool(lambda: "ok", name=f"extra_{i}", description="An extra tool.")
    if big_tool:  # a description and a parameter's schema of `big_tool` characters each
        def big(text: str) -> str:
            return "ok"

        # Evaluated here: the SDK reads string annotations in the module's globals.
        big.__annotations__ = {"text": Annotated[str, Field(description="p" * big_tool)],
                               "return": str}
        server.add_tool(big, name="big", description="d" * big_tool)

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--fail-start",
        action="store_true",
        help="write to stderr and exit 3 at once (start-failure tests)",
    )
    parser.add_argument("--extra-tools", type=int, default=0, metavar="N",
                        help="also list N tools that answer 'ok' (tool-count bound tests)")
    parser.add_argument("--big-tool", type=int, default=0, metavar="N",
                        help="also list a tool whose description and parameter schema "
                             "are N characters each (size bound tests)")
    args = parser.parse_args(argv)
    if args.fail_start:
        print("test server refusing to start: --fail-start given", file=sys.stderr)
        raise SystemExit(3)
    server = build_server(args.extra_tools, args.big_tool)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
