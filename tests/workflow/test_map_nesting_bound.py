"""Maps nested in map items share one allowance of items in flight (`map.py`'s
MAX_ITEMS_IN_FLIGHT): concurrency no longer multiplies with each level of nesting."""

from __future__ import annotations

import asyncio

import pytest
from wf_helpers import Factory, echo_model

from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import RunStatus, arun_workflow, load_workflow_text
from agentloom.workflow.steps import map as map_step

GRID = """\
name: grid
state: {rows: [ROWS], cells: [CELLS]}
steps:
  - id: rows
    type: map
    over: state.rows
    as: row
    concurrency: OUTER
    steps:
      - id: cells
        type: map
        over: state.cells
        as: cell
        concurrency: INNER
        step: {id: p, type: tool, tool_name: probe, tool_args: {n: state.cell}, output: n}
        output: out
    output: grid
"""


def grid(rows: int, cells: int, outer: int, inner: int) -> str:
    return (GRID.replace("ROWS", ", ".join(map(str, range(rows))))
            .replace("CELLS", ", ".join(map(str, range(cells))))
            .replace("OUTER", str(outer)).replace("INNER", str(inner)))


class Probe:
    """A tool that counts the calls in flight: each yields to the event loop a few times
    before it returns, so every call started before any finishes is counted together
    (no clock involved: asyncio runs every ready task before resuming one)."""

    def __init__(self) -> None:
        self.now = self.peak = self.calls = 0

        @tool
        async def probe(n: int) -> int:
            """Count the calls in flight."""
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
            for _ in range(5):
                await asyncio.sleep(0)
            self.now -= 1
            return n

        self.tools = ToolRegistry([probe])


async def run_grid(text: str) -> Probe:
    probe = Probe()
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()),
                                 tools=probe.tools)
    assert result.status is RunStatus.SUCCESS, result.error
    return probe


async def test_nested_maps_run_at_most_the_allowance_at_once() -> None:
    # 16 rows at 16, each a map of 32 cells at 32: 512 at once before, 256 now.
    probe = await run_grid(grid(16, 32, 16, 32))
    assert probe.calls == 512
    assert probe.peak == map_step.MAX_ITEMS_IN_FLIGHT == 256


async def test_each_item_gets_an_equal_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(map_step, "MAX_ITEMS_IN_FLIGHT", 8)
    probe = await run_grid(grid(4, 8, 4, 8))  # 4 rows, a share of 2 cells each
    assert (probe.calls, probe.peak) == (32, 8)
    probe = await run_grid(grid(16, 8, 16, 8))  # more rows than the allowance: 8 rows, 1 each
    assert (probe.calls, probe.peak) == (128, 8)


async def test_a_map_under_the_allowance_runs_as_before() -> None:
    probe = await run_grid(grid(3, 5, 3, 5))
    assert (probe.calls, probe.peak) == (15, 15)
    probe = await run_grid(grid(1, 40, 1, 7))  # a lone map keeps its own concurrency
    assert (probe.calls, probe.peak) == (40, 7)


async def test_the_grid_keeps_its_order() -> None:
    probe = Probe()
    result = await arun_workflow(load_workflow_text(grid(3, 4, 2, 4)),
                                 clients=Factory(echo_model()), tools=probe.tools)
    assert [[c["output"] for c in row["output"]] for row in result.state["grid"]] == [
        ["0", "1", "2", "3"]] * 3
