from __future__ import annotations

from agentloom.loop import LoopOptions, ToolContext, run_loop
from agentloom.messages import Message, ModelRequest, ToolCallPart, ToolResultPart, ToolSpec
from agentloom.testing.scripted import ScriptedModel, tool_call


class EchoTools:
    specs = (ToolSpec(name="echo"),)

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def call(self, call: ToolCallPart, ctx: ToolContext) -> ToolResultPart:
        self.calls.append(call.arguments)
        return ToolResultPart(call_id=call.id, name=call.name, content="echoed " + call.arguments)


async def test_answer_without_tools() -> None:
    model = ScriptedModel(["hello"])
    req = ModelRequest(model="m", messages=(Message.user("hi"),))
    result = await run_loop(model, req)
    assert result.text == "hello"
    assert result.iterations == 1
    assert result.usage.input_tokens == 10


async def test_tool_round_trip_and_limit() -> None:
    tools = EchoTools()
    model = ScriptedModel([[tool_call("echo", {"x": 1})], "done"])
    req = ModelRequest(model="m", messages=(Message.user("hi"),))
    result = await run_loop(model, req, tools=tools)
    assert result.text == "done" and result.iterations == 2
    assert tools.calls == ['{"x": 1}']
    assert [m.role for m in result.new_messages] == ["assistant", "tool", "assistant"]

    tools = EchoTools()
    model = ScriptedModel([[tool_call("echo")]])
    result = await run_loop(model, req, tools=tools, options=LoopOptions(max_iterations=1))
    assert result.finish_reason == "max_tool_iterations_no_answer"
    assert tools.calls == []
