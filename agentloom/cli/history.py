"""`agentloom history`: past runs, most recent first, as the public AgentLoom lists them.

The rows come from our run store (every run with checkpoints on is in it), with their
filters: `--workflow`, `--provider` (a prefix of a `provider/model` the run used),
`--since`/`--until` (a YYYY-MM-DD day from UTC midnight, or an ISO 8601 time, UTC
when it names no offset), `--min-cost`/`--max-cost`, `--limit`
(20), `--json`. `--runs-dir DIR` adds the JSON records their engine wrote
(`agentloom_runs/<run_id>.json`), so a history survives the move; a file there that is
no such record (not JSON, a cost that is text or NaN, a time that is no time) is passed
over with a warning naming it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from agentloom import _jsontext
from agentloom._files import read_regular
from agentloom._printable import printable
from agentloom.cli import EXIT_FAILED, EXIT_OK, UsageError
from agentloom.cli._common import check_limit, usd
from agentloom.errors import kind_of

_STATUS = {"succeeded": "success"}
"""Our store's words that differ from theirs."""


def add_parser(sub: Any) -> None:
    from agentloom.cli._durable import add_store_flag

    p = sub.add_parser("history", help="past runs, newest first (the public AgentLoom's view)")
    p.add_argument("--runs-dir", metavar="DIR",
                   help="also list the public AgentLoom's run records in DIR")
    p.add_argument("--workflow", metavar="NAME", help="only runs of this workflow")
    p.add_argument("--provider", metavar="P", help="only runs that used a provider/model "
                                                   "starting with P")
    p.add_argument("--since", metavar="WHEN", help="runs started on or after this day "
                   "(YYYY-MM-DD) or ISO 8601 time (no offset: UTC)")
    p.add_argument("--until", metavar="WHEN", help="runs started before this day ends, or "
                   "at or before this ISO 8601 time (no offset: UTC)")
    p.add_argument("--min-cost", metavar="USD", help="runs that cost at least this")
    p.add_argument("--max-cost", metavar="USD", help="runs that cost at most this")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (20)")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    add_store_flag(p)


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _when_flag(value: str | None, flag: str) -> tuple[datetime, bool] | None:
    """`--since`/`--until` as theirs reads them: ten characters are a YYYY-MM-DD date,
    anything else what `datetime.fromisoformat` takes (`2026-05-01T10:00`, `...Z`,
    `...+02:00`, `20260501`). The instant, and whether the value was a whole day (no
    time of day given). A time without an offset is UTC, as the records' times are."""
    if value is None:
        return None
    try:
        if len(value) == 10:
            if not _DAY.fullmatch(value):
                raise ValueError(value)
            return datetime.combine(date.fromisoformat(value), time(), UTC), True
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{flag} {printable(_cut(value))}: expected a date (YYYY-MM-DD) or an ISO "
                         "8601 time (2026-05-01T10:00:00+02:00)") from None
    try:
        date.fromisoformat(value)
        whole_day = True  # a date in another ISO form (20260501, 2026-W18)
    except ValueError:
        whole_day = False
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), whole_day


