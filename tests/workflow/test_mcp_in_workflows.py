"""MCP servers declared in a workflow: started once per run and closed at its end, tool
names checked at load (the server) and at start (the tool), a server that won't start
named with its stderr, whole servers, failing MCP tools as error results, and the `tool`
step running MCP tools and workflow functions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from wf_helpers import Factory

from agentloom.errors import WorkflowError
from agentloom.messages import ModelRequest, ToolResultPart
from agentloom.testing.scripted import FunctionModel, tool_call
from agentloom.workflow import WorkflowProblems, arun_workflow, load_workflow

SERVER = f"""\
mcp_servers:
  calc:
    command: {sys.executable}
    args: [-m, agentloom.testing.mcp_server]
"""


def _flow(body: str, servers: str = SERVER) -> str:
    return "name: m\n" + servers + body


def _results(request: ModelRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]


def _caller(calls: list[Any]) -> FunctionModel:
    def answer(request: ModelRequest) -> Any:
        results = _results(request)
        if not results and request.tools:
            return list(calls)
        return json.dumps([[r.is_error, r.content] for r in results])

    return FunctionModel(answer)


async def test_server_starts_once_per_run_and_closes_at_the_end(tmp_path: Path) -> None:
    log = tmp_path / "starts.log"
    wrapper = tmp_path / "server.py"
    wrapper.write_text(
        "import sys\n"
        f"log = open({str(log)!r}, 'a')\nlog.write('start\\n'); log.flush()\n"
        "from agentloom.testing.mcp_server import main\nmain([])\n"
        "log.write('stop\\n'); log.close()\n", encoding="utf-8")
    flow = _flow("""\
functions:
  add3:
    description: Add three numbers with two MCP calls.
    args: {a: int, b: int, c: int}
    steps:
      - {id: ab, type: tool, tool_name: calc.add, tool_args: {a: "{args.a}", b: "{args.b}"}}
      - id: abc
        type: tool
        depends_on: [ab]
        tool_name: calc.add
        tool_args: {a: "{steps.ab.output}", b: "{args.c}"}
    return: "{steps.abc.output}"
steps:
  - id: direct
    type: tool
    tool_name: calc.add
    tool_args: {a: 1, b: 2}
    output: direct
  - id: via_function
    type: tool
    tool_name: add3
    tool_args: {a: 1, b: 2, c: "{state.direct}"}
    depends_on: [direct]
    output: total
""", servers=f"mcp_servers:\n  calc:\n    command: {sys.executable}\n    args: [{wrapper}]\n")
    result = await arun_workflow(load_workflow(flow), clients=Factory(None))
    assert result.ok, result.error
    assert result.state == {"direct": "3", "total": "6"}  # MCP results are text
    assert log.read_text().split() == ["start", "stop"]


async def test_a_server_that_will_not_start_names_its_command_and_stderr() -> None:
    flow = _flow("steps:\n  - {id: a, type: tool, tool_name: calc.add}\n",
                 servers=SERVER.replace("mcp_server]", "mcp_server, --fail-start]"))
    with pytest.raises(WorkflowError) as info:
        await arun_workflow(load_workflow(flow), clients=Factory(None))
    text = str(info.value)
    assert "MCP server 'calc' did not start" in text
    assert f"command: {sys.executable} -m agentloom.testing.mcp_server --fail-start" in text
    assert "test server refusing to start: --fail-start given" in text


async def test_an_unknown_tool_of_a_known_server_fails_at_start_with_its_line() -> None:
    flow = _flow("""\
steps:
  - id: a
    type: llm_call
    prompt: hi
    mcp: [calc.ad]
""")
    with pytest.raises(WorkflowProblems) as info:
        await arun_workflow(load_workflow(flow, filename="m.yaml"), clients=Factory(None))
    (err,) = info.value.errors
    assert err.line == 10 and err.file == "m.yaml"
    assert "unknown tool 'calc.ad'; did you mean 'calc.add'?" in err.message


def test_an_unknown_server_is_a_load_error() -> None:
    flow = _flow("steps:\n  - {id: a, type: llm_call, prompt: hi, mcp: [clac.add]}\n")
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(flow, filename="m.yaml")
    assert "unknown MCP server 'clac'; did you mean 'calc'?" in str(info.value)
    assert info.value.errors[0].line == 7


def test_a_server_needs_command_or_url() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(_flow("steps:\n  - {id: a, type: tool, tool_name: x.y}\n",
                            servers="mcp_servers:\n  x: {timeout: 3}\n"))
    assert "exactly one of command (stdio) or url" in str(info.value)


async def test_a_whole_server_and_a_failing_tool_with_the_error_prompt() -> None:
    flow = _flow("""\
config: {tool_error_prompt: "Check the arguments."}
steps:
  - id: a
    type: llm_call
    prompt: hi
    mcp: [calc]
""")
    model = _caller([tool_call("calc_fail", {"message": "no luck"}, id="f"),
                     tool_call("calc_echo", {"text": "hey"}, id="e")])
    result = await arun_workflow(load_workflow(flow), clients=Factory(model))
    assert result.ok, result.error
    assert sorted(t.name for t in model.requests[0].tools) == [
        "calc_add", "calc_echo", "calc_fail", "calc_slow"]
    (fail_err, fail), (echo_err, echo) = json.loads(result.steps["a"].text or "")
    assert fail_err is True and "no luck" in fail and fail.endswith("Check the arguments.")
    assert (echo_err, echo) == (False, "hey")
