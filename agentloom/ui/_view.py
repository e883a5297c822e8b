"""What a run looks like to a person: plain JSON-ready facts built from store records.

The web pages, the JSON API and `agentloom runs show` all show these same dictionaries,
so the terminal and the browser never disagree. Nothing here does I/O: callers load the
records (`_load.py`) and pass them in. Values are copied as stored, already redacted by
the run that wrote them; `scrub_text` is a second pass the app applies with the secrets it
knows (API keys in its environment, its own token), so none reaches a page.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from agentloom.store import Checkpoint, ModelExchangeRecord, RunRecord, ToolCallRecord
from agentloom.ui._history import StateAfter

MAX_DEPTH = 40
"""Deeper values are cut (a hostile output can nest without end)."""


def plain(value: Any, depth: int = 0) -> Any:
    """`value` as JSON types: dataclasses as dicts, Decimal as text, datetimes ISO."""
    if depth > MAX_DEPTH:
        return "…"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return plain(value.value, depth + 1)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name), depth + 1) for name in _fields(type(value))}
    if hasattr(value, "model_dump"):
        return plain(value.model_dump(mode="json"), depth + 1)
    return str(value)


@functools.cache
def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _tokens(usage: Any) -> int | None:
    if usage is None:
        return None
    inp = _get(usage, "input_tokens")
    out = _get(usage, "output_tokens")
    if inp is None and out is None:
        return None
    return int(inp or 0) + int(out or 0)


def _get(obj: Any, name: str) -> Any:
    if type(obj) is dict:  # what the store decodes: the common case, checked first
        return obj.get(name)
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def run_tokens(cp: Checkpoint | None) -> int | None:
    """The tokens of the run's finished steps; None when no step reported any."""
    if cp is None:
        return None
    total: int | None = None
    for key, raw in cp.step_results.items():
        if "/" in key:  # a nested step: its parent's usage already counts it
            continue
        n = _tokens(_get(raw, "usage"))
        if n is not None:
            total = (total or 0) + n
    return total


def checkpoint_facts(cp: Checkpoint | None) -> tuple[int | None, str | None]:
    """What the run list needs from a checkpoint: its tokens and what it waits for."""
    return run_tokens(cp), (cp.paused.waiting_for if cp is not None and cp.paused else None)


def run_row(run: RunRecord, cp: Checkpoint | None, *,
            facts: tuple[int | None, str | None] | None = None) -> dict[str, Any]:
    """One line of the run list (`facts`: `checkpoint_facts(cp)`, when known already)."""
    tokens, waiting_for = facts if facts is not None else checkpoint_facts(cp)
    duration = (run.updated_at - run.started_at).total_seconds()
    return {
        "run_id": run.run_id, "status": run.status, "workflow": run.workflow_name,
        "started_at": run.started_at.isoformat(), "updated_at": run.updated_at.isoformat(),
        "duration_seconds": round(max(duration, 0.0), 3),
        "tokens": tokens,
        "cost_usd": None if run.cost_usd is None else str(run.cost_usd),
        "batch_id": run.meta.get("batch_id"), "input_id": run.meta.get("input_id"),
        "claimed_by": run.claimed_by,
        "waiting_for": waiting_for,
    }


@dataclasses.dataclass(slots=True, frozen=True)
class GraphNode:
    id: str
    type: str
    depends_on: tuple[str, ...]


def _usage(usage: Any) -> Any:
    """The usage as stored, without the counts no provider reported (null)."""
    shown = plain(usage)
    return {k: v for k, v in shown.items() if v is not None} if isinstance(shown, dict) \
        else shown


def _step_view(step_id: str, raw: Any, node: GraphNode | None) -> dict[str, Any]:
    usage = _get(raw, "usage")
    return {
        "id": step_id, "type": _get(raw, "type") or (node.type if node else None),
        "status": _get(raw, "status") or "pending",
        "attempts": _get(raw, "attempts"), "model": _get(raw, "model"),
        "provider": _get(raw, "provider"), "finish_reason": _get(raw, "finish_reason"),
        "tokens": _tokens(usage), "usage": _usage(usage),
        "cost_usd": plain(_get(usage, "cost_usd")) if usage is not None else None,
        "duration_seconds": _get(raw, "duration_seconds"),
        "error": _get(raw, "error"), "error_type": _get(raw, "error_type"),
        "reason": _get(raw, "reason"), "iterations": _get(raw, "iterations"),
        "depends_on": list(node.depends_on) if node else [],
        "parent": step_id.rsplit("/", 1)[0] if "/" in step_id else None,
    }


