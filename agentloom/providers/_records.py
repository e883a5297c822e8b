"""Builders for the frozen records every call makes: usage, responses, parts, attempts.

A frozen dataclass's `__init__` sets each field through `object.__setattr__` (the class
refuses plain assignment), behind the type call's own dispatch; for the eight fields of a
`Usage` that is about twice the work of the object itself. `record_maker(cls)` gives a
function with the class's keyword-only signature and defaults that makes the same
instance by writing each slot through its descriptor. Same type, fields, equality, hash
and repr; the instance is as frozen as any other. A class this does not fit (no slots,
a `__post_init__`, a field outside `__init__`, a default factory, a positional field)
gets its own constructor back, so a change to a record type can never make the two
disagree. Used on the per-call path only; everywhere else the constructors are clearer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any, ParamSpec, TypeVar

from agentloom.messages import ModelResponse, TextPart, Usage
from agentloom.providers._base import AttemptRecord

P = ParamSpec("P")
T = TypeVar("T")

_RESERVED = frozenset({"_new", "_cls", "self", "make"})


def record_maker(cls: Callable[P, T]) -> Callable[P, T]:
    """`make = record_maker(Usage)`; `make(input_tokens=3)` == `Usage(input_tokens=3)`."""
    slots = _slots(cls) if isinstance(cls, type) else None
    if slots is None:
        return cls
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params: list[str] = []
    body: list[str] = []
    for i, (f, slot) in enumerate(slots):
        namespace[f"_set{i}"] = slot.__set__
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        body.append(f"    _set{i}(self, {f.name})\n")
    source = (f"def make(*, {', '.join(params)}):\n    self = _new(_cls)\n"
              f"{''.join(body)}    return self\n")
    exec(source, namespace)  # the way dataclasses writes `__init__` itself
    make: Callable[P, T] = namespace["make"]
    make.__qualname__ = make.__name__ = f"make_{cls.__name__}"
    make.__doc__ = f"A `{cls.__name__}`, as `{cls.__name__}(**fields)` makes it."
    return make


def _slots(cls: type) -> list[tuple[dataclasses.Field[Any], Any]] | None:
    """Each field with its slot descriptor, or None if the class does not fit."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    found = []
    for f in dataclasses.fields(cls):
        slot = getattr(cls, f.name, None)
        if (type(slot) is not MemberDescriptorType or not f.init or not f.kw_only
                or f.name in _RESERVED or f.default_factory is not dataclasses.MISSING):
            return None
        found.append((f, slot))
    return found


make_usage = record_maker(Usage)
make_response = record_maker(ModelResponse)
make_text = record_maker(TextPart)
make_attempt = record_maker(AttemptRecord)
