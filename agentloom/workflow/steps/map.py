"""The `map` step: run a step, or a block of steps, once per item of a list in state.

The body is loaded once, at load, as a small workflow of its own; at run time each item
gets a child run on the state as it was when the map started, with the item at
`{state.<as>}` (default `item`) and its position at `{state.index}`. At most
`concurrency` items run at once, and a list of more than `max_items` (10,000 unless the
step says) is refused.

No item sees another's writes or changes the state around it, yet no item copies the
state: its values are frozen once, as the map starts, for all items
(`lang.frozen.Snapshot`; a step beside the map writing meanwhile changes no item's view,
so an item's state never depends on when the scheduler started it), each item gets a
top-level dict of its own over them, and a write of an item copies only the containers on its path
(`lang.paths.assign`). An item costs a step per top-level key, not the size of the
state: a copy of the whole state per item spent 14 s on a map of 3,000 items over a
3,000-entry list (bench/README.md).

Maps nested in map items share one allowance: at most `MAX_ITEMS_IN_FLIGHT` (256, the
most one map may run) items are in flight under a top-level map, whatever the nesting.
Each item is handed an equal share of its map's allowance (`ITEM_SLOTS`, in the item's
context), and a map inside it runs no more workers than that share, at least one. So a
map of 256 items over a map of 256 runs 256 items at once, not 65,536 model calls each
with its own copy of the state. No worker waits on another for a slot, so nesting can't
deadlock.

The output is one entry per item, in the list's order, whatever order they finish in:
`{"status": "success" | "failed", "output": ..., "error": ...}`, where `output` is the
value of the body's last step (its `output` key's value, else its text). One item's
failure never cancels the others; with `on_item_error: fail` (the default) the step then
fails naming every failed item, with `continue` it succeeds and the entries say. A
finished item keeps only its entry (its output thawed: plain dicts and lists the run may
change), usage and pause, never its final state.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.errors import WorkflowError, kind_of
from agentloom.workflow.engine.nested import (
    NestingError,
    block_under,
    deep_copy,
    first_failure,
    load_block,
    problems_text,
    raise_if_paused,
    rolled_usage,
    sum_usage,
)
from agentloom.workflow.engine.result import RunResult, RunStatus, StepOutcome, StepStatus
from agentloom.workflow.lang.frozen import Snapshot, thaw
from agentloom.workflow.lang.paths import MISSING, Path, PathError, format_path, lookup, parse_path

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.messages import Usage
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.templates import Template
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode, Workflow
    from agentloom.workflow.schema.other_steps import MapStep


class MapError(WorkflowError):
    """A map that could not run, or whose items failed; `usage` is what it spent."""

    def __init__(self, message: str, *, usage: Any = None) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(slots=True, frozen=True)
class Prepared:
    over: Path
    body: Workflow | None
    last: str | None
    """The body step whose result is each item's output."""

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        return iter(())


