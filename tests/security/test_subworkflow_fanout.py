"""A tree of small files that names the same file from many steps stands for an
exponential number of nested runs: ten steps naming a file whose ten steps name the
next, six files deep, is a million runs in seven files of 400 bytes. Loading read every
file once per path to it, so `agentloom validate` ran for minutes and took gigabytes, and
a problem in the last file was repeated once per path in one message. Now each file is
loaded once per depth, the steps the tree stands for are counted (at most 10,000), and a
child's problems are summed up past 1,000 characters."""

from __future__ import annotations

from pathlib import Path

from bounds_helpers import run_cli

from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import load_workflow

LEAF_OK = ("name: leaf\nsteps:\n"
           "  - {id: t, type: tool, tool_name: file_read, tool_args: {path: x}}\n")
LEAF_BROKEN = "name: leaf\nsteps:\n  - {id: t, type: tool, tool_name: file_read, bogus: 1}\n"


def _tree(root: Path, depth: int, fanout: int, leaf: str) -> Path:
    for level in range(depth):
        steps = "".join(f"  - {{id: s{k}, type: subworkflow, workflow_path: f{level + 1}.yaml}}\n"
                        for k in range(fanout))
        (root / f"f{level}.yaml").write_text(f"name: f{level}\nsteps:\n{steps}")
    (root / f"f{depth}.yaml").write_text(leaf)
    return root / "f0.yaml"


def test_a_million_runs_in_seven_small_files_is_refused_at_once(tmp_path: Path) -> None:
    top = _tree(tmp_path, 6, 10, LEAF_OK)
    child = run_cli(["validate", top.name], tmp_path)
    assert not child.killed and child.returncode == 1
    assert "subworkflows expand to more than 10000 steps" in child.stderr
    assert "(each file counted as often as it is named)" in child.stderr
    assert len(child.stderr) < 20_000  # ten lines, one per step of f0.yaml
    assert child.peak_rss_mb < 200


def test_a_problem_deep_in_the_tree_is_told_once_per_step_not_once_per_path(
        tmp_path: Path) -> None:
    top = _tree(tmp_path, 5, 10, LEAF_BROKEN)
    child = run_cli(["validate", top.name], tmp_path)
    assert not child.killed and child.returncode == 1
    lines = child.stderr.splitlines()
    assert lines[-1] == "10 problems found in f0.yaml"
    for line in lines[:-1]:
        assert "f5.yaml:3: unknown field 'bogus' in step 't' (tool)" in line
        assert line.endswith("more")  # what didn't fit is counted, not repeated
        assert len(line) < 3_000


def test_a_file_named_by_several_steps_is_loaded_once_and_runs_for_each(
        tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    (tmp_path / "c.yaml").write_text(
        "name: c\nsteps:\n  - {id: say, type: llm_call, prompt: 'hi {state.who}', "
        "output: said}\n")
    (tmp_path / "mid.yaml").write_text(
        "name: mid\nsteps:\n"
        "  - {id: a, type: subworkflow, workflow_path: c.yaml, isolated_state: true,\n"
        "     input: {who: ann}, return_keys: [said]}\n"
        "  - {id: b, type: subworkflow, workflow_path: c.yaml, isolated_state: true,\n"
        "     input: {who: bo}, return_keys: [said]}\n")
    (tmp_path / "root.yaml").write_text(
        "name: root\nconfig: {model: gpt-4o-mini}\nsteps:\n"
        "  - {id: x, type: subworkflow, workflow_path: mid.yaml}\n"
        "  - {id: y, type: subworkflow, workflow_path: c.yaml, isolated_state: true,\n"
        "     input: {who: cy}, return_keys: [said]}\n")
    wf = load_workflow(tmp_path / "root.yaml")
    mid = wf.nodes["x"].prepared.child
    # One load of c.yaml at each depth it is named from: both of mid's steps share it.
    assert mid.nodes["a"].prepared.child is mid.nodes["b"].prepared.child
    assert wf.nodes["y"].prepared.child is not mid.nodes["a"].prepared.child
    # Each step still runs it, with its own input.
    child = run_cli(["run", "root.yaml", "--no-checkpoint"], tmp_path, env={
        "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": openai_server.openai_base_url})
    assert child.returncode == 0, child.stderr
    prompts = sorted(r.json["messages"][-1]["content"] for r in openai_server.requests)
    assert prompts == ["hi ann", "hi bo", "hi cy"]
    # A later load reads the files again, as they are then.
    (tmp_path / "c.yaml").write_text(
        (tmp_path / "c.yaml").read_text().replace("name: c\n", "name: c2\n"))
    again = load_workflow(tmp_path / "root.yaml")
    assert again.nodes["y"].prepared.child.name == "c2"


def test_a_tree_under_the_bound_loads(tmp_path: Path) -> None:
    top = _tree(tmp_path, 3, 10, LEAF_OK)  # 10 + 100 + 1,000 + 1,000 leaf steps
    child = run_cli(["validate", top.name], tmp_path)
    assert child.returncode == 0, child.stderr


def test_a_tree_named_from_an_inline_block_names_the_file_that_holds_it(
        tmp_path: Path) -> None:
    _tree(tmp_path, 3, 10, LEAF_OK)  # f0.yaml stands for 2,110 steps
    named = "".join(f"      - {{id: s{k}, type: subworkflow, workflow_path: f0.yaml}}\n"
                    for k in range(5))
    (tmp_path / "root.yaml").write_text(
        "name: root\nsteps:\n  - id: inner\n    type: subworkflow\n"
        f"    workflow_inline:\n      name: inner\n      steps:\n{named}".replace(
            "      - {", "        - {"))
    child = run_cli(["validate", "root.yaml"], tmp_path)
    assert child.returncode == 1
    # The inline block names no file of its own: the file holding it is named.
    assert ("with f0.yaml named here, root.yaml (step 'inner' workflow_inline) stands for "
            "10550") in child.stderr, child.stderr
