"""State paths: `a.b`, `items[0]`, `a.b[-1].c`, parsed once into a tuple of keys/indices.

Templates, router expressions, tool arguments and `output` keys all name places in the
state the same way, so they share this one parser and one lookup. Lookups only walk
mappings, sequences and the declared fields of pydantic models: never arbitrary
attributes, so a path cannot reach dunders or methods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom import structured
from agentloom.errors import kind_of
from agentloom.workflow.lang.frozen import is_frozen, thawed

Path = tuple[str | int, ...]

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)|\[(-?\d{1,18})\]|\[['\"]([^'\"\]]+)['\"]\]")
MAX_PATH_PARTS = 64
"""A path deeper than this is refused: a `--state` key of 5,000 parts built a state that
every walk over it (redaction, checkpoints) overflowed Python's stack on."""


class PathError(ValueError):
    """A path that cannot be parsed, or that does not lead to a value."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def parse_path(text: str) -> Path:
    """`a.b[0]` -> ("a", "b", 0). Raises PathError with the offending position."""
    out: list[str | int] = []
    pos = 0
    n = len(text)
    expect_name = True
    while pos < n:
        if text[pos] == "." and not expect_name and out:
            pos += 1
            expect_name = True
            continue
        m = _SEGMENT.match(text, pos)
        if m is None or (expect_name and m.group(1) is None):
            raise PathError(f"bad path {_quoted(text)} at column {pos + 1}")
        if m.group(1) is not None:
            if not expect_name:
                raise PathError(f"bad path {_quoted(text)} at column {pos + 1}: missing '.'")
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(int(m.group(2)))
        else:
            out.append(m.group(3))
        if len(out) > MAX_PATH_PARTS:
            raise PathError(f"path {_quoted(text)}: more than {MAX_PATH_PARTS} parts")
        expect_name = False
        pos = m.end()
    if expect_name:
        raise PathError(f"bad path {_quoted(text)}: it ends with '.' or is empty")
    return tuple(out)


def _quoted(text: str, limit: int = 40) -> str:
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def format_path(path: Path) -> str:
    out = ""
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += f".{seg}" if out else seg
    return out


def lookup(root: Any, path: Path) -> Any:
    """The value at `path`, or MISSING. Walks mappings, sequences and model fields only."""
    cur = root
    for seg in path:
        if isinstance(cur, Mapping):
            cur = cur.get(seg, MISSING)  # type: ignore[call-overload]
        elif isinstance(seg, int) and isinstance(cur, Sequence) and not isinstance(cur, str):
            try:
                cur = cur[seg]
            except IndexError:
                return MISSING
        elif isinstance(seg, str) and hasattr(type(cur), "model_fields"):
            # A structured output (pydantic instance): declared, computed and extra
            # fields only, never methods or private attributes.
            try:
                cur = structured.lookup_field(cur, seg)
            except KeyError:
                return MISSING
        else:
            return MISSING
        if cur is MISSING:
            return MISSING
    return cur


def assign(root: dict[str, Any], path: Path, value: Any) -> None:
    """Set `value` at `path`, creating mappings on the way (`output: report.summary`).
    A path the state can't hold raises PathError saying why, and changes nothing: an
    index past a list's end (`items[9]` of two items; lists never grow here), an index
    where there is no list (`items[0]` of an empty state would be a mapping's key 0,
    which a checkpoint's JSON turns into "0"), or a name below text or a list.

    A frozen container on the way (state a `map` item shares with its siblings:
    `lang.frozen`) is replaced by a plain copy of it before anything is written below
    it, so the write changes this state alone."""
    cur: Any = root
    for i, seg in enumerate(path):
        if isinstance(cur, dict):
            if isinstance(seg, int):
                raise PathError(f"cannot write {format_path(path)!r}: {_at(path[:i])} holds "
                                f"a mapping, not a list")
            if i == len(path) - 1:
                cur[seg] = value
                return
            nxt = cur.get(seg)
            if nxt is None:
                for j in range(i + 1, len(path)):  # all below is made here, as mappings
                    if isinstance(path[j], int):
                        raise PathError(f"cannot write {format_path(path)!r}: there is no "
                                        f"list {format_path(path[:j])!r}")
                nxt = cur[seg] = {}
            elif is_frozen(nxt):
                nxt = cur[seg] = thawed(nxt)
        elif isinstance(cur, list) and isinstance(seg, int):
            if not -len(cur) <= seg < len(cur):
                raise PathError(f"cannot write {format_path(path)!r}: {_at(path[:i])} is a "
                                f"list of {len(cur)}, with no item [{seg}]")
            if i == len(path) - 1:
                cur[seg] = value
                return
            nxt = cur[seg]
            if is_frozen(nxt):
                nxt = cur[seg] = thawed(nxt)
        else:
            raise PathError(f"cannot write {format_path(path)!r}: {_at(path[:i])} holds "
                            f"{kind_of(cur)}, not a mapping")
        cur = nxt


def _at(path: Path) -> str:
    return repr(format_path(path)) if path else "the state"
