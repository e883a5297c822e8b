"""One router call's bookkeeping: the records and errors of its attempts (`CallLog`), and
whether a streamed attempt already reached the caller (`DeliverySink`).
"""

from __future__ import annotations

from typing import Any

from agentloom.errors import ProviderError
from agentloom.messages import StreamEvent
from agentloom.providers import AttemptRecord, EventSink


class DeliverySink:
    """The event sink of one streamed attempt: passes events on and remembers that one
    went out (a reply that reached the caller is never retried or moved elsewhere)."""

    __slots__ = ("delivered", "on_event")

    def __init__(self, on_event: EventSink | None) -> None:
        self.on_event = on_event
        self.delivered = False

    def __call__(self, event: StreamEvent) -> None:
        self.delivered = True
        if self.on_event is not None:
            self.on_event(event)


class CallLog:
    """One call's bookkeeping in one object: the records an attempt's client reported
    (it is the client's `on_attempt`, and holds them until the router numbers them), the
    errors and failed attempts `CallFailed` carries, and which errors were refusals. Its
    lists are made on first use, so a call that succeeds at once makes none, and fewer
    objects live through each call's wait for the collector to walk."""

    __slots__ = ("attempts", "errors", "pending", "refused")

    def __init__(self) -> None:
        self.pending: list[AttemptRecord] | None = None
        self.errors: list[ProviderError] = _NONE
        self.attempts: list[AttemptRecord] = _NONE
        self.refused: set[int] = _NO_IDS

    def __call__(self, record: AttemptRecord) -> None:
        if self.pending is None:
            self.pending = [record]
        else:
            self.pending.append(record)

    def fail(self, err: ProviderError) -> None:
        if self.errors is _NONE:
            self.errors = []
        self.errors.append(err)

    def keep(self, record: AttemptRecord) -> None:
        if self.attempts is _NONE:
            self.attempts = []
        self.attempts.append(record)

    def refuse(self, err: ProviderError) -> None:
        if self.refused is _NO_IDS:
            self.refused = set()
        self.refused.add(id(err))
        self.fail(err)


_NONE: list[Any] = []
"""The empty list every `CallLog` starts with; it is replaced, never added to."""
_NO_IDS: set[int] = set()
