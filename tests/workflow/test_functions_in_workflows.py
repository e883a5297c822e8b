"""Workflow functions (spec 004): load-time checks with file:line, the model calling one
like any tool, `{args.x}` in its steps, nested model calls, failures as error results
(with the tool error prompt), and the return template."""

from __future__ import annotations

import json
from typing import Any

import pytest
from wf_helpers import Factory

from agentloom.messages import ModelRequest, ToolResultPart
from agentloom.testing.scripted import FunctionModel, tool_call
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import WorkflowProblems, arun_workflow, load_workflow

FLOW = """\
name: fn
state:
  greeting: Hello
functions:
  shout:
    description: Upper-case a word and greet it.
    args:
      word: {type: str, description: The word.}
      times: {type: int, description: How often., default: 1}
    steps:
      - id: up
        type: tool
        tool_name: upper
        tool_args: {text: "{args.word}", times: "{args.times}"}
    return: "{state.greeting}, {steps.up.output}!"
steps:
  - id: ask
    type: llm_call
    prompt: Shout cat.
    functions: [shout]
"""


@tool
def upper(text: str, times: int = 1) -> str:
    """Upper-case text, repeated."""
    return " ".join([text.upper()] * times)


def _results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]


def _caller(calls: list[Any]) -> FunctionModel:
    """Asks for `calls` on the first turn, then answers with the tool results it saw."""

    def answer(request: ModelRequest) -> Any:
        results = _results(request)
        if not results and request.tools:
            return list(calls)
        return "got: " + " | ".join(f"{r.is_error}:{r.content}" for r in results)

    return FunctionModel(answer)


async def test_model_calls_a_function_whose_steps_see_its_args(tmp_path: Any) -> None:
    wf = load_workflow(FLOW)
    model = _caller([tool_call("shout", {"word": "cat", "times": "2"})])
    result = await arun_workflow(wf, clients=Factory(model), tools=ToolRegistry([upper]))
    assert result.ok, result.error
    assert result.steps["ask"].text == "got: False:Hello, CAT CAT!"
    spec = model.requests[0].tools[0]
    assert spec.name == "shout" and spec.description.startswith("Upper-case")
    assert spec.parameters["properties"]["times"] == {
        "type": "integer", "description": "How often.", "default": 1}
    assert spec.parameters["required"] == ["word"]


async def test_function_with_nested_llm_call_and_error_prompt() -> None:
    flow = """\
name: nested
config:
  tool_error_prompt: Fix the arguments and try again.
functions:
  summarize:
    description: Summarize a text with a second model call.
    args: {text: str}
    steps:
      - id: inner
        type: llm_call
        prompt: "Summarize: {args.text}"
    return: "{steps.inner.output}"
steps:
  - id: outer
    type: llm_call
    prompt: Go.
    functions: [summarize]
"""
    wf = load_workflow(flow)

    def answer(request: ModelRequest) -> Any:
        text = request.messages[-1].text if request.messages[-1].role == "user" else ""
        if text.startswith("Summarize: "):
            return "short(" + text.removeprefix("Summarize: ") + ")"
        results = _results(request)
        if not results:
            return [tool_call("summarize", {"text": "long story"}, id="a"),
                    tool_call("summarize", {"wrong": 1}, id="b")]
        return json.dumps([[r.is_error, r.content] for r in results])

    result = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
    assert result.ok, result.error
    (ok, first), (bad, second) = json.loads(result.steps["outer"].text)
    assert (ok, first) == (False, "short(long story)")
    assert bad is True and "text: missing" in second and "unexpected argument(s) wrong" in second
    assert second.endswith("Fix the arguments and try again.")


async def test_failing_body_is_an_error_result_not_a_failed_run() -> None:
    flow = FLOW.replace("tool_name: upper", "tool_name: boom")

    @tool
    def boom(text: str, times: int = 1) -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    wf = load_workflow(flow)
    model = _caller([tool_call("shout", {"word": "x"})])
    result = await arun_workflow(wf, clients=Factory(model), tools=ToolRegistry([boom]))
    assert result.ok
    text = result.steps["ask"].text or ""
    assert text.startswith("got: True:") and "function 'shout' failed" in text
    assert "kaput" in text


