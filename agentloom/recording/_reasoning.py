"""Reasoning text kept out of recordings (spec 000: it "doesn't reach the state or a
recording").

`strip_reasoning(value)` empties, in place, the reasoning text of a parsed request or
response body of any protocol we speak: Anthropic `thinking` blocks and `thinking_delta`
events (their signatures stay, so a replayed tool loop sends the same signed blocks
back), Gemini parts marked `thought: true`, Ollama's `message.thinking`, the
`reasoning_content`/`reasoning` strings of OpenAI-compatible servers, Mistral's
`thinking` parts, and the summary and reasoning text of OpenAI's Responses API. Opaque
payloads (signatures, redacted or encrypted reasoning) are kept: they hold no readable
text and a later request must carry them. The canonical request hash is taken after the
same stripping, so a replay, whose reasoning is empty, matches the recording.
"""

from __future__ import annotations

from typing import Any

_TEXT_OF_TYPE = {"thinking": "thinking", "thinking_delta": "thinking",
                 "summary_text": "text", "reasoning_text": "text"}
"""Block or event type -> the field that holds its reasoning text."""
_REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
"""Fields that hold reasoning text whenever their value is a string."""
_USER_DATA = frozenset({"input", "args", "arguments", "parameters", "input_schema",
                        "schema", "properties", "response_schema", "responseSchema"})
"""Fields whose content is the user's (tool arguments, JSON schemas): a tool parameter
named `reasoning` is not the model's reasoning."""


def strip_reasoning(value: Any) -> bool:
    """Empty every reasoning text inside `value` (dicts and lists, changed in place);
    whether anything was emptied."""
    changed = False
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str):
            key = _TEXT_OF_TYPE.get(kind)
            if key is not None:
                changed |= _empty(value, key)
                if kind == "thinking" and isinstance(value.get("thinking"), list):
                    for part in value["thinking"]:  # Mistral: typed text parts
                        if isinstance(part, dict):
                            changed |= _empty(part, "text")
            elif kind.startswith("response.reasoning"):  # Responses API stream events
                changed |= _empty(value, "delta") | _empty(value, "text")
        if value.get("thought") is True:  # Gemini
            changed |= _empty(value, "text")
        for key in _REASONING_FIELDS:
            changed |= _empty(value, key)
        for key, item in value.items():
            if isinstance(item, (dict, list)) and key not in _USER_DATA:
                changed |= strip_reasoning(item)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                changed |= strip_reasoning(item)
    return changed


def _empty(container: dict[str, Any], key: str) -> bool:
    text = container.get(key)
    if isinstance(text, str) and text:
        container[key] = ""
        return True
    return False
