"""`agentloom resume RUN_ID --retry-failed`: a failed run goes on from where it failed.
Its failed steps run again, and the steps they held up; the steps that succeeded are
kept, and a model reply stored before the failure (a map's other items) is served from
the store, so nothing that worked is asked (or paid for) twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_thread import Flaky, cli_serving

from agentloom.cli import main

CHAIN = """\
name: chain
config: {model: gpt-4o-mini}
steps:
  - {id: a, type: llm_call, prompt: "a first", output: ra}
  - {id: b, type: llm_call, depends_on: [a], prompt: "b after {state.ra}", output: rb}
  - {id: c, type: llm_call, depends_on: [b], prompt: "c after {state.rb}", output: rc}
"""

MAP = """\
name: fan
config: {model: gpt-4o-mini}
state: {items: ["x1", "b-x2", "x3"]}
steps:
  - id: each
    type: map
    over: state.items
    step: {id: one, type: llm_call, prompt: "{state.item} please"}
    output: outs
  - {id: after, type: llm_call, depends_on: [each], prompt: "sum of {state.outs}",
     output: total}
"""


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Flaky]:
    model = Flaky()
    with cli_serving(monkeypatch, tmp_path, model):
        yield model


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_failed_run_retries_its_failed_steps_and_keeps_the_rest(
        flaky: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "chain.yaml").write_text(CHAIN)
    code, _, err = _run(capsys, "run", "chain.yaml", "--run-id", "r1")
    assert code == 1 and "step 'b' failed" in err
    assert "retry its failed steps with: agentloom resume r1 --retry-failed" in err
    # Without the flag the run stays finished, and the refusal says how.
    code, _, err = _run(capsys, "resume", "r1")
    assert code == 1
    assert "run r1 failed; `agentloom resume r1 --retry-failed` runs its failed steps" in err
    flaky.failing = False
    code, out, err = _run(capsys, "resume", "r1", "--retry-failed", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "success"
    assert result["state"]["rc"] == "done c after done b after done a first"
    # `a` was asked once; `b` once more (its failure, then its retry); `c` once.
    assert flaky.prompts == ["a first", "b after done a first", "b after done a first",
                             "c after done b after done a first"]
    code, out, _ = _run(capsys, "runs", "--json")
    assert [r["status"] for r in json.loads(out)] == ["succeeded"]
    # A run that succeeded has nothing to retry.
    code, _, err = _run(capsys, "resume", "r1", "--retry-failed")
    assert code == 1 and "already finished (succeeded)" in err


def test_a_failed_map_item_is_asked_again_and_the_others_are_served(
        flaky: Flaky, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "fan.yaml").write_text(MAP)
    code, _, err = _run(capsys, "run", "fan.yaml", "--run-id", "m1")
    assert code == 1 and "1 of 3 items failed" in err
    flaky.failing = False
    code, out, err = _run(capsys, "resume", "m1", "--retry-failed", "--json")
    assert code == 0, err
    outs = json.loads(out)["state"]["outs"]
    assert [o["output"] for o in outs] == ["done x1 please", "done b-x2 please",
                                           "done x3 please"]
    # x1 and x3 answered before the failure: their replies came from the store.
    assert sorted(flaky.prompts[:3]) == ["b-x2 please", "x1 please", "x3 please"]
    assert flaky.prompts[3] == "b-x2 please"
    assert len(flaky.prompts) == 5 and flaky.prompts[4].startswith("sum of")
