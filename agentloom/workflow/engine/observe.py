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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentloom.loop.observer import Dispatch, MultiObserver
from agentloom.observe import semconv as sc
from agentloom.observe.events import EventTraceObserver
from agentloom.observe.otel import OTelObserver
from agentloom.workflow.engine.secrets import SecretLearner, secret_step_redactor
from agentloom.workflow.engine.summaries import SummaryCatcher

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.engine.result import RunResult


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInfo:
    """Which run a run-level callback is about."""

    run_id: str
    workflow: str
    parent_run_id: str | None = None
    """The run that started this one (a subworkflow or `map` child), else None."""
    steps: tuple[tuple[str, str], ...] = ()
    """(step id, step type) of every step, in file order."""


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


# --- the built-in observers, with the run-level callbacks ------------------------------------


class WorkflowTraceObserver(EventTraceObserver):
    """The JSONL trace of a workflow run: `run_start`, each step's loop events (tagged
    `run_id`, `step_id`), `run_end` with the run's summary. One object per line, in order.

    With a `redactor`, every line passes through it before `write` (a net under the
    metadata-only events) and captured content is redacted by it; `capture_content`
    without a redactor needs `allow_unredacted=True`, as for `EventTraceObserver`.
    """

    def __init__(self, write: Callable[[str], Any], *, redactor: Redactor | None = None,
                 capture_content: bool = False, allow_unredacted: bool = False,
                 clip: int = 2000) -> None:
        out = write
        if redactor is not None:
            def out(line: str) -> Any:
                return write(redactor.redact_text(line))
        super().__init__(out, capture_content=capture_content,
                         redact=redactor.redact_text if redactor is not None else None,
                         allow_unredacted=allow_unredacted, clip=clip)
        self._redactor = redactor

    def on_run_start(self, info: RunInfo) -> None:
        self.record("run_start", run_id=info.run_id, workflow=info.workflow,
                    parent_run_id=info.parent_run_id,
                    steps=[{"id": s, "type": t} for s, t in info.steps])

    def on_run_end(self, info: RunInfo, result: RunResult | None,
                   error: BaseException | None) -> None:
        if result is None:
            self.record("run_end", run_id=info.run_id, workflow=info.workflow,
                        status="cancelled" if not isinstance(error, Exception) else "error",
                        error_type=type(error).__name__ if error is not None else None)
            return
        report = run_report(result, self._redactor)
        self.record("run_end", run_id=info.run_id, workflow=info.workflow,
                    status=result.status.value, **report)


class WorkflowOTelObserver(OTelObserver):
    """OpenTelemetry for a workflow run: one `invoke_workflow {name}` span per run (the
    GenAI conventions' operation for a workflow), with each model step's `invoke_agent`,
    `chat` and `execute_tool` spans beneath it (they carry `agentloom.run.id` and
    `agentloom.step.id`). The run's summary lands on its span as `agentloom.run.*`
    attributes. Metrics stay low-cardinality: runs and their duration by workflow name
    and status, never a run id.

    The run span is made the current span of the task that runs the workflow, so the
    step tasks it starts (and a nested run's span) are its children.
    """

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None,
                 capture_content: bool = False, *, redactor: Redactor | None = None,
                 allow_unredacted: bool = False, metrics: bool = True) -> None:
        from opentelemetry import trace

        super().__init__(tracer_provider, meter_provider, capture_content,
                         redact=redactor.redact_text if redactor is not None else None,
                         allow_unredacted=allow_unredacted, metrics=metrics)
        self._run_tracer = (tracer_provider.get_tracer("agentloom.workflow")
                            if tracer_provider is not None
                            else trace.get_tracer("agentloom.workflow"))
        self._run_spans: dict[str, tuple[Any, Any]] = {}
        self._redactor = redactor
        self._run_metrics: tuple[Any, Any] | None = None
        if metrics:
            from opentelemetry import metrics as otel_metrics

            meter = (meter_provider.get_meter("agentloom") if meter_provider is not None
                     else otel_metrics.get_meter("agentloom"))
            self._run_metrics = (
                meter.create_counter(sc.METRIC_WORKFLOW_RUNS, unit="{run}",
                                     description="Finished workflow runs by status"),
                meter.create_histogram(sc.METRIC_WORKFLOW_DURATION, unit="s",
                                       description="Workflow run wall time"),
            )

    def on_run_start(self, info: RunInfo) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind

        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
                                 sc.GEN_AI_WORKFLOW_NAME: info.workflow,
                                 sc.AL_WORKFLOW_NAME: info.workflow,
                                 sc.AL_RUN_ID: info.run_id,
                                 sc.RUN_PREFIX + "steps": len(info.steps)}
        if info.parent_run_id is not None:
            attrs[sc.RUN_PREFIX + "parent_id"] = info.parent_run_id
        span = self._run_tracer.start_span(f"{sc.OP_INVOKE_WORKFLOW} {info.workflow}",
                                           kind=SpanKind.INTERNAL, attributes=attrs)
        # Step tasks copy the context when the engine starts them: they inherit this span.
        token = context.attach(trace.set_span_in_context(span))
        self._run_spans[info.run_id] = (span, token)

    def on_run_end(self, info: RunInfo, result: RunResult | None,
                   error: BaseException | None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        entry = self._run_spans.pop(info.run_id, None)
        status = result.status.value if result is not None else (
            "cancelled" if not isinstance(error, Exception) else "error")
        if entry is not None:
            span, token = entry
            attrs = run_attributes(result, self._redactor) if result is not None else {
                sc.RUN_PREFIX + "status": status}
            span.set_attributes(attrs)
            if result is None or not result.ok:
                error_type = (type(error).__name__ if error is not None else status)
                span.set_attribute(sc.ERROR_TYPE, error_type)
                span.set_status(Status(StatusCode.ERROR, error_type))
            span.end()
            context.detach(token)
        if self._run_metrics is not None:
            runs, duration = self._run_metrics
            attrs = {sc.AL_WORKFLOW_NAME: info.workflow, sc.RUN_PREFIX + "status": status}
            runs.add(1, attrs)
            if result is not None:
                duration.record(result.duration_seconds, attrs)


def run_attributes(result: RunResult, redactor: Redactor | None = None) -> dict[str, Any]:
    """The run summary as span attributes (`agentloom.run.*`), metadata only."""
    summary = run_report(result, redactor)["summary"]
    p = sc.RUN_PREFIX
    attrs: dict[str, Any] = {p + "status": summary["status"],
                             p + "elapsed_seconds": summary["elapsed_seconds"],
                             p + "retries": summary["retries"],
                             p + "fallbacks_used": summary["fallbacks_used"]}
    for status, count in summary["steps"].items():
        attrs[f"{p}steps.{status}"] = count
    for key in ("tokens", "cost_usd"):
        if summary[key] is not None:
            attrs[p + key] = summary[key]
    return attrs


__all__ = ["RunInfo", "RunObserver", "RunObservers", "WorkflowOTelObserver",
           "WorkflowTraceObserver", "observe_run", "run_attributes", "run_report",
           "step_observer"]
