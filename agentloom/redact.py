"""Keeping secrets out of everything a run leaves behind: checkpoints, recordings, traces,
spans and `--json` output.

One `Redactor` per run, built from three sources: the workflow's `state_schema` (keys or
globs marked `{redact: true}`, matched against a key's name and its dotted path), the
run's secret strings (API keys, values of redacted state keys: replaced wherever they
appear, inside any text), and fixed patterns that are always on (`sk-...` keys, Bearer
tokens, Google `AIza...` keys, `key=` in URLs, and header/field names such as
`authorization`, `x-api-key`, `x-goog-api-key`). It walks dicts, lists, tuples, pydantic
models (written out as dicts) and dataclasses (rebuilt, so messages stay messages).
The live, in-memory state is never changed: every method returns a redacted copy.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

SENSITIVE_NAMES: frozenset[str] = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key",
    "api_key", "apikey", "openai-api-key", "anthropic-api-key", "cookie", "set-cookie",
    "password", "secret", "access_token", "refresh_token", "client_secret",
})
"""Header or field names whose value is always a secret (compared lowercased)."""

_PATTERN_SOURCES: tuple[tuple[str, str], ...] = (
    # Vendor keys: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), and similar.
    (r"\bsk-[A-Za-z0-9_\-]{16,}", REDACTED),
    (r"\bAIza[0-9A-Za-z_\-]{30,}", REDACTED),
    (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}", r"\1 " + REDACTED),
    # `x-api-key: ...`, `"api_key": "..."`, `api-key=...` inside free text.
    (r"(?i)(\b(?:x-goog-api-key|x-api-key|api[_-]?key|authorization|access_token)"
     r"[\"']?\s*[:=]\s*[\"']?)(?!(?i:bearer|basic)\s)([^\s\"',&}]{6,})",
     r"\1" + REDACTED),
    # Gemini passes its key in the query string.
    (r"([?&](?:key|api_key|access_token)=)[^&\s\"']+", r"\1" + REDACTED),
    # A password in a URL's user part: `https://user:pw@proxy/v1` as a base URL.
    (r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"']*:)[^\s/@\"']+(@)", r"\1" + REDACTED + r"\2"),
)
"""Each pattern's source and replacement; compiled on first use (`_pattern`): most runs
never see text holding an anchor, and the six compiles cost ~5 M instructions."""


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


MIN_SECRET_LENGTH = 6
"""The shortest secret value matched by content (see `Redactor.add_secrets`)."""

_ANCHORS: tuple[tuple[str, ...], ...] = (
    ("sk-",),
    ("aiza",),
    ("bearer", "basic"),
    ("api", "authorization", "access_token"),
    ("key=", "access_token="),
    ("://",),
)
"""Lowercase substrings, one tuple per pattern above, at least one of which must be present
for that pattern to match."""


OWN_FIELD_NAMES: frozenset[str] = frozenset({
    "tokens", "input_tokens", "output_tokens", "total_tokens", "reasoning_tokens",
    "cache_read_tokens", "cache_write_tokens", "cached_tokens", "prompt_tokens",
    "completion_tokens", "prompt_tokens_details", "completion_tokens_details",
    "cache_read_input_tokens", "cache_creation_input_tokens", "max_tokens",
    "max_output_tokens", "max_completion_tokens", "max_tokens_per_run", "budget_tokens",
    "token_budget", "token_limit", "spent_tokens", "message_tokens", "time_to_first_token",
})
"""Field names of our own results, traces and request bodies (token counts, limits). A
`state_schema` glob such as `*token*` is meant for the user's state keys, so a glob never
matches these; a key named exactly (no wildcard) still does."""

_WILDCARDS = frozenset("*?[")

SECRET_STEP_FIELDS = ("output", "text", "reasoning_content")
"""The fields of a step's result that hold its output, redacted with it."""


def _schema_globs(state_schema: Mapping[str, Any] | None) -> list[str]:
    globs: list[str] = []
    for key, spec in (state_schema or {}).items():
        if isinstance(spec, Mapping) and spec.get("redact") is True:
            globs.append(str(key))
    return globs


