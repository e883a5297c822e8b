"""`validate`'s static checks of state reads: races, missing literal paths, routers."""

from __future__ import annotations

from pathlib import Path

from agentloom.workflow import load_workflow, load_workflow_text


def _warnings(text: str) -> list[str]:
    return load_workflow_text(text).warnings


def test_reading_a_key_written_by_a_step_not_depended_on_is_a_race() -> None:
    warnings = _warnings("""\
name: w
steps:
  - {id: write, type: llm_call, prompt: a, output: result}
  - {id: read, type: llm_call, prompt: "got {state.result}"}
""")
    assert warnings == [
        "<string>:4: warning: step 'read' reads {state.result}, which only step(s) 'write' "
        "write, and 'read' does not depend on them: it may run first; add depends_on"]


def test_depending_through_another_step_is_fine() -> None:
    assert _warnings("""\
name: w
steps:
  - {id: write, type: llm_call, prompt: a, output: result}
  - {id: mid, type: llm_call, prompt: b, depends_on: [write]}
  - {id: read, type: llm_call, prompt: "got {state.result}", depends_on: [mid]}
""") == []


def test_a_path_missing_from_the_files_literal_state() -> None:
    warnings = _warnings("""\
name: w
state: {user: {name: Ada, langs: [py]}}
steps:
  - {id: a, type: llm_call, prompt: "{state.user.name} {state.user.langs[0]}"}
  - {id: b, type: llm_call, prompt: "{state.user.nmae}"}
""")
    assert len(warnings) == 1
    assert "step 'b' reads {state.user.nmae}, but the file's state has no 'user.nmae'" \
        in warnings[0]
    assert warnings[0].startswith("<string>:5:")


def test_router_conditions_are_checked_too() -> None:
    warnings = _warnings("""\
name: w
steps:
  - {id: classify, type: llm_call, prompt: a, output: kind}
  - id: route
    type: router
    conditions:
      - {expression: "state.kind.lower() == 'x' or state.other == 1", target: x}
    default: x
  - {id: x, type: llm_call, prompt: b, depends_on: [route]}
""")
    assert any("step 'route' reads state.kind, which only step(s) 'classify' write" in w
               for w in warnings)
    assert not any("kind.lower" in w for w in warnings)
    assert any("router 'route' reads state.other, which neither" in w for w in warnings)
    assert all(":7:" in w for w in warnings)


def test_the_public_sandbox_example_has_a_real_race() -> None:
    path = Path("/work/shared/compat/agentloom-examples/17_sandbox_allowed.yaml")
    if not path.is_file():
        return
    warnings = load_workflow(path).warnings
    assert any("'write_output' reads {state.echo_result}" in w for w in warnings)


def test_map_over_a_literal_that_is_not_a_list_and_over_a_race() -> None:
    warnings = _warnings("""\
name: w
state: {names: "ada, bob"}
steps:
  - {id: split, type: llm_call, prompt: a, output: parts}
  - id: each
    type: map
    over: state.names
    step: {id: one, type: llm_call, prompt: "{state.item}"}
  - id: each2
    type: map
    over: state.parts
    step: {id: two, type: llm_call, prompt: "{state.item}"}
""")
    assert any(w.startswith("<string>:7:") and
               "map 'each' runs over state.names, which the file's state sets to text, "
               "not a list" in w for w in warnings)
    assert any("step 'each2' reads state.parts, which only step(s) 'split' write" in w
               for w in warnings)
