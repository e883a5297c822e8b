"""A sign of life on the terminal while a run works: one stderr line, redrawn in place.

A run on the embedded model can think for half a minute with nothing printed. When
stderr is a terminal (and neither `--json` nor `--stream` is given, nor `TERM=dumb`),
after the first second `agentloom run` keeps one line up to date, such as

    ⠹ 12s · running greet · 46 tokens so far

and erases it before the results are printed. A pipe, a file or a CI log never gets it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from agentloom.loop.observer import NullObserver, current_conversation

if TYPE_CHECKING:
    from agentloom.loop.summary import ConversationSummary
    from agentloom.messages import ModelResponse

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_PLAIN_FRAMES = "|/-\\"
SHOW_AFTER = 1.0
"""Seconds before the line appears: a quick run prints nothing."""
_TICK = 0.25
_CLEAR = "\r\x1b[2K"


def wanted(stream: IO[str], args: Any) -> bool:
    if getattr(args, "json", False) or getattr(args, "stream", False):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Progress(NullObserver):
    """The loop observer that counts what the line shows, and the task that draws it."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._running: dict[str, str] = {}
        """conversation id -> step id, for the model steps under way."""
        self._tokens = 0
        self._drawn = False
        encoding = (getattr(stream, "encoding", None) or "").lower()
        self._frames = _FRAMES if "utf" in encoding else _PLAIN_FRAMES
        self._task: asyncio.Task[None] | None = None

    # --- the loop's callbacks (each model step is one conversation) ---------------------

    def on_conversation_start(self, info: Any) -> None:
        if info.step_id:
            self._running[info.conversation_id] = info.step_id

    def on_response(self, response: ModelResponse, iteration: int,
                    duration_seconds: float) -> None:
        usage = response.usage
        if usage is not None and usage.total_tokens:
            self._tokens += usage.total_tokens

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        info = current_conversation()
        if info is not None:
            self._running.pop(info.conversation_id, None)

    # --- drawing ---------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._draw_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._drawn:
            self._stream.write(_CLEAR)
            self._stream.flush()

    async def _draw_loop(self) -> None:
        start = time.monotonic()
        await asyncio.sleep(SHOW_AFTER)
        frame = 0
        while True:
            self._draw(self.line(time.monotonic() - start, frame))
            frame += 1
            await asyncio.sleep(_TICK)

    def line(self, elapsed: float, frame: int) -> str:
        bits = [f"{self._frames[frame % len(self._frames)]} {elapsed:.0f}s"]
        running = sorted(set(self._running.values()))
        if running:
            bits.append("running " + ", ".join(running))
        if self._tokens:
            bits.append(f"{self._tokens} tokens so far")
        return " · ".join(bits)

    def _draw(self, text: str) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        if len(text) >= width:
            text = text[:max(width - 2, 1)] + "…"
        self._stream.write(_CLEAR + text)
        self._stream.flush()
        self._drawn = True


def progress_for(args: Any) -> Progress | None:
    return Progress(sys.stderr) if wanted(sys.stderr, args) else None