class Redactor:
    """Redacts by key glob, by secret value and by pattern.

        r = Redactor.from_state_schema({"api_token": {"redact": True},
                                        "creds.*": {"redact": True}},
                                       state=initial_state, secrets=[openai_key])
        r.redact_state(state)        # a copy with those values replaced
        r.redact_text(log_line)
        r.redact_headers(headers)
    """

    def __init__(self, *, key_globs: Iterable[str] = (), secrets: Iterable[str] = (),
                 patterns: bool = True) -> None:
        self.key_globs: tuple[str, ...] = ()
        self._dotted: tuple[str, ...] = ()
        self._step_globs: set[str] = set()
        self._secrets: set[str] = set()
        self._secret_re: re.Pattern[str] | None = None
        self._patterns = patterns
        self._watchers: list[Callable[[], None]] = []
        self.secret_steps: set[str] = set()
        """Steps whose output is redacted: their `output`, `text` and
        `reasoning_content` are redacted wherever a step result is written."""
        self.add_keys(key_globs)
        self.add_secrets(secrets)

    @classmethod
    def from_state_schema(cls, state_schema: Mapping[str, Any] | None, *,
                          state: Mapping[str, Any] | None = None,
                          secrets: Iterable[str] = ()) -> Redactor:
        """Globs from `state_schema`; the current values of matching keys in `state` are
        added as secrets too, so they are caught when a template copies them elsewhere."""
        redactor = cls(key_globs=_schema_globs(state_schema), secrets=secrets)
        if state is not None:
            redactor.add_secrets(redactor.secret_values(state))
        return redactor

    def add_secrets(self, values: Iterable[str]) -> None:
        """Values to replace wherever they appear. Values shorter than
        `MIN_SECRET_LENGTH` are not matched by content: replacing every "k" or "1234" in
        a run's output would corrupt it and reveal the secret by its gaps. They are still
        redacted wherever their key is named (`state_schema`, header names)."""
        new = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
        if not new - self._secrets:
            return
        self._secrets |= new
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._secret_re = re.compile("|".join(re.escape(s) for s in ordered))
        for watcher in self._watchers:
            watcher()

    def watch(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever a new secret is learned, so a holder of values
        redacted earlier (a recording) can redact them again."""
        self._watchers.append(callback)

    @property
    def secrets_version(self) -> object:
        """Changes exactly when the secrets matched by content change (for caches of
        redacted values)."""
        return self._secret_re

    def add_keys(self, globs: Iterable[str]) -> None:
        """More state keys (names or dotted paths, globs allowed) to redact by name."""
        self.key_globs = tuple(dict.fromkeys((*self.key_globs, *globs)))
        # A secret step's result paths (`steps.<id>.output`) are matched from the root
        # of a report only: they are ours, not the user's, and many.
        self._dotted = tuple(g for g in self.key_globs
                             if "." in g and g not in self._step_globs)

    def key_matches(self, path: str, key: str) -> bool:
        """Whether the key `key` at dotted `path` is secret: a glob matches the key's
        name or its path, and a dotted glob (`creds.token`, `creds.*`) also the end of a
        longer path, since state sits under `state.` in `--json` and inside step results."""
        parts = path.split(".")
        own = key in OWN_FIELD_NAMES or not OWN_FIELD_NAMES.isdisjoint(parts)
        if any((fnmatch.fnmatchcase(key, g) or fnmatch.fnmatchcase(path, g))
               and not (own and _WILDCARDS.intersection(g))
               for g in self.key_globs):
            return True
        if not self._dotted or len(parts) < 3:
            return False
        for i in range(1, len(parts) - 1):
            tail = ".".join(parts[i:])
            if any(fnmatch.fnmatchcase(tail, g) and not (own and _WILDCARDS.intersection(g))
                   for g in self._dotted):
                return True
        return False

    def path_is_secret(self, path: str) -> bool:
        """Whether a state path (a step's `output`, such as `report.summary`) is redacted:
        the key itself, or a key it sits under."""
        parts = path.split(".")
        return any(self.key_matches(".".join(parts[:n]), parts[n - 1])
                   for n in range(1, len(parts) + 1))

    def mark_secret_step(self, step_id: str) -> None:
        """A step whose output is redacted: its result's output, text and reasoning
        are redacted by name in every step result written (`steps.<id>.output`, ...)."""
        if step_id in self.secret_steps:
            return
        self.secret_steps.add(step_id)
        escaped = re.sub(r"([*?\[])", r"[\1]", step_id)
        globs = [f"steps.{escaped}.{name}" for name in SECRET_STEP_FIELDS]
        self._step_globs.update(globs)
        self.add_keys(globs)

    def secret_values(self, state: Mapping[str, Any]) -> list[str]:
        """The string leaves under keys the schema marks as secret."""
        found: list[str] = []

        def collect(value: Any) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, Mapping):
                for v in value.values():
                    collect(v)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    collect(v)

        def walk(value: Any, path: str) -> None:
            if isinstance(value, Mapping):
                for k, v in value.items():
                    sub = f"{path}.{k}" if path else str(k)
                    if self.key_matches(sub, str(k)):
                        collect(v)
                    else:
                        walk(v, sub)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    walk(v, path)

        walk(state, "")
        return found

    # --- the three faces -------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        if self._secret_re is not None:
            text = self._secret_re.sub(REDACTED, text)
        if self._patterns:
            # Each pattern has a literal anchor: a substring test on the lowercased text
            # skips the regexes that cannot match (most lines hold no key at all).
            lowered = text.lower()
            for (source, replacement), anchors in zip(_PATTERN_SOURCES, _ANCHORS,
                                                      strict=True):
                if any(a in lowered for a in anchors):
                    text = _pattern(source).sub(replacement, text)
        return text

    def match_spans(self, text: str) -> list[tuple[int, int]]:
        """Where `redact_text` would replace something in `text`, as sorted (start, end)
        spans (overlaps merged), so a caller can keep each secret in one piece."""
        spans: list[tuple[int, int]] = []
        if self._secret_re is not None:
            spans += [m.span() for m in self._secret_re.finditer(text)]
        if self._patterns:
            lowered = text.lower()
            for (source, _), anchors in zip(_PATTERN_SOURCES, _ANCHORS, strict=True):
                if any(a in lowered for a in anchors):
                    spans += [m.span() for m in _pattern(source).finditer(text)]
        merged: list[tuple[int, int]] = []
        for s, e in sorted(spans):
            if merged and s < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
            else:
                merged.append((s, e))
        return merged

    def open_prefix(self, text: str) -> int:
        """The length of the longest end of `text` that begins a secret value without
        finishing it: text that arrives in pieces (a stream printed as it comes) holds
        that much back until the next piece says whether the secret follows."""
        longest = 0
        end = len(text)
        for secret in self._secrets:
            # Only where the secret's first character stands can it begin.
            i = text.find(secret[0], max(0, end - len(secret) + 1), end - longest)
            while i != -1:
                if secret.startswith(text[i:]):
                    longest = end - i
                    break
                i = text.find(secret[0], i + 1, end - longest)
        return longest

    def redact_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {k: (REDACTED if k.lower() in SENSITIVE_NAMES else self.redact_text(v))
                for k, v in headers.items()}

    def redact_state(self, state: Any) -> Any:
        """A redacted copy of `state` (a dict, or any value). Pydantic models come back as
        dicts, as checkpoints and `--json` write them."""
        return self._walk(state, "")

    redact = redact_state

    def _walk(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = str(k)
                sub = f"{path}.{key}" if path else key
                if key.lower() in SENSITIVE_NAMES or self.key_matches(sub, key):
                    out[k] = REDACTED if v is not None else None
                else:
                    out[k] = self._walk(v, sub)
            return out
        if isinstance(value, list):
            return [self._walk(v, path) for v in value]
        if isinstance(value, tuple):
            return tuple(self._walk(v, path) for v in value)
        dump = getattr(value, "model_dump", None)
        if callable(dump) and hasattr(type(value), "model_fields"):
            return self._walk(dump(mode="python"), path)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for f in dataclasses.fields(value):
                if not f.init:
                    continue
                old = getattr(value, f.name)
                if isinstance(old, str) and old and f.name.lower() in SENSITIVE_NAMES:
                    changes[f.name] = REDACTED
                    continue
                new = self._walk(old, path)
                if new is not old and new != old:
                    changes[f.name] = new
            return dataclasses.replace(value, **changes) if changes else value
        return value
