"""A `map`'s items share the state instead of copying it, and are still isolated.

Each item used to run on a copy of the whole state: a map of 3,000 items over a state
holding a 3,000-entry list spent 14 s copying the list. Now the state is frozen once for
all items (`lang.frozen`) and an item's write copies only the containers on its path.
These tests hold both halves: no item sees another's writes or changes the parent's
state (by nested `output:` paths, through a tool, through a subworkflow's input), and an
item's view of a big list it doesn't write is the one shared object, not a copy.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from wf_helpers import Factory, echo_model

from agentloom import tool
from agentloom.tools import ToolRegistry
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.engine.context import CURRENT_RUN

ROWS = 50


def _state() -> dict[str, Any]:
    return {"rows": [{"k": i, "tags": ["a"]} for i in range(ROWS)],
            "config": {"mode": "x", "seen": []}}


def _walk(value: Any) -> list[Any]:
    """Every container in `value`."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            out.append(v)
            stack.extend(v)
    return out


def _plain(value: Any) -> bool:
    """Only plain dicts and lists in `value`: nothing shared reached the run's state."""
    return all(type(v) in (dict, list) for v in _walk(value))


class _Seen:
    """What the tools saw of the running item's state, by object."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.texts: list[str] = []


def _tools(seen: _Seen) -> ToolRegistry:
    @tool
    def peek(index: int) -> str:
        """What this item's run holds now."""
        run = CURRENT_RUN.get()
        assert run is not None
        seen.rows.append(run.state["rows"])
        text = json.dumps({"i": index, "config": run.state["config"],
                           "row0": run.state["rows"][0], "mine": run.state.get("mine")})
        seen.texts.append(text)
        return text

    @tool
    def stamp(index: int) -> str:
        """A value for the item to write."""
        return f"item {index}"

    @tool
    def scribble(rows: list[Any], config: dict[str, Any]) -> str:
        """Changes what it is given, in place."""
        rows.clear()
        config["mode"] = "scribbled"
        config["seen"].append("scribbled")
        return "done"

    return ToolRegistry([peek, stamp, scribble])


WRITES = """\
name: m
steps:
  - id: each
    type: map
    over: state.rows
    concurrency: {concurrency}
    steps:
      - {{id: before, type: tool, tool_name: peek, tool_args: {{index: "{{state.index}}"}}}}
      - {{id: nested, type: tool, tool_name: stamp, tool_args: {{index: "{{state.index}}"}},
         output: config.mode, depends_on: [before]}}
      - {{id: deep, type: tool, tool_name: stamp, tool_args: {{index: "{{state.index}}"}},
         output: "rows[0].tags[0]", depends_on: [nested]}}
      - {{id: row, type: tool, tool_name: stamp, tool_args: {{index: "{{state.index}}"}},
         output: "item.mark", depends_on: [deep]}}
      - {{id: top, type: tool, tool_name: stamp, tool_args: {{index: "{{state.index}}"}},
         output: mine, depends_on: [row]}}
      - {{id: meddle, type: tool, tool_name: scribble,
         tool_args: {{rows: "{{state.rows}}", config: "{{state.config}}"}}, depends_on: [top]}}
      - {{id: after, type: tool, tool_name: peek, tool_args: {{index: "{{state.index}}"}},
         depends_on: [meddle]}}
    output: results
"""


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_an_items_nested_writes_reach_neither_its_siblings_nor_the_parent(
        concurrency: int) -> None:
    state = _state()
    before = copy.deepcopy(state)
    rows, config = state["rows"], state["config"]
    seen = _Seen()
    wf = load_workflow_text(WRITES.format(concurrency=concurrency))
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state,
                                 tools=_tools(seen))
    assert result.status is RunStatus.SUCCESS, result.error
    # every item first saw the state as the map found it, whatever ran before it ...
    firsts = [json.loads(t) for t in seen.texts if '"mine": null' in t]
    assert len(firsts) == ROWS
    for got in firsts:
        assert got["config"] == before["config"] and got["row0"] == before["rows"][0]
    # ... then its own writes, and only its own (the tool's changes stayed the tool's)
    for entry in result.state["results"]:
        got = entry["output"]  # the tool step read its JSON reply
        i = got["i"]
        assert got["config"] == {"mode": f"item {i}", "seen": []}
        assert got["row0"] == {"k": 0, "tags": [f"item {i}"]}
        assert got["mine"] == f"item {i}"
    # the parent's state is as it was: the same objects, unchanged, plain
    assert result.state["rows"] is rows and result.state["config"] is config
    assert {k: result.state[k] for k in before} == before
    assert "mine" not in result.state
    assert _plain(result.state)


