"""`agentloom runs`: the runs in the store (status, workflow, started, cost), and pruning.

`--prune --older-than 30d` deletes finished runs last updated before then; paused and
running ones are kept, since a person may still resume them. Without `--older-than`,
`--prune` uses the `AGENTLOOM_RETENTION_DAYS` setting (30 days when unset), which
`agentloom run` also applies each time it opens the store. `runs show RUN_ID` prints one
run's facts, the same as its page in `agentloom ui` (`--json`: that page's data).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import timedelta
from typing import Any

from agentloom._printable import printable
from agentloom.cli._common import check_limit, print_error_json
from agentloom.cli._exit import EXIT_FAILED, EXIT_OK, UsageError

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def add_parser(sub: Any) -> None:
    from agentloom.cli._durable import add_store_flag

    p = sub.add_parser("runs", help="list the runs in the store; show one; prune old ones")
    p.add_argument("action", nargs="?", choices=("show",), help="show RUN_ID: one run")
    p.add_argument("run_id", nargs="?", metavar="RUN_ID")
    p.add_argument("--status", metavar="S",
                   help="only runs with this status (paused, running, succeeded, ...)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="at most N runs (50)")
    p.add_argument("--prune", action="store_true",
                   help="delete finished runs older than --older-than")
    p.add_argument("--older-than", metavar="AGE",
                   help="an age such as 30d, 12h, 2w (with --prune)")
    add_store_flag(p)


def parse_age(text: str) -> timedelta:
    m = _AGE.match(text)
    if m is None:
        raise UsageError(f"--older-than {text!r}: expected a number and a unit, e.g. 30d, "
                         "12h, 2w (units: s m h d w)")
    try:
        return timedelta(**{_UNIT[m.group(2)]: float(m.group(1))})
    except OverflowError:  # past timedelta's 999,999,999 days
        raise UsageError(f"--older-than {text!r}: too long an age") from None


def run(args: argparse.Namespace) -> int:
    from agentloom.store import RUN_STATUSES

    if args.status and args.status not in RUN_STATUSES:
        raise UsageError(f"--status {args.status!r}: expected one of "
                         f"{', '.join(sorted(RUN_STATUSES))}")
    if (args.action == "show") != (args.run_id is not None):
        raise UsageError("`runs show` takes one RUN_ID" if args.action else
                         f"unexpected argument {args.run_id!r}; did you mean `runs show`?")
    if args.older_than and not args.prune:
        raise UsageError("--older-than goes with --prune")
    check_limit(args.limit)
    import asyncio

    from agentloom.cli._durable import DEFAULT_RETENTION_DAYS, retention

    age = (parse_age(args.older_than) if args.older_than
           else retention() or timedelta(days=DEFAULT_RETENTION_DAYS))
    from agentloom.store import StoreConfigError

    try:
        return asyncio.run(_main(args, age))
    except StoreConfigError as exc:
        sys.stderr.write(f"agentloom runs: {exc}\n")
        return EXIT_FAILED


def age_text(age: timedelta) -> str:
    """`30 days`, `12 hours`, `90 minutes`: the age as a person would write it."""
    seconds = age.total_seconds()
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and (seconds / size).is_integer():
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds:g} seconds"


async def _main(args: argparse.Namespace, age: timedelta) -> int:
    from agentloom.cli._durable import absent_store
    from agentloom.store import open_store

    missing = absent_store(args.store)
    if missing is not None:  # nothing to read: say so, and create nothing
        if args.action == "show":
            return _no_run(args, f"no run {args.run_id!r}: there is no run store at "
                                 f"{missing}")
        if args.prune:
            sys.stdout.write(f"pruned 0 finished runs (no run store at {missing})\n")
        elif args.json:
            sys.stdout.write("[]\n")
        else:
            sys.stdout.write(f"no runs (no run store at {missing})\n")
        return EXIT_OK
    store = open_store(args.store) if args.store else open_store(None)
    try:
        if args.action == "show":
            return await _show(store, args)
        if args.prune:
            n = await store.prune(age)
            sys.stdout.write(f"pruned {n} finished run{'s' if n != 1 else ''} "
                             f"older than {age_text(age)}\n")
            return EXIT_OK
        runs = await store.list_runs(status=args.status, limit=args.limit)
    finally:
        await store.close()
    if args.json:
        sys.stdout.write(json.dumps([_row(r) for r in runs], indent=2) + "\n")
        return EXIT_OK
    if not runs:
        sys.stdout.write("no runs\n")
        return EXIT_OK
    header = ("RUN ID", "STATUS", "WORKFLOW", "STARTED", "COST")
    rows = [(printable(r.run_id), printable(r.status), printable(r.workflow_name),
             r.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
             "?" if r.cost_usd is None else f"${r.cost_usd:.6f}") for r in runs]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for line in (header, *rows):
        sys.stdout.write("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True))
                         .rstrip() + "\n")
    return EXIT_OK


async def _show(store: Any, args: argparse.Namespace) -> int:
    from agentloom.cli._show import render
    from agentloom.ui import GraphCache, load_detail

    detail = await load_detail(store, args.run_id, GraphCache(), details=True)
    if detail is None:
        return _no_run(args, f"no run {args.run_id!r} in the store; `agentloom runs` lists "
                             "the runs it holds")
    if args.json:
        sys.stdout.write(json.dumps(detail, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render(detail))
    return EXIT_OK


def _no_run(args: argparse.Namespace, message: str) -> int:
    """`runs show` of a run that isn't there: one line on stderr, and with --json the
    same as `{"status": "error", ...}` on stdout, as `run --json` answers."""
    if args.json:
        print_error_json(message)
    sys.stderr.write(f"agentloom runs: {message}\n")
    return EXIT_FAILED


def _row(r: Any) -> dict[str, Any]:
    return {"run_id": r.run_id, "status": r.status, "workflow": r.workflow_name,
            "workflow_hash": r.workflow_hash, "started_at": r.started_at.isoformat(),
            "updated_at": r.updated_at.isoformat(),
            "cost_usd": None if r.cost_usd is None else float(r.cost_usd)}
