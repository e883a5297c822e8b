"""`response_schema` on an llm_call step, end to end: the spec's examples (pydantic,
json_schema, json_object) against every provider's fake server, the wire shape each
provider gets, re-asks after a bad reply, the forced-tool mode, and the load errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers_for_steps import ALL, EXAMPLES, REPO, bodies, run_example, served, system_of

from agentloom.errors import WorkflowError
from agentloom.testing._server import FakeReply
from agentloom.workflow import StepStatus, load_workflow, load_workflow_text
from agentloom.workflow.load.problems import WorkflowProblems


@pytest.fixture(autouse=True)
def _run_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pydantic models are imported from the run directory (spec 000), the repo root here.
    monkeypatch.chdir(REPO)


def answer(vendor: str, value: dict[str, Any]) -> FakeReply:
    """A JSON reply as the model writes it: after Anthropic's `{` prefill, the rest."""
    text = json.dumps(value)
    return FakeReply(text=text[1:] if vendor == "anthropic" else text)


def serial(source: Any) -> Any:
    return load_workflow(source).with_overrides(max_concurrent_steps=1)


@pytest.mark.parametrize("vendor", ALL)
async def test_spec_examples_run_on_every_provider(vendor: str) -> None:
    from examples.structured_output_schemas import Classification

    async with served(vendor) as (server, runtime):
        server.script(
            answer(vendor, {"label": "billing", "confidence": 0.9}),
            answer(vendor, {"name": "Ada Lovelace", "date": "1843-07-10"}),
            answer(vendor, {"names": ["Jot", "Quill"]}),
            FakeReply(text="Billing: please refund the second charge."),
        )
        wf = serial(EXAMPLES / "structured_output.yaml")
        result = await run_example(vendor, server, runtime, wf)
        sent = bodies(server)
    assert result.status.value == "success", result.error
    classification = result.state["classification"]
    assert isinstance(classification, Classification) and classification.label == "billing"
    assert result.state["extracted"] == {"name": "Ada Lovelace", "date": "1843-07-10"}
    assert result.state["ideas"] == {"names": ["Jot", "Quill"]}
    # The raw text, as the model wrote it, is what `steps.<id>.output` reads.
    assert "billing" in result.steps["classify"].text
    # The step's result says how the schema was asked for: a bare JSON object is prompted
    # on Claude, every schema native on a model that has the mode (claude-haiku-4-5 does).
    modes = {s: result.steps[s].structured_output for s in result.steps}
    assert set(modes.values()) - {None} <= {"native", "prompted"}
    assert modes["classify"] == "native"
    assert modes["ideas"] == ("prompted" if vendor == "anthropic" else "native")
    assert result.steps["classify"].to_dict()["structured_output"] == "native"
    # A template reads a field of the pydantic instance.
    assert "for the billing team" in json.dumps(sent[3])
    # --json writes the instance as a plain dictionary.
    plain = json.loads(json.dumps(result.to_dict()))
    assert plain["state"]["classification"] == {"label": "billing", "confidence": 0.9}
    classify, extract, ideas = sent[0], sent[1], sent[2]
    if vendor == "openai":
        fmt = classify["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Classification"
        assert fmt["json_schema"]["strict"] is True
        assert extract["response_format"]["json_schema"]["name"] == "extract"
        assert ideas["response_format"] == {"type": "json_object"}
    elif vendor == "gemini":
        gen = classify["generationConfig"]
        assert gen["responseMimeType"] == "application/json"
        assert gen["responseSchema"]["properties"]["label"]["enum"] == [
            "billing", "technical", "other"]
        assert "responseSchema" not in ideas["generationConfig"]
    elif vendor == "ollama":
        assert classify["format"]["properties"]["label"]["enum"][0] == "billing"
        assert extract["format"]["required"] == ["name", "date"]
        assert ideas["format"] == "json"
    else:
        # Anthropic: a schema goes native (`output_config`) on a model that has it; a bare
        # JSON object is asked for in the system prompt with the `{` prefill.
        fmt = classify["output_config"]["format"]
        assert fmt["type"] == "json_schema" and "label" in fmt["schema"]["properties"]
        assert extract["output_config"]["format"]["schema"]["required"] == ["name", "date"]
        assert "JSON" in system_of(vendor, ideas)
        assert ideas["messages"][-1] == {"role": "assistant",
                                         "content": [{"type": "text", "text": "{"}]}
    # The plain step carries no schema.
    assert "response_format" not in sent[3] and "format" not in sent[3]


@pytest.mark.parametrize("vendor", ALL)
async def test_a_bad_reply_is_re_asked_within_the_attempt(vendor: str) -> None:
    async with served(vendor) as (server, runtime):
        server.script(
            answer(vendor, {"name": "Ada"}),  # misses `date`
            answer(vendor, {"name": "Ada", "date": "1843-07-10"}),
        )
        text = _only_step("extract")
        result = await run_example(vendor, server, runtime, text)
        sent = bodies(server)
    assert result.status.value == "success", result.error
    step = result.steps["extract"]
    assert step.attempts == 1 and len(sent) == 2
    assert result.state["extracted"]["date"] == "1843-07-10"
    reask = json.dumps(sent[1])
    assert "did not match the required JSON shape" in reask and "date" in reask
    # Both calls are the step's: their tokens add up.
    assert step.usage is not None and step.usage.input_tokens == 24


async def test_no_valid_reply_fails_the_step_without_a_retry() -> None:
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text="sorry, no JSON"), FakeReply(text="still none"),
                      FakeReply(text='{"never": "asked"}'))
        text = _only_step("extract", retry={"max_retries": 1})
        result = await run_example("openai", server, runtime, text)
        assert server.pending == 1  # the third reply was never asked for
    step = result.steps["extract"]
    assert step.status is StepStatus.FAILED and step.attempts == 1
    assert step.error_type == "StructuredOutputError" and "after 2 tries" in (step.error or "")
    assert "extracted" not in result.state


