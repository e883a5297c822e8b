"""The wiring `run`, `resume` and `replay` share: the runtime with its transport swapped
for recording or replay, the run store, the redactor, and the pause message.

One function builds the runtime for all three commands, so a resumed or replayed run
talks to providers exactly as the first run did. Checkpoints are on by default for
`agentloom run` (SQLite at `.agentloom/runs.db` under the working directory): a write
per finished step and per tool turn costs about a millisecond, far below a model call.
When the default store cannot be opened (a read-only directory) the run goes on without
checkpoints and says so; a store named with `--store` must open or the run does not start.
Each run start also prunes finished runs past the retention (`AGENTLOOM_RETENTION_DAYS`,
30 days by default), so a store does not grow without bound.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom._files import read_regular
from agentloom.cli._common import existing_file
from agentloom.cli._exit import UsageError

DEFAULT_RETENTION_DAYS = 30
DEFAULT_STORE = ".agentloom/runs.db"
"""Where `open_store(None)` keeps runs, relative to the working directory."""

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow import RunResult, Workflow
    from agentloom.workflow.durable.run import DurableRun


def add_run_flags(parser: Any) -> None:
    """The flags of `agentloom run` that belong to durability, recording and replay."""
    parser.add_argument("--record", metavar="FILE",
                        help="record every model exchange of the run to FILE")
    parser.add_argument("--replay", metavar="FILE",
                        help="serve model calls from a recording; no network")
    parser.add_argument("--replay-mode", choices=("strict", "lenient"), default="strict",
                        help="strict: match step, turn and request (default); "
                             "lenient: the request alone")
    parser.add_argument("--checkpoint", action=argparse.BooleanOptionalAction, default=True,
                        help="write a checkpoint after every step and tool turn, so the run "
                             "can be resumed (default: on)")
    parser.add_argument("--run-id", metavar="ID",
                        help="the run's id in the store (default: a new random id)")
    add_store_flag(parser)


def add_store_flag(parser: Any) -> None:
    parser.add_argument("--store", metavar="URL",
                        help="the run store: a path, sqlite:///file.db or postgresql://... "
                             "(default: .agentloom/runs.db)")


def absent_store(target: str | None) -> str | None:
    """The path of a SQLite store that doesn't exist yet (None: it exists, or the store
    is not a file). Commands that only read (`runs`, `resume`) report an empty store
    instead of creating `.agentloom/runs.db` wherever they are typed."""
    text = str(target) if target else DEFAULT_STORE
    if text.startswith("sqlite://"):
        text = text[len("sqlite://"):]
        text = text[1:] if text.startswith("/") else text
    elif "://" in text or text.startswith("memory:"):
        return None
    return None if not text or Path(text).exists() else text


def build_runtime(args: argparse.Namespace, redactor: Redactor | None = None, *,
                  recording: Any = None) -> Any:
    """The runtime from the environment, its transport recording or replaying if asked
    (`recording`: the `--replay` file already loaded by `check_recording`)."""
    from agentloom.routing.runtime import Runtime

    record = getattr(args, "record", None)
    replay = recording if recording is not None else getattr(args, "replay", None)
    if record and replay:
        raise UsageError("--record and --replay can't be used together")
    transport: Any = None
    if replay:
        from agentloom.recording import ReplayTransport

        if isinstance(replay, str):
            existing_file(replay, "recording")
        transport = ReplayTransport(replay, mode=getattr(args, "replay_mode", "strict"),
                                    redactor=redactor)
    elif record:
        from agentloom.http import AiohttpTransport
        from agentloom.recording import Recorder, RecordTransport

        recorder = Recorder(record, redactor=redactor,
                            append=getattr(args, "record_append", False))
        transport = RecordTransport(AiohttpTransport(), recorder)
    env: Mapping[str, str] = os.environ
    if replay:
        env = replay_env(replay, os.environ)
    # The runtime owns (and closes) the recording or replaying transport made here.
    extra: dict[str, Any] = {"transport": transport, "owns_transport": True} if transport else {}
    if replay:
        extra["local_stand_in"] = _local_stand_in()  # replies come from the recording
    return Runtime.from_env(env, **extra)

# The wire path each vendor's calls go to, and the key its endpoint needs.
_VENDOR_PATHS = (("/chat/completions", "OPENAI_API_KEY"), ("/v1/messages", "ANTHROPIC_API_KEY"),
                 ("generatecontent", "GEMINI_API_KEY"))


def _local_stand_in() -> Any:
    """Where a replay sends the embedded model's calls: nowhere; its transport answers them,
    so replaying needs neither the model nor its server."""
    from agentloom.providers import Endpoint
    from agentloom.routing.runtime import LOCAL, LOCAL_MODEL, LOCAL_PROTOCOL

    return Endpoint(name=LOCAL, protocol=LOCAL_PROTOCOL, base_url="http://127.0.0.1:0/v1",
                    models=(LOCAL_MODEL,))


def _embedded(exchange: Any) -> bool:
    from agentloom.routing.runtime import LOCAL_MODEL

    body = exchange.get("request", {}).get("body") if isinstance(exchange, dict) else None
    return isinstance(body, dict) and body.get("model") == LOCAL_MODEL


def replay_env(recording: Any, env: Mapping[str, str]) -> dict[str, str]:
    """The environment a replay (a path or a loaded Recording) resolves providers with.

    A replay sends nothing to the network, so a vendor whose calls the recording holds
    needs no real key to be chosen the way it was when recording (on CI, say). Its
    placeholder never leaves the machine."""
    from agentloom.recording import Recording, RecordingError

    out = dict(env)
    try:
        loaded = recording if isinstance(recording, Recording) else Recording.load(recording)
        paths = [str(e["request"].get("path", "")).lower() for e in loaded.exchanges]
    except (RecordingError, AttributeError, TypeError):
        return out  # check_recording reports a bad file before the run starts
    if loaded.exchanges and all(_embedded(e) for e in loaded.exchanges):
        # Recorded on the embedded model: replay there too (its stand-in, no server), so
        # the requests name `smollm2` as they did, whatever keys this machine has.
        out["AGENTLOOM_PROVIDER"] = "local"
        return out
    for marker, key in _VENDOR_PATHS:
        if key not in out and any(marker in p for p in paths):
            out[key] = "replay-placeholder"
    return out


def check_recording(args: argparse.Namespace) -> Any:
    """Read `--replay FILE` before the run starts: a missing, corrupt or truncated file is
    one clear error, not a failure of the first step that calls a model. Returns the
    loaded recording (None without `--replay`)."""
    replay = getattr(args, "replay", None)
    if not replay:
        return None
    if getattr(args, "record", None):
        raise UsageError("--record and --replay can't be used together")
    from agentloom.recording import Recording

    existing_file(replay, "recording")
    return Recording.load(replay)


def workflow_hash_of(path: str | Path) -> str:
    """The hash of the workflow file's bytes; an OSError if it is no regular file or is
    over the loader's bound (it could not be loaded either)."""
    from agentloom.workflow.durable.run import workflow_hash
    from agentloom.workflow.load.yaml_source import MAX_FILE_BYTES

    return workflow_hash(read_regular(path, MAX_FILE_BYTES))


