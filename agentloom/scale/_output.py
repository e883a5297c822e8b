"""The batch's output: one JSONL line per input as runs finish, and the summary table.

Lines are written from a worker thread (the event loop never waits on the disk), each as
one complete `write` of `json + "\\n"` followed by a flush, so a reader, or `--resume`
after a crash, sees whole lines only; a line torn by a kill is skipped by the resume
reader. Before appending, a file whose last byte is not a newline gets one, so a torn
line can never merge with the next record. `aclose()` writes everything still queued:
after a cancelled batch, every finished run is on disk.

What the terminal is shown of an input (its id, its source, why it failed) passes through
`shown()`: an id is whatever the inputs file says (8 MiB of it, escape sequences, line
breaks), a terminal obeys an escape sequence (a cleared screen, a window title) and a line
break forges a line of the summary. The output file keeps them whole, JSON-escaped.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentloom._files import make_private_dir, open_private
from agentloom._printable import printable as shown
from agentloom.errors import ConfigError
from agentloom.scale._types import BatchItemResult

if TYPE_CHECKING:
    from rich.console import Console

    from agentloom.scale._summary import BatchStats


class ResultWriter:
    """Appends result lines to `path` (created if absent; truncated when `append` is
    False)."""

    def __init__(self, path: str | os.PathLike[str], *, append: bool) -> None:
        self.path = Path(path)
        self._append = append
        self._file: IO[str] | None = None
        self._pending: list[str] = []
        self._flushing: asyncio.Task[None] | None = None
        self.lines_written = 0

    async def open(self) -> ResultWriter:
        """Truncate now when starting over; an appended file is opened at the first
        result, so a batch that fails before any run leaves no empty file behind."""
        if not self._append:
            self._file = await asyncio.to_thread(self._open)
        return self

    def _open(self) -> IO[str]:
        make_private_dir(self.path.parent)
        try:
            mode = self.path.stat().st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            # Opening a FIFO to write waits for a reader, and a device takes every line.
            raise ConfigError(f"{self.path}: not a regular file, so no results go there")
        if self._append and mode is not None and self.path.stat().st_size:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
            file = open_private(self.path, append=True)
            if torn:
                file.write("\n")
                file.flush()
            return file
        return open_private(self.path, append=self._append)

    def write(self, item: BatchItemResult) -> None:
        """Queue one result; it reaches the disk shortly, and surely by `aclose()`."""
        self._pending.append(json_line(item.to_dict()) + "\n")
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending:
            lines, self._pending = self._pending, []
            await asyncio.to_thread(self._write_lines, lines)

    def _write_lines(self, lines: list[str]) -> None:
        if self._file is None:
            self._file = self._open()
        for line in lines:
            self._file.write(line)
        self._file.flush()
        self.lines_written += len(lines)

    async def aclose(self) -> None:
        """Write what is queued, then close. Safe to call from a cancelled task."""
        task = self._flushing
        if task is not None and not task.done():
            # The flush task runs on; waiting for it again after a second cancel is safe
            # because it owns the pending lines until they are written.
            await asyncio.shield(task)
        if self._pending:
            await asyncio.shield(self._flush())
        if self._file is not None:
            file, self._file = self._file, None
            await asyncio.to_thread(file.close)


MAX_SHOWN_ID = 200
"""Characters of an input's id (or source) shown on the terminal."""
MAX_SHOWN_ERROR = 1000
"""Characters of a failure's reason shown on the terminal."""
MAX_SHOWN_FAILURES = 100
"""Failures listed under the summary table; the output file has every one."""


def json_line(value: Any) -> str:
    """`value` as one line of strict JSON. An output may hold a float JSON has no word
    for (a tool's `nan`, a model's `Infinity` that Python's parser let through):
    `json.dumps` would write `NaN`, which no strict reader (jq, JSON.parse, most JSON
    libraries) accepts, so one bad value would make the whole line unreadable. Such a
    number is written as null, as an unknown value is."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value, 0), ensure_ascii=False, default=_default,
                          allow_nan=False)


_MAX_WALK = 500
"""Nesting walked to replace non-finite numbers; deeper is written as null (a loaded
document is at most 200 deep; only a cycle or a hand-built object is deeper)."""


def _finite(value: Any, depth: int) -> Any:
    if depth > _MAX_WALK:
        return None
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v, depth + 1) for v in value]
    return value


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def render_summary(stats: BatchStats, console: Console) -> None:
    """The end-of-batch table, then every input that did not succeed with its reason."""
    from rich.table import Table

    if stats.error is not None and stats.done == 0:
        return  # nothing ran: the error itself is the message
    table = Table(title="batch summary" + (" (interrupted)" if stats.interrupted else ""),
                  show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    rate = stats.runs_per_second
    rows: list[tuple[str, str]] = [
        ("inputs", f"{stats.total:,}"),
        ("succeeded", f"{stats.succeeded:,}"),
        ("failed", f"{stats.failed:,}"),
        ("invalid inputs", f"{stats.invalid:,}"),
    ]
    if stats.paused:
        rows.insert(2, ("waiting for a person", f"{stats.paused:,}"))
    if stats.skipped:
        rows.append(("skipped (done before)", f"{stats.skipped:,}"))
    if stats.remaining:
        rows.append(("not run", f"{stats.remaining:,}"))
    if stats.reused:
        rows.append(("finished before (from the store)", f"{stats.reused:,}"))
    if stats.resumed:
        rows.append(("resumed from a checkpoint", f"{stats.resumed:,}"))
    if stats.retried:
        rows.append(("re-run after a worker died", f"{stats.retried:,}"))
    rows += [
        ("tokens", format_tokens(stats)),
        ("cost", format_cost(stats)),
        ("time", f"{stats.elapsed:.1f}s"),
        ("runs/s", f"{rate:.1f}" if rate else "-"),
        ("executor", stats.executor),
    ]
    if stats.output:
        rows.append(("output", stats.output))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    if stats.failures:
        console.print(f"{len(stats.failures)} input(s) did not succeed:", markup=False)
        for f in stats.failures[:MAX_SHOWN_FAILURES]:
            where = f" ({shown(f.source, MAX_SHOWN_ID)})" if f.source else ""
            console.print(f"  {shown(f.id, MAX_SHOWN_ID)}{where}: {shown(f.status, 50)}: "
                          f"{shown(f.error or '-', MAX_SHOWN_ERROR)}", markup=False,
                          highlight=False, soft_wrap=True)
        if len(stats.failures) > MAX_SHOWN_FAILURES:
            more = len(stats.failures) - MAX_SHOWN_FAILURES
            console.print(f"  ... and {more:,} more (every one is in the output file)",
                          markup=False, highlight=False)


def format_tokens(stats: BatchStats) -> str:
    text = f"{stats.tokens:,}"
    if stats.runs_without_tokens:
        text += f" (+ {stats.runs_without_tokens} run(s) unknown)"
    return text


def format_cost(stats: BatchStats) -> str:
    text = f"${stats.cost_usd:.4f}"
    if stats.runs_without_cost:
        text += f" (+ {stats.runs_without_cost} run(s) unknown)"
    return text