def _lanes(bars: list[dict[str, Any]]) -> int:
    """Give each bar the lowest lane free at its start (bars sorted by start): steps
    that overlap in time land in different lanes. Returns the number of lanes."""
    ends: list[float] = []
    for bar in sorted(bars, key=lambda b: (b["start"], b["id"])):
        for lane, end in enumerate(ends):
            if end <= bar["start"] + 1e-9:
                bar["lane"] = lane
                ends[lane] = bar["end"]
                break
        else:
            bar["lane"] = len(ends)
            ends.append(bar["end"])
    return len(ends)


def timeline(steps: list[dict[str, Any]], raws: Mapping[str, Any], run: RunRecord,
             paused_step: str | None, now: datetime) -> dict[str, Any]:
    """A Gantt chart: seconds from the first step's start, one bar per top-level step,
    parallel steps in separate lanes, a wait bar before a person's decision."""
    starts = {s["id"]: _get(raws.get(s["id"]), "started_at") for s in steps
              if s["parent"] is None}
    known = [v for v in starts.values() if isinstance(v, int | float)]
    base = min(known) if known else 0.0
    bars: list[dict[str, Any]] = []
    ends: dict[str, float] = {}
    elapsed = now.timestamp() - run.started_at.timestamp()  # ~ seconds since `base`
    for s in steps:
        t0 = starts.get(s["id"])
        if s["parent"] is not None or not isinstance(t0, int | float):
            continue
        start = float(t0) - base
        end = start + float(s["duration_seconds"] or 0.0)
        ends[s["id"]] = end
        bars.append({"id": s["id"], "kind": "step", "status": s["status"],
                     "start": round(start, 6), "end": round(end, 6),
                     "attempts": s["attempts"] or 1})
    for s in steps:
        waits = s["type"] in ("approval_gate", "ask") or s["id"] == paused_step
        if not waits or s["parent"] is not None:
            continue
        ready = max((ends.get(d, 0.0) for d in s["depends_on"]), default=0.0)
        if s["id"] in ends:
            decided = next(b["start"] for b in bars if b["id"] == s["id"])
        elif s["id"] == paused_step:
            decided = max(ready, elapsed)
        else:
            continue
        if decided - ready > 1e-3:
            bars.append({"id": s["id"], "kind": "wait", "status": "waiting",
                         "start": ready, "end": decided, "attempts": 1})
    for s in steps:  # a step still running: from when it could start until now
        if s["status"] != "running" or s["parent"] is not None or s["id"] in ends:
            continue
        ready = max((ends.get(d, 0.0) for d in s["depends_on"]), default=0.0)
        bars.append({"id": s["id"], "kind": "step", "status": "running", "start": ready,
                     "end": max(ready, elapsed), "attempts": 1})
    lanes = _lanes(bars)
    span = max((b["end"] for b in bars), default=0.0)
    return {"lanes": lanes, "span_seconds": span, "bars": bars}


def graph_nodes(definition_steps: Iterable[Any]) -> list[GraphNode]:
    """The workflow's top-level steps, from its loaded definition."""
    return [GraphNode(id=str(s.id), type=str(getattr(s, "type", "")),
                      depends_on=tuple(getattr(s, "depends_on", ()) or ()))
            for s in definition_steps]


