"""`agentloom visualize`: ASCII and Mermaid drawings of the loaded graph."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.cli import main

FLOW = """\
name: drawn
state: {items: [1, 2]}
steps:
  - {id: classify, type: llm_call, prompt: "classify", output: kind}
  - id: route
    type: router
    depends_on: [classify]
    conditions:
      - {expression: "state.kind == 'a \\"quoted\\" <b>'", target: each}
    default: sub
  - id: each
    type: map
    depends_on: [route]
    over: state.items
    concurrency: 3
    step: {id: one, type: llm_call, prompt: "{state.item}"}
  - id: sub
    type: subworkflow
    depends_on: [route]
    workflow_path: child.yaml
    on_error:
      - {id: recover, type: llm_call, prompt: "recover"}
"""
CHILD = """\
name: kid
steps:
  - {id: inner-step, type: llm_call, prompt: "hi"}
"""


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    (tmp_path / "child.yaml").write_text(CHILD)
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW)
    return path


def test_ascii_shows_conditions_blocks_and_children(
        flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visualize", str(flow)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "workflow 'drawn': 4 steps"
    assert "[2] route (router)  <- classify" in out
    assert "if state.kind == 'a \"quoted\" <b>' -> each" in out
    assert "else -> sub" in out
    assert "+- for each item in state.items (at most 3 at once)" in out
    assert "|  [1] one (llm_call)" in out
    assert f"+- subworkflow 'kid' ({flow.parent / 'child.yaml'})" in out
    assert "|  [1] inner-step (llm_call)" in out
    assert "+- on_error" in out and "|  [1] recover (llm_call)" in out


def test_mermaid_is_a_graph_with_labelled_branches_and_subgraphs(
        flow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["visualize", str(flow), "--format", "mermaid"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "graph TD"
    assert '  route{"route<br/>router"}' in lines
    assert ("  route -- \"state.kind == 'a #quot;quoted#quot; #lt;b#gt;'\" --> each"
            in lines)
    assert "  route -. else .-> sub" in lines
    assert "  classify --> route" in lines
    assert any(line.startswith('  subgraph each__0["for each item') for line in lines)
    assert '    sub__0__inner_step["inner-step<br/>llm_call"]' in lines
    assert "  sub -. on_error .-> sub__1" in lines
    assert lines.count("  end") == 3


def test_invalid_file_exits_1_with_the_problems(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nsteps:\n  - {id: a, type: router, default: nowhere}\n")
    assert main(["visualize", str(bad)]) == 1
    assert "nowhere" in capsys.readouterr().err


def test_unknown_format_is_a_usage_error(flow: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["visualize", str(flow), "--format", "dot"])
    assert info.value.code == 2
