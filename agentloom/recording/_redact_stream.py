"""Redacting a recorded stream as a whole, so a secret split across chunks is caught.

Redacting each chunk alone misses a key cut in two by a chunk boundary, or a state secret
the model wrote over two SSE events (`"sk-ab"` then `"cdef..."`). Here the chunks are
joined and split into lines. A line holding a JSON event (`data: {...}` or NDJSON) has
its string leaves grouped by their path (`choices.0.delta.content`): each path's text is
the reply as the client assembles it, and a secret found across leaves is moved whole
into the leaf where it starts before every leaf is redacted. Reasoning text is emptied
first (`_reasoning`). Other lines are redacted as text. A rewritten line is written back
as JSON, and a chunk boundary that fell inside it moves to its end, so the chunks still
concatenate to the stored stream.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from agentloom import _jsontext
from agentloom.recording._reasoning import strip_reasoning
from agentloom.redact import Redactor

Leaf = tuple[int, Any, Any]  # (line index, container, key)


def redact_stream(chunks: list[tuple[float, bytes]], redactor: Redactor
                  ) -> list[dict[str, Any]] | None:
    """The chunks as recorded items (`{"t", "text"}`), redacted as one stream; None when
    the stream holds nothing to redact or is not UTF-8 text (the caller then keeps the
    chunks as they came, byte for byte)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    texts: list[str] = []
    try:
        for _, data in chunks:
            texts.append(decoder.decode(data))
        texts[-1:] = [texts[-1] + decoder.decode(b"", final=True)] if texts else []
    except UnicodeDecodeError:
        return None
    lines = "".join(texts).splitlines(keepends=True)
    new_lines = _redact_lines(lines, redactor)
    if all(new is old for new, old in zip(new_lines, lines, strict=True)):
        return None  # nothing to hide: the chunks stay byte for byte as they came
    # Map each chunk's end from the old lines to the new ones.
    ends: list[int] = []
    old_at = new_at = 0
    line = 0
    total = 0
    for text in texts:
        total += len(text)
        while line < len(lines) and old_at + len(lines[line]) <= total:
            old_at += len(lines[line])
            new_at += len(new_lines[line])
            line += 1
        inside = total - old_at
        if line < len(lines) and inside and new_lines[line] is not lines[line]:
            ends.append(new_at + len(new_lines[line]))  # a rewritten line stays whole
        else:
            ends.append(new_at + inside)
    joined = "".join(new_lines)
    out: list[dict[str, Any]] = []
    start = 0
    for (t, _), end in zip(chunks, ends, strict=True):
        end = max(end, start)
        if end > start or not out:
            out.append({"t": t, "text": joined[start:end]})
        else:
            out[-1]["t"] = t  # folded into the chunk before: it arrived now
        start = end
    if start < len(joined):
        out[-1]["text"] += joined[start:]
    return out


def _redact_lines(lines: list[str], redactor: Redactor) -> list[str]:
    events: dict[int, tuple[str, Any, str]] = {}
    stripped: set[int] = set()
    paths: dict[str, list[Leaf]] = {}
    out = list(lines)
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        prefix = "data: " if body.startswith("data: ") else "data:" if body.startswith(
            "data:") else ""
        payload = body[len(prefix):]
        if payload[:1] in ("{", "["):
            try:
                events[i] = (prefix, _jsontext.loads(payload), line[len(body):])
            except ValueError:
                pass
            else:
                if strip_reasoning(events[i][1]):  # never recorded (spec 000)
                    stripped.add(i)
                _leaves(events[i][1], "", i, paths)
                continue
        redacted = redactor.redact_text(line)
        if redacted != line:
            out[i] = redacted
    dirty: set[int] = stripped
    for leaves in paths.values():
        dirty |= _redact_leaves(leaves, redactor)
    for i in sorted(dirty):
        prefix, obj, ending = events[i]
        out[i] = prefix + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + ending
    return out


def _leaves(value: Any, path: str, line: int, paths: dict[str, list[Leaf]]) -> None:
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        sub = f"{path}.{key}"
        if isinstance(item, str):
            paths.setdefault(sub, []).append((line, value, key))
        else:
            _leaves(item, sub, line, paths)


def _redact_leaves(leaves: list[Leaf], redactor: Redactor) -> set[int]:
    """Redact one path's leaves as the one text they make; the lines that changed."""
    texts = [c[k] for _, c, k in leaves]
    whole = "".join(texts)
    if redactor.redact_text(whole) == whole:
        return set()
    cuts: list[int] = []  # where each leaf after the first starts in `whole`
    at = 0
    for t in texts[:-1]:
        at += len(t)
        cuts.append(at)
    for s, e in redactor.match_spans(whole):
        # A cut inside a secret moves past it: the secret lands whole in its first leaf.
        cuts = [e if s < c < e else c for c in cuts]
    bounds = [0, *cuts, len(whole)]
    changed: set[int] = set()
    for n, (line, container, key) in enumerate(leaves):
        redacted = redactor.redact_text(whole[bounds[n]:max(bounds[n], bounds[n + 1])])
        if redacted != container[key]:
            container[key] = redacted
            changed.add(line)
    return changed
