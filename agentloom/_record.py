"""Slotted dataclasses whose methods are written in the source, frozen or not.

`@dataclass(frozen=True, slots=True)` writes each class's `__init__`, `__repr__`,
`__eq__`, `__hash__`, `__setattr__` and `__delattr__` as text and compiles it at import:
about 4 M instructions per class (a mutable one ~2.4 M), paid on every start of the CLI.
A class here subclasses `FrozenRecord` (equality, hashing, repr, immutability and pickling
by field, as the generated methods behave) or `Record` (equality and repr, unhashable:
a mutable dataclass) and writes its own `__init__`; `frozen_record` / `record` make it a
real dataclass (`dataclasses.fields`, `replace`, `asdict` work) without generating
anything, and check at import that the `__init__` names exactly the class's fields, in
order, with their defaults (`FACTORY` for a field with a default factory).

A frozen record's `__init__` sets its fields on a thawed self:

    def __init__(self, *, role: Role, parts: tuple[Part, ...] = ()) -> None:
        this = thaw(self)
        this.role = role
        this.parts = parts
        freeze(this)

`thaw` swaps the object's class for its twin, a subclass with no slots of its own (the
same layout) and the plain `object.__setattr__`, so each field is set by a STORE_ATTR
that the interpreter specialises for slots (~50 instructions) instead of a call of
`object.__setattr__` (~1,100: a wrapper descriptor builds a bound wrapper and an argument
tuple per call); `freeze` swaps the class back, so `type(record) is Cls` afterwards and
assignment raises again. The two swaps cost about as much as 1.6 `set_field` calls (an
Agent call's `Message`, 3 fields: 6.8 k -> 5.7 k instructions per construction; its
`ModelRequest`, 14 fields, ~16 k -> ~3.5 k), so a record of one or two fields keeps
`set_field`, which still works for any record. A twin is made on a class's first
construction, not at import: making one costs ~65 k instructions, more than a start of
the CLI would win back on the classes it builds once. A subclass gets a twin of its own
(twins are per exact class); one whose `__init__` calls its base's calls it first, then
thaws (the base's `freeze` ends the thaw).

The cheapest of all is a positional factory of the record's own module that builds the
twin and swaps once, with no class call (`object.__new__(TWINS[Cls])`, a STORE_ATTR per
field, `obj.__class__ = Cls`: a 3-field `Message` ~2.2 k instructions against 6.6 k for
`Message(role=..., ...)`); it is kept for the records made on every model call, where a
caller is changed to use it. What was measured and not taken: the member descriptors'
own setters (`Cls.f.__set__`, ~670 instructions a field, no twin) save less; a `__new__`
that returns a twin costs more than it saves (the keyword arguments are copied into a
dict twice).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

_T = TypeVar("_T")

set_field = object.__setattr__
"""What a `FrozenRecord`'s `__init__` may set a field with (the frozen dataclass's way)."""

_set_class = vars(object)["__class__"].__set__
"""`object.__setattr__(obj, "__class__", cls)` without the lookup of `__class__`."""


class _Twins(dict[type, type]):
    """Each frozen class's mutable twin, made on first use."""

    def __missing__(self, cls: type) -> type:
        if "__frozen__" in vars(cls):  # already thawed (a base class's __init__ inside)
            return cls
        twin = type(cls.__name__, (cls,), {
            "__slots__": (), "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__setattr__": object.__setattr__, "__delattr__": object.__delattr__,
            "__frozen__": cls,
        })
        self[cls] = twin
        return twin


_twins = _Twins()
TWINS: dict[type, type] = _twins
"""Each frozen class's mutable twin (made on first lookup), for a positional factory:
`obj = object.__new__(TWINS[Cls])`, its fields set, then `obj.__class__ = Cls`."""


def thaw(record: FrozenRecord) -> Any:
    """`record`, assignable until `freeze(record)` (its class is its mutable twin)."""
    _set_class(record, _twins[record.__class__])
    return record


def freeze(record: Any) -> None:
    """Ends `thaw(record)`: `record` is of its own class again, and frozen."""
    record.__class__ = record.__frozen__


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


_SPECIAL = re.compile(r"\b(ClassVar|InitVar|KW_ONLY)\b")
"""Annotations `dataclass` treats apart (not fields, or a marker): not record fields."""

FACTORY: Any = _Factory()
"""Default of a field with a default factory: "not given", as the generated __init__ has."""


