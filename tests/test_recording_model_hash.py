"""`model_request_hash` writes its canonical JSON directly: its digests must equal those of
the generic path (the whole request as plain values through the canonical encoder), since
a durable run's stored replies are found by them and old stores must still match."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from typing import Any

import pytest

from agentloom.messages import (
    AudioPart,
    DocumentPart,
    ImagePart,
    Message,
    ModelRequest,
    NamedToolChoice,
    ReasoningConfig,
    ReasoningPart,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    VendorPart,
    message_to_dict,
)
from agentloom.recording import model_request_hash

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_DATACLASS_FIELDS: dict[type, tuple[str, ...]] = {}
_AS_IS = frozenset({str, int, float, bool, type(None)})


def generic_hash(request: Any) -> str:
    """The hash as it was computed before the direct writer, kept verbatim as the
    reference: the whole request as plain values, then one canonical encoding."""

    def names_of(value: Any) -> tuple[str, ...] | None:
        t = type(value)
        names = _DATACLASS_FIELDS.get(t)
        if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = _DATACLASS_FIELDS[t] = tuple(f.name for f in dataclasses.fields(value))
        return names

    def plain(value: Any) -> Any:
        t = type(value)
        if t in _AS_IS:
            return value
        if t is tuple or t is list:  # the exact types first: most of a request
            return [v if type(v) in _AS_IS else plain(v) for v in value]
        if t is dict:
            return {str(k): v if type(v) in _AS_IS else plain(v) for k, v in value.items()}
        names = names_of(value)
        if names is not None:
            return {name: plain(getattr(value, name)) for name in names}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        return value

    kept = [n for n in names_of(request) or () if n not in ("messages", "headers", "stream")]
    value = {"messages": [message_to_dict(m) for m in request.messages],
             **{name: plain(getattr(request, name)) for name in kept}}  # all JSON types
    digest = hashlib.sha256(_CANONICAL.encode(value).encode()).hexdigest()
    return f"sha256:{digest}"


TEXTS = ["", "hi", "naïve café", "日本語のテキスト", "emoji 🧵🪡", 'quote " and \\ back',
         "new\nline\ttab\r", "ctl \x00\x01\x1f\x7f", "sep \u2028\u2029", "</script>", "a" * 300]
FLOATS = [0.0, -0.0, 0.1, 0.7, 1.0, 1e-7, 1e20, 123456789.125, 2.5e-308, float("nan"),
          float("inf"), float("-inf")]


def _schema(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return rng.choice([*FLOATS[:9], 0, 1, -3, 10**30, True, False, None])
    if kind == 2:
        return {"type": "string", "enum": [rng.choice(TEXTS)]}
    if kind == 3:
        return [_schema(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 4:
        return tuple(_schema(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {rng.choice(["type", "properties", "ß", "z", "a", "ключ", "items", "0"]):
            _schema(rng, depth + 1) for _ in range(rng.randrange(5))}


def _part(rng: random.Random) -> Any:
    kind = rng.randrange(9)
    text = rng.choice(TEXTS)
    if kind <= 2:
        return TextPart(text=text)
    if kind == 3:
        return ImagePart(data=bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
    if kind == 4:
        return DocumentPart(url="https://example.test/a.pdf") if rng.random() < 0.5 \
            else DocumentPart(data=b"%PDF-1.7 \xff\xfe")
    if kind == 5:
        return AudioPart(data=b"RIFF\x00\x01")
    if kind == 6:
        return ToolCallPart(id="c1", name="search", arguments=json.dumps({"q": text}))
    if kind == 7:
        return ToolResultPart(call_id="c1", name="search", content=text,
                              is_error=rng.random() < 0.3)
    if rng.random() < 0.5:
        return ReasoningPart(text=text, signature=rng.choice([None, "sig=="]),
                             redacted=rng.choice([None, "opaque"]))
    return VendorPart(provider="openai", data={"type": "web_search_call", "id": "ws_1",
                                               "nested": _schema(rng)})


def _request(rng: random.Random) -> ModelRequest:
    messages = tuple(
        Message(role=rng.choice(["system", "user", "assistant", "tool"]),
                parts=tuple(_part(rng) for _ in range(rng.randrange(4))),
                name=rng.choice([None, None, "ann", "бот"]))
        for _ in range(rng.randrange(1, 5)))
    tools = tuple(ToolSpec(name=f"t{i}", description=rng.choice(TEXTS),
                           parameters={"type": "object", "properties": {
                               "q": _schema(rng), "n": {"type": "integer", "minimum": 0}},
                               "required": ["q"]})
                  for i in range(rng.choice([0, 0, 1, 3])))
    return ModelRequest(
        model=rng.choice(["m", "gpt-4o-mini", "claude-sonnet-4", "modèle"]),
        messages=messages,
        temperature=rng.choice([None, *FLOATS]),
        max_tokens=rng.choice([None, 1, 1024, 10**12]),
        tools=tools,
        tool_choice=rng.choice(["auto", "none", "required", NamedToolChoice(name="t0")]),
        reasoning=rng.choice([None, ReasoningConfig(enabled=True, budget_tokens=2048),
                              ReasoningConfig(level="high", capture=False)]),
        response_format=rng.choice([None, ResponseFormat(),
                                    ResponseFormat(kind="json_schema", schema=_schema(rng),
                                                   name="out", description="ü")]),
        stream=rng.random() < 0.5,
        vendor_tools=rng.choice([(), ({"type": "web_search"},), ({"x": _schema(rng)},)]),
        extra=rng.choice([{}, {"seed": 7}, {"top_p": 0.9, "stop": ["\n"], 3: "int key"},
                          {"nested": _schema(rng)}]),
        headers=rng.choice([{}, {"authorization": "Bearer sk-1"}]),
        prefill=rng.choice([None, "{", "«"]),
        cache=rng.choice([None, "auto"]),
    )


def test_digests_equal_the_generic_path_over_varied_requests() -> None:
    rng = random.Random(13)
    for _ in range(600):
        request = _request(rng)
        assert model_request_hash(request) == generic_hash(request), request


def test_a_known_request_keeps_its_digest() -> None:
    """Pinned: the digest the generic path gave for this request before the rewrite."""
    request = ModelRequest(model="m", messages=(Message.system("be brief"),
                                                Message.user("hi ü", ImagePart(data=b"\x89PNG"))),
                           temperature=0.2, tools=(ToolSpec(name="t"),))
    assert model_request_hash(request) == (
        "sha256:2c8a92301cbe2be565e209ab1710c8cf6cca29ccf862a5fb5c08f50efa963147")
    plain = ModelRequest(model="m", messages=(Message.user("p1"),))
    assert model_request_hash(plain) == (
        "sha256:3847e077ace40bc89cab832c8089763f1eeaa1d40a63dd5b577b4c31019d803f")


@dataclasses.dataclass
class _OwnRequest:
    """Not a `ModelRequest`: hashed by the generic path, as before."""

    model: str
    messages: tuple[Message, ...]
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    top_k: int = 3


def test_other_request_types_take_the_generic_path() -> None:
    request = _OwnRequest(model="m", messages=(Message.user("x"),))
    assert model_request_hash(request) == generic_hash(request)


def test_what_the_hash_cannot_read_raises_as_before() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for bad in (ModelRequest(model="m", messages=(), extra=cyclic),
                ModelRequest(model="m", messages=(Message.user("\ud800"),)),
                ModelRequest(model="m", messages=(), extra={"k": object()}),
                ModelRequest(model="m", messages=(Message(role="user", parts=(
                    VendorPart(provider="p", data={1: "a", "b": 2}),)),))):
        with pytest.raises(Exception) as old:
            generic_hash(bad)
        with pytest.raises(type(old.value)):
            model_request_hash(bad)
