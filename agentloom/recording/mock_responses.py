"""The public AgentLoom's `provider: mock` response files, served strictly.

Its files map a step id (or a prompt hash) to one reply or a list of replies, one per turn
of a tool loop: `{"ask": [{"content": "", "tool_calls": [...], "usage": {...}}, ...]}`. We
serve them through a ModelClient keyed by the current call context (`agentloom.recording`),
and fail on any call they do not cover: the public project answered those with a made-up
"Mock response".
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentloom import _jsontext
from agentloom._clock import SYSTEM_CLOCK
from agentloom._files import read_regular
from agentloom.errors import ConfigError, ReplayMismatch
from agentloom.messages import (
    FinishEvent,
    ModelResponse,
    Part,
    TextDelta,
    TextPart,
    ToolCallPart,
    Usage,
    UsageEvent,
    message_to_dict,
)
from agentloom.providers import AttemptRecord
from agentloom.recording._context import CallContext, current_call_context
from agentloom.recording._format import (
    FORMAT,
    MAX_RECORDING_BYTES,
    RecordingError,
    canonical_json,
    describe_call,
)

_HEX64 = frozenset("0123456789abcdef")
MAX_REPLIES = 100_000
"""Replies in one file, over all its entries: a file of millions of tiny replies took
gigabytes to hold (each reply is a ModelResponse)."""
MAX_TOKENS = 10**12
"""The most tokens a usage count may say."""
MAX_LATENCY_MS = 3_600_000
"""The longest recorded latency a `latency_model: replay` run waits (an hour)."""


@dataclass(slots=True, frozen=True)
class MockReply:
    response: Any  # ModelResponse (typed loosely to keep messages out of import time)
    latency_ms: float | None = None


@dataclass(slots=True)
class MockResponses:
    path: Path
    by_step: dict[str, list[MockReply]] = field(default_factory=dict)
    by_hash: dict[str, list[MockReply]] = field(default_factory=dict)


def _is_hash_key(key: str) -> bool:
    k = key.removeprefix("sha256:")
    return len(k) == 64 and set(k) <= _HEX64


class _Bad(ValueError):
    """One field of one reply that no mock responses file holds."""


def _bad(field: str, expected: str) -> _Bad:
    return _Bad(f"{field} must be {expected}")


def _text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(key, "a string")
    return value


def _count(usage: dict[str, Any], *keys: str) -> int | None:
    """The first of `keys` that `usage` holds: a whole number of tokens, or None."""
    for key in keys:
        if key in usage:
            value = usage[key]
            if value is not None and not (type(value) is int and 0 <= value <= MAX_TOKENS):
                raise _bad(f"usage.{key}", f"a whole number of tokens from 0 to {MAX_TOKENS}")
            return value
    return None


def _number(raw: dict[str, Any], key: str, most: float, expected: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if type(value) not in (int, float) or not (math.isfinite(value) and 0 <= value <= most):
        raise _bad(key, expected)
    return float(value)


def _tool_call(call: Any, i: int) -> ToolCallPart:
    if not isinstance(call, dict) or "name" not in call:
        raise _Bad(f"tool_calls[{i}] needs a name")
    name, call_id, args = call["name"], call.get("id"), call.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise _bad(f"tool_calls[{i}].name", "a tool's name, a non-empty string")
    if call_id is not None and not isinstance(call_id, str):
        raise _bad(f"tool_calls[{i}].id", "a string")
    if args is None:
        args = {}
    if not isinstance(args, dict | str):
        raise _bad(f"tool_calls[{i}].arguments", "an object of the tool's arguments "
                   "(or its JSON text)")
    return ToolCallPart(id=call_id or f"call_{i}", name=name,
                        arguments=args if isinstance(args, str) else json.dumps(args))


def _mock_reply(raw: Any) -> MockReply:
    """One reply, every field checked: a reply stored as a list, usage counts that are
    text, negative or NaN, tool arguments that are a list, a NaN cost or an endless
    latency failed the step later in Python's words, or were taken."""
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        raise _Bad("a reply must be an object or a string")
    text = _text(raw, "content" if "content" in raw else "text")
    calls = raw.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise _bad("tool_calls", "a list of tool calls")
    parts: list[Part] = [TextPart(text=text)] if text else []
    parts.extend(_tool_call(call, i) for i, call in enumerate(calls or []))
    usage = raw.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        raise _bad("usage", "an object of token counts")
    _count(usage, "total_tokens")
    cost = _number(raw, "cost_usd", math.inf, "a finite number of US dollars, 0 or more")
    latency = _number(raw, "latency_ms", MAX_LATENCY_MS,
                      f"a number of milliseconds from 0 to {MAX_LATENCY_MS}")
    finish, model, provider = (_text(raw, key) for key in ("finish_reason", "model",
                                                          "provider"))
    response = ModelResponse(
        parts=tuple(parts),
        usage=Usage(input_tokens=_count(usage, "prompt_tokens", "input_tokens"),
                    output_tokens=_count(usage, "completion_tokens", "output_tokens"),
                    cost_usd=Decimal(str(cost)) if cost is not None else None),
        finish_reason=finish or ("tool_calls" if calls else "stop"),
        model=model or "mock",
        provider=provider or "mock",
    )
    return MockReply(response=response, latency_ms=latency)


