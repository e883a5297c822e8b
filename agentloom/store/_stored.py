"""Reading back what a store holds, as hostile: the file or database may have been written
by another program, an older or newer AgentLoom, or a person with `sqlite3`. Each value
read from a row is checked to be what this store writes (`Damaged` says which and why
otherwise), and a store turns that into one `StoreCorrupt` naming the run
(`damaged_run`), instead of a `ValueError` or `decimal.InvalidOperation` from deep inside
a listing."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from agentloom.store._base import StoreCorrupt
from agentloom.store._records import RUN_STATUSES

_MAX_COST_DIGITS = 15
"""A stored cost's integer digits at most: below a quadrillion dollars. A cost such as
1e999999999 is a valid Decimal that would be printed with a billion digits."""

_MAX_SHOWN = 80


class Damaged(ValueError):
    """A stored value that is not what the store writes; the message says which."""


def shown(value: Any) -> str:
    """`value` as an error message quotes it: its repr (escape sequences and control
    characters escaped, not acted on), cut short."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN - 3] + "..."


def damaged_run(place: str, run_id: Any, why: str) -> StoreCorrupt:
    return StoreCorrupt(
        f"run {shown(run_id)} in the run store at {place} is damaged: {why}; nothing was "
        "changed (delete that run's rows, or move the store aside, to go on)")


class TimeOutOfRange(str):
    """A time the database holds that Python's `datetime` can't (PostgreSQL's `infinity`
    and `-infinity`, a year past 9999 or before 1), as the database's text of it: what
    the PostgreSQL adapter reads such a value as, instead of psycopg's `DataError`."""

    @property
    def later(self) -> bool:
        """Past year 9999 (`infinity`), not before year 1 (`-infinity`, BC)."""
        return not (self.startswith("-") or self.endswith(" BC"))


def stored_time(value: Any, what: str) -> datetime:
    """A timestamp column: aware `datetime` (PostgreSQL) or ISO-8601 text (SQLite); text
    without an offset is taken as UTC, which is what this store writes."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and len(value) <= 64:
        if isinstance(value, TimeOutOfRange):
            raise Damaged(f"{what} {shown(str(value))} is not a time between the years 1 "
                          "and 9999")
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise Damaged(f"{what} {shown(value)} is not a time") from None
    else:
        raise Damaged(f"{what} {shown(value)} is not a time")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def stored_lease(value: Any, what: str = "lease_until") -> datetime | None:
    """A claim's lease end: None (no lease) or a time. One past the times a `datetime`
    holds (PostgreSQL's `infinity`; `-infinity`) reads as the latest (earliest) time
    there is: no claim writes it, `lease_holds` counts it as lapsed, and a claim's SQL
    already takes the run from it, so listing the run must not fail on it either."""
    if value is None:
        return None
    if isinstance(value, TimeOutOfRange):
        return (datetime.max if value.later else datetime.min).replace(tzinfo=UTC)
    return stored_time(value, what)


def stored_cost(value: Any, what: str) -> Decimal | None:
    """A cost: None (unknown), or a finite, non-negative amount of dollars."""
    if value is None:
        return None
    if isinstance(value, Decimal):
        cost = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            cost = Decimal(value)
        except InvalidOperation:
            raise Damaged(f"{what} {shown(value)} is not a number") from None
    else:
        raise Damaged(f"{what} {shown(value)} is not a number")
    if not cost.is_finite() or cost < 0 or cost.adjusted() >= _MAX_COST_DIGITS:
        raise Damaged(f"{what} {shown(value)} is not a cost (a finite amount of dollars, "
                      "0 or more)")
    return cost


def stored_count(value: Any, what: str) -> int:
    """A whole number, 0 or more (a seq, a turn)."""
    if type(value) is not int or value < 0:
        raise Damaged(f"{what} {shown(value)} is not a whole number")
    return value


def stored_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Damaged(f"{what} {shown(value)} is not text")
    return value


def stored_optional_text(value: Any, what: str) -> str | None:
    return None if value is None else stored_text(value, what)


def stored_status(value: Any, what: str = "status") -> Any:
    if not isinstance(value, str) or value not in RUN_STATUSES:
        raise Damaged(f"{what} {shown(value)} is not a run status (one of "
                      f"{', '.join(sorted(RUN_STATUSES))})")
    return value


def stored_object(value: Any, what: str) -> dict[str, Any]:
    """A JSON object (None, as an absent field, is an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Damaged(f"{what} is {_kind(value)}, not an object")
    return value


def stored_list(value: Any, what: str) -> list[Any]:
    """A JSON array (None, as an absent field, is an empty one)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Damaged(f"{what} is {_kind(value)}, not a list")
    return value


def stored_names(value: Any, what: str) -> list[str]:
    """A list of keys (a delta's `*_removed`)."""
    names = stored_list(value, what)
    for name in names:
        stored_text(name, f"an entry of {what}")
    return names


def _kind(value: Any) -> str:
    return {list: "a list", str: "text", bool: "true or false", int: "a number",
            float: "a number", Decimal: "a number"}.get(type(value), type(value).__name__)
