"""DeltaBuilder finds what changed since the last write, however it changed, and a chain
of its deltas applied to the first checkpoint gives back the live state exactly."""

from __future__ import annotations

import copy
from typing import Any

from agentloom.messages import Message
from agentloom.store import Checkpoint, CheckpointDelta, DeltaBuilder, MemoryStore, apply_delta


def _take(b: DeltaBuilder, state: dict[str, Any], **kw: Any) -> Any:
    delta = b.take(state, status="running", paused=None, cost_usd=None,
                   extra=kw.pop("extra", {}), **kw)
    b.commit()
    return delta


def test_only_changed_keys_go_in_a_delta() -> None:
    state: dict[str, Any] = {"topic": "x", "report": {"a": 1}, "items": [1]}
    b = DeltaBuilder()
    b.baseline(state)
    assert _take(b, state).state == {}
    state["o1"] = "one"  # a new key
    state["topic"] = "y"  # a replaced value
    state["report"]["b"] = 2  # changed in place (`output: report.b`)
    state["items"].append(2)
    d = _take(b, state)
    assert d.state == {"o1": "one", "topic": "y", "report": {"a": 1, "b": 2}, "items": [1, 2]}
    assert d.state_removed == []
    assert _take(b, state).state == {}, "nothing changed since"
    state["report"]["nested"] = {"deep": [1]}
    assert _take(b, state).state == {"report": state["report"]}
    state["report"]["nested"]["deep"].append(2)  # deep in place
    assert _take(b, state).state == {"report": state["report"]}


def test_removed_and_reinserted_keys() -> None:
    state: dict[str, Any] = {"a": 1, "b": "two", "c": 3}
    b = DeltaBuilder()
    b.baseline(state)
    del state["b"]
    d = _take(b, state)
    assert (d.state, d.state_removed) == ({}, ["b"])
    state["b"] = "two"  # back, now last in the key order
    state.pop("a")
    state["a"] = 1  # the same object, moved
    d = _take(b, state)
    assert d.state == {"b": "two"} and d.state_removed == []
    state["c"] = 4
    assert _take(b, state).state == {"c": 4}, "the order was followed again"
    assert _take(b, state).state == {}


def test_a_failed_write_is_retried_whole_by_the_next_one() -> None:
    state: dict[str, Any] = {}
    b = DeltaBuilder()
    b.baseline(state)
    state["o1"] = "one"
    b.step_result("s1", {"text": "one"})
    first = b.take(state, status="running", paused=None, cost_usd=None, extra={})
    # no commit: the store refused the write
    state["o2"] = "two"
    b.step_result("s2", {"text": "two"})
    d = _take(b, state)
    assert d.state == {"o1": "one", "o2": "two"} and first.state == {"o1": "one"}
    assert set(d.step_results) == {"s1", "s2"}
    assert _take(b, state).step_results == {}


def test_results_of_nested_runs_are_dropped_by_prefix() -> None:
    b = DeltaBuilder()
    b.baseline({})
    b.step_result("sub/a", {"text": "a"})
    _take(b, {})
    b.step_result("sub/b", {"text": "b"})  # not written yet: just forgotten
    b.step_result("subway", {"text": "top"})
    b.drop_prefix("sub/")
    d = _take(b, {})
    assert d.step_results == {"subway": {"text": "top"}}
    assert d.step_results_removed == ["sub/a"]
    assert _take(b, {}).step_results_removed == []


def test_a_loop_appends_while_its_stored_messages_are_a_prefix() -> None:
    b = DeltaBuilder()
    b.baseline({})
    msgs = [Message.user("q"), Message.assistant("call")]
    b.loop_turn("agent", 1, msgs)
    d = _take(b, {})
    assert d.loop_messages_kept == {} and d.tool_loops[0].messages == msgs
    msgs = [*msgs, Message.user("result")]
    b.loop_turn("agent", 2, msgs)
    d = _take(b, {})
    assert d.loop_messages_kept == {"agent": 2}
    assert d.tool_loops[0].messages == msgs[2:]
    trimmed = [Message.system("summary"), msgs[-1]]
    b.loop_turn("agent", 3, trimmed)
    d = _take(b, {})
    assert d.loop_messages_kept == {} and d.tool_loops[0].messages == trimmed
    b.drop_loop("agent")
    d = _take(b, {})
    assert d.tool_loops == [] and d.tool_loops_removed == ["agent"]
    b.drop_loop("never-written")
    assert _take(b, {}).tool_loops_removed == []


