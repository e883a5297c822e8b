"""A run's stored writes, replayed: the checkpoint as it is now, the write that recorded
each step's result, and the state as it was right after that write.

A run writes a delta per step (its result and what it changed in the state), and a whole
checkpoint when it starts, resumes or must redact anew. Replaying those writes in seq
order gives the state after any of them, exactly as stored (so redacted as the run
redacted it). `History` keeps one run's writes decoded; a refresh reads only the writes
numbered after the last one it holds, so a live run page costs the new rows, not the run.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentloom.store import Checkpoint, CheckpointStore, RunRecord, StoredWrite, apply_delta


@dataclass(slots=True, frozen=True)
class StateAfter:
    """The state right after the write numbered `seq`, and what that write changed."""

    seq: int
    state: dict[str, Any]
    changed: list[str]
    removed: list[str]


def _copy(cp: Checkpoint) -> Checkpoint:
    """A checkpoint `apply_delta` may change without changing `cp` (it replaces values,
    never mutates one in place, so copying the maps is enough)."""
    return Checkpoint(state=dict(cp.state), status=cp.status,
                      step_results=dict(cp.step_results),
                      conversations=dict(cp.conversations), tool_loops=list(cp.tool_loops),
                      paused=cp.paused, cost_usd=cp.cost_usd, extra=dict(cp.extra),
                      seq=cp.seq, created_at=cp.created_at)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value without a plain `==`: count it as changed
        return False


@dataclass(slots=True)
class History:
    """One run's kept writes, oldest first, and what replaying them gives."""

    started: datetime | None = None
    """The run's start, to tell a run made again under the same id."""
    writes: list[StoredWrite] = field(default_factory=list)
    latest: Checkpoint | None = None
    recorded: dict[str, tuple[int | None, Any]] = field(default_factory=dict)
    """Step key -> (seq of the first write that recorded its result, that result). A
    resume writes the run whole and then records the steps it restored again, unchanged:
    they keep their first write. The seq is None when the result is already in the
    oldest kept write (the writes before it were pruned): the state after it is lost."""

    @property
    def settled(self) -> dict[str, int | None]:
        """Step key -> the seq whose state is the state right after the step."""
        results = self.latest.step_results if self.latest is not None else {}
        return {k: self.recorded[k][0] for k in results if k in self.recorded}

    def _record(self, key: str, raw: Any, seq: int | None) -> None:
        known = self.recorded.get(key)
        if known is None or not _same(known[1], raw):
            self.recorded[key] = (seq, raw)

    def add(self, writes: list[StoredWrite]) -> None:
        for w in writes:
            if self.writes and w.seq <= self.writes[-1].seq:
                continue  # already held (two refreshes raced)
            first = not self.writes
            self.writes.append(w)
            if w.checkpoint is not None:
                self.latest = _copy(w.checkpoint)
                lost = first and w.seq > 0
                for key, raw in w.checkpoint.step_results.items():
                    self._record(key, raw, None if lost else w.seq)
            elif w.delta is not None and self.latest is not None:
                apply_delta(self.latest, w.delta, seq=w.seq, created_at=w.created_at)
                for key, raw in w.delta.step_results.items():
                    self._record(key, raw, w.seq)

    @property
    def seq(self) -> int:
        return self.writes[-1].seq if self.writes else -1

    def state_after(self, seq: int) -> StateAfter | None:
        """The state once the write `seq` was applied; None if that write is not kept."""
        at = bisect.bisect_left([w.seq for w in self.writes], seq)
        if at == len(self.writes) or self.writes[at].seq != seq:
            return None
        state = self._fold(at)
        if state is None:
            return None
        delta = self.writes[at].delta
        if delta is not None:
            return StateAfter(seq, state, sorted(delta.state), sorted(delta.state_removed))
        old: Mapping[str, Any] = (self._fold(at - 1) or {}) if at > 0 else {}
        return StateAfter(seq, state,
                          sorted(k for k, v in state.items()
                                 if k not in old or not _same(old[k], v)),
                          sorted(k for k in old if k not in state))

    def _fold(self, at: int) -> dict[str, Any] | None:
        """The state after `writes[at]`: its newest whole checkpoint, then the deltas."""
        base = next((i for i in range(at, -1, -1) if self.writes[i].checkpoint is not None),
                    None)
        if base is None:
            return None
        cp = self.writes[base].checkpoint
        assert cp is not None
        state = dict(cp.state)
        for w in self.writes[base + 1:at + 1]:
            if w.delta is not None:
                state.update(w.delta.state)
                for key in w.delta.state_removed:
                    state.pop(key, None)
        return state


class HistoryCache:
    """The `History` of the runs looked at lately, brought up to date on each look."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._runs: dict[str, History] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def history(self, store: CheckpointStore, run: RunRecord) -> History | None:
        """The run's history up to at least its `latest_seq`; None for a store that
        can't list a run's writes (the caller falls back to `load_latest`)."""
        load = getattr(store, "load_writes", None)
        if load is None:
            return None
        run_id, latest_seq = run.run_id, run.latest_seq
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            hist = self._runs.pop(run_id, None)
            if hist is not None and (hist.seq > latest_seq or hist.started != run.started_at):
                hist = None  # not the run it was: deleted and made again
            if hist is None:
                hist = History(started=run.started_at)
            if hist.seq < latest_seq or not hist.writes:
                hist.add(await load(run_id, after_seq=hist.seq))
            self._runs[run_id] = hist  # most recently used last
            while len(self._runs) > self._size:
                gone = next(iter(self._runs))
                del self._runs[gone]
                self._locks.pop(gone, None)
        return hist
