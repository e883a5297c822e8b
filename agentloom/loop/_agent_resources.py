"""What an Agent opened, bound to the one event loop that uses it, and closed on that loop.

An aiohttp session and an MCP server's owner task belong to the loop they were opened on;
closed anywhere else (or not at all before that loop ends), their sockets leak until
garbage collection. So the Agent's resources remember their loop and keep a watcher task
on it. Every way a loop ends cancels the tasks still on it first (`asyncio.run`, an
`asyncio.Runner`, the sync face's portal), and the cancelled watcher closes the sessions
and MCP servers right there, while the loop still runs. The next run, on a new loop
(another `asyncio.run`), binds afresh: HTTP sessions reopen on first use and MCP servers
are started again. A run on a second loop while the first is still alive is refused: one
face per Agent (its sync face is a loop of its own).

An Agent dropped without `close()` is closed by `abandon`, a finalizer: on its own loop,
without blocking the thread the garbage collector happened to run on (which may be that
loop's).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloom.loop._agent_tools import ToolPlan
    from agentloom.loop._sync import Portal
    from agentloom.tools.contracts import ToolBox

_CLOSING: set[asyncio.Task[None]] = set()
"""Closes started by `abandon`, kept alive until they finish."""


class AgentResources:
    """The runtime, transports and MCP sources of one Agent, and the loop they are on."""

    __slots__ = ("_loop", "_opening", "_watcher", "open_sources", "pending", "plan",
                 "runtime", "toolbox", "transports")

    def __init__(self, plan: ToolPlan) -> None:
        self.plan = plan
        self.runtime: Any = None
        """The Runtime from_env made; closed (fully) with the Agent."""
        self.transports: list[Any] = []
        """Transports the Agent made itself (a named http_request's)."""
        self.pending: list[Any] = list(plan.sources)
        """MCP sources to start on the next run's loop."""
        self.open_sources: list[Any] = []
        self.toolbox: ToolBox | None = plan.build()
        """The static tools, plus the MCP tools while their servers are open."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._opening: asyncio.Lock | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the resources are bound to, if any."""
        return self._loop

    @property
    def owns_anything(self) -> bool:
        return bool(self.runtime is not None or self.transports or self.plan.sources)

    def entered(self) -> bool:
        """Nothing for `enter()` to do on the running loop: a run needn't await it."""
        if self.runtime is None and not self.transports and not self.plan.sources:
            return True  # owns nothing (`owns_anything`, without the property per run)
        return self._loop is asyncio.get_running_loop() and not self.pending

    async def enter(self) -> None:
        """Bind to the running loop (first use, or the old loop has ended) and start the
        MCP servers not started yet. RuntimeError on a second live loop. An Agent that
        opened nothing (a client the caller owns) is bound to no loop."""
        if not self.owns_anything:
            return
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._bind(loop)
        if self.pending:
            await self._open_sources()

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        old = self._loop
        if old is not None and not old.is_closed():
            raise RuntimeError(
                "this Agent is in use on another event loop; an Agent's connections belong "
                "to one loop: use one face (sync or async) and one loop per Agent, or "
                "close it (`close()`/`aclose()`) before using it on another")
        self._loop, self._opening = loop, None
        # After an ended loop nothing is open any more; sources start again here.
        self.pending = list(self.plan.sources)
        self.open_sources = []
        self.toolbox = self.plan.build()
        self._watcher = loop.create_task(self._watch(), name="agentloom-agent-watch")

    async def _watch(self) -> None:
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            # The loop is ending (or the Agent closing): close on this loop, now.
            self._watcher = None
            await self.release()
            raise

    async def _open_sources(self) -> None:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            while self.pending:
                source = self.pending[0]
                await source.start()
                self.pending.pop(0)
                self.open_sources.append(source)
            self.toolbox = self.plan.build(
                [t for s in self.open_sources for t in s.tools])

    async def release(self) -> None:
        """Close what belongs to the bound loop: HTTP sessions (their transports reopen
        on next use) and MCP servers (started again on the next loop)."""
        sources, self.open_sources = self.open_sources, []
        self.pending = list(self.plan.sources)
        self.toolbox = self.plan.build()
        transports = list(self.transports)
        if self.runtime is not None:
            transports.append(self.runtime.transport)
        errors: list[BaseException] = []
        for item in [*reversed(sources), *transports]:
            try:
                await item.aclose()
            except Exception as exc:  # close the rest; the first failure is raised
                errors.append(exc)
        # One more pass of the loop: a closed connection releases its socket in a
        # callback its close scheduled, which must run before the loop stops.
        await asyncio.sleep(0)
        self._loop = None
        if errors:
            raise errors[0]

    async def aclose(self) -> None:
        """Close everything, on the running loop. Safe to call twice."""
        watcher, self._watcher = self._watcher, None
        if (watcher is not None and not watcher.done()
                and watcher.get_loop() is asyncio.get_running_loop()):
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher  # it releases the loop's resources
        try:
            await self.release()
        finally:
            runtime, self.runtime = self.runtime, None
            self.transports = []
            self.pending = []
            if runtime is not None:
                await runtime.aclose()


def abandon(portal: Portal, res: AgentResources) -> None:
    """Close an Agent nobody closed (a `weakref.finalize` callback): through its portal
    from a helper thread (the collector may be running on the portal's own thread), or
    as a task on the loop its async face used."""
    if portal.started:
        def close() -> None:
            with contextlib.suppress(Exception):
                portal.run(res.aclose, name="Agent finalizer", twin="agent.aclose")
            portal.close()

        threading.Thread(target=close, name="agentloom-agent-close", daemon=True).start()
        return
    loop = res.loop
    if loop is None or loop.is_closed():
        return

    def start() -> None:
        task = loop.create_task(res.aclose())
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)

    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
        loop.call_soon_threadsafe(start)


def close_unmade(runtime: Any) -> None:
    """Close the runtime of an Agent that failed to be made (`Agent.from_env`). Inside a
    running event loop (`async with Agent.from_env(...)`) `asyncio.run` can't be used:
    the close goes on that loop as a task, held until it ends."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is None:
            asyncio.run(runtime.aclose())
        else:
            task = loop.create_task(runtime.aclose())
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)
    except Exception:
        pass
