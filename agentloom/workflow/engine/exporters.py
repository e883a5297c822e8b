"""The built-in observers of a workflow run, with the run-level callbacks: the JSONL
trace (`WorkflowTraceObserver`) and OpenTelemetry (`WorkflowOTelObserver`). Apart from
`observe.py` so that a run reporting to neither loads neither; `observe.py` still
answers for these names (looked up on first use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentloom.observe import semconv as sc
from agentloom.observe.events import EventTraceObserver
from agentloom.observe.otel import OTelObserver
from agentloom.workflow.engine.observe import RunInfo, run_report

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow.engine.result import RunResult


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


__all__ = ["WorkflowOTelObserver", "WorkflowTraceObserver", "run_attributes"]
