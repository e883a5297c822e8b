"""Loading: every problem named with file:line and field, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import TemplateError, WorkflowError
from agentloom.workflow import WorkflowProblems, load_workflow, load_workflow_text


def problems(text: str, tmp_path: Path) -> list[WorkflowError]:
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(path)
    for err in info.value.errors:
        assert err.file == str(path)
        assert err.line is not None
        assert str(err).startswith(f"{path}:{err.line}: ")
    return info.value.errors


def test_typo_gets_did_you_mean_with_line_and_field(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n  - id: s\n    type: llm_call\n    prompt: hi\n"
                    "    temprature: 0.2\n", tmp_path)
    assert len(errs) == 1
    e = errs[0]
    assert e.line == 6
    assert e.field == "steps[0].temprature"
    assert e.message == ("unknown field 'temprature' in step 's' (llm_call); "
                         "did you mean 'temperature'?")


def test_unknown_config_field_and_nested_retry_field(tmp_path: Path) -> None:
    errs = problems("name: x\nconfig:\n  max_concurent_steps: 2\nsteps:\n  - id: s\n"
                    "    type: llm_call\n    prompt: hi\n    retry: {max_retrys: 2}\n", tmp_path)
    msgs = {e.line: e.message for e in errs}
    assert "did you mean 'max_concurrent_steps'?" in msgs[3]
    assert "did you mean 'max_retries'?" in msgs[8]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "1e999"])
def test_a_number_that_is_not_finite_is_refused_by_line(tmp_path: Path, value: str) -> None:
    # `.inf` reached the request as `Infinity`, which the provider refused with a 400.
    errs = problems("name: x\nconfig:\n  timeout: " + value + "\nsteps:\n  - id: s\n"
                    "    type: llm_call\n    prompt: hi\n    temperature: " + value + "\n"
                    "  - {id: t, type: llm_call, prompt: hi, timeout: " + value + "}\n",
                    tmp_path)
    assert sorted((e.line, e.field) for e in errs) == [
        (3, "config.timeout"), (8, "steps[0].temperature"), (9, "steps[1].timeout")]
    assert all("Input should be a finite number" in e.message for e in errs)


def test_cycle_is_named(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n"
                    "  - {id: a, type: llm_call, prompt: p, depends_on: [c]}\n"
                    "  - {id: b, type: llm_call, prompt: p, depends_on: [a]}\n"
                    "  - {id: c, type: llm_call, prompt: p, depends_on: [b]}\n", tmp_path)
    assert len(errs) == 1
    assert errs[0].message.startswith("dependency cycle: ")
    cycle = errs[0].message.removeprefix("dependency cycle: ").split(" -> ")
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}


def test_duplicate_id_and_unknown_dependency(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n"
                    "  - {id: a, type: llm_call, prompt: p}\n"
                    "  - {id: a, type: llm_call, prompt: p}\n"
                    "  - {id: b, type: llm_call, prompt: p, depends_on: [aa]}\n", tmp_path)
    by_line = {e.line: e.message for e in errs}
    assert by_line[4] == "duplicate step id 'a' (first at line 3)"
    assert by_line[5] == "step 'b' depends on unknown step 'aa'; did you mean 'a'?"


def test_broken_template_fails_at_load(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n  - id: a\n    type: llm_call\n"
                    "    system_prompt: ok\n    prompt: 'Give JSON like {\"a\": 1}'\n", tmp_path)
    assert len(errs) == 1
    assert isinstance(errs[0], TemplateError)
    assert errs[0].line == 6 and errs[0].field == "prompt"
    assert str(errs[0]).split(": ", 1)[1].startswith("Prompt template error: step 'a', prompt")


def test_unknown_step_reference_and_missing_dependency(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n"
                    "  - {id: a, type: llm_call, prompt: p}\n"
                    "  - {id: b, type: llm_call, prompt: '{steps.nope.output}'}\n"
                    "  - {id: c, type: llm_call, prompt: '{steps.a.output}'}\n", tmp_path)
    assert all(isinstance(e, TemplateError) for e in errs)
    assert "names unknown step 'nope'" in errs[0].message
    assert "does not depend on" in errs[1].message and errs[1].line == 5


def test_every_problem_is_listed(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n"
                    "  - {id: a, type: llm_cal, prompt: p}\n"
                    "  - {id: b, type: llm_call, prompt: '{state.x', temprature: 1}\n"
                    "  - {id: c, type: llm_call}\n"
                    "  - {id: d, type: llm_call, prompt: p, max_tokens: lots}\n", tmp_path)
    lines = sorted(e.line for e in errs if e.line)
    assert lines == [3, 4, 4, 5, 6]
    text = "\n".join(e.message for e in errs)
    assert "did you mean 'llm_call'?" in text
    assert "needs a 'prompt'" in text
    assert ("step 'd' (llm_call), max_tokens: expected a whole number of tokens, "
            "got the text 'lots'") in text


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    errs = problems("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: p\n"
                    "    prompt: q\n", tmp_path)
    assert errs[0].line == 6 and "duplicate key 'prompt'" in errs[0].message


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("name: x\nsteps:\n  - id: a\n   bad: [\n")
    with pytest.raises(WorkflowError) as info:
        load_workflow(path)
    assert info.value.line is not None and "invalid YAML" in str(info.value)


def test_tools_and_response_schema_cannot_share_a_step() -> None:
    with pytest.raises(WorkflowProblems, match="can't share a step"):
        load_workflow_text("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: p\n"
                           "    tools: [http_request]\n    response_schema: {type: json_object}\n")


def test_claude_thinking_needs_budget_and_room() -> None:
    base = "name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: p\n"
    with pytest.raises(WorkflowProblems, match=r"needs thinking\.budget_tokens"):
        load_workflow_text(base + "    model: claude-sonnet-4-5\n    thinking: {enabled: true}\n")
    with pytest.raises(WorkflowProblems, match="must be above"):
        load_workflow_text(base + "    model: claude-sonnet-4-5\n    max_tokens: 1100\n"
                           "    thinking: {enabled: true, budget_tokens: 1200}\n")


def test_full_llm_call_schema_loads() -> None:
    wf = load_workflow_text("""\
