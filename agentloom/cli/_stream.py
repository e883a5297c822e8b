"""`agentloom run --stream`: text as it arrives, one step's text at a time.

Steps that run in parallel stream at the same time; written as they come, their words
would interleave mid-word. So one step holds the terminal: the first to send text is
printed live, the others are kept aside, each whole, and printed when the terminal is
free again (the step holding it finished its call), oldest first. No step names are
added: what is printed is the models' text, each step's on its own lines. A step with
tools and an agent turn don't stream; their answer comes in one piece when they finish,
and takes its turn the same way.

With a redactor, what is printed is redacted as `--json` is: the live step's text is
printed up to where a secret could be starting, and the rest when the next piece shows
it isn't one (or is, and it is replaced whole).
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from agentloom.messages import StreamEvent
    from agentloom.redact import Redactor


class _HeldBack:
    """One step's streamed text, redacted: `feed` gives what may be printed now, `flush`
    the rest when its text ends."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        cut = len(text) - self._redactor.open_prefix(text)
        for start, end in self._redactor.match_spans(text):
            if start < cut < end:  # a whole secret across the cut goes out replaced
                cut = end
        self._held = text[cut:]
        return self._redactor.redact_text(text[:cut])

    def flush(self) -> str:
        text, self._held = self._held, ""
        return self._redactor.redact_text(text)


class StreamPrinter:
    """An `on_event(step_id, event)` sink for `arun_workflow` that writes to `out`."""

    def __init__(self, out: IO[str], redactor: Redactor | None = None) -> None:
        self._out = out
        self._redactor = redactor
        self._held: _HeldBack | None = None
        self._live: str | None = None
        self._ends_line = True
        self._waiting: dict[str, list[str]] = {}
        """Text of steps that are not live, in the order they started sending."""
        self._done: set[str] = set()
        """Waiting steps whose call has finished: their text is whole."""

    def __call__(self, step_id: str, event: StreamEvent) -> None:
        if event.kind == "text_delta":
            if not event.text:
                return
            if self._live is None and step_id not in self._waiting:
                self._live = step_id
            if self._live == step_id:
                self._write_live(event.text)
            else:
                self._done.discard(step_id)
                self._waiting.setdefault(step_id, []).append(event.text)
        elif event.kind == "finish":
            if self._live == step_id:
                self._release()
            elif step_id in self._waiting:
                self._done.add(step_id)

    def close(self) -> None:
        """The run ended: whatever is still kept aside is printed, in order."""
        self._end_live()
        for step_id in list(self._waiting):
            self._write_whole("".join(self._waiting.pop(step_id)))
            self._end_line()
        self._done.clear()
        self._end_line()

    def _release(self) -> None:
        self._end_live()
        self._end_line()
        while self._waiting:
            step_id = next(iter(self._waiting))
            text = "".join(self._waiting.pop(step_id))
            if step_id not in self._done:
                self._live = step_id  # still sending: it streams live from here
                self._write_live(text)
                return
            self._write_whole(text)
            self._done.discard(step_id)
            self._end_line()

    def _write_live(self, text: str) -> None:
        if self._redactor is None:
            self._write(text)
            return
        if self._held is None:
            self._held = _HeldBack(self._redactor)
        self._write(self._held.feed(text))

    def _end_live(self) -> None:
        """The live step's text ended: what it held back is printed."""
        if self._held is not None:
            self._write(self._held.flush())
            self._held = None
        self._live = None

    def _write_whole(self, text: str) -> None:
        self._write(self._redactor.redact_text(text) if self._redactor else text)

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._out.flush()
            self._ends_line = text.endswith("\n")

    def _end_line(self) -> None:
        if not self._ends_line:
            self._write("\n")
