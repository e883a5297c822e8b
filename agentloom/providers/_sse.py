"""Incremental readers for streamed bodies: Server-Sent Events and newline-delimited JSON.

Bytes arrive in arbitrary pieces (a chunk may end mid-line, mid-UTF-8 character, or
between the `\\r` and `\\n` of one line break), so both parsers keep the unfinished tail
and return only what is complete. They are pure: fed bytes, they return values, so they
are tested without sockets and shared by every streaming wire protocol.

An unfinished line is kept as its pieces and joined once, when it ends: a hostile server
that sends one line and never ends it costs each piece's length, not the whole line's
again on every piece (which made a 16 MiB line take tens of seconds of the event loop).
The line's length is bounded by the reply cap (`max_reply_bytes`).
"""

from __future__ import annotations

from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom.providers._json import load_body


@frozen_record(kw_only=False)
class SSEEvent(FrozenRecord):
    """One dispatched event. `event` is "message" when the stream named none."""

    event: str
    data: str
    id: str | None = None

    def __init__(self, event: str, data: str, id: str | None = None) -> None:
        set_field(self, "event", event)
        set_field(self, "data", data)
        set_field(self, "id", id)


class SSEParser:
    """Feed bytes, get the events they complete (the WHATWG event-stream rules).

    Comments (`:` lines) and `retry:` are skipped; several `data:` lines join with "\\n";
    an event with no data is not dispatched. `close()` dispatches an event left without
    its closing blank line, since some servers end the body that way.
    """

    __slots__ = ("_data", "_event", "_last_id", "_tail")

    def __init__(self) -> None:
        self._tail: list[bytes] = []
        """The pieces of the unfinished last line."""
        self._data: list[bytes] = []
        self._event: str | None = None
        self._last_id: str | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        if not data:
            return []
        tail = self._tail
        if tail:
            tail.append(data)
            if b"\n" not in data and b"\r" not in data and tail[-2][-1:] != b"\r":
                return []  # the line goes on: nothing to split yet
            buf = b"".join(tail)
        else:
            buf = data
        lines = buf.splitlines(True)
        # A last line without "\n" is unfinished; one ending in a lone "\r" may still
        # get its "\n" in the next chunk, so it waits too.
        self._tail = [] if lines[-1][-1:] == b"\n" else [lines.pop()]
        out: list[SSEEvent] = []
        for line in lines:
            if line[-2:] == b"\r\n":
                self._line(line[:-2], out)
            else:
                self._line(line[:-1], out)
        return out

    def close(self) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        if self._tail:
            tail, self._tail = b"".join(self._tail), []
            self._line(tail.rstrip(b"\r"), out)
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(
                    SSEEvent(
                        self._event or "message",
                        b"\n".join(self._data).decode("utf-8", "replace"),
                        self._last_id,
                    )
                )
                self._data = []
            self._event = None
            return
        if line[:6] == b"data: ":  # the common case first
            self._data.append(line[6:])
            return
        if line[:1] == b":":
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self._last_id = value.decode("utf-8", "replace")
        # "retry" and unknown fields are ignored, as the standard says.


class NDJSONParser:
    """Feed bytes, get the JSON values of the complete lines. Blank lines are skipped;
    a line that is not JSON raises ValueError (the caller maps it to a body error)."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail: list[bytes] = []
        """The pieces of the unfinished last line."""

    def feed(self, data: bytes) -> list[object]:
        if b"\n" not in data:
            if data:
                self._tail.append(data)
            return []
        if self._tail:
            self._tail.append(data)
            data = b"".join(self._tail)
        head, _, tail = data.rpartition(b"\n")
        self._tail = [tail] if tail else []
        return [load_body(line) for line in head.split(b"\n") if line.strip()]

    def close(self) -> list[object]:
        tail, self._tail = b"".join(self._tail), []
        return [load_body(tail)] if tail.strip() else []
