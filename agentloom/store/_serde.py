"""Turning checkpoint payloads into JSON text and back.

The store keeps JSON (SQLite TEXT, PostgreSQL JSONB), so a human can read a stuck run with
`sqlite3` or `psql`. Values JSON lacks are written as small tagged objects
(`{"__al__": "decimal", "v": "0.12"}`) and revived on load: `Decimal`, `bytes`,
`datetime`, and our message types (via `message_to_dict`). Pydantic models and other
dataclasses are stored as plain dictionaries, as the spec asks: a resumed run reads a
dict. The serializer is a small Protocol so a backend can take an encrypting one.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import json.encoder
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from json.encoder import encode_basestring_ascii
from operator import attrgetter
from typing import Any, Protocol

from agentloom.messages import (
    Message,
    ModelResponse,
    TextPart,
    Usage,
    message_from_dict,
    message_to_dict,
    part_from_dict,
    part_to_dict,
)
from agentloom.store._base import StoreError

_TAG = "__al__"
_PART_KINDS = frozenset(
    {"text", "image", "document", "audio", "tool_call", "tool_result", "reasoning"}
)


class Serializer(Protocol):
    def dumps(self, obj: Any) -> str:
        """JSON text of `obj`. Raises `StoreError` for a value it cannot write."""
        ...

    def loads(self, data: str) -> Any: ...


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(obj: Any) -> tuple[str, ...]:
    # dataclasses.fields() walks the class each call; checkpoints ask for the same few
    # types thousands of times.
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    return names


def _usage_to_dict(u: Usage) -> dict[str, Any]:
    out = {name: getattr(u, name) for name in _field_names(u)}
    return {_TAG: "usage", "v": _encode(out)}


_PLAIN = frozenset({str, int, bool, float, type(None)})


class EncodeOnce(dict[str, Any]):
    """A dict its owner will not change again, such as a finished step's result: every
    checkpoint of a run writes it, so it is encoded once and the encoding reused. It is
    a plain dict to everything else (and comes back as one from a store)."""

    __slots__ = ("encoded",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.encoded: dict[str, Any] | None = None


def _encode(obj: Any) -> Any:
    # A checkpoint holds the whole run state, so this runs on every value of it at every
    # step: the exact JSON types take a short path; everything else (subclasses
    # included) goes through `_encode_other` as before.
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is EncodeOnce:
        if obj.encoded is None:
            obj.encoded = _encode(dict(obj))
        return obj.encoded
    if t is dict:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if type(key) is not str and not isinstance(key, str):
                raise StoreError(f"cannot store a dict key of type {type(key).__name__}: {key!r}")
            # Most values are plain: no call for them (a step result has ~20).
            out[key] = value if type(value) in _PLAIN else _encode(value)
        return out
    if t is list or t is tuple:
        return [_encode(v) for v in obj]
    if t is Usage:  # in every step result and every reply
        return _usage_to_dict(obj)
    if t is ModelResponse:  # every model exchange
        return _response_to_dict(obj)
    return _encode_other(obj)


def _response_to_dict(obj: ModelResponse) -> dict[str, Any]:
    return {
        _TAG: "model_response",
        "v": {
            "parts": [part_to_dict(p) for p in obj.parts],
            "usage": _usage_to_dict(obj.usage),
            "finish_reason": obj.finish_reason,
            "model": obj.model,
            "provider": obj.provider,
            "response_id": obj.response_id,
            "time_to_first_token": obj.time_to_first_token,
        },
    }


def _encode_other(obj: Any) -> Any:
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise StoreError(f"cannot store a dict key of type {type(key).__name__}: {key!r}")
            out[key] = _encode(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [_encode(v) for v in obj]
    if isinstance(obj, Decimal):
        return {_TAG: "decimal", "v": str(obj)}
    if isinstance(obj, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, datetime):
        return {_TAG: "datetime", "v": obj.isoformat()}
    if isinstance(obj, Message):
        return {_TAG: "message", "v": message_to_dict(obj)}
    if isinstance(obj, Usage):
        return _usage_to_dict(obj)
    if isinstance(obj, ModelResponse):
        return _response_to_dict(obj)
    kind = getattr(obj, "kind", None)
    if dataclasses.is_dataclass(obj) and isinstance(kind, str) and kind in _PART_KINDS:
        return {_TAG: "part", "v": part_to_dict(obj)}  # type: ignore[arg-type]
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump) and hasattr(type(obj), "model_fields"):
        return _encode(model_dump(mode="python"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _encode({name: getattr(obj, name) for name in _field_names(obj)})
    if isinstance(obj, (set, frozenset)):
        return [_encode(v) for v in sorted(obj, key=repr)]
    raise StoreError(f"cannot store a value of type {type(obj).__name__} in a checkpoint")


def _decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get(_TAG)
    if tag is None or len(obj) != 2:
        return {k: _decode(v) for k, v in obj.items()}
    value = obj["v"]
    if tag == "decimal":
        return Decimal(value)
    if tag == "bytes":
        return base64.b64decode(value)
    if tag == "datetime":
        return datetime.fromisoformat(value)
    if tag == "message":
        return message_from_dict(value)
    if tag == "part":
        return part_from_dict(value)
    if tag == "usage":
        return Usage(**_decode(value))
    if tag == "model_response":
        return ModelResponse(
            parts=tuple(part_from_dict(p) for p in value["parts"]),
            usage=_decode(value["usage"]),
            finish_reason=value["finish_reason"],
            model=value["model"],
            provider=value["provider"],
            response_id=value.get("response_id"),
            time_to_first_token=value.get("time_to_first_token"),
        )
    return {k: _decode(v) for k, v in obj.items()}


_JSON = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
"""One encoder for every write: `json.dumps` with these options builds a new one per call."""

_MAKE_C_ENCODER: Callable[..., Any] | None = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER = None if _MAKE_C_ENCODER is None else _MAKE_C_ENCODER(
    None, _JSON.default, encode_basestring_ascii, None, ":", ",", False, False, False)
"""`_JSON`'s C encoder, made once: `encode` makes one per call. Without the circular check
(`markers=None`): it encodes what `_encode` returns, whose containers are new (a cycle
fails that walk first); a cycle inside a message part, which the walk leaves as it is,
ends in a RecursionError, refused as any value JSON can't hold."""