async def test_the_items_share_one_view_of_a_list_none_of_them_writes() -> None:
    # The count that made a map cost (items x state): each item's copy of the list. Here
    # every item's run holds the same object for the list it only reads.
    state = _state()
    seen = _Seen()
    wf = load_workflow_text("""\
name: m
steps:
  - id: each
    type: map
    over: state.rows
    concurrency: 3
    step: {id: look, type: tool, tool_name: peek, tool_args: {index: "{state.index}"}}
    output: results
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state,
                                 tools=_tools(seen))
    assert result.status is RunStatus.SUCCESS, result.error
    assert len(seen.rows) == ROWS
    distinct = {id(r) for r in seen.rows}  # all held alive by `seen`: ids don't repeat
    assert len(distinct) == 1, f"{len(distinct)} copies of the list for {ROWS} items"
    shared = seen.rows[0]
    assert shared == state["rows"] and shared is not state["rows"]
    # its rows are shared too: nothing of the list was copied per item
    assert all(a is b for a, b in zip(seen.rows[-1], shared, strict=True))


async def test_a_subworkflows_input_in_an_item_changes_no_sibling_nor_the_parent() -> None:
    # `input` hands the child the item's value itself, not a copy: the child's nested
    # write must copy the shared value, not change it for the siblings and the parent.
    # (On a copy per item the write went through to the item's own copy; on the shared
    # state it stays the child's, as "nothing is written back but the result" says.)
    state = _state()
    before = copy.deepcopy(state)
    seen = _Seen()
    wf = load_workflow_text("""\
name: m
steps:
  - id: each
    type: map
    over: state.rows
    concurrency: 2
    steps:
      - id: sub
        type: subworkflow
        isolated_state: true
        input: {cfg: "{state.config}", index: "{state.index}"}
        return_keys: [cfg]
        workflow_inline:
          name: inner
          steps:
            - {id: w, type: tool, tool_name: stamp, tool_args: {index: "{state.index}"},
               output: cfg.mode}
      - {id: look, type: tool, tool_name: peek, tool_args: {index: "{state.index}"},
         depends_on: [sub]}
    output: results
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state,
                                 tools=_tools(seen))
    assert result.status is RunStatus.SUCCESS, result.error
    looks = [json.loads(t) for t in seen.texts]
    assert len(looks) == ROWS
    for look in looks:
        assert look["config"]["mode"] in ("x", f"item {look['i']}")  # never a sibling's
    assert result.state["config"] == before["config"]


async def test_every_item_runs_on_the_state_as_the_map_started() -> None:
    # A step beside the map writes below a state value (in place, through `assign`)
    # while item 0 runs; item 1, started after, still runs on the state as the map
    # started: which state an item sees never depends on when the scheduler started it.
    state = _state()
    config = state["config"]
    seen = _Seen()

    @tool
    async def wait_for_note(index: int) -> str:
        """Item 0 waits until the step beside the map has written."""
        for _ in range(1000):
            if index != 0 or "note" in config:
                break
            await asyncio.sleep(0)
        return "waited"

    tools = _tools(seen)
    tools.register(wait_for_note)
    wf = load_workflow_text("""\
name: m
steps:
  - {id: beside, type: tool, tool_name: stamp, tool_args: {index: 99}, output: config.note}
  - id: each
    type: map
    over: state.rows
    concurrency: 1
    steps:
      - {id: wait, type: tool, tool_name: wait_for_note, tool_args: {index: "{state.index}"}}
      - {id: look, type: tool, tool_name: peek, tool_args: {index: "{state.index}"},
         depends_on: [wait]}
    output: results
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state, tools=tools)
    assert result.status is RunStatus.SUCCESS, result.error
    assert config["note"] == "item 99"
    looks = [json.loads(t) for t in seen.texts]
    assert all("note" not in look["config"] for look in looks)


async def test_an_items_output_holding_shared_state_comes_out_plain() -> None:
    state = _state()
    wf = load_workflow_text("""\
name: m
steps:
  - id: each
    type: map
    over: state.rows
    step:
      id: sub
      type: subworkflow
      return_keys: [rows, config]
      workflow_inline:
        name: inner
        steps:
          - {id: w, type: llm_call, prompt: "{state.index}", output: said}
    output: results
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state)
    assert result.status is RunStatus.SUCCESS, result.error
    outs = [e["output"] for e in result.state["results"]]
    assert all(o == {"rows": state["rows"], "config": state["config"]} for o in outs)
    assert _plain(result.state)
    outs[0]["rows"].append("mine")  # the run's own, to change
    assert len(outs[1]["rows"]) == ROWS


async def test_maps_nested_in_items_share_the_outer_items_state() -> None:
    state = _state()
    seen = _Seen()
    wf = load_workflow_text("""\
name: m
steps:
  - id: each
    type: map
    over: state.rows
    concurrency: 2
    step:
      id: inner
      type: map
      over: state.item.tags
      as: tag
      step: {id: look, type: tool, tool_name: peek, tool_args: {index: "{state.index}"}}
    output: results
""")
    result = await arun_workflow(wf, clients=Factory(echo_model()), state=state,
                                 tools=_tools(seen))
    assert result.status is RunStatus.SUCCESS, result.error
    assert len(seen.rows) == ROWS and len({id(r) for r in seen.rows}) == 1
