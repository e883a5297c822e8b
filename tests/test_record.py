"""`agentloom._record`: a frozen record built through `thaw`/`freeze` behaves as one built
with `set_field`, and as the frozen slotted dataclass both stand in for."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

import pytest

from agentloom._record import FrozenRecord, Record, freeze, frozen_record, set_field, thaw
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


def test_a_record_keeps_its_field_types_as_a_plain_dataclass_does() -> None:
    # `_make` tells `dataclass` the field types after processing (the string patterns it
    # would match them against cost most of a record's import); nothing of it may show.
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Plain:
        a: int
        b: str = "x"
        c: tuple[int, ...] = ()

    for cls in (Thawed, SetField):
        assert cls.__annotations__ == {"a": "int", "b": "str", "c": "tuple[int, ...]"}
        assert [(f.name, f.type, f.default, f.kw_only, f.init) for f in dataclasses.fields(cls)] \
            == [(f.name, f.type, f.default, f.kw_only, f.init) for f in dataclasses.fields(Plain)]
        assert cls.__slots__ == Plain.__slots__ == ("a", "b", "c")  # type: ignore[attr-defined]
    usage = {f.name: f.type for f in dataclasses.fields(Usage)}
    assert usage["input_tokens"] == "int | None" and usage["cost_usd"] == "Decimal | None"


def test_a_record_naming_a_dataclass_marker_is_made_the_plain_way() -> None:
    @frozen_record
    class WithClassVar(FrozenRecord):
        kind: ClassVar[str] = "k"
        a: int

        def __init__(self, *, a: int) -> None:
            set_field(self, "a", a)

    assert [f.name for f in dataclasses.fields(WithClassVar)] == ["a"]
    assert WithClassVar(a=1).kind == "k" and WithClassVar.__annotations__["kind"] == "ClassVar[str]"


def _shape(cls: type) -> dict[str, Any]:
    fields = [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare,
               f.hash, f.kw_only, dict(f.metadata)) for f in dataclasses.fields(cls)]
    own = {k for k in vars(cls) if k not in ("__dataclass_fields__", "__doc__")}
    return {"fields": fields, "slots": cls.__slots__,  # type: ignore[attr-defined]
            "match_args": cls.__match_args__,  # type: ignore[attr-defined]
            "params": repr(cls.__dataclass_params__),  # type: ignore[attr-defined]
            "own": own, "is_dataclass": dataclasses.is_dataclass(cls),
            "mro": [c.__name__ for c in cls.__mro__]}


def _twin_sources() -> list[tuple[str, bool]]:
    mutable = '''
class {name}(Base):
    """A record."""

    a: int
    b: str = "x"
    c: list[int] = field(default_factory=list)
    d: float = field(default=0.5, repr=False, compare=False, metadata={{"m": 1}})
    e: int = field(default=0, init=False)
'''
    child = '''
class {name}(Parent):
    """A record of a record."""

    b: str = "y"
    f: tuple[int, ...] = ()
'''
    return [(mutable, True), (mutable, False), (child, True)]


@pytest.mark.parametrize(("source", "kw_only"), _twin_sources())
def test_a_record_is_the_class_dataclass_would_make(source: str, kw_only: bool) -> None:
    # `_make` builds the class and its fields itself; what it builds must be exactly what
    # `dataclass(slots=True, init=False, repr=False, eq=False)` builds from the same source.
    namespace: dict[str, Any] = {"field": dataclasses.field, "Record": Record,
                                 "__name__": __name__}
    header = "from __future__ import annotations\n"
    parent = ("@record_maker\nclass Parent(Record):\n    a: int\n    b: str = 'x'\n"
              "    def __init__(self, *, a: int, b: str = 'x') -> None: ...\n")

    def build(maker: Any) -> type:
        ns = dict(namespace, record_maker=maker, Base=Record)
        if "Parent" in source:
            exec(header + parent, ns)
        exec(header + source.format(name="Made"), ns)
        return maker(ns["Made"])

    def plain(cls: type) -> type:
        return dataclasses.dataclass(slots=True, kw_only=kw_only, init=False, repr=False,
                                     eq=False)(cls)

    from agentloom import _record

    ours, theirs = build(lambda cls: _record._dataclass(cls, kw_only)), build(plain)
    assert _shape(ours) == _shape(theirs)
    assert ours.__qualname__ == theirs.__qualname__ and ours.__doc__ == theirs.__doc__
    for cls in (ours, theirs):
        obj = object.__new__(cls)
        for f in dataclasses.fields(cls):
            object.__setattr__(obj, f.name, 1 if f.name != "c" else [1])
        assert dataclasses.asdict(obj) == {f.name: getattr(obj, f.name)
                                           for f in dataclasses.fields(cls)}
        with pytest.raises(AttributeError):
            obj.not_a_field = 1  # type: ignore[attr-defined]  # slotted, no __dict__


def test_every_record_of_the_package_lists_its_fields_in_its_slots() -> None:
    import importlib
    import pkgutil

    import agentloom

    seen = 0
    for info in pkgutil.walk_packages(agentloom.__path__, "agentloom."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue  # an optional extra that is not installed
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, (Record, FrozenRecord))
                    and value.__module__ == info.name and dataclasses.is_dataclass(value)):
                names = [f.name for f in dataclasses.fields(value)]
                slots = [s for c in value.__mro__ for s in vars(c).get("__slots__", ())]
                assert set(names) <= set(slots), value
                assert value._names == tuple(names), value
                seen += 1
    assert seen > 60
