"""The engine: a ready-queue scheduler over the step graph.

A step starts as soon as its own dependencies have finished, up to
`config.max_concurrent_steps` at once; there is no layer barrier. Every started step is a
task of the run's task group, so nothing outlives the run. `config.timeout` is one
deadline around the whole group: when it passes, work in flight is cancelled and the run
ends `deadline_exceeded`. Each attempt of a step has its own `timeout`. Both deadlines
are the agent loop's `Deadline` on the run's injectable clock, and retries wait through
that clock too. A failed step's dependents are skipped with the reason;
a router's branches not taken are skipped, and so is what depends only on them.

Each step runs as `step_task.step_task` (its attempts, retries and outcome), which
hands the finished step back here (`finished`, or `complete` for a durable run); the
spending caps are read through `spending.py`, and the run's final status and outputs
are settled by `run_end.py`. The engine runs steps through the workflow's `StepLibrary`
and never imports a step module; a durable run plugs in through
`engine.hooks.DurableHooks`. Nested runs (subworkflows, map items, on_error blocks,
function bodies) come back here through `RunContext.run_child`, implemented by
`start.Engine`; `start.py` also holds the entry points (`arun_workflow`, `run_workflow`).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections import deque
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom.errors import LoopBudgetExceeded, WorkflowError
from agentloom.providers.model_names import same_model as same_model  # tests import it here
from agentloom.workflow.engine.awaiting import InContext, deadline_passed, step_deadline
from agentloom.workflow.engine.context import RunContext
from agentloom.workflow.engine.pause import PauseRun
from agentloom.workflow.engine.result import RunResult, RunStatus, StepResult, StepStatus
from agentloom.workflow.engine.run_end import (
    cancel_running,
    end_status,
    final_outputs,
    summarize_run,
)
from agentloom.workflow.engine.run_setup import (
    StepCount,
    configure_runtime,
    needs_configure,
    run_budget,
)
from agentloom.workflow.engine.secrets import mark_secret_steps, run_redactor
from agentloom.workflow.engine.spending import refused
from agentloom.workflow.engine.step_task import step_task

if TYPE_CHECKING:
    from agentloom.workflow.engine.hooks import DurableHooks
    from agentloom.workflow.load.workflow import StepLibrary, StepNode, Workflow

_NOTHING_SPENT = Decimal(0)
_DONE = (StepStatus.SUCCESS, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.CANCELLED)


def _library(workflow: Workflow) -> StepLibrary:
    if workflow.library is None:
        raise WorkflowError(f"workflow {workflow.name!r} was not loaded with a step library "
                            "(load it with agentloom.workflow.load_workflow)")
    return workflow.library


class _Run:
    __slots__ = ("base", "config", "ctx", "done_lock", "durable", "earlier_loops", "error",
                 "failed_upstream", "handled", "idle", "library", "not_taken", "paused",
                 "paused_nodes", "ready", "restorable", "restored", "results", "rng", "running",
                 "spent", "status", "tg", "waiting", "wf")

    def __init__(self, ctx: RunContext, rng: random.Random,
                 durable: DurableHooks | None = None) -> None:
        self.ctx = ctx
        self.rng = rng
        self.wf = ctx.workflow
        self.config = self.wf.config
        self.library = _library(self.wf)
        self.results = {n: StepResult(id=n, type=node.type) for n, node in self.wf.nodes.items()}
        self.waiting = {n: len(node.deps) for n, node in self.wf.nodes.items()}
        self.not_taken: dict[str, str] = {}
        self.failed_upstream: set[str] = set()
        self.handled: set[str] = set()
        """Failed steps whose on_error block handled the failure: their dependents run."""
        self.ready: deque[str] = deque(n for n, c in self.waiting.items() if c == 0)
        self.done_lock: asyncio.Lock | None = None
        """A durable run's: one finished step is checkpointed at a time (`complete`)."""
        self.restored: list[str] = []
        """Steps restored from the checkpoint resumed, for `complete` to finish."""
        self.restorable: dict[str, StepResult] = {}
        """A resumed run's steps that finished before it stopped, until each is restored."""
        self.idle: asyncio.Future[None] | None = None
        self.tg: asyncio.TaskGroup | None = None
        self.base: contextvars.Context | None = None
        self.running = 0
        self.spent = _NOTHING_SPENT
        self.status = RunStatus.SUCCESS
        self.error: str | None = None
        self.durable = durable
        self.paused: PauseRun | None = None
        self.paused_nodes: set[str] = set()
        self.earlier_loops: dict[str, int] = {}
        """Step id -> how many of its loops ran before its current attempt."""

    @property
    def workflow(self) -> Workflow:
        return self.wf

    @property
    def state(self) -> dict[str, Any]:
        return self.ctx.state

    async def run(self) -> RunResult:
        clock = self.ctx.clock
        t0 = clock.now()
        if self.ctx.budget is None:  # a workflow function's run shares its caller's
            self.ctx.budget = run_budget(self.config)
        if self.ctx.steps is None:  # the top-level run's count; nested runs share it
            self.ctx.steps = StepCount(self.config.max_steps)
        redactor = self.ctx.redactor = run_redactor(self.ctx)
        if redactor is not None:
            mark_secret_steps(redactor, self.wf)
        if needs_configure(self.wf):
            await configure_runtime(self.ctx.clients, self.wf)
        if self.durable is not None:
            await self.durable.begin(self, self.wf.name)
            self._count_restorable(self.durable)
        try:
            if self.config.timeout is None:
                if self.durable is None and len(self.wf.nodes) == 1:
                    await self._run_single()  # one frame less on every resume
                else:
                    await self._schedule()
            else:
                deadline = step_deadline(clock, self.config.timeout)
                try:
                    async with deadline.scope():
                        await self._schedule()
                except LoopBudgetExceeded as exc:
                    if not deadline_passed(exc, deadline):
                        raise
                    raise TimeoutError from None
        except TimeoutError:
            self.status = RunStatus.DEADLINE_EXCEEDED
            self.error = f"run deadline of {self.config.timeout}s exceeded"
            cancel_running(self.results, self.error)
        if self.paused is not None:
            self._wait_all()  # nothing was skipped: the rest runs when the run is resumed
        else:
            self._stop_all(self.error or "run ended")
        self.status, self.error = end_status(self.ctx, self.results, self.handled,
                                             self.status, self.error)
        result = RunResult(
            workflow=self.wf.name, run_id=self.ctx.run_id, status=self.status,
            steps=self.results, state=self.ctx.state, duration_seconds=clock.now() - t0,
            error=self.error, final_outputs=final_outputs(self.wf, self.results),
            pause=self.paused,
        )
        summarize_run(self.ctx, result)
        if self.durable is not None:
            await self.durable.finish(result, self.paused)
        return result

    async def _schedule(self) -> None:
        if self.durable is None and len(self.wf.nodes) == 1:
            await self._run_single()
            return
        async with asyncio.TaskGroup() as tg:
            self.tg = tg
            # Each step task starts from this task's context, as if it had made them.
            self.base = contextvars.copy_context()
            if self.durable is None:
                await self._schedule_inline()
            else:
                await self._schedule_durable()

    async def _run_single(self) -> None:
        # A one-step run has nothing to schedule: its step runs in this task, still in a
        # context of its own, which saves a task, a group and two event-loop iterations.
        node_id = self.ready.popleft()
        if self._over_budget():
            self._stop_all("run budget exceeded")
            return
        self.running = 1
        self.results[node_id].status = StepStatus.RUNNING
        try:
            await InContext(step_task(self, self.wf.nodes[node_id]),
                             contextvars.copy_context())
        except Exception as exc:  # as the task group would have reported it
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None

    async def _schedule_inline(self) -> None:
        # A finishing step releases and starts its dependents itself (`finished`), so
        # a step costs no round trip through this task; it waits until nothing runs.
        self.idle = asyncio.get_running_loop().create_future()
        self._launch()
        if self.running:
            await self.idle

    async def _schedule_durable(self) -> None:
        # Each finished step is checkpointed before its dependents start (write-ahead),
        # one at a time, by the step's own task (`complete`): no trip through this
        # task, which waits until nothing runs.
        self.done_lock = asyncio.Lock()
        self.idle = asyncio.get_running_loop().create_future()
        await self.complete(None)
        if self.running:
            await self.idle

    async def complete(self, finished: str | None) -> None:
        """Checkpoint `finished` (and the steps restored meanwhile), then start what they
        released; under `done_lock`, so steps are written one at a time, in the order
        they finished, and no dependent starts before its step's write is stored."""
        assert self.done_lock is not None and self.durable is not None
        async with self.done_lock:
            todo = [finished] if finished is not None else []
            while True:
                for node_id in todo:
                    self.running -= 1
                    if node_id in self.paused_nodes:
                        continue  # a paused step has not finished: nothing after it runs
                    self._after(node_id)
                    await self.durable.step_done(node_id)
                self._launch()
                if not self.restored:
                    break
                todo, self.restored = self.restored, []
        if not self.running and self.idle is not None and not self.idle.done():
            self.idle.set_result(None)  # nothing in flight and nothing may start

    def _launch(self) -> None:
        """Start ready steps, up to the concurrency limit, while the run may go on."""
        if not self.ready:
            return
        limit = self.config.max_concurrent_steps
        tg, base, nodes = self.tg, self.base, self.wf.nodes
        assert tg is not None and base is not None
        while self.ready and self.running < limit and self.status is RunStatus.SUCCESS:
            node_id = self.ready.popleft()
            if self._restore(node_id):
                continue
            if self._over_budget():
                self._stop_all("run budget exceeded")
                break
            step = step_task(self, nodes[node_id])
            try:
                tg.create_task(step, context=base.copy())
            except RuntimeError:  # the group is shutting down: nothing more starts
                step.close()
                self.ready.appendleft(node_id)
                return
            self.running += 1
            self.results[node_id].status = StepStatus.RUNNING

    def finished(self, node_id: str) -> None:
        self.running -= 1
        if node_id not in self.paused_nodes:  # a paused step has not finished
            self._after(node_id)
        self._launch()
        if not self.running and self.idle is not None and not self.idle.done():
            self.idle.set_result(None)  # nothing in flight and nothing may start

    # -- scheduling ---------------------------------------------------------------------

    def _after(self, finished: str) -> None:
        """Release the dependents of a finished step; skip those that can't run."""
        todo = [finished]
        nodes, results = self.wf.nodes, self.results
        skip_downstream = self.config.on_step_failure == "skip_downstream"
        while todo:
            node_id = todo.pop()
            for dep_id in nodes[node_id].dependents:
                self.waiting[dep_id] -= 1
                if self.waiting[dep_id]:
                    continue
                skip = self._skip_reason(nodes[dep_id], skip_downstream)
                if skip is None:
                    self.ready.append(dep_id)
                else:
                    r = results[dep_id]
                    r.status, r.reason = StepStatus.SKIPPED, skip[0]
                    if skip[1]:
                        self.failed_upstream.add(dep_id)
                    todo.append(dep_id)

    def _skip_reason(self, node: StepNode, skip_downstream: bool) -> tuple[str, bool] | None:
        """(why, whether because of a failure), or None when the step may run."""
        if node.id in self.not_taken:
            return f"skipped: branch not taken by router {self.not_taken[node.id]!r}", False
        results, deps = self.results, node.deps
        if skip_downstream:
            for d in deps:
                if results[d].status is StepStatus.FAILED and d not in self.handled:
                    return f"skipped: dependency {d!r} failed", True
                if d in self.failed_upstream:
                    return f"skipped: dependency {d!r} was skipped after a failure", True
        for d in deps:
            if results[d].status is not StepStatus.SKIPPED:
                return None
        return ("skipped: every dependency was skipped", False) if deps else None

    def _over_budget(self) -> bool:
        refusal = refused(self.ctx)
        if refusal is not None:
            self.status, self.error = RunStatus.BUDGET_EXCEEDED, str(refusal)
            return True
        budget = self.config.budget_usd
        if budget is None or self.spent < Decimal(str(budget)):
            return False
        self.status = RunStatus.BUDGET_EXCEEDED
        self.error = f"budget_usd={budget} reached (spent ${self.spent})"
        return True

    def _count_restorable(self, durable: DurableHooks) -> None:
        """Find the steps that finished before a resume, and count what they spent
        against the run's caps before any step starts: a resumed run may spend what is
        left of its budget, not the whole budget again."""
        budget = self.ctx.budget
        for node_id in self.wf.nodes:
            restored = durable.restored_step(node_id)
            if restored is None:
                continue
            self.restorable[node_id] = restored
            usage = restored.usage
            if usage is None:
                continue
            if usage.cost_usd is not None:
                self.spent += usage.cost_usd
            if budget is not None:
                budget.charge(cost=usage.cost_usd, tokens=usage.total_tokens)

    def _restore(self, node_id: str) -> bool:
        """A step that finished before a resume: its result is reused, it doesn't run."""
        restored = self.restorable.pop(node_id, None)
        if restored is None:
            return False
        self.results[node_id] = restored
        if restored.text is not None:
            self.ctx.step_text[node_id] = restored.text
        self.running += 1
        self.restored.append(node_id)  # finished by `complete`, as if it had run
        return True

    def _wait_all(self) -> None:
        for r in self.results.values():
            if r.status is StepStatus.PENDING:
                r.reason = "waiting: the run is paused"
        self.ready.clear()

    def _stop_all(self, why: str) -> None:
        for r in self.results.values():
            if r.status in (StepStatus.PENDING, StepStatus.RUNNING) and r.started_at is None:
                r.status, r.reason = StepStatus.SKIPPED, f"skipped: {why}"
        self.ready.clear()
