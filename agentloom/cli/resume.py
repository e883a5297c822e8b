"""`agentloom resume RUN_ID`: continue a paused or killed run from its last checkpoint.

Everything is checked before anything is written: the run exists, it has not finished,
its workflow file is the one it started with (by hash; `--force` accepts a changed one),
and the decision fits what the run waits for (an answer is typed-checked against the
question's choices). Then the run goes on through the same wiring as `agentloom run`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from agentloom.cli._exit import EXIT_FAILED, UsageError


def add_parser(sub: Any) -> None:
    from agentloom.cli._durable import add_store_flag

    p = sub.add_parser("resume", help="continue a paused or interrupted run")
    p.add_argument("run_id", metavar="RUN_ID")
    decision = p.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="store_true",
                          help="approve the waiting approval_gate (or re-run an "
                               "interrupted tool call)")
    decision.add_argument("--reject", action="store_true",
                          help="reject the waiting approval_gate (or skip an interrupted "
                               "tool call)")
    decision.add_argument("--answer", metavar="VALUE",
                          help="the answer to the waiting question (choose_many: a,b); "
                               "`-` reads it from stdin (asked for, unechoed, on a "
                               "terminal), which keeps a secret out of the process list "
                               "and the shell's history")
    p.add_argument("--provider", "-p", help="the provider of steps that name none (instead "
                                            "of the one the run started with)")
    p.add_argument("--model", "-m", help="the model of steps that name none (ditto)")
    p.add_argument("--step", metavar="STEP_ID",
                   help="the paused step the decision is for; refused if it waits elsewhere")
    add_store_flag(p)
    p.add_argument("--force", action="store_true",
                   help="resume even though the workflow file changed since the run started")
    p.add_argument("--retry-failed", action="store_true",
                   help="continue a failed (or budget_exceeded) run: its failed steps "
                        "(and what they held up) run again; steps that succeeded are "
                        "kept, and model replies already stored are served again")
    p.add_argument("--budget", metavar="USD",
                   help="the run's cost cap from here on (instead of the one it started "
                        "with); what it spent already counts")
    p.add_argument("--max-tokens-per-run", metavar="N",
                   help="the run's token cap from here on (ditto)")
    p.add_argument("--state", "-s", action="append", default=[], metavar="KEY=VALUE",
                   help="set a state value before continuing (a secret the store did not "
                        "keep, say); repeatable")
    p.add_argument("--state-file", metavar="FILE",
                   help="a YAML or JSON mapping of state to set before continuing (keeps "
                        "a secret off the command line)")
    p.add_argument("--json", action="store_true", help="print only the result as JSON")
    p.add_argument("--stream", action="store_true", help="print text as it arrives")
    p.add_argument("--replay", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--replay-mode", choices=("strict", "lenient"), help=argparse.SUPPRESS)
    from agentloom.cli._observe import add_trace_flags

    add_trace_flags(p)


class _Refused(Exception):
    pass


MAX_ANSWER_BYTES = 1 << 20
"""`--answer -` reads at most this much: an answer is a word or a token, not a file."""


def _answer_from_stdin() -> str:
    """One answer from stdin, its line end dropped (`echo` and a typed line add one). On
    a terminal it is asked for, and not echoed (a person typing a secret)."""
    if sys.stdin.isatty():
        import getpass

        try:
            return getpass.getpass("answer (not shown): ")
        except EOFError:
            raise _Refused("--answer -: no answer was typed") from None
    data = sys.stdin.buffer.read(MAX_ANSWER_BYTES + 1)
    if len(data) > MAX_ANSWER_BYTES:
        raise _Refused(f"--answer -: stdin holds over {MAX_ANSWER_BYTES} bytes; an answer "
                       "is a value, not a file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused("--answer -: stdin is not UTF-8 text") from None
    return text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


async def _prepare(args: argparse.Namespace) -> tuple[argparse.Namespace, Any]:
    """The `run` arguments and the durable run to continue with, or _Refused with the
    reason."""
    from agentloom.cli._durable import (
        LEASE_SECONDS,
        RESUMED_FLAGS,
        absent_store,
        workflow_hash_of,
    )
    from agentloom.store import (
        FINISHED_STATUSES,
        RETRYABLE_STATUSES,
        new_worker_id,
        open_store,
        take_claim,
    )
    from agentloom.workflow.durable.run import Decision, DurableRun, coerce_answer

    missing = absent_store(args.store)
    if missing is not None:  # not created by asking
        raise _Refused(f"no run {args.run_id!r} in the store {missing}: there is no such "
                       "file" + ("" if args.store else "; pass --store if the run is elsewhere"))
    store = open_store(args.store) if args.store else open_store(None)
    me, claimed = new_worker_id(), False
    try:
        record = await store.get_run(args.run_id)
        if record is None:
            where = args.store or ".agentloom/runs.db"
            raise _Refused(f"no run {args.run_id!r} in the store {where}; "
                           "`agentloom runs` lists the runs it holds")
        retrying = record.status in RETRYABLE_STATUSES and args.retry_failed
        if record.status in FINISHED_STATUSES and not retrying:
            if record.status == "failed":
                raise _Refused(f"run {args.run_id} failed; `agentloom resume {args.run_id} "
                               "--retry-failed` runs its failed steps again (the steps that "
                               "succeeded are kept)")
            if record.status == "budget_exceeded":
                raise _Refused(f"run {args.run_id} stopped at its budget; `agentloom resume "
                               f"{args.run_id} --retry-failed --budget USD` (or "
                               "--max-tokens-per-run N) goes on with a higher cap, counting "
                               "what it spent")
            raise _Refused(f"run {args.run_id} already finished ({record.status}); "
                           "there is nothing to resume")
        if args.answer == "-":  # asked for once the run is known, before it is claimed
            args.answer = _answer_from_stdin()
        # One process at a time, from here on: the checkpoint read next is then the one
        # this process continues from.
        holder = await take_claim(store, args.run_id, me, LEASE_SECONDS)
        if holder is not None:
            raise _Refused(f"run {args.run_id} is being resumed by another process "
                           f"({holder}); wait for it to end (`agentloom runs` shows its "
                           "status)")
        claimed = hasattr(store, "release_claim")
        cp = await store.load_latest(args.run_id)
        if cp is None:
            raise _Refused(f"run {args.run_id} has no checkpoint to resume from")
        if retrying:
            cp = _without_failures(cp)
        meta = dict(record.meta)
        if not meta.get("ui_url"):  # a run started without the UI's address learns it now
            meta["ui_url"] = os.environ.get("AGENTLOOM_UI_URL") or None
        path = Path(str(meta.get("workflow_path", "")))
        if not path.is_file():
            raise _Refused(f"the workflow file of run {args.run_id} is gone: {path}")
        try:
            now_hash = workflow_hash_of(path)
        except OSError as exc:
            raise _Refused(f"cannot read the workflow file of run {args.run_id}: {path}: "
                           f"{exc.strerror or exc}") from None
        if now_hash != record.workflow_hash and not args.force:
            raise _Refused(
                f"{path} changed since run {args.run_id} started (hash "
                f"{record.workflow_hash[:19]} then, {now_hash[:19]} now); its saved state "
                "may not fit the new steps. Restore the file, or pass --force to resume "
                "with it as it is")
        decision = Decision()
        paused = cp.paused
        if args.approve or args.reject:
            decision.approve = bool(args.approve)
        if args.answer is not None:
            decision.answer = args.answer
        if paused is not None:
            _check_step(args, paused)
            _check_decision(args, paused, decision, coerce_answer)
        elif args.approve or args.reject or args.answer is not None:
            raise _Refused(f"run {args.run_id} is not waiting for a decision "
                           f"(status {record.status}); resume it without one")
    except BaseException:
        if claimed:  # a refused resume leaves no claim behind
            await store.release_claim(args.run_id, me)  # type: ignore[attr-defined]
        await store.close()
        raise
    from agentloom.cli._parser import build_parser

    # `run`'s own defaults for every flag, then what the run started with.
    run_args = build_parser().parse_args(["run", str(path)])
    vars(run_args).update(
        state=args.state, state_file=args.state_file,
        model=getattr(args, "model", None) or meta.get("model"),
        provider=getattr(args, "provider", None) or meta.get("provider"),
        timeout=meta.get("timeout"), json=args.json, stream=args.stream,
        tools=list(meta.get("tools") or []), replay=args.replay,
        store=args.store, run_id=args.run_id,
        trace=args.trace, trace_content=args.trace_content, otel=args.otel,
    )
    for flag in RESUMED_FLAGS:  # the run's caps and pacing, unless this resume sets one
        given = getattr(args, flag, None)
        # A resume told to replay doesn't record over the run's recording.
        if given is None and flag in meta and not (flag == "record" and args.replay):
            given = meta[flag]
        if given is not None:
            setattr(run_args, flag, given)
    run_args.record_append = True  # the run's recording goes on, not over
    _warn_of_secrets_not_kept(cp.state, args.state, args.state_file)
    durable = DurableRun(store=store, run_id=args.run_id, workflow_hash=record.workflow_hash,
                         meta=meta, resumed=cp, decision=decision, worker_id=me,
                         lease_seconds=LEASE_SECONDS)
    return run_args, durable


def _warn_of_secrets_not_kept(state: dict[str, Any], given: list[str],
                              state_file: str | None) -> None:
    """The store keeps no secret: the state keys that held one go on as the placeholder
    unless `--state` or `--state-file` gives them back, which the person should hear
    before the run does."""
    from agentloom.cli._common import parse_state
    from agentloom.redact import REDACTED

    named = {item.partition("=")[0].strip() for item in given}
    named.update(parse_state([], state_file) if state_file else ())
    lost = [key for key, value in state.items() if value == REDACTED and key not in named]
    if not lost:
        return
    shown = ", ".join(repr(k[:40]) for k in lost[:5]) + (
        f" and {len(lost) - 5} more" if len(lost) > 5 else "")
    held, goes = ("a secret", "it goes") if len(lost) == 1 else ("secrets", "they go")
    sys.stderr.write(f"agentloom resume: state {shown} held {held}, which the store did not "
                     f'keep: {goes} on as "{REDACTED}" unless given back with --state '
                     f"{lost[0][:40]}=VALUE or in a --state-file\n")


def _without_failures(cp: Any) -> Any:
    """A failed run's checkpoint with its failed steps forgotten (a nested one too, and
    an on_error block's note that it handled one), so the resume runs them again, and
    the steps they held up after them. What succeeded stays; the journal is kept, so a
    model reply stored before the failure is served, not paid for again."""
    import dataclasses

    failed = {key for key, raw in cp.step_results.items()
              if isinstance(raw, dict) and raw.get("status") == "failed"}
    extra = dict(cp.extra)
    if "handled" in extra:
        extra["handled"] = [key for key in extra["handled"] if key not in failed]
    return dataclasses.replace(
        cp, status="running", extra=extra,
        step_results={k: v for k, v in cp.step_results.items() if k not in failed})


def _check_step(args: argparse.Namespace, paused: Any) -> None:
    # The public AgentLoom names a nested gate `sub.gate`; ours is `sub/gate`.
    step = getattr(args, "step", None)
    if step and step.replace(".", "/") != str(paused.step_id).replace(".", "/"):
        raise _Refused(f"run {args.run_id} waits at step {paused.step_id!r}, not {step!r}")


def _check_decision(args: argparse.Namespace, paused: Any, decision: Any,
                    coerce: Any) -> None:
    waiting = paused.waiting_for
    where = f"step {paused.step_id!r}" + (f" (tool call {paused.call_id})"
                                          if paused.call_id else "")
    if waiting in ("approval", "decision") and decision.approve is None:
        if waiting == "approval" and (paused.data or {}).get("timeout_seconds"):
            return  # past its deadline, on_timeout decides; else it pauses again
        raise _Refused(f"run {args.run_id} waits for a decision at {where}: "
                       f"{paused.prompt or waiting}; pass --approve or --reject")
    if waiting == "answer":
        if not decision.has_answer:
            raise _Refused(f"run {args.run_id} waits for an answer at {where}: "
                           f"{paused.prompt or ''}; pass --answer VALUE (--answer - "
                           "reads it from stdin)")
        data = paused.data or {}
        try:
            coerce(str(data.get("kind") or "text"), data.get("choices"), decision.answer)
        except ValueError as exc:
            raise _Refused(f"--answer: {exc}") from None


def run(args: argparse.Namespace) -> int:
    import asyncio

    from agentloom.cli._common import limit_overrides
    from agentloom.errors import AgentLoomError

    limit_overrides(args, None)  # a bad --budget is a usage error before the store is read
    try:
        run_args, durable = asyncio.run(_prepare(args))
    except (_Refused, AgentLoomError) as exc:
        if args.json:  # as `run --json` answers a run that can't start
            from agentloom.cli._common import print_error_json

            print_error_json(str(exc))
        sys.stderr.write(f"agentloom resume: {exc}\n")
        return EXIT_FAILED
    from agentloom.cli.run import command_run

    try:
        if not Path(run_args.file).is_file():
            raise UsageError(f"workflow file not found: {run_args.file}")
        return command_run(run_args, resumed=durable)
    finally:
        if not durable.began:  # refused before the run started (a bad flag, a load error)
            asyncio.run(durable.give_back())
