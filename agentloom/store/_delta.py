"""Building a run's checkpoint deltas: what changed since its last write, found without
encoding, or even comparing, what did not.

A run writes a `CheckpointDelta` per step and per tool-loop turn; `DeltaBuilder` keeps
what the store holds in the form cheapest to compare against. For the state, that is
the object each top-level key held when it was written: a key whose object is the same
one, and immutable (a string, a number), is unchanged, and the scan that finds the
others runs in C (`map`/`compress`), so a 1,000-key state costs microseconds, not a
re-encoding. A mutable value (a dict, a list, a model) may be changed in place (`output:
report.summary` writes into `report`), so a copy of it as written is kept and compared
by value. Step results and loop turns are told to the builder as they happen; a loop's
conversation is appended to, not rewritten, while its stored messages are a prefix of
the live ones.

`take()` builds the next delta, `commit()` records that the store now holds it (call it
only after the write succeeded, so a failed write is retried whole by the next one), and
`baseline()` resets to a whole checkpoint just written.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from itertools import compress, islice, repeat
from operator import is_not, ne
from typing import Any

from agentloom._record import Record, record
from agentloom.store._records import CheckpointDelta, PauseInfo, RunStatus, ToolLoopProgress

_MISSING: Any = object()
_IMMUTABLE = frozenset({str, int, float, bool, type(None), Decimal, bytes})


class _Uncopyable:
    """Stands for a value that could not be copied: equal to nothing, so its key is
    written again each time (correct, only slower)."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def _snapshot(value: Any) -> Any:
    t = type(value)
    if t is dict or t is list:
        items = [_snapshot(v) for v in (value.values() if t is dict else value)]
        if any(type(v) is _Uncopyable for v in items):
            return _Uncopyable()  # then the live value is written, and refused by name
        return dict(zip(value, items, strict=True)) if t is dict else items
    if t in _IMMUTABLE:
        return value
    try:
        return copy.deepcopy(value)
    except Exception:  # any value a deep copy refuses is compared as changed
        return _Uncopyable()


