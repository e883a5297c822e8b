"""Workflow runs observed like Agent runs: each model step's loop callbacks tagged with the
run and step ids, run start and end around them; JSONL ordered and metadata only; OTel
span tree (invoke_workflow > invoke_agent > chat / execute_tool) read back from the SDK's
in-memory exporter; secrets of `state_schema` in neither."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.loop import NullObserver, current_conversation
from agentloom.redact import Redactor
from agentloom.testing.scripted import FunctionModel, tool_call
from agentloom.tools import ToolRegistry
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.engine.observe import RunObservers, WorkflowTraceObserver

SECRET = "tok-Very-Secret-9876"

FLOW = """\
name: traced
state_schema: {api_token: {redact: true}}
state: {topic: tea}
steps:
  - id: look
    type: llm_call
    prompt: "look up {state.topic} using {state.api_token}"
    tools: [lookup]
    output: facts
  - {id: write, type: llm_call, depends_on: [look], prompt: "write: {state.facts}"}
  - id: fan
    type: map
    depends_on: [write]
    over: state.items
    step: {id: each, type: llm_call, prompt: "item {state.item}"}
"""


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny, key {SECRET}"


class Factory:
    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, *, model: str | None, provider: str | None = None,
               fallback: Any = (), retry: Any = None, budget: Any = None) -> Any:
        return self.model


def model() -> FunctionModel:
    def answer(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "user" and last.text.startswith("look up"):
            return [tool_call("lookup", {"city": f"Paris {SECRET}"}, id="c1")]
        return "answer to " + last.text[:60]

    return FunctionModel(answer)


def workflow() -> Any:
    text = FLOW
    return load_workflow_text(text, filename="traced.yaml")


async def run(observers: RunObservers, **kw: Any) -> Any:
    return await arun_workflow(workflow(), clients=Factory(model()),
                               tools=ToolRegistry([lookup]), run_id="run-1",
                               state={"api_token": SECRET, "items": [1, 2]},
                               observers=observers, **kw)


def redactor() -> Redactor:
    return Redactor.from_state_schema({"api_token": {"redact": True}},
                                      state={"api_token": SECRET})


async def test_jsonl_trace_of_a_workflow_run_is_ordered_tagged_and_metadata_only() -> None:
    lines: list[str] = []
    result = await run(RunObservers(WorkflowTraceObserver(lines.append, redactor=redactor())))
    assert result.ok, result.error
    events = [json.loads(line) for line in lines]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    names = [e["event"] for e in events]
    assert names[0] == "run_start" and names[-1] == "run_end"
    assert events[0]["run_id"] == "run-1" and events[0]["workflow"] == "traced"
    assert {"id": "look", "type": "llm_call"} in events[0]["steps"]
    # Every loop event names its run and step; the look step's tool ran inside it.
    look = [e for e in events if e.get("step_id") == "look"]
    assert [e["event"] for e in look] == [
        "conversation_start", "request", "attempt", "response", "tool_start", "tool_end",
        "request", "attempt", "response", "conversation_end"]
    assert all(e["run_id"] == "run-1" for e in look)
    end = look[-1]
    assert end["summary"]["tool_calls"] == {"lookup": 1}
    assert end["summary"]["status"] == "completed"
    # map children are nested runs with their own ids, parented to the run.
    child_starts = [e for e in events if e["event"] == "run_start" and e["run_id"] != "run-1"]
    assert len(child_starts) == 2
    assert {e["parent_run_id"] for e in child_starts} == {"run-1"}
    each = [e for e in events if e.get("step_id") == "each"]
    assert {e["run_id"] for e in each} == {e["run_id"] for e in child_starts}
    run_end = events[-1]
    assert run_end["status"] == "success"
    assert run_end["summary"]["steps"] == {"success": 3}
    assert run_end["steps"]["look"]["type"] == "llm_call"
    # Metadata only: no prompt, no tool argument or result, no state, no secret.
    text = "".join(lines)
    for needle in ("look up", "sunny", "Paris", "write:", SECRET):
        assert needle not in text, needle


async def test_content_capture_is_redacted_by_the_runs_redactor() -> None:
    lines: list[str] = []
    trace = WorkflowTraceObserver(lines.append, redactor=redactor(), capture_content=True)
    result = await run(RunObservers(trace))
    assert result.ok
    text = "".join(lines)
    assert "look up tea using [REDACTED]" in text  # content is there...
    assert "Paris" in text and "sunny" in text
    assert SECRET not in text  # ...but never the secret, in prompts, arguments or results


def test_capture_without_a_redactor_must_be_explicit() -> None:
    with pytest.raises(ValueError, match="redact"):
        WorkflowTraceObserver(lambda _l: None, capture_content=True)


async def test_user_observers_see_run_and_step_ids_on_the_conversation() -> None:
    seen: list[tuple[str | None, str | None, str]] = []
    runs: list[tuple[str, str, str | None]] = []

    class Mine(NullObserver):
        def on_tool_start(self, call: Any) -> None:
            info = current_conversation()
            assert info is not None
            seen.append((info.run_id, info.step_id, call.name))

        def on_run_start(self, info: Any) -> None:
            runs.append(("start", info.run_id, info.workflow))

        def on_run_end(self, info: Any, result: Any, error: Any) -> None:
            runs.append(("end", info.run_id, result.status.value))

    await run(RunObservers(Mine()))
    assert seen == [("run-1", "look", "lookup")]
    assert runs[0] == ("start", "run-1", "traced") and runs[-1] == ("end", "run-1", "success")


async def test_a_raising_observer_changes_nothing() -> None:
    class Broken:
        def on_run_start(self, info: Any) -> None:
            raise RuntimeError("boom")

        def on_conversation_end(self, summary: Any) -> None:
            raise RuntimeError("boom")

    result = await run(RunObservers(Broken()))
    assert result.ok
    assert result.steps["look"].summary.tool_calls == {"lookup": 1}  # catcher still ran


async def test_no_observers_still_gives_step_summaries() -> None:
    result = await arun_workflow(workflow(), clients=Factory(model()),
                                 tools=ToolRegistry([lookup]),
                                 state={"items": [], "api_token": "x"})
    assert result.ok
    assert result.steps["look"].summary.tool_calls == {"lookup": 1}


async def test_a_workflow_functions_inner_steps_are_traced_in_the_callers_run() -> None:
    wf = load_workflow_text("""\
