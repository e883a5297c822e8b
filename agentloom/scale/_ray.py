"""The Ray executor: the same batch spread over a pool of Ray actors.

Each actor is an async actor that opens its own runner (its own runtime, HTTP session and
limits) once and runs up to `per_worker` inputs at a time. The driver keeps at most
`concurrency` inputs in flight over the whole pool, gives each to the least busy live
actor, and yields results as they come back; the caller writes them, so the output file
has one writer. When an actor dies (`RayActorError`, or the worker process crashed), the
inputs it was running go back to the front of the queue, a fresh actor takes its place,
and an input that lost `max_attempts` workers ends as an `error`. A result whose id was
already yielded is dropped, so each input is reported exactly once.

`ray` is imported only here, only when this executor runs.
"""

from __future__ import annotations

import asyncio
import math
import socket
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentloom.errors import ConfigError
from agentloom.scale._types import (
    ERROR,
    BatchInput,
    BatchItemResult,
    RunnerFactory,
    RunOne,
    error_result,
)


class RayWorker:
    """The body of one actor: a runner opened on first use, shared by its calls."""

    def __init__(self, factory: RunnerFactory, name: str) -> None:
        self.factory = factory
        self.name = name
        self._cm: AbstractAsyncContextManager[RunOne] | None = None
        self._run_one: RunOne | None = None
        self._lock: asyncio.Lock | None = None

    async def _runner(self) -> RunOne:
        if self._run_one is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._run_one is None:
                    cm = self.factory.open()
                    self._run_one = await cm.__aenter__()
                    self._cm = cm
        return self._run_one

    async def ready(self) -> str:
        """Open the runner now, so startup costs and errors show before any input."""
        await self._runner()
        return self.name

    async def run(self, inp: BatchInput, attempt: int) -> BatchItemResult:
        try:
            result = await (await self._runner())(inp)
        except Exception as exc:
            return error_result(inp, exc, worker=self.name, attempts=attempt)
        result.worker = self.name
        result.attempts = attempt
        return result

    async def close(self) -> None:
        cm, self._cm, self._run_one = self._cm, None, None
        if cm is not None:
            await cm.__aexit__(None, None, None)


@dataclass(slots=True)
class _Slot:
    index: int
    generation: int
    handle: Any
    running: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"ray-{self.index}" + (f".{self.generation}" if self.generation else "")


