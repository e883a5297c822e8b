"""State that several runs read at once: frozen dicts and lists, copied only where written.

A `map` runs every item on the state as it was when the item started, and no item may
see another's writes or change the state of the run around it. A copy of the whole state
per item gave that, at a cost in the state's size for every item: 3,000 items over a
state holding a 3,000-entry list spent seconds copying a list no item changed.

Instead each value of the state is frozen once (`freeze`: a `FrozenDict` or `FrozenList`
at every level, the same object for what is already frozen) and the items share it; each
item gets a top-level dict of its own (`Snapshot.view`). A frozen container refuses every
change in place (TypeError), so what is shared can't be changed through it; `assign`, the
one writer of state (a step's `output`, a conversation, a restored result), replaces each
frozen container on its way down with a plain copy of one level (`thawed`) before it
writes below it, so a write copies the containers on its path and nothing else, and the
copy is the writing run's own. Anything else that reaches a state value gets no
reference it could change: templates render text, a `tool` step's arguments reach the
tool as JSON, router expressions only call pure functions.

The live state the snapshot is taken of stays plain and is written as before; the views
show it as it was when the snapshot was taken (a `map` takes one as it starts), whatever
a step beside the map writes meanwhile, so which state an item runs on never depends on
when the scheduler happened to start it. Into the state around the map, frozen values
leave an item only through its output, thawed (`thaw`).
"""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a shared {type(self).__name__} can't be changed in place; "
                    "write it through the state (`output:`), which copies it")


class FrozenDict(dict[Any, Any]):
    """A dict several runs share: reads as a dict (and is one, for `isinstance` and JSON),
    refuses every change in place."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy rebuild it whole
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A list several runs share: reads as a list (and is one), refuses every change in
    place."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it frozen: the same object if it is frozen
    already, else a frozen copy (reusing what is frozen below). Anything else (text,
    numbers, a structured output) is kept as it is, as `nested.deep_copy` keeps it."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """`value` with no frozen container in it: the same object when it holds none, else
    a copy with plain dicts and lists wherever a frozen one was (and on the way to it)."""
    if isinstance(value, FrozenDict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, FrozenList):
        return [thaw(v) for v in value]
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for k, v in value.items():
            t = thaw(v)
            if t is not v:
                if out is None:
                    out = dict(value)
                out[k] = t
        return value if out is None else out
    if isinstance(value, list):
        changed: list[Any] | None = None
        for i, v in enumerate(value):
            t = thaw(v)
            if t is not v:
                if changed is None:
                    changed = list(value)
                changed[i] = t
        return value if changed is None else changed
    return value


def is_frozen(value: Any) -> bool:
    return isinstance(value, FrozenDict | FrozenList)


def thawed(value: FrozenDict | FrozenList) -> dict[Any, Any] | list[Any]:
    """A plain copy of one level of a frozen container (its values still shared)."""
    return dict(value) if isinstance(value, dict) else list(value)


class Snapshot:
    """Frozen views of a state as it was when the snapshot was taken: every value frozen
    once, at the start, and shared by every view."""

    __slots__ = ("_base",)

    def __init__(self, state: dict[str, Any]) -> None:
        self._base = {k: freeze(v) for k, v in state.items()}

    def view(self) -> dict[str, Any]:
        """A new top-level dict over the frozen values: one step per top-level key."""
        return dict(self._base)
