"""The engine: a ready-queue scheduler over the step graph.

A step starts as soon as its own dependencies have finished, up to
`config.max_concurrent_steps` at once; there is no layer barrier. Every started step is a
task of the run's task group, so nothing outlives the run. `config.timeout` is one
deadline around the whole group: when it passes, work in flight is cancelled and the run
ends `deadline_exceeded`. Each attempt of a step has its own `timeout`. Both deadlines
are the agent loop's `Deadline` on the run's injectable clock, and retries wait through
that clock too. A failed step's dependents are skipped with the reason;
a router's branches not taken are skipped, and so is what depends only on them.

The engine runs steps through the workflow's `StepLibrary` and never imports a step
module; a durable run plugs in through `engine.hooks.DurableHooks`. Nested runs
(subworkflows, map items, on_error blocks, function bodies) come back here through
`RunContext.run_child`, implemented by `start.Engine`; `start.py` also holds the
entry points (`arun_workflow`, `run_workflow`).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections import deque
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom.errors import BudgetExceeded, DeadlineExceeded, LoopBudgetExceeded, WorkflowError
from agentloom.providers.model_names import same_model
from agentloom.workflow.engine.awaiting import InContext, deadline_passed, step_deadline
from agentloom.workflow.engine.context import (
    RunContext,
)
from agentloom.workflow.engine.on_error import run_handler
from agentloom.workflow.engine.pause import PauseRun
from agentloom.workflow.engine.result import (
    RunResult,
    RunStatus,
    StepOutcome,
    StepResult,
    StepStatus,
)
from agentloom.workflow.engine.retry import step_policy
from agentloom.workflow.engine.run_setup import (
    StepCount,
    configure_runtime,
    needs_configure,
    run_budget,
)
from agentloom.workflow.engine.secrets import (
    learn_outcome,
    mark_secret_steps,
    run_redactor,
    secret_step_redactor,
)
from agentloom.workflow.engine.summaries import loops_usage, step_summary, with_earlier
from agentloom.workflow.lang.paths import assign
from agentloom.workflow.lang.templates import to_text

if TYPE_CHECKING:
    from agentloom.routing import RetryPolicy
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
        """A durable run's: one finished step is checkpointed at a time (`_complete`)."""
        self.restored: list[str] = []
        """Steps restored from the checkpoint resumed, for `_complete` to finish."""
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
            for r in self.results.values():
                if r.status is StepStatus.RUNNING:
                    r.status = StepStatus.CANCELLED
                    r.reason = "cancelled: run deadline exceeded"
                    r.error, r.error_type = self.error, "DeadlineExceeded"
        if self.paused is not None:
            self._wait_all()  # nothing was skipped: the rest runs when the run is resumed
        else:
            self._stop_all(self.error or "run ended")
        failed = [r for r in self.results.values()
                  if r.status is StepStatus.FAILED and r.id not in self.handled]
        if self.status is RunStatus.SUCCESS and failed:
            self.status = RunStatus.FAILED
            self.error = f"step {failed[0].id!r} failed: {failed[0].error}"
        refused = self._refused()
        if refused is not None and self.status in (RunStatus.SUCCESS, RunStatus.FAILED):
            self.status, self.error = RunStatus.BUDGET_EXCEEDED, str(refused)
        result = RunResult(
            workflow=self.wf.name, run_id=self.ctx.run_id, status=self.status,
            steps=self.results, state=self.ctx.state, duration_seconds=clock.now() - t0,
            error=self.error, final_outputs=self._final_outputs(), pause=self.paused,
        )
        self._summarize_run(result)
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
            await InContext(self._step_task(self.wf.nodes[node_id]),
                             contextvars.copy_context())
        except Exception as exc:  # as the task group would have reported it
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None

    async def _schedule_inline(self) -> None:
        # A finishing step releases and starts its dependents itself (`_finished`), so
        # a step costs no round trip through this task; it waits until nothing runs.
        self.idle = asyncio.get_running_loop().create_future()
        self._launch()
        if self.running:
            await self.idle

    async def _schedule_durable(self) -> None:
        # Each finished step is checkpointed before its dependents start (write-ahead),
        # one at a time, by the step's own task (`_complete`): no trip through this
        # task, which waits until nothing runs.
        self.done_lock = asyncio.Lock()
        self.idle = asyncio.get_running_loop().create_future()
        await self._complete(None)
        if self.running:
            await self.idle

    async def _complete(self, finished: str | None) -> None:
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
            step = self._step_task(nodes[node_id])
            try:
                tg.create_task(step, context=base.copy())
            except RuntimeError:  # the group is shutting down: nothing more starts
                step.close()
                self.ready.appendleft(node_id)
                return
            self.running += 1
            self.results[node_id].status = StepStatus.RUNNING

    def _finished(self, node_id: str) -> None:
        self.running -= 1
        if node_id not in self.paused_nodes:  # a paused step has not finished
            self._after(node_id)
        self._launch()
        if not self.running and self.idle is not None and not self.idle.done():
            self.idle.set_result(None)  # nothing in flight and nothing may start

    # -- one step ---------------------------------------------------------------------------

    async def _step_task(self, node: StepNode) -> None:
        result = self.results[node.id]
        clock = self.ctx.clock
        result.started_at = start = clock.now()
        try:
            self.ctx.steps.take(node.id)
            outcome = await self._attempts(node, result)
            self._commit(node, result, outcome)
        except asyncio.CancelledError:
            result.duration_seconds = clock.now() - start
            self._summarize_step(node, result)
            raise
        except PauseRun as exc:
            self._pause(node, result, exc)
        except Exception as exc:  # a step's failure is its result, never the run's crash
            result.status = StepStatus.FAILED
            result.error = str(exc) or type(exc).__name__
            result.error_type = type(exc).__name__
            usage = getattr(exc, "usage", None)
            if usage is not None:
                result.usage = with_earlier(usage, loops_usage(
                    self.ctx, node.id, self.earlier_loops.get(node.id)))
            elif node.id in self.ctx.summaries:
                result.usage = loops_usage(self.ctx, node.id)  # every attempt's calls
            if isinstance(exc, BudgetExceeded) and self.status is RunStatus.SUCCESS:
                # The run's cap would be crossed: nothing else starts (spec 004).
                self.status, self.error = RunStatus.BUDGET_EXCEEDED, str(exc)
            if node.handler is not None:
                try:
                    if await run_handler(node, self.ctx, result):
                        self.handled.add(node.id)
                except PauseRun as pause:  # a gate in the on_error block: the step waits
                    self._pause(node, result, pause)
        result.duration_seconds = clock.now() - start
        self._summarize_step(node, result)
        if self.durable is not None and self.done_lock is not None:
            await self._complete(node.id)
        else:
            self._finished(node.id)

    async def _attempts(self, node: StepNode, result: StepResult) -> StepOutcome:
        execute = self.library.execute
        policy = self._policy(node)
        timeout = node.step.timeout
        while True:
            result.attempts += 1
            # The loops before this attempt's: their usage counts in the step's total.
            self.earlier_loops[node.id] = len(self.ctx.summaries.get(node.id) or ())
            try:
                outcome: StepOutcome
                if timeout is None:
                    outcome = await execute(node, self.ctx)
                    return outcome
                deadline = step_deadline(self.ctx.clock, timeout)
                try:
                    async with deadline.scope():
                        outcome = await execute(node, self.ctx)
                        return outcome
                except LoopBudgetExceeded as exc:
                    if not deadline_passed(exc, deadline):
                        raise
                    raise DeadlineExceeded(
                        f"step {node.id!r} attempt {result.attempts} took over {timeout}s",
                        scope="step") from None
            except Exception as exc:
                if not policy.should_retry(exc, result.attempts):
                    raise
                await self.ctx.clock.sleep(policy.delay(result.attempts, exc, self.rng))

    def _summarize_step(self, node: StepNode, result: StepResult) -> None:
        result.summary = step_summary(self.ctx, node.id)
        primary = self.ctx.primaries.get(node.id)
        if primary is not None and result.provider is not None:
            result.fallback_used = result.provider != primary[0] or not same_model(
                result.model or "", primary[1])

    def _summarize_run(self, result: RunResult) -> None:
        snapshot = getattr(self.ctx.clients, "breaker_snapshot", None)
        result.breakers = snapshot() if callable(snapshot) else None
        budget = self.ctx.budget
        result.budget = None if budget is None else budget.snapshot()

    def _commit(self, node: StepNode, result: StepResult, out: StepOutcome) -> None:
        # The state write goes first: if the output path can't be written, the step
        # fails and nothing of it is visible.
        redactor = secret_step_redactor(node.id, self.ctx)
        if redactor is not None:  # before any checkpoint or report holds the output
            learn_outcome(redactor, out.value, out.text, out.reasoning_content)
        if node.output_path is not None:
            assign(self.ctx.state, node.output_path, out.value)
        result.status = StepStatus.SUCCESS
        result.output = out.value
        result.text = out.text if out.text is not None else (
            None if out.value is None else to_text(out.value))
        earlier = (loops_usage(self.ctx, node.id, self.earlier_loops[node.id])
                   if self.earlier_loops.get(node.id) else None)
        result.usage = with_earlier(out.usage, earlier)
        result.model, result.provider = out.model, out.provider
        result.finish_reason = out.finish_reason
        result.time_to_first_token = out.time_to_first_token
        result.reasoning_content = out.reasoning_content
        result.iterations = out.iterations
        result.structured_output = out.structured_output
        if result.text is not None:
            self.ctx.step_text[node.id] = result.text
        for target in out.not_taken:
            self.not_taken[target] = node.id
        if out.usage is not None and self.config.budget_usd is not None:
            if result.usage is not None and result.usage.cost_usd is not None:
                self.spent += result.usage.cost_usd
            else:
                self.status = RunStatus.BUDGET_EXCEEDED
                self.error = str(BudgetExceeded(
                    f"the cost of step {node.id!r} (model {out.model}) is unknown, so "
                    f"budget_usd={self.config.budget_usd} can't be enforced; give the model "
                    "a price or drop the budget", kind="cost", limit=self.config.budget_usd,
                    actual=None))

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

    def _policy(self, node: StepNode) -> RetryPolicy:
        policy: RetryPolicy | None = node.policy
        if policy is None:
            policy = node.policy = step_policy(node.step.retry, self.config.max_retries,
                                               retries=node.type != "router")
        return policy

    def _over_budget(self) -> bool:
        refused = self._refused()
        if refused is not None:
            self.status, self.error = RunStatus.BUDGET_EXCEEDED, str(refused)
            return True
        budget = self.config.budget_usd
        if budget is None or self.spent < Decimal(str(budget)):
            return False
        self.status = RunStatus.BUDGET_EXCEEDED
        self.error = f"budget_usd={budget} reached (spent ${self.spent})"
        return True

    def _refused(self) -> BudgetExceeded | None:
        """The call the run's budget refused, or the step `config.max_steps` did, here or in
        a run nested in it (a map item's refusal fails the item, not the map's own call):
        the run ends budget_exceeded."""
        budget = self.ctx.budget
        refused: BudgetExceeded | None = budget.exhausted if budget is not None else None
        if refused is None:
            steps: StepCount = self.ctx.steps
            refused = steps.refusal
        return refused

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
        self.restored.append(node_id)  # finished by `_complete`, as if it had run
        return True

    def _pause(self, node: StepNode, result: StepResult, exc: PauseRun) -> None:
        # The innermost step keeps its id (a gate inside a subworkflow is resumed by
        # its own id); this run only needs to know which of its steps is waiting.
        if exc.step_id is None:  # namespaced in a nested durable run: `sub/gate`
            exc.step_id = self.durable.key(node.id) if self.durable is not None else node.id
        self.paused_nodes.add(node.id)
        result.status, result.reason = StepStatus.PAUSED, str(exc)
        if self.paused is None:
            self.paused = exc
            decision = exc.waiting_for == "decision"
            self.status = RunStatus.NEEDS_DECISION if decision else RunStatus.PAUSED
            self.error = (f"step {node.id!r} {'needs a decision' if decision else 'paused'}"
                          f": {exc.prompt or exc.waiting_for}")

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

    def _final_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for node in self.wf.nodes.values():
            r = self.results[node.id]
            if node.dependents or r.status is not StepStatus.SUCCESS:
                continue
            out[node.step.output or node.id] = r.output if node.step.output else r.text
        return out
