"""Tools from MCP servers, through the official `mcp` SDK.

Each server (a stdio command, or a streamable HTTP URL) gets one owner task that enters
the SDK's transport and session, lists the tools, then waits to be told to close. The SDK
runs on anyio task groups, which must be entered and left by the same task; keeping that
in a task of our own means `MCPToolSource` can be opened and closed from anywhere, and
calls can come from any task. Tools are named `server.tool`. A server that won't start
is a ConfigError that names the command and quotes its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from agentloom.errors import ConfigError, ToolError
from agentloom.tools._mcp_http import bounded_http_client
from agentloom.tools._mcp_stdio import bounded_stdio_client
from agentloom.tools._tool import BaseTool
from agentloom.tools.contracts import ToolContext, bounded_text

_SERVER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
INSTALL_HINT = "pip install 'agentloom-engine[mcp]'"
MAX_TOOLS_PER_SERVER = 1000
MAX_DESCRIPTION_CHARS = 16_384
"""A tool's description is cut here: every request of a step that uses the tool sends
it, so a server's 10 MB description would be paid for at every turn."""
MAX_SCHEMA_BYTES = 256 * 1024
"""A tool whose input schema is larger, as JSON, is refused (with its server) at start."""
"""A server listing more is refused at start: each tool's schema goes out with every call."""
MAX_TOOL_PAGES = 100
"""Pages of `tools/list` read at most (a cursor that never ends is refused, not followed)."""
STDERR_QUOTED_CHARS = 4000
"""The end of a server's stderr quoted when it fails to start."""
STDERR_QUOTED_BYTES = 4 * STDERR_QUOTED_CHARS  # enough UTF-8 for that many characters
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""A server's message (one JSON-RPC line over stdio; a JSON reply, or one SSE event, over
HTTP) may be this long, or 8 times its `max_output_bytes` if that is more; a longer one
ends the connection (`_mcp_stdio`, `_mcp_http`)."""


def require_mcp() -> None:
    """Raise ConfigError, with the install line that fixes it, when the `mcp` extra is
    missing. Called at load (so `validate` tells too) and before any server starts; it
    looks the package up without importing it (the SDK is heavy, and a load is not a run)."""
    try:
        found = importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError("MCP servers need the optional 'mcp' package, which is not "
                          f"installed: {INSTALL_HINT}")


@dataclass(slots=True, frozen=True, kw_only=True)
class MCPServerConfig:
    """One MCP server: `command` (+ `args`, `env`, `cwd`) for stdio, or `url`.

    MCPServerConfig(name="files", command="python", args=("-m", "my_server"))
    MCPServerConfig(name="search", url="http://127.0.0.1:8000/mcp", timeout=10)
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    """Extra environment for the server process (the SDK passes a safe minimum too)."""
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None
    timeout: float = 30.0
    """Seconds to start and list tools, and the limit for each call."""
    max_output_bytes: int = 1_000_000
    """A call's text result is cut here (UTF-8 bytes), the cut said at its end: a server
    that answers with megabytes would otherwise fill every later model call."""

    def __post_init__(self) -> None:
        if not _SERVER_NAME.match(self.name or ""):
            raise ConfigError(
                f"MCP server name {self.name!r}: use letters, digits, '_' or "
                "'-' (no dots: tools are named server.tool)"
            )
        if (self.command is None) == (self.url is None):
            raise ConfigError(
                f"MCP server {self.name!r}: give either command (stdio) or url "
                "(streamable HTTP), not both or neither"
            )
        if self.timeout <= 0:
            raise ConfigError(f"MCP server {self.name!r}: timeout must be positive")
        if self.max_output_bytes <= 0:
            raise ConfigError(f"MCP server {self.name!r}: max_output_bytes must be positive")

    @classmethod
    def from_config(cls, name: str, config: Mapping[str, Any]) -> MCPServerConfig:
        """The workflow's `mcp:` entry. `command` may be a list (program and args)."""
        if not isinstance(config, Mapping):
            raise ConfigError(f"MCP server {name!r}: expected a mapping")
        allowed = {"command", "args", "env", "cwd", "url", "headers", "timeout",
                   "max_output_bytes"}
        unknown = sorted(set(config) - allowed)
        if unknown:
            raise ConfigError(
                f"MCP server {name!r}: unknown field(s) {', '.join(unknown)} "
                f"(expected {', '.join(sorted(allowed))})"
            )
        command = config.get("command")
        args = [str(a) for a in config.get("args") or ()]
        if isinstance(command, list | tuple):
            if not command:
                raise ConfigError(f"MCP server {name!r}: empty command")
            command, args = str(command[0]), [*map(str, command[1:]), *args]
        return cls(
            name=name,
            command=None if command is None else str(command),
            args=tuple(args),
            env={str(k): str(v) for k, v in (config.get("env") or {}).items()} or None,
            cwd=config.get("cwd"),
            url=config.get("url"),
            headers={str(k): str(v) for k, v in (config.get("headers") or {}).items()} or None,
            timeout=float(config.get("timeout", 30.0)),
            max_output_bytes=int(config.get("max_output_bytes", 1_000_000)),
        )

    def describe(self) -> str:
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


