"""Approve, reject or answer a paused run: by running `agentloom resume` for it.

The UI does not resume runs itself: it starts the very command a person would type
(`python -m agentloom.cli resume RUN_ID --approve --store URL`) as a child process in its
own session, so the run goes on exactly as a terminal resume would, survives the UI
being stopped, and is claimed in the store like any other worker's. The request is
answered once the child has taken the run (its claim is in the store), has finished, or
has refused (its message is the answer: a wrong choice, another process holding it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentloom.store import (
    FINISHED_STATUSES,
    RETRYABLE_STATUSES,
    CheckpointStore,
    holder_is_gone,
    lease_holds,
)

CLAIM_WAIT_SECONDS = 30.0


class DecisionRefused(Exception):
    """The decision can't be taken (HTTP 409 or 400, with this message)."""

    def __init__(self, message: str, status: int = 409) -> None:
        self.status = status
        super().__init__(message)


@dataclass(slots=True, frozen=True)
class Accepted:
    run_id: str
    pid: int
    status: str
    log: str


@dataclass(slots=True, frozen=True)
class ResumeCommand:
    """The `agentloom resume` flags of a decision, and what goes to the child's stdin: an
    answer goes there (`--answer -`), never on its command line, which every user of the
    machine can read (`ps`, /proc) and which a secret answer must stay out of."""

    flags: list[str]
    stdin: bytes | None = None


def resume_flags(body: Any, waiting_for: str) -> ResumeCommand:
    """The `agentloom resume` command for a decision body:
    `{"action": "approve" | "reject"}` or `{"action": "answer", "answer": ...}` (a failed
    run's `{"action": "retry"}` is `Resumer.decide`'s own)."""
    if not isinstance(body, dict):
        raise DecisionRefused("the body must be a JSON object with an 'action'", 400)
    action = body.get("action")
    if action in ("approve", "reject"):
        if waiting_for == "answer":
            raise DecisionRefused("the run waits for an answer, not an approval", 400)
        return ResumeCommand([f"--{action}"])
    if action == "answer":
        if waiting_for != "answer":
            raise DecisionRefused(f"the run waits for {waiting_for}, not an answer", 400)
        answer = body.get("answer")
        if isinstance(answer, list):
            answer = ",".join(str(a) for a in answer)
        if not isinstance(answer, str | int | float) or isinstance(answer, bool):
            raise DecisionRefused("'answer' must be text (or a list of choices)", 400)
        # The child drops one line end, so an answer's own last character survives.
        return ResumeCommand(["--answer", "-"], (str(answer) + "\n").encode())
    raise DecisionRefused("'action' must be approve, reject, answer or retry", 400)


RETRY_CAPS = (("budget", "--budget"), ("max_tokens_per_run", "--max-tokens-per-run"))
"""A retry body's caps and the `resume` flags they become."""


def retry_flags(run_id: str, body: dict[str, Any], status: str) -> ResumeCommand:
    """`resume --retry-failed` for `{"action": "retry"}` of a failed run, and for a run
    stopped at its budget with the higher cap it goes on under (`"budget"`: USD,
    `"max_tokens_per_run"`: tokens; what it spent counts)."""
    if status not in RETRYABLE_STATUSES:
        raise DecisionRefused(f"run {run_id} has not failed ({status}); only a failed run's "
                              "steps, or those of a run stopped at its budget, can be "
                              "retried")
    flags = ["--retry-failed"]
    for key, flag in RETRY_CAPS:
        value = body.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise DecisionRefused(f"'{key}' must be a number", 400)
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        whole = key != "max_tokens_per_run" or number.is_integer()
        if not (0 < number < float("inf") and whole):
            kind = "a number" if key == "budget" else "a whole number"
            raise DecisionRefused(f"'{key}' must be {kind} above 0, got {value!r}", 400)
        flags += [flag, str(value) if key == "budget" else str(int(number))]
    if status == "budget_exceeded" and len(flags) == 1:
        raise DecisionRefused(f"run {run_id} stopped at its budget: give the higher cap it "
                              "goes on under ('budget' in USD or 'max_tokens_per_run')", 400)
    return ResumeCommand(flags)