def _replies(value: Any, where: str) -> list[MockReply]:
    if isinstance(value, list) and not value:
        raise RecordingError(f"{where}: an empty list; give one reply, or a list of one "
                             "per turn")
    many = isinstance(value, list)
    out: list[MockReply] = []
    for i, raw in enumerate(value if many else [value]):
        try:
            out.append(_mock_reply(raw))
        except _Bad as exc:
            raise RecordingError(f"{where}{f'[{i}]' if many else ''}: {exc}") from None
    return out


def load_agentloom_mock_responses(path: str | Path) -> MockResponses:
    """Read a public-AgentLoom `responses_file` / `--mock-responses` file.

    Keys are step ids, or 64-hex prompt hashes; values are one reply or a list (one per
    turn). Every reply is checked field by field here, before any step runs: anything a
    reply can't hold raises `RecordingError` naming the file, the entry and the field.
    """
    p = Path(path)
    try:
        data = _jsontext.loads(read_regular(p, MAX_RECORDING_BYTES).decode("utf-8"))
    except FileNotFoundError as exc:
        raise RecordingError(f"{p}: mock responses file not found") from exc
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise RecordingError(f"{p}: not a readable JSON mock responses file ({why})") from exc
    if not isinstance(data, dict):
        raise RecordingError(f"{p}: expected an object of step id -> reply(s)")
    if data.get("format") == FORMAT or isinstance(data.get("exchanges"), list):
        raise RecordingError(
            f"{p}: this is one of our recordings (agentloom run --record), not a mock "
            f"responses file; replay it with `agentloom run WORKFLOW --replay {p}` or "
            f"`agentloom replay {p} WORKFLOW`")
    if isinstance(data.get("responses"), dict):
        data = data["responses"]
    out = MockResponses(path=p)
    count = 0
    for key, value in data.items():
        if key.startswith("_") or key in ("version", "format"):
            continue
        count += len(value) if isinstance(value, list) else 1
        if count > MAX_REPLIES:
            raise RecordingError(f"{p}: more than {MAX_REPLIES} replies; a mock responses "
                                 f"file holds at most {MAX_REPLIES}")
        parsed = _replies(value, f"{p}: entry {key!r}")
        target = out.by_hash if _is_hash_key(key) else out.by_step
        target[key.removeprefix("sha256:")] = parsed
    return out


def mock_prompt_hash(request: Any) -> str:
    """Our hash of a ModelRequest for hash-keyed mock files: messages, model, temperature,
    max_tokens and extra, as canonical JSON. Files the public project wrote are keyed by
    `public_prompt_hash`, tried first (`request_hashes`)."""

    value = {"messages": [message_to_dict(m) for m in request.messages],
             "model": request.model, "temperature": request.temperature,
             "max_tokens": request.max_tokens, "extra": request.extra}
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


PUBLIC_DEFAULT_MODEL = "gpt-4o-mini"
"""The public AgentLoom's `config.model` default, part of its hash when a file names none."""


