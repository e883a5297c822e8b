"""Whether the model a provider says answered is the model that was asked for.

Providers report a model's resolved name, not the name in the request: an alias becomes
its dated snapshot (`claude-sonnet-4-0` -> `claude-sonnet-4-20250514`,
`claude-3-opus-latest` -> `claude-3-opus-20240229`), Gemini may add `models/`, OpenRouter
renames ids (`anthropic/claude-sonnet-4.6` -> `anthropic/claude-4.6-sonnet-20260217`).
None of that is a fallback. Another model sharing a prefix is (`gpt-4o-mini` for
`gpt-4o`, `claude-sonnet-4-5` for `claude-sonnet-4`). Pure, no I/O.
"""

from __future__ import annotations

import re

_DATE = re.compile(r"(?<![0-9])(\d{4}-\d{2}-\d{2}|\d{8}|\d{6})(?![0-9])")
_TOKEN = re.compile(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])")
"""Words split at punctuation and where letters meet digits (`llama3.3` = `llama-3.3`)."""


def _tokens(name: str) -> tuple[str, ...]:
    """The name's words with dates, build numbers, `latest` and an alias's trailing `0`
    taken out, in sorted order (OpenRouter moves the version in front of the family).
    A gateway's vendor prefix (`anthropic/`) goes too: the rest names the model."""
    name = name.lower().removeprefix("models/").rsplit("/", 1)[-1]
    name = _DATE.sub(" ", name)
    words = [w for w in _TOKEN.split(name) if w and w != "latest"]
    words = [w for w in words if not (w.isdigit() and len(w) >= 3)]
    if len(words) > 1 and words[-1] == "0":
        words.pop()
    return tuple(sorted(words))


def same_model(answered: str, asked: str) -> bool:
    """True when `answered` (the reply's model) names the model `asked` for: itself, a
    dated or versioned snapshot of it, a tagged one (`llama3:latest`), or the same words
    renamed; False for another model."""
    if answered == asked:
        return True
    answered = answered.removeprefix("models/")
    asked = asked.removeprefix("models/")
    if answered.startswith(asked) and answered[len(asked):].startswith(":"):
        return True
    return _tokens(answered) == _tokens(asked)
