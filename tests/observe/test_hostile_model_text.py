"""Hostile model text in traces and spans: what the model and its tools send is bounded in
every span name, attribute and trace line (OpenTelemetry sets no attribute length limit
unless OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT is set), and a secret the model echoes back as a
tool's name is redacted in spans and metrics as content is, capture or not."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_workflow_traces import SECRET, Factory, lookup, redactor, workflow

from agentloom import Agent, EventTraceObserver, OTelObserver
from agentloom.loop import MultiObserver
from agentloom.testing.scripted import FunctionModel, ScriptedModel, tool_call
from agentloom.tools import ToolRegistry
from agentloom.workflow import arun_workflow
from agentloom.workflow.engine.observe import RunObservers, WorkflowOTelObserver

BIG_REPLY = "r" * 5_000_000
BIG_RESULT = "t" * 3_000_000  # the loop cuts a tool result at 1 MB: still 1 MB too many


def big(city: str) -> str:
    """Look a city up, at length."""
    return BIG_RESULT


def providers() -> tuple[Any, InMemorySpanExporter, Any, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()  # no span limits: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT is unset
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return tp, exporter, MeterProvider(metric_readers=[reader]), reader


def dump(exporter: InMemorySpanExporter) -> str:
    return repr([(s.name, dict(s.attributes or {}), [dict(e.attributes or {})
                                                      for e in s.events])
                 for s in exporter.get_finished_spans()])


def metric_attributes(reader: InMemoryMetricReader) -> str:
    out = []
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out += [dict(p.attributes) for p in metric.data.data_points]
    return repr(out)


async def test_a_secret_the_model_calls_a_tool_by_is_in_no_span_or_metric() -> None:
    def echo_secret(request: Any) -> Any:
        if request.messages[-1].role == "user":  # it was shown the key: it names a tool so
            return [tool_call(SECRET, {}, id="c1")]
        return "done"

    for capture in (False, True):
        tp, exporter, mp, reader = providers()
        red = redactor()
        obs = WorkflowOTelObserver(tp, mp, capture_content=capture, redactor=red)
        result = await arun_workflow(workflow(), clients=Factory(FunctionModel(echo_secret)),
                                     tools=ToolRegistry([lookup]), run_id="run-1",
                                     state={"api_token": SECRET, "items": [1]},
                                     observers=RunObservers(obs, redactor=red))
        assert result.ok, result.error
        spans = dump(exporter)
        assert "execute_tool [REDACTED]" in spans  # the call is still reported
        assert SECRET not in spans, capture
        assert SECRET not in metric_attributes(reader), capture


def test_an_echoed_secret_tool_name_is_redacted_in_the_jsonl_trace_too() -> None:
    lines: list[str] = []
    obs = EventTraceObserver(lines.append, redact=lambda s: s.replace(SECRET, "[REDACTED]"))
    model = ScriptedModel([[tool_call(SECRET, {}, id="c1")], "done"])
    with Agent(model, tools=[lookup], observer=obs) as agent:
        agent.run_result("hi")
    text = "".join(lines)
    assert '"tool":"[REDACTED]"' in text
    assert SECRET not in text


def test_a_huge_reply_and_tool_result_are_clipped_in_span_attributes() -> None:
    tp, exporter, mp, _ = providers()
    obs = OTelObserver(tp, mp, capture_content=True, redact=lambda s: s)
    model = ScriptedModel([[tool_call("big", {"city": "Paris"}, id="1")], BIG_REPLY])
    with Agent(model, tools=[big], observer=obs) as agent:
        assert agent.run_result("hi").text == BIG_REPLY  # the run itself is not cut
    spans = exporter.get_finished_spans()
    sizes = {f"{s.name} {k}": len(str(v)) for s in spans for k, v in s.attributes.items()}
    assert max(sizes.values()) < 10_000, sizes
    tool = next(s for s in spans if s.name == "execute_tool big")
    assert tool.attributes["gen_ai.tool.call.result"].endswith("more chars]")
    last_chat = [s for s in spans if s.name.startswith("chat")][-1]
    out = json.loads(last_chat.attributes["gen_ai.output.messages"])
    assert out[0]["content"].startswith("rrrr")  # JSON still, the text cut inside it


def test_huge_and_countless_tool_names_are_bounded_in_spans_and_trace_lines() -> None:
    tp, exporter, mp, reader = providers()
    lines: list[str] = []
    otel = OTelObserver(tp, mp)
    trace = EventTraceObserver(lines.append)
    name = "n" * 200_000
    calls = [tool_call(f"{i}{'x' * 1000}", {}, id=f"c{i}") for i in range(2000)]
    model = ScriptedModel([[tool_call(name, {}, id="huge")], calls, "done"])
    with Agent(model, tools=[lookup], observer=MultiObserver(otel, trace)) as agent:
        agent.run_result("hi")
    for span in exporter.get_finished_spans():
        assert len(span.name) < 300, span.name[:80]
        assert len(span.attributes) < 400, span.name
        for key, value in span.attributes.items():
            assert len(key) + len(str(value)) < 10_000, (span.name, key[:80])
    assert len(metric_attributes(reader)) < 100_000  # each of 129 names cut
    assert max(len(line) for line in lines) < 100_000
    response = [json.loads(line) for line in lines if '"event":"response"' in line][1]
    assert response["tool_calls_omitted"] == 2000 - len(response["tool_calls"])
