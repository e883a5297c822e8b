"""The sync face: run a coroutine to completion from plain (non-async) code.

An agent's clients hold connection pools bound to one event loop, so each sync call
cannot start a fresh loop the way `asyncio.run` does. Instead one private loop runs in a
daemon thread for the object's life (a "portal"), and every sync call submits its
coroutine there and waits: several threads may call at once and their conversations run
concurrently on that loop. Called from inside a running event loop, a sync call would
block that loop, so it raises, as `asyncio.run` does, and names the async twin.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class Portal:
    """A private event loop in a daemon thread, started on first use."""

    __slots__ = ("_lock", "_loop", "_thread")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._loop is not None

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name="agentloom-portal", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, make: Callable[[], Awaitable[T]], *, name: str, twin: str) -> T:
        """Run `make()` on the portal loop and return its result (or raise its error)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                f"{name}() cannot be called from a running event loop; "
                f"use `await {twin}(...)` there"
            )
        loop = self._ensure()
        if threading.current_thread() is self._thread:
            raise RuntimeError(f"{name}() cannot be called from the agent's own event loop")

        async def runner() -> T:
            return await make()

        future = asyncio.run_coroutine_threadsafe(runner(), loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop and join its thread. Safe to call twice."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def drain() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(drain(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