def prepare(step: MapStep, pc: PrepareContext) -> Prepared:
    over: Path = ()
    try:
        # `state.items`, `items` and `{state.items}` all name the same list
        text = step.over.strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1].strip()
        over = parse_path(text.removeprefix("state."))
    except PathError as exc:
        pc.report(str(exc), "over")
    raw_steps = step.steps if step.steps is not None else [step.step]
    at = "steps" if step.steps is not None else "step"
    body: Workflow | None = None
    try:
        body = load_block(pc.block(f"{step.id}-body", raw_steps),
                          filename=f"{pc.filename} (map {step.id!r} {at})",
                          base_dir=pc.base_dir, library=pc.library)
    except NestingError as exc:
        pc.report(exc.message, at)
    except WorkflowError as exc:
        pc.report(f"the map body has problems: {problems_text(exc)}", at)
    last = next(reversed(body.nodes)) if body is not None and body.nodes else None
    return Prepared(over=over, body=body, last=last)


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: MapStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    if prep.body is None or prep.last is None:
        raise WorkflowError(f"map step {node.id!r}: its body is not loaded")
    last = prep.last
    items = lookup(ctx.state, prep.over)
    where = f"state.{format_path(prep.over)}"
    if items is MISSING:
        raise MapError(f"map step {node.id!r}: {where} is not set; it must be a list")
    if not isinstance(items, list | tuple):
        raise MapError(f"map step {node.id!r}: {where} is {kind_of(items)}, "
                       "not a list")
    if len(items) > step.max_items:
        raise MapError(f"map step {node.id!r}: {where} has {len(items)} items, more than "
                       f"max_items ({step.max_items}); raise max_items or split the list")
    body = block_under(node, "body", prep.body, ctx.workflow)
    done: list[_Done | None] = [None] * len(items)
    pending = iter(enumerate(items))
    slots = ITEM_SLOTS.get(None)
    allowance = MAX_ITEMS_IN_FLIGHT if slots is None else slots
    workers = min(step.concurrency, len(items), allowance)
    share = max(1, allowance // max(workers, 1))

    async def worker(snapshot: Snapshot) -> None:
        # `concurrency` workers take the items in order, one at a time: a task per item
        # would be a million tasks for a million-item list, all alive at once.
        ITEM_SLOTS.set(share)  # in this worker's own context: what a map in its items may run
        for index, item in pending:
            state = snapshot.view()  # the map's starting state, frozen: shared, not copied
            state[step.as_] = deep_copy(item)  # the item's own (shared if frozen)
            state["index"] = index
            result = await ctx.run_child(body, state=state,
                                         run_id=f"{ctx.run_id}/{node.id}[{index}]",
                                         scope=f"{node.id}/{index}")
            # Only what the output needs is kept: an item's final state holds what it
            # wrote, the copies on the paths it wrote included (of the whole list, for a
            # write below it), and 10,000 of them would hold those 10,000 times over.
            done[index] = _Done(_entry(result, last), rolled_usage([result]),
                                result.pause)

    snapshot = Snapshot(ctx.state)  # the state as the map starts, frozen once for all items
    async with asyncio.TaskGroup() as tg:
        for _ in range(workers):
            tg.create_task(worker(snapshot))
    results = [r for r in done if r is not None]
    for r in results:
        raise_if_paused(r)
    entries = [r.entry for r in results]
    usage = sum_usage([r.usage for r in results if r.usage is not None])
    failed = [i for i, e in enumerate(entries) if e["status"] != "success"]
    if failed and step.on_item_error == "fail":
        detail = "; ".join(f"item {i}: {entries[i]['error']}" for i in failed[:5])
        more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
        raise MapError(f"map step {node.id!r}: {len(failed)} of {len(entries)} items "
                       f"failed: {detail}{more}", usage=usage)
    return StepOutcome(value=entries, usage=usage)


MAX_ITEMS_IN_FLIGHT = 256
"""Map items in flight at once under one top-level map, its nested maps' included."""
ITEM_SLOTS: contextvars.ContextVar[int] = contextvars.ContextVar("agentloom_map_item_slots")
"""The share of the enclosing maps' allowance a map started here may run (unset: none
encloses it)."""


@dataclass(slots=True, frozen=True)
class _Done:
    """What a finished item leaves for the map's output: its entry, usage and pause."""

    entry: dict[str, Any]
    usage: Usage | None
    pause: Any


def _entry(result: RunResult, last: str) -> dict[str, Any]:
    if result.status is not RunStatus.SUCCESS:
        return {"status": "failed", "output": None, "error": first_failure(result)}
    r = result.steps[last]
    if r.status is not StepStatus.SUCCESS:  # the last step was skipped (a branch)
        return {"status": "success", "output": None, "error": None}
    # thawed: the output may hold state the items share (a subworkflow's return_keys)
    return {"status": "success", "output": thaw(r.output) if r.output is not None else r.text,
            "error": None}
