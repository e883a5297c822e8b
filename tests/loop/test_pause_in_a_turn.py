"""A call of a tool turn that waits for a person (a pause signal) ends the turn without
cancelling its siblings: the ones running finish, the ones not started stay so."""

from __future__ import annotations

import asyncio

import pytest

from agentloom.loop import LoopOptions, ToolContext, run_loop
from agentloom.messages import Message, ModelRequest, ToolCallPart, ToolResultPart, ToolSpec
from agentloom.testing.scripted import ScriptedModel, tool_call


class Waiting(Exception):
    """Stands for the workflow engine's PauseRun: the loop knows it by `pause = True`."""

    pause = True


class Box:
    """`ask` pauses (after the others got going); `note` records that it ran to the end."""

    specs = (ToolSpec(name="ask"), ToolSpec(name="note"))

    def __init__(self) -> None:
        self.finished: list[str] = []

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        for _ in range(3):
            await asyncio.sleep(0)
        if call.name == "ask":
            raise Waiting("waiting for an answer")
        for _ in range(5):  # still running when the sibling pauses
            await asyncio.sleep(0)
        self.finished.append(call.id)
        return ToolResultPart(call_id=call.id, name=call.name, content="noted")


def _request() -> ModelRequest:
    return ModelRequest(model="m", messages=(Message.user("go"),))


async def test_a_pause_lets_running_siblings_finish_and_ends_the_turn() -> None:
    box = Box()
    model = ScriptedModel([[tool_call("ask", id="a"), tool_call("note", id="b"),
                            tool_call("note", id="c")], "never"])
    with pytest.raises(Waiting):
        await run_loop(model, _request(), tools=box)
    assert box.finished == ["b", "c"]  # not cancelled by the pause
    assert len(model.requests) == 1  # the turn is not sent back: it waits for the answer


async def test_calls_not_started_when_a_sibling_paused_stay_unstarted() -> None:
    box = Box()
    model = ScriptedModel([[tool_call("ask", id="a"), tool_call("note", id="b")], "never"])
    with pytest.raises(Waiting):
        await run_loop(model, _request(), tools=box, options=LoopOptions(tool_concurrency=1))
    assert box.finished == []  # `b` waited for the gate and never started