class MCPTool(BaseTool):
    """One tool of a connected MCP server."""

    def __init__(
        self,
        connection: _Connection,
        remote_name: str,
        description: str,
        parameters: dict[str, Any],
    ) -> None:
        self._connection = connection
        self.remote_name = remote_name
        self.name = f"{connection.config.name}.{remote_name}"
        self.description = description
        self.parameters = parameters

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await self._connection.call(self.remote_name, arguments)


@dataclass(slots=True, kw_only=True)
class _Connection:
    config: MCPServerConfig
    session: Any = None
    tools: list[MCPTool] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Future[None] | None = None
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _stderr: IO[bytes] | None = None
    _scope: Any = None
    _fault: str | None = None
    """Why the transport ended the connection (a message over the bound), once it did."""

    def _set_fault(self, reason: str) -> None:
        self._fault = self._fault or reason

    async def start(self) -> None:
        require_mcp()
        self._stderr = await asyncio.to_thread(tempfile.TemporaryFile, "w+b")
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.config.name}")
        try:
            # The owner enforces the start timeout itself (see _own).
            await asyncio.shield(self._ready)
        except asyncio.CancelledError:
            await self.close()
            raise
        except Exception as exc:
            # Give the process a moment to finish writing stderr, then read it before
            # closing (closing drops the file).
            await asyncio.sleep(0.05)
            error = await self._start_error(exc)
            await self.close()
            raise error from None

    async def _start_error(self, exc: BaseException) -> ConfigError:
        what = self._fault or (
            f"timed out after {self.config.timeout:g} s"
            if isinstance(exc, TimeoutError)
            else _flatten(exc)
        )
        stderr = await self._read_stderr()
        detail = f"\nits stderr:\n{stderr}" if stderr else ""
        kind = "command" if self.config.command is not None else "url"
        return ConfigError(
            f"MCP server {self.config.name!r} did not start ({kind}: "
            f"{self.config.describe()}): {what}{detail}"
        )

    async def _read_stderr(self) -> str:
        f = self._stderr
        if f is None or f.closed:
            return ""

        def read() -> str:
            # Only the end is quoted: a server that wrote gigabytes to stderr before it
            # failed must not have them read into memory to find its last lines.
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - STDERR_QUOTED_BYTES))
            text = f.read(STDERR_QUOTED_BYTES).decode("utf-8", "replace")
            return text[-STDERR_QUOTED_CHARS:].strip()

        try:
            return await asyncio.to_thread(read)
        except (OSError, ValueError):
            return ""

    async def _own(self) -> None:
        assert self._ready is not None
        try:
            import anyio
            from mcp import ClientSession
        except ImportError as exc:  # an owner that dies silently would leave start() waiting
            self._ready.set_exception(exc)
            return
        # One anyio scope around everything: its deadline is the start timeout (lifted
        # once connected), and cancelling it is how `close` stops a start in progress.
        # Native task.cancel() does not reliably unwind the SDK's task groups.
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.config.timeout)
        self._scope = scope
        try:
            with scope:
                async with contextlib.AsyncExitStack() as stack:
                    streams = await stack.enter_async_context(self._transport())
                    session = await stack.enter_async_context(
                        ClientSession(
                            streams[0], streams[1], read_timeout_seconds=self.config.timeout
                        )
                    )
                    await session.initialize()
                    self.tools = await self._list_tools(session)
                    self.session = session
                    scope.deadline = math.inf
                    self._ready.set_result(None)
                    await self._closing.wait()
            if not self._ready.done():
                self._ready.set_exception(TimeoutError())
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(
                    exc if isinstance(exc, Exception) else RuntimeError(repr(exc))
                )
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        c = self.config
        if c.command is not None:
            from mcp.client.stdio import StdioServerParameters

            params = StdioServerParameters(
                command=c.command, args=list(c.args), env=dict(c.env) if c.env else None, cwd=c.cwd
            )
            assert self._stderr is not None
            return bounded_stdio_client(
                params, errlog=self._stderr, on_fault=self._set_fault,
                max_message_bytes=max(MAX_MESSAGE_BYTES, 8 * c.max_output_bytes))
        from mcp.client.streamable_http import streamable_http_client

        bound = max(MAX_MESSAGE_BYTES, 8 * c.max_output_bytes)
        client = bounded_http_client(c.headers, max_message_bytes=bound,
                                     on_fault=self._set_fault)
        # The SDK's own SSE bound (1 MiB by default) is raised to ours, which the client
        # enforces first (it counts each event's bytes at least as the SDK does).
        return _with_client(client, streamable_http_client(
            str(c.url), http_client=client, max_sse_event_size=bound))

    async def _list_tools(self, session: Any) -> list[MCPTool]:
        from mcp.types import PaginatedRequestParams

        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            if len(tools) + len(result.tools) > MAX_TOOLS_PER_SERVER:
                raise ConfigError(f"MCP server {self.config.name!r} lists more than "
                                  f"{MAX_TOOLS_PER_SERVER} tools")
            for t in result.tools:
                schema = dict(t.input_schema or {})
                schema.setdefault("type", "object")
                schema.setdefault("properties", {})
                size = len(json.dumps(schema, ensure_ascii=False).encode())
                if size > MAX_SCHEMA_BYTES:
                    raise ConfigError(f"MCP server {self.config.name!r}: tool "
                                      f"{t.name[:64]!r} has an input schema of {size} bytes, "
                                      f"over {MAX_SCHEMA_BYTES}")
                tool = MCPTool(self, t.name, _described(t.description or ""), schema)
                # The server's own hints: a read-only or idempotent tool is safe to re-run
                # after a crash.
                hints = t.annotations
                tool.idempotent = bool(
                    hints is not None and (hints.read_only_hint or hints.idempotent_hint)
                )
                tools.append(tool)
            cursor = result.next_cursor
            if not cursor:
                return tools
        raise ConfigError(f"MCP server {self.config.name!r} lists its tools over more than "
                          f"{MAX_TOOL_PAGES} pages")

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.session is None or self._fault is not None:
            why = f": {self._fault}" if self._fault else ""
            raise ToolError(f"MCP server {self.config.name!r} is not connected{why}")
        try:
            result = await self.session.call_tool(
                name, arguments, read_timeout_seconds=self.config.timeout
            )
        except Exception as exc:
            why = self._fault or _flatten(exc)
            raise ToolError(f"MCP {self.config.name}.{name} failed: {why}") from None
        text = bounded_text(_content_text(result), self.config.max_output_bytes)
        if result.is_error:
            raise ToolError(text or f"MCP {self.config.name}.{name} reported an error")
        return text

    async def close(self) -> None:
        self._closing.set()
        if self._scope is not None and (self._ready is None or not self._ready.done()):
            self._scope.cancel()
        task, ready = self._task, self._ready
        try:
            if task is not None and not task.done():
                with contextlib.suppress(TimeoutError, Exception):
                    await asyncio.wait_for(asyncio.shield(task), 15)
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            if ready is not None and ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: no "never retrieved" warning
        finally:
            # Also when this close is itself cancelled (its loop shutting down): the
            # server's stderr file must not outlive the connection.
            if self._stderr is not None:
                self._stderr.close()