def run_detail(run: RunRecord, cp: Checkpoint | None, nodes: list[GraphNode] | None, *,
               now: datetime, settled: Mapping[str, int | None] | None = None
               ) -> dict[str, Any]:
    """Everything the run page shows at first; what a step's details add (its output,
    exchanges, tool calls, the state after it) is `step_details`, asked for when opened.
    `settled`: step -> seq of the write that recorded its result (`History.settled`)."""
    raws: dict[str, Any] = dict(cp.step_results) if cp is not None else {}
    by_id = {n.id: n for n in nodes or []}
    tops = [n.id for n in nodes or []]
    tops += sorted(k for k in raws if k not in by_id and "/" not in k)
    nested = sorted(k for k in raws if "/" in k)
    order: list[str] = []
    if nested:
        for top in tops:  # each step, then the steps of its nested runs
            order.append(top)
            order += [k for k in nested if k.startswith(f"{top}/")]
        placed = set(order)
        order += [k for k in nested if k not in placed]
    else:
        order = tops
    paused = cp.paused if cp is not None else None
    loops = {p.step_id for p in cp.tool_loops} if cp is not None else set()
    not_taken = (cp.extra.get("not_taken") or {}) if cp is not None else {}
    settled = settled or {}
    steps = []
    for sid in order:
        view = _step_view(sid, raws.get(sid, {}), by_id.get(sid))
        if paused is not None and paused.step_id == sid:
            view["status"] = "paused" if paused.waiting_for != "decision" else "needs_decision"
        elif sid not in raws and sid in not_taken:
            view["status"] = "skipped"
        elif sid not in raws and run.status == "running" and (
                _deps_done(by_id.get(sid), raws) or sid in loops):
            view["status"] = "running"
        view["state_seq"] = settled.get(sid)
        steps.append(view)
    counts: dict[str, int] = {}
    for view in steps:
        if view["parent"] is None:
            counts[view["status"]] = counts.get(view["status"], 0) + 1
    row = run_row(run, cp)
    summary = {
        "status": run.status, "steps": counts, "tokens": row["tokens"],
        "cost_usd": row["cost_usd"], "duration_seconds": row["duration_seconds"],
        "errors": [{"step": v["id"], "error": v["error"], "error_type": v["error_type"]}
                   for v in steps if v["error"]],
    }
    return {
        "run": row, "summary": summary,
        "paused": None if paused is None else {
            "step_id": paused.step_id, "waiting_for": paused.waiting_for,
            "prompt": paused.prompt, "call_id": paused.call_id,
            "kind": (paused.data or {}).get("kind"),
            "choices": plain((paused.data or {}).get("choices")),
        },
        "graph": {"known": nodes is not None,
                  "nodes": [{"id": v["id"], "type": v["type"], "status": v["status"],
                             "depends_on": v["depends_on"]}
                            for v in steps if v["parent"] is None]},
        "timeline": timeline(steps, raws, run, paused.step_id if paused else None, now),
        "steps": steps,
        "state": plain(cp.state) if cp is not None else {},
        "state_seq": cp.seq if cp is not None else None,
        "meta": {k: plain(v) for k, v in run.meta.items() if k != "state"},
        "seq": run.latest_seq,
    }


def step_details(step_id: str, raw: Any, *, exchanges: list[ModelExchangeRecord],
                 tool_calls: list[ToolCallRecord], state: StateAfter | None) -> dict[str, Any]:
    """What an opened step shows: its output, its model exchanges and tool calls as
    stored, and the state right after the write that recorded it (`state` None: not
    known, the store no longer keeps that write or the step has not finished)."""
    return {
        "id": step_id, "output": plain(_get(raw, "output")) if raw is not None else None,
        "exchanges": [{"turn": x.turn, "request_hash": x.request_hash,
                       "response": plain(x.response), "created_at": plain(x.created_at)}
                      for x in exchanges],
        "tool_calls": [{"call_id": t.call_id, "turn": t.turn, "name": t.name,
                        "status": t.status, "idempotent": t.idempotent,
                        "arguments": plain(t.arguments), "result": plain(t.result)}
                       for t in tool_calls],
        "state_after": None if state is None else {
            "seq": state.seq, "state": plain(state.state), "changed": state.changed,
            "removed": state.removed},
    }


def _deps_done(node: GraphNode | None, raws: Mapping[str, Any]) -> bool:
    return node is not None and all(
        _get(raws.get(d), "status") == "success" for d in node.depends_on)


def scrub_text(text: str, redact: Callable[[str], str] | None) -> str:
    """The app's second redaction pass, over the JSON text about to be sent: one pass
    over the whole text finds a secret wherever it sits (a key, a value, a nested
    string). Secrets are API keys and tokens, whose characters JSON does not escape."""
    return text if redact is None else redact(text)
