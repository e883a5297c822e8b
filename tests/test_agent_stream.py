"""`Agent.astream` / `Agent.stream`: typed events across the whole tool loop, streamed
over real HTTP from the fake OpenAI server, ending with the same summary `run_result`
gives; leaving early cancels the HTTP stream and still yields a summary."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from openai_thread import agent_env

from agentloom import Agent, ConversationSummary, NullObserver
from agentloom.loop.stream import (
    RunFinished,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def broken(x: int) -> int:
    """Always fails."""
    raise RuntimeError("no")


class Keeper(NullObserver):
    def __init__(self) -> None:
        self.summaries: list[ConversationSummary] = []

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        self.summaries.append(summary)


def script_two_tool_turns(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        FakeReply(tool_calls=[("add", {"a": 1, "b": 2})], input_tokens=10, output_tokens=4),
        FakeReply(tool_calls=[("broken", {"x": 1})], input_tokens=20, output_tokens=4),
        FakeReply(text="the sum is 3", input_tokens=30, output_tokens=5),
    )


COMPARED = {"status", "iterations", "tool_calls", "tool_errors", "usage", "finish_reason",
            "provider", "model", "iteration_limit", "max_repeated_tool_calls",
            "error_type", "provider_retries"}


def kinds(events: list[Any]) -> list[str]:
    out: list[str] = []
    for e in events:
        if not (out and out[-1] == e.kind == "text_delta"):
            out.append(e.kind)
    return out


async def test_astream_yields_the_tool_loop_in_order_and_the_run_result_summary(
        openai_server: FakeOpenAIServer) -> None:
    script_two_tool_turns(openai_server)
    async with Agent.from_env(agent_env(openai_server), tools=[add, broken]) as agent:
        events = [e async for e in agent.astream("add 1 and 2")]
    assert kinds(events) == [
        "turn_finished", "tool_call_started", "tool_call_finished",
        "turn_finished", "tool_call_started", "tool_call_finished",
        "text_delta", "turn_finished", "run_finished"]
    assert all(r.json.get("stream") is True for r in openai_server.requests)
    turns = [e for e in events if isinstance(e, TurnFinished)]
    assert [t.stop_reason for t in turns] == ["tool_use", "tool_use", "end_turn"]
    assert [t.usage.input_tokens for t in turns] == [10, 20, 30]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.name, s.iteration) for s in started] == [("add", 1), ("broken", 2)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(f.name, f.is_error) for f in finished] == [("add", False), ("broken", True)]
    assert all(f.duration_seconds >= 0 for f in finished)
    text = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert text == "the sum is 3"
    assert len([e for e in events if isinstance(e, TextDeltaEvent)]) > 1  # streamed
    last = events[-1]
    assert isinstance(last, RunFinished) and last.text == "the sum is 3"

    script_two_tool_turns(openai_server)
    async with Agent.from_env(agent_env(openai_server), tools=[add, broken]) as agent:
        plain = await agent.arun_result("add 1 and 2")
    assert last.summary.model_dump(include=COMPARED) == plain.summary.model_dump(
        include=COMPARED)
    assert last.result.transcript.text == plain.transcript.text


def test_stream_is_the_sync_face(openai_server: FakeOpenAIServer) -> None:
    script_two_tool_turns(openai_server)
    with Agent.from_env(agent_env(openai_server), tools=[add, broken]) as agent:
        events = list(agent.stream("add 1 and 2"))
    assert isinstance(events[-1], RunFinished)
    assert events[-1].summary.status == "completed"
    assert events[-1].summary.tool_calls == {"add": 1, "broken": 1}


async def test_leaving_early_cancels_the_stream_and_still_summarizes(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.chunk_delay = 0.05
    openai_server.script(FakeReply(text=" ".join(f"w{i}" for i in range(200))))
    keeper = Keeper()
    async with Agent.from_env(agent_env(openai_server), tools=[], observer=keeper) as agent:
        events = agent.astream("talk")
        async with contextlib.aclosing(events):
            async for event in events:
                if isinstance(event, TextDeltaEvent):
                    break
        assert len(keeper.summaries) == 1
        summary = keeper.summaries[0]
        assert summary.status == "cancelled" and summary.iterations == 1
        # The agent is still usable: the cancelled stream left nothing behind.
        openai_server.chunk_delay = 0.0
        openai_server.script("done")
        assert (await agent.arun_result("again")).text == "done"


async def test_a_failed_run_raises_from_the_iterator(openai_server: FakeOpenAIServer) -> None:
    from agentloom.errors import AuthError
    from agentloom.testing._server import FakeError

    openai_server.script(FakeError(status=401, body={"error": {"message": "bad key"}}))
    async with Agent.from_env(agent_env(openai_server), tools=[]) as agent:
        with pytest.raises(AuthError) as info:
            async for _ in agent.astream("x"):
                pass
    assert info.value.summary is not None
    assert info.value.summary.status == "provider_error"
    await asyncio.sleep(0)


def test_breaking_out_of_the_sync_stream_cancels_the_run(openai_server: FakeOpenAIServer) -> None:
    openai_server.chunk_delay = 0.05
    openai_server.script(FakeReply(text=" ".join(f"w{i}" for i in range(200))))
    keeper = Keeper()
    with Agent.from_env(agent_env(openai_server), tools=[], observer=keeper) as agent:
        for event in agent.stream("talk"):
            if isinstance(event, TextDeltaEvent):
                break
        # The generator was closed when the loop dropped it: the run is over.
        assert [s.status for s in keeper.summaries] == ["cancelled"]
        openai_server.chunk_delay = 0.0
        openai_server.script("done")
        assert agent.run_result("again").text == "done"