def _public_messages(request: Any) -> list[dict[str, Any]] | None:
    """The request's messages as the public AgentLoom's `llm_call` builds them (role and
    plain text content), or None when they hold anything else (media, tool turns), which
    its hash of a text-only step never covers."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        texts = [getattr(p, "text", None) for p in message.parts]
        if message.role not in ("system", "user", "assistant") or any(
                not isinstance(t, str) for t in texts):
            return None
        out.append({"role": message.role, "content": "".join(t for t in texts if t)})
    return out


def public_prompt_hash(messages: list[dict[str, Any]], model: str | None,
                       temperature: float | None, max_tokens: int | None,
                       extra: dict[str, Any] | None = None) -> str:
    """The key the public AgentLoom's `--record` and mock provider use for a call: SHA-256
    of `json.dumps({"messages", "model", "temperature", "max_tokens", "extra"},
    sort_keys=True)` with json's default separators and ASCII escaping (a fact of its file
    format, reproduced so its recordings replay here)."""
    payload = {"messages": messages, "model": model, "temperature": temperature,
               "max_tokens": max_tokens, "extra": extra or {}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def request_hashes(request: Any) -> list[str]:
    """Every key a hash-keyed mock file may hold for `request`: the public AgentLoom's
    (0.4.0 hashes the messages alone; later versions the payload above, with the
    request's model, then with its default model), then ours."""
    keys: list[str] = []
    messages = _public_messages(request)
    if messages is not None:
        keys.append(hashlib.sha256(
            json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest())
        models = [request.model] if request.model and request.model != "mock" else []
        models.append(PUBLIC_DEFAULT_MODEL)
        for model in models:
            keys.append(public_prompt_hash(messages, model, request.temperature,
                                           request.max_tokens))
    keys.append(mock_prompt_hash(request))
    return keys


class MockResponsesModel:
    """A `ModelClient` that serves a `MockResponses` file strictly.

    The reply for a call is `by_step[step_id][turn - 1]` (turns count from 1; without a
    turn, the step's replies go in order), else `by_hash[mock_prompt_hash(request)]`.
    Anything else raises `ReplayMismatch`. `latency_model` is constant, normal (seeded)
    or replay (each reply's own latency_ms).
    """

    provider = "mock"

    def __init__(self, responses: MockResponses, *, latency_model: str = "constant",
                 latency_ms: float = 0.0, clock: Any = None, seed: int = 0) -> None:
        import random


        if latency_model not in ("constant", "normal", "replay"):
            raise ConfigError(f"latency_model must be constant, normal or replay, "
                              f"got {latency_model!r}")
        self.responses = responses
        self.latency_model = latency_model
        self.latency_ms = latency_ms
        self._clock = clock or SYSTEM_CLOCK
        self._rng = random.Random(seed)
        self._next: dict[str, int] = {}
        self.requests: list[Any] = []

    def _pick(self, request: Any) -> MockReply:
        ctx = current_call_context.get() or CallContext()
        src = self.responses.path
        if ctx.step_id is not None and ctx.step_id in self.responses.by_step:
            replies = self.responses.by_step[ctx.step_id]
            index = ctx.turn - 1 if ctx.turn is not None else self._next.get(ctx.step_id, 0)
            self._next[ctx.step_id] = index + 1
            if 0 <= index < len(replies):
                return replies[index]
            raise ReplayMismatch(
                f"mock responses {src}: step {ctx.step_id!r} has {len(replies)} recorded "
                f"repl{'y' if len(replies) == 1 else 'ies'}, but call #{index + 1} was made"
            )
        keys = request_hashes(request)
        for h in keys:
            if h in self.responses.by_hash:
                replies = self.responses.by_hash[h]
                index = self._next.get(h, 0)
                self._next[h] = index + 1
                return replies[min(index, len(replies) - 1)]
        steps = ", ".join(sorted(self.responses.by_step)) or "none"
        hashes = len(self.responses.by_hash)
        raise ReplayMismatch(
            f"mock responses {src}: no reply for {describe_call(ctx.step_id, ctx.turn)} "
            f"(prompt hash {keys[0][:12]}…); steps in the file: {steps}"
            + (f"; {hashes} prompt-hash keys, none for this prompt" if hashes else "")
        )

    def _delay(self, reply: MockReply) -> float:
        if self.latency_model == "replay" and reply.latency_ms is not None:
            return reply.latency_ms / 1000
        if self.latency_model == "normal" and self.latency_ms > 0:
            return max(0.0, self._rng.gauss(self.latency_ms, self.latency_ms / 10)) / 1000
        return self.latency_ms / 1000

    async def complete(self, request: Any, *, on_event: Any = None,
                       on_attempt: Any = None) -> Any:
        self.requests.append(request)
        reply = self._pick(request)
        delay = self._delay(reply)
        if delay > 0:
            await self._clock.sleep(delay)
        response = reply.response
        if on_attempt is not None:
            on_attempt(AttemptRecord(provider="mock", model=request.model, attempt=1, ok=True,
                                     duration_seconds=delay))
        if request.stream and on_event is not None and response.text:
            on_event(TextDelta(text=response.text))
            on_event(UsageEvent(usage=response.usage))
            on_event(FinishEvent(finish_reason=response.finish_reason, model=response.model))
        return response