def _differ(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # a value without a plain `!=` counts as changed
        return True


def _same_extra(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value without a plain `==`: compared key by key
        return False


Redact = Callable[[Any], Any]


class DeltaBuilder:
    """One run's view of what its store holds (see the module docstring)."""

    def __init__(self) -> None:
        self._shadow: dict[str, Any] = {}
        """State key -> the live object it held when written."""
        self._copies: dict[str, Any] = {}
        """State key -> a copy of a mutable value as written."""
        self._results: dict[str, Any] = {}
        self._results_removed: set[str] = set()
        self._nested: set[str] = set()
        """Stored result keys of nested runs (`parent/step`): the ones a prefix drops."""
        self._turns: dict[str, tuple[int, list[Any]]] = {}
        """Step -> (turn, live messages) of loop turns not written yet."""
        self._loops_removed: set[str] = set()
        self._messages: dict[str, list[Any]] = {}
        """Step -> the live messages its stored loop holds (the objects, not copies)."""
        self._extra: dict[str, Any] = {}
        self._pending: _Taken | None = None
        self._nesting = False
        """Whether a nested key (`parent/step`) was ever told: until then no prefix has
        anything to drop (a chain's steps are all top-level)."""

    # --- what happened since the last write -----------------------------------------

    def step_result(self, key: str, raw: Any) -> None:
        if "/" in key:
            self._nesting = True
        self._results[key] = raw
        self._results_removed.discard(key)

    def loop_turn(self, step_id: str, turn: int, messages: list[Any]) -> None:
        if "/" in step_id:
            self._nesting = True
        self._turns[step_id] = (turn, list(messages))
        self._loops_removed.discard(step_id)

    def drop_loop(self, step_id: str) -> None:
        self._turns.pop(step_id, None)
        taken = self._pending.turns if self._pending is not None else {}
        if step_id in self._messages or step_id in taken:
            self._loops_removed.add(step_id)

    def drop_prefix(self, prefix: str) -> None:
        """Forget the results and loops of the nested runs under `prefix`."""
        if not self._nesting:
            return
        for key in [k for k in self._results if k.startswith(prefix)]:
            del self._results[key]
        taken = self._pending.results if self._pending is not None else {}
        for key in [k for k in (*self._nested, *taken) if k.startswith(prefix)]:
            self._results_removed.add(key)
        for step_id in [k for k in (*self._turns, *self._messages) if k.startswith(prefix)]:
            self.drop_loop(step_id)

    # --- writes ----------------------------------------------------------------------

    def take(self, state: Mapping[str, Any], *, status: RunStatus, paused: PauseInfo | None,
             cost_usd: Decimal | None, extra: Mapping[str, Any],
             redact: Redact | None = None) -> CheckpointDelta:
        """The delta that brings the stored checkpoint to now."""
        changed, removed, misaligned = self._state_changes(state)
        live = {k: state[k] for k in changed}
        # Mutable values are copied now, not after the write: a parallel step may change
        # one in place while the write is on its way, and the delta holds the copy, so
        # what is stored and what the next take compares against are the same value.
        copies = {k: _snapshot(v) for k, v in live.items() if type(v) not in _IMMUTABLE}
        written = {**live, **{k: c for k, c in copies.items() if type(c) is not _Uncopyable}}
        redact = redact or _same
        loops, kept = self._loop_changes(redact)
        if _same_extra(extra, self._extra):  # the usual step: one comparison, in C
            extra_sets, extra_removed = {}, []
        else:
            extra_sets = {k: v for k, v in extra.items()
                          if _differ(v, self._extra.get(k, _MISSING))}
            extra_removed = [k for k in self._extra if k not in extra]
        self._pending = _Taken(state=live, copies=copies, removed=removed,
                               results=dict(self._results),
                               results_removed=set(self._results_removed),
                               turns=dict(self._turns), loops_removed=set(self._loops_removed),
                               extra=dict(extra), order=list(state) if misaligned else None)
        return CheckpointDelta(
            status=status, state=redact(written) if written else {}, state_removed=removed,
            step_results=dict(self._results), step_results_removed=sorted(self._results_removed),
            tool_loops=loops, loop_messages_kept=kept,
            tool_loops_removed=sorted(self._loops_removed), paused=paused, cost_usd=cost_usd,
            extra=extra_sets, extra_removed=extra_removed)

    def commit(self) -> None:
        """The delta from the last `take` is stored."""
        taken, self._pending = self._pending, None
        if taken is None:
            return
        for key, value in taken.state.items():
            self._shadow[key] = value
            if key in taken.copies:
                self._copies[key] = taken.copies[key]
            else:
                self._copies.pop(key, None)
        for key in taken.removed:
            self._shadow.pop(key, None)
            self._copies.pop(key, None)
        if taken.order is not None:  # keys moved in the state: follow its order again
            self._shadow = {k: self._shadow[k] for k in taken.order if k in self._shadow}
        for key, raw in taken.results.items():
            if self._results.get(key) is raw:  # not replaced since the take
                del self._results[key]
            if "/" in key:
                self._nested.add(key)
        self._nested -= taken.results_removed
        self._results_removed -= taken.results_removed
        for step_id, entry in taken.turns.items():
            if self._turns.get(step_id) is entry:
                del self._turns[step_id]
            self._messages[step_id] = entry[1]
        for step_id in taken.loops_removed:
            self._messages.pop(step_id, None)
        self._loops_removed -= taken.loops_removed
        self._extra = taken.extra

    def baseline(self, state: Mapping[str, Any], *, results: Iterable[str] = (),
                 loops: Mapping[str, list[Any]] | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        """The store now holds a whole checkpoint of `state`, `results` (their keys),
        `loops` (step -> live messages) and `extra`: later deltas build on it."""
        self._shadow, self._copies = {}, {}
        for key, value in state.items():
            self._remember(key, value)
        self._results, self._results_removed, self._turns = {}, set(), {}
        self._nested = {k for k in results if "/" in k}
        self._nesting = self._nesting or bool(self._nested) or any("/" in k for k in loops or ())
        self._loops_removed = set()
        self._messages = {k: list(v) for k, v in (loops or {}).items()}
        self._extra = dict(extra or {})
        self._pending = None

    # --- helpers ---------------------------------------------------------------------

    def _remember(self, key: str, value: Any) -> None:
        self._shadow[key] = value
        if type(value) in _IMMUTABLE:
            self._copies.pop(key, None)
        else:
            self._copies[key] = _snapshot(value)

    def _state_changes(self, state: Mapping[str, Any]
                       ) -> tuple[list[str], list[str], bool]:
        """(changed keys, removed keys, whether the shadow's key order must follow the
        state's again)."""
        shadow = self._shadow
        # Keys hold another object than when written: found in C, position by position
        # (`commit` keeps the shadow in the state's key order), then checked by key, so
        # a key moved by a delete and re-insert is not taken for a changed one.
        # `any` first: the usual step replaces no key it had (it adds one), and `any`
        # costs less per key than `compress` and its list.
        flagged = list(compress(state.keys(),
                                map(is_not, state.values(), shadow.values()))) \
            if any(map(is_not, state.values(), shadow.values())) else []
        changed = [k for k in flagged if shadow.get(k, _MISSING) is not state[k]]
        tail = list(islice(state.keys(), len(shadow), None)) if len(state) > len(shadow) \
            else []
        misaligned = len(changed) != len(flagged) or any(k not in shadow for k in changed)
        for k in tail:
            if k in shadow:
                misaligned = True
            if shadow.get(k, _MISSING) is not state[k]:
                changed.append(k)
        if self._copies:
            keys = list(self._copies)
            live = map(state.get, keys, repeat(_MISSING))
            try:
                moved = list(compress(keys, map(ne, live, self._copies.values())))
            except Exception:  # a value whose `!=` fails: compare one by one
                moved = [k for k in keys if _differ(state.get(k, _MISSING), self._copies[k])]
            if moved:
                seen = set(changed)
                changed.extend(k for k in moved if k not in seen and k in state)
        new = sum(1 for k in changed if k not in shadow)
        removed: list[str] = []
        if len(shadow) + new > len(state):
            removed = [k for k in shadow if k not in state]
        return changed, removed, misaligned

    def _loop_changes(self, redact: Redact) -> tuple[list[ToolLoopProgress], dict[str, int]]:
        loops: list[ToolLoopProgress] = []
        kept: dict[str, int] = {}
        for step_id, (turn, messages) in self._turns.items():
            stored = self._messages.get(step_id)
            tail = messages
            if stored is not None and len(stored) <= len(messages) and all(
                    a is b for a, b in zip(stored, messages, strict=False)):
                kept[step_id] = len(stored)
                tail = messages[len(stored):]
            loops.append(ToolLoopProgress(step_id=step_id, turn=turn,
                                          messages=list(redact(tail)) if tail else []))
        return loops, kept


@record
class _Taken(Record):
    """What the last `take` put in its delta, for `commit` to record."""

    state: dict[str, Any]
    copies: dict[str, Any]
    removed: list[str]
    results: dict[str, Any]
    results_removed: set[str]
    turns: dict[str, tuple[int, list[Any]]]
    loops_removed: set[str]
    extra: dict[str, Any]
    order: list[str] | None = None
    """The state's keys, when the shadow's order no longer matches theirs."""

    def __init__(
        self, *, state: dict[str, Any], copies: dict[str, Any], removed: list[str],
        results: dict[str, Any], results_removed: set[str],
        turns: dict[str, tuple[int, list[Any]]], loops_removed: set[str],
        extra: dict[str, Any], order: list[str] | None = None,
    ) -> None:
        self.state = state
        self.copies = copies
        self.removed = removed
        self.results = results
        self.results_removed = results_removed
        self.turns = turns
        self.loops_removed = loops_removed
        self.extra = extra
        self.order = order


def _same(value: Any) -> Any:
    return value
