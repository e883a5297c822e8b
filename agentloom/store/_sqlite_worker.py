"""The SQLite store's worker thread and how its results reach the event loop.

sqlite3 blocks, so the store's statements run on one dedicated thread (`Worker`), in the
order they come; a result comes back through a queue and a pipe the event loop reads
(`_Wakeup`; `call_soon_threadsafe` where a loop can't read one), which costs less than an
executor's futures. `agentloom.store._sqlite` says when a write skips the trip.
"""

from __future__ import annotations

import asyncio
import collections
import os
import queue
import threading
from collections.abc import Callable
from typing import Any


def _settle(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


class _Wakeup:
    """How the worker hands results to one event loop: a queue and a pipe the loop reads.
    Cheaper than `call_soon_threadsafe`, whose self-pipe read ends in a BlockingIOError
    every time and which makes a handle per result."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.done: collections.deque[tuple[asyncio.Future[Any], Any, BaseException | None]] \
            = collections.deque()
        self._r, self._w = os.pipe()
        try:
            os.set_blocking(self._r, False)
            os.set_blocking(self._w, False)
            loop.add_reader(self._r, self._drain)
        except BaseException:  # a loop without readers (Windows' proactor)
            self.close()
            raise

    def post(self, fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        """(worker thread) Hand a result to the loop and wake it."""
        self.done.append((fut, result, error))
        try:
            os.write(self._w, b"\0")
        except BlockingIOError:  # the pipe is full: the loop has a wake-up coming
            pass

    def _drain(self) -> None:
        try:
            os.read(self._r, 4096)
        except BlockingIOError:
            pass
        done = self.done
        while done:
            _settle(*done.popleft())

    def detach(self) -> None:
        """Stop reading (the worker closes the pipe when it ends)."""
        if not self.loop.is_closed():
            try:
                self.loop.remove_reader(self._r)
            except RuntimeError:  # a loop running in another thread now: its own business
                pass

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


class Worker:
    """The store's thread: runs calls in the order they come, one at a time."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.submitted = 0
        """Jobs handed over (counted by the event loop's thread)."""
        self.finished = 0
        """Jobs run to their end (counted by the worker): equal, the worker is idle."""
        self._wakeup: _Wakeup | None = None
        """The wake-up of the loop that used the store last (the usual one)."""
        self._wakeups: dict[asyncio.AbstractEventLoop, _Wakeup] = {}
        self._plain_loops = False
        # A daemon: a store nobody closed must not keep the process alive (an idle
        # worker waits on its queue; a write cut short is what SQLite survives anyway).
        self._thread = threading.Thread(target=self._serve, name="agentloom-sqlite",
                                        daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        wakeup = self._wakeup
        if wakeup is None or wakeup.loop is not loop:
            wakeup = self._wakeup_for(loop)
        self.submitted += 1
        self._jobs.put((wakeup or loop, fut, fn, args))
        return fut

    @property
    def idle(self) -> bool:
        """No job queued or running: nothing on this thread touches the connection. Only
        the event loop's thread submits, so it stays idle until that thread submits again."""
        return self.finished == self.submitted

    def _wakeup_for(self, loop: asyncio.AbstractEventLoop) -> _Wakeup | None:
        """`loop`'s wake-up pipe (a store outlives event loops, and each keeps its own
        until the store closes), or None where the loop can't read one."""
        if self._plain_loops:
            return None
        wakeup = self._wakeups.get(loop)
        if wakeup is None:
            try:
                wakeup = self._wakeups[loop] = _Wakeup(loop)
            except (NotImplementedError, OSError):
                self._plain_loops = True
                return None
        self._wakeup = wakeup
        return wakeup

    def _serve(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                to, fut, fn, args = job
                try:
                    result, error = fn(*args), None
                except BaseException as exc:  # handed to the caller, whatever it is
                    result, error = None, exc
                self.finished += 1  # only this thread writes it
                if type(to) is _Wakeup:
                    to.post(fut, result, error)
                    continue
                try:
                    to.call_soon_threadsafe(_settle, fut, result, error)
                except RuntimeError:  # that loop is closed: nobody waits for this
                    pass
        finally:  # no job can post any more: the pipes can go
            for wakeup in list(self._wakeups.values()):
                wakeup.close()

    def stop(self) -> None:
        for wakeup in self._wakeups.values():
            wakeup.detach()
        self._wakeup = None
        self._jobs.put(None)
