"""The stdio transport for MCP servers, with a bound on each message.

The SDK's own stdio client keeps a line until its newline comes, joining the text read so
far with every new chunk: a server that answers with one 64 MB line costs about a minute
of the event loop and hundreds of MB (the result is then cut to `max_output_bytes`
anyway), and one that never sends the newline grows memory for as long as it runs.
Here bytes are kept in one buffer scanned once, and a message longer than
`max_message_bytes` ends the connection at once: the server is stopped, the calls
waiting on it fail, and `fault()` says why. Otherwise it speaks as the SDK does
(newline-delimited JSON-RPC, the SDK's default environment, its own process group).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # the `mcp` extra (and its anyio) is imported when a server starts
    from mcp.client.stdio import StdioServerParameters

_GRACE = 2.0
"""Seconds a server has to exit once its stdin is closed, before its group is killed."""


def _parse(line: bytes) -> Any:
    """A `SessionMessage`, or the exception that says why the line is none."""
    from mcp import types
    from mcp.shared.message import SessionMessage

    adapter = getattr(types, "jsonrpc_message_adapter", None)
    try:
        if adapter is not None:
            return SessionMessage(adapter.validate_json(line, by_name=False))
        legacy: Any = types.JSONRPCMessage  # mcp 1.x: a pydantic RootModel
        return SessionMessage(legacy.model_validate_json(line))
    except ValueError as exc:  # not JSON-RPC (pydantic's ValidationError is a ValueError)
        return exc


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@contextlib.asynccontextmanager
async def bounded_stdio_client(
    params: StdioServerParameters, *, errlog: IO[bytes], max_message_bytes: int,
    on_fault: Callable[[str], None],
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for a `ClientSession`, like the SDK's `stdio_client`.
    `on_fault` hears, once, why the connection was ended (a message over the bound)."""
    import anyio
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [params.command, *params.args], env=get_default_environment() | (params.env or {}),
        stderr=errlog, cwd=params.cwd, start_new_session=True)
    incoming_w, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_r = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with incoming_w:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError,
                                     anyio.EndOfStream, OSError):
                scanned = 0
                async for chunk in process.stdout:
                    buffer += chunk
                    while (end := buffer.find(b"\n", scanned)) >= 0:
                        line, scanned = bytes(buffer[:end]), 0
                        del buffer[: end + 1]
                        if line.strip():
                            await incoming_w.send(_parse(line))
                    scanned = len(buffer)
                    if len(buffer) > max_message_bytes:
                        on_fault(f"the server sent a message larger than {max_message_bytes} "
                                 "bytes; the connection was closed and the server stopped")
                        _kill_group(process.pid, signal.SIGKILL)
                        return

    async def write() -> None:
        assert process.stdin is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError,
                                 OSError):
            async with outgoing_r:
                async for message in outgoing_r:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(text.encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                for stream in (incoming, outgoing):
                    await stream.aclose()
            tg.cancel_scope.cancel()


async def _stop(process: Any) -> None:
    """Close the server's stdin, give it `_GRACE` seconds, then kill its group."""
    import anyio

    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(_GRACE):
        await process.wait()
    if process.returncode is None:
        _kill_group(process.pid, signal.SIGKILL)
    with anyio.move_on_after(_GRACE):  # reaps it and closes its pipes
        await process.aclose()
