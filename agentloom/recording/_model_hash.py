"""The hash of a provider-neutral `ModelRequest`, keying a durable run's stored replies.

Its digest is the SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8) of the
request as plain values: every field but `headers` (they may carry keys) and `stream`
(same reply either way), the messages as `message_to_dict` gives them. A durable run
hashes every request, so the JSON is written here directly, member by member, in the
order sorting would give: a field holding what almost every request holds (a string,
None, an empty tuple, a message of text parts) is written as its text; any other value
goes through the generic conversion and the canonical encoder, whose output for one
member is exactly that member's text in the whole. The digests are byte-identical to
encoding the whole value at once (tests/test_recording_model_hash.py checks them against
the generic path over varied requests), since stored replies are found by them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from json.encoder import encode_basestring
from typing import Any

from agentloom.messages import Message, ModelRequest, TextPart, message_to_dict, part_to_dict

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

_DATACLASS_FIELDS: dict[type, tuple[str, ...]] = {}
"""Dataclass type -> its field names (`dataclasses.fields` walks the class each call)."""
_AS_IS = frozenset({str, int, float, bool, type(None)})
_LEFT_OUT = ("messages", "headers", "stream")

_INF = float("inf")


def _names_of(value: Any) -> tuple[str, ...] | None:
    t = type(value)
    names = _DATACLASS_FIELDS.get(t)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _DATACLASS_FIELDS[t] = tuple(f.name for f in dataclasses.fields(value))
    return names


def plain(value: Any) -> Any:
    """`value` as JSON types: tuples as lists, dataclasses as dicts, keys as strings."""
    t = type(value)
    if t in _AS_IS:
        return value
    if t is tuple or t is list:  # the exact types first: most of a request
        return [v if type(v) in _AS_IS else plain(v) for v in value]
    if t is dict:
        return {str(k): v if type(v) in _AS_IS else plain(v) for k, v in value.items()}
    names = _names_of(value)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def request_value(request: Any) -> dict[str, Any]:
    """The request as the plain value whose canonical JSON is hashed."""
    kept = [n for n in _names_of(request) or () if n not in _LEFT_OUT]
    return {"messages": [message_to_dict(m) for m in request.messages],
            **{name: plain(getattr(request, name)) for name in kept}}


def _member(value: Any) -> str:
    """The canonical JSON text of one field's value."""
    t = type(value)
    if value is None:
        return "null"
    if t is str:
        return encode_basestring(value)
    if t is int:
        return int.__repr__(value)
    if t is float and value == value and value != _INF and value != -_INF:
        return float.__repr__(value)
    if (t is tuple or t is list or t is dict) and not value:
        return "{}" if t is dict else "[]"
    return _CANONICAL.encode(plain(value))


def _message(m: Any) -> str:
    if type(m) is not Message or type(m.role) is not str:
        return _CANONICAL.encode(message_to_dict(m))
    parts = []
    for p in m.parts:
        if type(p) is TextPart and type(p.text) is str and type(p.kind) is str:
            parts.append(f'{{"kind":{encode_basestring(p.kind)},"text":'
                         f'{encode_basestring(p.text)}}}')
        else:
            parts.append(_CANONICAL.encode(part_to_dict(p)))
    name = "" if m.name is None else f'"name":{_CANONICAL.encode(m.name)},'
    return f'{{{name}"parts":[{",".join(parts)}],"role":{encode_basestring(m.role)}}}'


_ORDER = ("cache", "extra", "max_tokens", "messages", "model", "prefill", "reasoning",
          "response_format", "temperature", "tool_choice", "tools", "vendor_tools")
"""`ModelRequest`'s hashed fields, sorted as the canonical JSON sorts them."""


def _text(request: Any) -> str:
    if type(request) is not ModelRequest or not _SORTED:
        return _CANONICAL.encode(request_value(request))
    r = request
    # Most fields are None or empty: written in line, without a call.
    cache, extra, max_tokens, prefill = r.cache, r.extra, r.max_tokens, r.prefill
    reasoning, response_format, temperature = r.reasoning, r.response_format, r.temperature
    tool_choice, tools, model = r.tool_choice, r.tools, r.model
    vendor = r.vendor_tools
    choice = encode_basestring(tool_choice) if type(tool_choice) is str \
        else _member(tool_choice)
    messages = ",".join([_message(m) for m in r.messages])
    return (f'{{"cache":{"null" if cache is None else _member(cache)},'
            f'"extra":{"{}" if type(extra) is dict and not extra else _member(extra)},'
            f'"max_tokens":{"null" if max_tokens is None else _member(max_tokens)},'
            f'"messages":[{messages}],'
            f'"model":{encode_basestring(model) if type(model) is str else _member(model)},'
            f'"prefill":{"null" if prefill is None else _member(prefill)},'
            f'"reasoning":{"null" if reasoning is None else _member(reasoning)},'
            f'"response_format":'
            f'{"null" if response_format is None else _member(response_format)},'
            f'"temperature":{"null" if temperature is None else _member(temperature)},'
            f'"tool_choice":{choice},'
            f'"tools":{"[]" if type(tools) is tuple and not tools else _member(tools)},'
            f'"vendor_tools":'
            f'{"[]" if type(vendor) is tuple and not vendor else _member(vendor)}}}')


def model_request_hash(request: Any) -> str:
    """A canonical hash of a provider-neutral `ModelRequest`, for the run store's model
    exchanges: the same request on resume finds its stored reply. Headers (they may carry
    keys) and `stream` (same reply either way) are left out."""
    return "sha256:" + hashlib.sha256(_text(request).encode()).hexdigest()


def _sorted() -> bool:
    names = {f.name for f in dataclasses.fields(ModelRequest)} - set(_LEFT_OUT)
    return tuple(sorted(names | {"messages"})) == _ORDER


_SORTED = _sorted()
"""Whether `_text` writes every hashed field (else each request takes the generic path)."""
