"""The corpus covers what it must (issue 15): every provider family, streams, server-side
tools, signed thinking, cache reads and writes, reasoning tokens and errors in streams;
and no fixture carries a credential."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ._oracle import ORACLES, Expected, sse_payloads
from .test_replay import CASES, FIXTURES, OK_STREAMS


def expected() -> list[tuple[dict[str, Any], Expected]]:
    return [(c, ORACLES[c["family"]](c)) for c in CASES]


def test_every_provider_is_represented() -> None:
    vendors = Counter(f"{c['family']}:{c['vendor']}" for c in CASES)
    for name in ("openai:openai", "responses:openai", "anthropic:anthropic", "gemini:gemini",
                 "compat:groq", "compat:mistral", "compat:openrouter", "compat:cerebras",
                 "compat:ollama", "compat:deepseek"):
        assert vendors[name] >= 1, name
    assert len(CASES) >= 150


def test_the_kinds_of_exchange_the_issue_names_are_there() -> None:
    pairs = expected()
    assert len(OK_STREAMS) >= 20
    server_side = [c for c, e in pairs if e.vendor_blocks]
    assert len(server_side) >= 10
    assert sum(1 for c in server_side if c["stream"]) >= 3
    assert sum(1 for _c, e in pairs if e.signatures) >= 10
    assert sum(1 for _c, e in pairs if e.tool_calls) >= 30
    assert any(e.usage[2] for _c, e in pairs)  # cache reads
    assert any(e.usage[3] for _c, e in pairs)  # cache writes
    assert sum(1 for _c, e in pairs if e.usage[4]) >= 10
    in_stream_errors = [c for c, e in pairs if c["stream"] and e.error_status is not None
                        and c["response"]["status"] == 200]
    assert len(in_stream_errors) >= 2


def test_streams_really_are_event_streams() -> None:
    for case in OK_STREAMS:
        assert sse_payloads(case["response"]["body"]), case["id"]


def test_no_fixture_holds_a_credential() -> None:
    key = re.compile(r"(sk-(proj-)?[A-Za-z0-9]{20,}|sk-ant-[A-Za-z0-9_-]{20,}|"
                     r"\bAIza[0-9A-Za-z_-]{35}\b|gsk_[A-Za-z0-9]{20,})")
    for path in FIXTURES.glob("*.jsonl"):
        text = path.read_text()
        assert '"authorization"' not in text.lower() and '"x-api-key"' not in text.lower()
        assert not key.search(text), (path.name, key.search(text))