async def test_a_streamed_reply_streams_raw_json_and_is_validated_at_the_end() -> None:
    events: list[Any] = []
    async with served("openai") as (server, runtime):
        server.script(FakeReply(text='{"name": "Ada", "date": "1843-07-10"}', chunks=4))
        text = _only_step("extract", stream=True)
        result = await run_example("openai", server, runtime, text,
                                   on_event=lambda sid, e: events.append((sid, e)))
        assert bodies(server)[0]["stream"] is True
    assert result.state["extracted"] == {"name": "Ada", "date": "1843-07-10"}
    streamed = "".join(getattr(e, "text", "") for _, e in events)
    assert streamed == '{"name": "Ada", "date": "1843-07-10"}'


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_forced_tool_mode(vendor: str) -> None:
    async with served(vendor) as (server, runtime):
        server.script(
            FakeReply(text="I think it is Ada."),  # text instead of the call: re-asked
            FakeReply(tool_calls=[("record_person", {"name": "Ada", "date": "1843-07-10"})]),
        )
        result = await run_example(vendor, server, runtime,
                                   EXAMPLES / "structured_tool_call.yaml")
        sent = bodies(server)
    assert result.status.value == "success", result.error
    assert result.state["extracted"] == {"name": "Ada", "date": "1843-07-10"}
    assert len(sent) == 2
    for body in sent:  # the re-ask is forced too
        if vendor == "openai":
            assert body["tool_choice"] == {"type": "function",
                                           "function": {"name": "record_person"}}
            assert [t["function"]["name"] for t in body["tools"]] == ["record_person"]
            assert "response_format" not in body
        else:
            assert body["tool_choice"]["type"] == "tool"
            assert body["tool_choice"]["name"] == "record_person"
            assert [t["name"] for t in body["tools"]] == ["record_person"]
            assert body["messages"][-1]["role"] == "user"  # no `{` prefill


def test_forced_tool_mode_is_refused_at_load_where_a_tool_choice_cant_be_forced() -> None:
    text = (EXAMPLES / "structured_tool_call.yaml").read_text().replace(
        "steps:", "config: {provider: ollama, model: llama3.2:3b}\nsteps:")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(text, filename="tool.yaml")
    line = 1 + text.splitlines().index("    response_schema:")
    err = info.value.errors[0]
    assert "can't be forced to call a tool" in err.message and err.line == line
    assert str(err).startswith(f"tool.yaml:{line}:") and "drop mode: tool" in err.message


BASE = "name: t\nsteps:\n  - id: s\n    type: llm_call\n    prompt: p\n"


@pytest.mark.parametrize(("block", "line", "message"), [
    ("    response_schema: {type: pydantic, model: nowhere.at_all.Model}\n", 6,
     "could not be imported"),
    ("    response_schema:\n      type: json_schema\n      schema: {type: object, "
     "properties: {a: {type: 12}}}\n", 6, "not valid JSON Schema"),
    ("    response_schema:\n      type: json_schema\n      schema: {type: object, "
     "additionalProperties: true}\n", 6, "additionalProperties"),
    ("    tools: [x]\n    response_schema: {type: json_object}\n", 3, "can't share a step"),
    ("    response_schema: {type: json_object, mode: forced}\n", 6, "mode"),
])
def test_schema_problems_are_load_errors_with_a_line(block: str, line: int,
                                                     message: str) -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(BASE + block, filename="s.yaml")
    errors: list[WorkflowError] = info.value.errors
    assert any(message in e.message and e.line == line for e in errors), [
        (e.line, e.message) for e in errors]


def _only_step(step_id: str, **extra: Any) -> str:
    """The example file cut down to one of its steps (as YAML text), with `extra` fields."""
    import yaml

    data = yaml.safe_load((EXAMPLES / "structured_output.yaml").read_text())
    data["steps"] = [{**s, **extra} for s in data["steps"] if s["id"] == step_id]
    return yaml.safe_dump(data, sort_keys=False)
