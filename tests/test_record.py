"""`agentloom._record`: a frozen record built through `thaw`/`freeze` behaves as one built
with `set_field`, and as the frozen slotted dataclass both stand in for."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from agentloom._record import FrozenRecord, freeze, frozen_record, set_field, thaw
from agentloom.messages import ModelRequest, Usage


@frozen_record
class Thawed(FrozenRecord):
    a: int
    b: str = "x"
    c: tuple[int, ...] = ()

    def __init__(self, *, a: int, b: str = "x", c: tuple[int, ...] = ()) -> None:
        this = thaw(self)
        this.a = a
        this.b = b
        this.c = c
        freeze(this)


@frozen_record
class SetField(FrozenRecord):
    a: int
    b: str = "x"
    c: tuple[int, ...] = ()

    def __init__(self, *, a: int, b: str = "x", c: tuple[int, ...] = ()) -> None:
        set_field(self, "a", a)
        set_field(self, "b", b)
        set_field(self, "c", c)


@frozen_record
class Sub(Thawed):
    d: int = 0

    def __init__(self, *, a: int, b: str = "x", c: tuple[int, ...] = (), d: int = 0) -> None:
        # First (the base's freeze ends a thaw); no bare super(): slots=True makes a new class.
        Thawed.__init__(self, a=a, b=b, c=c)
        this = thaw(self)
        this.d = d
        freeze(this)


@pytest.mark.parametrize("cls", [Thawed, SetField])
def test_a_record_is_of_its_own_class_and_frozen(cls: Any) -> None:
    r = cls(a=1, c=(2,))
    assert type(r) is cls
    with pytest.raises(FrozenInstanceError, match="'a'"):
        r.a = 2
    with pytest.raises(FrozenInstanceError, match="'b'"):
        del r.b
    with pytest.raises(FrozenInstanceError):
        r.__class__ = cls
    assert (r.a, r.b, r.c) == (1, "x", (2,))


def test_thaw_freeze_keep_the_value_behaviour() -> None:
    r = Thawed(a=1, b="y")
    assert r == Thawed(a=1, b="y") and r != Thawed(a=2, b="y")
    assert hash(r) == hash(Thawed(a=1, b="y"))
    assert repr(r) == "Thawed(a=1, b='y', c=())"
    assert r != SetField(a=1, b="y")  # another class: not equal, as a dataclass
    for clone in (pickle.loads(pickle.dumps(r)), copy.copy(r), copy.deepcopy(r)):
        assert clone == r and type(clone) is Thawed
    changed = dataclasses.replace(r, c=(3,))
    assert type(changed) is Thawed and changed.c == (3,) and changed.a == 1
    assert [f.name for f in dataclasses.fields(r)] == ["a", "b", "c"]
    assert dataclasses.asdict(r) == {"a": 1, "b": "y", "c": ()}
    assert dataclasses.is_dataclass(r)


def test_a_subclass_thaws_to_its_own_twin() -> None:
    s = Sub(a=1, d=4)
    assert type(s) is Sub and isinstance(s, Thawed)
    assert (s.a, s.d) == (1, 4)
    assert repr(s) == "Sub(a=1, b='x', c=(), d=4)"
    with pytest.raises(FrozenInstanceError):
        s.d = 5
    assert type(Thawed(a=1)) is Thawed  # the base's twin is not the subclass's


def test_thaw_of_a_thawed_record_is_the_same_thaw() -> None:
    r = Thawed(a=1)
    this = thaw(r)
    assert thaw(this) is r and isinstance(r, Thawed) and type(r) is not Thawed
    this.a = 5
    freeze(this)
    assert type(r) is Thawed and r.a == 5
    with pytest.raises(FrozenInstanceError):
        r.a = 6


def test_converted_message_types_stay_frozen_records() -> None:
    u = Usage(input_tokens=1, output_tokens=2)
    assert type(u) is Usage and u + u == Usage(input_tokens=2, output_tokens=4)
    assert type(u.with_cost(None)) is Usage
    with pytest.raises(FrozenInstanceError):
        u.input_tokens = 3
    req = ModelRequest(model="m", messages=())
    assert type(req) is ModelRequest and req.extra == {} and req.extra is not req.headers
    assert type(req.replace(model="n")) is ModelRequest