def _bounds(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """The first instant kept and the first one past the window. A `--until` date keeps
    its whole day; a `--until` time keeps runs that started at or before it."""
    start = _when_flag(since, "--since")
    end = _when_flag(until, "--until")
    step = timedelta(days=1) if end is not None and end[1] else timedelta(microseconds=1)
    try:  # the last day (time) a datetime holds has no instant after it: no bound then
        before = None if end is None else end[0] + step
    except OverflowError:
        before = None
    return (None if start is None else start[0]), before


async def _store_records(store_url: str | None, limit: int) -> list[dict[str, Any]]:
    """The store's newest `limit` runs as the public AgentLoom's records. Providers and
    tokens come from each step result's few fields, read by the database
    (`load_step_facts`), not from decoding each run's whole state."""
    from agentloom.store import open_store

    store = open_store(store_url) if store_url else open_store(None)
    out: list[dict[str, Any]] = []
    try:
        runs = await store.list_runs(limit=limit)
        facts = await store.load_step_facts(  # type: ignore[attr-defined]
            [r.run_id for r in runs])
        for r in runs:
            used: list[str] = []
            tokens = 0
            for step in facts.get(r.run_id, {}).values():
                if step.provider:
                    pair = f"{step.provider}/{step.model or ''}"
                    if pair not in used:
                        used.append(pair)
                tokens += (step.input_tokens or 0) + (step.output_tokens or 0)
            out.append({
                "run_id": r.run_id,
                "timestamp": r.started_at.astimezone(UTC).isoformat(),
                "workflow_name": r.workflow_name,
                "workflow_hash": r.workflow_hash,
                "status": _STATUS.get(r.status, r.status),
                "total_cost_usd": None if r.cost_usd is None else float(r.cost_usd),
                "total_tokens": tokens,
                "duration_ms": (r.updated_at - r.started_at).total_seconds() * 1000.0,
                "providers_used": used,
            })
    finally:
        await store.close()
    return out


_MAX_RECORD_BYTES = 16 * 1024 * 1024
"""A public-AgentLoom run file past this is passed over."""


_MOST = 1e15
"""A cost (USD), duration (ms) or token count past this is no run's: the record is
damaged (the store's own bound on a cost)."""
_MAX_WARNINGS = 20
"""Damaged records named one by one; the rest are counted on one line."""


def _their_records(directory: str) -> list[dict[str, Any]]:
    """The public AgentLoom's run records in `directory`. A file that is no such record
    is passed over with a one-line warning on stderr naming it and what is wrong, so a
    damaged one neither stops the listing nor goes missing unsaid."""
    out: list[dict[str, Any]] = []
    skipped = 0
    for path in sorted(Path(directory).glob("*.json")):
        try:  # a FIFO planted here is passed over, not waited on
            record = _jsontext.loads(read_regular(path, _MAX_RECORD_BYTES).decode("utf-8"))
        except OSError as exc:
            why: str | None = str(exc.strerror or exc)
        except UnicodeDecodeError:
            why = "not UTF-8 text"
        except ValueError as exc:
            why = f"not JSON ({str(exc).splitlines()[0][:80]})"
        else:
            why = _damage(record)
        if why is None:
            out.append(record)
            continue
        skipped += 1
        if skipped <= _MAX_WARNINGS:
            sys.stderr.write(f"agentloom history: warning: skipped {printable(str(path))}: "
                             f"{printable(why)}\n")
    if skipped > _MAX_WARNINGS:
        sys.stderr.write(f"agentloom history: warning: skipped {skipped - _MAX_WARNINGS} "
                         f"more damaged run record(s) in {printable(directory)}\n")
    return out


def _damage(record: Any) -> str | None:
    """What makes `record` no run record their engine writes, or None. A field may be
    missing or null (unknown); one that is there has their type: text, a time, a list
    of text, a finite number >= 0."""
    if not isinstance(record, dict):
        return f"holds {kind_of(record)}, not a run record"
    if not isinstance(record.get("run_id"), str) or not record["run_id"]:
        return "no run_id (text)"
    for key in ("timestamp", "workflow_name", "workflow_hash", "status"):
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} is {kind_of(value)}, not text"
    if record.get("timestamp") is not None and _when(record) is None:
        return f"timestamp {_cut(record['timestamp'])} is not an ISO 8601 time"
    used = record.get("providers_used")
    if used is not None and not (isinstance(used, list)
                                 and all(isinstance(p, str) for p in used)):
        return "providers_used is not a list of provider/model texts"
    for key in ("total_cost_usd", "duration_ms", "total_tokens"):
        value = record.get(key)
        if value is not None and not (type(value) in (int, float) and 0 <= value <= _MOST):
            return f"{key} {_cut(value)} is not a number from 0 to 1e15"
    return None


def _cut(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _when(record: dict[str, Any]) -> datetime | None:
    try:
        ts = datetime.fromisoformat(str(record.get("timestamp")))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _keep(r: dict[str, Any], args: argparse.Namespace, since: datetime | None,
          before: datetime | None) -> bool:
    if args.workflow and r.get("workflow_name") != args.workflow:
        return False
    if args.provider and not any(str(p).startswith(args.provider)
                                 for p in r.get("providers_used") or ()):
        return False
    when = _when(r)
    if since is not None and (when is None or when < since):
        return False
    if before is not None and (when is None or when >= before):
        return False
    cost = r.get("total_cost_usd")
    if args.min_cost is not None and (cost is None or cost < args.min_cost):
        return False
    return not (args.max_cost is not None and (cost is None or cost > args.max_cost))


def run(args: argparse.Namespace) -> int:
    import asyncio

    check_limit(args.limit)
    if args.min_cost is not None:
        args.min_cost = usd(args.min_cost, "--min-cost")
    if args.max_cost is not None:
        args.max_cost = usd(args.max_cost, "--max-cost")
    since, before = _bounds(args.since, args.until)
    if args.runs_dir and not Path(args.runs_dir).is_dir():
        raise UsageError(f"--runs-dir {printable(args.runs_dir)}: not a folder; give the "
                         "folder of their run records (agentloom_runs)")
    from agentloom.store import StoreConfigError

    try:
        records = asyncio.run(_store_records(args.store, limit=max(1000, args.limit)))
    except StoreConfigError as exc:  # a store that won't open, or a damaged run in it
        sys.stderr.write(f"agentloom history: {exc}\n")
        return EXIT_FAILED
    if args.runs_dir:
        records += _their_records(args.runs_dir)
    epoch = datetime.min.replace(tzinfo=UTC)
    records.sort(key=lambda r: _when(r) or epoch, reverse=True)
    kept = [r for r in records if _keep(r, args, since, before)][:args.limit]
    if args.json:
        sys.stdout.write(json.dumps(kept, indent=2, default=str) + "\n")
        return EXIT_OK
    if not kept:
        sys.stdout.write("No run records found.\n")
        return EXIT_OK
    sys.stdout.write(f"{'TIMESTAMP':<26} {'RUN ID':<20} {'WORKFLOW':<22} "
                     f"{'STATUS':<10} {'COST USD':>10} {'DUR MS':>10}\n")
    sys.stdout.write("-" * 102 + "\n")
    for r in kept:
        cost = r.get("total_cost_usd")
        cost_text = "?" if cost is None else f"{float(cost):.4f}"
        sys.stdout.write(
            f"{printable(str(r.get('timestamp') or ''))[:25]:<26} "
            f"{printable(str(r.get('run_id')))[:19]:<20} "
            f"{printable(str(r.get('workflow_name') or ''))[:21]:<22} "
            f"{printable(str(r.get('status')))[:9]:<10} "
            f"{cost_text:>10} {float(r.get('duration_ms') or 0.0):>10.1f}\n")
    return EXIT_OK
