"""`batch()`: read the inputs, skip what an earlier attempt finished, run the rest on an
executor, write each result once, and keep the totals.

This is the single writer of the output file: executors only yield results, and a result
whose id was already written is dropped, which is what makes "each input done exactly
once" hold even when Ray re-runs an input whose worker died. With a store, a run another
live worker holds comes back `deferred`: it is asked for again, waiting, once the other
inputs are done, and ends as that worker's stored result or resumed here when its lease
lapses. Inputs are read lazily in a worker thread, a chunk at a time, so a batch of a
million lines starts at once and the event loop never blocks on the disk.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Protocol

from agentloom.errors import ConfigError
from agentloom.scale._durable import derive_batch_id
from agentloom.scale._inputs import InputProblem, InputRecord, count_inputs, read_inputs
from agentloom.scale._local import LocalExecutor
from agentloom.scale._output import ResultWriter
from agentloom.scale._progress import BatchProgress, NullProgress
from agentloom.scale._resume import ResumeState, read_finished
from agentloom.scale._summary import BatchStats
from agentloom.scale._types import (
    DEFERRED,
    ERROR,
    INVALID_INPUT,
    BatchInput,
    BatchItemResult,
    RunnerFactory,
)
from agentloom.scale._workflow_adapter import WorkflowRunnerFactory

_CHUNK = 256


class Executor(Protocol):
    name: str

    def run(self, inputs: AsyncIterator[BatchInput],
            started: Any = None) -> AsyncGenerator[BatchItemResult, None]: ...


class Batch:
    """An async iterator of results in finishing order; `stats` holds the totals.

        b = batch("flow.yaml", "inputs.jsonl", output="out.jsonl", env=os.environ)
        async for result in b:
            ...
        print(b.stats.succeeded, b.stats.failures)
    """

    def __init__(self, *, inputs: str | os.PathLike[str], executor: Executor,
                 output: str | os.PathLike[str] | None, resume: bool, retry_failed: bool,
                 overwrite: bool, progress: BatchProgress | None,
                 durable: bool = False) -> None:
        self.inputs = inputs
        self.executor = executor
        self.output = None if output is None else Path(output)
        self.resume = resume
        self.retry_failed = retry_failed
        self.overwrite = overwrite
        self.progress: BatchProgress = progress or NullProgress()
        self.stats = BatchStats(executor=executor.name,
                                output=None if output is None else str(output))
        self._iterating = False
        self.durable = durable
        """Runs live in a shared store: results may come back deferred or reused."""
        self._inputs_seen: dict[str, BatchInput] = {}

    def __aiter__(self) -> AsyncGenerator[BatchItemResult, None]:
        if self._iterating:
            raise RuntimeError("a Batch can be iterated once")
        self._iterating = True
        return self._run()

    async def results(self) -> list[BatchItemResult]:
        """Run the whole batch; every result, in finishing order."""
        return [item async for item in self]

    async def _run(self) -> AsyncGenerator[BatchItemResult, None]:
        prior = await self._prior()
        self.stats.total = await asyncio.to_thread(count_inputs, self.inputs)
        self.stats.skipped = len(prior.finished)
        writer = None
        if self.output is not None:
            append = self.resume or not self.overwrite
            writer = await ResultWriter(self.output, append=append).open()
        written: set[str] = set()
        problems: list[InputProblem] = []
        self.progress.start(self.stats)
        try:
            deferred: list[BatchInput] = []
            stream = self._pending_inputs(prior, problems)
            async for item in self._drive(stream, problems, written, writer, deferred):
                yield item
            await stream.aclose()
            for bad in self._take(problems, written, writer):
                yield bad
            # Inputs another live worker held: ask again, now waiting for each to finish
            # (its stored result) or for its lease to lapse (then resumed here).
            while deferred:
                again = [replace(inp, wait=True) for inp in deferred]
                deferred = []
                async for item in self._drive(_aiter(again), problems, written, writer,
                                              deferred):
                    yield item
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            self.stats.interrupted = True
            raise
        except Exception as exc:
            self.stats.error = str(exc) or type(exc).__name__
            raise
        finally:
            self.stats.finish()
            if writer is not None:
                await writer.aclose()
            self.stats.running = 0
            self.progress.finish(self.stats)

    async def _drive(self, stream: AsyncIterator[BatchInput], problems: list[InputProblem],
                     written: set[str], writer: ResultWriter | None,
                     deferred: list[BatchInput]) -> AsyncGenerator[BatchItemResult, None]:
        # aclosing: a consumer that stops early must stop the runs in flight now,
        # not whenever the executor's generator is garbage-collected.
        async with aclosing(self.executor.run(stream, self._started)) as results:
            async for item in results:
                for bad in self._take(problems, written, writer):
                    yield bad
                if item.status == DEFERRED:
                    inp = self._inputs_seen.get(item.id)
                    if inp is not None:
                        self.stats.running = max(0, self.stats.running - 1)
                        self.stats.deferred += 1
                        deferred.append(replace(inp, attempt=max(inp.attempt, item.attempts)))
                        continue
                    item.status, item.error = ERROR, "deferred by a runner outside a store"
                if item.id in written:
                    continue
                yield self._record(item, written, writer)

    async def _prior(self) -> ResumeState:
        if self.output is None:
            if self.resume:
                raise ConfigError("resume needs an output file to read finished runs from")
            return ResumeState()
        exists = await asyncio.to_thread(self.output.exists)
        if exists and not self.resume and not self.overwrite:
            raise ConfigError(f"{self.output} already exists: resume it (--resume) or "
                              f"start over (--overwrite)")
        if not self.resume:
            return ResumeState()
        # With a store, a paused line is looked up again: it may have been resumed since.
        recheck = frozenset({"paused", "needs_decision"}) if self.durable else frozenset()
        return await asyncio.to_thread(read_finished, self.output,
                                       retry_failed=self.retry_failed, recheck=recheck)

    def _started(self, inp: BatchInput) -> None:
        if self.durable:
            self._inputs_seen[inp.id] = inp  # to hand a deferred input out again
        self.stats.started()

    def _record(self, item: BatchItemResult, written: set[str],
                writer: ResultWriter | None) -> BatchItemResult:
        written.add(item.id)
        self._inputs_seen.pop(item.id, None)
        if writer is not None:
            writer.write(item)
        self.stats.add(item)
        self.progress.result(item, self.stats)
        return item

    def _take(self, problems: list[InputProblem], written: set[str],
              writer: ResultWriter | None) -> Iterator[BatchItemResult]:
        while problems:
            p = problems.pop(0)
            yield self._record(BatchItemResult(id=p.id, status=INVALID_INPUT, source=p.source,
                                               error=p.reason, attempts=0), written, writer)

    async def _pending_inputs(self, prior: ResumeState,
                              problems: list[InputProblem]) -> AsyncGenerator[BatchInput, None]:
        records = read_inputs(self.inputs)
        skipped = 0
        while True:
            chunk = await asyncio.to_thread(_next_chunk, records)
            if not chunk:
                self.stats.skipped = skipped  # the exact count: ids no longer in the inputs
                return
            for record in chunk:
                if isinstance(record, InputProblem):
                    problems.append(record)
                elif record.id in prior.finished:
                    skipped += 1
                else:
                    yield record


async def _aiter(items: list[BatchInput]) -> AsyncGenerator[BatchInput, None]:
    for item in items:
        yield item


def _next_chunk(records: Iterator[InputRecord]) -> list[InputRecord]:
    out: list[InputRecord] = []
    for record in records:
        out.append(record)
        if len(out) >= _CHUNK:
            break
    return out


def batch(
    workflow: str | os.PathLike[str] | None,
    inputs: str | os.PathLike[str],
    *,
    executor: Literal["local", "ray"] | Executor = "local",
    concurrency: int = 16,
    workers: int | None = None,
    address: str | None = None,
    output: str | os.PathLike[str] | None = None,
    resume: bool = False,
    retry_failed: bool = False,
    overwrite: bool = False,
    state: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    runner_factory: RunnerFactory | None = None,
    progress: BatchProgress | None = None,
    store: str | os.PathLike[str] | None = None,
    batch_id: str | None = None,
    lease_seconds: float = 60.0,
) -> Batch:
    """Run `workflow` once per input of `inputs` (a .jsonl or .csv file, or a folder).

    Args:
        workflow: the workflow file (ignored when `runner_factory` is given).
        executor: `local` (one process, one shared runtime), `ray`, or an executor object.
        concurrency: runs in flight at once (over the whole cluster for Ray).
        workers: Ray actors (default: one per cluster CPU).
        address: where the Ray cluster is (see `RayExecutor`).
        output: the JSONL file results are appended to as they finish.
        resume: skip inputs the output file already has finished; `retry_failed` also
            runs its failures again.
        overwrite: start the output file over when it exists (else a ConfigError).
        state: under each input's state; the input's keys win.
        env: the environment the runtime is built from (`Runtime.from_env`); the
            library never reads `os.environ` by itself.
        overrides: workflow config overrides (model, provider, timeout).
        store: a checkpoint store (a SQLite path, sqlite:///..., postgresql://...): each
            run is a durable run there, `resume` also skips what the store has finished
            and resumes interrupted runs from their last checkpoint, and several
            processes (or Ray actors) sharing a PostgreSQL store never run an input twice.
        batch_id: the runs' ids are `<batch_id>.<input id>`; default: derived from the
            output (else inputs) path and the workflow's hash.
        lease_seconds: how long a claim on a run lasts unless renewed; a killed worker's
            runs are taken over by another after it.

    Returns:
        A `Batch`: iterate it (`async for`) to run it.
    """
    if runner_factory is None and isinstance(executor, str):
        if workflow is None:
            raise ConfigError("batch() needs a workflow file or a runner_factory")

        runner_factory = WorkflowRunnerFactory.from_file(workflow, env=env, state=state,
                                                         overrides=overrides)
    if store is not None and isinstance(executor, str):
        # An executor object brings its own factory, set up with the store by the caller.
        runner_factory = _with_store(runner_factory, str(store), batch_id, lease_seconds,
                                     output if output is not None else inputs,
                                     retry_failed=retry_failed)
    ex: Executor
    if executor == "local":
        assert runner_factory is not None

        ex = LocalExecutor(runner_factory, concurrency=concurrency)
    elif executor == "ray":
        assert runner_factory is not None
        from agentloom.scale._ray import RayExecutor

        ex = RayExecutor(runner_factory, concurrency=concurrency, workers=workers,
                         address=address)
    elif isinstance(executor, str):
        raise ConfigError(f"unknown executor {executor!r}: expected 'local' or 'ray'")
    else:
        ex = executor
    return Batch(inputs=inputs, executor=ex, output=output, resume=resume,
                 retry_failed=retry_failed, overwrite=overwrite, progress=progress,
                 durable=store is not None)


def _with_store(factory: RunnerFactory | None, store: str, batch_id: str | None,
                lease_seconds: float, anchor: str | os.PathLike[str], *,
                retry_failed: bool) -> RunnerFactory:
    if not isinstance(factory, WorkflowRunnerFactory):
        raise ConfigError("store= needs a workflow (or a WorkflowRunnerFactory); a custom "
                          "runner_factory keeps its own state")
    if lease_seconds <= 0:
        raise ConfigError(f"lease_seconds must be positive, got {lease_seconds}")
    return replace(factory, store=store, lease_seconds=lease_seconds, retry_failed=retry_failed,
                   batch_id=batch_id or derive_batch_id(anchor, factory.workflow_hash))
