"""OpenTelemetry for workflow runs, read back from the SDK's in-memory exporter: one
`invoke_workflow` root per run, each model step's invoke_agent/chat/execute_tool spans
beneath it with the step's summary on its invoke_agent span; low-cardinality metrics;
no secret in any attribute, content capture on or off."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from test_workflow_traces import SECRET, Factory, lookup, model, redactor, workflow

from agentloom.tools import ToolRegistry
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.engine.observe import RunObservers, WorkflowOTelObserver


def setup(capture: bool = False) -> tuple[WorkflowOTelObserver, InMemorySpanExporter,
                                          InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    obs = WorkflowOTelObserver(tp, mp, capture_content=capture, redactor=redactor())
    return obs, exporter, reader


async def run(obs: WorkflowOTelObserver, wf: Any = None) -> Any:
    return await arun_workflow(wf or workflow(), clients=Factory(model()),
                               tools=ToolRegistry([lookup]), run_id="run-1",
                               state={"api_token": SECRET, "items": [1]},
                               observers=RunObservers(obs, redactor=obs._redactor))


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_span_tree_of_a_run() -> None:
    obs, exporter, _ = setup()
    result = await run(obs)
    assert result.ok, result.error
    spans = exporter.get_finished_spans()
    ids = {s.context.span_id: s for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["invoke_workflow traced"]
    root = roots[0]
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["agentloom.run.id"] == "run-1"
    assert root.attributes["agentloom.run.status"] == "success"
    assert root.attributes["agentloom.run.steps.success"] == 3
    assert root.status.status_code is not StatusCode.ERROR
    # Every span of the run is in the root's trace, and each agent span hangs off a run.
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    agents = by_name(spans, "invoke_agent")
    assert {a.attributes["agentloom.step.id"] for a in agents} == {"look", "write", "each"}
    look = next(a for a in agents if a.attributes["agentloom.step.id"] == "look")
    assert look.parent.span_id == root.context.span_id
    assert look.attributes["agentloom.run.id"] == "run-1"
    # The step's summary is on its invoke_agent span, as for an Agent run.
    assert look.attributes["agentloom.conversation.status"] == "completed"
    assert look.attributes["agentloom.conversation.iterations"] == 2
    assert look.attributes["agentloom.tool.calls.lookup"] == 1
    children = [s for s in spans if s.parent and s.parent.span_id == look.context.span_id]
    assert sorted(s.name.split()[0] for s in children) == ["chat", "chat", "execute_tool"]
    # A map child is a nested run: its invoke_workflow span under the parent run's.
    nested = [s for s in by_name(spans, "invoke_workflow") if s is not root]
    assert len(nested) == 1
    assert nested[0].parent.span_id == root.context.span_id
    each = next(a for a in agents if a.attributes["agentloom.step.id"] == "each")
    assert ids[each.parent.span_id] is nested[0]


async def test_no_secret_in_any_attribute_with_or_without_content() -> None:
    for capture in (False, True):
        obs, exporter, _ = setup(capture)
        await run(obs)
        spans = exporter.get_finished_spans()
        dump = repr([(s.name, dict(s.attributes or {}), [dict(e.attributes or {})
                                                           for e in s.events])
                     for s in spans])
        assert SECRET not in dump, capture
        if capture:  # content is there, redacted
            assert "look up tea using [REDACTED]" in dump
        else:
            assert "look up" not in dump and "sunny" not in dump


async def test_run_metrics_are_low_cardinality() -> None:
    obs, _, reader = setup()
    await run(obs)
    data = reader.get_metrics_data()
    points: dict[str, list[dict[str, Any]]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points.setdefault(metric.name, []).extend(
                    dict(p.attributes) for p in metric.data.data_points)
    runs = points["agentloom.workflow.runs"]
    assert {"agentloom.workflow.name": "traced", "agentloom.run.status": "success"} in runs
    assert "agentloom.workflow.duration" in points
    for name, attrs_list in points.items():
        for attrs in attrs_list:
            for key in attrs:
                assert not key.endswith(".id"), (name, key)  # no run/step/conversation ids


async def test_a_failed_step_marks_the_run_span_as_error() -> None:
    wf = load_workflow_text("""\
name: broken
steps:
  - {id: a, type: llm_call, prompt: "hi", retry: {max_retries: 0}}
""", filename="broken.yaml")

    class Failing:
        def client(self, **_kw: Any) -> Any:
            from agentloom.testing.scripted import ScriptedModel

            return ScriptedModel([RuntimeError("provider down")])

    obs, exporter, _ = setup()
    result = await arun_workflow(wf, clients=Failing(), observers=RunObservers(obs))
    assert not result.ok
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "invoke_workflow broken")
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["agentloom.run.status"] == "failed"
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert agent.attributes["agentloom.conversation.status"] == "error"
    assert agent.attributes["agentloom.conversation.error_type"] == "RuntimeError"
    assert "provider down" not in repr([dict(s.attributes or {}) for s in spans])
