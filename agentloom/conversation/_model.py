"""The conversation a state key holds, read from and written back to plain data.

A conversation lives in the run's state, so it goes through checkpoints and templates as
plain dicts and lists; `Conversation` is the typed view steps work on. It is immutable:
a turn builds a new one, and the caller writes it back only when the step succeeds.
Anything a key holds that isn't a conversation is a ConfigError naming the key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from agentloom.errors import ConfigError, kind_of

TrimPolicy: TypeAlias = Literal["drop_oldest", "drop_pairs", "summarize_oldest"]
StoredRole: TypeAlias = Literal["system", "user", "assistant", "tool"]
TRIM_POLICIES: tuple[str, ...] = ("drop_oldest", "drop_pairs", "summarize_oldest")
_ROLES = ("system", "user", "assistant", "tool")
_SPEAKER = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CONV_KEYS = {"messages", "token_budget", "trim_policy", "summary"}
_MSG_KEYS = {"role", "content", "name"}

CHARS_PER_TOKEN = 4
"""The rough count: about one token per four characters of text."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Added per message for its role and framing (chat formats spend ~3-4 tokens on that)."""
SUMMARY_HEADER = "Summary of the earlier conversation:\n"
"""How the summary is sent: a system message with this header before the text."""


def validate_speaker(name: Any) -> str:
    """`name` if it is a valid speaker: letters, digits, `_` and `-`, 1 to 64 characters."""
    if not isinstance(name, str) or not _SPEAKER.match(name):
        raise ConfigError(f"speaker {name!r} is not valid: use 1-64 letters, digits, _ or -")
    return name


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def message_tokens(content: str, name: str | None = None) -> int:
    """Rough tokens of one message: its text, plus the overhead, plus its name if any."""
    extra = estimate_tokens(name) + 1 if name else 0
    return estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS + extra


def summary_text(summary: str) -> str:
    return SUMMARY_HEADER + summary


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationMessage:
    """One stored turn: text only (attachments and tool-loop calls are never stored)."""

    role: StoredRole
    content: str
    name: str | None = None

    @property
    def tokens(self) -> int:
        return message_tokens(self.content, self.name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """The state value of a conversation key.

    conv = Conversation.from_state(state.get("chat"), key="chat")
    state["chat"] = conv.to_state()
    """

    messages: tuple[ConversationMessage, ...] = ()
    token_budget: int | None = None
    """Most tokens the messages and the summary may take; None means no limit."""
    trim_policy: TrimPolicy = "drop_oldest"
    summary: str | None = None
    """What summarize_oldest has folded in so far."""

    @classmethod
    def from_state(cls, value: Any, *, key: str = "conversation") -> Conversation:
        """Read a state value: None starts empty, a list is the messages, a mapping has
        `messages`, `token_budget`, `trim_policy` and `summary`."""
        if value is None:
            return cls()
        if isinstance(value, Conversation):
            return value
        if isinstance(value, (list, tuple)):
            return cls(messages=_messages(value, key))
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"conversation key {key!r} holds {kind_of(value)}, expected a "
                "mapping with messages or a list"
            )
        unknown = sorted(set(value) - _CONV_KEYS, key=str)
        if unknown:
            raise ConfigError(
                f"conversation key {key!r} has an unknown field {unknown[0]!r}; expected "
                "messages, token_budget, trim_policy or summary"
            )
        raw_messages = value.get("messages") or []
        if not isinstance(raw_messages, (list, tuple)):
            raise ConfigError(
                f"conversation key {key!r}: messages holds {kind_of(raw_messages)}, "
                "expected a list"
            )
        budget = value.get("token_budget")
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0
        ):
            raise ConfigError(
                f"conversation key {key!r}: token_budget must be a positive integer, got {budget!r}"
            )
        policy: TrimPolicy = value.get("trim_policy") or "drop_oldest"
        if policy not in TRIM_POLICIES:
            raise ConfigError(
                f"conversation key {key!r}: trim_policy is {policy!r}; expected "
                "drop_oldest, drop_pairs or summarize_oldest"
            )
        summary = value.get("summary")
        if summary is not None and not isinstance(summary, str):
            raise ConfigError(f"conversation key {key!r}: summary must be a string")
        return cls(
            messages=_messages(raw_messages, key),
            token_budget=budget,
            trim_policy=policy,
            summary=summary or None,
        )

    def to_state(self) -> dict[str, Any]:
        """Plain data for the state: always the mapping form, even if a list was read."""
        out: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages]}
        if self.token_budget is not None:
            out["token_budget"] = self.token_budget
        out["trim_policy"] = self.trim_policy
        if self.summary is not None:
            out["summary"] = self.summary
        return out

    def with_messages(self, messages: tuple[ConversationMessage, ...]) -> Conversation:
        return replace(self, messages=messages)

    @property
    def leading_system(self) -> tuple[ConversationMessage, ...]:
        """The system messages at the start, which trimming never removes."""
        n = 0
        while n < len(self.messages) and self.messages[n].role == "system":
            n += 1
        return self.messages[:n]

    def tokens(self) -> int:
        """Rough tokens of everything the budget counts: messages and summary."""
        total = sum(m.tokens for m in self.messages)
        if self.summary:
            total += message_tokens(summary_text(self.summary))
        return total


def _messages(raw: Any, key: str) -> tuple[ConversationMessage, ...]:
    out: list[ConversationMessage] = []
    for i, item in enumerate(raw):
        where = f"conversation key {key!r}: messages[{i}]"
        if isinstance(item, ConversationMessage):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise ConfigError(
                f"{where} holds {kind_of(item)}, expected a mapping with role and content"
            )
        unknown = sorted(set(item) - _MSG_KEYS, key=str)
        if unknown:
            raise ConfigError(
                f"{where} has an unknown field {unknown[0]!r}; expected role, content and name"
            )
        role = item.get("role")
        if role not in _ROLES:
            raise ConfigError(f"{where}.role is {role!r}; expected system, user, assistant or tool")
        content = item.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ConfigError(f"{where}.content holds {kind_of(content)}, expected text")
        name = item.get("name")
        if name is not None:
            try:
                validate_speaker(name)
            except ConfigError as exc:
                raise ConfigError(f"{where}.name: {exc}") from None
        out.append(ConversationMessage(role=role, content=content, name=name))
    return tuple(out)


def normalize_key(key: str) -> str:
    """`state.chat` and `chat` name the same key."""
    key = key.strip()
    if key.startswith("state."):
        key = key[len("state.") :]
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"conversation {key!r} is not a state key: write state.chat or chat")
    return key
