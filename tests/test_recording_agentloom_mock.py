"""The public AgentLoom's mock-response files, served strictly through a ModelClient."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentloom.errors import ConfigError, ReplayMismatch
from agentloom.messages import Message, ModelRequest, TextDelta
from agentloom.recording import RecordingError, call_context
from agentloom.recording.mock_responses import (
    MockResponsesModel,
    load_agentloom_mock_responses,
    mock_prompt_hash,
)
from agentloom.testing.clock import FakeClock

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
TOOL_CALLING = EXAMPLES / "recordings" / "tool_calling.json"


def _request(text: str = "What HTTP method does the httpbin /get endpoint accept?",
             stream: bool = False) -> ModelRequest:
    return ModelRequest(model="gpt-4o-mini", messages=(Message.user(text),), stream=stream)


@pytest.mark.skipif(not TOOL_CALLING.exists(), reason="public AgentLoom examples not present")
async def test_tool_calling_fixture_serves_each_turn_then_fails() -> None:
    responses = load_agentloom_mock_responses(TOOL_CALLING)
    assert list(responses.by_step) == ["ask"] and len(responses.by_step["ask"]) == 2
    model = MockResponsesModel(responses)
    with call_context(step_id="ask", turn=1):
        first = await model.complete(_request())
    (call,) = first.tool_calls
    assert call.name == "http_request" and call.id == "call_demo_1"
    assert json.loads(call.arguments) == {"url": "https://httpbin.org/get", "method": "GET"}
    assert first.finish_reason == "tool_calls" and first.usage.input_tokens == 35
    assert first.usage.cost_usd == Decimal("0.000018")
    with call_context(step_id="ask", turn=2):
        second = await model.complete(_request())
    assert second.text.startswith("The /get endpoint") and second.tool_calls == ()
    with call_context(step_id="ask", turn=3), pytest.raises(ReplayMismatch) as info:
        await model.complete(_request())
    assert "has 2 recorded replies" in str(info.value) and str(TOOL_CALLING) in str(info.value)
    with call_context(step_id="explain", turn=1), pytest.raises(ReplayMismatch) as info2:
        await model.complete(_request())
    assert "step 'explain'" in str(info2.value) and "steps in the file: ask" in str(info2.value)
    assert "Mock response" not in str(info2.value)


async def test_step_replies_in_order_without_turns_and_streaming(tmp_path: Path) -> None:
    path = tmp_path / "byzantine.json"
    path.write_text(json.dumps({"explain": {"content": "Two sentences.", "latency_ms": 120},
                                "critique": "It oversimplifies."}))
    clock = FakeClock()
    model = MockResponsesModel(load_agentloom_mock_responses(path), latency_model="replay",
                               clock=clock)
    events: list[object] = []
    with call_context(step_id="explain"):
        reply = await model.complete(_request(stream=True), on_event=events.append)
        with pytest.raises(ReplayMismatch):
            await model.complete(_request())
    assert reply.text == "Two sentences." and reply.usage.cost_usd is None
    assert isinstance(events[0], TextDelta) and events[0].text == "Two sentences."
    assert clock.sleeps == [0.12]
    with call_context(step_id="critique", turn=1):
        assert (await model.complete(_request())).text == "It oversimplifies."


async def test_prompt_hash_keys(tmp_path: Path) -> None:
    request = _request("hash me")
    path = tmp_path / "hashed.json"
    path.write_text(json.dumps({mock_prompt_hash(request): {"content": "by hash"}}))
    model = MockResponsesModel(load_agentloom_mock_responses(path))
    assert (await model.complete(request)).text == "by hash"
    with pytest.raises(ReplayMismatch, match="no reply for a call outside any step"):
        await model.complete(_request("something else"))


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "not a readable JSON"),
    ("[1, 2]", "expected an object"),
    ('{"ask": [{"tool_calls": [{"id": "x"}]}]}', "needs a name"),
])
def test_bad_files_name_the_file(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RecordingError) as info:
        load_agentloom_mock_responses(path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_bad_latency_model(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text("{}")
    with pytest.raises(ConfigError, match="latency_model"):
        MockResponsesModel(load_agentloom_mock_responses(path), latency_model="gaussian")