class Resumer:
    """Starts the resumes and remembers which runs have one going."""

    def __init__(self, store: CheckpointStore, store_url: str, env: Mapping[str, str],
                 *, python: str = sys.executable) -> None:
        self._store = store
        self._store_url = store_url
        self._env = dict(env)
        self._python = python
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._deciding: set[str] = set()
        """Runs a decision is being taken for: from its first look at the store until it
        is answered. A second one meanwhile (two tabs, two people) is refused at once,
        instead of starting a second resume beside the first (which wrote over its log)."""
        self._logs = Path(tempfile.gettempdir()) / f"agentloom-ui-{os.getuid()}"

    async def decide(self, run_id: str, body: Any, *, ui_url: str | None = None) -> Accepted:
        """Start the resume of a paused run, or the retry of a failed one (`{"action":
        "retry"}`: `resume --retry-failed`). `ui_url`, this UI's address, becomes the
        child's AGENTLOOM_UI_URL unless the UI's own environment names one."""
        if run_id in self._deciding:  # checked and taken with no await between
            raise DecisionRefused(f"run {run_id} is being resumed from this UI already")
        self._deciding.add(run_id)
        try:
            return await self._decide(run_id, body, ui_url)
        finally:
            self._deciding.discard(run_id)

    async def _decide(self, run_id: str, body: Any, ui_url: str | None) -> Accepted:
        record = await self._store.get_run(run_id)
        if record is None:
            raise DecisionRefused(f"no run {run_id!r} in the store", 404)
        retry = isinstance(body, dict) and body.get("action") == "retry"
        retrying = retry_flags(run_id, body, record.status) if retry else None
        if record.status in FINISHED_STATUSES and not retry:
            raise DecisionRefused(f"run {run_id} already finished ({record.status})")
        going = self._children.get(run_id)
        if going is not None and going.poll() is None:
            raise DecisionRefused(f"run {run_id} is being resumed from this UI already")
        # A lease past any a claim can take (year 9999) holds nothing, as for a claim.
        if (record.claimed_by and lease_holds(record.lease_until, datetime.now(UTC))
                and not holder_is_gone(record.claimed_by)):  # a killed one: its child takes over
            raise DecisionRefused(f"run {run_id} is held by another process "
                                  f"({record.claimed_by}); wait for it to end")
        if retrying is not None:  # `resume --retry-failed`: the failed steps run again
            return await self._start(run_id, retrying, record.status, ui_url)
        cp = await self._store.load_latest(run_id)
        if cp is None or cp.paused is None:
            raise DecisionRefused(f"run {run_id} is not waiting for a decision "
                                  f"(status {record.status})")
        command = resume_flags(body, cp.paused.waiting_for)
        return await self._start(run_id, command, record.status, ui_url)

    async def _start(self, run_id: str, command: ResumeCommand, before: str,
                     ui_url: str | None) -> Accepted:
        log = await asyncio.to_thread(self._log_path, run_id)
        # The run id last, after `--`: it is data (a run may be called `-h` or `--force`),
        # never one of resume's flags.
        argv = [self._python, "-m", "agentloom.cli", "resume", *command.flags,
                "--store", self._store_url, "--", run_id]
        # subprocess, not asyncio's: asyncio kills its children when its loop closes, and
        # the run must go on when the UI stops.
        env = self._env
        if ui_url and not env.get("AGENTLOOM_UI_URL"):
            env = {**env, "AGENTLOOM_UI_URL": ui_url}
        proc = await asyncio.to_thread(_spawn, argv, log, env, command.stdin)
        self._children[run_id] = proc
        waited = 0.0
        while waited < CLAIM_WAIT_SECONDS:
            code = proc.poll()
            if code is not None:
                record = await self._store.get_run(run_id)
                status = record.status if record else "unknown"
                if code not in (0, _PAUSED_AGAIN) and status == before:
                    # It stopped before the run went on: a refusal (the run held, a wrong
                    # answer) or an error of its own (a key this UI's environment lacks).
                    text = await asyncio.to_thread(_tail, log)
                    raise DecisionRefused(_failure(text, code))
                return Accepted(run_id, proc.pid, status, str(log))
            # The child's claim alone is not acceptance: it claims before it checks the
            # workflow file and the decision, and may still refuse. The run leaving its
            # paused status (or the child ending) is the answer.
            record = await self._store.get_run(run_id)
            if record is not None and record.status != before:
                return Accepted(run_id, proc.pid, record.status, str(log))
            await asyncio.sleep(0.05)  # the child starts and claims the run meanwhile
            waited += 0.05
        return Accepted(run_id, proc.pid, before, str(log))

    def _log_path(self, run_id: str) -> Path:
        _private_folder(self._logs)
        _prune_logs(self._logs, time.time() - LOG_KEEP_SECONDS)
        return self._logs / log_name(run_id)