def _to_json(value: Any) -> str:
    if _C_ENCODER is None:  # an interpreter without the C accelerator
        return _JSON.encode(value)
    return "".join(_C_ENCODER(value, 0))


def _generic(obj: Any) -> str:
    return _to_json(_encode(obj))


_KEYS: dict[str, str] = {}
"""Dict key -> its JSON text: the same few keys (a step result's fields, a state's
names) are written at every step."""


def _key(k: str) -> str:
    if len(_KEYS) > 4096:  # keys are data: a run with many of them must not grow this
        _KEYS.clear()
    text = _KEYS[k] = encode_basestring_ascii(k)
    return text


def _write(obj: Any) -> str:
    """`_to_json(_encode(obj))`, written directly for the exact JSON types and the values
    every step stores (a step result, its usage, a model reply); anything else goes
    through `_encode` and the C encoder, whose text for one value is exactly that value's
    text in the whole (no indentation), so the bytes are the same either way."""
    t = type(obj)
    if t is str:
        return encode_basestring_ascii(obj)
    if obj is None:
        return "null"
    if t is dict:
        items = []
        for k, v in obj.items():
            if type(k) is not str:
                return _generic(obj)  # refused, or a str subclass written as `_encode` does
            tv = type(v)
            text = _KEYS[k] if k in _KEYS else _key(k)
            if tv is str:
                items.append(f"{text}:{encode_basestring_ascii(v)}")
            elif v is None:
                items.append(f"{text}:null")
            elif tv is int:  # an exact int's repr is the C encoder's text
                items.append(f"{text}:{v!r}")
            else:
                items.append(f"{text}:{_write(v)}")
        return "{" + ",".join(items) + "}"
    if t is int:
        return f"{obj!r}"
    if t is bool:
        return "true" if obj else "false"
    if t is float and obj - obj == 0.0:  # finite (NaN and infinities: refused below)
        return f"{obj!r}"
    if t is list or t is tuple:
        return "[" + ",".join([_write(v) for v in obj]) + "]"
    if t is Usage:
        return _usage_json(obj)
    if t is ModelResponse:
        return _response_json(obj)
    return _generic(obj)


_USAGE_NAMES = tuple(f.name for f in dataclasses.fields(Usage))
_USAGE_KEYS = tuple(encode_basestring_ascii(n) for n in _USAGE_NAMES)
_USAGE_VALUES = attrgetter(*_USAGE_NAMES)


_usage_memo: tuple[Any, str] = (None, "")
"""The last `Usage` written and its text. A step's write holds its usage, which is
often its reply's (written just before, with the reply); a `Usage` is frozen and holds
only immutable values, so the same object has the same text. One tuple, rebound whole,
so a reader never pairs one usage with another's text."""


def _usage_json(u: Usage) -> str:
    """`_usage_to_dict(u)` as JSON text."""
    global _usage_memo
    memo = _usage_memo
    if memo[0] is u:
        return memo[1]
    pairs = zip(_USAGE_KEYS, _USAGE_VALUES(u), strict=True)
    body = ",".join([f"{k}:null" if v is None else f"{k}:{v!r}" if type(v) is int
                     else f"{k}:true" if v is True else f"{k}:false" if v is False
                     else f"{k}:{_write(v)}" for k, v in pairs])
    text = f'{{"{_TAG}":"usage","v":{{{body}}}}}'
    _usage_memo = (u, text)
    return text


def _raw_json(value: Any) -> str:
    """JSON text of a value `_response_to_dict` hands the C encoder as it is."""
    t = type(value)
    if t is str:
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if t is float and value - value == 0.0:
        return float.__repr__(value)
    return _to_json(value)


def _response_json(r: ModelResponse) -> str:
    """`_response_to_dict(r)` as JSON text."""
    parts = []
    for p in r.parts:
        if type(p) is TextPart and type(p.text) is str and type(p.kind) is str:
            parts.append(f'{{"text":{encode_basestring_ascii(p.text)},'
                         f'"kind":{encode_basestring_ascii(p.kind)}}}')
        else:
            parts.append(_to_json(part_to_dict(p)))
    usage = _usage_json(r.usage) if type(r.usage) is Usage \
        else _to_json(_usage_to_dict(r.usage))
    return (f'{{"{_TAG}":"model_response","v":{{"parts":[{",".join(parts)}],'
            f'"usage":{usage},"finish_reason":{_raw_json(r.finish_reason)},'
            f'"model":{_raw_json(r.model)},"provider":{_raw_json(r.provider)},'
            f'"response_id":{_raw_json(r.response_id)},'
            f'"time_to_first_token":{_raw_json(r.time_to_first_token)}}}}}')


class JsonSerializer:
    """The default serializer: compact JSON with tagged values for non-JSON types."""

    def dumps(self, obj: Any) -> str:
        try:
            return _write(obj)
        except Exception:  # raised as the generic path raises it (and with its message)
            pass
        try:
            return _generic(obj)
        except (ValueError, RecursionError) as exc:
            raise StoreError(f"cannot store a value as JSON: {exc}") from exc

    def loads(self, data: str) -> Any:
        return _decode(json.loads(data))
