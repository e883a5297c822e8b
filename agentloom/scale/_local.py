"""The local executor: many runs at once in this process, on one shared runner.

One `RunnerFactory.open()` serves the whole batch, so every run shares one runtime (HTTP
session, rate limiters, circuit breakers) and a batch of 10,000 still respects a
provider's limits. At most `concurrency` runs are in flight; new inputs are pulled only
as runs finish, so memory stays flat however long the input is. Results come out in
finishing order. Closing the iterator (or cancelling its consumer) cancels the runs in
flight and waits for them, so nothing keeps running behind the caller's back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from agentloom.errors import ConfigError
from agentloom.scale._types import BatchInput, BatchItemResult, RunnerFactory, RunOne, error_result

WORKER = "local"


class LocalExecutor:
    name = "local"

    def __init__(self, factory: RunnerFactory, *, concurrency: int = 16) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        self.factory = factory
        self.concurrency = concurrency

    async def run(self, inputs: AsyncIterator[BatchInput],
                  started: Callable[[BatchInput], None] | None = None,
                  ) -> AsyncGenerator[BatchItemResult, None]:
        async with self.factory.open() as run_one:
            pending: set[asyncio.Task[BatchItemResult]] = set()
            exhausted = False
            try:
                while True:
                    while not exhausted and len(pending) < self.concurrency:
                        try:
                            inp = await anext(inputs)
                        except StopAsyncIteration:
                            exhausted = True
                            break
                        if started is not None:
                            started(inp)
                        pending.add(asyncio.create_task(_guarded(run_one, inp)))
                    if not pending:
                        return
                    done, pending = await asyncio.wait(pending,
                                                       return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        yield task.result()
            finally:
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.gather(*pending, return_exceptions=True)


async def _guarded(run_one: RunOne, inp: BatchInput) -> BatchItemResult:
    try:
        result = await run_one(inp)
    except Exception as exc:  # a runner's bug fails its input, not the whole batch
        return error_result(inp, exc, worker=WORKER)
    if result.worker is None:
        result.worker = WORKER
    return result
