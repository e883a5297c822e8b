"""`agentloom batch FLOW.yaml INPUTS`: run a workflow once per input.

Results go to `--output` (default `<inputs name>.results.jsonl` in the current folder),
one JSON line per input as runs finish. stdout shows a live bar on a terminal, plain
progress lines otherwise, or only JSON events with `--json`; the summary follows. Exit
codes: 0 every input succeeded, 1 some failed or were invalid, 2 a usage error, 130
interrupted (what finished is in the output file; run again with `--resume`).

With `--store URL` every run is a durable run in that store (checkpointed after every
step and tool turn) under the id `<batch id>.<input id>`; the batch id is `--batch-id`,
or derived from the output path and the workflow. `--resume` then also asks the store:
finished runs are not run again, interrupted ones go on from their last checkpoint, and
paused ones are reported with the command that continues them. Processes sharing a
PostgreSQL store (same command, same `--batch-id`) split the inputs between them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from agentloom.cli._common import check_seconds, existing_file, parse_state
from agentloom.cli._exit import EXIT_FAILED, EXIT_OK, EXIT_PAUSED, UsageError

EXIT_INTERRUPTED = 130
_BATCH_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_LEASE_SECONDS = 30 * 86400
"""The store's longest claim (its `claim_run` refuses a longer lease, `nan` or `inf`)."""
MAX_CONCURRENCY = 100_000
"""Runs in flight at once, at most: past it a number is a typo (on Ray, one that no
actor's `max_concurrency` holds)."""
MAX_WORKERS = 10_000
"""Ray actors, at most: each is a process, and the pool is built before any run starts
(10**20 of them never finished being asked for)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "batch", help="run a workflow once per input (JSONL, CSV or a folder)")
    p.add_argument("file", metavar="FLOW.yaml")
    p.add_argument("inputs", metavar="INPUTS", help="a .jsonl or .csv file, or a folder")
    p.add_argument("--output", "-o", metavar="OUT.jsonl",
                   help="results file (default: <inputs name>.results.jsonl)")
    p.add_argument("--concurrency", "-c", type=int, default=16, metavar="N",
                   help="runs in flight at once (default 16; over the whole cluster on Ray)")
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--address", metavar="ADDR",
                   help="Ray cluster: auto, host:port or ray://host:port "
                        "(default: a private local Ray instance)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="Ray actors (default: one per cluster CPU)")
    p.add_argument("--resume", action="store_true",
                   help="skip inputs the output file already has finished")
    p.add_argument("--retry-failed", action="store_true",
                   help="with --resume, run failed inputs again too")
    p.add_argument("--overwrite", action="store_true",
                   help="start an existing output file over")
    p.add_argument("--store", metavar="URL",
                   help="make every run durable in this store: a path, sqlite:///file.db "
                        "or postgresql://... (default: no store)")
    p.add_argument("--batch-id", metavar="ID",
                   help="with --store: run ids are ID.<input id> (default: derived from "
                        "the output path and the workflow); give the same one to every "
                        "process that shares the batch")
    p.add_argument("--lease", type=float, default=60.0, metavar="SECONDS",
                   help="with --store: how long a worker's claim on a run lasts unless "
                        "renewed; a killed worker's runs are taken over after it "
                        "(default 60)")
    p.add_argument("--json", action="store_true",
                   help="stream JSON events on stdout instead of progress")
    p.add_argument("--state", "-s", action="append", default=[], metavar="KEY=VALUE",
                   help="state under every input (inputs' own keys win); repeatable")
    p.add_argument("--state-file", metavar="FILE", help="a YAML or JSON mapping of state")
    p.add_argument("--model", "-m", help="the model of steps that name none")
    p.add_argument("--provider", "-p", help="the provider of steps that name none")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="a deadline for each run")
    return p


def default_output(inputs: str) -> str:
    p = Path(inputs)
    stem = p.name if p.is_dir() else p.stem
    return f"{stem or 'batch'}.results.jsonl"


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        raise UsageError(f"--concurrency must be at least 1 and at most {MAX_CONCURRENCY}")
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be at least 1 and at most {MAX_WORKERS}")
    if args.executor != "ray" and (args.address or args.workers):
        raise UsageError("--address and --workers need --executor ray")
    if args.retry_failed and not args.resume:
        raise UsageError("--retry-failed needs --resume")
    if args.resume and args.overwrite:
        raise UsageError("--resume and --overwrite contradict each other")
    if (args.batch_id is not None or args.lease != 60.0) and not args.store:
        raise UsageError("--batch-id and --lease need --store")
    if not 0 < args.lease <= MAX_LEASE_SECONDS:  # nan compares false: refused too
        raise UsageError(f"--lease must be a positive number of seconds, at most "
                         f"{MAX_LEASE_SECONDS} (30 days, the longest claim a store takes)")
    if args.batch_id is not None and not _BATCH_ID.fullmatch(args.batch_id):
        raise UsageError("--batch-id: letters, digits, '_', '-' and '.' only (1-64)")
    check_seconds(args.timeout)
    existing_file(args.file)
    if not Path(args.inputs).exists():
        raise UsageError(f"inputs not found: {args.inputs}")


def run(args: argparse.Namespace) -> int:
    _check(args)
    state = parse_state(args.state, args.state_file)
    output = args.output or default_output(args.inputs)
    if Path(output).exists() and not Path(output).is_file():
        raise UsageError(f"{output}: not a regular file, so no results go there; name "
                         "another with --output")
    if Path(output).exists() and not (args.resume or args.overwrite):
        raise UsageError(f"{output} already exists: pass --resume to finish it or "
                         f"--overwrite to start over")
    from agentloom.errors import ConfigError, WorkflowError
    from agentloom.scale import WorkflowRunnerFactory, batch, choose_progress, input_kind
    from agentloom.store import StoreError

    try:
        input_kind(args.inputs)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    overrides = {k: v for k, v in (("model", args.model), ("provider", args.provider),
                                   ("timeout", args.timeout)) if v is not None}
    try:  # reading the file can fail too (size, encoding)
        factory = WorkflowRunnerFactory.from_file(args.file, env=os.environ, state=state,
                                                  overrides=overrides)
        factory.check()
    except WorkflowError as exc:
        for err in getattr(exc, "errors", None) or [exc]:
            sys.stderr.write(f"{err}\n")
        return EXIT_FAILED
    import asyncio

    progress = choose_progress(json_events=args.json)
    b = batch(None, args.inputs, executor=args.executor, concurrency=args.concurrency,
              workers=args.workers, address=args.address, output=output,
              resume=args.resume, retry_failed=args.retry_failed,
              overwrite=args.overwrite, runner_factory=factory, progress=progress,
              store=args.store, batch_id=args.batch_id, lease_seconds=args.lease)
    if args.store:
        try:
            from agentloom.store import open_store

            open_store(args.store)  # an unknown scheme fails here, before any run
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    refused = _refused_for_keys(factory)
    if refused is not None:
        return refused
    try:
        asyncio.run(_drain(b))
    except KeyboardInterrupt:
        resumable = ("; the runs in flight go on from their last checkpoint"
                     if args.store else "")
        sys.stderr.write(f"agentloom: interrupted; {b.stats.done:,} result(s) are in "
                         f"{output}; run again with --resume to finish the rest"
                         f"{resumable}\n")
        return EXIT_INTERRUPTED
    except (ConfigError, StoreError) as exc:
        sys.stderr.write(f"agentloom: error: {exc}\n")
        return EXIT_FAILED
    stats = b.stats
    if stats.failed or stats.invalid:
        return EXIT_FAILED
    return EXIT_PAUSED if stats.paused else EXIT_OK  # some wait for a person, as `run` says


def _refused_for_keys(factory: Any) -> int | None:
    """As `run` does: a `providers:` entry the runtime refuses, or a named model without
    its provider's key, stops the batch before any run (exit 1, with the file's line or
    the variable to set)."""
    from agentloom.cli._exit import RunRefused
    from agentloom.cli._keys import check_keys
    from agentloom.cli._style import error_line, hint_line
    from agentloom.errors import WorkflowError
    from agentloom.routing.runtime import Runtime
    from agentloom.workflow.engine.mock_clients import uses_mock

    wf = factory.load()
    runtime = Runtime.from_env(factory.env)  # configuration only: nothing is opened
    try:
        wf.add_providers_to(runtime)  # a refused entry: file:line, as at load
    except WorkflowError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_FAILED
    try:
        if not uses_mock(wf):
            check_keys(wf, runtime)
    except RunRefused as exc:
        sys.stderr.write(error_line(sys.stderr, exc.message))
        if exc.hint:
            sys.stderr.write(hint_line(sys.stderr, exc.hint))
        return EXIT_FAILED
    return None


async def _drain(b: Any) -> None:
    async for _ in b:
        pass
