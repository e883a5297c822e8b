"""EventTraceObserver: ordered JSONL, metadata only unless content capture is asked for
with a redactor (or an explicit opt-out)."""

from __future__ import annotations

import json
import re

import pytest

from agentloom import Agent, EventTraceObserver
from agentloom.errors import AgentLoopError
from agentloom.testing.scripted import ScriptedModel, tool_call


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def run(observer: EventTraceObserver, replies: list[object]) -> None:
    with Agent(ScriptedModel(replies), tools=[shout], observer=observer) as agent:  # type: ignore[arg-type]
        agent.run("secret prompt sk-123")


def test_metadata_only_by_default() -> None:
    lines: list[str] = []
    run(EventTraceObserver(lines.append),
        [[tool_call("shout", {"text": "sk-123 args"})], "answer sk-123"])
    assert all(line.endswith("\n") for line in lines)
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["event"] for e in events] == [
        "conversation_start", "request", "attempt", "response", "tool_start", "tool_end",
        "request", "attempt", "response", "conversation_end"]
    cid = events[0]["conversation_id"]
    assert cid and all(e["conversation_id"] == cid for e in events)
    assert events[4]["tool"] == "shout" and events[3]["tool_calls"] == ["shout"]
    assert events[-1]["summary"]["status"] == "completed"
    assert "sk-123" not in "".join(lines)


def test_capture_content_needs_a_redactor_or_opt_out() -> None:
    with pytest.raises(ValueError, match="redact"):
        EventTraceObserver(print, capture_content=True)
    EventTraceObserver(print, capture_content=True, allow_unredacted=True)


def test_captured_content_is_redacted_and_clipped() -> None:
    lines: list[str] = []
    obs = EventTraceObserver(lines.append, capture_content=True,
                             redact=lambda s: re.sub("(?i)sk-123", "[REDACTED]", s), clip=40)
    run(obs, [[tool_call("shout", {"text": "sk-123 args"})], "answer sk-123 " + "x" * 100])
    text = "".join(lines)
    assert "sk-123" not in text.lower() and "[REDACTED]" in text
    events = [json.loads(line) for line in lines]
    tool_end = next(e for e in events if e["event"] == "tool_end")
    assert "[REDACTED] ARGS" in tool_end["result"]
    last = [e for e in events if e["event"] == "response"][-1]
    assert last["content"].endswith("more chars]") and len(last["content"]) < 80


def test_failure_events_carry_no_exception_text() -> None:
    lines: list[str] = []
    with pytest.raises(AgentLoopError):
        run(EventTraceObserver(lines.append), [RuntimeError("password=hunter2")])
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events][-2:] == ["model_error", "conversation_end"]
    assert events[-2]["error_type"] == "RuntimeError"
    assert events[-1]["summary"]["status"] == "error"
    assert "hunter2" not in "".join(lines)
