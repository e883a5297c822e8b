"""The observers of a workflow run: the same loop callbacks an Agent run gets, per step,
plus the run's own start and end.

Every `llm_call` and `agent` step runs the agent loop, so a step is observed exactly as
an Agent run is: the loop puts the run and step ids on its `ConversationInfo`
(`current_conversation().run_id` / `.step_id`), and JSONL events and spans read them
there. What only the engine knows (the run began, the run ended with this summary) goes
through two more callbacks, `on_run_start(info)` and `on_run_end(info, result, error)`,
dispatched the same way, so an observer without them is simply not told. Nested runs
(subworkflows, `map`) inherit the parent's observers, so one trace covers the whole run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentloom._lazy import lazy_getattr
from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.loop.observer import Dispatch, MultiObserver
from agentloom.workflow.engine.secrets import SecretLearner, secret_step_redactor
from agentloom.workflow.engine.summaries import SummaryCatcher

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.engine.result import RunResult


@frozen_record
class RunInfo(FrozenRecord):
    """Which run a run-level callback is about."""

    run_id: str
    workflow: str
    parent_run_id: str | None = None
    """The run that started this one (a subworkflow or `map` child), else None."""
    steps: tuple[tuple[str, str], ...] = ()
    """(step id, step type) of every step, in file order."""

    def __init__(
        self, *, run_id: str, workflow: str, parent_run_id: str | None = None,
        steps: tuple[tuple[str, str], ...] = (),
    ) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "workflow", workflow)
        set_field(self, "parent_run_id", parent_run_id)
        set_field(self, "steps", steps)


class RunObserver(Protocol):
    """The run-level callbacks; loop callbacks come from `agentloom.loop.Observer`."""

    def on_run_start(self, info: RunInfo) -> None: ...

    def on_run_end(self, info: RunInfo, result: RunResult | None,
                   error: BaseException | None) -> None:
        """Exactly once per run: `result` when the run returned, `error` when it raised
        (cancelled, most often)."""
        ...


class RunObservers:
    """The observers of one run, handed to `arun_workflow(observers=...)`.

        trace = WorkflowTraceObserver(file.write, redactor=redactor)
        await arun_workflow(wf, clients=runtime, observers=RunObservers(trace))

    `redactor` (the run's, from `state_schema`) learns the values of secret state keys
    before each model step, so a secret a step wrote is redacted in later steps' content.
    """

    __slots__ = ("_dispatch", "observers", "redactor")

    def __init__(self, *observers: object, redactor: Redactor | None = None) -> None:
        self.observers = tuple(o for o in observers if o is not None)
        self.redactor = redactor
        self._dispatch = Dispatch(self.observers)

    def for_step(self, step_id: str, ctx: RunContext, *extra: object) -> object:
        """One loop observer for a step's conversation: `extra` (the step's own, such as
        its summary catcher) first, then the run's observers. The loop tags every callback
        with `step_id` itself (`ConversationInfo.step_id`); a subclass may use it to choose
        observers per step."""
        if self.redactor is not None and self.redactor.key_globs:
            self.redactor.add_secrets(self.redactor.secret_values(ctx.state))
        return MultiObserver(*extra, *self.observers)

    def run_start(self, info: RunInfo) -> None:
        self._dispatch.emit("on_run_start", info)

    def run_end(self, info: RunInfo, result: RunResult | None,
                error: BaseException | None = None) -> None:
        self._dispatch.emit("on_run_end", info, result, error)


def step_observer(step_id: str, ctx: RunContext) -> object:
    """The observer a model step passes to `run_loop`: its summary catcher, plus the
    run's observers when there are any. A step whose output is redacted gets a
    `SecretLearner` first, so its replies are secrets before anything records them."""
    catcher = SummaryCatcher(ctx, step_id)
    observers: RunObservers | None = ctx.observers
    redactor = secret_step_redactor(step_id, ctx)
    first: tuple[object, ...] = () if redactor is None else (SecretLearner(redactor),)
    if observers is None or not observers.observers:
        return catcher if not first else MultiObserver(*first, catcher)
    return observers.for_step(step_id, ctx, *first, catcher)


def step_watch(step_id: str, ctx: RunContext
               ) -> tuple[object | None, Callable[[Any], None] | None]:
    """What a model step's `run_loop` reports to: (observer, summary sink). A step that
    nobody watches (no run observers, an output not redacted) only keeps its summary
    record, through the loop's `on_summary` sink: the loop then runs unobserved, its
    callbacks going straight to its collector instead of through a dispatcher."""
    observers: RunObservers | None = ctx.observers
    if (observers is None or not observers.observers) \
            and secret_step_redactor(step_id, ctx) is None:
        return None, SummaryCatcher(ctx, step_id).on_summary_record
    return step_observer(step_id, ctx), None


async def observe_run(ctx: RunContext, run: Awaitable[RunResult],
                      parent: RunContext | None = None) -> RunResult:
    """Await `run` between the run's start and end callbacks (none without observers)."""
    observers: RunObservers | None = ctx.observers
    if observers is None or not observers.observers:
        return await run
    wf = ctx.workflow
    info = RunInfo(run_id=ctx.run_id, workflow=wf.name,
                   parent_run_id=parent.run_id if parent is not None else None,
                   steps=tuple((n, node.type) for n, node in wf.nodes.items()))
    observers.run_start(info)
    try:
        result = await run
    except BaseException as exc:
        observers.run_end(info, None, exc)
        raise
    observers.run_end(info, result)
    return result


# --- what a run end reports ----------------------------------------------------------------


def run_report(result: RunResult, redactor: Redactor | None = None) -> dict[str, Any]:
    """The run's summary and each step's outcome, metadata only: statuses, counts, tokens,
    cost, timings and error types; never outputs, state or error text."""
    steps: dict[str, Any] = {}
    for step_id, r in result.steps.items():
        steps[step_id] = {
            "type": r.type, "status": r.status.value, "attempts": r.attempts,
            "error_type": r.error_type, "duration_seconds": r.duration_seconds,
            "tokens": r.tokens,
            "cost_usd": None if r.cost_usd is None else float(r.cost_usd),
            "model": r.model, "provider": r.provider,
        }
    summary = result.summary
    report = {"summary": summary, "steps": steps}
    return redactor.redact_state(report) if redactor is not None else report


__all__ = ["RunInfo", "RunObserver", "RunObservers", "observe_run", "run_report",
           "step_observer", "step_watch"]

# The built-in observers (JSONL trace, OpenTelemetry) live in `exporters`, loaded when a
# run asks for one: a run without --trace or --otel imports neither.
__getattr__ = lazy_getattr(__name__, {
    "WorkflowTraceObserver": "agentloom.workflow.engine.exporters",
    "WorkflowOTelObserver": "agentloom.workflow.engine.exporters",
    "run_attributes": "agentloom.workflow.engine.exporters",
}, globals())