def test_redaction_applies_to_what_is_written_only() -> None:
    b = DeltaBuilder()
    state: dict[str, Any] = {"k": "plain"}
    b.baseline(state)
    state["secret"] = "s3cr3t"
    d = _take(b, state, redact=lambda v: {k: "***" for k in v})
    assert d.state == {"secret": "***"}
    assert state["secret"] == "s3cr3t"


def test_extra_keys_set_and_removed() -> None:
    b = DeltaBuilder()
    b.baseline({})
    assert _take(b, {}, extra={"not_taken": {}}).extra == {"not_taken": {}}
    assert _take(b, {}, extra={"not_taken": {}}).extra == {}
    d = _take(b, {}, extra={"not_taken": {"x": "r"}, "loop_usage": {}})
    assert d.extra == {"not_taken": {"x": "r"}, "loop_usage": {}}
    d = _take(b, {}, extra={"loop_usage": {}})
    assert d.extra == {} and d.extra_removed == ["not_taken"]


async def test_a_random_walk_of_writes_rebuilds_the_live_state() -> None:
    import random

    rng = random.Random(7)
    store = MemoryStore()
    state: dict[str, Any] = {"seed": [0]}
    await store.create_run("r", "flow", "h", copy.deepcopy(state))
    b = DeltaBuilder()
    b.baseline(state)
    for step in range(300):
        key = f"k{rng.randrange(20)}"
        action = rng.random()
        if action < 0.4:
            state[key] = f"v{step}"
        elif action < 0.6:
            state.setdefault(key, {})
            if isinstance(state[key], dict):
                state[key][f"n{step % 3}"] = step  # in place
        elif action < 0.75:
            state.pop(key, None)
        elif action < 0.85 and key in state:
            state[key] = state.pop(key)  # moved in the key order
        else:
            state.setdefault("seed", []).append(step)
        delta = b.take(state, status="running", paused=None, cost_usd=None, extra={})
        await store.save_delta("r", delta)
        b.commit()
        cp = await store.load_latest("r")  # through the serializer: no shared objects
        assert cp is not None and cp.state == state, step


def test_apply_delta_sets_removes_and_replaces() -> None:
    cp = Checkpoint(state={"a": 1, "b": 2}, step_results={"s": {}}, extra={"x": 1})
    apply_delta(cp, CheckpointDelta(state={"c": 3}, state_removed=["a"], status="failed",
                                    step_results_removed=["s"], extra={"y": 2}),
                seq=4, created_at=None)
    assert (cp.state, cp.step_results, cp.extra, cp.status, cp.seq) == (
        {"b": 2, "c": 3}, {}, {"x": 1, "y": 2}, "failed", 4)


def test_a_value_changed_in_place_while_its_write_is_on_the_way_is_written_next() -> None:
    state: dict[str, Any] = {"report": {"a": 1}}
    b = DeltaBuilder()
    b.baseline(state)
    state["report"]["b"] = 2
    delta = b.take(state, status="running", paused=None, cost_usd=None, extra={})
    state["report"]["c"] = 3  # a parallel step, before the store answered
    b.commit()
    assert delta.state == {"report": {"a": 1, "b": 2}}, "the delta holds the value as taken"
    assert _take(b, state).state == {"report": {"a": 1, "b": 2, "c": 3}}


def test_a_value_that_cannot_be_copied_is_written_live_and_refused_by_its_own_name() -> None:
    import threading

    from agentloom.store import JsonSerializer, StoreError

    b = DeltaBuilder()
    b.baseline({})
    state: dict[str, Any] = {"box": {"lock": threading.Lock()}}
    delta = _take(b, state)
    assert delta.state["box"] is state["box"]
    try:
        JsonSerializer().dumps(delta.state)
    except StoreError as exc:
        assert "lock" in str(exc).lower()
    else:
        raise AssertionError("a lock must not be storable")
    assert _take(b, state).state == {"box": state["box"]}, "compared as changed each time"
