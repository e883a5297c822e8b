"""Through the engine, a durable run writes a row per step (its result once, the state
keys it changed) and what those rows rebuild is the run's live state, however a step
changed it: a nested output path, a conversation, an on_error block, a subworkflow."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agentloom.store import SqliteStore
from agentloom.store._serde import JsonSerializer
from agentloom.testing.scripted import FunctionModel
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun


class _Factory:
    default_model = "m"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


def _chain(n: int) -> str:
    lines = ["name: chain", "steps:"]
    for i in range(n):
        dep = f", depends_on: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}, type: llm_call, prompt: p{i}{dep}, output: o{i}}}")
    return "\n".join(lines) + "\n"


def _rows(path: Path, table: str) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as conn:
        rows = [json.loads(r[0]) for r in conn.execute(
            f"SELECT payload FROM {table} ORDER BY seq")]
    conn.close()
    return rows


async def test_each_step_result_is_written_once_in_a_row_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    durable = DurableRun(store=store, run_id="r", workflow_hash="h")
    result = await arun_workflow(load_workflow_text(_chain(30)), clients=_Factory(
        FunctionModel(lambda request: "ok " + request.messages[-1].text)), durable=durable)
    assert result.ok
    cp = await store.load_latest("r")
    await store.close()
    assert cp is not None and cp.status == "succeeded"
    assert cp.state == {f"o{i}": f"ok p{i}" for i in range(30)}
    assert sorted(cp.step_results) == sorted(f"s{i}" for i in range(30))
    assert len(_rows(path, "checkpoints")) == 1, "only the run's start is written whole"
    deltas = _rows(path, "checkpoint_deltas")
    assert len(deltas) == 31  # a row per step, and the run's end
    for i, row in enumerate(deltas[:30]):
        assert list(row.get("step_results", {})) == [f"s{i}"], row
        assert row.get("state") == {f"o{i}": f"ok p{i}"}, row
    assert deltas[-1]["status"] == "succeeded" and "state" not in deltas[-1]


FLOW = """\
name: changes
state:
  report: {title: t}
  chat:
    messages:
      - {role: system, content: "be brief"}
steps:
  - {id: a, type: llm_call, prompt: "a", output: report.a}
  - {id: b, type: llm_call, prompt: "b", depends_on: [a], output: report.b}
  - {id: c1, type: llm_call, prompt: "c1", conversation: state.chat, depends_on: [b],
     output: reply_1}
  - {id: c2, type: llm_call, prompt: "c2", conversation: state.chat, depends_on: [c1],
     output: reply_2}
  - id: risky
    type: tool
    tool_name: flaky
    depends_on: [c2]
    output: risky_out
    on_error:
      - {id: fix, type: llm_call, prompt: "fix", output: fixed.how}
  - id: sub
    type: subworkflow
    depends_on: [risky]
    return_keys: [xo]
    workflow_inline:
      name: inner
      steps:
        - {id: x, type: llm_call, prompt: "x", output: xo}
    output: sub_out
  - {id: gate, type: approval_gate, message: "go?", depends_on: [sub], output: verdict}
  - {id: last, type: llm_call, prompt: "last {state.verdict}", depends_on: [gate],
     output: report.last}
"""


def _registry() -> ToolRegistry:
    @tool
    def flaky() -> str:
        """Always fails."""
        raise RuntimeError("no luck")

    reg = ToolRegistry()
    reg.register(flaky)
    return reg


def _plain(value: Any) -> Any:
    serde = JsonSerializer()
    return json.loads(serde.dumps(value))


async def test_what_the_rows_rebuild_is_the_live_state(tmp_path: Path) -> None:
    model = FunctionModel(lambda request: "re " + request.messages[-1].text)
    store = SqliteStore(tmp_path / "runs.db")
    wf = load_workflow_text(FLOW)
    first = DurableRun(store=store, run_id="r", workflow_hash="h")
    result = await arun_workflow(wf, clients=_Factory(model), tools=_registry(),
                                 durable=first)
    assert result.status is RunStatus.PAUSED, result.error
    cp = await store.load_latest("r")
    assert cp is not None and cp.paused is not None and cp.paused.step_id == "gate"
    assert _plain(cp.state) == _plain(result.state)
    assert result.state["report"] == {"title": "t", "a": "re a", "b": "re b"}
    assert result.state["fixed"] == {"how": "re fix"}
    assert len(result.state["chat"]["messages"]) == 5  # system + two turns

    second = DurableRun(store=store, run_id="r", workflow_hash="h", resumed=cp,
                        decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=_Factory(model), tools=_registry(),
                                 durable=second)
    assert result.status is RunStatus.SUCCESS, result.error
    assert second.served_exchanges == 0 and len(model.requests) == 7
    final = await store.load_latest("r")
    await store.close()
    assert final is not None and final.status == "succeeded"
    assert _plain(final.state) == _plain(result.state)
    assert final.state["report"]["last"] == "re last approved"