async def test_function_without_steps_returns_its_typed_args() -> None:
    flow = """\
name: plain
functions:
  pack:
    description: Echo the list back.
    args: {items: list}
    return: "{args.items}"
steps:
  - {id: a, type: llm_call, prompt: Go., functions: [pack]}
"""
    model = _caller([tool_call("pack", {"items": [1, "two"]})])
    result = await arun_workflow(load_workflow(flow), clients=Factory(model))
    assert result.steps["a"].text == 'got: False:[1,"two"]'


@pytest.mark.parametrize(
    ("flow_edit", "line", "message"),
    [
        (("functions: [shout]", "functions: [shuot]"), 20, "unknown function 'shuot'; did "
         "you mean 'shout'?"),
        (('"{args.word}"', '"{args.wrod}"'), 14, "no argument 'wrod'; did you mean 'word'?"),
        (("prompt: Shout cat.", "prompt: Shout {args.word}."), 19,
         "args exist only in the steps of a function"),
        (('return: "{state.greeting}, {steps.up.output}!"', 'return: "{steps.upp.output}"'),
         15, "the function has no step 'upp'; did you mean 'up'?"),
        (("type: int, description: How often.", "type: integer32"), 9, "type"),
        (("    description: Upper-case a word and greet it.\n", ""), 5, "description"),
    ],
)
def test_load_errors_carry_file_and_line(flow_edit: tuple[str, str], line: int,
                                         message: str) -> None:
    flow = FLOW.replace(*flow_edit)
    assert flow != FLOW
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(flow, filename="fn.yaml")
    text = str(info.value)
    assert message in text, text
    assert any(e.line == line and e.file == "fn.yaml" for e in info.value.errors), [
        (e.line, e.message) for e in info.value.errors]


async def test_a_function_that_calls_itself_stops_at_the_depth_limit() -> None:
    flow = """\
name: loop
functions:
  again:
    description: Calls itself forever.
    args: {n: int}
    steps:
      - {id: deeper, type: tool, tool_name: again, tool_args: {n: "{args.n}"}}
    return: "{steps.deeper.output}"
steps:
  - {id: start, type: tool, tool_name: again, tool_args: {n: 1}, retry: {max_retries: 0}}
"""
    wf = load_workflow(flow)
    result = await arun_workflow(wf, clients=Factory(None))
    assert not result.ok
    assert "functions nest at most 8 deep" in (result.steps["start"].error or "")


async def test_a_functions_model_calls_count_against_the_callers_budget() -> None:
    from agentloom.routing.runtime import Runtime
    from agentloom.testing._server import FakeReply
    from agentloom.testing.fake_openai import FakeOpenAIServer

    flow = """\
name: b
config: {provider: openai, model: gpt-4o-mini, max_tokens_per_run: 80}
functions:
  inner:
    description: Ask a second model.
    args: {q: str}
    steps:
      - {id: ask, type: llm_call, prompt: "{args.q}", max_tokens: 10}
    return: "{steps.ask.output}"
steps:
  - {id: outer, type: llm_call, prompt: go, functions: [inner], max_tokens: 10}
"""
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        server.script(FakeReply(tool_calls=[("inner", {"q": "why"})]),
                      FakeReply(text="because"), FakeReply(text="done"))
        runtime = Runtime.from_env({"OPENAI_API_KEY": "k",
                                    "OPENAI_BASE_URL": server.openai_base_url})
        try:
            result = await arun_workflow(load_workflow(flow), clients=runtime)
        finally:
            await runtime.aclose()
    # 19 tokens for the outer call and 19 for the function's: the third call would cross 80.
    assert result.status == "budget_exceeded"
    assert "used 38" in (result.error or "")
    assert len(server.requests) == 2
    assert server.requests[1].json["messages"][-1]["content"] == "why"