async def open_durable(args: argparse.Namespace, wf: Workflow, state: dict[str, Any],
                       redactor: Redactor, *,
                       resumed: DurableRun | None = None) -> DurableRun | None:
    """The durable run of `agentloom run` (`resumed`: the one `agentloom resume`
    prepared), or None (checkpoints off, or the default store can't be opened: a warning
    says so)."""
    prepared = resumed
    if prepared is not None:
        if prepared.redactor is None:
            prepared.redactor = redactor
        return prepared
    if not getattr(args, "checkpoint", True):
        return None
    import uuid

    from agentloom.errors import AgentLoomError
    from agentloom.store import StoreCorrupt, new_worker_id, open_store
    from agentloom.workflow.durable.run import DurableRun

    store = open_store(args.store) if args.store else open_store(None)
    try:
        await store.__aenter__()  # type: ignore[attr-defined]
    except (AgentLoomError, OSError) as exc:
        if args.store or isinstance(exc, StoreCorrupt):  # never run past a damaged store
            raise
        sys.stderr.write(f"agentloom: checkpoints off, the run store can't be opened: {exc}\n")
        return None
    keep = retention()
    if keep is not None:  # stores don't grow without bound: old finished runs go
        await store.prune(keep)
    meta = {
        "workflow_path": str(Path(args.file).resolve()),
        "tools": [str(Path(p).resolve()) for p in args.tools],
        "model": args.model, "provider": args.provider, "timeout": args.timeout,
        **run_limits(args),
        "state": redactor.redact_state(state),
        "ui_url": os.environ.get("AGENTLOOM_UI_URL") or None,  # the gate's notify link
    }
    return DurableRun(store=store, run_id=getattr(args, "run_id", None) or uuid.uuid4().hex,
                      workflow_hash=workflow_hash_of(args.file), redactor=redactor, meta=meta,
                      worker_id=new_worker_id(), lease_seconds=LEASE_SECONDS)


