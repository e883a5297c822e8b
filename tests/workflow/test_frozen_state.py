"""`lang.frozen`: the state a `map`'s items share, frozen, and copied only where written."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from agentloom.workflow.engine.nested import deep_copy
from agentloom.workflow.lang.frozen import FrozenDict, Snapshot, freeze, thaw
from agentloom.workflow.lang.paths import PathError, assign, parse_path

ROWS = 20


def _state() -> dict[str, Any]:
    return {"rows": [{"k": i, "tags": ["a"]} for i in range(ROWS)],
            "config": {"mode": "x", "seen": []}}


def test_a_frozen_container_refuses_every_change_in_place() -> None:
    d = freeze({"a": [1, {"b": 2}]})
    assert isinstance(d, dict) and isinstance(d["a"], list) and d == {"a": [1, {"b": 2}]}
    for change in (lambda: d.__setitem__("c", 1), lambda: d.update(c=1), d.clear,
                   lambda: d.pop("a"), lambda: d.setdefault("c", 1), d.popitem,
                   lambda: d.__delitem__("a"), lambda: d["a"].append(3),
                   lambda: d["a"].extend([3]), lambda: d["a"].insert(0, 3),
                   d["a"].pop, d["a"].clear, d["a"].reverse, lambda: d["a"][1].update(b=3),
                   lambda: d["a"].__setitem__(0, 9), lambda: d["a"].remove(1)):
        with pytest.raises(TypeError, match="shared"):
            change()
    assert d == {"a": [1, {"b": 2}]}
    assert freeze(d) is d and json.loads(json.dumps(d)) == d
    for again in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d), copy.copy(d)):
        assert again == d and isinstance(again, FrozenDict)
    plain = thaw(d)
    assert type(plain) is dict and type(plain["a"]) is list and type(plain["a"][1]) is dict
    untouched = {"x": [1, 2]}
    assert thaw(untouched) is untouched


def test_a_write_into_a_view_copies_only_its_path() -> None:
    live = _state()
    snap = Snapshot(live)
    one, two = snap.view(), snap.view()
    assert one is not two and one["rows"] is two["rows"]  # one frozen copy, shared
    assign(one, parse_path("rows[3].tags[0]"), "mine")
    assert one["rows"][3]["tags"] == ["mine"]
    assert two["rows"][3]["tags"] == ["a"] and live["rows"][3]["tags"] == ["a"]
    assert type(one["rows"]) is list and type(one["rows"][3]) is dict
    assert all(one["rows"][i] is two["rows"][i] for i in range(ROWS) if i != 3)
    assert one["config"] is two["config"]  # not on the path: still shared
    # the live state's later writes, in place or not, show in no view: a view is the
    # state as the snapshot was taken
    assign(live, parse_path("config.mode"), "y")
    live["rows"] = [1]
    three = snap.view()
    assert three["config"]["mode"] == "x" and len(three["rows"]) == ROWS
    assert live["config"]["mode"] == "y"


def test_a_failed_write_into_a_view_changes_no_value() -> None:
    snap = Snapshot(_state())
    view = snap.view()
    with pytest.raises(PathError, match="no item"):
        assign(view, parse_path("rows[99].k"), 1)
    assert view == _state()


def test_deep_copy_shares_what_is_frozen_and_copies_the_rest() -> None:
    frozen = freeze([1, 2])
    value = {"shared": frozen, "own": [3]}
    got = deep_copy(value)
    assert got == value and got["shared"] is frozen
    assert got["own"] is not value["own"] and got is not value


def test_a_value_handed_on_from_a_view_is_copied_where_its_new_owner_writes() -> None:
    # A subworkflow's `input` puts an item's value itself into the child's new state:
    # the child's write below it copies it, and the item's view keeps the shared one.
    view = Snapshot(_state()).view()
    child = {"cfg": view["config"]}
    assign(child, parse_path("cfg.mode"), "child")
    assert child["cfg"] == {"mode": "child", "seen": []}
    assert view["config"] == {"mode": "x", "seen": []}