name: all
version: 1.0
config: {model: m, stream: true, max_concurrent_steps: 1024, timeout: 5, budget_usd: 1,
         on_step_failure: continue, max_retries: 0, sandbox: {enabled: true}}
providers:
  mine: {type: openai, base_url: "http://127.0.0.1:1/v1", api_key_env: MY_KEY}
state: {chat: {messages: []}}
state_schema: {secret: {redact: true}}
steps:
  - id: a
    type: llm_call
    system_prompt: sys
    prompt: p
    model: m2
    provider: mine
    temperature: 7
    max_tokens: 10
    stream: false
    attachments: [{type: pdf, source: "{state.path}", media_type: application/pdf}]
    thinking: {enabled: true, budget_tokens: 5, level: low, capture_reasoning: false}
    tools: [http_request, {name: file_read, description: d, parameters: {type: object}}]
    tool_choice: {name: http_request}
    max_tool_iterations: 3
    conversation: state.chat
    speaker: alice
    timeout: 1.5
    retry: {max_retries: 1, backoff_base: 1.5, backoff_max: 3, jitter: 0.1,
            retryable_status_codes: [503]}
    output: out
""")
    assert wf.definition.version == "1.0"
    assert wf.config.max_concurrent_steps == 1024
    assert wf.nodes["a"].step.temperature == 7  # sent as given, no range check


def test_max_concurrent_steps_range(tmp_path: Path) -> None:
    errs = problems("name: x\nconfig: {max_concurrent_steps: 0}\nsteps:\n"
                    "  - {id: a, type: llm_call, prompt: p}\n", tmp_path)
    assert errs[0].line == 2 and errs[0].field == "config.max_concurrent_steps"


def test_strict_outputs_refuses_parallel_writers_but_not_router_branches(tmp_path: Path) -> None:
    base = ("name: x\nconfig: {strict_outputs: %s}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: p, output: same}\n"
            "  - {id: b, type: llm_call, prompt: p, output: same}\n"
            "  - {id: c, type: llm_call, prompt: p, output: same, depends_on: [a, b]}\n"
            "  - id: r\n    type: router\n    depends_on: [c]\n"
            "    conditions: [{expression: 'True', target: d}]\n    default: e\n"
            "  - {id: d, type: llm_call, prompt: p, output: branch, depends_on: [r]}\n"
            "  - {id: e, type: llm_call, prompt: p, output: branch, depends_on: [r]}\n")
    load_workflow_text(base % "false")
    errs = problems(base % "true", tmp_path)
    assert len(errs) == 1
    assert errs[0].line == 5
    assert "steps 'a' and 'b' may run at the same time and both write 'same'" in errs[0].message


def test_unknown_state_key_is_a_warning_not_an_error() -> None:
    wf = load_workflow_text("name: w\nstate: {question: q}\nsteps:\n"
                            "  - {id: a, type: llm_call, prompt: '{state.questoin}', output: ans}\n"
                            "  - {id: b, type: llm_call, prompt: '{state.ans}', depends_on: [a]}\n")
    assert len(wf.warnings) == 1
    assert wf.warnings[0].startswith("<string>:4: warning: step 'a' reads {state.questoin}")