RESUMED_FLAGS = ("budget", "max_tokens_per_run", "rpm", "tpm", "prices", "mock_responses",
                 "record", "replay", "replay_mode")
"""The `run` flags a resume runs with again (kept in the run's meta): its caps, pacing,
prices, mock replies, recording and replay (and how strictly it matches) are the run's,
not only its first process's (a resume adds its exchanges to the run's recording; a
replayed run goes on replaying)."""


def run_limits(args: Any) -> dict[str, Any]:
    """The run's `RESUMED_FLAGS` as given, file paths made absolute (a resume may start
    in another folder)."""
    kept: dict[str, Any] = {}
    for flag in RESUMED_FLAGS:
        value = getattr(args, flag, None)
        if value in (None, []) or (flag == "replay_mode" and not args.replay):
            continue
        if flag in ("prices", "mock_responses", "record", "replay"):
            value = str(Path(value).resolve())
        kept[flag] = value
    return kept


LEASE_SECONDS = 120.0
"""How long a run's claim holds without a checkpoint renewing it (every third of it)."""


def retention() -> timedelta | None:
    """How long finished runs are kept: `AGENTLOOM_RETENTION_DAYS` (default 30; 0 or
    `off` keeps them for ever)."""
    raw = os.environ.get("AGENTLOOM_RETENTION_DAYS", "").strip().lower()
    if not raw:
        return timedelta(days=DEFAULT_RETENTION_DAYS)
    if raw in ("0", "off", "never"):
        return None
    try:
        days = float(raw)
        # nan compares false with everything (it would keep runs for ever), and a number
        # past timedelta's 999,999,999 days overflows it.
        kept = timedelta(days=days) if 0 <= days < math.inf else None
    except (ValueError, OverflowError):
        kept = None
    if kept is None:
        raise UsageError(f"AGENTLOOM_RETENTION_DAYS={raw[:40]!r}: expected a number of "
                         f"days (up to {_MAX_DAYS:,}) or off")
    return kept if days > 0 else None


_MAX_DAYS = timedelta.max.days


def store_hint(args: argparse.Namespace) -> str:
    store = getattr(args, "store", None)
    return f" --store {store}" if store else ""


def report_retry(result: RunResult, args: argparse.Namespace) -> None:
    """A failed run kept in the store: how to run its failed steps again (on stderr); one
    stopped at its cap: how to go on under a higher one. Nothing for other endings, nor
    for a model without a price, which needs a price (the error says how), not a cap."""
    command = f"agentloom resume {result.run_id}{store_hint(args)} --retry-failed"
    status = result.status.value
    if status == "failed":
        sys.stderr.write(f"retry its failed steps with: {command}\n")
    elif status == "budget_exceeded" and not any(
            r.error_type == "PriceUnknown" for r in result.steps.values()):
        sys.stderr.write(f"raise its cap and go on with: {command} --budget USD (or "
                         "--max-tokens-per-run N)\n")


def report_pause(result: RunResult, args: argparse.Namespace, durable: Any,
                 redact: Callable[[str], str]) -> None:
    """Tell the person exactly how to continue a paused run (on stderr); the prompt is
    rendered from the state, so it is redacted as the state is."""
    pause = getattr(result, "pause", None)
    prompt = getattr(pause, "prompt", None)
    if prompt:
        prompt = redact(prompt)
    waiting = getattr(pause, "waiting_for", "a person")
    step = getattr(pause, "step_id", None)
    out = sys.stderr
    if durable is None:
        out.write(f"run {result.status.value} at step {step!r}: {prompt or waiting}\n"
                  "it can't be resumed: checkpoints are off (drop --no-checkpoint)\n")
        return
    base = f"agentloom resume {result.run_id}{store_hint(args)}"
    call_id = getattr(pause, "call_id", None)
    where = f"step {step!r}" + (f", tool call {call_id}" if call_id else "")
    out.write(f"run {result.run_id} {result.status.value} at {where}: {prompt or waiting}\n")
    if waiting == "approval":
        out.write(f"resume with: {base} --approve   (or --reject)\n")
    elif waiting == "answer":
        data = getattr(pause, "data", {}) or {}
        choices = data.get("choices")
        hint = f"   (choices: {', '.join(choices)})" if choices else ""
        if data.get("kind") == "secret":  # not on a command line others can read
            out.write(f"resume with: {base} --answer -   (the answer on stdin)\n")
        else:
            out.write(f"resume with: {base} --answer VALUE{hint}\n")
    elif waiting == "decision":
        out.write(f"resume with: {base} --approve   (run the call again) "
                  "or --reject   (tell the model it was not run)\n")
    else:
        out.write(f"resume with: {base}\n")
