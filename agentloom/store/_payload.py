"""A checkpoint's or delta's payload column: the record as a JSON object and back.

Read back as hostile (`_stored`): a payload that is no object, a `state` that is a list,
step results that are text, a tool loop with fields no version wrote, each raises
`Damaged` naming the field, which the store reports as one error naming the run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentloom.store._records import Checkpoint, CheckpointDelta, PauseInfo, ToolLoopProgress
from agentloom.store._stored import (
    Damaged,
    stored_cost,
    stored_count,
    stored_list,
    stored_names,
    stored_object,
    stored_optional_text,
    stored_status,
    stored_text,
)


def _shallow(obj: Any) -> dict[str, Any]:
    # dataclasses.asdict would recurse into Message objects and lose their tags.
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def checkpoint_to_payload(cp: Checkpoint) -> dict[str, Any]:
    """The checkpoint fields that go into the payload column (not seq/created_at)."""
    return {
        "state": cp.state,
        "status": cp.status,
        "step_results": cp.step_results,
        "conversations": cp.conversations,
        "tool_loops": [_shallow(t) for t in cp.tool_loops],
        "paused": _shallow(cp.paused) if cp.paused is not None else None,
        "cost_usd": cp.cost_usd,
        "extra": cp.extra,
    }


def _payload(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise Damaged(f"the payload is {type(data).__name__}, not an object")
    return data


def _loops(value: Any, what: str) -> list[ToolLoopProgress]:
    out = []
    for i, raw in enumerate(stored_list(value, what)):
        where = f"{what}[{i}]"
        loop = stored_object(raw, where)
        unknown = set(loop) - {"step_id", "turn", "messages", "pending_calls", "results"}
        if unknown:
            raise Damaged(f"{where} has fields no store writes: {sorted(unknown)[:5]}")
        calls = stored_list(loop.get("pending_calls"), f"{where}.pending_calls")
        for call in calls:
            stored_object(call, f"a pending call of {where}")
        out.append(ToolLoopProgress(
            step_id=stored_text(loop.get("step_id"), f"{where}.step_id"),
            turn=stored_count(loop.get("turn"), f"{where}.turn"),
            messages=stored_list(loop.get("messages"), f"{where}.messages"),
            pending_calls=calls,
            results=stored_object(loop.get("results"), f"{where}.results")))
    return out


def _paused(value: Any) -> PauseInfo | None:
    if not value:
        return None
    paused = stored_object(value, "paused")
    unknown = set(paused) - {"step_id", "waiting_for", "prompt", "call_id", "data"}
    if unknown:
        raise Damaged(f"paused has fields no store writes: {sorted(unknown)[:5]}")
    return PauseInfo(step_id=stored_text(paused.get("step_id"), "paused.step_id"),
                     waiting_for=stored_text(paused.get("waiting_for"), "paused.waiting_for"),
                     prompt=stored_optional_text(paused.get("prompt"), "paused.prompt"),
                     call_id=stored_optional_text(paused.get("call_id"), "paused.call_id"),
                     data=stored_object(paused.get("data"), "paused.data"))


def checkpoint_from_payload(data: Any, *, seq: int, created_at: Any) -> Checkpoint:
    data = _payload(data)
    return Checkpoint(
        state=stored_object(data.get("state"), "state"),
        status=stored_status(data.get("status", "running")),
        step_results=stored_object(data.get("step_results"), "step_results"),
        conversations=stored_object(data.get("conversations"), "conversations"),
        tool_loops=_loops(data.get("tool_loops"), "tool_loops"),
        paused=_paused(data.get("paused")),
        cost_usd=stored_cost(data.get("cost_usd"), "cost_usd"),
        extra=stored_object(data.get("extra"), "extra"),
        seq=seq,
        created_at=created_at,
    )


def delta_to_payload(delta: CheckpointDelta) -> dict[str, Any]:
    """A delta's payload column: only the parts it has, so a step's row stays small."""
    out: dict[str, Any] = {"status": delta.status, "cost_usd": delta.cost_usd}
    for name in ("state", "state_removed", "step_results", "step_results_removed",
                 "conversations", "loop_messages_kept", "tool_loops_removed", "extra",
                 "extra_removed"):
        value = getattr(delta, name)
        if value:
            out[name] = value
    if delta.tool_loops:
        out["tool_loops"] = [_shallow(t) for t in delta.tool_loops]
    if delta.paused is not None:
        out["paused"] = _shallow(delta.paused)
    return out


def _kept(value: Any) -> dict[str, int]:
    kept = stored_object(value, "loop_messages_kept")
    for step_id, n in kept.items():
        stored_count(n, f"loop_messages_kept[{step_id!r:.60}]")
    return kept


def delta_from_payload(data: Any) -> CheckpointDelta:
    data = _payload(data)
    return CheckpointDelta(
        status=stored_status(data.get("status", "running")),
        state=stored_object(data.get("state"), "state"),
        state_removed=stored_names(data.get("state_removed"), "state_removed"),
        step_results=stored_object(data.get("step_results"), "step_results"),
        step_results_removed=stored_names(data.get("step_results_removed"),
                                          "step_results_removed"),
        conversations=stored_object(data.get("conversations"), "conversations"),
        tool_loops=_loops(data.get("tool_loops"), "tool_loops"),
        loop_messages_kept=_kept(data.get("loop_messages_kept")),
        tool_loops_removed=stored_names(data.get("tool_loops_removed"), "tool_loops_removed"),
        paused=_paused(data.get("paused")),
        cost_usd=stored_cost(data.get("cost_usd"), "cost_usd"),
        extra=stored_object(data.get("extra"), "extra"),
        extra_removed=stored_names(data.get("extra_removed"), "extra_removed"),
    )
