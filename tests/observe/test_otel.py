"""OTelObserver: GenAI spans and the summary on the root span, read back from the SDK's
in-memory exporter; metrics with low-cardinality attributes only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from agentloom import Agent, OTelObserver
from agentloom.errors import AgentLoopError, ProviderError
from agentloom.messages import ModelRequest
from agentloom.testing.scripted import FunctionModel, ScriptedModel, tool_call


def lookup(city: str) -> str:
    """Look a city up."""
    if city == "nowhere":
        raise ValueError("no such city")
    return f"{city}: sunny"


def setup(capture: bool = False, **kw: Any) -> tuple[OTelObserver, InMemorySpanExporter,
                                                      InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    return OTelObserver(tp, mp, capture_content=capture, **kw), exporter, reader


def scripted() -> ScriptedModel:
    return ScriptedModel([
        [tool_call("lookup", {"city": "Paris"}, id="1"),
         tool_call("lookup", {"city": "nowhere"}, id="2")],
        "Paris is sunny.",
    ])


def run(obs: OTelObserver, **kw: Any) -> None:
    with Agent(scripted(), tools=[lookup], observer=obs, name="weather") as agent:
        agent.run_result("Weather?", correlation_id="corr-1", parent_id="par-1", **kw)


def test_spans_and_summary_on_root() -> None:
    obs, exporter, _ = setup()
    run(obs, conversation_id="conv-1")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    names = [s.name for s in exporter.get_finished_spans()]
    assert sorted(names) == sorted(["chat scripted", "execute_tool lookup",
                                    "execute_tool lookup", "chat scripted",
                                    "invoke_agent weather"])
    root = spans["invoke_agent weather"]
    a = root.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "weather"
    assert a["gen_ai.conversation.id"] == "conv-1"
    assert a["agentloom.conversation.status"] == "completed"
    assert a["agentloom.conversation.iterations"] == 2
    assert a["agentloom.conversation.iteration_limit"] == 20
    assert a["agentloom.conversation.correlation_id"] == "corr-1"
    assert a["agentloom.conversation.parent_id"] == "par-1"
    assert a["agentloom.conversation.provider_retries"] == 0
    assert a["agentloom.conversation.elapsed_seconds"] >= 0
    assert a["agentloom.tool.calls.lookup"] == 2 and a["agentloom.tool.errors.lookup"] == 1
    for span in exporter.get_finished_spans():
        if span is not root:
            assert span.parent is not None and span.parent.span_id == root.context.span_id
            assert span.context.trace_id == root.context.trace_id
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    assert chat.attributes["gen_ai.request.model"] == "scripted"
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    tools = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert {s.attributes["gen_ai.tool.call.id"] for s in tools} == {"1", "2"}
    assert sorted(s.status.status_code.name for s in tools) == ["ERROR", "UNSET"]
    assert not any("gen_ai.tool.call.arguments" in s.attributes for s in tools)


def test_root_summary_attributes_same_with_capture() -> None:
    plain, exp1, _ = setup()
    captured, exp2, _ = setup(capture=True, redact=lambda s: s)
    run(plain, conversation_id="c")
    run(captured, conversation_id="c")

    def root_summary(exporter: InMemorySpanExporter) -> dict[str, Any]:
        root = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke"))
        return {k: v for k, v in root.attributes.items()
                if k.startswith(("agentloom.conversation.", "agentloom.tool."))
                and k != "agentloom.conversation.elapsed_seconds"}

    assert root_summary(exp1) == root_summary(exp2)
    tool = next(s for s in exp2.get_finished_spans() if s.name.startswith("execute_tool"))
    assert "Paris" in tool.attributes["gen_ai.tool.call.arguments"] or \
        "nowhere" in tool.attributes["gen_ai.tool.call.arguments"]
    with pytest.raises(ValueError):
        OTelObserver(capture_content=True)


def test_failed_run_marks_root_and_chat() -> None:
    obs, exporter, _ = setup()
    err = ProviderError("boom", provider="openai", model="m", status=503, request_sent=True)
    with Agent(ScriptedModel([err]), observer=obs) as agent, pytest.raises(AgentLoopError):
        agent.run("x")
    spans = {s.name.split()[0]: s for s in exporter.get_finished_spans()}
    assert spans["chat"].status.status_code is StatusCode.ERROR
    assert spans["chat"].attributes["error.type"] == "ProviderError"
    root = spans["invoke_agent"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["agentloom.conversation.status"] == "provider_error"


async def test_concurrent_conversations_get_their_own_traces() -> None:
    obs, exporter, _ = setup()

    async def answer(request: ModelRequest) -> object:
        await asyncio.sleep(0)
        if request.messages[-1].role == "user":
            return [tool_call("lookup", {"city": request.messages[-1].text})]
        return "done"

    async with Agent(FunctionModel(answer), model="m", tools=[lookup], observer=obs) as agent:
        await asyncio.gather(*(agent.arun(f"city{i}", conversation_id=f"c{i}")
                               for i in range(5)))
    spans = exporter.get_finished_spans()
    roots = {s.attributes["gen_ai.conversation.id"]: s for s in spans
             if s.name.startswith("invoke_agent")}
    assert set(roots) == {f"c{i}" for i in range(5)}
    for cid, root in roots.items():
        children = [s for s in spans if s.parent and s.parent.span_id == root.context.span_id]
        assert len(children) == 3, cid  # chat, execute_tool, chat


def test_metrics_have_low_cardinality_attributes() -> None:
    obs, _, reader = setup()
    run(obs, conversation_id="conv-x")
    data = reader.get_metrics_data()
    seen: dict[str, list[dict[str, Any]]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                seen[metric.name] = [dict(p.attributes) for p in metric.data.data_points]
    assert {"gen_ai.client.operation.duration", "gen_ai.client.token.usage",
            "agentloom.conversations", "agentloom.tool.calls"} <= set(seen)
    assert seen["agentloom.conversations"][0]["agentloom.conversation.status"] == "completed"
    for points in seen.values():
        for attrs in points:
            values = set(map(str, attrs.values()))
            assert not values & {"conv-x", "corr-1", "par-1"}
            assert not any(k.endswith((".id", "correlation_id", "parent_id")) for k in attrs)
