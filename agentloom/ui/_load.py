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

from agentloom.errors import AgentLoomError
from agentloom.store import CheckpointStore, RunQuery, query_matches
from agentloom.ui._view import GraphNode, checkpoint_facts, graph_nodes, run_detail, run_row
from agentloom.workflow import load_workflow
from agentloom.workflow.durable.run import workflow_hash as hash_of

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
        changed = hash_of(Path(path).read_bytes()) != workflow_hash
        wf = load_workflow(Path(path))
    except (AgentLoomError, OSError, ValueError):
        return None, False
    return graph_nodes(wf.definition.steps), changed


class FactsCache:
    """The list's facts of a checkpoint, per (run, seq): a checkpoint never changes once
    written, so the list's refreshes decode only the runs that moved since."""

    def __init__(self, size: int = 5000) -> None:
        self._size = size
        self._cache: dict[tuple[str, int], tuple[int | None, str | None]] = {}

    async def facts(self, store: CheckpointStore, run: Any) -> tuple[int | None, str | None]:
        key = (run.run_id, run.latest_seq)
        hit = self._cache.get(key)
        if hit is None:
            hit = checkpoint_facts(await store.load_latest(run.run_id))
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = hit
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
    rows = [run_row(r, None, facts=await cache.facts(store, r)) for r in runs]
    return {"runs": rows, "total": total, "limit": limit, "offset": offset}


async def load_detail(store: CheckpointStore, run_id: str, graphs: GraphCache
                      ) -> dict[str, Any] | None:
    run = await store.get_run(run_id)
    if run is None:
        return None
    cp = await store.load_latest(run_id)
    nodes, changed = await graphs.nodes(run.meta.get("workflow_path"), run.workflow_hash)
    detail = run_detail(run, cp, nodes, exchanges=await store.get_model_exchanges(run_id),
                        tool_calls=await store.get_tool_calls(run_id), now=datetime.now(UTC))
    detail["graph"]["file_changed"] = changed
    return detail