class RayExecutor:
    """Args:
        factory: builds each actor's runner; must pickle.
        concurrency: the cap on inputs in flight over the whole cluster.
        workers: how many actors; None means one per CPU of the cluster.
        address: None starts a private local Ray instance (or uses the one this
            process already has); `auto` joins a running cluster; `ray://host:port`
            goes through Ray Client; `host:port` is a cluster's GCS address.
        num_cpus_per_worker: CPUs each actor reserves. The default, 0, lets any number
            of actors start on any cluster (runs are I/O-bound); they are spread over
            the nodes.
        max_attempts: how many workers may die under one input before it is an error.
        start_timeout: seconds to wait for every actor to open its runner.
    """

    name = "ray"

    def __init__(self, factory: RunnerFactory, *, concurrency: int = 16,
                 workers: int | None = None, address: str | None = None,
                 num_cpus_per_worker: float = 0.0, max_attempts: int = 3,
                 start_timeout: float = 120.0,
                 init_kwargs: dict[str, Any] | None = None) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.factory = factory
        self.concurrency = concurrency
        self.workers = workers
        self.address = address
        self.num_cpus_per_worker = num_cpus_per_worker
        self.max_attempts = max_attempts
        self.start_timeout = start_timeout
        self.init_kwargs = dict(init_kwargs or {})
        self.slots: list[_Slot] = []
        self._ray: Any = None
        self._actor_cls: Any = None
        self._per_worker = 1

    async def run(self, inputs: AsyncIterator[BatchInput],
                  started: Callable[[BatchInput], None] | None = None,
                  ) -> AsyncGenerator[BatchItemResult, None]:
        ray = self._ray = import_ray()
        owns = connect(ray, self.address, self.init_kwargs)
        try:
            n = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            self._per_worker = max(1, math.ceil(self.concurrency / n))
            self._actor_cls = ray.remote(RayWorker)
            self.slots = [self._new_slot(i, 0) for i in range(n)]
            await self._wait_ready()
            async with aclosing(self._dispatch(inputs, started)) as results:
                async for item in results:
                    yield item
        finally:
            await self._stop_actors()
            if owns:
                ray.shutdown()

    async def _wait_ready(self) -> None:
        try:
            await asyncio.wait_for(
                asyncio.gather(*(_await_ref(s.handle.ready.remote()) for s in self.slots)),
                self.start_timeout)
        except TimeoutError:
            raise ConfigError(f"{len(self.slots)} Ray worker(s) did not start within "
                              f"{self.start_timeout:g}s: does the cluster have room for "
                              f"them?") from None
        except Exception as exc:
            cause = getattr(exc, "cause", None) or exc
            raise ConfigError(f"a Ray worker could not start its runner: "
                              f"{type(cause).__name__}: {cause}") from None

    def _new_slot(self, index: int, generation: int) -> _Slot:
        slot = _Slot(index=index, generation=generation, handle=None)
        slot.handle = self._actor_cls.options(
            max_concurrency=self._per_worker, num_cpus=self.num_cpus_per_worker,
            scheduling_strategy="SPREAD",
        ).remote(self.factory, slot.name)
        return slot

    async def _dispatch(self, inputs: AsyncIterator[BatchInput],
                        started: Callable[[BatchInput], None] | None,
                        ) -> AsyncGenerator[BatchItemResult, None]:
        ray = self._ray
        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.ObjectLostError)
        again: deque[tuple[BatchInput, int]] = deque()
        pending: dict[asyncio.Future[Any], tuple[BatchInput, int, _Slot]] = {}
        yielded: set[str] = set()
        exhausted = False
        try:
            while True:
                while len(pending) < self.concurrency and (again or not exhausted):
                    if again:
                        inp, attempt = again.popleft()
                    else:
                        try:
                            inp = await anext(inputs)
                        except StopAsyncIteration:
                            exhausted = True
                            break
                        attempt = inp.attempt
                        if started is not None:
                            started(inp)
                    slot = min(self.slots, key=lambda s: len(s.running))
                    slot.running.add(inp.id)
                    ref = slot.handle.run.remote(inp, attempt)
                    pending[asyncio.ensure_future(_await_ref(ref))] = (inp, attempt, slot)
                if not pending:
                    return
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for fut in done:
                    inp, attempt, slot = pending.pop(fut)
                    slot.running.discard(inp.id)
                    exc = fut.exception()
                    if exc is None:
                        item: BatchItemResult = fut.result()
                    elif isinstance(exc, lost):
                        self._replace(slot)
                        if attempt < self.max_attempts:
                            again.append((inp, attempt + 1))
                            continue
                        item = BatchItemResult(
                            id=inp.id, status=ERROR, source=inp.source, attempts=attempt,
                            error=f"{attempt} Ray workers died while running this input; "
                                  f"giving up (last: {type(exc).__name__})")
                    else:
                        item = error_result(inp, exc, worker=slot.name, attempts=attempt)
                    if item.id in yielded:
                        continue
                    yielded.add(item.id)
                    yield item
        finally:
            for fut in pending:
                fut.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    def _replace(self, slot: _Slot) -> None:
        """Swap a dead actor for a new one, once per death (several inputs report it)."""
        current = self.slots[slot.index]
        if current is not slot:
            return
        try:
            self._ray.kill(slot.handle, no_restart=True)
        except Exception:
            pass
        fresh = self._new_slot(slot.index, slot.generation + 1)
        self.slots[slot.index] = fresh

    async def _stop_actors(self) -> None:
        ray = self._ray
        closing = [asyncio.ensure_future(_await_ref(s.handle.close.remote()))
                   for s in self.slots]
        if closing:
            await asyncio.wait(closing, timeout=5)
            for fut in closing:
                if not fut.done():
                    fut.cancel()
                elif not fut.cancelled():
                    fut.exception()  # a dead actor's close fails; that is fine
        for slot in self.slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:
                pass
        self.slots = []


async def _await_ref(ref: Any) -> Any:
    return await ref


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "the Ray executor needs Ray: pip install 'agentloom-engine[ray]'") from None
    return ray


def connect(ray: Any, address: str | None, init_kwargs: dict[str, Any]) -> bool:
    """Make sure this process is connected; True when we started it (and must shut it
    down). Unreachable addresses become a ConfigError that names the address."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "logging_level": "ERROR", **init_kwargs}
    if address is None or address == "local":
        kwargs["address"] = "local"
    else:
        check_reachable(address)
        kwargs["address"] = address
        kwargs.pop("include_dashboard", None)
        kwargs.pop("num_cpus", None)
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError, OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot connect to the Ray cluster at {address or 'local'}: "
                          f"{' '.join(str(exc).split()) or type(exc).__name__}") from None
    return True


def check_reachable(address: str, *, timeout: float = 3.0) -> None:
    """Fail fast, with the address in the message, when nothing listens there; Ray's own
    connection attempts can retry for a long time before giving up."""
    if address == "auto":
        return
    target = address if "://" in address else f"gcs://{address}"
    parts = urlsplit(target)
    if not parts.hostname or parts.port is None:
        raise ConfigError(f"Ray address {address!r}: expected auto, host:port or "
                          f"ray://host:port")
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=timeout):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: "
                          f"{exc.strerror or exc}") from None