LOG_KEEP_SECONDS = 7 * 24 * 3600.0
"""How long a resume's log is kept: a week after it was last written, the next decision
this UI takes removes it (one log per run decided piled up in $TMPDIR for ever)."""
LOG_TAIL_BYTES = 64 * 1024
"""How much of a refused resume's log is read for its reason: its end, where the error is."""


def _prune_logs(folder: Path, older_than: float) -> None:
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if (entry.name.endswith(".log") and entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_mtime < older_than):
                    os.unlink(entry.path)


def _tail(log: Path) -> str:
    """The end of a resume's log, at most LOG_TAIL_BYTES: a child that printed a lot
    before it stopped is not read into memory whole."""
    with open(log, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - LOG_TAIL_BYTES))
        return handle.read(LOG_TAIL_BYTES).decode("utf-8", "replace")


LOG_NAME_CHARS = 64
"""How much of a run id a log's name shows: the hash after it tells runs apart."""


def log_name(run_id: str) -> str:
    """The file name of a run's resume log: `<id>-<hash>.log`, the id shown in ASCII
    letters, digits, `-`, `_` and `.` (anything else as `_`) and cut to LOG_NAME_CHARS,
    then 16 hex digits of the SHA-256 of the whole id. Two runs never share a log (`a/b`
    and `a_b`, or two long ids alike in their first characters, did: one resume wrote
    over the other's log, whose refusal then answered the wrong decision), and the name
    stays within a file name's 255 bytes whatever the id holds."""
    shown = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_"
                    for c in run_id[:LOG_NAME_CHARS])
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{shown}-{digest}.log"


_PAUSED_AGAIN = 3
"""`agentloom resume`'s exit status when the run went on and paused again."""
_ERROR_MARKS = ("agentloom resume:", "agentloom: error:")


def _failure(log_text: str, code: int) -> str:
    """Why the resume child stopped: its last error line (with its hint; a warning it
    wrote before has the same mark), else its last line."""
    at, mark = max((log_text.rfind(mark), mark) for mark in _ERROR_MARKS)
    if at >= 0:
        lines = log_text[at + len(mark):].strip().splitlines() or [""]
        hint = next((line for line in lines[1:] if line.startswith("hint: ")), None)
        return lines[0] + (f" ({hint})" if hint else "")
    last = [line for line in log_text.splitlines() if line.strip()]
    return last[-1] if last else f"agentloom resume exited with status {code}"


def _private_folder(path: Path) -> None:
    """Make `path` a folder only this user can enter, or refuse it: in a shared /tmp its
    name is known to every user, and one of them could have made it first (theirs, open
    to all, or a link to a folder of theirs), to read the logs or plant a link a log is
    then written through."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise DecisionRefused(f"{path} is not a folder private to this user (a link, "
                              "another user's, or open to others): remove it, or set "
                              "TMPDIR elsewhere", 500)



def _spawn(argv: list[str], log: Path, env: dict[str, str], stdin: bytes | None
           ) -> subprocess.Popen[bytes]:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    with os.fdopen(fd, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if stdin is None
                                else subprocess.PIPE, stdout=out, stderr=out, env=env,
                                start_new_session=True)
    if stdin is not None:
        assert proc.stdin is not None
        # A child that ends before reading (a refusal) closes the pipe: its log says why.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    return proc
