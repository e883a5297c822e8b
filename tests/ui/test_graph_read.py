"""The run page reads the graph of a run's unchanged workflow file from the YAML parser's
events; it must give what the full loader gives, and hand anything unusual to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.ui._load import _load_nodes, _plain_nodes
from agentloom.ui._view import graph_nodes
from agentloom.workflow import load_workflow
from agentloom.workflow.durable.run import workflow_hash
from tests.ui.harness import ASK, FLOW, ROOT

FILES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_events_give_the_loaders_steps(path: Path) -> None:
    assert _plain_nodes(path.read_bytes()) == graph_nodes(load_workflow(path).definition.steps)


@pytest.mark.parametrize("text", [FLOW, ASK])
def test_the_events_give_the_loaders_steps_for_the_test_flows(text: str, tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    assert _plain_nodes(text.encode()) == graph_nodes(load_workflow(path).definition.steps)


@pytest.mark.parametrize("text", [
    "name: x\nsteps:\n  - &s {id: a, type: llm_call, prompt: p}\n  - *s\n",  # an alias
    "name: x\nsteps:\n  - {type: llm_call, prompt: p}\n",  # no id
    "name: x\nsteps: {a: 1}\n",
    "- just\n- a list\n",
    "name: [unclosed\n",
])
def test_anything_unusual_goes_to_the_loader(text: str) -> None:
    assert _plain_nodes(text.encode()) is None


def test_a_changed_file_is_loaded_in_full_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW)
    nodes, changed = _load_nodes(str(path), workflow_hash(path.read_bytes()))
    assert not changed and nodes is not None and [n.id for n in nodes][:2] == [
        "outline", "beginners"]
    nodes, changed = _load_nodes(str(path), "sha256:another")
    assert changed and nodes == graph_nodes(load_workflow(path).definition.steps)
