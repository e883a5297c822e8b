"""Transcript: the state of a conversation, an immutable sequence of messages.

It is what `Agent.converse` and `run_conversation` return and take back to continue: the
input messages followed by every turn a run added (assistant replies, tool calls and
their results). Immutable, so a stored transcript never changes under its owner; it
round-trips through JSON with `to_json`/`from_json` for storage between requests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from agentloom import _jsontext
from agentloom.messages import Message, message_from_dict, message_to_dict, new_message, text_part


class Transcript(Sequence[Message]):
    """An immutable list of messages with the conversation's last answer as `.text`."""

    __slots__ = ("_messages",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: tuple[Message, ...] = tuple(messages)

    @classmethod
    def coerce(cls, value: Transcript | Iterable[Message] | str) -> Transcript:
        """A transcript from a transcript, a list of messages or a single user prompt."""
        # A prompt first: `isinstance` of anything but a Transcript against this class
        # asks the ABC machinery (a Sequence), a tenth of an Agent call's bookkeeping.
        if isinstance(value, str):
            if cls is Transcript:
                return of((new_message("user", (text_part(value),), None),))
            return cls((Message.user(value),))
        if isinstance(value, Transcript):
            return value
        return cls(value)

    @property
    def messages(self) -> tuple[Message, ...]:
        return self._messages

    @property
    def text(self) -> str:
        """The text of the last assistant message ("" if none)."""
        for message in reversed(self._messages):
            if message.role == "assistant":
                return message.text
        return ""

    def append(self, *messages: Message) -> Transcript:
        """A new transcript with `messages` added at the end."""
        return of(self._messages + messages)

    def with_user(self, text: str) -> Transcript:
        return self.append(Message.user(text))

    def to_json(self) -> str:
        return json.dumps([message_to_dict(m) for m in self._messages])

    @classmethod
    def from_json(cls, data: str) -> Transcript:
        return cls(message_from_dict(d) for d in _jsontext.loads(data))

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Transcript: ...

    def __getitem__(self, index: int | slice) -> Message | Transcript:
        if isinstance(index, slice):
            return Transcript(self._messages[index])
        return self._messages[index]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Transcript):
            return self._messages == other._messages
        if isinstance(other, list | tuple):
            return self._messages == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._messages)

    def __repr__(self) -> str:
        return f"Transcript({len(self._messages)} messages)"


_new = object.__new__


def of(messages: tuple[Message, ...]) -> Transcript:
    """`Transcript(messages)` of a tuple, without the class call (one per Agent run)."""
    self: Transcript = _new(Transcript)  # its __init__, on the tuple as it is
    self._messages = messages
    return self