name: fn
functions:
  summarize:
    description: Summarize a text with a second model call.
    args: {text: str}
    steps:
      - {id: inner, type: llm_call, prompt: "Summarize: {args.text}"}
    return: "{steps.inner.output}"
steps:
  - {id: outer, type: llm_call, prompt: "go", functions: [summarize]}
""", filename="fn.yaml")

    def answer(request: Any) -> Any:
        last = request.messages[-1]
        if last.role == "user" and last.text == "go":
            return [tool_call("summarize", {"text": "long"}, id="f1")]
        return "short"

    lines: list[str] = []
    result = await arun_workflow(wf, clients=Factory(FunctionModel(answer)), run_id="top",
                                 observers=RunObservers(WorkflowTraceObserver(lines.append)))
    assert result.ok, result.error
    events = [json.loads(line) for line in lines]
    inner = [e for e in events if e.get("step_id") == "inner"]
    assert inner and inner[0]["event"] == "conversation_start"
    assert inner[0]["run_id"].startswith("fn-summarize-")
    # The inner conversation happens between the outer step's tool_start and tool_end.
    seqs = {e["event"]: e["seq"] for e in events if e.get("step_id") == "outer"}
    assert seqs["tool_start"] < inner[0]["seq"] < inner[-1]["seq"] < seqs["tool_end"]


async def test_a_secret_written_by_a_step_is_redacted_in_later_steps_content() -> None:
    wf = load_workflow_text("""\
name: mint
state_schema: {api_token: {redact: true}}
steps:
  - {id: mint, type: llm_call, prompt: "mint a token", output: api_token}
  - {id: use, type: llm_call, depends_on: [mint], prompt: "call with {state.api_token}"}
""", filename="mint.yaml")
    minted = "minted-Token-55aa77"
    lines: list[str] = []
    red = Redactor.from_state_schema({"api_token": {"redact": True}}, state={})
    trace = WorkflowTraceObserver(lines.append, redactor=red, capture_content=True)
    model = FunctionModel(lambda r: minted if r.messages[-1].text == "mint a token" else "ok")
    result = await arun_workflow(wf, clients=Factory(model),
                                 observers=RunObservers(trace, redactor=red))
    assert result.ok
    use = [json.loads(line) for line in lines if '"step_id":"use"' in line]
    assert any("call with [REDACTED]" in json.dumps(e) for e in use)
    assert minted not in "".join(lines[-len(use) - 1:])  # nothing from the use step on