def _described(text: str) -> str:
    if len(text) <= MAX_DESCRIPTION_CHARS:
        return text
    return (text[:MAX_DESCRIPTION_CHARS]
            + f" [description cut at {MAX_DESCRIPTION_CHARS} characters]")


@contextlib.asynccontextmanager
async def _with_client(client: Any, transport: Any) -> Any:
    async with client, transport as streams:
        yield streams


def _flatten(exc: BaseException) -> str:
    """An exception (or anyio's exception group) as `Type: message` of its leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_flatten(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _content_text(result: Any) -> str:
    import json

    pieces: list[str] = []
    for block in result.content or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            pieces.append(block.text)
        elif kind in ("image", "audio"):
            pieces.append(f"[{kind}: {getattr(block, 'mime_type', 'unknown type')}]")
        elif kind == "resource":
            resource = block.resource
            pieces.append(getattr(resource, "text", None) or f"[resource: {resource.uri}]")
        else:
            pieces.append(f"[{kind}]")
    if not pieces and result.structured_content is not None:
        return json.dumps(result.structured_content)
    return "\n".join(pieces)


class MCPToolSource:
    """The tools of one or more MCP servers, connected for the life of the source.

    async with MCPToolSource([config]) as source:
        registry.register_all(source.tools)
    """

    def __init__(self, servers: Iterable[MCPServerConfig]) -> None:
        self.servers = tuple(servers)
        names = [s.name for s in self.servers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"MCP server declared twice: {', '.join(dupes)}")
        self._connections: list[_Connection] = []

    async def start(self) -> None:
        """Start every server at once; if one fails, close the others and raise."""
        conns = [_Connection(config=s) for s in self.servers]
        results = await asyncio.gather(*(c.start() for c in conns), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
            for f in failures:
                if not isinstance(f, Exception):
                    raise f
            raise failures[0]
        self._connections = conns

    async def aclose(self) -> None:
        conns, self._connections = self._connections, []
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    async def __aenter__(self) -> MCPToolSource:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def tools(self) -> list[MCPTool]:
        return [t for c in self._connections for t in c.tools]

    def tools_of(self, server: str) -> Sequence[MCPTool]:
        for c in self._connections:
            if c.config.name == server:
                return list(c.tools)
        raise ConfigError(f"no MCP server named {server!r}")
