"""Reading a run's records from the store (through its public protocol) into views.

The workflow graph comes from the run's workflow file (`meta.workflow_path`), loaded in
a thread and kept per (path, hash): a run page asks for it on every refresh. A file that
is gone or no longer loads leaves the graph to the steps the checkpoint holds.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentloom._files import read_regular
from agentloom.errors import AgentLoomError
from agentloom.store import Checkpoint, CheckpointStore, RunQuery, RunRecord, query_matches
from agentloom.ui._history import History, HistoryCache
from agentloom.ui._view import (
    GraphNode,
    checkpoint_facts,
    graph_nodes,
    run_detail,
    run_row,
    step_details,
)
from agentloom.workflow import load_workflow
from agentloom.workflow.durable.run import workflow_hash as hash_of
from agentloom.workflow.load.yaml_source import MAX_FILE_BYTES

MAX_PAGE = 200


Graph = tuple[list[GraphNode] | None, bool]
"""The steps of the run's workflow file (None: gone or broken), and whether the file
changed since the run started (its hash is not the run's)."""


class GraphCache:
    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._cache: dict[tuple[str, str, float], Graph] = {}

    async def nodes(self, path: str | None, workflow_hash: str) -> Graph:
        if not path:
            return None, False
        try:
            mtime = (await asyncio.to_thread(Path(path).stat)).st_mtime
        except OSError:
            return None, False
        key = (path, workflow_hash, mtime)
        if key not in self._cache:
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = await asyncio.to_thread(_load_nodes, path, workflow_hash)
        return self._cache[key]


def _load_nodes(path: str, workflow_hash: str) -> Graph:
    try:
        data = read_regular(path, MAX_FILE_BYTES)  # over it, it can't be the loaded file
    except OSError:
        return None, False
    if hash_of(data) == workflow_hash:
        # The very file the run loaded (and checked) when it started: its steps can be
        # read straight off the YAML, a few times faster than loading it again.
        nodes = _plain_nodes(data)
        if nodes is not None:
            return nodes, False
        changed = False
    else:
        changed = True
    try:
        wf = load_workflow(Path(path))
    except (AgentLoomError, OSError, ValueError):
        return None, False
    return graph_nodes(wf.definition.steps), changed


def _plain_nodes(data: bytes) -> list[GraphNode] | None:
    """The top-level steps of a workflow file (ids, types and `depends_on`, read as the
    loader reads them) from the YAML parser's events, without building the document:
    ~10x faster than loading it. None for anything unexpected (an alias, a step without
    an id), which the full loader then reads."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        events = list(yaml.parse(data, Loader=loader))
    except yaml.YAMLError:
        return None
    try:
        return _steps_from_events(events)
    except _Unexpected:
        return None


class _Unexpected(Exception):
    pass


def _steps_from_events(events: list[Any]) -> list[GraphNode]:
    import yaml

    def skip(i: int) -> int:
        """The index after the node starting at events[i]."""
        ev = events[i]
        if isinstance(ev, yaml.AliasEvent):
            raise _Unexpected
        if isinstance(ev, yaml.ScalarEvent):
            return i + 1
        if not isinstance(ev, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            raise _Unexpected
        depth, i = 1, i + 1
        while depth:
            ev = events[i]
            if isinstance(ev, yaml.AliasEvent):
                raise _Unexpected
            if isinstance(ev, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
            elif isinstance(ev, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
            i += 1
        return i

    def text(ev: Any) -> str:
        if not isinstance(ev, yaml.ScalarEvent) or ev.anchor is not None:
            raise _Unexpected
        return str(ev.value)

    i = 0
    while i < len(events) and not isinstance(events[i], yaml.MappingStartEvent):
        i += 1
    if i == len(events):
        raise _Unexpected
    i += 1
    while not isinstance(events[i], yaml.MappingEndEvent):
        key = text(events[i])
        if key != "steps":
            i = skip(i + 1)
            continue
        if not isinstance(events[i + 1], yaml.SequenceStartEvent):
            raise _Unexpected
        return _read_steps(events, i + 2, skip, text)
    raise _Unexpected


def _read_steps(events: list[Any], i: int, skip: Any, text: Any) -> list[GraphNode]:
    import yaml

    nodes: list[GraphNode] = []
    while not isinstance(events[i], yaml.SequenceEndEvent):
        if not isinstance(events[i], yaml.MappingStartEvent):
            raise _Unexpected
        i += 1
        fields: dict[str, Any] = {}
        while not isinstance(events[i], yaml.MappingEndEvent):
            key = text(events[i])
            if key in ("id", "type"):
                fields[key] = text(events[i + 1])
                i += 2
            elif key == "depends_on" and isinstance(events[i + 1], yaml.SequenceStartEvent):
                i += 2
                deps = []
                while not isinstance(events[i], yaml.SequenceEndEvent):
                    deps.append(text(events[i]))
                    i += 1
                fields[key] = deps
                i += 1
            elif key == "depends_on":
                fields[key] = [text(events[i + 1])]
                i += 2
            else:
                i = skip(i + 1)
        i += 1
        if "id" not in fields or "type" not in fields:
            raise _Unexpected
        nodes.append(GraphNode(id=fields["id"], type=fields["type"],
                               depends_on=tuple(dict.fromkeys(fields.get("depends_on", ())))))
    return nodes


class FactsCache:
    """The list's facts of a checkpoint, per (run, seq): a checkpoint never changes once
    written, so the list's refreshes decode only the runs that moved since."""

    def __init__(self, size: int = 5000) -> None:
        self._size = size
        self._cache: dict[tuple[str, int], tuple[int | None, str | None]] = {}

    async def facts_of(self, store: CheckpointStore, runs: list[RunRecord]
                       ) -> list[tuple[int | None, str | None]]:
        """The facts of each run, the ones not seen yet read in one go when the store
        can (`load_latest_many`: one transaction, not one per run)."""
        many = getattr(store, "load_latest_many", None)
        missing = [r.run_id for r in runs if (r.run_id, r.latest_seq) not in self._cache]
        if many is not None and len(missing) > 1:
            loaded = await many(missing)
            for r in runs:
                if r.run_id in loaded and loaded[r.run_id].seq == r.latest_seq:
                    self._keep((r.run_id, r.latest_seq), checkpoint_facts(loaded[r.run_id]))
        return [await self.facts(store, r) for r in runs]

    def _keep(self, key: tuple[str, int], facts: tuple[int | None, str | None]) -> None:
        if len(self._cache) >= self._size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = facts

    async def facts(self, store: CheckpointStore, run: Any) -> tuple[int | None, str | None]:
        key = (run.run_id, run.latest_seq)
        hit = self._cache.get(key)
        if hit is None:
            hit = checkpoint_facts(await store.load_latest(run.run_id))
            self._keep(key, hit)
        return hit


async def load_page(store: CheckpointStore, query: RunQuery, *, limit: int,
                    offset: int, cache: FactsCache | None = None) -> dict[str, Any]:
    """A page of the run list, with each run's tokens from its latest checkpoint."""
    limit = min(max(limit, 1), MAX_PAGE)
    find = getattr(store, "find_runs", None)
    if find is not None:
        page = await find(query, limit=limit, offset=offset)
        runs, total = page.runs, page.total
    else:  # a store without the query capability: filter the newest ones here
        matched = [r for r in await store.list_runs(limit=None) if query_matches(query, r)]
        runs, total = matched[offset:offset + limit], len(matched)
    cache = cache or FactsCache()
    facts = await cache.facts_of(store, runs)
    rows = [run_row(r, None, facts=f) for r, f in zip(runs, facts, strict=True)]
    return {"runs": rows, "total": total, "limit": limit, "offset": offset}


async def _checkpoint(store: CheckpointStore, run: RunRecord, histories: HistoryCache | None
                      ) -> tuple[Checkpoint | None, History | None]:
    hist = await histories.history(store, run) if histories is not None else None
    if hist is None:
        return await store.load_latest(run.run_id), None
    return hist.latest, hist


async def load_detail(store: CheckpointStore, run_id: str, graphs: GraphCache,
                      histories: HistoryCache | None = None, *, details: bool = False
                      ) -> dict[str, Any] | None:
    """The run page's facts; `details`: each step's `step_details` too (under
    `details`), as `agentloom runs show --json` prints them."""
    run = await store.get_run(run_id)
    if run is None:
        return None
    histories = histories or HistoryCache(size=1)
    # The graph is read in a thread: the store's rows are decoded meanwhile.
    (cp, hist), (nodes, changed) = await asyncio.gather(
        _checkpoint(store, run, histories),
        graphs.nodes(run.meta.get("workflow_path"), run.workflow_hash))
    detail = run_detail(run, cp, nodes, now=datetime.now(UTC),
                        settled=hist.settled if hist is not None else None)
    detail["graph"]["file_changed"] = changed
    if details:
        exchanges = await store.get_model_exchanges(run_id)
        calls = await store.get_tool_calls(run_id)
        for view in detail["steps"]:
            sid = view["id"]
            view["details"] = _details(sid, cp, hist, view["state_seq"],
                                       [x for x in exchanges if x.step_id == sid],
                                       [t for t in calls if t.step_id == sid])
    return detail


async def load_step(store: CheckpointStore, run_id: str, step_id: str,
                    histories: HistoryCache) -> dict[str, Any] | None:
    """One step's details (`step_details`); None for an unknown run or step."""
    run = await store.get_run(run_id)
    if run is None:
        return None
    cp, hist = await _checkpoint(store, run, histories)
    exchanges = await store.get_model_exchanges(run_id, step_id)
    calls = await store.get_tool_calls(run_id, step_id)
    known = cp is not None and step_id in cp.step_results
    if not (known or exchanges or calls or (cp is not None and cp.paused is not None
                                            and cp.paused.step_id == step_id)):
        return None
    seq = hist.settled.get(step_id) if hist is not None else None
    return _details(step_id, cp, hist, seq, exchanges, calls)


def _details(step_id: str, cp: Checkpoint | None, hist: History | None, seq: int | None,
             exchanges: list[Any], calls: list[Any]) -> dict[str, Any]:
    raw = cp.step_results.get(step_id) if cp is not None else None
    state = hist.state_after(seq) if hist is not None and seq is not None else None
    return step_details(step_id, raw, exchanges=exchanges, tool_calls=calls, state=state)
