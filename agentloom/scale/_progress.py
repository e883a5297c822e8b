"""Showing a batch as it runs: a live bar in a terminal, plain lines elsewhere, or JSON.

All three read the same `BatchStats` and get the same four calls (start, started,
result, finish), so the batch loop does not care which one is attached.

- `RichProgress` (stdout is a terminal): one live line with a bar, done/failed/running,
  runs/s, tokens and cost so far and an ETA; the summary table at the end.
- `PlainProgress` (a pipe or a log file): a line every `interval` seconds or every
  `every` results, whichever comes first, so a log stays readable at any batch size.
- `JsonProgress` (`--json`): one JSON object per line on stdout: `start`, `result` per
  input, `summary` at the end; nothing else is printed on stdout.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any, Protocol

from agentloom._printable import printable as shown
from agentloom.scale._output import (
    MAX_SHOWN_ERROR,
    MAX_SHOWN_ID,
    json_line,
    render_summary,
)
from agentloom.scale._summary import BatchStats
from agentloom.scale._types import BatchItemResult


class BatchProgress(Protocol):
    def start(self, stats: BatchStats) -> None: ...
    def result(self, item: BatchItemResult, stats: BatchStats) -> None: ...
    def finish(self, stats: BatchStats) -> None: ...


class NullProgress:
    def start(self, stats: BatchStats) -> None:
        pass

    def result(self, item: BatchItemResult, stats: BatchStats) -> None:
        pass

    def finish(self, stats: BatchStats) -> None:
        pass


def status_line(stats: BatchStats) -> str:
    todo = stats.total - stats.skipped
    rate = stats.runs_per_second
    eta = stats.eta_seconds
    done = stats.done + stats.reused  # taken from the store counts as done
    paused = f"{stats.paused:,} paused · " if stats.paused else ""
    return (f"{done:,}/{todo:,} done · {stats.failed + stats.invalid:,} failed · {paused}"
            f"{stats.running:,} running · {f'{rate:.1f}' if rate else '-'} runs/s · "
            f"{stats.tokens:,}{'+' if stats.runs_without_tokens else ''} tokens · "
            f"${stats.cost_usd:.4f}{'+' if stats.runs_without_cost else ''} · "
            f"ETA {_clock_text(eta) if eta is not None else '-'}")


def _clock_text(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class PlainProgress:
    """Lines like `batch: 120/1,000 done · 3 failed · ...` on a non-terminal stream."""

    def __init__(self, stream: IO[str] | None = None, *, interval: float = 1.0,
                 every: int = 100, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self.interval = interval
        self.every = every
        self._clock = clock
        self._last = 0.0
        self._since = 0

    @property
    def stream(self) -> IO[str]:
        return self._stream or sys.stdout

    def start(self, stats: BatchStats) -> None:
        todo = stats.total - stats.skipped
        skipped = f", {stats.skipped:,} done before" if stats.skipped else ""
        self._write(f"batch: {todo:,} input(s) to run on {stats.executor}{skipped}")
        self._last = self._clock()

    def result(self, item: BatchItemResult, stats: BatchStats) -> None:
        if item.status == "invalid_input":
            self._write(f"batch: {shown(item.source or item.id, MAX_SHOWN_ID)}: "
                        f"{shown(item.error or '-', MAX_SHOWN_ERROR)}")
        self._since += 1
        now = self._clock()
        if self._since >= self.every or now - self._last >= self.interval:
            self._since = 0
            self._last = now
            self._write("batch: " + status_line(stats))

    def finish(self, stats: BatchStats) -> None:
        if stats.error is not None and stats.done == 0:
            return
        self._write("batch: " + status_line(stats))
        render_summary(stats, _console(self.stream, terminal=False))

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


class JsonProgress:
    """Events as JSON lines: `{"event": "start"|"result"|"summary", ...}`."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream

    def _emit(self, event: dict[str, Any]) -> None:
        out = self._stream or sys.stdout
        out.write(json_line(event) + "\n")
        out.flush()

    def start(self, stats: BatchStats) -> None:
        self._emit({"event": "start", "total": stats.total, "skipped": stats.skipped,
                    "executor": stats.executor, "output": stats.output})

    def result(self, item: BatchItemResult, stats: BatchStats) -> None:
        self._emit({"event": "result", **item.to_dict(), "done": stats.done,
                    "running": stats.running})

    def finish(self, stats: BatchStats) -> None:
        self._emit({"event": "summary", **stats.to_dict()})


class RichProgress:
    """A live display on a terminal (rich), refreshed a few times a second: the bar with
    done/total and the ETA on one line, failures, running runs, rate, tokens and cost on
    the next, so both fit an 80-column terminal."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream
        self._progress: Any = None
        self._task: Any = None

    def start(self, stats: BatchStats) -> None:
        from rich.progress import BarColumn, Progress, TextColumn
        from rich.text import Text

        class _TwoLines(Progress):
            detail = ""

            def get_renderables(self) -> Any:
                yield self.make_tasks_table(self.tasks)
                yield Text(self.detail, style="dim")

        console = _console(self._stream or sys.stdout, terminal=True)
        self._progress = _TwoLines(
            TextColumn("[bold]batch"), BarColumn(bar_width=None),
            TextColumn("{task.fields[head]}"),
            console=console, refresh_per_second=4, transient=False, expand=True)
        self._task = self._progress.add_task("batch", total=max(1, stats.total - stats.skipped),
                                             head="")
        self._show(stats)
        self._progress.start()

    def _show(self, stats: BatchStats) -> None:
        head, _, detail = status_line(stats).partition(" · ")
        eta = detail.rpartition(" · ")
        self._progress.detail = eta[0]
        self._progress.update(self._task, completed=stats.done + stats.reused,
                              head=f"{head} · {eta[2]}")

    def result(self, item: BatchItemResult, stats: BatchStats) -> None:
        if self._progress is None:
            return
        if item.status == "invalid_input":
            self._progress.console.print(
                f"{shown(item.source or item.id, MAX_SHOWN_ID)}: "
                f"{shown(item.error or '-', MAX_SHOWN_ERROR)}", markup=False, highlight=False)
        self._show(stats)

    def finish(self, stats: BatchStats) -> None:
        if self._progress is None:
            return
        self._show(stats)
        self._progress.stop()
        render_summary(stats, self._progress.console)
        self._progress = None


def choose_progress(*, json_events: bool, stream: IO[str] | None = None) -> BatchProgress:
    """JSON events if asked; a live bar when the stream is a terminal; plain lines else."""
    out = stream or sys.stdout
    if json_events:
        return JsonProgress(out)
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return RichProgress(out)
    return PlainProgress(out)


def _console(stream: IO[str], *, terminal: bool) -> Any:
    from rich.console import Console

    if terminal:
        return Console(file=stream)
    return Console(file=stream, force_terminal=False, no_color=True, width=100,
                   highlight=False)
