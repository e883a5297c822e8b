"""One step of a run, start to finish: the task the scheduler (`run.py`) starts per step.

A step takes its place in the run's step count, then runs its attempts through the
workflow's `StepLibrary`: each attempt has the step's own `timeout`, and a failed one is
retried by the step's `RetryPolicy`, waiting through the run's clock. A success writes
its outcome to the state and to the step's result (`_commit`); a failure is the step's
result, never the run's crash, and runs the step's `on_error` block; a `PauseRun` marks
the step paused (`_pause`). Then the step hands itself back to the scheduler
(`complete` for a durable run, `finished` otherwise), still in its own task.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from agentloom.errors import BudgetExceeded, DeadlineExceeded, LoopBudgetExceeded
from agentloom.providers.model_names import same_model
from agentloom.workflow.engine.awaiting import deadline_passed, step_deadline
from agentloom.workflow.engine.on_error import run_handler
from agentloom.workflow.engine.pause import PauseRun
from agentloom.workflow.engine.result import RunStatus, StepOutcome, StepResult, StepStatus
from agentloom.workflow.engine.retry import step_policy
from agentloom.workflow.engine.secrets import learn_outcome, secret_step_redactor
from agentloom.workflow.engine.spending import unknown_cost
from agentloom.workflow.engine.summaries import loops_usage, step_summary, with_earlier
from agentloom.workflow.lang.paths import assign
from agentloom.workflow.lang.templates import to_text

if TYPE_CHECKING:
    import random

    from agentloom.routing import RetryPolicy
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.engine.hooks import DurableHooks
    from agentloom.workflow.load.workflow import StepLibrary, StepNode


class StepRun(Protocol):
    """What a step reads and writes of its run (the scheduler's `_Run`)."""

    ctx: RunContext
    config: Any
    library: StepLibrary
    rng: random.Random
    durable: DurableHooks | None
    done_lock: asyncio.Lock | None
    results: dict[str, StepResult]
    earlier_loops: dict[str, int]
    """Step id -> how many of its loops ran before its current attempt."""
    handled: set[str]
    not_taken: dict[str, str]
    spent: Decimal
    status: RunStatus
    error: str | None
    paused: PauseRun | None
    paused_nodes: set[str]

    async def complete(self, finished: str | None) -> None: ...

    def finished(self, node_id: str) -> None: ...


async def step_task(run: StepRun, node: StepNode) -> None:
    result = run.results[node.id]
    clock = run.ctx.clock
    result.started_at = start = clock.now()
    try:
        run.ctx.steps.take(node.id)
        outcome = await _attempts(run, node, result)
        _commit(run, node, result, outcome)
    except asyncio.CancelledError:
        result.duration_seconds = clock.now() - start
        _summarize_step(run.ctx, node, result)
        raise
    except PauseRun as exc:
        _pause(run, node, result, exc)
    except Exception as exc:  # a step's failure is its result, never the run's crash
        result.status = StepStatus.FAILED
        result.error = str(exc) or type(exc).__name__
        result.error_type = type(exc).__name__
        usage = getattr(exc, "usage", None)
        if usage is not None:
            result.usage = with_earlier(usage, loops_usage(
                run.ctx, node.id, run.earlier_loops.get(node.id)))
        elif node.id in run.ctx.summaries:
            result.usage = loops_usage(run.ctx, node.id)  # every attempt's calls
        if isinstance(exc, BudgetExceeded) and run.status is RunStatus.SUCCESS:
            # The run's cap would be crossed: nothing else starts (spec 004).
            run.status, run.error = RunStatus.BUDGET_EXCEEDED, str(exc)
        if node.handler is not None:
            try:
                if await run_handler(node, run.ctx, result):
                    run.handled.add(node.id)
            except PauseRun as pause:  # a gate in the on_error block: the step waits
                _pause(run, node, result, pause)
    result.duration_seconds = clock.now() - start
    _summarize_step(run.ctx, node, result)
    if run.durable is not None and run.done_lock is not None:
        await run.complete(node.id)
    else:
        run.finished(node.id)


async def _attempts(run: StepRun, node: StepNode, result: StepResult) -> StepOutcome:
    execute = run.library.execute
    policy = _policy(node, run.config)
    timeout = node.step.timeout
    ctx = run.ctx
    while True:
        result.attempts += 1
        # The loops before this attempt's: their usage counts in the step's total.
        run.earlier_loops[node.id] = len(ctx.summaries.get(node.id) or ())
        try:
            outcome: StepOutcome
            if timeout is None:
                outcome = await execute(node, ctx)
                return outcome
            deadline = step_deadline(ctx.clock, timeout)
            try:
                async with deadline.scope():
                    outcome = await execute(node, ctx)
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
            await ctx.clock.sleep(policy.delay(result.attempts, exc, run.rng))


def _policy(node: StepNode, config: Any) -> RetryPolicy:
    policy: RetryPolicy | None = node.policy
    if policy is None:
        policy = node.policy = step_policy(node.step.retry, config.max_retries,
                                           retries=node.type != "router")
    return policy


def _summarize_step(ctx: RunContext, node: StepNode, result: StepResult) -> None:
    result.summary = step_summary(ctx, node.id)
    primary = ctx.primaries.get(node.id)
    if primary is not None and result.provider is not None:
        result.fallback_used = result.provider != primary[0] or not same_model(
            result.model or "", primary[1])


def _commit(run: StepRun, node: StepNode, result: StepResult, out: StepOutcome) -> None:
    # The state write goes first: if the output path can't be written, the step
    # fails and nothing of it is visible.
    ctx = run.ctx
    redactor = secret_step_redactor(node.id, ctx)
    if redactor is not None:  # before any checkpoint or report holds the output
        learn_outcome(redactor, out.value, out.text, out.reasoning_content)
    if node.output_path is not None:
        assign(ctx.state, node.output_path, out.value)
    result.status = StepStatus.SUCCESS
    result.output = out.value
    result.text = out.text if out.text is not None else (
        None if out.value is None else to_text(out.value))
    earlier = (loops_usage(ctx, node.id, run.earlier_loops[node.id])
               if run.earlier_loops.get(node.id) else None)
    result.usage = with_earlier(out.usage, earlier)
    result.model, result.provider = out.model, out.provider
    result.finish_reason = out.finish_reason
    result.time_to_first_token = out.time_to_first_token
    result.reasoning_content = out.reasoning_content
    result.iterations = out.iterations
    result.structured_output = out.structured_output
    if result.text is not None:
        ctx.step_text[node.id] = result.text
    for target in out.not_taken:
        run.not_taken[target] = node.id
    if out.usage is not None and run.config.budget_usd is not None:
        if result.usage is not None and result.usage.cost_usd is not None:
            run.spent += result.usage.cost_usd
        else:
            run.status = RunStatus.BUDGET_EXCEEDED
            run.error = unknown_cost(node.id, out.model, run.config.budget_usd)


def _pause(run: StepRun, node: StepNode, result: StepResult, exc: PauseRun) -> None:
    # The innermost step keeps its id (a gate inside a subworkflow is resumed by
    # its own id); this run only needs to know which of its steps is waiting.
    if exc.step_id is None:  # namespaced in a nested durable run: `sub/gate`
        exc.step_id = run.durable.key(node.id) if run.durable is not None else node.id
    run.paused_nodes.add(node.id)
    result.status, result.reason = StepStatus.PAUSED, str(exc)
    if run.paused is None:
        run.paused = exc
        decision = exc.waiting_for == "decision"
        run.status = RunStatus.NEEDS_DECISION if decision else RunStatus.PAUSED
        run.error = (f"step {node.id!r} {'needs a decision' if decision else 'paused'}"
                     f": {exc.prompt or exc.waiting_for}")
