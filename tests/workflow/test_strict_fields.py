"""Numbers and flags of the workflow format are read as written, never converted.

Pydantic's lax mode took `timeout: true` for 1 second, `retry: {max_retries: true}` for
one retry, `budget_usd: false` for a budget of $0, `stream: 1` for true and a map's
`concurrency: '3'` (text) for 3. Each is a mistake, now named by file, line and field
with what was expected. An int is still a number (`timeout: 30`), and `1e3`, which
PyYAML (YAML 1.1) reads as text, is still the number it was read as before.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agentloom.errors import WorkflowError
from agentloom.recording.mock_responses import MAX_LATENCY_MS
from agentloom.workflow import WorkflowProblems, load_workflow
from agentloom.workflow.schema import other_steps, steps, tools, workflow

STEP = "  - {id: a, type: llm_call, prompt: hi}\n"


def problems(text: str, tmp_path: Path) -> list[WorkflowError]:
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(path)
    for err in info.value.errors:
        assert err.file == str(path) and err.line is not None
        assert str(err).startswith(f"{path}:{err.line}: ")
    return info.value.errors


def loads(text: str, tmp_path: Path) -> Any:
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    return load_workflow(path)


@pytest.mark.parametrize(("text", "line", "field", "message"), [
    ("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n    timeout: true\n",
     6, "steps[0].timeout",
     "step 'a' (llm_call), timeout: expected a number of seconds, got true"),
    ("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
     "    retry: {max_retries: true}\n",
     6, "steps[0].retry.max_retries",
     "step 'a' (llm_call), retry.max_retries: expected a whole number, got true"),
    ("name: x\nsteps:\n  - id: m\n    type: map\n    over: state.items\n"
     "    concurrency: '3'\n    step: {id: s, type: llm_call, prompt: hi}\n",
     6, "steps[0].concurrency",
     "step 'm' (map), concurrency: expected a whole number, got the text '3' "
     "(write it without quotes)"),
    ("name: x\nsteps:\n  - id: m\n    type: map\n    over: state.items\n"
     "    max_items: 2.5\n    step: {id: s, type: llm_call, prompt: hi}\n",
     6, "steps[0].max_items", "step 'm' (map), max_items: expected a whole number, got 2.5"),
    ("name: x\nconfig:\n  budget_usd: false\nsteps:\n" + STEP,
     3, "config.budget_usd", "config.budget_usd: expected a number of US dollars, got false"),
    ("name: x\nconfig:\n  stream: 1\nsteps:\n" + STEP,
     3, "config.stream", "config.stream: expected true or false, got 1"),
    ("name: x\nconfig:\n  max_concurrent_steps: '3'\nsteps:\n" + STEP,
     3, "config.max_concurrent_steps",
     "config.max_concurrent_steps: expected a whole number, got the text '3' "
     "(write it without quotes)"),
    ("name: x\nconfig:\n  max_retries: true\nsteps:\n" + STEP,
     3, "config.max_retries", "config.max_retries: expected a whole number, got true"),
    ("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi, stream: 'true'}\n",
     3, "steps[0].stream",
     "step 'a' (llm_call), stream: expected true or false, got the text 'true' "
     "(write it without quotes)"),
    ("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi, temperature: true}\n",
     3, "steps[0].temperature", "step 'a' (llm_call), temperature: expected a number, got true"),
    ("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi, max_tokens: 1e6}\n",
     3, "steps[0].max_tokens",
     "step 'a' (llm_call), max_tokens: expected a whole number of tokens, got 1e6"),
    ("name: x\nsteps:\n  - {id: q, type: ask, question: q, timeout_seconds: '60'}\n",
     3, "steps[0].timeout_seconds",
     "step 'q' (ask), timeout_seconds: expected a number of seconds, got the text '60' "
     "(write it without quotes)"),
    ("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
     "    retry: {retryable_status_codes: [429, true]}\n",
     6, "steps[0].retry.retryable_status_codes[1]",
     "step 'a' (llm_call), retry.retryable_status_codes[1]: expected a whole number, got true"),
    ("name: x\nagents:\n  w:\n    model: m\n    limits: {max_tool_iterations: true}\n"
     "steps:\n  - {id: a, type: agent, agent: w, prompt: hi}\n",
     5, "agents.w.limits.max_tool_iterations",
     "agents.w.limits.max_tool_iterations: expected a whole number, got true"),
    ("name: x\nmcp_servers:\n  s:\n    command: srv\n    timeout: true\nsteps:\n" + STEP,
     5, "mcp_servers.s.timeout",
     "mcp_servers.s.timeout: expected a number of seconds, got true"),
    ("name: x\nconfig:\n  sandbox:\n    max_output_bytes: true\nsteps:\n" + STEP,
     4, "config.sandbox.max_output_bytes",
     "config.sandbox.max_output_bytes: expected a whole number of bytes, got true"),
    ("name: x\nconfig:\n  sandbox:\n    allow_network: 1\nsteps:\n" + STEP,
     4, "config.sandbox.allow_network",
     "config.sandbox.allow_network: expected true or false, got 1"),
    ("name: x\nstate_schema:\n  k: {redact: 1}\nsteps:\n" + STEP,
     3, "state_schema.k.redact", "state_schema.k.redact: expected true or false, got 1"),
])
def test_a_value_of_the_wrong_kind_is_named_by_line_and_field(
        tmp_path: Path, text: str, line: int, field: str, message: str) -> None:
    errs = problems(text, tmp_path)
    assert [(e.line, e.field, e.message) for e in errs] == [(line, field, message)]


def test_numbers_written_as_numbers_still_load(tmp_path: Path) -> None:
    wf = loads("name: x\nconfig:\n  timeout: 1e3\n  budget_usd: 1\n  stream: yes\n"
               "steps:\n  - id: a\n    type: llm_call\n    prompt: hi\n    timeout: 30\n"
               "    temperature: 0\n    max_tokens: ~\n"
               "    retry: {max_retries: 0, backoff_base: 2, backoff_max: 1.5e1, jitter: 0}\n",
               tmp_path)
    config, step = wf.definition.config, wf.definition.steps[0]
    assert (config.timeout, config.budget_usd, config.stream) == (1000.0, 1.0, True)
    assert (step.timeout, step.temperature, step.max_tokens) == (30.0, 0.0, None)
    assert step.retry is not None and step.retry.backoff_max == 15.0
    assert step.retry.max_retries == 0 and step.retry.jitter == 0


def test_a_step_retry_waits_ten_minutes_at_most(tmp_path: Path) -> None:
    # backoff_max: 1e9 with backoff_base: 1e9 slept 31 years before the second retry.
    errs = problems("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
                    "    retry:\n      backoff_base: 1.0e+9\n      backoff_max: 1.0e+9\n",
                    tmp_path)
    assert [(e.line, e.field) for e in errs] == [(8, "steps[0].retry.backoff_max")]
    assert "less than or equal to 600" in errs[0].message
    wf = loads("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi, "
               "retry: {backoff_max: 600}}\n", tmp_path)
    assert wf.definition.steps[0].retry.backoff_max == 600.0


def test_a_mock_delay_is_an_hour_at_most_as_in_a_mock_file(tmp_path: Path) -> None:
    # latency_ms: 1e300 slept for ever before the first mock reply.
    assert workflow.MAX_MOCK_LATENCY_MS == MAX_LATENCY_MS
    errs = problems("name: x\nconfig:\n  provider: mock\n  latency_ms: 1.0e+300\n"
                    "steps:\n" + STEP, tmp_path)
    assert [(e.line, e.field) for e in errs] == [(4, "config.latency_ms")]
    assert "less than or equal to 3600000" in errs[0].message


def test_a_status_code_is_an_http_status(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: hi, "
                    "retry: {retryable_status_codes: [429, 4290]}}\n", tmp_path)
    assert [e.field for e in errs] == ["steps[0].retry.retryable_status_codes[1]"]


def test_a_rate_limit_below_one_request_a_minute_is_refused(tmp_path: Path) -> None:
    # rpm: 0.5 made a bucket that never held a whole request: the first call waited
    # for ever, a minute at a time.
    errs = problems("name: x\nconfig:\n  rate_limits:\n    openai:\n      rpm: 0.5\n"
                    "steps:\n" + STEP, tmp_path)
    assert [(e.line, e.field, e.message) for e in errs] == [
        (5, "config.rate_limits.openai.rpm",
         "config.rate_limits.openai.rpm: expected a number >= 1, got 0.5")]


def test_a_profile_error_points_at_the_profile_field(tmp_path: Path) -> None:
    errs = problems("name: x\nprofiles:\n  fast:\n    model: m\n    retries: 100000000\n"
                    "steps:\n  - {id: a, type: llm_call, prompt: hi, profile: fast}\n",
                    tmp_path)
    assert [(e.line, e.field, e.message) for e in errs] == [
        (5, "profiles.fast.retries",
         "profiles.fast.retries: expected a whole number from 0 to 100, got 100000000")]


def test_a_fallback_entry_error_points_at_the_entry(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
                    "    fallback:\n      - gpt-4o-mini\n      - {provider: openai}\n", tmp_path)
    assert [(e.line, e.field) for e in errs] == [(8, "steps[0].fallback[1]")]
    assert errs[0].message.startswith("step 'a' (llm_call), fallback[1]: each fallback entry")


# --- every field of the format, by its type ----------------------------------------------

def _flat(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _flat(typing.get_args(annotation)[0])
    if origin is None and not isinstance(annotation, types.UnionType):
        return [annotation]
    return [a for arg in typing.get_args(annotation) for a in _flat(arg)]


def _models() -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [workflow.WorkflowDefinition, *other_steps.STEP_TYPES.values()]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for info in model.model_fields.values():
            todo += [a for a in _flat(info.annotation)
                     if isinstance(a, type) and issubclass(a, BaseModel)]
    return seen


_BASE: dict[type[BaseModel], dict[str, Any]] = {
    steps.LLMCallStep: {"id": "s", "type": "llm_call", "prompt": "p"},
    other_steps.ToolStep: {"id": "s", "type": "tool", "tool_name": "t"},
    other_steps.RouterStep: {"id": "s", "type": "router"},
    other_steps.SubworkflowStep: {"id": "s", "type": "subworkflow", "workflow_path": "x"},
    other_steps.MapStep: {"id": "s", "type": "map", "over": "state.x", "step": {}},
    other_steps.ApprovalGateStep: {"id": "s", "type": "approval_gate"},
    other_steps.AskStep: {"id": "s", "type": "ask", "question": "q"},
    other_steps.AgentStep: {"id": "s", "type": "agent", "agent": "a", "prompt": "p"},
    other_steps.Notify: {"url": "http://127.0.0.1:9/hook"},
    tools.MCPServerDecl: {"command": "x"},
    tools.FunctionDecl: {"description": "d", "return": "r"},
    steps.Attachment: {"source": "x"},
    steps.NamedChoice: {"name": "x"},
    steps.ToolDecl: {"name": "x"},
    other_steps.Condition: {"expression": "x", "target": "y"},
}
_WRONG = {int: [True, False, "3", 3.0, 2.5, "1e3"], float: [True, False, "3", "0.5"],
          bool: [1, 0, "true", "yes", 1.0]}


def _fields() -> list[tuple[type[BaseModel], str, type, Any]]:
    out = []
    for model in _models():
        if model in (workflow.WorkflowDefinition, steps.StepBase):
            continue
        for name, info in model.model_fields.items():
            kinds = {a for a in _flat(info.annotation) if a in (int, float, bool)}
            if not kinds and typing.get_origin(info.annotation) is list:
                kinds = {a for a in _flat(typing.get_args(info.annotation)[0])
                         if a in (int, float, bool)}
            for kind in kinds:
                for value in _WRONG[kind]:
                    if len(kinds) > 1 and not isinstance(value, str):
                        continue  # `jitter` takes a flag or a fraction: only text is wrong
                    out.append((model, info.alias or name, kind, value))
    return out


@pytest.mark.parametrize(("model", "key", "kind", "value"), _fields(),
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_no_number_or_flag_field_converts_another_kind(
        model: type[BaseModel], key: str, kind: type, value: Any) -> None:
    info = next(i for n, i in model.model_fields.items() if key in (n, i.alias))
    is_list = typing.get_origin(info.annotation) is list
    with pytest.raises(ValidationError):
        model.model_validate({**_BASE.get(model, {}), key: [value] if is_list else value})
