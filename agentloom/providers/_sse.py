"""Incremental readers for streamed bodies: Server-Sent Events and newline-delimited JSON.

Bytes arrive in arbitrary pieces (a chunk may end mid-line, mid-UTF-8 character, or
between the `\\r` and `\\n` of one line break), so both parsers keep the unfinished tail
and return only what is complete. They are pure: fed bytes, they return values, so they
are tested without sockets and shared by every streaming wire protocol.
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
        self._tail = b""
        self._data: list[bytes] = []
        self._event: str | None = None
        self._last_id: str | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        buf = self._tail + data if self._tail else data
        if not buf:
            return []
        lines = buf.splitlines(True)
        # A last line without "\n" is unfinished; one ending in a lone "\r" may still
        # get its "\n" in the next chunk, so it waits too.
        if lines[-1][-1:] == b"\n":
            self._tail = b""
        else:
            self._tail = lines.pop()
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
            tail, self._tail = self._tail, b""
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
        self._tail = b""

    def feed(self, data: bytes) -> list[object]:
        buf = self._tail + data if self._tail else data
        head, sep, tail = buf.rpartition(b"\n")
        if not sep:
            self._tail = buf
            return []
        self._tail = tail
        return [load_body(line) for line in head.split(b"\n") if line.strip()]

    def close(self) -> list[object]:
        tail, self._tail = self._tail, b""
        return [load_body(tail)] if tail.strip() else []