class Record:
    """Slotted value behaviour: what `@dataclass(slots=True)` gives (unhashable)."""

    __slots__ = ()
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    _names: tuple[str, ...] = ()
    _shown: tuple[str, ...] = ()
    """The fields in the repr (`field(repr=False)` leaves one out)."""
    _key: Callable[[Any], Any] = staticmethod(lambda self: ())
    """The values compared and hashed (`field(compare=False)` leaves one out)."""

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self._key
            result: bool = key(self) == key(other)
            return result
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._shown)
        return f"{self.__class__.__qualname__}({body})"


class FrozenRecord(Record):
    """Frozen, slotted value behaviour: what `@dataclass(frozen=True, slots=True)` gives."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Record's None: unhashable
        return hash(self._key(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list[Any]:
        return [getattr(self, n) for n in self._names]

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self._names, state, strict=True):
            set_field(self, name, value)


if TYPE_CHECKING:
    from typing import dataclass_transform, overload

    # What the type checker sees: a frozen (by default keyword-only) dataclass.
    @overload
    @dataclass_transform(kw_only_default=True, frozen_default=True)
    def frozen_record(cls: type[_T], /) -> type[_T]: ...

    @overload
    def frozen_record(*, kw_only: bool = True) -> Callable[[type[_T]], type[_T]]: ...

    def frozen_record(cls: type[_T] | None = None, /, *, kw_only: bool = True) -> Any: ...

    @overload
    @dataclass_transform(kw_only_default=True)
    def record(cls: type[_T], /) -> type[_T]: ...

    @overload
    def record(*, kw_only: bool = True) -> Callable[[type[_T]], type[_T]]: ...

    def record(cls: type[_T] | None = None, /, *, kw_only: bool = True) -> Any: ...

else:

    def frozen_record(cls=None, /, *, kw_only=True):
        """`@frozen_record` (keyword-only fields) or `@frozen_record(kw_only=False)`."""
        if cls is None:
            return lambda cls: _make(cls, kw_only)
        return _make(cls, kw_only)

    record = frozen_record  # the base class (`Record` or `FrozenRecord`) makes the difference

    def _dataclass(cls, kw_only):
        """`dataclass(slots=True, kw_only=kw_only, init=False, repr=False, eq=False)(cls)`,
        told the field types after the fact: it matches each annotation string against
        ClassVar, InitVar and KW_ONLY, most of a record's cost at import, and none of these
        is a record's field type (a record naming one is made the plain way).
        `tests/test_record.py` holds the result equal to what `dataclass` makes."""
        written = inspect.get_annotations(cls)
        if any(_SPECIAL.search(a) for a in written.values() if type(a) is str):
            return dataclass(slots=True, kw_only=kw_only, init=False, repr=False,
                             eq=False)(cls)
        cls.__annotations__ = dict.fromkeys(written, object)
        try:
            made = dataclass(slots=True, kw_only=kw_only, init=False, repr=False,
                             eq=False)(cls)
        finally:
            cls.__annotations__ = written
        made.__annotations__ = written
        for f in made.__dataclass_fields__.values():
            if f.name in written:
                f.type = written[f.name]
        return made

    def _make(cls, kw_only):
        cls = _dataclass(cls, kw_only)
        fields = dataclasses.fields(cls)
        names = tuple(f.name for f in fields)
        # A `field(init=False)` is no parameter: `__post_init__` sets it, as generated.
        taken = tuple(f.name for f in fields if f.init)
        code = cls.__init__.__code__
        params = code.co_varnames[1:len(taken) + 1]
        if kw_only:
            given = cls.__init__.__kwdefaults__ or {}
            shape = (code.co_argcount, code.co_kwonlyargcount) == (1, len(taken))
        else:
            values = cls.__init__.__defaults__ or ()
            given = dict(zip(params[len(params) - len(values):], values, strict=True))
            shape = (code.co_argcount, code.co_kwonlyargcount) == (1 + len(taken), 0)
        expected = {f.name: FACTORY if f.default is dataclasses.MISSING else f.default
                    for f in fields
                    if f.init and (f.default is not dataclasses.MISSING
                                   or f.default_factory is not dataclasses.MISSING)}
        if params != taken or given != expected or not shape:  # pragma: no cover
            raise TypeError(f"{cls.__name__}.__init__ does not match its fields")
        cls._names = names
        cls._shown = tuple(f.name for f in fields if f.repr)
        compared = tuple(f.name for f in fields if f.compare)
        # attrgetter is no descriptor, so it stays unbound on instances; one name gives a
        # bare value (and none is an error), so those are wrapped (as static methods).
        if len(compared) > 1:
            cls._key = attrgetter(*compared)
        elif compared:
            get = attrgetter(*compared)
            cls._key = staticmethod(lambda obj: (get(obj),))
        else:
            cls._key = staticmethod(lambda obj: ())
        return cls
